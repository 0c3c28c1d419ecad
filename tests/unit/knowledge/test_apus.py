"""knowledge/apus.py: the iGPU a processor name implies, and the names that imply none (issue 36)."""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge import apus
from kfdguard.knowledge.asics import ASICS


@pytest.mark.parametrize(
    ("name", "gfx"),
    [
        ("AMD Ryzen AI Max+ 395 w/ Radeon 8060S", "gfx1151"),
        ("Ryzen AI MAX+ PRO 395", "gfx1151"),
        ("Ryzen AI Max 385", "gfx1151"),
        ("AMD Ryzen AI 9 HX 370 w/ Radeon 890M", "gfx1150"),
        ("Ryzen AI 9 365", "gfx1150"),
        ("AMD Ryzen AI 7 350 w/ Radeon 860M", "gfx1152"),
        ("Ryzen AI 5 PRO 340", "gfx1152"),
        ("ROG Ally with the Ryzen Z1 Extreme", "gfx1103"),
        ("Ryzen 7 PRO 8700GE", "gfx1103"),
        ("Ryzen 5 8600G", "gfx1103"),
        ("AMD Ryzen 9 7940HS w/ Radeon 780M Graphics", "gfx1103"),
        ("my AMD 7840U laptop", "gfx1103"),
        ("Ryzen 7 8845HS", "gfx1103"),
        ("Ryzen 5 7545U", "gfx1103"),
        ("Ryzen 7 6800U", "gfx1035"),
        ("Ryzen 9 6900HX", "gfx1035"),
        ("Ryzen 7 7735HS", "gfx1035"),
        ("Ryzen 5 7520U", "gfx1036"),
        ("Ryzen 7 5700G", "gfx90c"),
        ("Ryzen 7 PRO 4750U", "gfx90c"),
        ("Ryzen 5 5625U", "gfx90c"),
        ("Ryzen 7 7730U", "gfx90c"),
        ("Ryzen 5 2400G", "gfx902"),
        ("Ryzen 7 3700U", "gfx902"),
    ],
)
def test_an_apu_name_implies_its_igpu(name: str, gfx: str) -> None:
    assert [g for g, _, _ in apus.apu_targets(name.lower())] == [gfx]


@pytest.mark.parametrize(
    "name",
    [
        "AMD Ryzen 9 7950X 16-Core Processor",  # Raphael: a 2-CU display engine, left out
        "Ryzen 9 9950X3D",
        "Ryzen 9 7945HX",  # Dragon Range
        "Ryzen 5 5600X",  # no graphics
        "Ryzen 7 5700",  # Cezanne with its graphics fused off
        "Ryzen 5 8400F",
        "Ryzen AI 7 PRO 360",  # its die is not certain
        "Ryzen 3 3250U",  # Dali
        "AMD Radeon 6800 XT",
        "amd 6700m",
    ],
)
def test_a_name_without_a_known_compute_igpu_implies_nothing(name: str) -> None:
    assert apus.apu_targets(name.lower()) == []


def test_every_target_is_one_the_asic_table_knows() -> None:
    known = {a.gfx for a in ASICS}
    assert {row.gfx for row in apus.APU_FAMILIES} <= known


def test_a_processor_name_and_an_old_rocm_name_the_missing_code() -> None:
    """Issue 36: a GPU named only by its APU's processor beside a ROCm release older than the first one with
    code for it, and a crash. Before, nothing in the text was a known format."""
    result = diagnose_text("GPU: Ryzen AI Max+ 395, ROCm 6.2, pytorch segfaults\n")
    (finding,) = [f for f in result.findings if f.code == "userspace-target-unsupported"]
    assert "gfx1151" in finding.message and "ROCm 6.2" in finding.message
    assert any("Ryzen AI Max+ 395" in e for e in finding.evidence)


def test_a_processor_beside_a_named_card_is_not_taken_for_the_gpu() -> None:
    """The iGPU of a Ryzen 5 5600G is not judged when the text names the discrete card that computes."""
    result = diagnose_text("Ryzen 5 5600G with an RX 7900 XTX, ROCm 6.2, llama.cpp crashes\n")
    assert not [f for f in result.findings if "gfx90c" in f.message]
