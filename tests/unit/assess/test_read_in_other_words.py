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


# --- a form's GPU field that the runtime's own listing contradicts --------------------------------------------------

_LISTING = """\
*******
Agent 2
*******
  Name:                    gfx1035
  Marketing Name:          AMD Radeon Graphics
  Device Type:             GPU
"""


def test_an_override_is_not_judged_on_a_gpu_only_a_form_names_when_rocminfo_lists_another() -> None:
    # The form's GPU field says one card; rocminfo, run without the override, lists only the iGPU the program uses.
    text = (
        "### GPU\n\nAMD Radeon RX 7900 XTX\n\n### ROCm Version\n\n6.0.0\n\n"
        + _LISTING
        + "my script sets os.environ['HSA_OVERRIDE_GFX_VERSION'] = '10.3.0' and training runs\n"
    )
    assert "env-override-wrong" not in codes(text)


def test_an_override_on_a_listed_gpu_of_another_generation_is_still_wrong() -> None:
    text = _LISTING.replace("gfx1035", "gfx1100") + "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
    assert "env-override-wrong" in codes(text)


def test_a_gpu_the_override_hides_from_the_listing_is_still_judged() -> None:
    # Under the override rocminfo reports the claimed target: the card's own one comes from its name alone.
    text = "GPU: Radeon RX 7900 XTX\n" + _LISTING.replace("gfx1035", "gfx1030") + "HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
    assert "env-override-wrong" in codes(text)


# --- a discrete chip named by its code name, and the kernel of the failure --------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("GPU: Navi 33 (the 7600 XT)\n", "navi33"),
        ("Is the Navy Flounder supported?\n", "navi22"),
        ("a Polaris12 card\n", "polaris12"),
        ("Hades Canyon NUC, Radeon RX Vega M GL\n", "vegam"),
    ],
)
def test_a_chip_named_by_its_code_name(text: str, key: str) -> None:
    assert key in {k for k, _ in read_text(text).prose_asics}


@pytest.mark.parametrize(
    "text",
    [
        "AMD Ryzen 5 2500U with Radeon Vega 8 Graphics\n",  # an APU's iGPU, by compute units
        "Radeon Vega 10 Graphics (Ryzen 7 2700U)\n",
        "loading amdgpu/vega10_sos.bin\n",  # a firmware file, not a name
        "Navigate to the settings\n",
    ],
)
def test_words_that_are_not_a_chips_code_name(text: str) -> None:
    assert read_text(text).prose_asics == []


def test_a_chip_whose_target_older_chips_share_is_judged_by_its_own_first_kfd() -> None:
    # gfx803 runs from Linux 4.17 (Fiji, Polaris 10/11); Polaris 12 only from 4.20.
    text = "My Polaris 12 card on Linux 4.18: rocminfo fails with 4104\n"
    assert "kernel-too-old" in codes(text)
    assert "kernel-too-old" not in codes(text.replace("Polaris 12 card", "Polaris 10 card"))


def test_the_kernel_told_with_the_later_success_is_not_the_failures() -> None:
    text = (
        "GPU: Navi 22, Linux 5.8: rocminfo shows no GPU agent\n"
        "Update: moved to Linux 5.15 and everything is working now.\n"
    )
    assert "kernel-too-old" in codes(text)
    assert "kernel-too-old" not in codes(text.replace("everything is working now", "it still fails"))


# --- sudo told under a negation -------------------------------------------------------------------------------------


def test_a_program_told_not_to_run_with_sudo_is_not_root_succeeding() -> None:
    text = (
        "rocminfo lists the GPU, but torch fails with HIP error: invalid device function\n"
        "note I am not running the IDE with sudo (it breaks my venv)\n"
    )
    assert "user-not-in-group" not in codes(text)
    assert "user-not-in-group" in codes(text.replace("I am not running the IDE with sudo", "it works with sudo"))


