"""Pure decisions of the kernel-fallback policy.

The rules that must always hold (each has a hypothesis test):
- never recommend a kernel that is not installed or not bootable;
- never loop: a kernel that failed after a fallback is not chosen again until
  the set of installed kernels changes, and at most one automatic attempt is
  made per boot;
- never touch the boot loader unless the policy says so (oneshot, pin), and
  never reboot.
"""

from __future__ import annotations

import shlex

from kfdguard import knowledge
from kfdguard.facts import Facts, History, InstalledKernel, KernelRecord
from kfdguard.knowledge.model import Asic
from kfdguard.probe.bootspec import LoaderTarget, loader_target
from kfdguard.record import dataclass, replace

# Findings whose cause a different kernel can remove.
KERNEL_CAUSES = frozenset({"kernel-too-old", "kfd-not-built", "dkms-not-built", "module-signature-rejected"})


@dataclass(frozen=True)
class KernelChoice:
    release: str
    entry: str | None  # boot-loader entry id, None when it has none
    bootable: bool
    capable: bool | None  # runs compute on every AMD GPU: True, False, or None (unknown)
    reasons: tuple[str, ...]  # why not bootable or capable
    last: str  # what the history says: "ok", "failed" or ""
    failed_after_fallback: bool
    ok: int = 0  # boots on which compute came up (the history's count)
    failed: int = 0  # boots on which it did not
    out_of_tries: bool = False  # systemd-boot's boot counting marked its entry bad (it did not boot fully)


@dataclass(frozen=True)
class Recommendation:
    policy: str
    running: str
    needed: bool  # the running kernel cannot provide compute, for a reason another kernel may not have
    kernel: str | None
    entry: str | None
    reason: str
    already_default: bool
    choices: tuple[KernelChoice, ...]
    bootloader: str
    # systemd-boot: the name its installed version matches for ``entry`` (a counted entry's file
    # name before systemd 258/259); ``entry`` stays the stable, counter-less id of the history.
    loader_entry: str | None = None

    @property
    def command(self) -> str | None:
        if self.kernel is None or self.entry is None:
            return None
        if self.bootloader == "grub":
            return f"sudo grub-reboot '{self.entry}' && sudo reboot"
        if self.bootloader == "systemd-boot":
            # shlex.quote: a pattern (see bootspec.loader_target) must reach bootctl as it is
            return f"sudo bootctl set-oneshot {shlex.quote(self.loader_entry or self.entry)} && sudo reboot"
        return None


def fingerprint(kernels: tuple[InstalledKernel, ...]) -> str:
    """Identifies the installed kernel set: a failed fallback is retried only after it changes."""
    return ",".join(sorted(k.release for k in kernels))


def capability(kernel: InstalledKernel, asic: Asic | None, running_hsa: str | None = None) -> tuple[bool | None, str]:
    hsa = running_hsa if running_hsa is not None else kernel.hsa_amd
    if hsa == "n":
        return False, "built without CONFIG_HSA_AMD"
    if not kernel.amdgpu:
        return False, "no amdgpu module installed for it"
    if asic is None:
        return None, "the GPU is not in kfdguard's tables"
    if asic.kfd_since is None:
        return False, f"KFD never supported {asic.family}"
    if kernel.version is not None and (kernel.version[0], kernel.version[1]) >= asic.kfd_since:
        return True, ""
    if kernel.dkms_amdgpu:
        return True, "amdgpu-dkms is built for it"
    need = f"{asic.kfd_since[0]}.{asic.kfd_since[1]}"
    return False, f"older than {need}, which {asic.gfx or asic.family} needs, and no amdgpu-dkms for it"


def _asics(facts: Facts) -> list[Asic | None]:
    return [knowledge.identify(g.device, g.revision)[0] for g in facts.amd_gpus]


def _failed_after_fallback(history: History, release: str, installed: str) -> bool:
    return any(a.target == release and a.result == "failed" and a.installed == installed for a in history.attempts)


