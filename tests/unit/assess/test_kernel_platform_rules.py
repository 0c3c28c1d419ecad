"""Rules written for the kernel-tracker, APU and HPC reports (corpus files 250-262): the SMU's own line for a
failed start, ROCr's refusal of a GPU on a KFD older than it needs, and KFD lines quoted in prose.

Every text is written from the format string in the source (amdgpu_smu.c, ROCr's amd_topology.cpp,
kfd_device.c), with GPUs, slots and wordings the corpus files do not use, beside the near misses each rule
must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- the SMU failing to start: "Failed to setup smc hw!" without the IP block line ------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # resume after suspend on a Navi 21, as journalctl -k prints it
        "Mar 03 08:12:40 box kernel: amdgpu 0000:0b:00.0: amdgpu: SMU is resuming...\n"
        "Mar 03 08:12:41 box kernel: amdgpu 0000:0b:00.0: amdgpu: RunDcBtc failed!\n"
        "Mar 03 08:12:41 box kernel: amdgpu 0000:0b:00.0: amdgpu: Failed to setup smc hw!\n",
        # boot of a Renoir APU, grepped for "smc"
        "$ sudo dmesg | grep -i smc\n"
        "[    5.901222] amdgpu 0000:05:00.0: amdgpu: Failed to retrieve supported dpm features!\n"
        "[    5.901230] amdgpu 0000:05:00.0: amdgpu: Failed to setup smc hw!\n",
    ],
)
def test_the_smu_failing_to_start_is_an_init_failure(log: str) -> None:
    found = codes(log)
    assert "gpu-init-failed" in found
    assert "firmware-missing" not in found


def test_an_smu_timeout_at_run_time_is_not_an_init_failure() -> None:
    # smu_cmn.c prints "No response" for any message; here GFXOFF control during work, not the SMU's start.
    log = (
        "[ 8123.400101] amdgpu 0000:0c:00.0: amdgpu: SMU: No response msg_reg: 12 resp_reg: 0\n"
        "[ 8123.400140] amdgpu 0000:0c:00.0: amdgpu: Failed to disable gfxoff!\n"
    )
    assert "gpu-init-failed" not in codes(log)


# --- ROCr disabling a GPU on a KFD older than it needs ------------------------------------------------------------


MI50_REFUSED = (
    "$ /opt/rocm-4.2.0/bin/rocminfo\n"
    "ROCk module is loaded\n"
    "HSA Error:  Incompatible kernel and userspace, Vega 20 [Radeon Instinct MI50 32GB] disabled. Upgrade amdgpu.\n"
    "HSA Error:  Incompatible kernel and userspace, Vega 20 [Radeon Instinct MI50 32GB] disabled. Upgrade amdgpu.\n"
    "=====================\nHSA System Attributes\n=====================\nRuntime Version:         1.1\n\n"
    "==========\nHSA Agents\n==========\n*******\nAgent 1\n*******\n"
    "  Name:                    AMD EPYC 7302 16-Core Processor\n"
    "  Device Type:             CPU\n"
    "*** Done ***\n"
)


def test_rocr_refusing_the_gpu_blames_the_kernels_kfd() -> None:
    found = codes(MI50_REFUSED)
    assert "kernel-too-old" in found
    # KFD has the GPU nodes; ROCr dropped them, so "no GPU node" would send the reader to the wrong layer.
    assert "kfd-no-gpu-node" not in found
    assert not found & {"userspace-target-unsupported", "asic-not-supported", "user-not-in-group"}


def test_the_message_quoted_without_its_prefix_is_read_too() -> None:
    # a forum post quoting the runtime's words in prose, the period before "Upgrade" without a space
    text = "after updating ROCm every card says Incompatible kernel and userspace, AMD Radeon Pro VII disabled.Upgrade amdgpu"
    assert "kernel-too-old" in codes(text)


def test_rocminfo_without_gpu_agents_and_without_the_message_is_still_no_gpu_node() -> None:
    text = MI50_REFUSED.replace(
        "HSA Error:  Incompatible kernel and userspace, Vega 20 [Radeon Instinct MI50 32GB] disabled. Upgrade amdgpu.\n",
        "",
    )
    found = codes(text)
    assert "kernel-too-old" not in found
    assert "kfd-no-gpu-node" in found


# --- KFD's "added device" quoted in a sentence ----------------------------------------------------------------


def test_kfd_added_quoted_in_a_list_counts_as_ready() -> None:
    text = (
        "The driver side looks fine on this Azure node:\n"
        "* `kfd kfd: amdgpu: added device 1002:740f` shows up for all four MI210s\n"
        "* but the app still prints hipErrorNoDevice\n"
    )
    assert "kfd-ready" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "I never get `kfd kfd: added device 1002:73bf` in dmesg, only the amdgpu lines",
        "there is no 'kfd kfd: amdgpu: added device 1002:744c' line at all",
        # a device of another vendor is not an AMD GPU KFD added
        "weird: `kfd kfd: added device 10de:2204` after the update",
    ],
)
def test_kfd_added_said_to_be_absent_is_not_ready(text: str) -> None:
    assert "kfd-ready" not in codes(text)


# --- a container without the render nodes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Inside the podman container /dev/kfd is there but renderD128 was not passed, so rocminfo shows only the CPU.",
        "singularity exec --contain --rocm image.sif rocminfo fails; the container has /dev/dri/card1 but no "
        "/dev/dri/renderD129.",
        "docker run --device=/dev/kfd --device=/dev/dri/card0 ... : the render nodes are missing in the container",
    ],
)
def test_render_nodes_left_out_of_a_container(text: str) -> None:
    found = codes(text)
    assert "device-node-missing" in found
    assert "user-not-in-group" not in found


@pytest.mark.parametrize(
    "text",
    [
        # a host, no container: a missing render node there is another question (amdgpu, udev)
        "On my desktop /dev/dri/renderD128 is missing after the update and rocminfo fails.",
        # the render nodes named as present in a container
        "In the container ls -l /dev/dri shows renderD128 crw-rw---- root render, and /dev/kfd is there too.",
    ],
)
def test_render_nodes_not_said_to_be_left_out_of_a_container(text: str) -> None:
    assert "device-node-missing" not in codes(text)


# --- ROCm 7 under WSL: rocminfo's and librocdxg's own words for a runtime that found no GPU ----------------------


@pytest.mark.parametrize(
    "paste",
    [
        "$ rocminfo\nWSL environment detected.\nhsa_init Failed, possibly no supported GPU devices\n",
        # librocdxg's topology line first, as a Strix Point laptop prints it
        "$ rocminfo\nWSL environment detected.\npid:4211 tid:0x7f00aa11b100 [topology_sysfs_get_system_props] "
        "No WDDM adapters found.\nhsa_init Failed, possibly no supported GPU devices\n",
    ],
)
def test_rocm7_under_wsl_finding_no_gpu_is_the_wsl_path(paste: str) -> None:
    found = diagnose_text(paste).findings
    wsl = [f for f in found if f.code == "host-without-kfd"]
    assert wsl, [f.code for f in found]
    assert "HSA_ENABLE_DXG_DETECTION" in wsl[0].remedy
    assert not {f.code for f in found} & {"device-node-missing", "user-not-in-group", "module-not-loaded"}


def test_hsa_init_failed_on_a_linux_host_is_not_blamed_on_wsl() -> None:
    # the same rocminfo words on bare metal: a symptom, whose cause the other lines give (here no KFD GPU node)
    paste = (
        "$ uname -r\n6.11.0-29-generic\n$ rocminfo\nROCk module is loaded\n"
        "hsa_init Failed, possibly no supported GPU devices\n"
    )
    assert "host-without-kfd" not in codes(paste)


# --- a GPU said to be missing from a support list under WSL -------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Turns out the RX 6800 (gfx1030) isn't on the WSL compatibility matrix for ROCm 6.4, so WSL2 can't use it.",
        "my 7600 XT has not been listed in AMD's WSL support table yet; rocminfo under WSL2 hangs",
    ],
)
def test_a_gpu_not_on_the_wsl_list_is_unsupported_there(told: str) -> None:
    assert "userspace-target-unsupported" in codes(told)


def test_the_list_named_without_a_negation_is_not_a_finding() -> None:
    told = "The RX 7900 XTX is on the WSL compatibility list, and rocminfo under WSL2 shows it as gfx1100."
    assert "userspace-target-unsupported" not in codes(told)


# --- server, workstation and cloud GPUs named in prose --------------------------------------------------------


@pytest.mark.parametrize(
    "named",
    [
        "GPU: AMD Radeon Pro V620 MxGPU",
        "VM size Standard_NG8ads_V620_v1 on Azure",
        "an Azure Standard NV8as_v4 machine (a quarter of an MI25)",
        "EC2 g4ad.4xlarge (Radeon Pro V520)",
        "a workstation with a Radeon PRO W7800",
    ],
)
def test_a_server_or_cloud_gpu_in_prose_counts_as_an_amd_gpu(named: str) -> None:
    # rocminfo's "NOT loaded" is blamed on amdgpu only where the text shows an AMD GPU (else: maybe there is none)
    text = f"{named}\n$ rocminfo\nROCk module is NOT loaded, possibly no GPU devices\n"
    assert "module-not-loaded" in codes(text)


def test_an_nvidia_cloud_size_is_not_an_amd_gpu() -> None:
    text = "Azure Standard_NC24ads_A100_v4\n$ rocminfo\nROCk module is NOT loaded, possibly no GPU devices\n"
    assert "module-not-loaded" not in codes(text)


# --- rccl-tests' device list --------------------------------------------------------------------------------------


def test_rccl_tests_listing_amd_gpus_shows_them_ready() -> None:
    log = (
        "$ mpirun -np 2 ./build/all_reduce_perf -b 8 -e 64M -f 2 -g 1\n"
        "# Using devices\n"
        "#  Rank  0 Group  0 Pid  71522 on   gpu-n07 device  0 [0000:c1:00] AMD Instinct MI250X\n"
        "#  Rank  1 Group  0 Pid  71523 on   gpu-n07 device  1 [0000:c6:00] AMD Instinct MI250X\n"
    )
    ready = [f for f in diagnose_text(log).findings if f.code == "kfd-ready"]
    assert ready and "gfx90a" in ready[0].message


def test_nccl_tests_listing_nvidia_gpus_is_not_an_amd_gpu() -> None:
    log = "# Using devices\n#  Rank  0 Group  0 Pid   1234 on   dgx01 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
    assert "kfd-ready" not in codes(log)


# One name per NAMED_GFX row, written as people write them: each must reach its target through evidence.text's
# cue test (NAMED_GFX_CUES, spelled out there for speed), so a row whose name holds no cue fails here.
NAMED = [
    ("Vega 64", "gfx900"),
    ("Radeon VII", "gfx906"),
    ("Instinct MI100", "gfx908"),
    ("MI250X", "gfx90a"),
    ("CDNA", "gfx908"),
    ("CDNA2", "gfx90a"),
    ("CDNA 3", "gfx942"),
    ("CDNA4", "gfx950"),
    ("MI325X", "gfx942"),
    ("MI355X", "gfx950"),
    ("Radeon 680M", "gfx1035"),
    ("Radeon 760M", "gfx1103"),
    ("Radeon 880M", "gfx1150"),
    ("Radeon 8050S", "gfx1151"),
    ("Radeon Instinct MI25", "gfx900"),
    ("Radeon Instinct MI8", "gfx803"),
    ("Radeon Pro V520", "gfx1011"),
    ("Radeon Pro W6800", "gfx1030"),
    ("Radeon Pro W6600", "gfx1032"),
    ("Radeon PRO W7900", "gfx1100"),
    ("Radeon Pro V710", "gfx1101"),
    ("Radeon PRO W7600", "gfx1102"),
    ("Standard_NV16as_v4", "gfx900"),
    ("Standard_NG32ads_V620_v1", "gfx1030"),
    ("Standard_NV24ads_V710_v5", "gfx1101"),
    ("g4ad.xlarge", "gfx1011"),
]


def test_every_named_row_has_a_named_example() -> None:
    from kfdguard.knowledge import appformats

    assert len(NAMED) >= len(appformats.NAMED_GFX)
    for pattern, target in appformats.NAMED_GFX:
        assert any(pattern.search(name) and want == target for name, want in NAMED), pattern.pattern


@pytest.mark.parametrize(("name", "target"), NAMED)
def test_a_named_gpu_in_prose_reaches_its_target(name: str, target: str) -> None:
    from kfdguard.evidence.text import read_text

    obs = read_text(f"the machine has a {name} and nothing works\n")
    assert target in {gfx for gfx, _ in obs.prose_gfx}


# --- WSL: a CPU-only rocminfo cut short, and the GPU told unseen --------------------------------------------------


def test_a_wsl_rocminfo_cut_after_the_cpu_agent_is_an_unlisted_gpu() -> None:
    paste = (
        "WSL environment detected.\n=====================\nHSA System Attributes\n=====================\n"
        "Runtime Version:         1.1\n\n==========\nHSA Agents\n==========\n*******\nAgent 1\n*******\n"
        "  Name:                    AMD Ryzen 9 7950X3D 16-Core Processor\n"
        "  Uuid:                    CPU-XX\n"
    )
    found = codes(paste)
    assert "userspace-target-unsupported" in found
    assert "kfd-no-gpu-node" not in found  # no KFD under WSL to lack a node


@pytest.mark.parametrize(
    "told",
    [
        "Under WSL2 rocminfo keeps only showing my AMD Ryzen CPU, the Radeon is missing",
        "ROCm in WSL2 fails to detect the GPU after installing the WSL usecase",
    ],
)
def test_the_gpu_told_unseen_under_wsl(told: str) -> None:
    assert "userspace-target-unsupported" in codes(told)


def test_the_gpu_told_unseen_on_a_linux_host_is_not_a_wsl_finding() -> None:
    told = "On Ubuntu 24.04 rocminfo keeps only showing my AMD Ryzen CPU, the RX 7900 XTX is missing"
    assert "userspace-target-unsupported" not in codes(told)


# --- TensorFlow's created devices ----------------------------------------------------------------------------------


def test_tensorflow_creating_devices_on_amd_gpus_shows_them_ready() -> None:
    log = (
        "2024-05-02 17:40:11.520114: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 63922 MB memory:  -> device: 0, name: AMD Instinct "
        "MI210, pci bus id: 0000:83:00.0\n"
    )
    ready = [f for f in diagnose_text(log).findings if f.code == "kfd-ready"]
    assert ready and "gfx90a" in ready[0].message


def test_tensorflow_creating_a_device_on_an_nvidia_gpu_is_not_amd() -> None:
    log = (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1510] Created device /job:localhost/replica:0/task:0/"
        "device:GPU:0 with 22290 MB memory:  -> device: 0, name: NVIDIA GeForce RTX 3090, pci bus id: 0000:01:00.0\n"
    )
    assert "kfd-ready" not in codes(log)


@pytest.mark.parametrize(
    ("name", "target"),
    [("AMD Radeon RX 7900 XTX", "gfx1100"), ("AMD Instinct MI300X", "gfx942"), ("AMD Radeon Graphics", None)],
)
def test_named_target_reads_retail_names(name: str, target: str | None) -> None:
    from kfdguard.knowledge.appformats import named_target

    assert named_target(name) == target


# --- KFD locked after a GPU left, in words -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Since I unbind the second card for my Windows VM, every HIP program fails to open kfd with EINVAL.",
        "After unplugging the Razer Core enclosure /dev/kfd gets locked and nothing ROCm works until reboot.",
    ],
)
def test_kfd_told_locked_after_a_gpu_left(told: str) -> None:
    found = codes(told)
    assert "kfd-open-einval" in found
    assert not found & {"device-permissions", "user-not-in-group"}


@pytest.mark.parametrize(
    "text",
    [
        # read(2) on an open that worked: access is fine
        "after adding myself to render, `cat /dev/kfd` now says\ncat: /dev/kfd: Invalid argument\nso it works",
        # "locked" without a GPU leaving: a permission setup, not KFD's lock
        "our admin has /dev/kfd locked down to root:render on the cluster",
    ],
)
def test_kfd_einval_near_misses(text: str) -> None:
    assert "kfd-open-einval" not in codes(text)


# --- HIP's error name alone ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "printed",
    [
        "rocblas-bench: error: 'hipErrorNoBinaryForGpu'(209) at gemm.cpp:77",
        "RuntimeError: HIP error: hipErrorNoBinaryForGpu\nrocminfo | grep gfx\n  Name:                    gfx1032",
    ],
)
def test_hips_error_name_alone_is_a_missing_code_object(printed: str) -> None:
    found = codes(printed)
    assert "userspace-target-unsupported" in found
    assert "device-permissions" not in found


@pytest.mark.parametrize(
    "prose",
    [
        "After the update I no longer get hipErrorNoBinaryForGpu, rocminfo | grep gfx shows gfx1030",
        "with HSA_OVERRIDE unset I don't see any hipErrorNoBinaryForGpu",
        "it runs without the `hipErrorNoBinaryForGpu` now",
    ],
)
def test_prose_that_says_the_error_is_gone_is_not_the_error(prose: str) -> None:
    assert "userspace-target-unsupported" not in codes(prose)


def test_a_negation_in_another_clause_leaves_the_error_named() -> None:
    printed = "I did not change anything and now get hipErrorNoBinaryForGpu\n  Name:                    gfx1032"
    assert "userspace-target-unsupported" in codes(printed)
