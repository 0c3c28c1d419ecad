"""knowledge's lazy lookups give what eager ones gave: per-device scans and the index agree."""

from __future__ import annotations

import importlib
from types import ModuleType

from kfdguard import knowledge
from kfdguard.knowledge.asics import ASICS, PCI_ROWS

REVISIONS = (None, 0x00, 0xC0, 0xC8, 0xCC, 0xFF)


def _answers(module: ModuleType, devices: list[int]) -> dict[tuple[int, int | None], tuple[str | None, str | None]]:
    found = {}
    for device in devices:
        for revision in REVISIONS:
            chip, name = module.identify(device, revision)
            found[device, revision] = (chip.key if chip else None, name)
    return found


def test_scanned_devices_and_the_index_answer_alike() -> None:
    devices = [*sorted({row[0] for row in PCI_ROWS}), 0x0001, 0xFFFF]  # two libdrm does not name
    module = importlib.reload(knowledge)  # fresh caches: the first devices asked are scanned
    forward = _answers(module, devices)
    assert module._index is not None  # the rest went through the index
    module = importlib.reload(knowledge)
    backward = _answers(module, devices[::-1])  # now the last devices are the scanned ones
    assert forward == backward
    assert forward[0x744C, 0xC8] == ("navi31", "AMD Radeon RX 7900 XTX")
    assert forward[0xFFFF, None] == (None, None)


def test_each_asic_is_corrected_once_whichever_way_it_is_asked_for() -> None:
    module = importlib.reload(knowledge)
    one = module.asic("navi31")
    assert one is not None and one is module.asic("navi31")
    every = module.asics()
    assert [a.key for a in every] == [a.key for a in ASICS] and one in every
    assert all(module.asic(a.key) is a for a in every)
    assert all(a == module._sourced(raw) for a, raw in zip(every, ASICS, strict=True))
    assert module.asic("no-such-chip") is None
