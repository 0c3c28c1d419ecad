"""Classes the untuned batches 31 and 32 missed, each beside near misses that must stay silent: an installer that
put in no GPU backend ("will run in CPU-only mode"), a program that looks for KFD under WSL, where only /dev/dxg
exists, a rocminfo block an issue form flattened onto one line, a GPU hang told in words, ollama's newer
"inference compute" line and ROCm 7.2 as a release the version rules know; then batches 33 and 34's: a per-ring reset
in the kernel log, TheRock's device package not installed, a source build's configure step missing a ROCm library and
/dev/kfd "not getting passed" into a container; then batches 35 and 36's: rocBLAS's "Could not load" of a program's
own Tensile library copy, a BLAS status failure on a target no rocBLAS release builds, a ROCm library "not found" in
words and an installer that "now installs ROCm" after the fix; then batches 37 and 38's: ComfyUI's device line, ROCclr's
"HSA device ... has 2 ISAs", the runtime's GPU count told in words (PyTorch's wheel eras, split where gfx1100 and
gfx942 joined the lists, are tested with the other wheel tests); then batch 40's: a sandbox (firejail, bubblewrap)
that keeps /dev/kfd out, and /dev/dri/kfd, a node no kernel makes; then batch 39's: a module refused for its
signature where KFD runs with another amdgpu, and Secure Boot named as the problem; then batch 41's: a success told
in the next reply ("managed to get it to work"), ldd's "=> not found" and HCC's libmcwamp, a build whose HIP switch
was ignored, and "rocminfo correctly enumerates the GPU"; then batch 44's: ONNX Runtime without its ROCm provider; then batch 43's: a locked KFD answering EAGAIN (kernels
before 6.12) and the groups told forgotten; then batch 45's: a package told CUDA-only, and an iGPU used on purpose
("works a lot better").

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


# --- a per-ring reset in the kernel log ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        "amdgpu 0000:0c:00.0: amdgpu: Starting comp_1.0.0 ring reset\n",
        "[ 812.004411] amdgpu 0000:0c:00.0: amdgpu: Ring gfx_0.0.0 reset succeeded\n",
        "Starting sdma0 ring reset\nRing sdma0 reset failed\n",
    ],
)
def test_a_ring_reset_is_a_gpu_hang(lines: str) -> None:
    assert "gpu-hang" in codes(lines)


def test_a_ring_test_at_boot_is_no_hang() -> None:
    text = "[    3.120001] amdgpu 0000:0c:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0 on hub 0\n"
    assert "gpu-hang" not in codes(text)


# --- TheRock's device package not installed --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Every launch fails with hipErrorInvalidImage unless the device wheel is installed as well.\n",
        "I had not installed rocm-sdk-device-gfx1201, only the generic rocm-sdk packages.\n",
        "Without torch[device-gfx1201] the kernels are simply not there.\n",
    ],
)
def test_a_device_package_not_installed_leaves_no_code_for_the_gpu(told: str) -> None:
    assert "userspace-target-unsupported" in codes("GPU: Radeon RX 9070 (gfx1201)\n" + told)


@pytest.mark.parametrize(
    "told",
    [
        "I installed torch[device-gfx1201] and everything runs.\n",  # installed, not missing
        "The device plugin is not installed in this cluster yet.\n",  # Kubernetes, no package
    ],
)
def test_a_device_package_installed_or_another_device_is_left_alone(told: str) -> None:
    assert "userspace-target-unsupported" not in codes("GPU: Radeon RX 9070 (gfx1201)\n" + told)


# --- a source build's configure step missing a ROCm library ----------------------------------------------------------


def test_a_configure_step_that_cannot_find_a_rocm_library_is_a_library_missing() -> None:
    text = (
        "ERROR: An error occurred during the fetch of repository 'local_config_rocm':\n"
        "ROCm Configuration Error: Cannot find rocm library hipfft\n"
    )
    assert "userspace-library-missing" in codes(text)


def test_a_library_found_by_the_configure_step_is_no_failure() -> None:
    assert "userspace-library-missing" not in codes("Found rocm library hipfft in /opt/rocm/lib\n")


# --- /dev/kfd not getting passed into a container --------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "The kfd device is not currently getting passed to the container.\n",
        "Sadly the `kdf` device is not being passed into the app container yet.\n",
    ],
)
def test_kfd_not_getting_passed_into_a_container_is_a_missing_node(told: str) -> None:
    assert "device-node-missing" in codes("GPU: Radeon RX 6800\n" + told)


def test_a_kdf_that_is_no_device_is_left_alone() -> None:
    text = "GPU: Radeon RX 6800\nThe kdf value is not passed to the container, but the card is visible.\n"
    assert "device-node-missing" not in codes(text)


# --- a program's own copy of rocBLAS without the target ---------------------------------------------------------------


def test_a_bundled_rocblas_that_cannot_load_its_library_lacks_the_target() -> None:
    text = (
        "GPU: Radeon Pro VII (gfx906)\n"
        "rocBLAS error: Could not load /srv/app/backends/hip-llama/lib/rocblas/library/TensileLibrary.dat\n"
        "rocBLAS error: Could not initialize Tensile library\n"
    )
    assert "userspace-target-unsupported" in codes(text)


def test_the_system_rocblas_that_cannot_load_its_library_is_asked_about_not_blamed() -> None:
    text = (
        "GPU: Radeon Pro VII (gfx906)\n"
        "rocBLAS error: Could not load /opt/rocm-7.2.1/lib/rocblas/library/TensileLibrary.dat\n"
    )
    result = diagnose_text(text)
    assert "userspace-target-unsupported" not in {f.code for f in result.findings}
    assert any("rocBLAS cannot read its Tensile library" in u for u in result.unknown)


# --- a BLAS status failure on a target no rocBLAS release builds -------------------------------------------------------


def test_a_blas_status_failure_on_a_target_no_release_builds_is_missing_kernels() -> None:
    text = (
        "Hardware: Radeon RX 6650 XT (gfx1032)\n"
        "RuntimeError: CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling `hipblasSgemm( handle, ...)`\n"
    )
    assert "userspace-target-unsupported" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        # a target rocBLAS builds: the status says something else
        "Hardware: Radeon RX 6800 XT (gfx1030)\nRuntimeError: CUDA error: HIPBLAS_STATUS_INTERNAL_ERROR\n",
        # the override stands in for the missing code (rule_override_wrong judges it)
        "Hardware: Radeon RX 6650 XT (gfx1032)\nHSA_OVERRIDE_GFX_VERSION=10.3.0\nHIPBLAS_STATUS_ALLOC_FAILED\n",
        # success is no failure
        "Hardware: Radeon RX 6650 XT (gfx1032)\nhipblasSgemm returned HIPBLAS_STATUS_SUCCESS\n",
    ],
)
def test_a_blas_status_that_is_no_missing_kernel_is_left_alone(text: str) -> None:
    assert "userspace-target-unsupported" not in codes(text)


# --- a ROCm library not found, in words ----------------------------------------------------------------------------


def test_a_rocm_library_the_program_fails_to_find_is_a_library_missing() -> None:
    text = "GPU: Radeon RX 7700 XT\nThe server fails to find the libamdhip64.so library on this distribution.\n"
    assert "userspace-library-missing" in codes(text)


def test_a_library_found_in_words_or_no_rocm_library_is_left_alone() -> None:
    assert "userspace-library-missing" not in codes("GPU: Radeon RX 7700 XT\nIt failed to find libpng.so.16.\n")
    assert "userspace-library-missing" not in codes("GPU: Radeon RX 7700 XT\nIt does find libamdhip64.so now.\n")


# --- an installer that now installs ROCm after the fix -----------------------------------------------------------------


def test_an_installer_that_now_installs_rocm_after_the_fix_had_left_it_out() -> None:
    text = "GPU: Radeon 8060S\nAfter removing the stray tool, the installer now installs ROCm and the GPU is used.\n"
    assert "userspace-no-rocm-build" in codes(text)


# --- devices a runtime enumerated, in other programs' words -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Device: cuda:0 AMD Radeon RX 7600 : native\n",  # ComfyUI's model_management
        ":1:rocdevice.cpp            :590 : 2211 us:  HSA device gfx1200 (PCI ID 7590) has 2 ISAs but can only "
        "support a single ISA\n",  # ROCclr refusing a device the HSA runtime enumerated
        "The crash is odd, because the HIP runtime correctly reports 1 device.\n",
        "rocminfo lists 2 GPUs and hipGetDeviceCount agrees.\n",
    ],
)
def test_a_gpu_a_runtime_enumerated_is_kfd_ready(line: str) -> None:
    assert "kfd-ready" in codes(line)


@pytest.mark.parametrize(
    "line",
    [
        "Device: cuda:0 NVIDIA GeForce RTX 4070 : cudaMallocAsync\n",  # another vendor's GPU
        "Device: cpu\n",
        "The HIP runtime reports 0 devices.\n",
        "Does HIP report 1 device for you?\n",  # a question
        "rocminfo doesn't list 1 GPU here, only the CPU.\n",  # negated
    ],
)
def test_no_amd_gpu_enumerated_is_not_kfd_ready(line: str) -> None:
    assert "kfd-ready" not in codes(line)


# --- a sandbox that keeps /dev/kfd out, and a path no kernel makes ------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "GPU: Radeon RX 6800\nRunning it under firejail fails: No devices found. I believe /dev/kfd is needed with "
        "private-dev.\n",
        "GPU: Radeon RX 6800\nFor the model server to work in the sandbox I had to bind these:\n\n"
        '    "--dev-bind",\n    "/dev/dri",\n    "/dev/dri",\n    "--dev-bind",\n    "/dev/kfd",\n    "/dev/kfd",\n',
        "GPU: Radeon RX 6800\nThe compose file maps /dev/dri/kfd into the container for OpenCL.\n",
    ],
)
def test_a_sandbox_or_container_without_the_kfd_node_is_a_missing_node(text: str) -> None:
    assert "device-node-missing" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "GPU: Radeon RX 6800\nROCm needs /dev/kfd and /dev/dri; on this host both are there.\n",  # no sandbox
        "GPU: Radeon RX 6800\nI run it with bwrap --dev-bind /dev/kfd /dev/kfd and it crashes on a shader.\n",
        "GPU: Radeon RX 6800\nls /dev/dri shows card1 and renderD128; /dev/kfd is next to it.\n",
    ],
)
def test_a_kfd_node_passed_or_named_rightly_is_left_alone(text: str) -> None:
    assert "device-node-missing" not in codes(text)


# --- a module refused for its signature where KFD runs all the same --------------------------------------------------

_KFD_ADDED = (
    "[    6.912204] kfd kfd: amdgpu: Allocated 3969056 bytes on gart\n"
    "[    6.931440] kfd kfd: amdgpu: added device 1002:73bf\n"
)


def test_a_signature_refusal_beside_a_working_kfd_is_a_warning_not_dropped() -> None:
    text = "$ sudo modprobe amdgpu\nmodprobe: ERROR: could not insert 'amdgpu': Key was rejected by service\n"
    result = diagnose_text(text + _KFD_ADDED)
    found = [f for f in result.findings if f.code == "module-signature-rejected"]
    assert [f.severity.name for f in found] == ["WARNING"]
    assert "kfd-ready" in {f.code for f in result.findings}


def test_a_signature_refusal_without_kfd_stays_an_error() -> None:
    text = "modprobe: ERROR: could not insert 'amdgpu': Key was rejected by service\n"
    found = [f for f in diagnose_text(text).findings if f.code == "module-signature-rejected"]
    assert [f.severity.name for f in found] == ["ERROR"]


def test_secure_boot_named_as_the_problem_is_the_signature() -> None:
    text = (
        "GPU: Radeon RX 6800, amdgpu-dkms from the ROCm repository\n"
        "After a reboot rocminfo says ROCk module is NOT loaded.\n"
        "The issue was the Secure Boot mode in the firmware settings; with 'Other OS' the driver loads.\n"
    )
    assert "module-signature-rejected" in codes(text)


def test_secure_boot_named_but_not_the_problem_is_left_alone() -> None:
    text = (
        "GPU: Radeon RX 6800, amdgpu-dkms from the ROCm repository\n"
        "The issue is not Secure Boot, it is off; dkms status shows amdgpu only added.\n"
    )
    assert "module-signature-rejected" not in codes(text)


# --- batch 41: a rebuild told as the fix a reply later, ldd, an ignored HIP switch, the runtime seeing the GPU ------


def test_a_rebuild_for_the_target_told_working_in_the_next_reply_is_the_fix() -> None:
    text = (
        "GPU: Radeon RX 7600 (gfx1102)\n"
        "maintainer · comment\n"
        "You need to rebuild the framework and its kernels with --offload-arch=gfx1102\n"
        "\n"
        "reporter · comment\n"
        "Managed to get it to work by compiling it myself from the release branch.\n"
    )
    assert "userspace-target-unsupported" in codes(text)


def test_a_rebuild_told_and_a_failure_after_it_is_no_fix() -> None:
    text = (
        "GPU: Radeon RX 7600 (gfx1102)\n"
        "You need to rebuild with --offload-arch=gfx1102\n"
        "\n"
        "I rebuilt it, but it still doesn't work.\n"
    )
    assert "userspace-target-unsupported" not in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "$ ldd libggml-hip.so\n        librocblas.so.5 => not found\n        libc.so.6 => /lib/libc.so.6\n",
        "ImportError: libmcwamp.so.3: cannot open shared object file: No such file or directory\n",
    ],
)
def test_a_rocm_library_the_loader_would_not_find_is_a_library_missing(text: str) -> None:
    assert "userspace-library-missing" in codes(text)


def test_a_system_library_ldd_does_not_find_is_not_rocms() -> None:
    assert "userspace-library-missing" not in codes("$ ldd ./app\n        libfoo.so.1 => not found\n")


def test_a_build_whose_hip_switch_was_ignored_has_no_rocm() -> None:
    text = (
        "GPU: Radeon RX 7800 XT\n"
        "The package passes GGML_HIPBLAS, which the current ggml no longer knows: the old name is silently ignored.\n"
    )
    assert "userspace-no-rocm-build" in codes(text)


@pytest.mark.parametrize(
    ("line", "ready"),
    [
        ("The library links fine and `rocminfo` correctly enumerates the GPU.\n", True),
        ("rocminfo sees the device fine and reports it.\n", True),
        ("rocminfo does not see the GPU at all.\n", False),
    ],
)
def test_the_runtime_told_to_see_the_gpu(line: str, ready: bool) -> None:
    assert ("kfd-ready" in codes(line)) is ready


# --- batch 44: ONNX Runtime without its ROCm provider -----------------------------------------------------------------


def test_onnx_runtime_without_a_rocm_provider_is_a_build_without_rocm() -> None:
    line = (
        "onnxruntime_inference_collection.py:69: UserWarning: Specified provider 'MIGraphXExecutionProvider' is not "
        "in available provider names.Available providers: 'CUDAExecutionProvider, CPUExecutionProvider'\n"
    )
    result = diagnose_text("GPU: Radeon RX 7900 GRE\n" + line)
    found = [f for f in result.findings if f.code == "userspace-no-rocm-build"]
    assert found and "ONNX Runtime" in found[0].message


def test_another_provider_missing_is_not_a_rocm_build_question() -> None:
    line = (
        "UserWarning: Specified provider 'TensorrtExecutionProvider' is not in available provider names.Available "
        "providers: 'ROCMExecutionProvider, CPUExecutionProvider'\n"
    )
    assert "userspace-no-rocm-build" not in codes("GPU: Radeon RX 7900 GRE\n" + line)


# --- batch 43: a locked KFD on older kernels, the groups told forgotten -----------------------------------------------


def test_a_locked_kfd_answering_eagain_is_kfd_refusing_opens() -> None:
    text = (
        "ROCk module is loaded\n"
        "Unable to open /dev/kfd read-write: Resource temporarily unavailable\n"
        "alice is member of render group\n"
    )
    result = diagnose_text(text)
    found = [f for f in result.findings if f.code == "kfd-open-einval"]
    assert found and "EAGAIN" in found[0].message
    assert not {"device-permissions", "user-not-in-group"} & {f.code for f in result.findings}


def test_another_open_error_is_not_a_locked_kfd() -> None:
    text = "ROCk module is loaded\nUnable to open /dev/kfd read-write: Permission denied\n"
    assert "kfd-open-einval" not in codes(text)


@pytest.mark.parametrize(
    ("told", "found"),
    [
        ("Sorry, my bad: it works, I just forgot to add the groups.\n", True),
        ("I forgot to add my user to the video group, now it runs.\n", True),
        ("I did not forget to add the groups; id shows render and video.\n", False),
    ],
)
def test_the_groups_told_forgotten(told: str, found: bool) -> None:
    assert ("user-not-in-group" in codes("GPU: Radeon 8060S\n" + told)) is found


# --- batch 45: a CUDA-only package, an iGPU used on purpose ----------------------------------------------------------


def test_a_package_told_cuda_only_beside_an_amd_gpu_is_a_build_without_rocm() -> None:
    text = (
        "GPU: Radeon 8060S\nThe speech library's wheel from the package index is CUDA-only, so it never sees the GPU.\n"
    )
    assert "userspace-no-rocm-build" in codes(text)


def test_cuda_only_said_of_a_feature_is_left_alone() -> None:
    text = "GPU: Radeon 8060S\nFlash attention there is CUDA-only for now, the rest runs on ROCm.\n"
    assert "userspace-no-rocm-build" not in codes(text)


@pytest.mark.parametrize(
    ("told", "found"),
    [
        ("The container using the iGPU works a lot better than the CPU one.\n", False),
        ("The problem is HIP using the integrated graphics rather than the RX 7600.\n", True),
    ],
)
def test_an_igpu_used_on_purpose_is_no_fault(told: str, found: bool) -> None:
    assert ("userspace-target-unsupported" in codes("Ryzen 7 8845HS with Radeon 780M\n" + told)) is found


# --- hostile text for this stop's readers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "GPU: RX 6650 XT (gfx1032)\n" + "HIPBLAS_STATUS_" * 3000 + "\n",  # no status name, only its prefix
        "WSL2 here. " + "kfd " * 5000 + "\n",  # kfd without dxg
        "rocminfo " + "sees " * 4000 + "\n",
        "unless " + "device " * 4000 + "\n",
        "forgot to add " * 2000 + "\n",
        "Device: cuda:0 AMD " + "x " * 5000 + "\n",  # no allocator after the name
        "wheel " * 4000 + "is CUDA\u00adonly\n",
        "/dev/dri/kfd0 /dev/dri/kfdx\n",  # longer names, not /dev/dri/kfd
    ],
)
def test_hostile_text_for_this_stops_readers_gives_no_finding(text: str) -> None:
    assert codes(text) == set()