# --- a DKMS driver's kernel range told as a restriction --------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "I need the DKMS driver, and it's currently restricted to kernels up to 5.0; Ubuntu moved me to 5.3.\n",
        "rock-dkms only builds for kernels below 5.4 and this box runs 5.6.\n",
        "The amdgpu-dkms package is limited to Linux kernels older than 6.12.\n",
    ],
)
def test_a_dkms_driver_restricted_to_older_kernels(told: str) -> None:
    assert "dkms-not-built" in codes(told)


def test_a_module_restricted_to_root_is_no_kernel_range() -> None:
    assert "dkms-not-built" not in codes("the kernel module is restricted to root users on this box\n")


# --- a port refusing an AtomicOp, read from AER's TLP header --------------------------------------------------------

_AER = """\
[ 311.402211] pcieport 0000:00:1b.0: AER: Uncorrected (Fatal) error received: 0000:00:1b.0
[ 311.402219] pcieport 0000:00:1b.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)
[ 311.402224] pcieport 0000:00:1b.0:   device [8086:a2e7] error status/mask=00040000/00000000
[ 311.402230] pcieport 0000:00:1b.0:    [18] MalfTLP                (First)
[ 311.402236] pcieport 0000:00:1b.0: AER:   TLP Header: {header} 07000000 0000000f e02c1000
"""


@pytest.mark.parametrize("header", ["4e000002", "6d000002", "6c000001"])
def test_an_atomic_op_refused_by_a_port_is_the_missing_atomics(header: str) -> None:
    assert "pcie-atomics" in codes(_AER.format(header=header))


@pytest.mark.parametrize("header", ["40000001", "60000020", "00000001", "4a000001"])
def test_another_request_refused_says_nothing_of_atomics(header: str) -> None:
    # A memory write (0x40/0x60), a memory read (0x00), a completion (0x4a): not an AtomicOp.
    assert "pcie-atomics" not in codes(_AER.format(header=header))


# --- a CUDA Triton beside ROCm's PyTorch ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        "torch._inductor.exc.InductorError: PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
        "ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'\n",
        "RuntimeError: `ptxas` failed with error code 255: \n",
    ],
)
def test_a_cuda_triton_on_an_amd_gpu_is_a_build_without_rocm(error: str) -> None:
    text = "torch 2.6.0+rocm6.2.4 on a Radeon RX 7800 XT, eager mode runs; torch.compile fails:\n" + error
    assert "userspace-no-rocm-build" in codes(text)


def test_ptxas_on_an_nvidia_machine_is_not_ours() -> None:
    text = "RTX 4090, CUDA 12.4\nRuntimeError: Internal Triton PTX codegen error: \nptxas fatal : bad option\n"
    assert "userspace-no-rocm-build" not in codes(text)


# --- an Instinct GPU named by its series or architecture ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gfx"),
    [
        ("we run on CDNA2 nodes\n", "gfx90a"),
        ("a CDNA 3 part\n", "gfx942"),
        ("the MI200 series\n", "gfx90a"),
        ("first-generation CDNA (MI100-class)\n", "gfx908"),
    ],
)
def test_an_instinct_gpu_by_architecture_or_series(text: str, gfx: str) -> None:
    assert gfx in targets(text)


def test_cdna_in_lower_case_is_biology() -> None:
    assert targets("AlphaFold reads the cDNA sequence\n") == set()


def test_an_architecture_beside_a_release_without_its_code() -> None:
    text = "docker image rocm/pytorch:rocm4.2_ubuntu18.04_py3.6\nGPU: CDNA2\nHIP error: hipErrorNoDevice\n"
    assert "userspace-target-unsupported" in codes(text)


def test_a_gpu_told_unsupported_under_wsl_where_rocminfo_lists_it_and_programs_hang() -> None:
    text = (
        "WSL2, Ubuntu 22.04; torch hangs on the first tensor sent to the GPU\n"
        + _LISTING.replace("gfx1035", "gfx1031")
        + "Reply: the Radeon RX 6700 XT is not supported for usage through WSL; see the WSL compatibility matrix.\n"
    )
    found = codes(text)
    assert "userspace-target-unsupported" in found
    assert "host-without-kfd" not in found
    assert "userspace-target-unsupported" not in codes(text.replace("is not supported for", "is fine for"))


