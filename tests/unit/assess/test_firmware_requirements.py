"""A failed firmware request is missing firmware only when the kernel's amdgpu requires the file (issue 34, item 1).

Which files a kernel series goes on without is read from its own request call sites (generated.py's
``firmware_optional``, tools/knowledge/requests.py): a first choice with a fallback (gfx_v8_0.c's
Polaris <chip>_pfp_2.bin), a request whose error is cleared (gfx_v9/v10's <chip>_mec2.bin), a request
marked AMDGPU_UCODE_OPTIONAL (7.2). The files and lines here are taken from that data and from the
real format strings, not typed from memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge import formats
from kfdguard.knowledge.generated import KERNELS
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Severity
from tests.pastes import paste_of

POLARIS10 = (
    "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere [Radeon RX "
    "470/480/570/570X/580/580X/590] [1002:67df] (rev c7)\n"
)
NAVI10 = (
    "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 10 [Radeon RX "
    "5600 OEM/5600 XT / 5700/5700 XT] [1002:731f] (rev c1)\n"
)
RELEASES = {"6.1": "6.1.0-27-amd64", "6.12": "6.12.38+deb13-amd64", "7.2": "7.2.13+deb14-amd64"}


def _load_failed(series: str, file: str) -> str:
    """The firmware loader's own line for a failed request, from the series' real format."""
    (fmt,) = [
        m for m in formats.kernel(series)["messages"] if m[3] == "Direct firmware load for %s failed with error %d"
    ]
    return "amdgpu 0000:03:00.0: " + str(fmt[3]).replace("%s", file).replace("%d", "-2")


def _paste(series: str, gpu: str, *lines: str) -> str:
    log = "".join(f"[    3.{i:03d}] {line}\n" for i, line in enumerate(lines))
    return f"$ uname -r\n{RELEASES[series]}\n$ lspci -nn\n{gpu}$ dmesg\n{log}"


def _firmware_findings(text: str) -> dict[str, tuple[Severity, str]]:
    return {f.code: (f.severity, f.message) for f in diagnose_text(text).findings if "firmware" in f.code}


@pytest.mark.parametrize("series", ["6.1", "6.12"])
def test_a_first_choice_the_sources_fall_back_from_is_no_missing_firmware(series: str) -> None:
    # gfx_v8_0.c asks for <polaris>_pfp_2.bin and, when that fails, for <polaris>_pfp.bin.
    assert KERNELS[series]["firmware_optional"]["amdgpu/polaris10_pfp_2.bin"] == (
        "fallback",
        "amdgpu/polaris10_pfp.bin",
    )
    found = _firmware_findings(_paste(series, POLARIS10, _load_failed(series, "amdgpu/polaris10_pfp_2.bin")))
    assert not [code for code, (severity, _m) in found.items() if severity is not Severity.INFO], found
    severity, message = found["firmware-fallback"]
    assert severity is Severity.INFO and "amdgpu/polaris10_pfp.bin" in message


@pytest.mark.parametrize("series", ["6.1", "6.12"])
def test_a_file_the_sources_require_is_still_missing_firmware(series: str) -> None:
    assert "amdgpu/polaris10_pfp.bin" not in KERNELS[series]["firmware_optional"]
    found = _firmware_findings(_paste(series, POLARIS10, _load_failed(series, "amdgpu/polaris10_pfp.bin")))
    severity, message = found["firmware-missing"]
    assert severity is Severity.ERROR and "amdgpu/polaris10_pfp.bin" in message


def test_a_file_whose_request_error_is_cleared_is_optional_firmware() -> None:
    # gfx_v10_0.c: "if (!err) ... else { err = 0; adev->gfx.mec2_fw = NULL; }".
    assert KERNELS["6.1"]["firmware_optional"]["amdgpu/navi10_mec2.bin"] == ("tolerated", "")
    found = _firmware_findings(_paste("6.1", NAVI10, _load_failed("6.1", "amdgpu/navi10_mec2.bin")))
    assert "firmware-missing" not in found
    severity, message = found["firmware-optional-missing"]
    assert severity is Severity.INFO and "amdgpu/navi10_mec2.bin" in message and "6.1 sources" in message


def test_an_optional_file_beside_a_failed_init_is_still_named() -> None:
    text = _paste(
        "6.1",
        NAVI10,
        _load_failed("6.1", "amdgpu/navi10_mec2.bin"),
        "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init",
    )
    found = _firmware_findings(text)
    assert "amdgpu/navi10_mec2.bin" in found["firmware-missing"][1]
    assert "firmware-optional-missing" not in found


def test_a_7_2_optional_request_that_finds_nothing_is_no_finding() -> None:
    # 7.2 asks for <chip>_pfp_2.bin with AMDGPU_UCODE_OPTIONAL: the loader stays quiet and amdgpu_ucode.c
    # says so at info level instead.
    assert KERNELS["7.2"]["firmware_optional"]["amdgpu/polaris10_pfp_2.bin"][0] == "fallback"
    (fmt,) = [
        m
        for m in formats.kernel("7.2")["messages"]
        if m[3].startswith("Optional firmware ") and m[4].endswith("amdgpu_ucode.c")
    ]
    line = "amdgpu 0000:03:00.0: " + fmt[2] + fmt[3].replace("%s", "amdgpu/polaris10_pfp_2.bin")
    found = _firmware_findings(_paste("7.2", POLARIS10, line))
    assert not [code for code, (severity, _m) in found.items() if severity is not Severity.INFO], found


def test_a_first_choice_with_a_fallback_on_a_machine_and_in_its_paste(
    fresh_machine: Callable[[str | MachineSpec], SimulatedSystem],
) -> None:

    spec = (
        MachineBuilder("polaris-fallback")
        .debian12()
        .with_gpu(0x67DF)
        .with_user("alice", groups=["render", "video"], session=True)
        .with_log(_load_failed("6.1", "amdgpu/polaris10_mec2_2.bin"))
    )
    system = fresh_machine(spec.build())
    verdict = assess(probe(system))
    assert "firmware-missing" not in verdict.codes()
    (live,) = verdict.by_code("firmware-fallback")
    assert live.severity is Severity.INFO and "amdgpu/polaris10_mec2.bin" in live.message
    paste = diagnose_text(paste_of(Path(system.root.path)))
    codes = {f.code for f in paste.findings}
    assert "firmware-fallback" in codes and "firmware-missing" not in codes
