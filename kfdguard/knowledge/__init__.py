"""kfdguard's knowledge: versioned data with sources, and lookups over it.

``asics`` (PCI ids -> chip -> gfx target -> first KFD kernel), ``params``
(KFD module parameters, valid ranges, bogus ones) and ``logrules`` (kernel
messages and what they mean). Assess reads only this package's data; the
simulator keeps its own hardware sheet so that tests cannot agree with the
assessment by sharing a row.
"""

from __future__ import annotations

from kfdguard.knowledge.asics import ASICS, PCI_ROWS, SOURCES
from kfdguard.knowledge.model import Asic, PciId

KNOWLEDGE_VERSION = "2026.11.1"

_BY_KEY = {asic.key: asic for asic in ASICS}
_index: dict[int, list[tuple[int | None, str, str]]] | None = None


def _pci_index() -> dict[int, list[tuple[int | None, str, str]]]:
    global _index  # noqa: PLW0603 - built once, on first lookup, off the import path
    if _index is None:
        index: dict[int, list[tuple[int | None, str, str]]] = {}
        for device, revision, name, asic, _source in PCI_ROWS:
            index.setdefault(device, []).append((revision, name, asic))
        _index = index
    return _index


def asic(key: str) -> Asic | None:
    return _BY_KEY.get(key)


def identify(device: int, revision: int | None = None) -> tuple[Asic | None, str | None]:
    """The chip and marketing name of an AMD PCI device (vendor 0x1002).

    libdrm names some devices per revision (0x744C C8 is the RX 7900 XTX, CC
    the 7900 XT...): an exact revision wins, then a revision-less row, then
    the first row for the device.
    """
    rows = _pci_index().get(device)
    if not rows:
        return None, None
    row = next((r for r in rows if r[0] is not None and r[0] == revision), None)
    row = row or next((r for r in rows if r[0] is None), None)
    if row is None:
        # Revision unknown (a log line, no lspci) and libdrm names the device per
        # revision: the chip is certain, the marketing name is not.
        names = {r[1] for r in rows}
        chip = _BY_KEY.get(rows[0][2])
        return chip, rows[0][1] if len(names) == 1 else None
    return _BY_KEY.get(row[2]), row[1]


def pci_ids() -> tuple[PciId, ...]:
    return tuple(PciId(d, r, n, a, s) for d, r, n, a, s in PCI_ROWS)


def source(key_or_text: str) -> str:
    """Expand "libdrm-ids; kfd-6.1" into full citations."""
    parts = [p.strip() for p in key_or_text.split(";") if p.strip()]
    return "; ".join(SOURCES.get(p, p) for p in parts)
