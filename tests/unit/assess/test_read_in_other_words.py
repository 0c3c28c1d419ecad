"""Entities and tellings the earlier rounds' rules missed in batch 16's staged threads, written as classes: a
Radeon model number under a GPU label without "RX" ("GPU: 6750 XT", an issue form's "### GPU" heading over
"7800 XT"), and an override told as the fix in other words ("fixing this issue", "had success with", Chinese
"解决了"), each beside the near misses that must stay silent.

The texts are written from the wordings, with GPUs, versions and programs the corpus files do not use.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text


def targets(text: str) -> set[str]:
    return {gfx for gfx, _ in read_text(text).prose_gfx}


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- a model number under a GPU label ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gfx"),
    [
        ("OS: Arch Linux\nGPU: 6750 XT\nROCm: 5.6\n", "gfx1031"),
        ("GPU: 7800XT (16 GB)\n", "gfx1101"),
        ("Graphics card : 6600\n", "gfx1032"),
        ("### GPU\n\n7900 XTX\n\n### ROCm Version\n\n6.2.4\n", "gfx1100"),
        ("My gpu is a 5700 XT and it segfaults\n", "gfx1010"),
        ("video card: 7600 xt\n", "gfx1102"),
    ],
)
def test_a_model_number_the_text_names_as_its_gpu(text: str, gfx: str) -> None:
    assert gfx in targets(text)


@pytest.mark.parametrize(
    "text",
    [
        "Memory: 6750 MB\n",  # a size, no GPU label
        "GPU: 6750 MHz core clock\n",  # a clock under a GPU label
        "Ryzen 7 5700X CPU, 7000 rpm fan\n",  # a processor and a fan, no GPU label
        "GPU memory used: 6800 MiB\n",  # a quantity
        "GPU: NVIDIA RTX 6000 Ada\n",  # another vendor's number
        "GPU: 2x 6800 cores\n",  # a count
    ],
)
def test_a_number_that_is_not_a_radeon_model_is_left_alone(text: str) -> None:
    assert targets(text) == set()


# --- an override told as the fix in other words --------------------------------------------------------------------

_CRASH = (
    "GPU: 6700 XT\nRunning stable diffusion with torch 2.0.1+rocm5.4.2 crashes:\nSegmentation fault (core dumped)\n"
)


@pytest.mark.parametrize(
    "told",
    [
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0 is what finally fixed this issue for me.\n",
        "Can someone explain why HSA_OVERRIDE_GFX_VERSION=10.3.0 is fixing the crash?\n",
        "I had success with HSA_OVERRIDE_GFX_VERSION=10.3.0 on the same card.\n",
        "我用 export HSA_OVERRIDE_GFX_VERSION=10.3.0 解决了这个问题\n",
    ],
)
def test_an_override_told_as_the_fix_says_the_build_lacks_the_target(told: str) -> None:
    found = codes(_CRASH + told)
    assert "userspace-target-unsupported" in found
    assert "env-override-wrong" not in found


@pytest.mark.parametrize(
    "told",
    [
        "HSA_OVERRIDE_GFX_VERSION=10.3.0 didn't fix the issue for me.\n",
        "I had no success with HSA_OVERRIDE_GFX_VERSION=10.3.0 either.\n",
        "HSA_OVERRIDE_GFX_VERSION=10.3.0 没有解决这个问题\n",
    ],
)
def test_an_override_told_not_to_help_is_no_fix(told: str) -> None:
    text = "GPU: 6700 XT\nSegmentation fault (core dumped)\n" + told
    assert "userspace-target-unsupported" not in codes(text)


# --- a GPU told unsupported under WSL, beside the WSL runtime's failure ---------------------------------------------

_WSL_FAILURE = (
    "Environment: WSL 2, Ubuntu 24.04\n"
    "GPU: Radeon RX 7600\n"
    "$ rocminfo\n"
    "WSL environment detected.\n"
    "hsa api call failure at: /src/rocminfo/rocminfo.cc:1306\n"
    "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
)


@pytest.mark.parametrize(
    "answer",
    [
        "Answer: the RX 7600 is not supported under WSL yet, only the cards on the WSL matrix.\n",
        "Sorry, your 7600 card isn't supported on WSL at this time.\n",
    ],
)
def test_a_gpu_told_unsupported_under_wsl_is_the_cause(answer: str) -> None:
    found = {f.code: f for f in diagnose_text(_WSL_FAILURE + answer).findings}
    assert "userspace-target-unsupported" in found
    assert found["userspace-target-unsupported"].severity.name == "ERROR"


@pytest.mark.parametrize(
    "answer",
    [
        "ROCm 7.1 is not supported on WSL; install 6.4.2 with the matching Adrenalin driver.\n",  # the release
        "Is the RX 7600 not supported on WSL?\n",  # a question
    ],
)
def test_a_release_told_unsupported_or_a_question_is_not_the_gpus_support(answer: str) -> None:
    found = {f.code for f in diagnose_text(_WSL_FAILURE + answer).findings}
    assert "userspace-target-unsupported" not in found
    assert "host-without-kfd" in found
