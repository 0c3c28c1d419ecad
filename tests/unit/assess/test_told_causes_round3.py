"""Causes told around the pasted lines, third round (assess/app_rules.py, last rules; evidence/text.py's prose
targets; knowledge/appformats.py's rows): PCIe atomics told in words, a kfd udev rule that was what it took,
an override told in prose that ollama's config map shows empty, ROCm working with --no-dkms, a GPU family or a
bare gfx target said to be unsupported, rocBLAS's message with a Windows path, rocminfo's ISA lines.

Each text is written from the cause, in words, programs and GPUs that the corpus files 110-126 (whose misses
these rules answer) do not use, beside the near misses each rule must leave alone.
"""

from __future__ import annotations

from kfdguard.assess.order import headline as root_cause
from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge.appformats import FORMATS


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def headline(text: str) -> str:
    found = root_cause(diagnose_text(text).findings)
    assert found is not None
    return found.code


# --- PCIe atomics told in words -------------------------------------------------------------------------------


def test_a_board_said_to_lack_atomics_is_the_cause_before_the_cpu_only_agent_list() -> None:
    text = (
        "My old X79 board has no PCIe atomics, I found out after hours.\n"
        "==========\nHSA Agents\n==========\n*******\nAgent 1\n*******\n"
        "  Name:                    Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz\n  Device Type:             CPU\n"
    )
    assert headline(text) == "pcie-atomics"


def test_a_hypervisor_that_does_not_expose_atomics_keeps_the_guest_from_being_called_gpu_less() -> None:
    text = (
        "Proxmox guest, the R9 Nano is passed through with hostpci0. Looks like QEMU does not expose atomic ops "
        "without a root port.\n"
        "00:01.0 VGA compatible controller: Device 1234:1111 (rev 02) QEMU\n"
    )
    found = codes(text)
    assert "pcie-atomics" in found
    assert "no-amd-gpu" not in found


def test_atomics_named_without_saying_they_are_missing_is_not_a_finding() -> None:
    text = "I checked lspci -vvv and AtomicOpsCap: 32bit+ 64bit+ is there on the root port, still nothing.\n"
    assert "pcie-atomics" not in codes(text)


def test_a_vm_listing_without_passthrough_words_still_means_no_amd_gpu() -> None:
    text = "00:02.0 VGA compatible controller: Red Hat, Inc. Virtio GPU (rev 01)\nrocminfo fails in my VM\n"
    assert "no-amd-gpu" in codes(text)


# --- a udev rule for kfd -------------------------------------------------------------------------------------


def test_a_kfd_udev_rule_that_fixed_it_is_a_permissions_cause() -> None:
    text = (
        "Gentoo, own kernel config, rocminfo only worked under sudo. Creating this rule fixed it:\n"
        'KERNEL=="kfd", MODE="0660", GROUP="render"\n'
    )
    assert "device-permissions" in codes(text)


def test_udev_rules_said_to_be_missing_is_a_permissions_cause() -> None:
    text = "With the mainline kernel from kernel.org there is no udev rule for /dev/kfd, so it stays 0600.\n"
    assert "device-permissions" in codes(text)


def test_a_kfd_udev_rule_that_did_not_help_is_not_the_cause() -> None:
    text = (
        "I've tried adding\n"
        'SUBSYSTEM=="kfd", KERNEL=="kfd", TAG+="uaccess", GROUP="video"\n'
        "to my configuration but that doesn't seem to help, it was not fixed by that either.\n"
    )
    assert "device-permissions" not in codes(text)


# --- an override told in prose, absent from ollama's own config map -------------------------------------------


OLLAMA_CONFIG_UNSET = (
    'time=2025-01-09T11:02:03.000+01:00 level=INFO source=routes.go:1259 msg="server config" env="map['
    "CUDA_VISIBLE_DEVICES: GPU_DEVICE_ORDINAL: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_PROXY: "
    'OLLAMA_DEBUG:false]"'
)


def test_an_override_said_to_be_exported_but_empty_in_the_server_config() -> None:
    text = "I exported the override in my shell and restarted the service, still CPU.\n" + OLLAMA_CONFIG_UNSET
    assert "env-override-not-applied" in codes(text)


def test_the_word_override_alone_beside_an_empty_config_map_is_not_enough() -> None:
    text = "Do I need some override for a 6800 XT? It runs on the CPU.\n" + OLLAMA_CONFIG_UNSET
    assert "env-override-not-applied" not in codes(text)


# --- --no-dkms works ----------------------------------------------------------------------------------------


def test_rocm_working_only_with_no_dkms_is_a_dkms_build_failure() -> None:
    text = (
        "Fedora 42 with kernel 6.15: amdgpu-install --usecase=rocm breaks during setup, but everything works "
        "after reinstalling with --no-dkms.\n"
    )
    assert "dkms-not-built" in codes(text)


def test_no_dkms_named_as_a_plan_is_not_a_failure() -> None:
    text = "Next I want to try amdgpu-install --usecase=rocm --no-dkms on the new box.\n"
    assert "dkms-not-built" not in codes(text)


def test_a_dkms_package_file_name_that_fails_to_build() -> None:
    text = "amdgpu-dkms_6.10.5.60300-2084815.24.04_all.deb fails to build on my 6.13 kernel\n"
    assert "dkms-not-built" in codes(text)


# --- a GPU family or a bare gfx target said to be unsupported --------------------------------------------------


def test_a_family_said_to_be_dropped_with_its_target_named_elsewhere() -> None:
    text = "Somebody on the forum said Fiji is no longer supported since 4.5.\nThe card is a gfx803 in my notes.\n"
    assert "userspace-target-unsupported" in codes(text)


