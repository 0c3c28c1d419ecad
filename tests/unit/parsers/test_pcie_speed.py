"""parse_link_speed accepts exactly what its former pattern accepted, with the same speeds."""

from __future__ import annotations

import random
import re

from kfdguard.parsers.pcie import SysfsValueError, parse_link_speed

PATTERN = re.compile(r"(?P<whole>\d{1,3})(?:\.(?P<frac>\d))? GT/s(?: PCIe)?")  # what it matched before
SPEEDS = (2500, 5000, 8000, 16000, 32000, 64000)


def _by_pattern(text: str) -> int | str | None:
    text = text.strip()
    if text in ("Unknown", "Unknown speed"):
        return None
    match = PATTERN.fullmatch(text)
    if match is None or not text.isascii():
        return "refused"
    speed = int(match["whole"]) * 1000 + int(match["frac"] or 0) * 100
    return speed if speed in SPEEDS else "refused"


def _parsed(text: str) -> int | str | None:
    try:
        return parse_link_speed(text)
    except SysfsValueError:
        return "refused"


def test_link_speeds_as_the_pattern_read_them() -> None:
    known = ["2.5 GT/s", "5 GT/s", "8 GT/s", "8.0 GT/s PCIe", "16.0 GT/s PCIe\n", "64.0 GT/s PCIe", "Unknown"]
    odd = ["8.0 GT/s PCIe PCIe", "8. GT/s", ".5 GT/s", "8.00 GT/s", "0008 GT/s", "8 GT/sPCIe", "８ GT/s", "33 MHz PCI"]
    rng = random.Random(4)
    pieces = ["2", "5", "8", "0", "1", "6", ".", " GT/s", " PCIe", " ", "٨", "x"]
    randoms = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(50000)]
    for text in known + odd + randoms:
        assert _parsed(text) == _by_pattern(text), repr(text)
    assert [_parsed(t) for t in known] == [2500, 5000, 8000, 8000, 16000, 64000, None]
