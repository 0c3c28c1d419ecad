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


# --- root can, the user cannot: more wordings, and a runtime error as what failed ----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # a HIP sample's error, and the samples working with sudo
        "error: 'hipErrorInvalidDevice'(1010) at square.cpp:60\n"
        "I found the reason: both the square example and the vector_copy example work with sudo.\n",
        # HIP's no-device error name, root only
        "hipErrorNoDevice from my program.\nIt only runs if I use sudo.\n",
        # the HSA status of a failed hsa_init, then "works when run as root"
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES when the program starts.\nIt works when run as root though.\n",
        # rocminfo named, "only works when using sudo"
        "$ rocminfo\nhsa api call failure at line 900. Call returned 4104\nROCm only works when using sudo.\n",
        # "only sudo works"
        "Only sudo works for rocminfo and clinfo on this box.\n",
        # root can and the user cannot, in one sentence
        "rocminfo works with sudo but fails as my user.\n",
    ],
)
def test_root_only_told_with_the_runtime_failing_is_the_group(text: str) -> None:
    codes = _codes(text)
    assert "user-not-in-group" in codes
    assert not codes & {"userspace-target-unsupported", "device-node-missing", "asic-not-supported"}


@pytest.mark.parametrize(
    "text",
    [
        "sudo apt install rocm works fine as root\n",
        "The installer only works when using sudo.\n",
        "docker only works when using sudo, so I added myself to the docker group.\n",
        "hipErrorNoDevice from my program.\nRunning it as root does not work either.\n",
        "hipErrorNoDevice from my program, and it fails with sudo too.\n",
    ],
)
def test_near_misses_of_root_only(text: str) -> None:
    assert "user-not-in-group" not in _codes(text)


# --- a yes/no question about support is the person's doubt, not a statement ----------------------------------------


@pytest.mark.parametrize(
    "asked",
    [
        "Is my GPU model not supported by HIP?",
        "Is the RX 580 not supported?",
        "Are Polaris cards like my RX 580 not supported by ROCm?",
        "So is my gfx1036 GPU not supported?",
    ],
)
def test_a_yes_no_question_does_not_deny_support(asked: str) -> None:
    text = f"My GPU: AMD Radeon RX 580 (gfx803), and a gfx1036 iGPU.\nThe program fails.\n{asked}\n"
    assert "userspace-target-unsupported" not in _codes(text)


@pytest.mark.parametrize(
    "told",
    [
        "Why is my gfx1036 not supported by the libraries?",
        "Is the gfx1036 still not supported?",
        "The gfx1036 is not supported by rocBLAS.",
    ],
)
def test_support_denied_stays_read_beside_the_question_shape(told: str) -> None:
    assert "userspace-target-unsupported" in _codes(f"{told}\nrocBLAS and PyTorch fail on it.\n")


# --- a program that hides the GPUs itself ---------------------------------------------------------------------------

_TF_NO_DEVICE = (
    "2018-03-22 18:14:41.893382: E tensorflow/stream_executor/rocm/rocm_driver.cc:1098] could not retrieve ROCM "
    "device count: HIP_ERROR_NoDevice\n"
)


def test_tensorflows_device_count_line_is_a_runtime_without_a_gpu() -> None:
    result = diagnose_text(_TF_NO_DEVICE)
    assert any("why the runtime sees no GPU" in u for u in result.unknown)


@pytest.mark.parametrize(
    "told",
    [
        "The test explicitly disables all GPUs in the runtime.",
        "It seems the example actually tries to ignore the GPU.",
        "Turns out the script hides all GPUs itself.",
        "The notebook deliberately disables the GPU at the top.",
        "that sample is meant to ignore GPUs (it sets the visible devices to nothing)",
    ],
)
def test_a_program_that_hides_the_gpus_itself_is_the_visibility(told: str) -> None:
    for symptom in (_TF_NO_DEVICE, "RuntimeError: No HIP GPUs are available\n"):
        codes = _codes(f"{symptom}{told}\n")
        assert "env-visibility-hides-gpu" in codes
        assert not codes & {"user-not-in-group", "device-permissions", "device-node-missing", "kfd-no-gpu-node"}


@pytest.mark.parametrize(
    "told",
    [
        "I disabled the iGPU in the BIOS.",
        "ROCm ignores my GPU.",
        "The script runs but ignores the GPU and uses the CPU.",
        "The driver disables the GPU after a while.",
        "The test does not disable the GPU.",
    ],
)
def test_near_misses_of_a_program_hiding_the_gpus(told: str) -> None:
    assert "env-visibility-hides-gpu" not in _codes(f"{_TF_NO_DEVICE}{told}\n")


def test_a_program_hiding_the_gpus_needs_a_runtime_without_one() -> None:
    assert "env-visibility-hides-gpu" not in _codes("The test explicitly disables all GPUs in the runtime.\n")


# --- a Docker Engine release that passes devices as root:root -----------------------------------------------------

_IN_CONTAINER = (
    "docker run -it --device=/dev/kfd --device=/dev/dri/renderD128 rocm/rocm-terminal\n"
    "rocm-user@2888cb18b1a3:~$ rocminfo\n"
    "hsa api call failure at line 900, file: rocminfo.cc. Call returned 4104\n"
    "With sudo it works: sudo /opt/rocm/bin/rocminfo lists the GPU.\n"
)


@pytest.mark.parametrize(
    "version",
    [
        "Docker version 18.02.0-ce, build fc4de44",
        "Server:\n Engine:\n  Version:\t17.12.1-ce\n  API version:\t1.35",
        "This is on Docker CE 18.02.",
        "docker-ce 18.02.0~ce-0~ubuntu",
    ],
)
def test_a_docker_release_that_drops_the_devices_group_is_the_node(version: str) -> None:
    codes = _codes(f"{_IN_CONTAINER}{version}\n")
    assert "device-permissions" in codes
    assert not codes & {"user-not-in-group", "rootless-gid-unmapped", "device-node-missing", "host-without-kfd"}


@pytest.mark.parametrize(
    "version",
    ["Docker version 18.03.0-ce, build 0520e24", "Docker version 17.12.0-ce, build c97c6d6", "Docker 24.0.7"],
)
def test_other_docker_releases_keep_the_group(version: str) -> None:
    codes = _codes(f"{_IN_CONTAINER}{version}\n")
    assert "device-permissions" not in codes
    assert "user-not-in-group" in codes


def test_a_defective_docker_release_without_a_denial_is_nothing() -> None:
    text = "Docker version 18.02.0-ce, build fc4de44\n$ rocminfo\n  Name:                    gfx803\n"
    assert "device-permissions" not in _codes(text)


def test_engine_rows_cite_their_sources() -> None:
    from kfdguard.knowledge import engines

    for row in engines.DEVICE_GROUP_RESET:
        assert row.engine and row.versions and row.fixed_in and row.sources
        assert all(s.startswith("https://") for s in row.sources)
