"""What batch 11 of real reports showed the reading missed (issue 36): a kernel release under a form's label, and
the coherence that a program working as root shows KFD working on that kernel.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text


@pytest.mark.parametrize(
    ("line", "release"),
    [
        ("- Kernel : 4.15.0-29deepin-generic", "4.15.0-29deepin-generic"),  # ROCm#669's list
        ("Kernel version: 6.8.0-45-generic", "6.8.0-45-generic"),
        ("**Kernel**: 6.12.9", "6.12.9"),
        ("kernel: Linux 6.1.0-18-amd64", "6.1.0-18-amd64"),
    ],
)
def test_a_kernel_release_under_a_label_is_the_kernel(line: str, release: str) -> None:
    found = read_text(f"My setup\n{line}\nrocminfo fails\n").first("kernel-release")
    assert found is not None and found.value == release


@pytest.mark.parametrize(
    "line",
    [
        "Dec 06 10:00:00 box kernel: amdgpu 0000:03:00.0: 6.8 something",  # a journal line, not a label
        "Ollama version: 0.3.13",
        "kernel: the card hangs after 5 minutes",
    ],
)
def test_other_lines_are_no_kernel_label(line: str) -> None:
    found = read_text(f"{line}\n").first("kernel-release")
    assert found is None or found.source.what != "form"


def test_a_labelled_kernel_before_the_gpus_kfd() -> None:
    assert "kernel-too-old" in {
        f.code for f in diagnose_text("GPU: Radeon RX 580\nKernel: 4.4.0-109-generic\n").findings
    }


@pytest.mark.parametrize("told", ["the square example works with sudo.", "rocminfo only works as root."])
def test_a_program_that_works_as_root_shows_the_kernel_s_kfd_working(told: str) -> None:
    """ROCm#1104 (batch 10's 808): ROCm 1.7 on 4.4 with an RX 580, working with sudo: ROCm brought its own KFD,
    so the release, older than the in-tree KFD for gfx803, is not the cause; access is."""
    text = f"GPU: AMD Radeon RX 580\nKernel: 4.4.0-109-generic\nerror: 'hipErrorInvalidDevice'(1010) at square.cpp:60; {told}\n"
    codes = {f.code for f in diagnose_text(text).findings}
    assert "kernel-too-old" not in codes
    assert "user-not-in-group" in codes or "device-permissions" in codes
