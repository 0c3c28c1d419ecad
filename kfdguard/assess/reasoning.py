"""The state of one run of the rule set: the observations, what the rules established and found.

``Reasoning`` is what every rule module (``rules``, ``checks``, ``access_rules``,
``app_rules``) reads and writes; it lives below them so that ``rules``, which
holds the one ordered list and calls into the others, imports them and not the
other way round.
"""

from __future__ import annotations

from kfdguard.assess.remedies import newer_kernel_remedy
from kfdguard.probe.system_info import parse_release
from kfdguard.record import dataclass, field
from kfdguard.verdict import Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.assess.context import Context, Gpu
    from kfdguard.assess.explain import Cause
    from kfdguard.evidence.model import Observations, SeenGpu
    from kfdguard.facts import LogEvent
    from kfdguard.knowledge.model import Asic


@dataclass
class Identified:
    gpu: SeenGpu
    asic: Asic | None
    name: str | None
    machine: Gpu | None = None  # the machine's record, whose status the rules set
    has_node: bool = False  # KFD added it (topology node, rocminfo agent, "added device" line)
    blocked: str | None = None  # why it cannot compute, once a rule found it
    blocked_code: str | None = None  # the code of the finding that said so

    @property
    def label(self) -> str:
        return label(self.gpu, self.asic, self.name)

    @property
    def stopped(self) -> str | None:
        """Why it cannot compute, as a rule here or a machine-only rule found it."""
        return self.blocked or (self.machine.blocked if self.machine is not None else None)

    def block(self, why: str, code: str) -> None:
        if self.blocked is None:
            self.blocked, self.blocked_code = why, code
        if self.machine is not None:
            self.machine.blocked = self.machine.blocked or why


@dataclass
class Reasoning:
    obs: Observations
    # The machine's context when the source is a machine: rules that need what only a machine
    # shows (accounts, sysfs parameters, DKMS trees, the configuration) read it; None for a paste.
    machine: Context | None = None
    established: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    amd: list[Identified] = field(default_factory=list)
    added: set[int] = field(default_factory=set)  # PCI device ids KFD added
    events: list[LogEvent] = field(default_factory=list)  # this boot's
    # Findings a later rule overruled, each with why (rules.rule_coherent): shown with --verbose.
    overruled: list[str] = field(default_factory=list)

    @property
    def release(self) -> str:
        return self.obs.release or ""

    @property
    def version(self) -> tuple[int, int] | None:
        v = parse_release(self.obs.release) if self.obs.release else None
        return (v[0], v[1]) if v else None

    @property
    def distro(self) -> str:
        return distro_of(self.obs)

    def has(self, *codes: str) -> bool:
        return any(f.code in codes for f in self.findings)

    def add(self, cause: Cause, gpu: str | None = None) -> None:
        self.findings.append(Finding(cause.code, cause.severity, cause.message, cause.remedy, cause.evidence, gpu))

    def apply(self, cause: Cause, target: Identified | None) -> None:
        self.add(cause, target.gpu.slot if target else None)
        if target is not None and cause.blocks:
            target.block(cause.blocks, cause.code)

    @property
    def group(self) -> str:
        return self.machine.group if self.machine is not None else "render"

    def newer_kernel(self, needed: tuple[int, int] | None) -> str:
        if self.machine is not None:
            return newer_kernel_remedy(self.machine, needed)
        if needed is None:
            return "boot a newer kernel, or install one from your distribution"
        return f"boot or install a kernel {needed[0]}.{needed[1]} or newer"


def label(gpu: SeenGpu | None, asic: Asic | None, name: str | None) -> str:
    if gpu is None:
        return "the GPU"
    ids = f"{gpu.vendor:04x}:{gpu.device:04x}"
    where = f", {gpu.slot}" if gpu.slot else ""
    fallback = f"AMD {asic.family}" if asic else "AMD GPU"
    return f"{name or gpu.name or fallback} ({ids}{where})"


def distro_of(obs: Observations) -> str:
    """The distribution, from os-release when the source shows it, else guessed from the kernel release."""
    named = obs.value("distribution")
    if named:
        return named
    release = obs.release or ""
    if release.endswith("-generic") or "-lowlatency" in release:
        return "ubuntu"
    if release.endswith(("-amd64", "-arm64")):
        return "debian"
    if ".fc" in release or ".el" in release:
        return "fedora"
    if "arch" in release:
        return "arch"
    return "unknown"
