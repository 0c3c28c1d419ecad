"""Issue 34: findings rest on evidence said by the right speaker, and a GPU's findings agree with each other.

The texts are shaped after real healthy machines' logs (the issue's examples; tests/data/healthy-logs holds
whole ones): other drivers' firmware misses, amdgpu's first choice of MES firmware that falls back, a
rocminfo cut after the CPU agent.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Severity

KFD_ADDED_STRIX_HALO = """\
[    3.526961] [drm] amdgpu kernel modesetting enabled.
[    3.530830] amdgpu 0000:c5:00.0: amdgpu: initializing kernel modesetting (IP DISCOVERY 0x1002:0x1586 0x2014:0x801D 0xC1).
[    3.960319] kfd kfd: amdgpu: Allocated 3969056 bytes on gart
[    3.963938] amdgpu: Topology: Add dGPU node [0x1586:0x1002]
[    3.963939] kfd kfd: amdgpu: added device 1002:1586
[    3.965457] [drm] Initialized amdgpu 3.64.0 for 0000:c5:00.0 on minor 0
"""
OTHER_DRIVERS_FIRMWARE = """\
[    1.234000] platform regulatory.0: Direct firmware load for regulatory.db failed with error -2
[    2.100000] iwlwifi 0000:03:00.0: Direct firmware load for iwlwifi-cc-a0-64.ucode failed with error -2
[    2.200000] tee tee0: Direct firmware load for /amdtee/f29bb3d9-bd66-5441-afb8-0acc2d0e5b2b.bin failed with error -2
"""


def _codes(text: str) -> dict[str, Severity]:
    return {f.code: f.severity for f in diagnose_text(text).findings}


def test_other_drivers_firmware_is_not_the_gpu_s() -> None:
    codes = _codes(OTHER_DRIVERS_FIRMWARE + KFD_ADDED_STRIX_HALO)
    assert "firmware-missing" not in codes
    assert codes.get("kfd-ready") is Severity.INFO
    assert not [c for c, s in codes.items() if s is not Severity.INFO]


# Debian 12 (6.1.0-x) with firmware-amd-graphics 20230210: every RDNA3 GPU asks for gc_11_0_x_mes_2.bin (the
# 6.1.y backport of upstream 97998b893c30), fails, and falls back (DRM_INFO in 6.1, dev_info from 6.2 on).
NAVI31_DEBIAN_12 = """\
[    2.880] amdgpu 0000:03:00.0: amdgpu: initializing kernel modesetting (IP DISCOVERY 0x1002:0x744C 0x1DA2:0x471E 0xC8).
[    3.010] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_mes_2.bin failed with error -2
[    3.010] {fallback}
[    4.120] kfd kfd: amdgpu: added device 1002:744c
"""


@pytest.mark.parametrize(
    "fallback",
    [
        "[drm] try to fall back to amdgpu/gc_11_0_0_mes.bin",  # 6.1's DRM_INFO
        "amdgpu 0000:03:00.0: try to fall back to gc_11_0_0_mes.bin",  # 6.12's dev_info
        "amdgpu 0000:03:00.0: amdgpu: SE 6, SH per SE 2, CU per SH 8, active_cu_number 96",  # a paste cut it
    ],
)
def test_the_mes_first_choice_that_falls_back_is_at_most_info(fallback: str) -> None:
    result = diagnose_text(NAVI31_DEBIAN_12.format(fallback=fallback))
    codes = {f.code: f for f in result.findings}
    assert "firmware-missing" not in codes
    assert codes["firmware-fallback"].severity is Severity.INFO
    assert "gc_11_0_0_mes.bin" in codes["firmware-fallback"].message
    assert codes["kfd-ready"].severity is Severity.INFO
    assert result.exit_code == 0


def test_a_fallback_that_fails_too_is_missing_firmware() -> None:
    text = (
        "[    2.880] amdgpu 0000:03:00.0: amdgpu: initializing kernel modesetting (IP DISCOVERY 0x1002:0x744C "
        "0x1DA2:0x471E 0xC8).\n"
        "[    3.010] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_mes_2.bin failed with error -2\n"
        "[    3.010] [drm] try to fall back to amdgpu/gc_11_0_0_mes.bin\n"
        "[    3.011] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_mes.bin failed with error -2\n"
        "[    3.012] amdgpu 0000:03:00.0: amdgpu: sw_init of IP block <mes_v11_0> failed -2\n"
        "[    3.013] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init\n"
    )
    (missing,) = [f for f in diagnose_text(text).findings if f.code == "firmware-missing"]
    assert "amdgpu/gc_11_0_0_mes.bin" in missing.message and "mes_2" not in missing.message


def test_a_gpu_kfd_added_is_not_said_to_have_never_reached_kfd() -> None:
    # A failure line with no device (a grep's cut line) beside the GPU's own success: the success wins, and
    # the lost finding is kept for --verbose.
    text = (
        "[    3.000] Direct firmware load for amdgpu/psp_13_0_5_toc.bin failed with error -2\n" + KFD_ADDED_STRIX_HALO
    )
    result = diagnose_text(text)
    codes = {f.code for f in result.findings}
    assert "kfd-ready" in codes and "firmware-missing" not in codes
    (lost,) = result.overruled
    assert lost.startswith("firmware-missing") and "KFD added AMD Strix Halo" in lost
    from kfdguard.publish.report import text_diagnosis_text

    assert "Overruled" in text_diagnosis_text(result, "paste", verbose=True)
    assert "Overruled" not in text_diagnosis_text(result, "paste")


def test_a_second_gpu_without_a_node_keeps_its_cause() -> None:
    text = (
        KFD_ADDED_STRIX_HALO
        + "[    4.000] amdgpu 0000:03:00.0: amdgpu: initializing kernel modesetting (IP DISCOVERY 0x1002:0x7551 "
        "0x1002:0x0E3B 0xC0).\n"
        "[    4.100] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_12_0_1_pfp.bin failed with error -2\n"
        "[    4.200] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init\n"
    )
    result = diagnose_text(text)
    (missing,) = [f for f in result.findings if f.code == "firmware-missing"]
    assert missing.gpu == "0000:03:00.0" and result.overruled == ()


def test_every_finding_in_json_names_who_said_its_evidence() -> None:
    from kfdguard.publish.report import text_diagnosis_json

    text = (
        OTHER_DRIVERS_FIRMWARE
        + NAVI31_DEBIAN_12.format(fallback="[drm] try to fall back to amdgpu/gc_11_0_0_mes.bin")
        + "[    5.000] amdgpu: unknown parameter 'gtt_size' ignored\n"
        + "$ ls -l /dev/kfd\ncrw-rw---- 1 root render 236, 0 Dec  6 10:00 /dev/kfd\n"
    )
    document = text_diagnosis_json(diagnose_text(text))
    findings = {f["code"]: f for f in document["findings"]}  # type: ignore[attr-defined]
    for finding in findings.values():
        assert len(finding["sources"]) == len(finding["evidence"]), finding
    ready = findings["kfd-ready"]["sources"]
    assert {(s["kind"], s["driver"], s["device"]) for s in ready} == {("kernel", "kfd", "kfd")}
    (param,) = findings["module-param-unknown"]["sources"]
    assert (param["kind"], param["driver"]) == ("kernel", "amdgpu")
    fallback = findings["firmware-fallback"]["sources"]
    assert [(s["driver"], s["device"]) for s in fallback] == [("amdgpu", "0000:03:00.0"), ("drm", None)]
    assert tuple(int(n) for n in str(document["schema_version"]).split(".")) >= (1, 3)  # sources came in 1.3


# rocminfo's shape (rocminfo.cc): "HSA Agents" and its rule, one block per agent, then "*** Done ***".
ROCMINFO_CPU_ONLY = """\
$ rocminfo
ROCk module is loaded
=====================
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD Ryzen 7 7840HS w/ Radeon 780M Graphics
  Uuid:                    CPU-XX
  Marketing Name:          AMD Ryzen 7 7840HS w/ Radeon 780M Graphics
  Vendor Name:             CPU
  Device Type:             CPU
