"""The Container Device Interface specs of AMD GPUs on this machine, as read (kfdguard/fleet/cdi.py checks them).

AMD's container toolkit (``amd-ctk cdi generate``, ROCm/container-toolkit
internal/cdi/cdi.go) writes a JSON spec of kind ``amd.com/gpu`` to
/etc/cdi/amd.json or /var/run/cdi/amd.json; each device node records the
major and minor numbers, the mode and the gid that ``stat`` gave then.
"""

from __future__ import annotations

from kfdguard.facts import CdiNode, CdiSpec
from kfdguard.host.root import CDI_DIRS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.probe.reader import Reader

SPEC_LIMIT = 1 << 20  # real specs are a few KiB; more is not a spec the toolkit wrote
MAX_NODES = 4096


def probe_specs(reader: Reader) -> tuple[CdiSpec, ...]:
    """Every ``amd*.json`` in the CDI spec directories."""
    specs: list[CdiSpec] = []
    for shown_dir in CDI_DIRS:
        directory = reader.root.join(shown_dir)
        for name in reader.listdir(directory):
            if not (name.startswith("amd") and name.endswith(".json")):
                continue
            path = directory / name
            shown = reader.root.display(path)
            data = reader.data(path, limit=SPEC_LIMIT)
            if data is None:
                if reader.is_file(path):
                    specs.append(CdiSpec(shown, "", "", (), "unreadable or larger than 1 MiB"))
                continue
            specs.append(parse_spec(shown, data))
    return tuple(specs)


def _int(value: object, low: int, high: int) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None


def parse_spec(shown: str, data: bytes) -> CdiSpec:
    """A CDI spec's device nodes; a spec that is not one comes back with ``problem`` set."""
    import json

    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = str(exc) if not isinstance(exc, RecursionError) else "nested too deeply"
        return CdiSpec(shown, "", "", (), f"not JSON: {reason[:120]}")
    if not isinstance(doc, dict):
        return CdiSpec(shown, "", "", (), "not a CDI spec: the top level is not an object")
    kind, version = doc.get("kind"), doc.get("cdiVersion")
    if not isinstance(kind, str) or not isinstance(version, str):
        return CdiSpec(shown, "", "", (), "not a CDI spec: no 'kind' and 'cdiVersion' strings")
    edits: list[tuple[str, object]] = [("", doc.get("containerEdits"))]
    devices = doc.get("devices")
    if not isinstance(devices, list):
        return CdiSpec(shown, kind[:100], version[:20], (), "not a CDI spec: 'devices' is not a list")
    for device in devices:
        if isinstance(device, dict) and isinstance(device.get("name"), str):
            edits.append((device["name"][:100], device.get("containerEdits")))
    nodes: list[CdiNode] = []
    for name, edit in edits:
        entries = edit.get("deviceNodes") if isinstance(edit, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or len(nodes) >= MAX_NODES:
                continue
            host = entry.get("hostPath")
            mode = _int(entry.get("fileMode"), 0, 2**32 - 1)
            nodes.append(
                CdiNode(
                    device=name,
                    path=entry["path"][:4096],
                    host_path=(host if isinstance(host, str) and host else entry["path"])[:4096],
                    major=_int(entry.get("major"), 0, 2**32 - 1),
                    minor=_int(entry.get("minor"), 0, 2**32 - 1),
                    mode=None if mode is None else mode & 0o7777,
                    gid=_int(entry.get("gid"), 0, 2**32 - 1),
                )
            )
    return CdiSpec(shown, kind[:100], version[:20], tuple(nodes))
