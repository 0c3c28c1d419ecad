"""A missing DMCU/DMCUB (display microcontroller) firmware file, judged by what each kernel series' amdgpu_dm does.

Read from the sources (tests/unit/knowledge/test_firmware_requests.py holds the data to them): 5.10 and 6.1
ask for <chip>_dmcub.bin with request_firmware_direct() (no "Direct firmware load" warning: FW_OPT_NO_WARN;
Debian's loader patch still logs "firmware: failed to load ... (-2)"), print "DMUB firmware loading failed"
and go on; from 6.12 a failed DMCUB request fails dm's early_init and with it the GPU. A missing DMCU file is
tolerated in every series (load_dmcu_fw() returns 0 on the missing file's errno); amdgpu_dm's own "Can't
load firmware" / "Can't validate firmware" is printed only on its other errors, which fail the init.

Every line here is rendered from a format string of the series read (kfdguard/knowledge/data), with the
prefixes the kernel puts before it.
"""

from __future__ import annotations

import re

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge import formats
from kfdguard.verdict import Severity

RELEASES = {
    "5.10": "5.10.0-32-amd64",
    "6.1": "6.1.0-27-amd64",
    "6.12": "6.12.38+deb13-amd64",
    "7.2": "7.2.13+deb14-amd64",
}
RENOIR = (
    "04:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Renoir [1002:1636] (rev c6)\n"
)
PICASSO = (
    "04:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Picasso/Raven 2 "
    "[Radeon Vega Series / Radeon Vega Mobile Series] [1002:15d8] (rev c2)\n"
)
DEVICE = "amdgpu 0000:04:00.0: "
_CONVERSION = re.compile(r"%(?:[-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?[a-zA-Z]")


def _line(
    series: str, fmt: str, *args: object, file: str = "", caller: str = "amdgpu_func", device: str = DEVICE
) -> str:
    """The kernel's line for ``fmt`` of ``series`` (the file ``file`` ends with), ``args`` put in, as
    printed on ``device`` (dev_*, drm_*) or by DRM_* (which name the function ``caller``)."""
    found = [m for m in formats.kernel(series)["messages"] if m[3] == fmt and str(m[4]).endswith(file)]
    assert found, f"{fmt!r} is not a format of {series}"
    _level, macro, prefix, text, *_where = found[0]
    values = iter(args)
    body = str(prefix).replace("%ps", f"{caller} [amdgpu]") + _CONVERSION.sub(lambda _m: str(next(values)), text)
    return device + body if str(macro).startswith(("dev_", "drm_", "DRM_DEV")) else body


def _loader(series: str, name: str) -> list[str]:
    """What firmware_loader/main.c prints for a missing file: Debian's "failed to load" on every request
    (5.10/6.1 at error level, with a once-per-boot pointer to the wiki), the upstream warning only when the
    request is not quiet (request_firmware(), as amdgpu_ucode_request() makes; 5.10/6.1's DM requests are
    request_firmware_direct())."""
    main_c = "firmware_loader/main.c"
    lines = [_line(series, "firmware: failed to load %s (%d)", name, -2, file=main_c)]
    if series in ("5.10", "6.1"):
        # main.c's pr_fmt is KBUILD_MODNAME ": ", and the loader's module is firmware_class.
        wiki = "See https://wiki.debian.org/Firmware for information about missing firmware"
        assert _line(series, wiki, file=main_c).endswith(wiki)
        lines.append("firmware_class: " + wiki)
    else:
        lines.append(_line(series, "Direct firmware load for %s failed with error %d", name, -2, file=main_c))
    return lines


def _kfd_added(series: str, device: str) -> str:
    return _line(series, "added device %x:%x", "1002", device, device="kfd kfd: ")


def _paste(series: str, gpu: str, *lines: str) -> str:
    log = "".join(f"[    3.{i:03d}] {line}\n" for i, line in enumerate(lines))
    return f"$ uname -r\n{RELEASES[series]}\n$ lspci -nn\n{gpu}$ dmesg\n{log}"


def _findings(text: str) -> dict[str, tuple[Severity, str, tuple[str, ...]]]:
    return {f.code: (f.severity, f.message, f.evidence) for f in diagnose_text(text).findings}


def _no_error_about_firmware(found: dict[str, tuple[Severity, str, tuple[str, ...]]]) -> None:
    loud = {c: f for c, f in found.items() if f[0] in (Severity.ERROR, Severity.WARNING) and "firmware" in c}
    assert not loud and "firmware-missing" not in found, found