def choices(facts: Facts) -> list[KernelChoice]:
    asics = _asics(facts)
    installed = fingerprint(facts.kernels)
    result = []
    for kernel in facts.kernels:
        reasons: list[str] = []
        entry = facts.bootloader.entry_for(kernel.release)
        if entry is None:
            reasons.append(f"no {facts.bootloader.kind} entry boots it")
        elif entry.bad:
            reasons.append("its boot entry ran out of boot tries: it did not reach boot-complete.target")
        if kernel.initrd is None:
            reasons.append("no initramfs")
        if not kernel.modules:
            reasons.append("no /lib/modules tree")
        running_hsa = facts.kernel.symbol("CONFIG_HSA_AMD") if kernel.release == facts.kernel.release else None
        capable: bool | None = True
        for asic in asics:
            ok, why = capability(kernel, asic, running_hsa)
            if ok is False:
                capable = False
                reasons.append(why)
                break
            if ok is None:
                capable = None
                reasons.append(why)
        record = facts.history.kernels.get(kernel.release, KernelRecord())
        result.append(
            KernelChoice(
                release=kernel.release,
                entry=entry.id if entry else None,
                bootable=entry is not None and kernel.initrd is not None and kernel.modules,
                capable=capable,
                reasons=tuple(reasons),
                last=record.last,
                failed_after_fallback=_failed_after_fallback(facts.history, kernel.release, installed),
                ok=record.ok,
                failed=record.failed,
                out_of_tries=entry is not None and entry.bad,
            )
        )
    return result


def recommend(facts: Facts, codes: set[str], policy: str) -> Recommendation:
    """Which installed kernel to boot instead of the running one, if any."""
    running = facts.kernel.release
    kinds = choices(facts)
    mine = next((c for c in kinds if c.release == running), None)
    needed = bool(facts.amd_gpus) and ((mine is not None and mine.capable is False) or bool(codes & KERNEL_CAUSES))
    bootloader = facts.bootloader.kind
    if not needed:
        return Recommendation(
            policy, running, False, None, None, "the running kernel can run compute", False, tuple(kinds), bootloader
        )
    eligible = [
        c
        for c in kinds
        if c.release != running
        and c.bootable
        and not c.failed_after_fallback
        and not c.out_of_tries
        and (c.capable is True or (c.capable is None and c.last == "ok"))
    ]
    passed_over = [c.release for c in kinds if c.release != running and c.out_of_tries]
    if not eligible:
        why = "no other installed, bootable kernel can run compute on this GPU" + _passed_over(passed_over)
        return Recommendation(policy, running, True, None, None, why, False, tuple(kinds), bootloader)

    best = max(eligible, key=lambda c: rank(c, facts))
    reason = _why(best) + _passed_over(passed_over)
    default = facts.bootloader.default_release
    loader_entry = None
    if bootloader == "systemd-boot" and best.entry is not None:
        loader_entry = sdboot_target(facts, best.entry, persistent=False).value
    return Recommendation(
        policy, running, True, best.release, best.entry, reason, default == best.release, tuple(kinds), bootloader,
        loader_entry,
    )  # fmt: skip


def sdboot_target(facts: Facts, entry_id: str, *, persistent: bool) -> LoaderTarget:
    """The name to give bootctl for the entry ``entry_id`` (see bootspec.loader_target)."""
    loader = facts.bootloader
    names = [(e.id, e.path.rpartition("/")[2]) for e in loader.entries]
    entry = next((e for e in loader.entries if e.id == entry_id), None)
    if entry is None:
        return LoaderTarget(entry_id)
    return loader_target(entry.id, entry.path.rpartition("/")[2], loader.loader_info, names, persistent=persistent)


