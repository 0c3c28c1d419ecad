"""Issue 36, batch 10: the kernel handing a Southern Islands GPU to radeon, root-only access told in more words and
behind a runtime error, a yes/no question about support, a program that hides the GPUs itself, and a Docker Engine
release that drops the group of the devices it passes.

Each text is written for the class of failure, not copied from a report: the batch-10 reports (801-812, in
tests/data/real-reports) are the cases that showed each class missing.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Finding


def _codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def _finding(text: str, code: str) -> Finding:
    return next(f for f in diagnose_text(text).findings if f.code == code)


# --- amdgpu leaves a Southern Islands chip to radeon: KFD never supported SI ---------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "[    1.204511] amdgpu 0000:03:00.0: SI support provided by radeon.",
        "Mar 02 09:12:44 box kernel: amdgpu 0000:01:00.0: SI support provided by radeon.",
        "amdgpu 0000:02:00.0: SI support provided by radeon.",
        "<6>[    0.912345] amdgpu 0000:0a:00.0: SI support provided by radeon.",
    ],
)
def test_si_left_to_radeon_is_a_gpu_kfd_never_supported(line: str) -> None:
    text = (
        "rocminfo fails, and dmesg | grep amdgpu shows:\n"
        "[    1.204000] [drm] amdgpu kernel modesetting enabled.\n"
        f"{line}\n"
        "amdgpu 0000:03:00.0: Use radeon.si_support=0 amdgpu.si_support=1 to override.\n"
    )
    found = _finding(text, "asic-not-supported")
    assert "Southern Islands" in found.message or "SI" in found.message
    assert not _codes(text) & {"module-not-loaded", "kfd-init-failed", "no-amd-gpu"}


def test_cik_left_to_radeon_is_not_called_unsupported() -> None:
    # Kaveri and Hawaii are CIK chips KFD drives once amdgpu takes them (cik_support=1): not "never supported".
    text = (
        "[    1.1] [drm] amdgpu kernel modesetting enabled.\n"
        "[    1.2] amdgpu 0000:01:00.0: CIK support provided by radeon.\n"
        "[    1.2] amdgpu 0000:01:00.0: Use radeon.cik_support=0 amdgpu.cik_support=1 to override.\n"
    )
    assert "asic-not-supported" not in _codes(text)


def test_the_override_advice_alone_names_no_chip() -> None:
    text = "Someone told me to add radeon.si_support=0 amdgpu.si_support=1 to the kernel command line.\n"
    assert "asic-not-supported" not in _codes(text)


@pytest.mark.parametrize("named", ["HD Radeon 8790M", "HD Radeon 7970", "an ATI HD Radeon 7850"])
def test_a_retail_name_with_hd_before_radeon_is_read(named: str) -> None:
    text = f"Fresh Ubuntu on a laptop with {named}. rocminfo returns an error.\n"
    assert "asic-not-supported" in _codes(text)


@pytest.mark.parametrize(
    "named",
    ["HD Radeon Graphics", "AMD Radeon 780M", "HD audio, Radeon 8060S", "an HD Radeon 9070 XT"],
)
def test_near_misses_of_an_hd_radeon_name(named: str) -> None:
    assert "asic-not-supported" not in _codes(f"My machine has {named}. rocminfo returns an error.\n")