# --- Secure Boot and an unsigned module, told in words ---------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Solved: the amdgpu module from ROCm is unsigned, and Secure Boot was on.\n",
        "Turns out Secure Boot refuses unsigned kernel modules, so the ROCm driver never loaded.\n",
        "For the dkms driver you need to disable Secure Boot in the firmware setup.\n",
    ],
)
def test_an_unsigned_module_under_secure_boot_told_in_words(told: str) -> None:
    assert "module-signature-rejected" in codes("rocminfo: ROCk module is NOT loaded\n" + told)


def test_secure_boot_named_without_a_module_refused_is_no_cause() -> None:
    text = "rocminfo: ROCk module is NOT loaded\nSecure Boot is on and the module is signed; still not loaded.\n"
    assert "module-signature-rejected" not in codes(text)


# --- a program or ROCm's build files of another release than the ROCm installed -------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: /opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_hip.so: undefined symbol: "
        "hipGraphExecGetFlags\n",
        "./bin/app: symbol lookup error: ./bin/app: undefined symbol: hsa_amd_portable_export_dmabuf\n",
        "OSError: libfoo.so: undefined symbol: _ZN3hip14FatBinaryInfo13AddDevProgramEi\n",
    ],
)
def test_a_rocm_symbol_the_loader_does_not_find(line: str) -> None:
    assert "userspace-library-missing" in codes(line)


def test_a_symbol_that_only_contains_hip_is_not_rocms() -> None:
    assert "userspace-library-missing" not in codes("./app: symbol lookup error: ./app: undefined symbol: chip_init\n")


def test_rocm_cmake_files_naming_a_library_the_install_lacks() -> None:
    text = (
        "CMake Error at /opt/rocm/lib/cmake/hip/hip-targets.cmake:77 (message):\n"
        '  The imported target "hip::amdhip64" references the file\n'
        '     "/opt/rocm/lib/libamdhip64.so.6.4.60400"\n'
        "  but this file does not exist.  Possible reasons include:\n"
    )
    assert "userspace-library-missing" in codes(text)
    other = text.replace("/opt/rocm/lib/libamdhip64.so.6.4.60400", "/usr/lib/libfoo.so.3")
    assert "userspace-library-missing" not in codes(other)


# --- OpenCL without a platform where access is shown not to be the cause --------------------------------------------

_NO_PLATFORM = "$ clinfo\nERROR: clGetPlatformIDs(-1001)\n"


def test_no_opencl_platform_beside_a_listed_gpu_agent_is_the_icd() -> None:
    assert "userspace-library-missing" in codes(_NO_PLATFORM + _LISTING.replace("gfx1035", "gfx1030"))


def test_no_opencl_platform_under_sudo_as_well_is_the_icd() -> None:
    text = _NO_PLATFORM + "$ sudo /opt/rocm/bin/clinfo\nERROR: clGetPlatformIDs(-1001)\n"
    assert "userspace-library-missing" in codes(text)


def test_no_opencl_platform_alone_says_nothing_of_the_icd() -> None:
    assert "userspace-library-missing" not in codes(_NO_PLATFORM + "$ sudo clinfo\nNumber of platforms  1\n")


# --- clinfo's device names, a listing run as the user, and an unbuilt DKMS module beside a working KFD --------------


@pytest.mark.parametrize(
    "listing",
    [
        "Number of devices:\t\t\t\t 1\n  Device Type:\t\t\t\t\t CL_DEVICE_TYPE_GPU\n  Name:\t\t\t\t\t\t gfx1012\n",
        "Number of devices                                 1\n  Device Name                                     gfx90c\n",
    ],
)
def test_clinfo_naming_a_gpu_device_by_target_is_the_runtime_listing_it(listing: str) -> None:
    assert "kfd-ready" in codes("$ clinfo\n" + listing)


def test_a_cpu_device_is_no_gpu() -> None:
    text = "  Name:                    AMD Ryzen 9 7950X\n  Device Name                   Intel(R) Xeon(R) Gold\n"
    assert "kfd-ready" not in codes(text)


_ROOT_ONLY_APP = "hashcat finds no OpenCL platform; it only works as root (sudo hashcat ...)\n"


