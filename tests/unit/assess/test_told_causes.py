"""Causes told around the pasted lines (assess/app_rules.py, last section): an override that never reached
the program, ROCm under WSL, a machine or VM with no AMD GPU, an amdgpu-dkms that does not build, a GPU
named only by an old retail name or an APU code name, a program that runs on the CPU, the group that owns
/dev/kfd named in prose.

Each text is written from the cause, in words, programs and GPUs that the corpus files 087-101 (whose
misses these rules answer) do not use, beside the near misses each rule must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge import identify
from kfdguard.knowledge.appformats import CODENAMES, codename_targets, old_radeon_devices
from kfdguard.knowledge.asics import ASICS


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def headline(text: str) -> str:
    return diagnose_text(text).findings[0].code


# --- an override that does not reach the program -----------------------------------------------------------

OLLAMA_CONFIG_UNSET = (
    'Mar 03 09:12:01 box ollama[812]: 2025/03/03 09:12:01 routes.go:1205: INFO server config env="map['
    "CUDA_VISIBLE_DEVICES: GPU_DEVICE_ORDINAL: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY: "
    'OLLAMA_DEBUG:false]"'
)


def test_a_unit_override_absent_from_ollamas_own_config_map() -> None:
    text = (
        "I put Environment=HSA_OVERRIDE_GFX_VERSION=10.3.2 in /etc/systemd/system/ollama.service.d/gpu.conf\n"
        + OLLAMA_CONFIG_UNSET
    )
    assert "env-override-not-applied" in codes(text)


def test_ollamas_not_supported_line_proves_the_override_was_unset() -> None:
    text = (
        "docker run -e HSA_OVERRIDE_GFX_VERSION=10.3.0 ollama/ollama:rocm (then I restarted from the GUI)\n"
        'time=2025-05-01T10:00:00Z level=WARN source=amd_linux.go:378 msg="amdgpu is not supported '
        '(supported types:[gfx1030 gfx1100])" gpu_type=gfx1031 gpu=0 library=/usr/lib/ollama\n'
    )
    assert {"env-override-not-applied", "userspace-target-unsupported"} <= codes(text)


def test_an_override_ollama_honoured_is_not_reported_missing() -> None:
    text = (
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
        'time=2025-05-01T10:00:00Z level=INFO source=amd_linux.go:391 msg="skipping rocm gfx compatibility '
        'check" HSA_OVERRIDE_GFX_VERSION=10.3.0\n'
    )
    assert "env-override-not-applied" not in codes(text)


def test_a_profile_override_for_a_service() -> None:
    text = (
        "I added export HSA_OVERRIDE_GFX_VERSION=10.3.0 to ~/.profile and rebooted.\n"
        "$ systemctl status ollama\n"
        "   Active: active (running)\n"
    )
    assert "env-override-not-applied" in codes(text)


def test_a_profile_override_for_a_program_run_in_a_terminal_is_fine() -> None:
    text = "I added export HSA_OVERRIDE_GFX_VERSION=10.3.0 to ~/.zshrc and run koboldcpp from that shell.\n"
    assert "env-override-not-applied" not in codes(text)


# --- ROCm under WSL ---------------------------------------------------------------------------------------

WSL_FAILURE = (
    "WSL environment detected.\n"
    "hsa api call failure at: /build/rocminfo/rocminfo.cc:1320\n"
    "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
)


def test_rocminfo_under_wsl_failing_is_the_wsl_stack_not_kfd() -> None:
    found = codes("my RX 7900 GRE, ROCm 6.3 in Ubuntu 24.04 on Windows\n" + WSL_FAILURE)
    assert "host-without-kfd" in found
    assert not found & {"user-not-in-group", "device-permissions", "module-not-loaded"}


def test_the_wsl_runtime_refusing_the_gpu_comes_first() -> None:
    text = "ROCR: unsupported GPU\nhsa api call failure at: ./sources/wsl/tools/rocminfo/rocminfo.cc:1087\n"
    text += "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES\nGPU: Radeon RX 6650 XT\n"
    assert headline(text) == "userspace-target-unsupported"
    assert "host-without-kfd" in codes(text)


def test_an_out_of_resources_on_linux_is_not_called_wsl() -> None:
    text = "hsa api call failure at: /src/rocminfo/rocminfo.cc:1142\nCall returned HSA_STATUS_ERROR_OUT_OF_RESOURCES\n"
    assert "host-without-kfd" not in codes(text)


# --- no AMD GPU -------------------------------------------------------------------------------------------


def test_a_qemu_guest_without_the_gpu_passed_in() -> None:
    text = (
        "$ lspci\n"
        "00:00.0 Host bridge: Intel Corporation 82G33/G31/P35/P31 Express DRAM Controller\n"
        "00:01.0 VGA compatible controller: Red Hat, Inc. Virtio 1.0 GPU (rev 01)\n"
        "$ rocminfo\n"
        "ROCk module is NOT loaded, possibly no GPU devices\n"
    )
    findings = diagnose_text(text).findings
    assert [f.code for f in findings] == ["no-amd-gpu"]
    assert "virtual machine" in findings[0].message


def test_an_intel_only_listing() -> None:
    text = (
        "00:02.0 VGA compatible controller [0300]: Intel Corporation Alder Lake-P GT2 [Iris Xe Graphics] [8086:46a6]\n"
    )
    assert "no-amd-gpu" in codes(text)


def test_a_listing_with_an_amd_gpu_pci_ids_does_not_name_is_not_no_gpu() -> None:
    text = (
        "00:02.0 VGA compatible controller: Intel Corporation UHD Graphics 630\n"
        "03:00.0 Display controller: Advanced Micro Devices, Inc. [AMD/ATI] Device 7551 (rev c0)\n"
    )
    assert "no-amd-gpu" not in codes(text)


def test_prose_that_says_there_is_no_amd_gpu() -> None:
    assert "no-amd-gpu" in codes("The CI runner doesn't have an AMD GPU; hipcc hangs after rocminfo fails.\n")
    assert "no-amd-gpu" not in codes("The CI runner has an AMD GPU, an RX 6800, and hipcc hangs.\n")


# --- the out-of-tree driver does not build ---------------------------------------------------------------


def test_rock_dkms_that_wont_build_told_in_prose() -> None:
    found = codes("After the Fedora update rock-dkms won't build any more for 6.5.6, so no ROCm.\n")
    assert "dkms-not-built" in found


def test_dpkg_could_not_configure_the_dkms_package() -> None:
    text = "Errors were encountered while processing:\n amdgpu-dkms\n amdgpu\nE: Sub-process /usr/bin/dpkg returned an error code (1)\n"
    assert "dkms-not-built" in codes(text)


def test_an_installed_dkms_package_is_not_a_failure() -> None:
    assert "dkms-not-built" not in codes("I installed amdgpu-dkms and rebooted; dkms status says installed.\n")


# --- GPUs named in prose ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("prose", "device_family"), [("radeon hd 7970", "Tahiti"), ("an r9 270x", "Pitcairn")])
def test_old_retail_names_map_to_their_chip(prose: str, device_family: str) -> None:
    [(_token, device)] = old_radeon_devices(prose.lower())
    asic, _ = identify(device)
    assert asic is not None and asic.family.startswith(device_family)


def test_a_gcn1_card_named_in_prose_is_not_supported_by_kfd() -> None:
    found = codes("Can I run Stable Diffusion on my Radeon HD 7970? It only uses the CPU.\n")
    assert "asic-not-supported" in found
    assert "device-permissions" not in found


@pytest.mark.parametrize(
    ("prose", "device_family"),
    [
        ("radeon hd 8690m", "Hainan"),
        ("my r5 m330 laptop", "Hainan"),
        ("radeon hd 7970m", "Pitcairn"),
        ("the card is amd firepro m6100", "Bonaire"),  # batch 9 (ROCm#1279): a workstation part
        ("firepro w7000", "Pitcairn"),
    ],
)
def test_mobile_retail_names_map_to_their_chip(prose: str, device_family: str) -> None:
    """Mobile parts carry a letter (HD 8690M, R5 M330), which pci.ids writes the same way."""
    [(_token, device)] = old_radeon_devices(prose.lower())
    asic, _ = identify(device)
    assert asic is not None and asic.family.startswith(device_family)


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("Does it support the following GPU: Sun XT\nrocminfo: Call returned 4104\n", "Hainan"),
        ("My Tahiti XT card only gives me hsa api call failure in rocminfo.\n", "Tahiti"),
        ("Is the Oland chip supported by ROCm? rocminfo fails.\n", "Oland"),
        ("lspci says Cape Verde PRO; is ROCm possible?\n", "Cape Verde"),
    ],
)
def test_a_chip_kfd_never_supported_named_by_its_code_name(text: str, family: str) -> None:
    """Batch 8 (ROCm#528): the GPU named by the chip name pci.ids gives it (Sun XT, a Hainan) and nothing else."""
    (finding,) = [f for f in diagnose_text(text).findings if f.code == "asic-not-supported"]
    assert family in finding.message


@pytest.mark.parametrize(
    "text",
    [
        "The sun XT model is fine.\n",  # not the chip's spelling
        "On Mars the rover runs ROCm.\n",  # a one-word chip name that is also a word
        "Our Neptune cluster has MI250X nodes and ROCm 6.2.\n",
    ],
)
def test_words_that_happen_to_be_chip_names_are_not_gpus(text: str) -> None:
    assert "asic-not-supported" not in codes(text)


def test_a_card_kfd_supports_is_not_called_unsupported_by_name() -> None:
    assert "asic-not-supported" not in codes("My R9 290 runs OpenCL fine but PyTorch crashes.\n")


def test_every_code_name_names_an_asic_of_that_target() -> None:
    for name, gfx in CODENAMES:
        assert any(
            a.gfx == gfx and (name.lower() in a.family.lower() or name.lower() in a.note.lower()) for a in ASICS
        ), name


def test_an_apu_named_beside_a_supported_card() -> None:
    text = (
        "The RX 7900 XTX works. The Raphael iGPU is unfortunately not supported, ollama skips it.\n"
        "0d:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Raphael (rev c1)\n"
    )
    assert codename_targets(text)[0][0] == "gfx1036"
    assert "userspace-target-unsupported" in codes(text)


def test_a_program_on_the_cpu_with_a_gpu_rocm_ships_no_code_for() -> None:
    assert "userspace-target-unsupported" in codes("koboldcpp keeps running on the CPU with my RX 6600.\n")
    assert "userspace-target-unsupported" not in codes("koboldcpp keeps running on the CPU with my RX 7900 XTX.\n")


# --- who owns /dev/kfd, in prose -------------------------------------------------------------------------


def test_the_node_owned_by_render_while_the_setup_uses_video() -> None:
    text = "Here /dev/kfd is owned by group render; the install guide I followed only set up the video group.\n"
    assert "user-not-in-group" in codes(text)
    assert "device-permissions" not in codes(text)


def test_root_only_while_already_in_render_is_the_nodes_mode() -> None:
    text = "rocminfo works with sudo but not as me, and I am already in the render group.\n"
    found = codes(text)
    assert "device-permissions" in found
    assert "user-not-in-group" not in found


def test_wsl_runtime_up_with_only_a_cpu_agent() -> None:
    text = (
        "WSL environment detected.\n"
        "==========\nHSA Agents\n==========\n*******\nAgent 1\n*******\n"
        "  Name:                    Intel(R) Core(TM) i7-12700K\n"
        "  Device Type:             CPU\n"
        "my card is an RX 6650 XT\n"
    )
    findings = diagnose_text(text).findings
    assert findings[0].code == "userspace-target-unsupported"
    assert "WSL" in findings[0].message


def test_wsl_named_in_prose_with_a_gpu_that_is_not_seen() -> None:
    found = codes("Under WSL2 my Radeon RX 7600 is not detected by PyTorch, on Windows 11 it works in games.\n")
    assert "userspace-target-unsupported" in found
    assert not found & {"kernel-too-old", "user-not-in-group"}


def test_a_gpu_not_seen_on_linux_is_not_called_a_wsl_matter() -> None:
    found = diagnose_text("On Fedora 40 my Radeon RX 7600 is not detected by PyTorch.\n").findings
    assert not [f for f in found if "WSL" in f.message]


# --- the out-of-tree driver's build failing, in more shapes (batches 11 and 12) ------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Unable to build rock dkms for custom kernel\n",  # ROCm#1601's title: the verb first
        "I could not build amdgpu-dkms for 6.8, gcc stops with an error.\n",
        # dkms's apport hook, printed when a build failed for a kernel the distribution did not ship (ROCm#2840)
        "`ERROR (dkms apport): kernel package linux-headers-6.2.0-060200-generic is not supported`\n",
        # a kernel downgrade told as the fix in a text about the DKMS driver (ROCm#753)
        "sudo apt install rocm-dkms, no /dev/kfd.\nThe supported kernels are 4.13 - 4.15, so I downgraded to 4.15. "
        "Now it works.\n",
    ],
)
def test_the_dkms_build_failing_told_in_more_shapes(text: str) -> None:
    assert "dkms-not-built" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "I was able to build amdgpu-dkms for 6.8 without problems.\n",
        "I downgraded to 6.5 but it still does not work. rocm-dkms is installed.\n",
        "I downgraded to ROCm 5.7 and now it works.\n",  # ROCm's userspace, not the kernel
        "rocm-dkms is installed. I downgraded to 5.7 and now it works.\n",  # a release, not said to be a kernel
    ],
)
def test_a_dkms_build_that_did_not_fail_is_not_told_failing(text: str) -> None:
    assert "dkms-not-built" not in codes(text)


