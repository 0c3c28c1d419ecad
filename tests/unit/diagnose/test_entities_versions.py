"""Issue 36: diagnosis from entities (variables as programs set them, GPU targets, versions, dates) and versioned
knowledge, not from one report's wording.

Each text is written for the class of failure, not copied from a report: the batch-6 reports of
tests/data/real-reports (401-416) are the cases that showed each class missing.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Finding


def _codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def _finding(text: str, code: str) -> Finding:
    return next(f for f in diagnose_text(text).findings if f.code == code)


# --- variables set by a program's own code ------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        'os.environ["HSA_OVERRIDE_GFX_VERSION"] = "10.3.0"',
        "os.environ['HSA_OVERRIDE_GFX_VERSION']='10.3.0'",
        'os.environ.setdefault("HSA_OVERRIDE_GFX_VERSION", "10.3.0")',
        "export HSA_OVERRIDE_GFX_VERSION='10.3.0'",
    ],
)
def test_an_override_set_in_code_or_quoted_is_read(setting: str) -> None:
    text = f"The launcher does this before it imports torch:\n    {setting}\nMy card is gfx1201, an RX 9070 XT.\n"
    assert "env-override-wrong" in _codes(text)


# --- GPU-selecting variables: HIP reads CUDA_VISIBLE_DEVICES, and an invalid first index leaves no GPU ----------


def test_cuda_visible_devices_minus_one_hides_the_amd_gpu_too() -> None:
    text = (
        "To keep the GeForce out of it I start the server as\n"
        "    CUDA_VISIBLE_DEVICES=-1 ./server\n"
        "and now the Radeon 890M is gone as well, only the CPU is used.\n"
    )
    found = _finding(text, "env-visibility-hides-gpu")
    assert "CUDA_VISIBLE_DEVICES=-1" in " ".join(found.evidence)


@pytest.mark.parametrize(
    "settings",
    [
        "HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=-1 ./server",  # HIP's own variable wins over CUDA's
        "CUDA_VISIBLE_DEVICES=0 ./server",
        "ROCR_VISIBLE_DEVICES=0,1\nHIP_VISIBLE_DEVICES=1",  # index 1 of the two ROCr leaves
    ],
)
def test_visibility_that_leaves_a_gpu_is_not_a_finding(settings: str) -> None:
    text = f"Two RX 9070 XT in the box.\n{settings}\n"
    assert "env-visibility-hides-gpu" not in _codes(text)


def test_rocr_then_hip_indexing_past_it_hides_every_gpu_without_a_runtime_message() -> None:
    text = (
        "Selecting the second card sets all of these:\n\n"
        "CUDA_VISIBLE_DEVICES=1\n"
        "HIP_VISIBLE_DEVICES=1\n"
        "ROCR_VISIBLE_DEVICES=1\n\n"
        "and then the trainer says torch.cuda.is_available() is False. GPUs: 2 x Radeon RX 9070 XT.\n"
    )
    assert "env-visibility-hides-gpu" in _codes(text)


def test_a_program_setting_visibility_in_code_is_read() -> None:
    text = 'os.environ["ROCR_VISIBLE_DEVICES"] = "1"\nos.environ["HIP_VISIBLE_DEVICES"] = "1"\n'
    assert "env-visibility-hides-gpu" in _codes(text)


# --- what a library's file list names is what it carries, not the GPU -------------------------------------------

ROCBLAS_NO_LIBRARY = """\
rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1035
 List of available TensileLibrary Files :
