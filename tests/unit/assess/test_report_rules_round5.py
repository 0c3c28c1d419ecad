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


# --- second round (173-179): a gid without a name, an override that worked, the iGPU picked ----------------------

LS_KFD_GID = "$ kubectl exec infer-0 -- ls -l /dev/kfd\ncrw-rw---- 1 root 992 511, 0 May  3 08:00 /dev/kfd\n"


def test_a_bare_gid_on_kfd_and_a_non_root_pod_user() -> None:
    [found] = of("user-not-in-group", LS_KFD_GID + "The pod spec sets runAsUser: 1000.\n")
    assert "992" in found.remedy and "supplementalGroups" in found.remedy


def test_a_bare_gid_and_permission_denied_without_words_about_the_user() -> None:
    text = LS_KFD_GID + "$ rocminfo\nROCk module is loaded\nUnable to open /dev/kfd read-write: Permission denied\n"
    assert any("gid 992" in f.message for f in of("user-not-in-group", text))


def test_the_overflow_gid_stays_a_rootless_mapping() -> None:
    text = "crw-rw---- 1 nobody nogroup 511, 0 May  3 08:00 /dev/kfd\nrunning as non-root\n"
    assert not any("has no name here" in f.message for f in findings(text))


def test_root_in_the_container_opens_the_node_whatever_its_gid() -> None:
    assert "user-not-in-group" not in codes(LS_KFD_GID)


def test_a_world_writable_node_is_not_a_group_problem() -> None:
    text = "crw-rw-rw- 1 root 992 511, 0 May  3 08:00 /dev/kfd\nthe job runs as nobody\n"
    assert not any("has no name here" in f.message for f in findings(text))


