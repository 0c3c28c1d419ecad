"""Derive tests/data/sysfs-formats.json from Debian's kernel sources.

What the kernel prints in the files kfdguard reads for a GPU's resources
(issue 17 item 5): the PCIe link speed strings of pci-sysfs.c (through
pci_speed_string() of drivers/pci/probe.c) and the printf formats of the link
widths and of amdgpu's mem_info_vram_total / mem_info_gtt_total. The
simulator is held to this table (tests/unit/test_device_resources.py), so that it
prints only what those kernels print.

Usage: python3 -m tools.devices.sysfs_formats SOURCES... > tests/data/sysfs-formats.json
where each SOURCES is an unpacked linux-source-X.Y tree (the top directory of
/usr/src/linux-source-X.Y.tar.xz); only drivers/pci and drivers/gpu/drm/amd/amdgpu
are read.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _function(text: str, name: str) -> str:
    start = text.index(f"{name}(")
    end = text.index("\n}\n", start)
    return text[start:end]


def _format(body: str) -> str:
    # The format string of the function's sysfs_emit()/sprintf()/snprintf() call.
    match = re.search(r"(?:sysfs_emit|sprintf|snprintf)\s*\(\s*buf\s*,\s*(?:PAGE_SIZE\s*,\s*)?\"([^\"]*)\"", body)
    if match is None:
        raise ValueError(f"no format in {body[:80]!r}")
    return match.group(1)


def derive(tree: Path) -> dict[str, object]:
    version = re.search(r"^VERSION = (\d+)\nPATCHLEVEL = (\d+)", (tree / "Makefile").read_text(), re.M)
    series = f"{version.group(1)}.{version.group(2)}" if version else tree.name
    probe = (tree / "drivers/pci/probe.c").read_text()
    table = _function(probe, "const char *pci_speed_string")
    speeds = re.findall(r"\"([0-9.]+ GT/s PCIe)\"", table)
    unknown = re.findall(r"return \"(Unknown[^\"]*)\"", table)
    sysfs = (tree / "drivers/pci/pci-sysfs.c").read_text()
    formats = {
        name: _format(_function(sysfs, f"static ssize_t {name}_show"))
        for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
    }
    amdgpu = tree / "drivers/gpu/drm/amd/amdgpu"
    formats["mem_info_vram_total"] = _format(
        _function((amdgpu / "amdgpu_vram_mgr.c").read_text(), "static ssize_t amdgpu_mem_info_vram_total_show")
    )
    formats["mem_info_gtt_total"] = _format(
        _function((amdgpu / "amdgpu_gtt_mgr.c").read_text(), "static ssize_t amdgpu_mem_info_gtt_total_show")
    )
    return {"series": series, "speeds": speeds, "unknown": unknown, "formats": formats}


def main(argv: list[str]) -> int:
    kernels = sorted((derive(Path(a)) for a in argv), key=lambda k: tuple(int(p) for p in str(k["series"]).split(".")))
    json.dump({"source": "Debian linux-source-X.Y packages", "kernels": kernels}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
