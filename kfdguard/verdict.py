"""What assess concludes: state, findings, per-GPU status and a plan; and the Status the service publishes of it."""

from __future__ import annotations

from enum import StrEnum

from kfdguard import __version__
from kfdguard.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.access import NodeStat
    from kfdguard.facts import PcieLink


class State(StrEnum):
    """Exported verbatim over D-Bus and in ``--json``; clients tolerate new values."""

    STARTING = "starting"
    READY = "ready"
    DEGRADED = "degraded"
    UNAVAILABLE = "unavailable"
    NO_DEVICE = "no-device"
    ERROR = "error"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}

# Exit codes of ``kfdguard check`` and ``diagnose``: scripts test readiness with ``== 0``.
EXIT_CODES = {
    State.READY: 0,
    State.DEGRADED: 1,
    State.UNAVAILABLE: 2,
    State.NO_DEVICE: 3,
    State.ERROR: 4,
    State.STARTING: 4,
}
EXIT_USAGE = 64


# Control characters from hostile sysfs or log content must not reach a
# terminal (escape sequences; C1 too: 0x9b is an 8-bit CSI) or split a one-line message.
_CONTROL = dict.fromkeys((*range(32), *range(127, 160), 8232, 8233), " ")


def clean(text: str) -> str:
    return text.translate(_CONTROL)


@dataclass(frozen=True, slots=True)
class Finding:
    code: str  # stable identifier, e.g. "device-permissions"
    severity: Severity
    message: str  # one line
    remedy: str  # what to do, with exact commands where possible; "" for info
    evidence: tuple[str, ...] = ()  # facts and log lines it rests on
    gpu: str | None = None  # PCI slot it concerns, if one
    # The code of a finding on a lower floor of the stack (hardware, kernel, device node, permissions,
    # userspace) that stops the same GPU first: this one cannot matter until that is fixed.
    blocked_by: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", clean(self.message))
        object.__setattr__(self, "remedy", clean(self.remedy))
        object.__setattr__(self, "evidence", tuple(clean(e) for e in self.evidence))

    def key(self) -> tuple[int, str, str]:
        return (SEVERITY_ORDER[self.severity], self.code, self.gpu or "")


@dataclass(frozen=True, slots=True)
class GpuStatus:
    slot: str
    vendor: int
    device: int
    revision: int | None
    name: str  # marketing name, or "AMD GPU 1002:xxxx" when unknown
    family: str | None
    gfx: str | None
    driver: str | None
    kfd_node: int | None  # topology node index
    gpu_id: int | None
    render_node: str | None
    compute_ready: bool
    reason: str  # short: "ready", "no KFD node", "render node not accessible"...
    # What peers show (issue 17 item 5); None where the machine does not say.
    integrated: bool | None = None  # True: an APU's GPU; False: a discrete card
    vram_total: int | None = None  # bytes
    gtt_total: int | None = None  # bytes
    link: PcieLink | None = None  # the PCIe link now
    link_max: PcieLink | None = None  # the most the device can do
    compute_units: int | None = None  # from its KFD node
    # What compute programs may allocate on it (issue 38): its KFD node's memory banks, which ROCm reports
    # as the GPU's memory (an APU's: what KFD may allocate, bounded by TTM's limit; a card's: its VRAM), else
    # a discrete card's VRAM. None where neither is known.
    compute_memory: int | None = None  # bytes
    ttm_limit: int | None = None  # bytes: TTM's pages_limit in effect, on an APU (it bounds GTT), else None

    @property
    def ids(self) -> str:
        return f"{self.vendor:04x}:{self.device:04x}"


@dataclass(frozen=True, slots=True)
class Action:
    """One step of the plan: the desired state of one thing; enforce makes it so.

    kinds: write-file (target path, content), remove-file, comment-out (a file
    kfdguard does not own: lines), udev-reload, load-module, reload-module,
    fix-node (device node: group, mode), add-to-group (target user, group),
    regenerate-initramfs (target kernel release).
    """

    kind: str
    target: str  # machine path, module, user or kernel release
    detail: str  # why, in words
    content: str | None = None
    lines: tuple[int, ...] = ()
    group: str | None = None
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    ready: bool
    summary: str
    findings: tuple[Finding, ...]
    gpus: tuple[GpuStatus, ...]
    plan: tuple[Action, ...] = ()
    fallback: Recommendation | None = None

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]


# The kernel-fallback policy's answer (kfdguard.fallback.policy.recommend), which the Verdict carries:
# a record, below the policy that computes it.
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
    # Of its last boots on which compute came up (at most HEALTH_BOOTS): ones the GPU stayed healthy
    # through, ones where it reset, timed out or hung, and of those the unstable ones (BootHealth.unstable).
    healthy: int = 0
    troubled: int = 0
    unstable: int = 0
    trouble: str = ""  # the latest troubled boot, in words


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
    # The running kernel runs compute but was unstable on a recent boot; ``kernel`` is then one that
    # ran compute without being unstable (or None). Acted on only when ``act_on_unstable``.
    unstable: bool = False
    act_on_unstable: bool = False
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
            # shlex.quote: a pattern (see bootspec.loader_target) must reach bootctl as it is. Imported
            # here: every module reads verdict.py, and shlex compiles a regular expression on import.
            import shlex

            return f"sudo bootctl set-oneshot {shlex.quote(self.loader_entry or self.entry)} && sudo reboot"
        return None


# What the service publishes after each check, in plain values (kfdguard.service.status.from_verdict
# builds it): the health tracker, the readiness marker and the fleet files read it as the bus does.
@dataclass(frozen=True)
class Status:
    state: str
    ready: bool
    summary: str
    kernel: str = ""
    kfd_version: str = ""
    devices: tuple[dict[str, object], ...] = ()
    findings: tuple[tuple[str, str, str, str], ...] = ()
    fallback_policy: str = "notify"
    fallback: dict[str, object] = field(default_factory=dict)
    last_check: int = 0  # microseconds since the epoch
    version: str = __version__
    # For CheckAccess: the nodes a user must be able to open, as probed.
    nodes: tuple[tuple[str, NodeStat], ...] = ()
    # The installed stacks (kfdguard/userspace): (name, kind, path, targets, verdicts); empty until
    # the first check after READY takes the inventory.
    software: tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...]], ...] = ()
    # Which backend each application takes on each AMD GPU (kfdguard/userspace/application_rules.py):
    # (application, kind, slot, via, detail, remedy); empty until the inventory is taken, like software.
    applications: tuple[tuple[str, str, str, str, str, str], ...] = ()

    def properties(self) -> dict[str, object]:
        """Property name -> plain value, in the XML's order."""
        return {
            "Version": self.version,
            "State": self.state,
            "Ready": self.ready,
            "Summary": self.summary,
            "KernelRelease": self.kernel,
            "KfdVersion": self.kfd_version,
            "Devices": list(self.devices),
            "Findings": [list(f) for f in self.findings],
            "FallbackPolicy": self.fallback_policy,
            "FallbackRecommendation": dict(self.fallback),
            "LastCheck": self.last_check,
            "Software": [[n, k, p, list(t), list(v)] for n, k, p, t, v in self.software],
            "Applications": [list(a) for a in self.applications],
        }
