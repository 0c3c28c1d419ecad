"""Userspace message formats (knowledge/appformats.py) and the rules that read them (assess/app_rules.py).

The texts here are written from the formats (their programs' format strings), in shapes the corpus
does not contain: other gfx targets, other prefixes (journald, quotes), other orders, and the
near misses a rule must not take for its cause.
"""

from __future__ import annotations

import re

import pytest

from kfdguard import knowledge
from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text
from kfdguard.knowledge.appformats import COMPILED, CUES, FORMATS, AppFormat, rx_target
from kfdguard.knowledge.asics import PCI_ROWS


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def finding(text: str, code: str) -> str:
    (found,) = [f for f in diagnose_text(text).findings if f.code == code]
    return f"{found.message} {found.remedy} {' '.join(found.evidence)}"


@pytest.mark.parametrize("row", COMPILED, ids=[f.id for f in FORMATS])
def test_every_format_matches_its_example_and_names_its_source(
    row: tuple[AppFormat, re.Pattern[str], tuple[re.Pattern[str], ...]],
) -> None:
    fmt, pattern, _ = row
    assert fmt.cue in fmt.example, fmt.id
    assert CUES.search(fmt.example), fmt.id
    assert pattern.search(fmt.example.strip()), fmt.id
    assert "/" in fmt.source, f"{fmt.id}: the source names a repository and file"


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.id for f in FORMATS])
def test_every_example_is_read_as_its_kind(fmt: AppFormat) -> None:
    """No row is shadowed: its example, among other lines, yields a message of its kind."""
    obs = read_text(f"noise before\n{fmt.example.strip()}\nnoise after\n")
    assert any(m.format == fmt.id for m in obs.messages), [m.format for m in obs.messages]


def test_rx_names_map_to_llvm_targets() -> None:
    assert [rx_target(n) for n in (580, 5700, 6600, 6750, 6950, 7600, 7800, 7900, 9070)] == [
        "gfx803",
        "gfx1010",
        "gfx1032",
        "gfx1031",
        "gfx1030",
        "gfx1102",
        "gfx1101",
        "gfx1100",
        "gfx1201",
    ]
    assert rx_target(1234) is None


def test_mobile_rx_names_map_to_the_chip_libdrm_names_them_for() -> None:
    # Issue 36: "RX 7700S" was read as gfx1101 (the desktop RX 7700's Navi 32); libdrm names it on
    # 0x7480, a Navi 33 (gfx1102) id. Every mobile (S/M) RX name of libdrm's rows that gets a target
    # gets its chip's.
    mobile = re.compile(r"\bRX (?P<number>\d{4})(?P<suffix>[SM])\b")
    wrong = []
    for device, revision, name, key, _source in PCI_ROWS:
        m = mobile.search(name)
        chip = knowledge.asic(key)
        target = rx_target(int(m["number"]), m["suffix"].lower()) if m else None
        if target is not None and chip is not None and target != chip.gfx:  # None: no RX range names it
            wrong.append((hex(device), revision, name, chip.gfx, target))
    assert wrong == []
    assert any("RX 7700S" in row[2] for row in PCI_ROWS)


def test_no_code_object_names_the_target_from_the_runtime_and_offers_the_override() -> None:
    text = (
        "$ python -c 'import torch; torch.zeros(1).cuda()'\n"
        '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
        "Aborted (core dumped)\n"
        "$ rocminfo | grep gfx\n  Name:                    gfx1034\n"
    )
    got = codes(text)
    assert "userspace-target-unsupported" in got
    assert not got & {"user-not-in-group", "device-node-missing", "kfd-no-gpu-node"}
    text_of = finding(text, "userspace-target-unsupported")
    assert "gfx1034" in text_of and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in text_of


def test_rocblas_missing_library_lists_what_the_install_carries() -> None:
    text = (
        "rocBLAS error: Cannot read /opt/rocm-6.2.0/lib/rocblas/library/TensileLibrary.dat: No such file or "
        "directory for GPU arch : gfx906\n"
        ' List of available TensileLibrary Files : \n"/opt/rocm-6.2.0/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat"\n'
        '"/opt/rocm-6.2.0/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat"\n'
    )
    text_of = finding(text, "userspace-target-unsupported")
    assert "gfx906" in text_of and "gfx1100 gfx90a" in text_of


def test_ollama_journal_line_in_another_version_and_order() -> None:
    text = (
        "Mar 03 10:00:01 box ollama[812]: time=2025-03-03T10:00:01.1Z level=WARN source=amd_linux.go:390 "
        'msg="amdgpu is not supported (supported types:[gfx1030 gfx1100])" gpu_type=gfx1036 gpu=0 library=/usr/lib\n'
    )
    assert "gfx1036" in finding(text, "userspace-target-unsupported")
    # With the override set, ollama skips the check: nothing says the target is missing.
    skipped = 'level=INFO source=amd_linux.go:300 msg="skipping rocm gfx compatibility check" HSA_OVERRIDE_GFX_VERSION=10.3.0\n'
    assert "userspace-target-unsupported" not in codes(skipped)


def test_no_devices_is_a_symptom_not_a_library_problem() -> None:
    result = diagnose_text("rocBLAS error: Could not initialize Tensile host: No devices found\n")
    assert "userspace-target-unsupported" not in {f.code for f in result.findings}
    assert any("runtime sees no GPU" in u for u in result.unknown)


@pytest.mark.parametrize(
    ("env", "hidden"),
    [
        ("ROCR_VISIBLE_DEVICES=0,1 HIP_VISIBLE_DEVICES=2", True),
        ("ROCR_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=1", True),
        ("ROCR_VISIBLE_DEVICES=0,1 HIP_VISIBLE_DEVICES=1", False),
        ("HIP_VISIBLE_DEVICES=3", False),
    ],
)
def test_visibility_variables_that_hide_every_gpu(env: str, hidden: bool) -> None:
    text = f"$ {env} python train.py\nRuntimeError: No HIP GPUs are available\n"
    assert ("env-visibility-hides-gpu" in codes(text)) is hidden