@pytest.mark.parametrize(
    ("value", "target"), [("9.0.10", "gfx90a"), ("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("11", None)]
)
def test_override_values_name_the_target_the_runtime_reports(value: str, target: str | None) -> None:
    from kfdguard.assess.report_rules import override_target

    assert override_target(value) == target


def test_an_override_that_made_it_work_shows_the_build_lacks_the_gpu_s_target() -> None:
    text = "My card reports gfx1032.\n$ export HSA_OVERRIDE_GFX_VERSION=10.3.0\n$ python3 bench.py\nNow it works!\n"
    [found] = of("userspace-target-unsupported", text)
    assert "gfx1032" in found.message and "gfx1030" in found.message


@pytest.mark.parametrize(
    "text",
    [
        "My card reports gfx1032.\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0\nit still never worked\n",
        "It worked fine on ROCm 5.7 with my gfx1032.\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0 made it crash.\n",
        "My card reports gfx1030.\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0\nNow it works!\n",
    ],
)
def test_an_override_that_did_not_help_came_after_or_names_the_own_target(text: str) -> None:
    assert not any("made it work" in f.message for f in findings(text))


def test_the_igpu_picked_before_the_card_told_in_words() -> None:
    text = "Turns out PyTorch picks the iGPU of the 7840HS before my RX 7700S; that is why kernels fail.\n"
    [found] = of("userspace-target-unsupported", text)
    assert "HIP_VISIBLE_DEVICES" in found.remedy


@pytest.mark.parametrize(
    "text",
    ["Make sure you are not using the integrated graphics.\n", "I disabled the integrated GPU in the BIOS.\n"],
)
def test_advice_or_a_disabled_igpu_is_not_the_igpu_used(text: str) -> None:
    assert not any("integrated GPU instead" in f.message for f in findings(text))


def test_a_target_that_ends_a_sentence_is_prose_and_a_file_name_is_not() -> None:
    from kfdguard.evidence.text import read_text

    assert [g for g, _ in read_text("My card reports gfx1032.\n").prose_gfx] == ["gfx1032"]
    assert read_text("loading kernels from gfx1032.co\n").prose_gfx == []


# --- fourth round (182-185): TensorFlow's refusal of a target ------------------------------------------------------


def test_tensorflow_ignoring_a_gpu_of_a_target_it_was_not_built_for() -> None:
    line = (
        "2023-05-02 10:11:12.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:2015] Ignoring visible gpu "
        "device (device: 0, name: AMD Radeon RX 6700 XT, pci bus id: 0000:2d:00.0) with AMDGPU version : gfx1031. "
        "The supported AMDGPU versions are gfx1030, gfx900, gfx906, gfx908, gfx90a.\n"
    )
    [found] = of("userspace-target-unsupported", line)
    assert "gfx1031" in found.message
    assert any("gfx1030 gfx900" in e for e in found.evidence)  # the list, without its commas


def test_tensorflow_1_x_minimum_isa_wording() -> None:
    line = (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1605] Ignoring visible gpu device (device: 0, name: "
        "Carrizo, pci bus id: 0000:00:01.0) with AMDGPU ISA gfx801. The minimum required AMDGPU ISA is gfx803.\n"
    )
    assert "userspace-target-unsupported" in codes(line)


def test_a_target_run_together_in_the_program_s_own_list_is_named_as_the_list_s_fault() -> None:
    line = (
        "Ignoring visible gpu device (device: 0, name: Radeon PRO W7900, pci bus id: 0000:43:00.0) with AMDGPU "
        "version : gfx1100. The supported AMDGPU versions are gfx1030gfx1100, gfx900, gfx90a.\n"
    )
    [found] = of("userspace-target-unsupported", line)
    assert "'gfx1030gfx1100'" in found.message and "refuses gfx1100" in found.message


def test_a_supported_list_that_names_the_target_alone_is_no_glued_list() -> None:
    line = (
        "Ignoring visible gpu device (device: 0, name: X, pci bus id: 0000:43:00.0) with AMDGPU version : gfx1101. "
        "The supported AMDGPU versions are gfx1100, gfx1030, gfx90a.\n"
    )
    [found] = of("userspace-target-unsupported", line)
    assert "run together" not in found.message


def test_a_target_with_its_features_in_the_list_is_not_glued() -> None:
    text = 'msg="amdgpu is not supported (supported types:[gfx1030 gfx90a:xnack- gfx942])" gpu_type=gfx90a gpu=0\n'
    assert not any("run together" in f.message for f in findings(text))


# --- fifth round (186-187): amdgpu's init failure quoted, and BARs without space ----------------------------------


def test_a_quoted_probe_failure_with_enomem_and_a_bar_without_space() -> None:
    text = (
        "After moving the card to the lower slot, dmesg says `amdgpu 0000:0a:00.0: probe with driver amdgpu failed "
        "with error -12` and also:\n"
        "pci 0000:0a:00.0: BAR 0 [mem size 0x800000000 64bit pref]: can't assign; no space\n"
    )
    [found] = of("gpu-init-failed", text)
    assert "Above 4G Decoding" in found.remedy
    assert any("can't assign; no space" in e for e in found.evidence)


def test_a_fatal_init_error_told_in_a_title_without_enomem() -> None:
    [found] = of("gpu-init-failed", "Title: amdgpu: Fatal error -5 during GPU init after the update\n")
    assert "error -5" in found.message and "Above 4G" not in found.remedy


def test_another_driver_s_probe_failure_is_not_amdgpu_s() -> None:
    text = "nvme 0000:01:00.0: probe with driver nvme failed with error -12\n"
    assert "gpu-init-failed" not in codes(text)


def test_rock_not_loaded_quoted_beside_amd_s_wsl_rocminfo_is_not_this_host_s() -> None:
    text = (
        "$ rocminfo\nWSL environment detected.\n(agents follow)\nOn bare metal Linux the same card said: "
        "ROCk module is NOT loaded, possibly no GPU devices\nRadeon RX 7900 XTX under WSL2.\n"
    )
    assert not any("ROCk module is NOT loaded" in e for f in findings(text) for e in f.evidence)


def test_an_igpu_that_drives_the_screens_is_a_setup_not_the_cause() -> None:
    text = "I am using the integrated graphics for the desktop and the RX 6800 for compute.\n"
    assert not any("integrated GPU instead" in f.message for f in findings(text))
