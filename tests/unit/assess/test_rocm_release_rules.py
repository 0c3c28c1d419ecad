"""Support is a fact of a release: an override and a GPU are judged against the ROCm release a text shows
(issue 36). gfx1103 has rocBLAS code only from ROCm 7.1, gfx1101 from 5.5, gfx1100 from 5.4 (knowledge/rocm.py)."""

from __future__ import annotations

import pytest

from kfdguard.assess.rules import run
from kfdguard.assess.versions import rocm_versions_shown
from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text
from kfdguard.verdict import Finding, Severity


def findings(text: str) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {}
    for f in diagnose_text(text).findings:
        found.setdefault(f.code, []).append(f)
    return found


def errors(text: str) -> list[str]:
    return [f.code for f in diagnose_text(text).findings if f.severity is Severity.ERROR]


# --- the three reports of issue 36 -------------------------------------------------------------------------------


def test_the_documented_gfx1103_workaround_without_a_release_is_not_called_wrong() -> None:
    text = (
        "Ryzen 7 PRO 8700GE, Radeon 780M iGPU, 64 GB RAM.\n"
        "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
        "ollama run llama3.1:8b -> about 20 tok/s on the iGPU\n"
    )
    found = findings(text)
    assert "env-override-wrong" not in found
    assert not errors(text)
    # What decides it stays said to be unknown: the release.
    unknown = run(read_text(text)).unknown
    assert any("HSA_OVERRIDE_GFX_VERSION=11.0.0" in u and "ROCm 7.1" in u for u in unknown)


def test_the_gfx1103_override_with_a_torch_wheel_older_than_rocm_7_1_is_the_workaround() -> None:
    text = (
        "$ pip list | grep torch\n"
        "torch                2.5.1+rocm6.2\n"
        "Laptop with a Radeon 780M (gfx1103).\n"
        "export HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
        "python generate.py\n"
    )
    found = findings(text)
    assert "env-override-wrong" not in found
    assert "env-override-unneeded" not in found
    assert not any("unset HSA_OVERRIDE_GFX_VERSION" in f.remedy for fs in found.values() for f in fs)
    assert not errors(text)


@pytest.mark.parametrize(
    ("text", "gfx", "release", "first"),
    [
        ("I have an RX 7900 XTX and installed ROCm 5.3 (/opt/rocm-5.3.0).\n", "gfx1100", "5.3", "5.4"),
        ("RX 7800 XT here, ROCm 5.4.3 from the repo\n", "gfx1101", "5.4", "5.5"),
        ("Radeon RX 9070 XT, torch 2.4.1+rocm6.1\n", "gfx1201", "6.1", "6.3"),
    ],
)
def test_a_gpu_named_beside_a_release_older_than_its_first_gets_the_release_named(
    text: str, gfx: str, release: str, first: str
) -> None:
    found = findings(text + "python -c 'import torch; torch.ones(1).cuda()'\nSegmentation fault (core dumped)\n")
    told = found["userspace-target-unsupported"][0]
    assert f"ROCm {release}" in told.message
    assert gfx in told.message
    assert f"from ROCm {first}" in told.message
    assert f"ROCm {first} or later" in told.remedy


def test_gfx1100_beside_rocm_5_4_is_not_flagged_by_rocblas_which_carries_it_there() -> None:
    # rocBLAS's rocm-5.4.0 list has gfx1100 (and Tensile logic for navi31): the release itself is no cause.
    text = "I have an RX 7900 XTX and ROCm 5.4.\nSegmentation fault (core dumped)\n"
    assert "userspace-target-unsupported" not in findings(text)


def test_a_target_that_left_the_list_says_up_to_which_release() -> None:
    text = "RX 580 8GB on ROCm 6.0.2 (/opt/rocm-6.0.2), stable diffusion ends with Segmentation fault\n"
    told = findings(text)["userspace-target-unsupported"][0]
    assert "gfx803" in told.message and "up to ROCm 5.7" in told.message


# --- an override judged against the release shown ----------------------------------------------------------------


@pytest.mark.parametrize("release", ["ROCm 7.1.0", "torch 2.9.1+rocm7.1"])
def test_the_gfx1103_override_on_rocm_7_1_or_later_is_unneeded_not_an_error(release: str) -> None:
    text = f"Radeon 780M (gfx1103)\n{release}\nexport HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    found = findings(text)
    assert "env-override-wrong" not in found
    unneeded = found["env-override-unneeded"][0]
    assert unneeded.severity is Severity.WARNING
    assert "7.1" in unneeded.message and "unset HSA_OVERRIDE_GFX_VERSION" in unneeded.remedy


def test_an_override_on_a_target_every_release_of_its_generation_carries_stays_wrong() -> None:
    text = "RX 7900 XTX, ROCm 6.2, HSA_OVERRIDE_GFX_VERSION=11.0.1 set by the installer script\n"
    assert "env-override-wrong" in errors(text)


def test_releases_that_disagree_leave_the_override_unknown() -> None:
    text = "Radeon 780M (gfx1103), moved from ROCm 6.2 to ROCm 7.1\nexport HSA_OVERRIDE_GFX_VERSION=11.0.0\n"
    found = findings(text)
    assert "env-override-wrong" not in found and "env-override-unneeded" not in found


def test_another_generation_stays_wrong_whatever_the_release() -> None:
    text = "Radeon 780M (gfx1103), torch 2.5.1+rocm6.2\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
    assert "env-override-wrong" in errors(text)


def test_a_windows_hip_sdk_release_is_not_read_as_the_linux_release() -> None:
    text = "Windows 11, HIP SDK 6.1, ROCm 5.3 libraries\nRX 7900 XTX\nSegmentation fault\n"
    assert "userspace-target-unsupported" not in findings(text)


# --- where a text shows a release ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch 2.5.1+rocm6.2", [(6, 2)]),
        ("pip install torch --index-url https://example.invalid/whl/rocm6.1", [(6, 1)]),
        ("ls /opt/rocm-5.7.1/lib", [(5, 7)]),
        ("docker pull rocm/pytorch:rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0", [(6, 2)]),
        ("ROCM used to build PyTorch: 6.0.32830-d62f6a171", [(6, 0)]),
        ("ROCm version: 6.2.4", [(6, 2)]),
        ("upgraded ROCm 5.7 -> ROCm 6.0", [(5, 7), (6, 0)]),
        ("ROCm 6 is installed", []),
        ("No matching distribution (from versions: 2.0.1+rocm5.4.2, 2.1.0+rocm5.6)", []),
    ],
)
def test_the_releases_a_text_shows(text: str, expected: list[tuple[int, int]]) -> None:
    r = run(read_text(text + "\n"))
    assert [v for v, _ in rocm_versions_shown(r)] == expected
