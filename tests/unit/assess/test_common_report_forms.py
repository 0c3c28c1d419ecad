"""Forms that real reports use again and again and the readers did not know, found by running the tool over short
texts of each common kind before the batches of stop 46 were gathered (no batch's text is here): a Python session
that asks PyTorch for its build and device, a container started without /dev/kfd, HIP's "hipErrorNoDevice" by name,
rocminfo's HSA_STATUS_ERROR_OUT_OF_RESOURCES, and the fix told in words (added to the render group, --device
/dev/kfd added). Each beside near misses that must stay silent.

The texts are written from the programs' own formats (PyTorch's REPL values, docker's flags, rocminfo.cc's
RET_IF_HSA_ERR), with GPUs and versions of my choosing.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.repl import joined_answers


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- a Python session about PyTorch ---------------------------------------------------------------------------------


def test_an_answer_is_joined_to_its_expression() -> None:
    lines = [">>> import torch", "torch.__version__", "'2.6.0+cu126'", "torch.version.hip", "torch.cuda.is_available()"]
    assert joined_answers(lines) == [
        ">>> import torch",
        "torch.__version__",
        "torch.__version__ -> '2.6.0+cu126'",
        "torch.version.hip",  # an expression under an expression: Python printed nothing (None)
        "torch.cuda.is_available()",
    ]


def test_a_print_of_several_values_gives_each_its_expression() -> None:
    lines = ['$ python3 -c "import torch; print(torch.__version__, torch.cuda.is_available())"', "2.6.0+rocm6.2.4 True"]
    assert joined_answers(lines)[1] == "torch.__version__ -> 2.6.0+rocm6.2.4; torch.cuda.is_available() -> True"


@pytest.mark.parametrize(
    "lines",
    [
        ["print('torch is fine')", "torch is fine"],  # a print of text
        ["torch.__version__", "Traceback (most recent call last):"],
        ["print(torch.__version__, x)", "2.6.0+cpu"],  # something besides torch printed
        ["print(torch.__version__, torch.cuda.is_available())", "2.6.0+cpu"],  # one value for two expressions
        ["python -m pip list", "torch 2.6.0+cpu"],
    ],
)
def test_what_is_no_answer_stays_as_it_was(lines: list[str]) -> None:
    assert joined_answers(lines) == lines


def test_a_cuda_build_in_a_session_is_a_build_without_rocm() -> None:
    text = ">>> import torch\n>>> torch.__version__\n'2.6.0+cu126'\n>>> torch.cuda.is_available()\nFalse\nGPU: RX 9070 XT\n"
    assert "userspace-no-rocm-build" in codes(text)


def test_a_rocm_build_naming_its_gpu_shows_kfd_ready() -> None:
    text = (
        ">>> torch.__version__\n'2.7.1+rocm6.3'\n>>> torch.cuda.is_available()\nTrue\n"
        ">>> torch.cuda.get_device_name(0)\n'AMD Radeon PRO W7800'\n"
    )
    found = codes(text)
    assert "kfd-ready" in found and "userspace-no-rocm-build" not in found


def test_is_available_true_of_a_rocm_build_shows_kfd_ready() -> None:
    text = "torch 2.5.0+rocm6.2 on an RX 6750 XT: torch.cuda.is_available() returns True, then it crashes\n"
    assert "kfd-ready" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        # a CUDA build's True speaks of an NVIDIA GPU
        "torch 2.5.0+cu124, RTX 4090 and RX 6750 XT: torch.cuda.is_available() returns True\n",
        # no build shown: which GPU answered is unknown
        "torch.cuda.is_available() returns True on my RX 6750 XT\n",
        "torch 2.5.0+rocm6.2: torch.cuda.is_available() does not return True on my RX 6750 XT\n",
    ],
)
def test_is_available_true_without_a_rocm_build_says_nothing(text: str) -> None:
    assert "kfd-ready" not in codes(text)


def test_hip_version_none_told_in_words() -> None:
    assert "userspace-no-rocm-build" in codes("torch.version.hip is None, and my GPU is an RX 7600\n")


def test_a_hip_version_told_is_a_rocm_build() -> None:
    assert "userspace-no-rocm-build" not in codes("torch.version.hip returns 6.2.41133, GPU RX 7600\n")


# --- a container started without /dev/kfd ---------------------------------------------------------------------------

_NO_DEVICE = "hipGetDeviceCount failed: hipErrorNoDevice\n"


@pytest.mark.parametrize(
    "start",
    [
        "docker run --rm -it --device=/dev/dri --group-add video myimage:rocm\n",
        "podman run -it --device /dev/dri/renderD128 localhost/llama:rocm\n",
        "services:\n  app:\n    image: local/app\n    devices:\n      - /dev/dri:/dev/dri\n",
        "I start it inside docker with --device /dev/dri only\n",
    ],
)
def test_a_container_started_without_kfd_that_finds_no_gpu(start: str) -> None:
    assert "device-node-missing" in codes(start + _NO_DEVICE)


def test_rocminfo_out_of_resources_in_such_a_container() -> None:
    text = (
        "$ docker run -it --device=/dev/dri rocm/dev-ubuntu-24.04\n$ rocminfo\nROCk module is loaded\n"
        "hsa api call failure at: /src/rocminfo/rocminfo.cc:1306\n"
        "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
    )
    assert "device-node-missing" in codes(text)


def test_ollama_finding_no_gpu_in_a_compose_without_kfd() -> None:
    text = (
        "    devices:\n      - /dev/dri\n"
        'time=2025-06-01T08:00:00Z level=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"\n'
    )
    assert "device-node-missing" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "docker run -it --device=/dev/kfd --device=/dev/dri myimage\n" + _NO_DEVICE,  # kfd passed
        "docker run -it --privileged myimage\n" + _NO_DEVICE,  # every device passed
        "docker run -it -v /dev:/dev myimage\n" + _NO_DEVICE,
        'devices: ["/dev/kfd", "/dev/dri"]\n' + _NO_DEVICE,
        "docker run -it --device=/dev/dri myimage\n",  # no symptom
        "apptainer exec --rocm image.sif ... docker run elsewhere\n" + _NO_DEVICE,
        "docker run -it --device=/dev/dri myimage\nDevice 0: AMD Radeon RX 7900 XTX\n"
        "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no\n",
    ],
)
def test_a_container_with_kfd_or_without_symptom_says_nothing_of_it(text: str) -> None:
    assert "device-node-missing" not in codes(text)


@pytest.mark.parametrize(
    "text",
    ["HIP error: hipErrorNoDevice\n", "hipGetDeviceCount returned hipErrorNoDevice (100)\n"],
)
def test_hip_no_device_by_its_name_is_read(text: str) -> None:
    diagnosis = diagnose_text(text)
    assert any(m in diagnosis.kinds for m in ("application",))


def test_hip_no_device_named_as_gone_is_not_read() -> None:
    assert "application" not in diagnose_text("I no longer get hipErrorNoDevice\n").kinds


# --- the fix told in words ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Adding my user to the render and video groups and logging out fixed it.",
        "I added myself to the render group and rebooted, now it works.",
        "sudo usermod -aG render,video $USER resolved the issue",
        "Added the ollama user to the video group. That solved the problem.",
    ],
)
def test_a_group_added_as_the_fix_is_a_missing_membership(told: str) -> None:
    assert "user-not-in-group" in codes(f"{told}\nGPU: Radeon RX 6800\n")


@pytest.mark.parametrize(
    "told",
    [
        "I added myself to the render group but it still doesn't work.",
        "I don't need to add my user to the render group, it works fine.",
    ],
)
def test_a_group_added_without_success_says_nothing(told: str) -> None:
    assert "user-not-in-group" not in codes(f"{told}\nGPU: Radeon RX 6800\n")


@pytest.mark.parametrize(
    "told",
    [
        "Solved: I forgot to pass --device /dev/kfd to docker run, only /dev/dri was there.",
        "Adding --device=/dev/kfd to the podman run command fixed it.",
    ],
)
def test_kfd_added_as_the_fix_is_a_missing_node(told: str) -> None:
    assert "device-node-missing" in codes(f"{told}\nGPU: Radeon RX 6800\n")


@pytest.mark.parametrize(
    "told",
    [
        "I already pass --device /dev/kfd and it works on the host.",
        "I did not forget anything: --device /dev/kfd is in the docker run command.",
    ],
)
def test_kfd_passed_without_a_fix_says_nothing(told: str) -> None:
    assert "device-node-missing" not in codes(f"{told}\nGPU: Radeon RX 6800\n")


# --- ollama's own reasons for leaving the GPU out -------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        'time=2024-11-02T09:00:00.000Z level=WARN source=amd_linux.go:309 msg="amdgpu too old gfx803" gpu=1',
        'time=2024-04-02T09:00:00.000Z level=WARN source=amd_linux.go:84 msg="amdgpu [0] too old gfx803"',
    ],
)
def test_ollama_leaving_out_an_old_gpu_is_a_target_without_code(line: str) -> None:
    assert "userspace-target-unsupported" in codes(line + "\n")


def test_a_driver_told_too_old_is_not_a_gpu_too_old() -> None:
    text = 'level=WARN source=amd.go:485 msg="AMD driver is too old. Update your AMD driver to enable GPU inference."\n'
    assert "userspace-target-unsupported" not in codes(text)


def test_ollama_without_rocm_libraries_is_a_library_missing() -> None:
    text = (
        'time=2025-01-05T11:00:00.000Z level=WARN source=amd_linux.go:445 msg="amdgpu detected, but no compatible rocm '
        'library found.  Either install rocm v6, or follow manual install instructions at <the docs>"\n'
    )
    assert "userspace-library-missing" in codes(text)


def test_ollama_that_then_uses_the_gpu_has_no_library_missing() -> None:
    text = (
        'level=WARN source=amd_linux.go:445 msg="amdgpu detected, but no compatible rocm library found."\n'
        'level=INFO source=types.go:130 msg="inference compute" id=GPU-0 library=rocm variant="" compute=gfx1030 '
        'driver=6.8 name=1002:73bf total="16.0 GiB" available="15.2 GiB"\n'
    )
    assert "userspace-library-missing" not in codes(text)


def test_ollama_finding_no_gpu_under_wsl_has_no_kfd_to_find() -> None:
    text = (
        "### OS\nWSL2\n### GPU\nAMD\n### Ollama version\n0.6.8\n"
        'time=2025-05-01T10:00:00.000Z level=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"\n'
    )
    assert "host-without-kfd" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        # an NVIDIA GPU beside: ollama looks for it through CUDA, which WSL has
        "### OS\nWSL2\n### GPU\nNvidia RTX 3060\n"
        'level=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"\n',
        # not WSL
        '### OS\nLinux\n### GPU\nAMD\nlevel=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"\n',
    ],
)
def test_ollama_finding_no_gpu_elsewhere_is_not_wsl(text: str) -> None:
    assert "host-without-kfd" not in codes(text)


# --- a program rebuilt with its HIP switch as the fix ---------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "whisper.cpp ran on the CPU only. Rebuilt with -DGGML_HIP=ON and now it offloads to the GPU.",
        'Reinstalled with CMAKE_ARGS="-DGGML_HIPBLAS=on" pip install llama-cpp-python and now it works.',
        "Recompiled with make LLAMA_HIPBLAS=1 -j8, now the model runs on the GPU.",
    ],
)
def test_a_rebuild_with_hip_as_the_fix_is_a_build_without_rocm(told: str) -> None:
    assert "userspace-no-rocm-build" in codes(f"{told}\nGPU: Radeon RX 7600\n")


@pytest.mark.parametrize(
    "told",
    [
        "I built with -DGGML_HIP=ON but it still crashes with invalid device function.",
        "I did not build with -DGGML_HIP=ON, and it works now on Vulkan",
    ],
)
def test_a_hip_build_without_a_success_after_says_nothing(told: str) -> None:
    assert "userspace-no-rocm-build" not in codes(f"{told}\nGPU: Radeon RX 7600\n")


# --- what batches 46 and 47 missed (written after their untuned score) ----------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # ROCm's OpenCL device lines: BOINC's, clinfo's driver version
        "OpenCL: AMD/ATI GPU 1: Device 7448 (driver version 3636.0 (HSA1.1,LC), device version OpenCL 2.0, 45000MB",
        "  Driver version                                  3614.0 (HSA1.1,LC)",
    ],
)
def test_rocm_opencl_driver_line_shows_kfd_ready(text: str) -> None:
    assert "kfd-ready" in codes(text + "\n")


@pytest.mark.parametrize(
    "line",
    [
        "[AVHWDeviceContext @ 0x5600aa] Failed to get number of OpenCL platforms: -1001.",
        "Error: No OpenCL-capable platforms were detected by the installed OpenCL driver.",
        "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR",
        "[opencl_init] no working opencl library found. Continue with opencl disabled",
    ],
)
def test_opencl_without_a_platform_is_a_runtime_not_installed(line: str) -> None:
    assert "userspace-library-missing" in codes(line + "\nGPU: Radeon RX 6600\n")


def test_opencl_without_a_platform_beside_a_denied_node_is_access() -> None:
    text = (
        "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR\n$ ls -l /dev/kfd\ncrw-rw---- 1 root render 235, 0 /dev/kfd\n"
        "$ id\nuid=1000(ann) gid=1000(ann) groups=1000(ann),27(sudo)\n"
    )
    found = codes(text)
    assert "userspace-library-missing" not in found and "user-not-in-group" in found


def test_opencl_listing_the_gpu_before_the_failure_speaks_of_another_program() -> None:
    text = (
        "  Driver version                                  3614.0 (HSA1.1,LC)\n"
        "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR\n"
    )
    assert "userspace-library-missing" not in codes(text)


def test_an_opencl_library_told_no_longer_installed_is_missing() -> None:
    assert "userspace-library-missing" in codes("With ROCm 6.3 libOpenCL.so is no longer installed, Radeon RX 7600\n")


@pytest.mark.parametrize(
    "told",
    [
        "the add-on grabs Torch CUDA and Triton instead, so the GPU sits idle (torch 2.1)",
        "`foo install --amd` installs CUDA torch instead of ROCm torch",
        "the launcher assumes CUDA by default when it installs torch",
        "pip picks the newer CUDA wheels of torch from the default index",
    ],
)
def test_an_install_told_to_take_the_cuda_torch_is_a_build_without_rocm(told: str) -> None:
    assert "userspace-no-rocm-build" in codes(f"{told}\nGPU: Radeon RX 7800 XT\n")


@pytest.mark.parametrize(
    "told",
    [
        "I use the CUDA torch on my other machine with an RTX 3090; here torch 2.4+rocm6.1 crashes",
        "the docs say to not pick CUDA builds; I installed torch from the ROCm index",
    ],
)
def test_cuda_named_beside_a_rocm_install_says_nothing(told: str) -> None:
    assert "userspace-no-rocm-build" not in codes(f"{told}\nGPU: Radeon RX 7800 XT\n")


def test_a_cuda_requirements_file_beside_its_rocm_one() -> None:
    text = "requirements.txt says\n-r requirements-cuda.txt\nchanging it to -r requirements-rocm.txt works\nRadeon RX 7600\n"
    assert "userspace-no-rocm-build" in codes(text)


def test_a_cuda_requirements_file_alone_says_nothing() -> None:
    assert "userspace-no-rocm-build" not in codes("pip install -r requirements-cuda.txt\nRTX 4090\n")


def test_a_reinstall_from_the_rocm_index_that_cannot_resolve_leaves_the_cuda_build() -> None:
    text = (
        "[INFO] reinstalling torch from https://<index>/whl/rocm6.1\n"
        "[INFO]   × No solution found when resolving dependencies:\n"
    )
    assert "userspace-no-rocm-build" in codes(text)


def test_a_resolver_failure_without_a_rocm_index_says_nothing() -> None:
    assert "userspace-no-rocm-build" not in codes(
        "pip install torch\n  × No solution found when resolving dependencies:\n"
    )


@pytest.mark.parametrize(
    "told", ["hipBLAS is not enabled, even with the README's flags", "HIP was not enabled in the build"]
)
def test_hip_told_not_enabled_is_a_build_without_rocm(told: str) -> None:
    assert "userspace-no-rocm-build" in codes(told + "\nGPU: Radeon RX 7600\n")


# --- what batches 48 and 49 missed (written after their untuned score) ----------------------------------------------


def test_rocm_bandwidth_test_listing_a_gpu_shows_kfd_ready() -> None:
    text = "    RocmBandwidthTest Version: 2.6.0\n    Device: 0,  AMD EPYC 7302 16-Core Processor\n"
    text += "    Device: 1,  AMD Instinct MI100,  GPU-1234,  c1:0.0\n"
    assert "kfd-ready" in codes(text)


def test_rocm_bandwidth_test_listing_only_an_apus_cpu_says_nothing() -> None:
    text = "    Device: 0,  AMD Ryzen 7 7840HS w/ Radeon 780M Graphics\n"
    assert "kfd-ready" not in codes(text)


def test_rocm_smi_6_concise_rows_show_the_driver_drives_the_gpus() -> None:
    text = (
        "=========================================== ROCm System Management Interface ===========================\n"
        "Device  Node  IDs              Temp    Power  Partitions          SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%\n"
        "0       1     0x73bf,   12345  41.0°C  9.0W   N/A, N/A, 0         0Mhz  96Mhz 0%   auto  203.0W  0%     0%\n"
        "=========================================== End of ROCm SMI Log ========================================\n"
    )
    assert "gpu-driver-ready" in codes(text)


def test_attention_kernels_without_the_gpus_target_are_code_missing() -> None:
    text = (
        "UserWarning: Mem Efficient attention was not compiled for current AMD GPU architecture. Attempting to run on "
        "architecture gfx1150 (Triggered internally at /pytorch/aten/src/ATen/native/transformers/hip/sdp_utils.cpp)\n"
    )
    assert "userspace-target-unsupported" in codes(text)


@pytest.mark.parametrize(
    "told",
    [
        "Your slot could be a chipset lane, which means it does not support PCIe atomics.",
        "OpenCL 2.0 coarse-grained SVM: cross-device atomics are not supported.",
        "We can still run compute kernels without PCIe atomics on gfx9.",
    ],
)
def test_atomics_told_as_a_possibility_or_of_opencl_say_nothing(told: str) -> None:
    assert "pcie-atomics" not in codes(told + "\nGPU: Radeon RX 570\n")


def test_atomics_told_as_found_stay_a_cause() -> None:
    assert "pcie-atomics" in codes("The riser does not support PCIe atomics.\nGPU: Radeon RX 570\n")


def test_a_request_to_run_as_root_is_not_root_succeeding() -> None:
    text = "Could you also run the following as root?: `cat /sys/class/drm/card1/device/current_link_speed`\n"
    text += "Device: 1,  Vega 10 XTX [Radeon Vega Frontier Edition]\n"
    assert "user-not-in-group" not in codes(text)


def test_raven_refused_by_gc_ip_is_iommu_v2_unreachable() -> None:
    text = "[    3.2] kfd kfd: amdgpu: GC IP 090100 not supported in kfd\n"
    found = codes(text)
    assert "iommu-required" in found and "kernel-too-old" not in found


def test_a_gc_ip_refusal_of_a_newer_chip_stays_kernel_too_old() -> None:
    assert "kernel-too-old" in codes("[    3.2] kfd kfd: amdgpu: GC IP 0b0501 not supported in kfd\n")


# --- what batches 50 and 51 missed (written after their untuned score) ----------------------------------------------


def test_a_quoted_printable_mail_without_an_encoded_equals_sign_is_decoded() -> None:
    text = (
        "Gr=C3=BC=C3=9Fe, here is the log:\n"
        "[    4.1] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/polaris11_mc.b=\n"
        "in failed with error -2\n"
    )
    assert "amdgpu/polaris11_mc.bin" in diagnose_text(text).findings[0].message


def test_a_value_after_an_equals_sign_is_not_quoted_printable() -> None:
    text = "export HSA_OVERRIDE_GFX_VERSION=10.3.0 and FOO=\nbar\nrocminfo shows gfx1031\n"
    from kfdguard.evidence.text import read_text

    assert read_text(text).value("gfx-override") == "10.3.0"  # "=10" left as it is, not decoded to a byte


@pytest.mark.parametrize(
    "line",
    [
        "clinfo: error while loading shared libraries: librocprofiler-register.so.0: cannot open shared object file: "
        "No such file or directory",
        "Cannot load librocdxg.so, failed:librocdxg.so: cannot open shared object file: No such file or directory",
    ],
)
def test_newer_rocm_libraries_not_loaded(line: str) -> None:
    assert "userspace-library-missing" in codes(line + "\n")


def test_kfd_missing_in_a_list_of_examples_is_not_told_absent() -> None:
    text = (
        "docker compose up: on failure (CUDA torch on an AMD host, missing /dev/kfd for ROCm, etc.) it falls back to "
        "the CPU\n"
    )
    assert "device-node-missing" not in codes(text)


def test_kfd_missing_told_of_the_container_stays() -> None:
    assert "device-node-missing" in codes("Inside the docker container /dev/kfd is missing.\nGPU: Radeon RX 6800\n")


# --- what batches 52 and 53 missed (written after their untuned score) ----------------------------------------------

_POLARIS_LOG = "[    2.1] kfd kfd: added device 1002:67df\n"


def test_todays_missing_code_is_not_claimed_of_a_release_that_carried_it() -> None:
    assert "userspace-target-unsupported" in codes(_POLARIS_LOG)  # today's ROCm has no gfx803 code
    assert "userspace-target-unsupported" not in codes(_POLARIS_LOG + "ROCm version: 3.5.1\n")


def test_a_gpu_told_shown_as_a_rocminfo_agent_is_kfd_ready() -> None:
    assert "kfd-ready" in codes("`rocminfo` shows `ROCk module is loaded`, GPU is shown as Agent 2.\n")


# --- what batches 54 and 55 missed (written after their untuned score) ----------------------------------------------


def test_hcc_finding_no_compatible_kernel_is_code_missing() -> None:
    text = "HCC RUNTIME ERROR: Fail to find compatible kernel at file:mcwamp.cpp line:346\nGPU: Radeon R9 290\n"
    assert "userspace-target-unsupported" in codes(text)


@pytest.mark.parametrize(
    "line",
    [
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 23.98 "
        "GiB of which 120.00 MiB is free.",
        "RuntimeError: HIP out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.98 GiB total capacity; 7.60 GiB "
        "already allocated)",
    ],
)
def test_hip_running_out_of_a_gpus_memory_shows_kfd_ready(line: str) -> None:
    assert "kfd-ready" in codes(line + "\n")


def test_cuda_running_out_of_memory_is_not_hip() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 24 GiB"
    )
    assert "kfd-ready" not in codes(text + "\n")
