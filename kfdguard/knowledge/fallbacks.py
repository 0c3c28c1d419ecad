"""Firmware files amdgpu asks for and does without: first choices with a fallback, optional files.

Read per kernel series from the driver's own request call sites (generated.py's ``firmware_optional``,
written by tools/knowledge/requests.py from the request calls and MODULE_FIRMWARE lines of each
linux-source read): a first choice whose failure makes the driver ask for another file into the
same firmware pointer (gfx_v8_0.c's <polaris>_pfp_2.bin, then <polaris>_pfp.bin), a request whose
failure branch clears the error (gfx_v9/v10's <chip>_mec2.bin) or returns 0 on what a missing file gives
(amdgpu_dm.c's <chip>_dmcu.bin in every series, its <chip>_dmcub.bin in 5.10 and 6.1), and, from 7.2's
amdgpu_ucode_request(), a request marked AMDGPU_UCODE_OPTIONAL. A failed request for such a file ("Direct
firmware load for amdgpu/polaris10_pfp_2.bin failed with error -2") is no missing firmware: a fallback's
own failure shows as its own line.

Kept apart from knowledge/firmware.py, which loads the json data (and pathlib with it): the rules
read this on every check, the boot pass's included, and generated.py is a module of literals.
"""

from __future__ import annotations

from kfdguard.knowledge.generated import KERNELS

# Hand-written, because the generator cannot derive it: amdgpu_mes.c's fallback request is read
# (on failure it asks for amdgpu/<gc>_mes.bin: the "fallback" of every series read from 6.1 on,
# see docs/KNOWLEDGE.md), but not its first choice's name, which amdgpu_mes_init_microcode() builds
# with snprintf() in an if/else on the GC version before the call, choosing "_2" or "1" by a ternary
# on the pipe (the scheduler pipe asks for <gc>_mes_2.bin, the KIQ pipe for <gc>_mes1.bin, which has
# no fallback); the generator leaves such names unread rather than guess
# (tests/unit/knowledge/test_firmware_requests.py holds this row to the data). A failed
# "amdgpu/gc_11_0_0_mes_2.bin" on every RDNA3 GPU of a Debian 12 machine, whose firmware package
# predates the _2 files, is the case. A row is (suffix, fallback suffix, source).
FALLBACKS: tuple[tuple[str, str, str], ...] = (
    (
        "_mes_2.bin",
        "_mes.bin",
        "drivers/gpu/drm/amd/amdgpu/amdgpu_mes.c amdgpu_mes_init_microcode(): GC 11.x asks for <gc>_mes_2.bin, "
        "then 'try to fall back to' <gc>_mes.bin (upstream 97998b893c30, 6.2; in 6.1 stable since 6.1.y's backport)",
    ),
)

# Hand-written, because the generator cannot name the file: amdgpu_isp.c builds the camera ISP's firmware name
# from the IP version (amdgpu_ucode_ip_version_decode(adev, ISP_HWIP, ...): "isp_4_1_0"). Its failure is gone
# without in every series that has an ISP block: in 6.12 isp_early_init() returns -ENOENT on a failed load, which
# amdgpu_device_ip_early_init() takes as the block absent (status.valid = false) and goes on; 7.2 asks with
# AMDGPU_UCODE_OPTIONAL besides. A row is (prefix, why, source); the source's first word is the file whose
# request it stands for (the coverage report, tools/knowledge/report.py, names the row beside that request).
OPTIONAL_BY_NAME: tuple[tuple[str, str, str], ...] = (
    (
        "amdgpu/isp_",
        "the camera ISP's firmware: without it amdgpu drops the ISP block and goes on",
        "drivers/gpu/drm/amd/amdgpu/amdgpu_isp.c isp_early_init() (-ENOENT) and amdgpu_device.c "
        "amdgpu_device_ip_early_init() (6.12); AMDGPU_UCODE_OPTIONAL in 7.2",
    ),
)

Version = tuple[int, int] | tuple[int, int, int]


def _series_for(version: Version | None) -> tuple[str, ...]:
    """The series read whose sources judge a kernel: its own, or the newest when it is newer than every
    series read; between two series read, both (they must agree); older than every series read, or
    unknown: all of them."""
    read = sorted(KERNELS, key=lambda s: tuple(int(p) for p in s.split(".")))
    if version is None:
        return tuple(read)
    key = (version[0], version[1])
    older = [s for s in read if tuple(int(p) for p in s.split(".")) <= key]
    newer = [s for s in read if tuple(int(p) for p in s.split(".")) > key]
    if not older:
        return tuple(read)
    if not newer or older[-1] == f"{key[0]}.{key[1]}":
        return (older[-1],)
    return older[-1], newer[0]


def _basis(series: tuple[str, ...]) -> str:
    if len(series) == len(KERNELS) and len(series) > 2:
        return f"every kernel series read ({', '.join(series)})"
    return f"the {' and '.join(series)} sources"


def generated(name: str, version: Version | None) -> tuple[str, str, str] | None:
    """(kind, fallback file or "", which sources say so) when the sources read for this kernel go on
    without ``name`` (amdgpu/...): kind "fallback", "optional" (AMDGPU_UCODE_OPTIONAL) or "tolerated"
    (the request's failure is tolerated). None: the file is required, or not known to be optional, there."""
    series = _series_for(version)
    found = [KERNELS[s]["firmware_optional"].get(name) for s in series]
    if not found or any(f is None for f in found):
        return None
    roles = {f for f in found if f is not None}
    kind, fallback = roles.pop() if len(roles) == 1 else ("optional", "")
    return kind, fallback, _basis(series)


def fallback_of(name: str, version: Version | None = None) -> str | None:
    """The file amdgpu loads when ``name`` (as the log names it, amdgpu/...) fails, if it has one."""
    found = generated(name, version)
    if found is not None and found[0] == "fallback" and found[1]:
        return found[1]
    for suffix, fallback, _source in FALLBACKS:
        if name.endswith(suffix):
            return name.removesuffix(suffix) + fallback
    return None


def goes_without(name: str, version: Version | None = None) -> str | None:
    """Why amdgpu goes on without ``name`` on this kernel, if its sources say it does (and not through a
    fallback, which fallback_of names): a phrase for a finding, or None."""
    by_name = next((why for prefix, why, _source in OPTIONAL_BY_NAME if name.startswith(prefix)), None)
    if by_name is not None:
        return by_name
    found = generated(name, version)
    if found is None or fallback_of(name, version) is not None:
        return None
    kind, _fallback, basis = found
    how = {
        "optional": "asks for it with AMDGPU_UCODE_OPTIONAL",
        "tolerated": "goes on without it when the request fails",
        "fallback": "asks for another file instead",
    }[kind]
    return f"amdgpu in {basis} {how}"