"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat"
"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat"
"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx942.dat"
Setting HSA_OVERRIDE_GFX_VERSION=10.3.0 did not help either.
"""


def test_a_library_file_list_does_not_name_a_gpu() -> None:
    codes = _codes(ROCBLAS_NO_LIBRARY)
    assert "userspace-target-unsupported" in codes
    assert "env-override-wrong" not in codes  # gfx1100 is a file of rocBLAS, not a GPU of the machine


# --- a kernel version only where the text says it is one -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "### Ollama version\n\n0.3.13-1\n\n### GPU\n\nRX 6750 XT\n",
        "I installed the ROCm 6.2 kernel driver for my RX 9070 XT and rocminfo lists no GPU.\n",
    ],
)
def test_another_program_s_version_is_not_a_kernel(text: str) -> None:
    assert "kernel-too-old" not in _codes(text)


def test_a_bare_kernel_release_line_is_still_read() -> None:
    text = "$ uname -r\n5.4.0-42-generic\nRX 9070 XT\n"
    assert "kernel-too-old" in _codes(text)


# --- an override told as the fix, or its removal told as the fix ------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "The fix is one environment variable: export HSA_OVERRIDE_GFX_VERSION=11.0.0",
        "The solution was HSA_OVERRIDE_GFX_VERSION=11.0.0 in the service's environment.",
    ],
)
def test_an_override_told_as_the_fix_shows_the_build_lacks_the_target(told: str) -> None:
    text = f"Ollama ignores the Radeon 780M and runs on the CPU.\n{told}\n\nWithout it the GPU sits idle.\n"
    codes = _codes(text)
    assert "userspace-target-unsupported" in codes
    assert "env-override-wrong" not in codes


@pytest.mark.parametrize(
    "told",
    [
        "removing HSA_OVERRIDE_GFX_VERSION from the system environment variables fixed it",
        "2. remove any HSA_OVERRIDE_GFX_VERSION set in your environment (old tricks)\n3. update the driver\n\n"
        "thanks!\n\nreply: step 2 was the solution",
        "I unset HSA_OVERRIDE_GFX_VERSION and now it works.",
    ],
)
def test_an_override_whose_removal_is_told_as_the_fix_was_wrong(told: str) -> None:
    text = f"Newer builds stopped using my RX 6750 XT.\n{told}\n"
    codes = _codes(text)
    assert "env-override-wrong" in codes
    assert "userspace-target-unsupported" not in codes


def test_an_override_removal_that_did_not_help_is_not_a_cause() -> None:
    text = "My RX 6750 XT is not used.\nI removed HSA_OVERRIDE_GFX_VERSION but it still doesn't work.\n"
    assert "env-override-wrong" not in _codes(text)


# --- a date bounds the release: what ROCm could have been in use then ------------------------------------------

UNSUPPORTED_780M = """\
user · description · {date}
rocBLAS lacks Radeon 780M support; the Radeon 780M is not officially supported.
{extra}"""


def test_a_text_dated_before_the_first_release_with_the_target_is_judged_by_it() -> None:
    found = _finding(UNSUPPORTED_780M.format(date="2025-01-08", extra=""), "userspace-target-unsupported")
    assert "2025-01-08" in found.message and "7.1" in found.message


def test_a_release_shown_that_carries_the_target_overrules_the_claim() -> None:
    text = UNSUPPORTED_780M.format(date="2026-03-01", extra="ROCm version: 7.1.1\n")
    assert "userspace-target-unsupported" not in _codes(text)


def test_without_a_release_or_a_date_the_finding_states_its_condition() -> None:
    text = UNSUPPORTED_780M.format(date="today", extra="")
    found = _finding(text, "userspace-target-unsupported")
    assert "before ROCm 7.1" in found.message


def test_a_symptom_without_a_release_is_no_claim_of_support() -> None:
    """'rocminfo does not see my GPU' beside a 780M's lspci line: many causes, none of them shown (found by
    tests/robustness/test_fuzz_diagnose.py's chatter property). Only a told "not supported" carries the
    conditional finding; a dated symptom still may (the date decides)."""
    lspci = (
        "c4:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Device [1002:15bf] (rev c1)"
    )
    assert "userspace-target-unsupported" not in _codes(f"{lspci}\nHi, rocminfo does not see my GPU.\n")
    dated = f"user · description · 2025-01-08\n{lspci}\nOllama doesn't use my GPU.\n"
    assert "2025-01-08" in _finding(dated, "userspace-target-unsupported").message


def test_a_dated_override_workaround_before_the_release_is_not_wrong() -> None:
    text = UNSUPPORTED_780M.format(date="2025-01-08", extra="Some set HSA_OVERRIDE_GFX_VERSION=11.0.0 for it.\n")
    codes = _codes(text)
    assert "env-override-wrong" not in codes and "userspace-target-unsupported" in codes


# --- a target rocBLAS carried, then dropped (gfx803: 3.0 to 5.7 in the table, none from 6.0) -----------------

UNSUPPORTED_RX580 = "My RX 580 is not supported, PyTorch says so.\n{extra}"


def test_a_dropped_target_on_a_release_before_the_table_is_not_judged() -> None:
    """Batch 9 (ROCm#1113): ROCm 3.3 with an RX 570, years before rocBLAS dropped gfx803. The table now starts at
    3.0 and 3.3 carries gfx803; a release it does not know (3.2: no rocBLAS tag) is still unknown, not "no code"."""
    assert "userspace-target-unsupported" not in _codes(UNSUPPORTED_RX580.format(extra="ROCm : 3.3\n"))
    assert "userspace-target-unsupported" not in _codes(UNSUPPORTED_RX580.format(extra="ROCm : 3.2\n"))


def test_a_dropped_target_on_a_release_of_the_table_that_carries_it_is_not_judged() -> None:
    assert "userspace-target-unsupported" not in _codes(UNSUPPORTED_RX580.format(extra="ROCm 5.4.3\n"))


def test_a_dropped_target_on_a_release_after_the_drop_is_judged_by_it() -> None:
    found = _finding(UNSUPPORTED_RX580.format(extra="ROCm 6.2\n"), "userspace-target-unsupported")
    assert "6.2" in found.message


def test_a_dropped_target_without_a_release_states_when_it_was_dropped() -> None:
    found = _finding(UNSUPPORTED_RX580.format(extra=""), "userspace-target-unsupported")
    assert "from ROCm 6.0 on" in found.message and "5.7" in found.message


# --- releases before 5.0 (ROCm 3.0 to 4.5, read at ROCm/rocBLAS's rocm-3.x and rocm-4.x tags) ------------------

UNSUPPORTED_NAVI10 = "My RX 5600 XT is not supported, rocBLAS says so.\n{extra}"


def test_a_release_before_the_first_gfx10_list_is_judged_by_it() -> None:
    """ROCm 3.10's rocBLAS lists gfx803/gfx900/gfx906/gfx908 only; gfx1010 first appears at rocm-4.3.0."""
    found = _finding(UNSUPPORTED_NAVI10.format(extra="ROCm 3.10\n"), "userspace-target-unsupported")
    assert "3.10" in found.message and "4.3" in found.message


def test_a_release_with_the_first_gfx10_list_is_not_judged() -> None:
    assert "userspace-target-unsupported" not in _codes(UNSUPPORTED_NAVI10.format(extra="ROCm 4.3.1\n"))


def test_an_old_release_that_still_carries_a_dropped_target_is_not_judged() -> None:
    """ROCm 3.3's rocBLAS lists gfx803 (its Tensile_ARCHITECTURE "all"): an RX 570 there has its code."""
    text = "My RX 570 is not supported, PyTorch says so.\nROCm : 3.3\n"
    assert "userspace-target-unsupported" not in _codes(text)