def rank(c: KernelChoice, facts: Facts) -> tuple[bool, int, bool, tuple[int, int, int], str]:
    """Order of preference among eligible kernels, best last (pure).

    The last known good first; among those, the one whose boots ran compute
    most often net of those that did not; then one whose last boot did not
    fail; then the newest. Kernels whose boot entry ran out of tries never
    get here (they did not boot far enough to be trusted, whatever kfdguard saw).
    """
    kernel = next(k for k in facts.kernels if k.release == c.release)
    return (c.last == "ok", c.ok - c.failed if c.last == "ok" else 0, c.last != "failed",
            kernel.version or (0, 0, 0), c.release)  # fmt: skip


def _why(c: KernelChoice) -> str:
    if c.last == "ok":
        boots = c.ok + c.failed
        return (
            f"it ran compute on {c.ok} of its {boots} boots kfdguard saw, the last one included (last known good)"
            if boots > 1
            else "it ran compute before (last known good)"
        )
    if c.last == "failed":
        return (
            "the newest kernel that can run compute on this GPU, though compute did not come up "
            f"on its last boot ({c.failed} of {c.ok + c.failed} boots failed)"
        )
    return "the newest kernel that can run compute on this GPU (kfdguard has not seen it boot yet)"


def _passed_over(releases: list[str]) -> str:
    if not releases:
        return ""
    return f"; passed over {', '.join(releases)}: boot counting marked its entry bad"


def auto_action(rec: Recommendation, history: History, boot_id: str) -> tuple[str | None, str]:
    """What the service does on its own at boot: ("oneshot"|"pin"|None, why)."""
    if rec.policy not in ("oneshot", "pin"):
        return None, f"policy {rec.policy}: the boot loader is left alone"
    if not rec.needed or rec.kernel is None or rec.entry is None:
        return None, rec.reason
    if any(a.boot_id == boot_id for a in history.attempts):
        return None, "an automatic attempt was already made during this boot"
    if rec.policy == "oneshot" and rec.already_default:
        return None, f"{rec.kernel} is already the default entry: a normal reboot starts it"
    if rec.policy == "pin" and rec.already_default:
        return None, f"{rec.kernel} is already the default entry"
    return rec.policy, f"boot {rec.kernel}: {rec.reason}"


def settle_attempts(history: History, facts: Facts, ready: bool) -> History:
    """At each check: what became of the fallbacks arranged during earlier boots."""
    running = facts.kernel.release
    updated = []
    for a in history.attempts:
        if a.result == "pending" and a.boot_id != facts.kernel.boot_id:
            result = ("ok" if ready else "failed") if a.target == running else "not-booted"
            a = replace(a, result=result)  # noqa: PLW2901 - the settled copy replaces it
        updated.append(a)
    return replace(history, attempts=tuple(updated))


def _gpu_label(device: int, revision: int | None, ids: str) -> str:
    asic = knowledge.identify(device, revision)[0]
    return f"{ids} {asic.gfx if asic and asic.gfx else '?'}"


def record_check(history: History, facts: Facts, ready: bool, now: str) -> History:
    """Note whether compute came up on the running kernel."""
    history = settle_attempts(history, facts, ready)
    if not facts.amd_gpus:
        # Without an AMD GPU a check says nothing about what this kernel can compute.
        return replace(history, problem=None)
    kernels = dict(history.kernels)
    old = kernels.get(facts.kernel.release, KernelRecord())
    gpus = tuple(_gpu_label(g.device, g.revision, g.ids) for g in facts.amd_gpus)
    outcome = "ok" if ready else "failed"
    ok, failed = old.ok, old.failed
    boot = facts.kernel.boot_id
    if boot and boot == old.boot_id:
        # Another check in the same boot: that boot counts once, with its latest outcome.
        if old.last != outcome:
            ok += 1 if ready else -1
            failed += -1 if ready else 1
    else:
        ok += 1 if ready else 0
        failed += 0 if ready else 1
    kernels[facts.kernel.release] = KernelRecord(
        ok=max(ok, 0), failed=max(failed, 0), last=outcome, last_seen=now, gpus=gpus or old.gpus, boot_id=boot
    )
    return replace(history, kernels=kernels, problem=None)