"""


def test_a_rocminfo_cut_after_the_cpu_agent_proves_no_absence() -> None:
    result = diagnose_text(ROCMINFO_CPU_ONLY)
    assert "kfd-no-gpu-node" not in {f.code for f in result.findings}
    assert any("'*** Done ***'" in u for u in result.unknown)


def test_a_whole_rocminfo_without_a_gpu_agent_is_no_gpu_node() -> None:
    result = diagnose_text(ROCMINFO_CPU_ONLY + "*** Done ***\n")
    (node,) = [f for f in result.findings if f.code == "kfd-no-gpu-node"]
    assert node.severity is Severity.ERROR


# Issue 36's example: a 6.1 kernel (IP_VERSION packed major<<16) meets an RX 9070 XT; 6.12 packs major<<24.
@pytest.mark.parametrize("packed", ["0xc0001", "0xc000100"])
@pytest.mark.parametrize("prefix", ["amdgpu 0000:03:00.0: amdgpu: ", "amdgpu: "])
def test_an_ip_the_kernel_does_not_know_is_a_kernel_too_old(packed: str, prefix: str) -> None:
    text = (
        f"[    3.2] {prefix}Failed to add gfx ip block(GC_HWIP:{packed})\n"
        f"[    3.3] {prefix}Fatal error during GPU init\n"
    )
    result = diagnose_text(text)
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    assert [f.code for f in errors] == ["kernel-too-old"], [f"{f.code}: {f.message}" for f in errors]
    assert "GC IP 12.0.1 (gfx1201)" in errors[0].message and "from Linux 6." in errors[0].message