# --- support denied for a kind of GPU, without a determiner (batch 13, ROCm#1527) -------------------------


@pytest.mark.parametrize(
    "denial",
    ["ROCm does not support integrated GPUs and so things might not work.", "ROCm doesn't support APUs officially."],
)
def test_support_denied_for_a_kind_of_gpu_beside_an_apu_named_by_its_processor(denial: str) -> None:
    text = f"My laptop has an AMD Ryzen 7 4800U with integrated Radeon graphics; HIP's square sample hangs.\n{denial}\n"
    assert "userspace-target-unsupported" in codes(text)


def test_support_of_a_kind_of_gpu_affirmed_is_no_denial() -> None:
    text = "My laptop has an AMD Ryzen 7 4800U; HIP's square sample hangs.\nROCm does support integrated GPUs now.\n"
    assert "userspace-target-unsupported" not in codes(text)


# --- Radeon Pro names, by the chip pci.ids gives them (batch 13, ROCm#107) ---------------------------------


@pytest.mark.parametrize(
    ("line", "gfx"),
    [
        ("Graphics: Radeon Pro WX 7100", "gfx803"),
        ("an AMD Radeon PRO WX3200 in a ZBook", "gfx803"),
        ("Radeon Pro W5700", "gfx1010"),
        ("Radeon Pro WX 9100", "gfx900"),
    ],
)
def test_a_radeon_pro_name_maps_to_its_chip(line: str, gfx: str) -> None:
    from kfdguard.evidence.text import read_text

    assert [g for g, _ in read_text(f"{line}\n").prose_gfx] == [gfx]


