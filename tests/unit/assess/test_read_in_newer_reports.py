"""Classes the untuned batches 31 and 32 missed, each beside near misses that must stay silent: an installer that
put in no GPU backend ("will run in CPU-only mode"), a program that looks for KFD under WSL, where only /dev/dxg
exists, a rocminfo block an issue form flattened onto one line, a GPU hang told in words, ollama's newer
"inference compute" line and ROCm 7.2 as a release the version rules know.

The texts are written from the wordings, with GPUs, versions and programs the corpus files do not use.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- an installer that put in no GPU backend ------------------------------------------------------------------------

_RADEON = "GPU: Radeon RX 7800 XT\n"


@pytest.mark.parametrize(
    "told",
    [
        ">>> The Ollama API is now available at 127.0.0.1:11434.\n"
        "WARNING: No NVIDIA/AMD GPU detected. Ollama will run in CPU-only mode.\n",
        "The script installs Ollama in **CPU-only mode** even though the card works with rocminfo.\n",
        "It finished with no GPU backend installed, so everything ran on the processor.\n",
    ],
)
def test_an_installer_that_put_in_no_gpu_backend_is_a_build_without_rocm(told: str) -> None:
    assert "userspace-no-rocm-build" in codes(_RADEON + told)


@pytest.mark.parametrize(
    "told",
    [
        "In CPU-only mode the benchmark took twice as long.\n",  # a mode chosen, not an install
        "I ran it in CPU-only mode to compare the numbers.\n",
        "The ROCm backend was installed and the model loads on the GPU.\n",
    ],
)
def test_a_cpu_only_mode_that_is_no_install_is_left_alone(told: str) -> None:
    assert "userspace-no-rocm-build" not in codes(_RADEON + told)


# --- a program that looks for KFD under WSL --------------------------------------------------------------------------

_WSL = "OS: Windows 11 with WSL2 (Ubuntu 24.04)\nGPU: Radeon RX 7800 XT\n"


def test_a_program_seeking_kfd_under_wsl_finds_no_gpu() -> None:
    text = _WSL + (
        "rocminfo works, but the server never uses the GPU.\n"
        "Its discovery walks the kfd topology, which WSL does not have: there only /dev/dxg exists.\n"
    )
    assert "host-without-kfd" in codes(text)


def test_kfd_and_dxg_named_where_the_runtime_lists_the_gpu_is_no_failure() -> None:
    text = _WSL + (
        "There is no /dev/kfd here, only /dev/dxg.\n"
        "*******\nAgent 2\n*******\n  Name:                    gfx1101\n  Device Type:             GPU\n"
    )
    assert "host-without-kfd" not in codes(text)


def test_kfd_and_dxg_named_on_a_linux_host_is_left_alone() -> None:
    text = "OS: Ubuntu 24.04\nGPU: Radeon RX 7800 XT\nThe loader tries the kfd device first and dxg second.\n"
    assert "host-without-kfd" not in codes(text)


# --- a rocminfo block flattened onto one line ------------------------------------------------------------------------


def test_a_rocminfo_isa_name_inside_a_flattened_line_is_a_listed_gpu() -> None:
    text = (
        "### GPU\n\n  Name:                    gfx942    Marketing Name:          AMD Instinct MI300X"
        "      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-       Name:\n"
    )
    assert "kfd-ready" in codes(text)


def test_an_isa_named_in_a_sentence_is_no_listing() -> None:
    text = "hip_fatbin: Missing CO for these ISAs - amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\n"
    assert "kfd-ready" not in codes(text)


# --- a GPU hang told in words ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "After an hour the GPU is left in a hung state and only a reboot brings it back.\n",
        "Then the GPU becomes unresponsive (100% busy, nothing runs).\n",
        "Recovering needs sudo rocm-smi -d 0 --gpureset every time.\n",
    ],
)
def test_a_gpu_hang_told_in_words_is_a_gpu_hang(told: str) -> None:
    assert "gpu-hang" in codes("GPU: Radeon RX 7800 XT, kernel 6.17\n" + told)


@pytest.mark.parametrize(
    "told",
    [
        "The GPU never hung again after the update.\n",  # negated
        "Each GPU hangs for about 10 seconds at boot, then it carries on.\n",  # a stall that passes
        "Has the GPU hung for anyone else?\n",  # a question
        "The desktop froze and the program hangs.\n",  # not the GPU
    ],
)
def test_a_hang_that_is_not_the_gpus_is_left_alone(told: str) -> None:
    assert "gpu-hang" not in codes("GPU: Radeon RX 7800 XT, kernel 6.17\n" + told)


# --- ollama's "inference compute" line -------------------------------------------------------------------------------


def test_ollamas_inference_compute_line_of_a_rocm_device_is_a_gpu_the_runtime_enumerated() -> None:
    line = (
        'time=2026-03-01T10:00:00.000Z level=INFO source=types.go:42 msg="inference compute" id=0 library=ROCm '
        'compute=gfx1101 name=ROCm0 description="AMD Radeon RX 7800 XT" libdirs=ollama,rocm driver=70226.0 '
        'pci_id=0000:0b:00.0 type=discrete total="16.0 GiB" available="15.6 GiB"\n'
    )
    assert "kfd-ready" in codes(line)


def test_ollamas_cpu_inference_compute_line_is_no_gpu() -> None:
    line = (
        'time=2026-03-01T10:00:00.000Z level=INFO source=types.go:60 msg="inference compute" id=cpu library=cpu '
        'compute="" name=cpu description=cpu libdirs=ollama driver="" pci_id="" type="" total="31.1 GiB" '
        'available="29.0 GiB"\n'
    )
    assert "kfd-ready" not in codes(line)


# --- ROCm 7.2 --------------------------------------------------------------------------------------------------------


def test_an_override_on_a_gpu_rocm_7_2_carries_is_unneeded() -> None:
    text = (
        "GPU: Radeon 780M (gfx1103)\nROCm 7.2.1 from the distribution packages\n"
        "I export HSA_OVERRIDE_GFX_VERSION=11.0.0 before starting it\n"
    )
    assert "env-override-unneeded" in codes(text)