def test_works_as_root_beside_the_users_own_listing_is_not_the_group() -> None:
    text = _ROOT_ONLY_APP + "$ clinfo\n  Device Name                                     gfx1032\n"
    assert "user-not-in-group" not in codes(text)


def test_works_as_root_beside_a_listing_run_under_sudo_is_still_the_group() -> None:
    text = _ROOT_ONLY_APP + "$ sudo -u root clinfo\n  Device Name                                     gfx1032\n"
    assert "user-not-in-group" in codes(text)


def test_an_unbuilt_dkms_module_beside_a_kfd_that_added_the_gpu_is_not_needed() -> None:
    text = "[    4.201337] kfd kfd: added device 1002:73bf\n$ dkms status\namdgpu, 6.8.5-2009582.22.04: added\n"
    assert "dkms-not-built" not in codes(text)
    assert "dkms-not-built" in codes(text.split("\n", 1)[1])


# --- TensorFlow's found devices, a build given the GPU's target told in words, RX 6300 -----------------------------


@pytest.mark.parametrize(
    ("line", "gfx"),
    [
        (
            "pciBusID: 0000:0a:00.0 name: Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]     ROCm AMD GPU ISA: gfx1030\n",
            "gfx1030",
        ),
        (
            "I tensorflow/compiler/xla/service/service.cc:176]   StreamExecutor device (1): MI100, AMDGPU ISA version: gfx908\n",
            "gfx908",
        ),
    ],
)
def test_tensorflow_finding_a_rocm_device_is_the_runtime_listing_it(line: str, gfx: str) -> None:
    ready = [f for f in diagnose_text(line).findings if f.code == "kfd-ready"]
    assert ready and gfx in ready[0].message


def test_a_build_given_the_gpus_target_told_in_words() -> None:
    text = "the samples segfault on my RX 6600\nSolved it by setting the right GPU_TARGETS when building the samples.\n"
    assert "userspace-target-unsupported" in codes(text)
    assert "userspace-target-unsupported" not in codes(
        text.replace("Solved it by setting", "I tried setting").replace(
            "when building the samples.", "when building; still crashes."
        )
    )


def test_rx_6300_is_navi_24() -> None:
    assert targets("GPU: Radeon RX 6300 (OEM)\n") == {"gfx1034"}


def test_a_gpu_told_unsupported_under_wsl_leaves_no_kfd_node_finding() -> None:
    text = (
        "WSL2 on Windows 11, ROCm 6.3.4\n*******\nAgent 1\n*******\n  Name:                    AMD Ryzen 7 7700X\n"
        "  Device Type:             CPU\n"
        "Answer: the RX 9070 series GPUs are not yet supported for use with ROCm on WSL.\n"
    )
    found = codes(text)
    assert "userspace-target-unsupported" in found
    assert "kfd-no-gpu-node" not in found


# --- a kernel downgrade told as "downgraded", a build told to have only the CPU backend -----------------------------


def test_a_kernel_downgrade_told_without_its_version_in_a_text_about_dkms() -> None:
    text = (
        "amdgpu-install --usecase=dkms stops with errors on the 6.11 HWE kernel\n"
        "Answer: please downgrade your kernel until the next release.\n"
        "Reply: I downgraded and it works now.\n"
    )
    assert "dkms-not-built" in codes(text)
    assert "dkms-not-built" not in codes(text.replace("downgrade your kernel", "downgrade ROCm"))


@pytest.mark.parametrize(
    "told",
    [
        "The old -DLLAMA_HIPBLAS flag is ignored now, so the binary was built with the CPU backend only.\n",
        "whisper.cpp got compiled with only the CPU backend, the HIP option was misspelled.\n",
    ],
)
def test_a_build_told_to_have_only_the_cpu_backend(told: str) -> None:
    assert "userspace-no-rocm-build" in codes("RX 7900 XTX, ROCm 6.3\n" + told)


# --- the iGPU disabled, told as the fix -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "Update: the solution was to disable the igpu of the 9700X in the BIOS.\n",
        "Turning off the integrated graphics fixed it, torch now runs on the 7900 GRE.\n",
    ],
)
def test_the_igpu_disabled_told_as_the_fix(told: str) -> None:
    assert "userspace-target-unsupported" in codes("PyTorch segfaults at the first tensor\n" + told)


