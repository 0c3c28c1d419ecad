"""kfdguard's knowledge: versioned data with sources, and lookups over it.

``asics`` (PCI ids -> chip -> gfx target -> first KFD kernel), ``params``
(KFD module parameters, valid ranges, bogus ones) and ``logrules`` (kernel
messages and what they mean). ``generated`` (a literal module) and
``data/*.json.gz`` are produced by tools/knowledge from Debian's kernel
sources and modules: where they say something (which GC IPs a kernel's KFD
drives, amdgpu's PCI table, parameters per kernel), they win over the
hand-written tables (see docs/KNOWLEDGE.md). Assess reads only this package's data; the
simulator keeps its own hardware sheet so that tests cannot agree with the
assessment by sharing a row.
"""

from __future__ import annotations

from kfdguard.knowledge.asics import ASICS, PCI_ROWS, SOURCES
from kfdguard.knowledge.chips import CHIP_TO_ASIC, FAMILY_TO_ASIC
from kfdguard.knowledge.generated import KERNELS, PCI_CHIPS, PCI_FAMILIES, PCI_NAMES
from kfdguard.knowledge.model import Asic, KernelVersion, PciId
from kfdguard.record import replace

KNOWLEDGE_VERSION = "2026.12.1"

# Asic.key -> the CHIP_* type amdgpu's PCI table and pre-discovery KFD use for it.
_ASIC_CHIP = {key: chip for chip, key in CHIP_TO_ASIC.items()} | {"picasso": "CHIP_RAVEN"}


def _series(name: str) -> KernelVersion:
    major, minor = name.split(".")[:2]
    return int(major), int(minor)


def kfd_labels(asic: Asic) -> tuple[str, ...]:
    """The keys under which a kernel's generated KFD table lists this ASIC (GC IP and/or CHIP type)."""
    return tuple(x for x in (asic.gc_ip, _ASIC_CHIP.get(asic.key)) if x)


def kfd_in_kernel(asic: Asic, series: str) -> bool | None:
    """Does that kernel series' KFD (as read from Debian's source) drive the ASIC? None: series not read."""
    kernel = KERNELS.get(series)
    if kernel is None:
        return None
    return any(label in kernel["kfd"] for label in kfd_labels(asic))


def first_kfd_series(asic: Asic) -> KernelVersion | None:
    """The earliest kernel series read whose KFD drives the ASIC (stable backports included)."""
    found = [_series(s) for s in KERNELS if kfd_in_kernel(asic, s)]
    return min(found) if found else None


def _sourced(asic: Asic) -> Asic:
    """The hand-written first KFD release, corrected by the generated kernel tables.

    A series read from Debian's source that drives the ASIC bounds the first release from
    above: a later hand-written release (Phoenix2's "6.2" while 6.1.y drives GC 11.0.4) is
    wrong for every user of that series, so the table's answer wins.
    """
    first = first_kfd_series(asic)
    if first is None or (asic.kfd_since is not None and asic.kfd_since <= first):
        return asic
    source = asic.source if "kfd-data" in asic.source else f"kfd-data; {asic.source}"
    return replace(asic, kfd_since=first, kfd_since_uncertain=True, source=source)


_RAW = {asic.key: asic for asic in ASICS}
# Each ASIC corrected by the kernel tables (_sourced) when first asked for: the boot pass asks for
# its GPUs' few, and correcting all of them at import was ~5 M instructions (callgrind), 3 % of it.
_by_key: dict[str, Asic] = {}
PciRows = list[tuple[int | None, str, str]]
# libdrm's rows of a device, (revision, name, asic). A scan of PCI_ROWS per device asked about
# while few are (a machine has one or two: indexing all ~800 rows cost the boot pass ~3 M
# instructions), then the whole index, so that a text naming many devices stays linear.
_SCANS = 8
_scanned: dict[int, PciRows] = {}
_index: dict[int, PciRows] | None = None


def _device_rows(device: int) -> PciRows:
    global _index  # noqa: PLW0603 - built once, after _SCANS devices, off the boot pass
    if _index is not None:
        return _index.get(device, [])
    rows = _scanned.get(device)
    if rows is not None:
        return rows
    if len(_scanned) < _SCANS:
        rows = _scanned[device] = [(r, n, a) for d, r, n, a, _source in PCI_ROWS if d == device]
        return rows
    index: dict[int, PciRows] = {}
    for d, r, n, a, _source in PCI_ROWS:
        index.setdefault(d, []).append((r, n, a))
    _index = index
    return index.get(device, [])


def _corrected(raw: Asic) -> Asic:
    found = _by_key.get(raw.key)
    if found is None:
        found = _by_key[raw.key] = _sourced(raw)
    return found


def asics() -> tuple[Asic, ...]:
    return tuple(_corrected(raw) for raw in ASICS)


def asic(key: str) -> Asic | None:
    raw = _RAW.get(key)
    return None if raw is None else _corrected(raw)


def identify(device: int, revision: int | None = None) -> tuple[Asic | None, str | None]:
    """The chip and marketing name of an AMD PCI device (vendor 0x1002).

    libdrm names some devices per revision (0x744C C8 is the RX 7900 XTX, CC
    the 7900 XT...): an exact revision wins, then a revision-less row, then
    the first row for the device.
    """
    rows = _device_rows(device)
    if not rows:
        # libdrm does not name it: amdgpu's own PCI table (generated) still says which chip it is,
        # or, for a GPU newer than that table (IP discovery), its pci.ids family (generated).
        key = CHIP_TO_ASIC.get(PCI_CHIPS.get(device, "")) or FAMILY_TO_ASIC.get(PCI_FAMILIES.get(device, ""), "")
        chip = asic(key)
        if chip is None:
            return None, None
        return chip, PCI_NAMES.get(device)
    row = next((r for r in rows if r[0] is not None and r[0] == revision), None)
    row = row or next((r for r in rows if r[0] is None), None)
    if row is None:
        # Revision unknown (a log line, no lspci) and libdrm names the device per
        # revision: the chip is certain, the marketing name is not.
        names = {r[1] for r in rows}
        chip = asic(rows[0][2])
        return chip, rows[0][1] if len(names) == 1 else None
    return asic(row[2]), row[1]


def pci_ids() -> tuple[PciId, ...]:
    return tuple(PciId(d, r, n, a, s) for d, r, n, a, s in PCI_ROWS)


def source(key_or_text: str) -> str:
    """Expand "libdrm-ids; kfd-6.1" into full citations."""
    parts = [p.strip() for p in key_or_text.split(";") if p.strip()]
    return "; ".join(SOURCES.get(p, p) for p in parts)
