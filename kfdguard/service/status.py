"""The published status: a Status (kfdguard/verdict.py) built from Facts and Verdict, and the bus types.

Built once per check; the D-Bus adapter turns it into properties with the
signatures here. It holds no library types, so the boot pass builds it before
any D-Bus code is imported.
"""

from __future__ import annotations

from kfdguard.access import NodeStat
from kfdguard.facts import Facts
from kfdguard.health.model import DEVICE_KEYS as HEALTH_KEYS
from kfdguard.record import dataclass
from kfdguard.verdict import GpuStatus, Status, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.config import SoftwareConfig
    from kfdguard.host.root import Root
    from kfdguard.verdict import Recommendation


@dataclass(frozen=True)
class PassResult:
    status: Status
    facts: Facts
    verdict: Verdict


SIGNATURES = {
    "Version": "s",
    "State": "s",
    "Ready": "b",
    "Summary": "s",
    "KernelRelease": "s",
    "KfdVersion": "s",
    "Devices": "aa{sv}",
    "Findings": "a(ssss)",
    "FallbackPolicy": "s",
    "FallbackRecommendation": "a{sv}",
    "LastCheck": "t",
    "Software": "a(sssasas)",
    "Applications": "a(ssssss)",
}
# Value types of the a{sv} dictionaries, by key.
DEVICE_KEYS = {
    "Slot": "s",
    "VendorId": "q",
    "DeviceId": "q",
    "Name": "s",
    "GfxTarget": "s",
    "KfdNode": "i",
    "ComputeReady": "b",
    "RenderNode": "s",
    "Reason": "s",
    # What peers show (issue 17 item 5), each present only when the machine says it:
    # bytes, compute units, MT/s (8000 = "8.0 GT/s") and lanes.
    "Integrated": "b",
    "VramTotal": "t",
    "GttTotal": "t",
    "ComputeMemory": "t",  # bytes ROCm tells programs they may allocate (issue 38)
    "TtmLimit": "t",  # an APU's: TTM's pages_limit in force, in bytes
    "ComputeUnits": "u",
    "PcieSpeed": "u",
    "PcieWidth": "u",
    "PcieMaxSpeed": "u",
    "PcieMaxWidth": "u",
    # Live health since the service started (kfdguard/health): added by Service.transition.
    **HEALTH_KEYS,
}
FALLBACK_KEYS = {"Needed": "b", "Kernel": "s", "Reason": "s", "AlreadyDefault": "b", "Command": "s", "Unstable": "b"}


def _resources(g: GpuStatus) -> dict[str, object]:
    # A D-Bus variant cannot be null: what is unknown is left out.
    values: dict[str, object] = {
        "Integrated": g.integrated,
        "VramTotal": g.vram_total,
        "GttTotal": g.gtt_total,
        "ComputeMemory": g.compute_memory,
        "TtmLimit": g.ttm_limit,
        "ComputeUnits": g.compute_units,
    }
    for prefix, link in (("Pcie", g.link), ("PcieMax", g.link_max)):
        if link is not None:
            values[f"{prefix}Speed"], values[f"{prefix}Width"] = link.speed, link.width
    return {k: v for k, v in values.items() if v is not None}


def starting(summary: str = "kfdguard is checking the GPUs") -> Status:
    return Status("starting", False, summary)


def from_verdict(facts: Facts, verdict: Verdict, policy: str, now_usec: int) -> Status:
    kfd = facts.kfd
    devices = tuple(
        {
            "Slot": g.slot,
            "VendorId": g.vendor,
            "DeviceId": g.device,
            "Name": g.name,
            "GfxTarget": g.gfx or "",
            "KfdNode": -1 if g.kfd_node is None else g.kfd_node,
            "ComputeReady": g.compute_ready,
            "RenderNode": g.render_node or "",
            "Reason": g.reason,
            **_resources(g),
        }
        for g in verdict.gpus
    )
    rec = verdict.fallback
    fallback = _fallback_dict(rec) if rec is not None else {}
    nodes: list[tuple[str, NodeStat]] = []
    if kfd.node.stat is not None:
        nodes.append((kfd.node.path, kfd.node.stat))
    ready_render = {g.render_node for g in verdict.gpus if g.compute_ready and g.render_node}
    for name, node in sorted(facts.render_nodes.items()):
        if name in ready_render and node.stat is not None:
            nodes.append((node.path, node.stat))
    software, applications = _installed(facts)
    return Status(
        state=str(verdict.state),
        ready=verdict.ready,
        summary=verdict.summary,
        kernel=facts.kernel.release,
        kfd_version="" if kfd.version is None else f"{kfd.version[0]}.{kfd.version[1]}",
        devices=devices,
        findings=tuple((f.code, str(f.severity), f.message, f.remedy) for f in verdict.findings),
        fallback_policy=policy,
        fallback=fallback,
        last_check=now_usec,
        nodes=tuple(nodes),
        software=software,
        applications=applications,
    )


Software = tuple[tuple[str, str, str, tuple[str, ...], tuple[str, ...]], ...]
Applications = tuple[tuple[str, str, str, str, str, str], ...]


def _installed(facts: Facts) -> tuple[Software, Applications]:
    """The Software and Applications properties, from one assessment of the inventory (none without one)."""
    if facts.software is None:
        return (), ()
    from kfdguard.userspace.assess import assess_installed

    verdict = assess_installed(facts)
    software: Software = tuple(
        (s.name, s.kind, s.path, s.targets,
         tuple(f"{r.slot} {r.gfx or '?'} {r.status}: {r.detail}" for r in verdict.rows if r.stack == s.name))
        for s in facts.software.stacks
    )  # fmt: skip
    applications: Applications = tuple(
        (a.application, a.kind, a.slot, a.via, a.detail, a.remedy) for a in verdict.applications
    )
    return software, applications


def _fallback_dict(rec: Recommendation) -> dict[str, object]:
    return {
        "Needed": rec.needed,
        "Kernel": rec.kernel or "",
        "Reason": rec.reason,
        "AlreadyDefault": rec.already_default,
        "Command": rec.command or "",
        "Unstable": rec.unstable,
    }


_ORDER = {"error": 0, "warning": 1, "info": 2}


def software_status(root: Root, last: PassResult, current: Status, config: SoftwareConfig) -> PassResult:
    """``current`` with the software inventory: its property, and its findings instead of the static list."""
    from kfdguard.record import replace
    from kfdguard.userspace.service import with_software

    facts, verdict = with_software(root, last.facts, last.verdict, config)
    found = tuple(
        (f.code, str(f.severity), f.message, f.remedy) for f in verdict.findings if f.code.startswith("userspace-")
    )
    kept = tuple(f for f in current.findings if not f[0].startswith("userspace-"))
    findings = tuple(sorted((*kept, *found), key=lambda f: (_ORDER.get(f[1], 3), f[0])))
    software, applications = _installed(facts)
    updated = replace(current, software=software, applications=applications, findings=findings)
    return PassResult(updated, facts, verdict)