def test_the_igpu_disabled_without_a_success_is_no_fix() -> None:
    text = "PyTorch segfaults at the first tensor\nI disabled the iGPU in the BIOS, still the same crash.\n"
    assert "userspace-target-unsupported" not in codes(text)


# --- a mail's quoted-printable body, a device line quoted without its time, the ISP's firmware ----------------------


def test_a_quoted_printable_mail_body_is_read_decoded() -> None:
    text = 'Content-Type: text/plain; charset=3D"UTF-8"\namdgpu 0000:c4:00.0: amdgpu: Fatal error during GPU in=\nit\n'
    assert "gpu-init-failed" in codes(text)


def test_a_device_line_without_its_time_is_joined_with_its_wrapped_end() -> None:
    whole = "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_1_pfp.bin failed with error -2\n"
    wrapped = whole.replace(" with error", " with\nerror")
    assert codes(whole) and codes(wrapped) == codes(whole)


def test_the_camera_isps_firmware_is_optional() -> None:
    text = "amdgpu 0000:c5:00.0: Direct firmware load for amdgpu/isp_4_1_1.bin failed with error -2\n"
    found = codes(text)
    assert "firmware-optional-missing" in found
    assert "firmware-missing" not in found


def test_a_line_wrapped_whole_in_inline_code_is_read() -> None:
    assert "dkms-not-built" in codes("$ dkms status\n`amdgpu, 6.3.6-1697589.22.04: added`\n")
    assert "dkms-not-built" not in codes("run `dkms status` and post what it says\n")


# --- one of CUDA's own libraries the loader does not find, on an AMD machine ----------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n",
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
        "'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n",
    ],
)
def test_a_cuda_library_missing_beside_an_amd_gpu_is_a_cuda_build(line: str) -> None:
    assert "userspace-no-rocm-build" in codes("GPU: Radeon RX 6800 XT, ROCm 6.2\n" + line)


def test_a_cuda_library_missing_on_an_nvidia_machine_is_not_ours() -> None:
    line = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    assert "userspace-no-rocm-build" not in codes("GPU: RTX 3090\n" + line)


# --- dkms status before and after the fix ---------------------------------------------------------------------------


def test_an_added_module_first_and_a_build_only_after_the_fix_is_the_failure() -> None:
    text = (
        "$ dkms status\namdgpu, 6.3.6-1718217.24.04: added\n"
        "Answer: build it for your kernel with sudo dkms build amdgpu/6.3.6-1718217.24.04 -k $(uname -r)\n"
        "$ dkms status\namdgpu, 6.3.6-1718217.24.04, 6.8.0-49-generic, x86_64: installed\n"
    )
    assert "dkms-not-built" in codes(text)


def test_an_added_version_beside_an_installed_one_in_one_output_is_no_failure() -> None:
    text = (
        "$ dkms status\namdgpu, 6.2.4-2009582.22.04: added\n"
        "amdgpu, 6.3.6-1718217.24.04, 6.8.0-49-generic, x86_64: installed\n"
    )
    assert "dkms-not-built" not in codes(text)


# --- hostile text for the new readers: read without a finding, never an exception ----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "=3D=\n=ZZ=\n\udcff=FF=FE=\n",  # quoted-printable cues around broken escapes and a lone surrogate
        "=3D" * 5000 + "=\n" * 5000,
        "`\n``\n`x`\n" + "`" * 500 + "\n",  # inline code of nothing, a fence, a run of backticks
        "TLP Header: zz000000\nTLP Header: 6c\n",  # not hex, too short
        "GPU: " + "9" * 5000 + " XT\n",  # a model number of 5,000 digits
        "Navi " + "9" * 5000 + "\n",
        "My Polaris 12 card on Linux 4." + "1" * 5000 + " fails\n",  # a kernel version of 5,000 digits
    ],
)
def test_hostile_text_for_the_new_readers_gives_no_finding(text: str) -> None:
    assert codes(text) == set()
