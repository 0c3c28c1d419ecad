"""PCIe link attributes of a PCI device (``current_link_speed``, ``max_link_width``...) and amdgpu's
memory totals (``mem_info_vram_total``, ``mem_info_gtt_total``).

The speed files changed format with Linux 5.2, when pci-sysfs.c began to print
``pci_speed_string()`` ("8.0 GT/s PCIe"; the same table in the Debian sources of
5.10, 6.1, 6.12 and 7.2, which added "64.0 GT/s PCIe") instead of its own switch
("8 GT/s", "Unknown speed"). Both are read. "Unknown" is the kernel's own answer for
a link it cannot decode (a link in training, a reserved code): no speed, not an error.
"""

from __future__ import annotations

# "2.5 GT/s", "8 GT/s" (before 5.2) or "8.0 GT/s PCIe" (5.2 and later): WHOLE[.FRAC] GT/s[ PCIe],
# 1-3 digits and one. Read with str methods: a compiled pattern was a third of a million
# instructions of every boot pass (callgrind).
# What both formats print when the link status code has no name.
UNKNOWN_SPEEDS = frozenset({"Unknown", "Unknown speed"})
# PCIe link widths go up to x32 (the Link Capabilities field is 6 bits, 0x20 the largest defined).
MAX_WIDTH = 32
# A GPU memory total above 1 PiB is not a real reading.
MAX_MEMORY = 1 << 50


class SysfsValueError(ValueError):
    """A value the kernel never prints in that file."""


def parse_link_speed(text: str) -> int | None:
    """Link speed in MT/s (8000 for "8.0 GT/s PCIe"), None for the kernel's "Unknown".

    Raises SysfsValueError for anything else (conventional PCI's "33 MHz PCI" included:
    the attribute exists only on PCIe devices, so that text is not from the kernel).
    """
    text = text.strip()
    if text in UNKNOWN_SPEEDS:
        return None
    number, unit, rest = text.partition(" GT/s")
    whole, dot, frac = number.partition(".")
    if not (
        unit
        and rest in ("", " PCIe")
        and text.isascii()
        and 1 <= len(whole) <= 3
        and whole.isdigit()
        and (not dot or (len(frac) == 1 and frac.isdigit()))
    ):
        raise SysfsValueError(f"{text[:40]!r} is not a PCIe link speed")
    speed = int(whole) * 1000 + int(frac or 0) * 100
    if speed not in (2500, 5000, 8000, 16000, 32000, 64000):
        raise SysfsValueError(f"{text[:40]!r} is not a PCIe link speed")
    return speed


def parse_link_width(text: str) -> int:
    """A link width ("%u\\n": 16 for x16; 0 while the link is down)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 2) or int(text) > MAX_WIDTH:
        raise SysfsValueError(f"{text[:40]!r} is not a PCIe link width (0..{MAX_WIDTH})")
    return int(text)


def parse_memory_total(text: str) -> int:
    """amdgpu's "%llu\\n" byte count."""
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 20) or int(text) > MAX_MEMORY:
        raise SysfsValueError(f"{text[:40]!r} is not a byte count")
    return int(text)


def format_speed(mts: int) -> str:
    """8000 -> "8.0 GT/s"."""
    return f"{mts // 1000}.{mts % 1000 // 100} GT/s"


def format_bytes(size: int) -> str:
    """Binary units, one decimal: 25753026560 -> "24.0 GiB"."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