def test_a_bare_target_in_prose_that_rocm_does_not_support() -> None:
    text = "The HIP SDK does not officially support my GPU (gfx1035), ollama falls back to CPU.\n"
    assert "userspace-target-unsupported" in codes(text)


def test_a_list_of_targets_in_prose_is_not_the_gpu() -> None:
    # Several targets on one line are a program's list, not the GPU in question: nothing is said unsupported
    # of a GPU the text names.
    text = "This build supports gfx1030 gfx1100 gfx1101 only; is my card not supported?\n"
    assert "userspace-target-unsupported" not in codes(text)


def test_a_supported_target_said_to_be_unsupported_is_not_reported() -> None:
    text = "Is gfx1100 not supported anymore? rocminfo hangs.\n"
    assert "userspace-target-unsupported" not in codes(text)


# --- formats ---------------------------------------------------------------------------------------------------


def test_rocblas_message_with_a_windows_path_names_the_target() -> None:
    text = (
        "rocBLAS error: Cannot read C:\\Program Files\\AMD\\ROCm\\5.7\\bin\\/rocblas/library/TensileLibrary.dat: "
        "No such file or directory for GPU arch : gfx1031\n"
    )
    assert "userspace-target-unsupported" in codes(text)


def test_rocminfo_isa_lines_grepped_out_show_a_working_gpu() -> None:
    text = "$ rocminfo | grep -i name\n  Name:                    amdgcn-amd-amdhsa--gfx1100\n"
    assert "kfd-ready" in codes(text)


def test_a_missing_code_object_list_of_isas_is_not_a_working_gpu() -> None:
    text = (
        ":1:hip_fatbin.cpp           :125 : 3169198445 us: [pid:9111  tid:0x79a4] Missing CO for these ISAs - \n"
        ":1:hip_fatbin.cpp           :128 : 3169198446 us: [pid:9111  tid:0x79a4]      amdgcn-amd-amdhsa--gfx1036\n"
    )
    assert "kfd-ready" not in codes(text)


def test_the_new_format_rows_match_their_examples() -> None:
    import re

    for row in FORMATS:
        if row.id in ("rocminfo-isa", "rocblas-no-library"):
            assert re.search(row.pattern, row.example), row.id


# --- written after the five files 127-131, which the rules above got wrong ------------------------------------


def test_root_in_markdown_bold_is_still_root() -> None:
    text = (
        "rocminfo\nROCk module is loaded\nalice is member of video group\n"
        "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n"
        "With __sudo__ it works fine.\n"
    )
    assert "user-not-in-group" in codes(text)


def test_prose_that_the_driver_does_not_compile_for_the_new_kernel() -> None:
    text = "After the upgrade to 5.9 the rock driver does not compile anymore, clinfo shows 0 platforms.\n"
    assert "dkms-not-built" in codes(text)


def test_building_rocm_userspace_from_source_is_not_a_dkms_failure() -> None:
    text = "I tried to build rocBLAS from source for gfx1031 but rocm won't build with gcc 13.\n"
    assert "dkms-not-built" not in codes(text)


def test_makes_error_line_for_the_dkms_tree() -> None:
    text = "make[1]: *** [/var/lib/dkms/amdgpu/6.3.6-1718217.22.04/build/amd/amdgpu/Makefile:12: x.o] Error 1\n"
    assert "dkms-not-built" in codes(text)


def test_dkms_skipping_amdgpu_for_missing_headers() -> None:
    text = (
        "Loading new amdgpu-6.7.0-1781449.22.04 DKMS files...\nBuilding for 6.8.0-45-generic\n"
        "Module build for kernel 6.8.0-45-generic was skipped since the\n"
        "kernel headers for this kernel does not seem to be installed.\n"
    )
    assert "dkms-not-built" in codes(text)


def test_dkms_skipping_another_module_says_nothing_about_amdgpu() -> None:
    text = (
        "Loading new realtek-r8125-9.009.02 DKMS files...\n"
        "Module build for kernel 5.15.39-3-pve was skipped since the\n"
        "kernel headers for this kernel does not seem to be installed.\n"
    )
    assert "dkms-not-built" not in codes(text)


def test_amd_smi_denied_node_names_its_group() -> None:
    text = "$ amd-smi list\n  - /dev/dri/card1: Permission denied; owner=root(0):render(992);\n"
    found = diagnose_text(text).findings
    assert any(f.code == "user-not-in-group" and "'render'" in f.message for f in found)


def test_amd_smi_group_warning_beside_a_working_table_is_only_a_warning() -> None:
    text = (
        "WARNING: User is missing the following required groups: render. Please add user to these groups.\n"
        "GPU  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%  MEM_CLOCK\n  0  140 W   39 °C   33 °C   204 MHz\n"
    )
    found = [f for f in diagnose_text(text).findings if f.code == "user-not-in-group"]
    assert found
    assert found[0].severity.name == "WARNING"


def test_old_rocblas_unreadable_library_for_a_gpu_without_prebuilt_code() -> None:
    text = (
        "Radeon RX 6700 XT here.\n"
        "rocBLAS error: Cannot read /opt/rocm-5.4.0/lib/rocblas/library/TensileLibrary.dat: No such file or directory\n"
    )
    assert "userspace-target-unsupported" in codes(text)


def test_old_rocblas_unreadable_library_on_a_supported_gpu_is_left_open() -> None:
    text = "MI210 node.\nrocBLAS error: Cannot read /opt/rocm/rocblas/library/TensileLibrary.dat: Illegal seek\n"
    d = diagnose_text(text)
    assert "userspace-target-unsupported" not in {f.code for f in d.findings}
    assert any("Tensile library" in u for u in d.unknown)