def test_docker_without_dev_kfd_on_linux_and_on_windows() -> None:
    error = (
        'docker: Error response from daemon: error gathering device information while adding custom device "/dev/kfd": '
        "no such file or directory.\n"
    )
    linux = codes("$ docker run --device=/dev/kfd rocm/rocm-terminal\n" + error)
    assert "device-node-missing" in linux and "host-without-kfd" not in linux
    wsl = codes("Ubuntu 22.04 under WSL2\n" + error)
    assert "host-without-kfd" in wsl and not wsl & {"device-node-missing", "user-not-in-group"}
    # A Windows host named without any sign of a missing /dev/kfd says nothing about KFD.
    assert "host-without-kfd" not in codes("I am on Windows 11 and the model runs slowly\n")


def test_einval_is_not_a_permission_problem() -> None:
    text = (
        "ROCk module is loaded\nUnable to open /dev/kfd read-write: Invalid argument\n"
        "$ id\nuid=1000(ann) gid=1000(ann) groups=1000(ann),44(video)\n"
        "crw-rw---- 1 root render 237, 0 Jan  1 10:00 /dev/kfd\n"
    )
    got = codes(text)
    assert "kfd-open-einval" in got and not got & {"user-not-in-group", "device-permissions"}


def test_application_eacces_and_works_only_as_root() -> None:
    go = 'level=ERROR msg="amdgpu devices detected but permission problems block access" error="open /dev/kfd: permission denied"'
    assert "user-not-in-group" in codes(go)
    prose = "rocminfo lists my GPU when I run it with sudo, but as my user it fails. It only works with sudo.\n"
    assert "user-not-in-group" in codes(prose)
    assert "user-not-in-group" not in codes("sudo apt install rocm works fine as root\n")
    # A node open to everyone is not a group problem.
    open_node = go + "\ncrw-rw-rw- 1 root render 237, 0 Jan  1 10:00 /dev/kfd\n"
    assert "user-not-in-group" not in codes(open_node)


def test_rootless_container_is_the_mapping_not_the_groups() -> None:
    text = "inside my rootless podman container:\nROCk module is loaded\nUnable to open /dev/kfd read-write: Permission denied\n"
    got = codes(text)
    assert "rootless-gid-unmapped" in got and not got & {"user-not-in-group", "device-permissions"}


def test_dkms_status_without_the_running_kernel() -> None:
    status = "amdgpu, 6.2.4-1664922, 5.15.0-84-generic, x86_64: installed\n"
    assert "dkms-not-built" in codes("$ uname -r\n5.15.0-91-generic\n$ dkms status\n" + status)
    assert "dkms-not-built" not in codes("$ uname -r\n5.15.0-84-generic\n$ dkms status\n" + status)


def test_same_id_gpus_are_counted() -> None:
    text = (
        "[    2.1] kfd kfd: added device 1002:67ef\n"
        "[    3.2] kfd kfd: skipped device 1002:67ef, PCI rejects atomics\n"
        "[    4.3] kfd kfd: skipped device 1002:67ef, PCI rejects atomics\n"
    )
    got = codes(text)
    assert {"kfd-ready", "pcie-atomics"} <= got
    assert "skipped 2" in finding(text, "pcie-atomics")


def test_psp_failure_in_the_dev_err_form_and_beside_a_missing_file() -> None:
    dev_err = "[ 5.0] amdgpu 0000:03:00.0: amdgpu: PSP load sos failed!\n[ 5.1] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init\n"
    got = codes(dev_err)
    assert "gpu-psp-init-failed" in got and "firmware-missing" not in got
    missing = "[ 4.9] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_sos.bin failed with error -2\n"
    assert "firmware-missing" in codes(missing + dev_err)


def test_gpu_named_by_lspci_without_ids() -> None:
    text = "01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Tonga PRO GL [FirePro W7100]\n"
    obs = read_text(text)
    assert [(g.vendor, g.slot) for g in obs.gpus] == [(0x1002, "0000:01:00.0")]


def test_nvidia_only_needs_a_model_and_no_amd_gpu() -> None:
    error = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
    assert codes("GPU: NVIDIA GeForce RTX 4070\n" + error) >= {"no-amd-gpu"}
    assert "userspace-target-unsupported" not in codes("GPU: NVIDIA GeForce RTX 4070\n" + error)
    # nvidia-smi named, and an AMD card too: the AMD card's missing code object stands.
    both = "I have an RX 6700 XT; nvidia-smi is not installed\n" + error
    assert "userspace-target-unsupported" in codes(both) and "no-amd-gpu" not in codes(both)


def test_management_tools_show_the_driver_not_kfd() -> None:
    got = codes("$ sudo amd-smi metric\nGPU: 0\n    USAGE:\n        GFX_ACTIVITY: 0 %\n")
    assert "gpu-driver-ready" in got and "kfd-ready" not in got


def test_runtime_enumeration_is_kfd_ready() -> None:
    text = "ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7600, gfx1102 (0x1102), VMM: no, Wave Size: 32\n"
    assert "gfx1102" in finding(text, "kfd-ready")


def test_what_the_software_side_does_not_show_is_asked_for() -> None:
    result = diagnose_text("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n")
    assert any("rocblas/library" in u for u in result.unknown)
    listed = diagnose_text(
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : "
        'gfx1036\n"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat"\n'
    )
    assert not any("rocblas/library" in u for u in listed.unknown)