@pytest.mark.parametrize("series", ["5.10", "6.1"])
def test_a_missing_dmcub_on_5_10_and_6_1_is_optional_firmware(series: str) -> None:
    dmub = _line(series, "DMUB firmware loading failed: %d", -2, caller="dm_dmub_sw_init")
    assert dmub == "[drm:dm_dmub_sw_init [amdgpu]] *ERROR* DMUB firmware loading failed: -2"
    text = _paste(series, RENOIR, *_loader(series, "amdgpu/renoir_dmcub.bin"), dmub, _kfd_added(series, "1636"))
    found = _findings(text)
    _no_error_about_firmware(found)
    severity, message, evidence = found["firmware-optional-missing"]
    assert severity is Severity.INFO and "amdgpu/renoir_dmcub.bin" in message and f"{series} sources" in message
    assert any("DMUB firmware loading failed" in e for e in evidence)
    assert "kfd-ready" in found


@pytest.mark.parametrize("series", ["5.10", "6.1"])
def test_amdgpu_dm_s_own_dmub_line_alone_is_the_same_optional_firmware(series: str) -> None:
    # A paste grepped for "DMUB" (or "error") keeps amdgpu_dm's line without the loader's.
    dmub = _line(series, "DMUB firmware loading failed: %d", -2, caller="dm_dmub_sw_init")
    found = _findings(_paste(series, RENOIR, dmub, _kfd_added(series, "1636")))
    _no_error_about_firmware(found)
    severity, message, evidence = found["firmware-optional-missing"]
    assert severity is Severity.INFO and "DMCUB" in message and evidence == (f"[    3.000] {dmub}",)
    assert "kfd-ready" in found


@pytest.mark.parametrize("series", ["6.12", "7.2"])
def test_a_missing_dmcub_from_6_12_fails_the_gpu(series: str) -> None:
    # dm_init_microcode() returns the request's error to dm_early_init(): the early_init of the DM block fails.
    early = _line(series, "early_init of IP block <%s> failed %d", "dm", -19, caller="amdgpu_device_ip_early_init")
    fatal = _line(series, "Fatal error during GPU init")
    text = _paste(series, RENOIR, *_loader(series, "amdgpu/renoir_dmcub.bin"), early, fatal)
    found = _findings(text)
    severity, message, _evidence = found["firmware-missing"]
    assert severity is Severity.ERROR and "amdgpu/renoir_dmcub.bin" in message
    assert "firmware-optional-missing" not in found and "kfd-ready" not in found


@pytest.mark.parametrize("series", ["5.10", "6.1", "6.12", "7.2"])
def test_a_missing_dmcu_is_optional_firmware(series: str) -> None:
    # load_dmcu_fw() returns 0 on the missing file's errno: nothing of amdgpu_dm's own in the log.
    text = _paste(series, PICASSO, *_loader(series, "amdgpu/raven_dmcu.bin"), _kfd_added(series, "15d8"))
    found = _findings(text)
    _no_error_about_firmware(found)
    severity, message, _evidence = found["firmware-optional-missing"]
    assert severity is Severity.INFO and "amdgpu/raven_dmcu.bin" in message
    assert "kfd-ready" in found


@pytest.mark.parametrize(
    ("series", "fmt"),
    [
        ("5.10", 'amdgpu_dm: Can\'t load firmware "%s"'),
        ("6.1", 'amdgpu_dm: Can\'t load firmware "%s"'),
        ("6.1", 'amdgpu_dm: Can\'t validate firmware "%s"'),
        ("6.12", 'amdgpu_dm: Can\'t validate firmware "%s"'),
        ("7.2", 'amdgpu_dm: Can\'t validate firmware "%s"'),
    ],
)
def test_a_dmcu_amdgpu_dm_could_not_load_is_an_error(series: str, fmt: str) -> None:
    # Printed only when the request failed another way than the missing file (or the file did not
    # validate); load_dmcu_fw() returns that error and dm's sw_init fails the GPU.
    failed = _line(series, fmt, "amdgpu/raven_dmcu.bin", file="amdgpu_dm.c")
    sw_init = _line(series, "sw_init of IP block <%s> failed %d", "dm", -22, caller="amdgpu_device_ip_init")
    fatal = _line(series, "Fatal error during GPU init")
    found = _findings(_paste(series, PICASSO, failed, sw_init, fatal))
    severity, message, evidence = found["firmware-missing"]
    assert severity is Severity.ERROR and "amdgpu/raven_dmcu.bin" in message
    assert any("amdgpu_dm: Can't" in e for e in evidence)
    assert "firmware-optional-missing" not in found
