"""Bounded label values: what may go into a Prometheus or Kubernetes label.

Labels are indexed by every series or node they mark, so only values from a
small, known set may go in: a PCI address, a device id, a gfx target, a
marketing name from kfdguard's knowledge table, a finding code. Anything else
coming from the machine (a hostile sysfs file, an unknown device) is dropped,
never copied.
"""

from __future__ import annotations

import re

from kfdguard.verdict import GpuStatus

# domain:bus:device.function as sysfs names PCI devices (<linux/pci.h> PCI_SLOT/PCI_FUNC).
PCI_SLOT = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]")
# LLVM's AMDGPU processor names: gfx + major + minor + stepping in hex (gfx803, gfx90a, gfx1100).
GFX_TARGET = re.compile(r"gfx[0-9]{1,2}[0-9][0-9a-f]")
# A finding code: lower-case words joined by dashes (kfdguard's own identifiers).
CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# uname -r and the KFD interface version: one value per node, but still machine text.
RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,63}")
KFD_VERSION = re.compile(r"[0-9]{1,5}\.[0-9]{1,5}")
APPLICATION = re.compile(r"[a-z][a-z0-9.]{0,15}")  # kfdguard's own kinds: ollama, llama.cpp, pytorch...


def bounded(text: str | None, pattern: re.Pattern[str]) -> str:
    """``text`` when it is entirely of ``pattern``'s shape, else ""."""
    return text if text is not None and pattern.fullmatch(text) else ""


def known_name(gpu: GpuStatus) -> str:
    """The GPU's marketing name when it comes from the knowledge table, else ""."""
    from kfdguard.knowledge import identify

    _, name = identify(gpu.device, gpu.revision)
    return gpu.name if gpu.vendor == 0x1002 and name is not None and name == gpu.name else ""
