"""The rules of assess/stack_rules.py and the container formats they share with app_rules and report_rules:
PyTorch's build label and collect_env, pip's resolver errors, a shell's set, Podman's keep-groups, Docker
Desktop's names and a container told to lack the host's /dev/kfd.

Every text here is written from a format or a cause, with versions, GPUs and wordings that the corpus files
190-203 (whose misses these rules answer) do not use, beside the near misses each rule must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- a PyTorch build without ROCm ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shown",
    [
        # torch.utils.collect_env of a CUDA wheel
        "PyTorch version: 2.5.1+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
        "ROCM used to build PyTorch: N/A\n",
        # pip list inside an image
        "torch                     2.4.0+cpu\ntorchvision               0.19.0+cpu\n",
        # a one-liner that prints the HIP version
        ">>> import torch; print(torch.version.hip)\nNone\n>>> torch.version.hip == None\ntorch.version.hip: None\n",
    ],
)
def test_a_torch_build_without_hip_on_an_amd_machine(shown: str) -> None:
    text = f"My Radeon RX 7900 XTX is ignored, ComfyUI says 'Device: cpu'.\n{shown}"
    assert "userspace-no-rocm-build" in codes(text)


def test_a_rocm_build_of_torch_is_not_blamed() -> None:
    text = "Radeon RX 6800, ROCm 6.1\nPyTorch version: 2.4.1+rocm6.1\nROCM used to build PyTorch: 6.1.40091-a8dbc0c19\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_a_cuda_build_replaced_later_in_the_thread_is_still_the_cause_it_names() -> None:
    # The corpus's convention: a thread that tells its fix is diagnosed for the cause it established.
    text = (
        "Radeon RX 7600, the image had torch 2.5.1+cu124 and used the CPU.\n"
        "After reinstalling from the rocm6.2 index: torch.__version__ = 2.5.1+rocm6.2 and it runs on the GPU.\n"
    )
    assert "userspace-no-rocm-build" in codes(text)


@pytest.mark.parametrize(
    "message",
    [
        # a CUDA build without libcuda (CUDAHooks.cpp), as a traceback ends
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed "
        "a driver from http://www.nvidia.com/Download/index.aspx",
        # a CPU build (torch.cuda._lazy_init)
        'raise AssertionError("Torch not compiled with CUDA enabled")\nAssertionError: Torch not compiled with CUDA enabled',
    ],
)
def test_messages_only_a_build_without_hip_prints(message: str) -> None:
    text = f"Fedora 41, Radeon RX 6800 XT, ROCm 6.2 installed; Forge fails at start:\n{message}\n"
    assert "userspace-no-rocm-build" in codes(text)


def test_a_rocm_build_without_a_gpu_is_not_a_cuda_build() -> None:
    text = "Radeon RX 6800 XT, torch 2.4.1+rocm6.1\nRuntimeError: No HIP GPUs are available\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_no_nvidia_driver_on_an_nvidia_machine_is_not_an_amd_matter() -> None:
    text = "GeForce RTX 4070, fresh Ubuntu\nRuntimeError: Found no NVIDIA driver on your system.\n"
    assert "userspace-no-rocm-build" not in codes(text)


@pytest.mark.parametrize(
    "told",
    [
        "the node's installer pulled the CUDA wheels of torch back in, and my Radeon is ignored",
        "updating the WebUI replaced torch with CUDA builds, so ROCm is not used anymore",
    ],
)
def test_cuda_torch_told_in_words(told: str) -> None:
    assert "userspace-no-rocm-build" in codes(f"RX 7800 XT with ROCm 6.3: {told}.\n")


def test_cuda_told_without_torch_is_not_read() -> None:
    text = "RX 7800 XT with ROCm 6.3: the game launcher installs NVIDIA packages for PhysX anyway.\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_a_cuda_build_on_an_nvidia_machine_is_the_right_build() -> None:
    text = "GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-1234)\ntorch 2.1.0+cu121\nCUDA available: True\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_pip_without_the_rocm_wheel_at_the_version_asked_for() -> None:
    text = (
        "Installing for my RX 6700 XT:\n"
        "ERROR: Could not find a version that satisfies the requirement torchvision==0.20.0 "
        "(from versions: 0.17.0+rocm5.7, 0.17.1+rocm5.7)\n"
        "ERROR: No matching distribution found for torchvision==0.20.0\n"
    )
    assert "userspace-no-rocm-build" in codes(text)


@pytest.mark.parametrize(
    "line",
    [
        # another package missing from a ROCm index
        "ERROR: Could not find a version that satisfies the requirement numpy==3.0 (from versions: 1.26.4)",
        # torch missing from an index that is not ROCm's: no sign the ROCm build was wanted
        "ERROR: Could not find a version that satisfies the requirement torch==9.9 (from versions: 2.4.0, 2.5.0)",
    ],
)
def test_pip_errors_that_say_nothing_about_a_rocm_build(line: str) -> None:
    assert "userspace-no-rocm-build" not in codes(f"Radeon RX 6700 XT\n{line}\n")


# --- HSA_OVERRIDE_GFX_VERSION set without export --------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        "set -U HSA_OVERRIDE_GFX_VERSION 11.0.2",  # fish: universal, not exported
        "set --universal HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "set -g HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "set HSA_OVERRIDE_GFX_VERSION 11.0.2",  # fish without flags, or a POSIX shell's positional parameters
    ],
)
def test_an_override_set_without_export(setting: str) -> None:
    text = f"RX 7600 (gfx1102) in ~/.config/fish/config.fish:\n    {setting}\nthen python main.py crashes\n"
    assert "env-override-not-applied" in codes(text)


@pytest.mark.parametrize(
    "setting",
    [
        "set -gx HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "set -Ux HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "set -x -U HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "set --export HSA_OVERRIDE_GFX_VERSION 11.0.2",
        "export HSA_OVERRIDE_GFX_VERSION=11.0.2",
    ],
)
def test_an_exported_override_is_not_said_to_be_missing(setting: str) -> None:
    text = f"RX 7600 (gfx1102):\n    {setting}\nthen python main.py crashes\n"
    assert "env-override-not-applied" not in codes(text)


# --- rootless Podman: keep-groups told as the fix, or no GPU seen in a rootless box ------------------------


def test_keep_groups_told_as_the_fix_for_dev_kfd() -> None:
    text = (
        "With rootless podman I had to replace --group-add render with --group-add keep-groups "
        "before /dev/kfd could be opened in the container.\n"
    )
    assert "rootless-gid-unmapped" in codes(text)


def test_keep_groups_merely_used_in_a_command_says_nothing() -> None:
    text = (
        "podman run --rm --group-add keep-groups --device /dev/kfd --device /dev/dri rocm/pytorch python t.py\n"
        "RuntimeError: HIP error: invalid device function\n"
    )
    found = codes(text)
    assert "rootless-gid-unmapped" not in found
    assert "userspace-target-unsupported" in found


def test_keep_groups_for_a_serial_port_is_not_a_gpu_matter() -> None:
    text = "For the Arduino use keep-groups instead of --group-add dialout so /dev/ttyACM0 opens.\n"
    assert "rootless-gid-unmapped" not in codes(text)


def test_a_rootless_box_given_dev_kfd_whose_runtime_sees_no_gpu() -> None:
    text = (
        "rootless podman, Fedora 41:\n"
        "$ podman run -it --device /dev/kfd --device /dev/dri --group-add video [registry]/rocm/pytorch\n"
        ">>> torch.cuda.is_available()\nFalse\nRuntimeError: No HIP GPUs are available\n"
    )
    assert "rootless-gid-unmapped" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        # rootful docker: nothing says the groups were remapped
        "$ sudo docker run -it --device /dev/kfd --device /dev/dri rocm/pytorch\nRuntimeError: No HIP GPUs are available\n",
        # a distrobox that was never given /dev/kfd
        "$ distrobox create -n ai --image ubuntu:24.04\n"
        "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected\n",
        # a distrobox whose runtime did enumerate the GPU
        "$ distrobox create -n ai --additional-flags '--device /dev/kfd'\n"
        "  Device 0: AMD Radeon RX 7800 XT, gfx1101 (0x1101), VMM: no, Wave Size: 32\n"
        "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected\n",
    ],
)
def test_no_device_elsewhere_is_not_read_as_a_remapped_gid(text: str) -> None:
    assert "rootless-gid-unmapped" not in codes(text)


# --- Docker Desktop by its package and context names; /dev/kfd bind-mounted under WSL ------------------------


@pytest.mark.parametrize(
    "host",
    [
        # docker info's client section (docker context ls would also print the description "Docker Desktop")
        "$ docker info\nClient:\n Version:    27.3.1\n Context:    desktop-linux\n",
        "I use the docker-desktop package on Fedora.\n",
    ],
)
def test_docker_desktop_on_linux_has_no_kfd_to_pass(host: str) -> None:
    text = f"{host}$ docker run --rm --device=/dev/kfd --device=/dev/dri rocm/rocm-terminal rocminfo\n"
    assert "host-without-kfd" in codes(text)


def test_dev_kfd_passed_by_the_native_engine_is_not_a_foreign_host() -> None:
    text = "$ docker context ls\ndefault *   Current DOCKER_HOST   unix:///var/run/docker.sock\n"
    text += "$ docker run --rm --device=/dev/kfd rocm/rocm-terminal rocminfo\n"
    assert "host-without-kfd" not in codes(text)


def test_dev_kfd_bind_mounted_as_a_volume_under_wsl2() -> None:
    text = (
        "Ubuntu 24.04 under WSL2, kernel 6.6.87.2-microsoft-standard-WSL2\n"
        "$ docker run -it -v /dev/kfd:/dev/kfd -v /dev/dri:/dev/dri rocm/pytorch\n"
        "RuntimeError: No HIP GPUs are available\n"
    )
    assert "host-without-kfd" in codes(text)


# --- /dev/kfd absent inside a container while the host lists it ------------------------------------------


def test_kfd_missing_in_the_container_while_the_host_lists_it() -> None:
    text = (
        "crw-rw---- 1 root render 234, 0 Mar  3 08:12 /dev/kfd\n"
        "That listing is from the Proxmox node; inside the LXC /dev/kfd is missing, though it exists on the host.\n"
    )
    assert "device-node-missing" in codes(text)


def test_a_listed_node_with_no_other_machine_named_is_there() -> None:
    text = (
        "crw-rw---- 1 root render 234, 0 Mar  3 08:12 /dev/kfd\n"
        "I thought /dev/kfd was not available in the container, but ls shows it.\n"
    )
    assert "device-node-missing" not in codes(text)


# --- second round (204-209): /dev/kfd not reaching a container, the group given as the fix, a driver that makes
# only its DRM nodes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Our k3s pods get /dev/dri, but /dev/kfd was never passed into the pod spec's container.",
        "The Nomad task has the render node; /dev/kfd is not mapped into the container at all.",
        "Looking at the compose file, what is missing is the /dev/kfd line under devices: for the container.",
        # batch 8 (TheRock#7705): both nodes as one subject
        "The container only passes --ipc host, so /dev/kfd and /dev/dri are not visible inside the container.",
        "In the pod, /dev/dri and /dev/kfd were not mounted.",
    ],
)
def test_kfd_told_not_to_reach_a_container(told: str) -> None:
    assert "device-node-missing" in codes(f"RX 7800 XT, ROCm 6.3.\n{told}\n")


def test_kfd_not_passed_is_not_read_on_a_host_that_has_none() -> None:
    text = "Docker Desktop on Windows 11: /dev/kfd was never passed into the container, rocminfo fails.\n"
    found = codes(text)
    assert "host-without-kfd" in found
    assert "device-node-missing" not in found


@pytest.mark.parametrize(
    "told",
    [
        "I had to add my user to the render group, otherwise every ROCm app got permission denied.",
        "The fix: you need to add the jellyfin user to the video and render groups; before that it could not access the GPU.",
    ],
)
def test_the_group_given_as_the_fix(told: str) -> None:
    assert "user-not-in-group" in codes(f"Radeon RX 6600, Ubuntu 24.04.\n{told}\n")


@pytest.mark.parametrize(
    "text",
    [
        # a membership already made, with no failure told
        "I added myself to the render group last year and everything works.\n",
        # the fix named, but id shows the account in the group
        "uid=1000(ana) gid=1000(ana) groups=1000(ana),44(video),992(render)\n"
        "Guides say you need to add the user to the render group, but I get permission denied anyway.\n",
    ],
)
def test_group_advice_that_does_not_show_a_missing_membership(text: str) -> None:
    assert "user-not-in-group" not in codes(text)


def test_a_driver_said_to_make_only_its_drm_nodes_has_no_kfd() -> None:
    text = (
        "03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 23 [Radeon RX 6600/6600 XT]\n"
        "\tKernel driver in use: amdgpu\n"
        "On this custom kernel the amdgpu module only creates /dev/dri/card1 and renderD128, so ROCm has nothing.\n"
    )
    assert "kfd-not-built" in codes(text)


def test_a_container_that_only_shows_the_drm_nodes_is_not_a_kernel_without_kfd() -> None:
    text = (
        "03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 23 [Radeon RX 6600/6600 XT]\n"
        "\tKernel driver in use: amdgpu\n"
        "Inside the container ls only shows /dev/dri, I forgot --device /dev/kfd.\n"
    )
    assert "kfd-not-built" not in codes(text)


# --- the DRM nodes handed over and /dev/kfd left out (216) ------------------------------------------------------


def test_dri_handed_over_but_kfd_left_out() -> None:
    text = "The Incus profile maps /dev/dri/renderD128 into the instance, but /dev/kfd was never added, so ROCm sees no GPU.\n"
    assert "device-node-missing" in codes(text)


def test_dri_made_but_kfd_not_created_is_a_kernel_without_kfd() -> None:
    text = (
        "03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 23 [Radeon RX 6600/6600 XT]\n"
        "\tKernel driver in use: amdgpu\n"
        "amdgpu gives me /dev/dri/card1, but /dev/kfd is not created on this self-built kernel.\n"
    )
    found = codes(text)
    assert "device-node-missing" not in found
    assert "kfd-not-built" in found


# --- ROCm's lib directory put on the loader's path, told as the fix (batch 9, ROCm#1165) ---------------------


@pytest.mark.parametrize(
    "text",
    [
        "TensorFlow segfaults on my RX 580.\nFixed with these commands:\n```\n"
        "echo 'export LD_LIBRARY_PATH=/opt/rocm/lib:$LD_LIBRARY_PATH' >> ~/.bashrc\nsource ~/.bashrc\n```\n",
        "export LD_LIBRARY_PATH=/opt/rocm-6.2.0/lib did the trick, pytorch sees the GPU now.\n",
        "I added /opt/rocm/lib to /etc/ld.so.conf.d/rocm.conf and ran ldconfig.\nThat worked, thanks!\n",
        # ROCm 4.x's per-component directories, and "It works" as the reply to a suggestion
        'Extending the path fixes this:\n`LD_LIBRARY_PATH="/opt/rocm/rocblas/lib/:/opt/rocm/hip/lib/" python3 t.py`\n',
        "Try `export LD_LIBRARY_PATH=/opt/rocm/lib`.\n\nreporter · comment\nIt works, thank you.\n",
    ],
)
def test_rocm_lib_dir_on_the_loader_path_told_as_the_fix(text: str) -> None:
    assert "userspace-library-missing" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "export LD_LIBRARY_PATH=/opt/rocm/lib\nStill segfaults.\n",  # no success told
        "I set LD_LIBRARY_PATH=/opt/rocm/lib but that didn't fix it.\n",
        "export LD_LIBRARY_PATH=/usr/local/cuda/lib64 fixed it\n",  # not ROCm's
    ],
)
def test_a_library_path_without_a_told_fix_is_no_finding(text: str) -> None:
    assert "userspace-library-missing" not in codes(text)


# --- OpenCL's ICD loader finds no platform while /dev/kfd is open to the user (batch 9, ROCm#1303) -----------

_OPEN_KFD = "crw-rw-rw-+ 1 root video 241, 0 Nov 23 14:12 /dev/kfd\n"


@pytest.mark.parametrize(
    "text",
    [
        f"clinfo returns `ERROR: clGetPlatformIDs(-1001)` for my user.\n{_OPEN_KFD}",
        "Number of platforms                               0\n"
        "crw-rw---- 1 root render 235, 0 Jan 1 10:00 /dev/kfd\n$ groups\nme render video\n",
    ],
)
def test_no_opencl_platform_while_kfd_is_open_to_the_user(text: str) -> None:
    assert "userspace-library-missing" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "clinfo: clGetPlatformIDs(-1001) unless I run it as root.\n",  # access not shown: it may be the cause
        "clGetPlatformIDs(-1001)\ncrw-rw---- 1 root render 235, 0 Jan 1 10:00 /dev/kfd\n$ groups\nme video\n",
    ],
)
def test_no_opencl_platform_where_access_may_be_the_cause_is_left_to_access(text: str) -> None:
    assert "userspace-library-missing" not in codes(text)
