"""Container Device Interface specs for AMD GPUs: read them, and tell when they went stale.

AMD's container toolkit (``amd-ctk cdi generate``, ROCm/container-toolkit
internal/cdi/cdi.go) writes a JSON spec of kind ``amd.com/gpu`` to
/etc/cdi/amd.json (its ``--output``) or /var/run/cdi/amd.json (its default
directory): one device per GPU with that GPU's /dev/dri/card* and renderD*
nodes plus /dev/kfd, and a device ``all``. Each device node records the
major and minor numbers, the mode and the gid that ``stat`` gave when the
spec was written. Container engines create the nodes *from the spec*, so a
spec written before a kernel update (KFD's character major is allocated
dynamically), a GPU change (render minors move) or a group change (the
render gid) hands containers nodes that do not match the host's.

``kfdguard.probe.cdi`` reads them (bounded, never raising); ``check`` is pure: it
compares each spec with the Facts and returns ``cdi-spec-stale`` findings.
"""

from __future__ import annotations

from kfdguard.host.root import DRI_DIR
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.access import NodeStat
    from kfdguard.facts import CdiNode, CdiSpec, Facts
    from kfdguard.verdict import Verdict

DRI = DRI_DIR + "/"


def check(facts: Facts, specs: tuple[CdiSpec, ...]) -> list[Finding]:
    """``cdi-spec-stale`` for every AMD spec whose device nodes no longer match the host's."""
    findings: list[Finding] = []
    for spec in specs:
        remedy = f"regenerate it: sudo amd-ctk cdi generate --output={spec.path}"
        if spec.problem is not None:
            findings.append(
                Finding(
                    "cdi-spec-unusable",
                    Severity.WARNING,
                    f"the CDI spec {spec.path} cannot be used: {spec.problem}",
                    remedy,
                    (f"{spec.path}: {spec.problem}",),
                )
            )
            continue
        if not spec.kind.startswith("amd.com/"):
            continue
        stale = _differences(facts, spec)
        if stale:
            findings.append(
                Finding(
                    "cdi-spec-stale",
                    Severity.WARNING,
                    f"the CDI spec {spec.path} ({spec.kind}) no longer matches this machine's GPU device nodes: "
                    "containers started with it get nodes that do not work",
                    remedy,
                    tuple(stale),
                )
            )
    return findings


Current = dict[str, tuple[int, int, int, int] | None]  # host path -> (major, minor, mode, gid), None: absent


def _current(facts: Facts) -> Current:
    kfd = facts.kfd.node.stat
    current: Current = {facts.kfd.node.path: None if kfd is None else (kfd.major, kfd.minor, kfd.mode, kfd.gid)}
    for name, device in facts.render_nodes.items():
        stat = device.stat
        current[DRI + name] = None if stat is None else (stat.major, stat.minor, stat.mode, stat.gid)
    return current


def _node_differences(facts: Facts, node: CdiNode, where: str, now: tuple[int, int, int, int]) -> list[str]:
    major, minor, mode, gid = now
    out = []
    if node.major is not None and node.minor is not None and (node.major, node.minor) != (major, minor):
        out.append(f"{where}: spec says {node.major}:{node.minor}, the node is {major}:{minor}")
    if node.gid is not None and node.gid != gid:
        out.append(f"{where}: spec gives gid {node.gid}, the node's group is {facts.accounts.group_name(gid)} ({gid})")
    if node.mode is not None and node.mode & 0o777 != mode & 0o777:
        out.append(f"{where}: spec gives mode {node.mode & 0o777:04o}, the node has {mode & 0o777:04o}")
    return out


def _spec_node(facts: Facts, node: CdiNode, where: str, current: Current, cards: set[str]) -> list[str]:
    """What is wrong with one node the spec names (nothing: an empty list)."""
    host = node.host_path
    if host.startswith(DRI + "card"):
        return [] if host in cards else [f"{where}: no AMD GPU has this card node now"]
    if host not in current:
        return [f"{where}: no AMD GPU has this render node now"] if host.startswith(DRI + "renderD") else []
    now = current[host]
    if now is None:
        return [f"{where}: does not exist now"]
    return _node_differences(facts, node, where, now)


def _differences(facts: Facts, spec: CdiSpec) -> list[str]:
    current = _current(facts)
    cards = {DRI + g.card for g in facts.amd_gpus if g.card}
    out: list[str] = []
    seen: set[str] = set()
    for node in spec.nodes:
        if node.host_path in seen:
            continue  # the same node under device "0" and under "all"
        seen.add(node.host_path)
        out.extend(_spec_node(facts, node, f"{spec.path}: {node.host_path}", current, cards))
    ready = {g.render_node for g in facts.amd_gpus if g.render_node and g.driver == "amdgpu"}
    for render in sorted(ready):
        if DRI + render not in seen and current.get(DRI + render) is not None:
            out.append(f"{spec.path}: has no {DRI + render}: containers cannot use that GPU through it")
    return out


# --- kfdguard's own spec ------------------------------------------------------------------------

# kfdguard's own kind, not AMD's: the CDI registry refuses two specs that define the same device of
# one kind, and amd-ctk's amd.com/gpu spec may be there too. Containers ask for
# --device kfdguard.org/gpu=all (or =0, =1, ...).
OWN_KIND = "kfdguard.org/gpu"
# The oldest version with what the spec uses (container-device-interface specs-go/version.go):
# device names that start with a digit need 0.5.0; no annotations (0.6.0), no hostPath difference.
OWN_CDI_VERSION = "0.5.0"


def _device_node(path: str, stat: NodeStat) -> dict[str, object]:
    # What engines create in the container: a character device with the host's numbers, mode and group,
    # and a device cgroup rule for it ("rw": ROCm opens both nodes read-write; no mknod). fileMode is the
    # permission bits only: runc adds S_IFCHR from "type" when it makes the node.
    return {"path": path, "type": "c", "major": stat.major, "minor": stat.minor, "fileMode": stat.mode & 0o7777,
            "permissions": "rw", "uid": 0, "gid": stat.gid}  # fmt: skip


def render_spec(verdict: Verdict, facts: Facts) -> str | None:
    """kfdguard's CDI spec: one device per AMD GPU that can compute (its render node and /dev/kfd), and
    ``all``; None when no GPU can compute (no spec is better than one that hands out broken nodes)."""
    import json

    kfd = facts.kfd.node.stat
    if kfd is None or kfd.kind != "char":
        return None
    devices: list[dict[str, object]] = []
    every: list[dict[str, object]] = []
    for index, g in enumerate(g for g in verdict.gpus if g.compute_ready and g.render_node):
        assert g.render_node is not None
        render = facts.render_nodes.get(g.render_node)
        if render is None or render.stat is None or render.stat.kind != "char":
            continue
        node = _device_node(DRI + g.render_node, render.stat)
        devices.append({"name": str(index), "containerEdits": {"deviceNodes": [node]}})
        every.append(node)
    if not devices:
        return None
    devices.append({"name": "all", "containerEdits": {"deviceNodes": every}})
    spec = {
        "cdiVersion": OWN_CDI_VERSION,
        "kind": OWN_KIND,
        "devices": devices,
        # /dev/kfd is shared by every GPU: it goes with any device asked for.
        "containerEdits": {"deviceNodes": [_device_node(facts.kfd.node.path, kfd)]},
    }
    return json.dumps(spec, indent=2, sort_keys=True) + "\n"
