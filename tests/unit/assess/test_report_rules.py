"""The rules of assess/report_rules.py, from the formats of the programs that print the text (dkms status,
libhsakmt's override check, the module loader, kmod) and from causes told in words.

Every text here is written from a format or a cause, with versions, GPUs and wordings that the corpus files
132-153 (whose misses these rules answer) do not use, beside the near misses each rule must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.assess.report_rules import override_refused
from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


# --- dkms status: added, built for no kernel -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "amdgpu/6.10.5-2084815.24.04: added",  # dkms 3: module/version: state
        "amdgpu, 5.6.19-1098277: added",  # dkms 2: module, version: state
    ],
)
def test_dkms_status_with_the_module_only_added_is_no_build(line: str) -> None:
    text = f"$ uname -r\n6.8.0-51-generic\n$ sudo dkms status\n{line}\n"
    assert "dkms-not-built" in codes(text)


def test_dkms_status_line_formats_of_both_dkms_generations() -> None:
    obs = read_text(
        "amdgpu/6.10.5-2084815.24.04, 6.8.0-51-generic, x86_64: built\n"
        "amdgpu, 5.6.19-1098277, 5.4.0-150-generic, x86_64: built\n"
        "amdgpu, 5.6.19-1098277: added\n"
    )
    seen = [(m.value("version"), m.value("release"), m.value("state")) for m in obs.saw("dkms-status-unbuilt")]
    assert seen == [
        ("6.10.5-2084815.24.04", "6.8.0-51-generic", "built"),
        ("5.6.19-1098277", "5.4.0-150-generic", "built"),
        ("5.6.19-1098277", None, "added"),
    ]


def test_a_build_that_is_not_installed_is_left_to_the_kernel_comparison() -> None:
    # dkms 2 printed "built" beside a module that loads (one that differs from the installed copy).
    text = "$ uname -r\n4.15.0-43-generic\n$ dkms status\namdgpu, 2.0-89, 4.15.0-43-generic, x86_64: built\n"
    assert "dkms-not-built" not in codes(text)


def test_an_added_version_beside_one_installed_for_the_running_kernel_is_not_a_failure() -> None:
    text = (
        "$ uname -r\n6.8.0-51-generic\n$ dkms status\n"
        "amdgpu/6.10.5-2084815.24.04, 6.8.0-51-generic, x86_64: installed\n"
        "amdgpu/6.12.12-2147987.24.04: added\n"
    )
    assert "dkms-not-built" not in codes(text)


def test_another_modules_added_state_says_nothing_about_amdgpu() -> None:
    text = "$ uname -r\n6.8.0-51-generic\n$ dkms status\nv4l2loopback/0.12.7: added\n"
    assert "dkms-not-built" not in codes(text)


# --- HSA_OVERRIDE_GFX_VERSION that libhsakmt refuses --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("10.3.0", False),
        ("9.0.10", False),  # gfx90a: the stepping is decimal
        ("11.5.1", False),
        ("10.3", True),  # sscanf fills two of three
        ("gfx1030", True),
        ("1030", True),
        ("10.3.0.1", True),  # %c catches the rest: four conversions
        ("64.0.0", True),  # major above 63
        ("10.256.0", True),
    ],
)
def test_override_values_as_libhsakmt_parses_them(value: str, refused: bool) -> None:
    assert override_refused(value) is refused


@pytest.mark.parametrize(
    "text",
    [
        "export HSA_OVERRIDE_GFX_VERSION=gfx1030\npython -c 'import torch; print(torch.cuda.is_available())'\nFalse\n",
        '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=11"\n',
        'docker run --device=/dev/kfd --device=/dev/dri -e HSA_OVERRIDE_GFX_VERSION="10.3" rocm/pytorch\n',
        "environment:\n  HSA_OVERRIDE_GFX_VERSION: 'unknown gpu'\n",
        "HSA_OVERRIDE_GFX_VERSION 1100 is invalid\n",  # libhsakmt's own pr_err
    ],
)
def test_an_override_libhsakmt_refuses_is_a_wrong_override(text: str) -> None:
    assert "env-override-wrong" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n",
        "export HSA_OVERRIDE_GFX_VERSION=$GFX\n",
        'HSA_OVERRIDE_GFX_VERSION="${HSA_OVERRIDE_GFX_VERSION:-10.3.0}"\n',
        "set HSA_OVERRIDE_GFX_VERSION=<your version> before starting\n",
        "Use HSA_OVERRIDE_GFX_VERSION with x.y.z syntax, e.g. `HSA_OVERRIDE_GFX_VERSION=10.3.0`.\n",
        'level=INFO source=routes.go:1125 msg="server config" env="map[HIP_VISIBLE_DEVICES: '
        'HSA_OVERRIDE_GFX_VERSION: OLLAMA_DEBUG:false]"\n',
        'msg="server config" env="map[HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY: HTTP_PROXY:]"\n',
    ],
)
def test_valid_unset_or_placeholder_overrides_are_left_alone(text: str) -> None:
    assert "env-override-wrong" not in codes(text)


def test_an_override_on_windows_is_not_judged_by_libhsakmts_rule() -> None:
    text = "OS: Windows 11, HIP SDK 6.2\nC:\\Users\\me> set HSA_OVERRIDE_GFX_VERSION=gfx1102\n"
    assert read_text(text).foreign_host is not None  # the rule's premise: the text shows a Windows host
    assert "env-override-wrong" not in codes(text)


# --- the module loader refusing a module built for another kernel ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I compiled it myself and `insmod: ERROR: could not insert module ./amdgpu.ko: Invalid module format`\n",
        "sudo modprobe amdgpu\nmodprobe: ERROR: could not insert 'amdgpu': Exec format error\n",
        "loading fails, dmesg says `amdkcl: disagrees about version of symbol module_layout` every time\n",
        "the log had amdgpu: version magic '6.5.0-14-generic SMP preempt mod_unload modversions ' should be "
        "'6.5.0-15-generic SMP preempt mod_unload modversions '\n",
        "after make I loaded my amdgpu.ko; journal: `mydrv: disagrees about version of symbol module_layout`\n",
    ],
)
def test_a_module_built_for_another_kernel_is_a_symbol_mismatch(text: str) -> None:
    assert "module-symbol-mismatch" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "`vboxdrv: disagrees about version of symbol module_layout` after the kernel update\n",
        "modprobe: ERROR: could not insert 'nvidia': Exec format error\n",
    ],
)
def test_another_drivers_refused_module_is_not_amdgpus(text: str) -> None:
    assert "module-symbol-mismatch" not in codes(text)


# --- Secure Boot told in words ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "With Secure Boot on, the kernel refuses to load the amdgpu-dkms module, so rocminfo finds no GPU.\n",
        "rocminfo showed nothing until I turned off Secure Boot in the firmware, which fixed it for amdgpu.\n",
        "Secure boot must be disabled for the ROCm amdgpu driver to load.\n",
        "amdgpu-dkms installed fine. Then I switched off Secure Boot. Now rocminfo works.\n",
    ],
)
def test_secure_boot_told_to_keep_amdgpu_out_is_a_rejected_signature(text: str) -> None:
    assert "module-signature-rejected" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "Secure Boot is disabled in my BIOS. rocminfo still lists only the CPU agent.\n",
        "Secure Boot blocked the nvidia driver after the update; disabling it fixed the display.\n",
        "For amdgpu-dkms I disabled Secure Boot. rocminfo still doesn't work.\n",
    ],
)
def test_secure_boot_named_without_it_refusing_amdgpu_is_left_alone(text: str) -> None:
    assert "module-signature-rejected" not in codes(text)


# --- the out-of-tree driver told not to support or build for a kernel ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Heads up: amdgpu-dkms does not support kernel 6.14 yet, stay on 6.11.\n",
        "Compiling the ROCm kernel module is not supported on kernels newer than 5.4 for this release.\n",
        "The DKMS module still won't compile for 6.9, so I pinned the old kernel.\n",
        "It failed to build during dkms autoinstall on the new kernel.\n",
        "The amdgpu-dkms package is not supported on kernel 6.16 yet.\n",
        "apt: the dkms step says kernel 6.17.0-6-generic is not supported\n",
    ],
)
def test_the_dkms_driver_said_not_to_build_for_a_kernel_is_not_built(text: str) -> None:
    assert "dkms-not-built" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "dkms status shows amdgpu installed and the kernel module builds fine.\n",
        "dkms status shows amdgpu installed; I don't build anything myself.\n",
        "Building rocBLAS from source is not supported on this distribution.\n",
        "The kernel module is loaded; HSA_XNACK is not supported on this GPU.\n",
    ],
)
def test_builds_that_are_fine_or_not_the_kernel_module_are_left_alone(text: str) -> None:
    assert "dkms-not-built" not in codes(text)


# --- /dev/kfd absent inside a container, told in words -----------------------------------------------------


def test_kfd_said_not_there_inside_a_container_is_a_missing_node() -> None:
    text = "Inside the podman container /dev/kfd is not there, only /dev/dri shows up.\n"
    assert "device-node-missing" in codes(text)


def test_kfd_said_missing_without_a_container_is_not_this_rule() -> None:
    assert "device-node-missing" not in codes("On my laptop the kfd device does not exist at all.\n")


def test_a_container_prose_beside_the_listed_node_is_left_alone() -> None:
    text = (
        "In the container /dev/kfd is not visible, I thought, but:\n"
        "$ ls -l /dev/kfd\ncrw-rw---- 1 root render 235, 0 Mar  3 10:00 /dev/kfd\n"
    )
    assert "device-node-missing" not in codes(text)


# --- an AMD GPU listed beside an NVIDIA one -----------------------------------------------------------------


def test_an_unidentified_amd_controller_beside_nvidia_is_not_no_amd_gpu() -> None:
    text = (
        "$ lspci | grep -i vga\n"
        "01:00.0 VGA compatible controller: NVIDIA Corporation TU116 [GeForce GTX 1660 SUPER] (rev a1)\n"
        "0a:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Device 7551 (rev c0)\n"
    )
    assert "no-amd-gpu" not in codes(text)


def test_nvidia_alone_is_still_no_amd_gpu() -> None:
    text = (
        "$ lspci | grep -i vga\n"
        "01:00.0 VGA compatible controller: NVIDIA Corporation TU116 [GeForce GTX 1660 SUPER] (rev a1)\n"
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    )
    assert "no-amd-gpu" in codes(text)


# --- root only, told as having to use sudo -------------------------------------------------------------------


def test_having_to_use_sudo_for_the_gpu_is_a_missing_group() -> None:
    assert "user-not-in-group" in codes("In the image we had to use sudo for every GPU job, as the user it fails.\n")


def test_having_to_use_sudo_for_something_else_is_left_alone() -> None:
    assert "user-not-in-group" not in codes("I had to use sudo to install the packages, then it finished.\n")


# --- a build for the GPU's target told as the fix (batch 8, koboldcpp#936) --------------------------------


def _codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def test_a_rebuild_for_a_target_told_as_the_fix() -> None:
    """The library had been built for another target than the one the runtime reports: the fix is a build that
    carries code for it, which says the former build carried none."""
    text = (
        "CUDA error when trying to run with hipblas\n"
        "Set AMD HSA_OVERRIDE_GFX_VERSION to 10.3.0\n"
        "When not set it will build for gfx1031. Passing `GPU_TARGETS=gfx1030` (for RX 6700 XT) to `make` solved "
        "the problem for me.\n"
    )
    (finding,) = [f for f in diagnose_text(text).findings if f.code == "userspace-target-unsupported"]
    assert "gfx1030" in finding.message
    assert any("GPU_TARGETS=gfx1030" in e for e in finding.evidence)


@pytest.mark.parametrize(
    "text",
    [
        "cmake -B build -DGGML_HIP=ON -DAMDGPU_TARGETS=gfx1100\n",  # a build instruction, no outcome
        "I rebuilt with -DAMDGPU_TARGETS=gfx1030 but it didn't fix it.\n",
        "Building with AMDGPU_TARGETS=gfx1100 fixed nothing, the crash stays.\n",
    ],
)
def test_a_build_target_without_a_told_success_says_nothing(text: str) -> None:
    assert "userspace-target-unsupported" not in _codes(text)


def test_a_build_target_told_to_work_on_the_next_line() -> None:
    text = "I ran make LLAMA_HIPBLAS=1 AMDGPU_TARGETS=gfx1100 -j16\nThat did the trick, it uses the GPU now.\n"
    assert "userspace-target-unsupported" in _codes(text)


# --- an override's value told as wrong, or changed to another value as the fix (batch 9, ACE-Step#658) -----


@pytest.mark.parametrize(
    "text",
    [
        "Wrong HSA_OVERRIDE_GFX_VERSION in start_rocm.sh crashes my desktop\nI use an RX 6700 XT.\n",
        "The HSA_OVERRIDE_GFX_VERSION in the compose file is wrong for RDNA2 cards.\n",
        "RX 6700 XT. Everything works fine after I changed the value to 10.3.0.\n",
        "I changed HSA_OVERRIDE_GFX_VERSION to 10.3.0 and it works now.\n",
    ],
)
def test_an_override_told_wrong_or_changed_as_the_fix(text: str) -> None:
    assert "env-override-wrong" in _codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "Is HSA_OVERRIDE_GFX_VERSION=10.3.0 the right value for an RX 6700 XT?\n",
        "I changed the value to 10.3.0 but it still crashes.\n",
        "You were not wrong, HSA_OVERRIDE_GFX_VERSION=11.0.0 is needed for the 780M.\n",
    ],
)
def test_an_override_neither_told_wrong_nor_changed_to_a_fix(text: str) -> None:
    assert "env-override-wrong" not in _codes(text)