def test_a_radeon_pro_card_on_a_kernel_before_its_kfd() -> None:
    text = (
        "Graphics: Radeon Pro WX 7100\n$ uname -a\nLinux box 4.8.0-46-generic #49~16.04.1-Ubuntu SMP x86_64 GNU/Linux\n"
    )
    assert "kernel-too-old" in codes(text)


@pytest.mark.parametrize("line", ["The pro version 2 works.", "Surface Pro 7 with an eGPU"])
def test_other_pro_words_name_no_gpu(line: str) -> None:
    from kfdguard.evidence.text import read_text

    assert read_text(f"{line}\n").prose_gfx == []


@pytest.mark.parametrize(
    "denial",
    ["We are not officially supporting Navi series of cards.", "AMD isn't supporting consumer GPUs yet."],
)
def test_support_denied_in_the_progressive(denial: str) -> None:
    """Batch 13 (ROCm#1335): AMD's answer in the progressive, beside an RX 5600 XT on ROCm 3.10."""
    text = f"RX 5600 XT on Ubuntu 20.04, ROCm 3.10.0; clinfo hangs.\n{denial}\n"
    assert "userspace-target-unsupported" in codes(text)


def test_support_affirmed_in_the_progressive_is_no_denial() -> None:
    text = "RX 6800 XT on Ubuntu 22.04; clinfo hangs.\nWe are now supporting Navi series of cards.\n"
    assert "userspace-target-unsupported" not in codes(text)


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("Installed ROCm from the repositories, version 3.10.0 as per documentation.", True),
        ("ROCm runs on kernel version 5.15 here.", False),  # the kernel's version, not ROCm's
        ("ROCm needs Python version 3.10.", False),
    ],
)
def test_a_rocm_release_told_later_in_its_clause(line: str, shown: bool) -> None:
    """Batch 13 (ROCm#1335): the release after the name, as "version X" later in the same clause."""
    text = f"RX 5600 XT, gfx1010, not supported says AMD.\n{line}\n"
    found = diagnose_text(text).findings
    assert any("3.10" in f.message for f in found) is shown
