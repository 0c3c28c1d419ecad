"""What every check needs to know about the facts, computed once."""

from __future__ import annotations

from kfdguard import knowledge
from kfdguard.access import Access, NodeStat, check_rw
from kfdguard.config import Config, ConfigError
from kfdguard.facts import Facts, GpuFacts, TopologyNode
from kfdguard.knowledge import distros
from kfdguard.knowledge.model import Asic
from kfdguard.record import dataclass, field
from kfdguard.verdict import Finding, Severity

# A uid that owns nothing: "a member of the group" in access checks.
NOBODY_UID = 4294967294


@dataclass
class Gpu:
    """One AMD GPU with what the knowledge and the topology say about it."""

    facts: GpuFacts
    asic: Asic | None
    name: str
    node: TopologyNode | None
    render_node: str | None
    blocked: str | None = None  # why it cannot compute; None while undecided


@dataclass
class Context:
    facts: Facts
    config: Config
    config_errors: tuple[ConfigError, ...]
    gpus: list[Gpu] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        by_slot = {n.slot: n for n in self.facts.kfd.gpu_nodes}
        for g in self.facts.amd_gpus:
            asic, name = knowledge.identify(g.device, g.revision)
            node = by_slot.get(g.slot)
            render = g.render_node
            if node is not None and node.prop("drm_render_minor"):
                render = f"renderD{node.prop('drm_render_minor')}"
            self.gpus.append(Gpu(g, asic, name or f"AMD GPU {g.ids}", node, render))

    # --- shortcuts ------------------------------------------------------------

    def add(
        self,
        code: str,
        severity: Severity,
        message: str,
        remedy: str = "",
        evidence: tuple[str, ...] | list[str] = (),
        gpu: str | None = None,
    ) -> None:
        self.findings.append(Finding(code, severity, message, remedy, tuple(evidence), gpu))

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self.findings)

    @property
    def version(self) -> tuple[int, int] | None:
        v = self.facts.kernel.version
        return (v[0], v[1]) if v else None

    @property
    def merged(self) -> bool:
        """KFD lives inside amdgpu (4.20+, or any kernel without an amdkfd module)."""
        if self.facts.amdkfd.present:
            return False
        return self.version is None or self.version >= (4, 20)

    @property
    def kfd_module(self) -> str:
        return "amdgpu" if self.merged else "amdkfd"

    @property
    def group(self) -> str:
        return self.config.device.group

    @property
    def group_gid(self) -> int | None:
        group = self.facts.accounts.group(self.group)
        return group.gid if group else None

    def group_access(self, node: NodeStat) -> Access:
        gid = self.group_gid
        gids = frozenset() if gid is None else frozenset({gid})
        return check_rw(node, NOBODY_UID, gids)

    def describe_node(self, path: str, node: NodeStat) -> str:
        owner = self.facts.accounts.user_name(node.uid)
        group = self.facts.accounts.group_name(node.gid)
        return f"{path} is {node.symbolic} {owner}:{group}"

    @property
    def distro(self) -> str:
        """The distribution's id (a ``knowledge.distros.Distribution`` value): one detector for all."""
        return str(distros.detect(self.facts.os.id, self.facts.os.id_like))
