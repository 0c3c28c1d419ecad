"""Automatic Boot Assessment (``fallback.policy: assess``): was this boot good, as far as compute goes?

systemd-boot counts down the tries of an entry whose file name carries a
counter (``+3``) each time it starts it, and systemd-bless-boot marks the entry
good once ``boot-complete.target`` is reached; an entry whose tries run out is
sorted last and the boot loader starts the next one by itself, even when the
bad kernel hangs before kfdguard runs. ``kfdguard-boot-check.service``
(``RequiredBy=boot-complete.target``) runs ``kfdguard boot-check`` and fails
the target for a boot that did not bring compute up *because of the kernel*:
a permissions problem or a missing library is no reason to boot an older
kernel. Pure: the verdict and its fallback recommendation in, a decision out.
"""

from __future__ import annotations

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import BootEntry
    from kfdguard.verdict import Recommendation, Verdict


@dataclass(frozen=True)
class BootAssessment:
    good: bool
    reason: str
    running: str
    fallback: str | None  # the kernel the boot loader should come to, when the boot is bad
    counted: bool  # the running kernel's entry carries a boot counter (the decision has an effect)
    policy: str


def assess_boot(verdict: Verdict, rec: Recommendation, policy: str, mode: str, counted: bool) -> BootAssessment:
    """Good unless compute is down for a kernel reason (and, with mode if-fallback, another kernel can run it)."""

    def result(good: bool, reason: str, fallback: str | None = None) -> BootAssessment:
        return BootAssessment(good, reason, rec.running, fallback, counted, policy)

    if policy != "assess":
        return result(True, f"fallback.policy is {policy}: boot assessment is left to the boot loader alone")
    if verdict.state.value in ("ready", "degraded"):
        # Some compute came up: falling back could lose it (a degraded machine's other GPU is not the kernel's doing
        # for certain), and boot counting is for kernels that do not work, not for ones that work partly.
        return result(True, f"compute is up ({verdict.summary})")
    if not rec.needed:
        return result(True, f"compute is not up, but not because of the kernel ({verdict.summary}): "
                            "another kernel would not help")  # fmt: skip
    if mode == "if-fallback" and rec.kernel is None:
        return result(True, f"kernel {rec.running} cannot run compute ({verdict.summary}), but {rec.reason}: marking "
                            "this boot bad would leave nothing better to boot (fallback.assess: always counts it "
                            "anyway)")  # fmt: skip
    where = f"; the boot loader should come to {rec.kernel} ({rec.reason})" if rec.kernel else ""
    return result(False, f"kernel {rec.running} cannot run compute ({verdict.summary}){where}", rec.kernel)


def counted(entries: tuple[BootEntry, ...], release: str) -> bool:
    """Whether an entry of the running kernel still carries systemd-boot's counter (not yet blessed)."""
    return any(e.release == release and e.tries_left is not None for e in entries)
