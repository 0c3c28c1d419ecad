"""Rules written for the fifth round of unseen reports (corpus files 160-172), each from a program's format or a
cause, tested on texts in other words, versions and GPUs than those files, beside the near misses each must leave
alone: device enumerators' target lists (rocm_agent_enumerator, amdgpu-arch, offload-arch), rocm-smi's per-device
lines, a container started with the video group only, rocminfo's "ROCk module is NOT loaded" under WSL, DKMS said
to fail before the module is named, and a missing group told without its verb.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Finding


def findings(text: str) -> list[Finding]:
    return list(diagnose_text(text).findings)


def codes(text: str) -> set[str]:
    return {f.code for f in findings(text)}


def of(code: str, text: str) -> list[Finding]:
    return [f for f in findings(text) if f.code == code]


# --- device enumerators ----------------------------------------------------------------------------------------


def test_an_apu_target_listed_by_rocm_agent_enumerator_has_no_prebuilt_code() -> None:
    text = "$ /opt/rocm/bin/rocm_agent_enumerator\ngfx000\ngfx90c\ngfx1030\n"
    [found] = of("userspace-target-unsupported", text)
    assert "gfx90c" in found.message
    assert "gfx1030" in found.remedy  # the supported card beside it is the one to keep


def test_offload_arch_with_only_an_igpu_named_beside_a_card_in_prose() -> None:
    text = "My RX 6600 never gets used. offload-arch says:\n\ngfx1036\n"
    [found] = of("userspace-target-unsupported", text)
    assert "gfx1036" in found.message


def test_an_enumerator_listing_supported_targets_only_is_not_a_finding() -> None:
    assert "userspace-target-unsupported" not in codes("$ amdgpu-arch\ngfx1100\ngfx1100\n")


def test_a_bare_target_line_without_an_enumerator_is_not_read_as_its_output() -> None:
    # Prose that puts a target on a line of its own is not a device list.
    assert "userspace-target-unsupported" not in codes("The card I bought is:\ngfx1100\nand the APU:\ngfx1036\n")


# --- rocm-smi's per-device lines --------------------------------------------------------------------------------

SMI_PRODUCT = (
    "$ rocm-smi --showproductname\n\n"
    "============================ ROCm System Management Interface ============================\n"
    "====================================== Product Info ======================================\n"
    "GPU[0]\t\t: Card Series: \t\tAMD Instinct MI210\n"
    "GPU[0]\t\t: GFX Version: \t\tgfx90a\n"
    "GPU[1]\t\t: Card Series: \t\tAMD Instinct MI210\n"
    "GPU[1]\t\t: GFX Version: \t\tgfx90a\n"
    "==========================================================================================\n"
    "================================== End of ROCm SMI Log ===================================\n"
)


def test_rocm_smi_per_device_lines_count_the_gpus_amdgpu_drives() -> None:
    [found] = of("gpu-driver-ready", SMI_PRODUCT)
    assert "2 GPU" in found.message


def test_rocm_smi_error_lines_still_name_a_card() -> None:
    text = (
        "========================= ROCm System Management Interface =========================\n"
        "ERROR: GPU[3]\t: sclk clock is unsupported\n"
        "========================= End of ROCm SMI Log ==============================\n"
    )
    assert "gpu-driver-ready" in codes(text)


def test_gpu_index_lines_of_another_program_are_not_rocm_smi() -> None:
    assert "gpu-driver-ready" not in codes("trainer: GPU[0]: loss 0.12\ntrainer: GPU[1]: loss 0.13\n")


# --- a container with the video group only ----------------------------------------------------------------------

LS_KFD = "$ ls -l /dev/kfd\ncrw-rw---- 1 root render 235, 0 Mar  2 09:14 /dev/kfd\n"


def test_a_run_command_with_video_only_where_kfd_is_render_s() -> None:
    text = (
        "$ docker run -it --device=/dev/kfd --device=/dev/dri --group-add video rocm/dev-ubuntu-24.04 bash\n" + LS_KFD
    )
    [found] = of("user-not-in-group", text)
    assert "--group-add video but not render" in found.message


def test_prose_that_only_video_is_added_and_a_render_node_owned_by_render() -> None:
    text = (
        "Our compose setup passes the devices but just uses --group-add=video; the render node "
        "/dev/dri/renderD129 is owned by group render on these hosts.\n"
    )
    assert any("--group-add video" in f.message for f in of("user-not-in-group", text))


@pytest.mark.parametrize(
    "groups",
    ["--group-add video --group-add render", "--group-add video --group-add 992", "--group-add keep-groups"],
)
def test_render_a_gid_or_kept_groups_leave_the_rule_quiet(groups: str) -> None:
    text = f"$ podman run --rm --device /dev/kfd {groups} rocm/pytorch python3 t.py\n" + LS_KFD
    assert not any("--group-add video but not render" in f.message for f in findings(text))


def test_advice_to_add_render_is_not_the_command_that_ran() -> None:
    text = "Try adding --group-add render next to --group-add video.\n" + LS_KFD
    assert not any("--group-add video but not render" in f.message for f in findings(text))


# --- rocminfo's "ROCk module is NOT loaded" under WSL -----------------------------------------------------------

ROCK_NOT_LOADED = "$ rocminfo\nROCk module is NOT loaded, possibly no GPU devices\n"


def test_rock_not_loaded_inside_wsl_is_a_host_without_kfd() -> None:
    text = "Ubuntu 22.04 inside WSL2, Radeon RX 7900 GRE.\n" + ROCK_NOT_LOADED
    found = codes(text)
    assert "host-without-kfd" in found
    assert "module-not-loaded" not in found


def test_rock_not_loaded_on_linux_stays_a_module_not_loaded() -> None:
    text = "01:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [1002:744c]\n"
    assert "module-not-loaded" in codes(text + ROCK_NOT_LOADED)


def test_a_windows_version_alone_may_be_a_dual_boot() -> None:
    text = "I also have Windows 11 on the other disk. Radeon RX 7600 here.\n" + ROCK_NOT_LOADED
    assert "host-without-kfd" not in codes(text)


# --- DKMS said to fail before the module is named ---------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Since the upgrade the DKMS fails with kernel 6.14.2 on my amdgpu box.",
        "amdgpu: dkms failed for the running kernel after the upgrade",
        "With the 6.19 kernel, dkms fails to build; the Radeon amdgpu package stays unconfigured.",
    ],
)
def test_dkms_told_to_fail_in_a_text_about_amdgpu(said: str) -> None:
    assert "dkms-not-built" in codes(said + "\n")


def test_another_vendor_s_dkms_failing_is_not_amdgpu_s() -> None:
    assert "dkms-not-built" not in codes("nvidia: DKMS failed for kernel 6.8.0-45-generic\n")


# --- a missing group told without its verb ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Root cause: the `jenkins` user not in the `video` group, so /dev/kfd could not be opened.",
        "my account not a member of render group, that was it",
        'alice is not member of "render" group, the default DRM access group.',
    ],
)
def test_not_in_group_without_is_or_was(said: str) -> None:
    assert "user-not-in-group" in codes(said + "\n")


def test_a_user_in_the_group_is_not_told_missing() -> None:
    assert "user-not-in-group" not in codes("The user is in the render group and rocminfo lists the GPU.\n")
