"""The kernels' real message formats (generated data) and how to render them as log lines.

``kernel(series)`` loads one kernel's generated facts (data/kernel-X.Y.json.gz)
on first use: json and gzip are imported here, inside the functions, because
this module is off the boot path (diagnose, the simulator and tests use it).
``COVERED`` names the failure classes kfdguard has rules for, as patterns over
real format strings; tests render every format of those classes and require a
rule to match it.
"""

from __future__ import annotations

import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATA = Path(__file__).resolve().parent / "data"
_cache: dict[str, Any] = {}


class KnowledgeDataError(Exception):
    """The generated data is missing or unreadable (a broken install, not bad input)."""


def _load(name: str) -> Any:
    if name not in _cache:
        import gzip
        import json

        try:
            _cache[name] = json.loads(gzip.decompress((DATA / name).read_bytes()))
        except (OSError, ValueError, EOFError) as exc:
            raise KnowledgeDataError(f"{DATA / name}: {exc}") from exc
    return _cache[name]


def series() -> tuple[str, ...]:
    from kfdguard.knowledge.generated import KERNELS

    return tuple(sorted(KERNELS, key=lambda s: tuple(int(p) for p in s.split("."))))


def kernel(name: str) -> dict[str, Any]:
    """One kernel series' generated facts (provenance, kfd, pci, params, firmware, messages)."""
    facts: dict[str, Any] = _load(f"kernel-{name}.json.gz")
    return facts


def ids_firmware() -> dict[str, Any]:
    """libdrm amdgpu.ids and pci.ids rows, firmware-amd-graphics file lists, with provenance."""
    facts: dict[str, Any] = _load("ids-firmware.json.gz")
    return facts


_SPEC = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?(?P<len>hh|h|ll|l|z|j|t|L)?(?P<conv>p[A-Za-z]*|[diouxXcsn%])"
)


def render(fmt: str) -> str:
    """A format string with sample arguments: %d -> 0, %s -> x, %x -> 1a, %p* -> a symbol..."""

    def one(m: re.Match[str]) -> str:
        conv, width = m.group("conv"), m.group("width")
        if conv == "%":
            return "%"
        if conv in "diu":
            text = "0"
        elif conv in "xX":
            text = "1a" if conv == "x" else "1A"
        elif conv == "o":
            text = "7"
        elif conv in {"c", "s"}:
            text = "x"
        elif conv.startswith("p"):
            text = "amdgpu_func+0x1a/0x40 [amdgpu]" if conv in ("pS", "pB") else "amdgpu_func" if conv == "ps" else "x"
        else:
            text = ""
        if width and width.isdigit() and len(text) < int(width):
            pad = "0" if "0" in (m.group("flags") or "") and conv in "diouxX" else " "
            text = text.rjust(int(width), pad) if "-" not in (m.group("flags") or "") else text.ljust(int(width))
        return text

    return _SPEC.sub(one, fmt)


def sample_line(message: list[Any]) -> str:
    """A dmesg line as the kernel would print the message [level, macro, prefix, fmt, file, line]."""
    _level, macro, prefix, fmt, _file, _line = message
    fmt = str(fmt)
    # A format that starts with "%s: " names its speaker there (drivers/base/dd.c's "%s: probe of %s failed"
    # takes drv->name): the sample is amdgpu's line, as a rule about an AMD GPU hears it.
    speaker = "amdgpu: " if fmt.startswith("%s: ") else ""
    body = (
        render(str(prefix)).replace("amdgpu_func]", "amdgpu_func [amdgpu]]")
        + speaker
        + render(fmt.removeprefix("%s: "))
    )
    if str(macro).startswith(("dev_", "drm_", "DRM_DEV")):
        return "amdgpu 0000:03:00.0: " + body
    return body


# Failure classes kfdguard has rules for: (class, file name pattern, format pattern, rule classes
# that may match). A format of one of these files matching the pattern must match a rule of one
# of those classes. Chosen from the list (kfd init, IP discovery, IP block init, firmware,
# MES/ring hangs, VRAM loss, probe failure) and checked against the formats the generator found.
COVERED: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("kfd-module", r"kfd_module\.c", r"invalid value|must be between", ("failure",)),
    ("kfd-probe", r"kfd_device\.c", r"not supported in kfd|is missing in supported_devices|kgd2kfd_probe failed|KFD support on Hawaii is experimental|^asic_type %d out of range", ("failure",)),
    ("kfd-device-init", r"kfd_device\.c", r"^(Could not allocate|Error initializing|Error adding device|device %x:%x NOT added|KFD num nodes|Error starting queue manager|Failed to resume IOMMU|skipped device)", ("failure",)),
    ("amdgpu-si-declined", r"amdgpu_drv\.c", r"^SI support provided by radeon|without SI support", ("failure",)),
    ("kfd-ip-mismatch", r"kfd_device\.c", r"is set due to mismatch", ("failure",)),
    ("kfd-iommu", r"kfd_iommu\.c", r"iommu info|required iommu flags", ("failure",)),
    ("kfd-iommu-init", r"kfd_device\.c", r"Error initializing iommuv2", ("failure",)),
    ("kfd-vcrat", r"kfd_topology\.c|kfd_crat\.c", r"VCRAT", ("failure",)),
    ("kfd-hws-hang", r"kfd_device_queue_manager\.c", r"^(qcm fence wait loop timeout expired|The cp might be in an unrecoverable state)", ("runtime",)),
    ("amdgpu-discovery", r"amdgpu_discovery\.c", r"^Failed to add .*ip block|^discovery failed|^amdgpu_discovery_init failed|can't load firmware", ("failure",)),
    ("gpu-reset", r"amdgpu/(?:amdgpu_device|aldebaran|sienna_cichlid|smu_v13_0_10)\.c", r"^GPU reset|^GPU recovery disabled", ("runtime",)),
    ("amdgpu-ip-init", r"amdgpu_device\.c", r"(early_init|sw_init|hw_init|late_init|resume) of IP block <%s> failed", ("failure",)),
    ("amdgpu-fatal", r"amdgpu_device\.c", r"Fatal error during GPU init|^no vBIOS found", ("failure",)),
    ("amdgpu-vram-lost", r"amdgpu_device\.c", r"VRAM is lost due to GPU reset", ("runtime",)),
    ("amdgpu-psp-firmware", r"amdgpu_psp\.c", r"^Failed to load psp firmware", ("failure",)),
    ("mes-hang", r"mes_v1[12]_0\.c|amdgpu_mes\.c", r"failed to respon[ds]e? (?:to )?msg=", ("runtime",)),
    ("ring-timeout", r"amdgpu_job\.c", r"^ring %s timeout", ("runtime",)),
    ("probe-failed", r"dd\.c", r"probe.*failed with error", ("failure",)),
    ("firmware-load", r"firmware_loader/main\.c", r"^Direct firmware load for", ("failure",)),
)  # fmt: skip


def covered_class(message: list[Any]) -> tuple[str, tuple[str, ...]] | None:
    """The COVERED class of a message, or None."""
    fmt, file = str(message[3]), str(message[4])
    for name, file_re, fmt_re, klasses in COVERED:
        if re.search(file_re, file) and re.search(fmt_re, fmt):
            return name, klasses
    return None
