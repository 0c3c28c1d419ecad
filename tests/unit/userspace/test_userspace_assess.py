"""The per GPU × stack judgement, on inventory records written out by hand (assess is pure)."""

from __future__ import annotations

import pytest

from kfdguard.facts import Component, EnvSetting, SoftwareFacts, Stack
from kfdguard.userspace.assess import GpuTarget, assess_software, match
from kfdguard.userspace.targets import gfx_of_override, override_for, parse_entry_id, parse_target, targets_in_name

RX7900 = GpuTarget("0000:03:00.0", "AMD Radeon RX 7900 XTX", "gfx1100")
R780M = GpuTarget("0000:c4:00.0", "AMD Radeon 780M Graphics", "gfx1103")
RX6800 = GpuTarget("0000:0a:00.0", "AMD Radeon RX 6800", "gfx1030")
RX6700 = GpuTarget("0000:0b:00.0", "AMD Radeon RX 6700 XT", "gfx1031")
ROCM_TARGETS = ("gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx90a:xnack+", "gfx90a:xnack-", "gfx942")


def rocm(targets: tuple[str, ...] = ROCM_TARGETS, kind: str = "rocm", name: str = "ROCm 6.2.4") -> Stack:
    lib = Component("rocblas/library", "/opt/rocm-6.2.4/lib/rocblas/library", targets, "name", len(targets))
    return Stack(kind, name, "/opt/rocm-6.2.4", "6.2.4", (lib,), "/opt/rocm-6.2.4/lib", "libamdhip64.so.6.2.60204")


def codes(software: SoftwareFacts, *gpus: GpuTarget) -> list[str]:
    return [f.code for f in assess_software(software, gpus).findings]


def one(software: SoftwareFacts, code: str, *gpus: GpuTarget) -> tuple[str, str, tuple[str, ...]]:
    found = [f for f in assess_software(software, gpus).findings if f.code == code]
    assert len(found) == 1, [f.code for f in assess_software(software, gpus).findings]
    return found[0].message, found[0].remedy, found[0].evidence


def test_target_ids_and_entry_ids() -> None:
    e = parse_entry_id("hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")
    assert e is not None and e.kind == "hip" and e.triple == "amdgcn-amd-amdhsa-"
    assert str(e.target) == "gfx90a:sramecc+:xnack-"
    host = parse_entry_id("host-x86_64-unknown-linux-gnu-")
    assert host is not None and host.target is None and not host.is_amdgpu
    assert parse_target("gfx1100:xnack+:xnack-") is None  # a feature twice
    assert parse_target("gfx11000") is None and parse_target("sm_80") is None
    assert str(parse_target("gfx11-generic")) == "gfx11-generic"
    assert [str(t) for t in targets_in_name("Kernels.so-000-gfx90a-xnack-.hsaco")] == ["gfx90a:xnack-"]
    assert [str(t) for t in targets_in_name("TensileLibrary_lazy_gfx1030.dat")] == ["gfx1030"]
    assert [str(t) for t in targets_in_name("TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx942.co")] == [
        "gfx942"
    ]
    assert targets_in_name("TensileLibrary.dat") == ()


@pytest.mark.parametrize(("gfx", "value"), [("gfx1030", "10.3.0"), ("gfx90a", "9.0.10"), ("gfx1103", "11.0.3")])
def test_override_values_round_trip(gfx: str, value: str) -> None:
    assert override_for(gfx) == value
    assert gfx_of_override(value) == gfx


@pytest.mark.parametrize(
    ("generic", "gpus"),
    [
        # LLVM's "AMDGPU Generic Processors" table (llvm/docs/AMDGPUUsage.rst; the commits in targets.py).
        ("gfx9-4-generic", ("gfx942", "gfx950")),
        ("gfx11-generic", ("gfx1100", "gfx1103", "gfx1151", "gfx1153")),
        ("gfx12-generic", ("gfx1200", "gfx1201")),
        ("gfx12-5-generic", ("gfx1250", "gfx1251")),
    ],
)
def test_generic_code_runs_on_every_processor_of_its_family(generic: str, gpus: tuple[str, ...]) -> None:
    for gpu in gpus:
        m = match(gpu, (generic,))
        assert (m.status, m.via) == ("generic", generic), gpu


def test_generic_code_does_not_run_outside_its_family() -> None:
    # MI300's generic code is not MI200's (gfx90a is in no generic family), RDNA4's not RDNA3's.
    assert match("gfx90a", ("gfx9-4-generic",)).status == "missing"
    assert match("gfx1100", ("gfx12-generic",)).status == "missing"
    assert match("gfx1200", ("gfx11-generic",)).status == "missing"
    assert match("gfx1201", ("gfx12-5-generic",)).status == "missing"


def test_match_exact_generic_features_missing() -> None:
    assert match("gfx1100", ROCM_TARGETS).status == "exact"
    g = match("gfx1103", ("gfx11-generic", "gfx1030"))
    assert (g.status, g.via) == ("generic", "gfx11-generic")
    x = match("gfx90a", ROCM_TARGETS)
    assert x.status == "exact" and x.note.startswith("loads only where xnack")
    m = match("gfx1103", ROCM_TARGETS)
    assert (m.status, m.nearest) == ("missing", "gfx1100")
    assert match("gfx1036", ROCM_TARGETS).nearest == "gfx1030"
    assert match("gfx906", ROCM_TARGETS).nearest is None  # gfx90a is another chip, not a stand-in
    assert match("gfx1151", ROCM_TARGETS).nearest == "gfx1100"  # same generic family (gfx11-generic)
    assert match("gfx90c", ("gfx900", "gfx906")).nearest == "gfx900"
    assert match("gfx1100", ()).status == "unknown"


def test_gpu_covered() -> None:
    sw = SoftwareFacts((rocm(),))
    verdict = assess_software(sw, [RX7900])
    assert [f.code for f in verdict.findings] == ["userspace-targets-covered"]
    (row,) = verdict.rows
    assert (row.status, row.detail) == ("runs", "code for gfx1100")


def test_780m_missing_with_nearest_and_the_workaround_named() -> None:
    message, remedy, evidence = one(SoftwareFacts((rocm(),)), "userspace-target-unsupported", R780M)
    assert "ROCm 6.2.4 (/opt/rocm-6.2.4) has no code for gfx1103 (AMD Radeon 780M Graphics)" in message
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in remedy and "unsupported workaround" in remedy
    assert evidence[0].startswith("/opt/rocm-6.2.4/lib/rocblas/library: gfx1030, gfx1100")


def test_wrong_override_in_ollama_unit_names_unit_and_value() -> None:
    setting = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "11.0.0", "ollama.service (/etc/systemd/system/ollama.service)",
                         "ollama.service")  # fmt: skip
    ollama = rocm(("gfx1100", "gfx1101"), kind="ollama", name="ollama (bundled ROCm)")
    message, _, evidence = one(SoftwareFacts((ollama,), (setting,)), "userspace-override-wrong", RX6800)
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 in the ollama.service (/etc/systemd/system/ollama.service)" in message
    assert "gfx1100 on gfx1030" in message and "another instruction set" in message
    assert evidence[0].startswith("HSA_OVERRIDE_GFX_VERSION=11.0.0")


def test_override_workaround_unneeded_invalid() -> None:
    caller = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "10.3.0", "caller environment")
    assert "userspace-override-workaround" in codes(SoftwareFacts((rocm(),), (caller,)), RX6700)
    assert "userspace-target-unsupported" not in codes(SoftwareFacts((rocm(),), (caller,)), RX6700)
    assert "userspace-override-unneeded" in codes(SoftwareFacts((rocm(),), (caller,)), RX6800)
    other = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "11.0.0", "caller environment")
    assert "userspace-override-unneeded" in codes(SoftwareFacts((rocm(),), (other,)), RX7900)
    bad = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "gfx1030", "caller environment")
    assert "userspace-override-invalid" in codes(SoftwareFacts((rocm(),), (bad,)), RX6800)
    lacking = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "10.3.2", "caller environment")
    message, _, _ = one(SoftwareFacts((rocm(),), (lacking,)), "userspace-override-wrong", RX6700)
    assert "gfx1032, which ROCm 6.2.4 has none of either" in message
    itself = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "10.3.1", "caller environment")
    message, remedy, _ = one(SoftwareFacts((rocm(),), (itself,)), "userspace-override-unneeded", RX6700)
    assert "changes nothing, and ROCm 6.2.4 has no code for gfx1031" in message
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in remedy


def test_ollama_unit_does_not_reach_other_stacks_when_ollama_bundles_rocm() -> None:
    setting = EnvSetting("HSA_OVERRIDE_GFX_VERSION", "11.0.0", "ollama.service (x)", "ollama.service")
    ollama = rocm(("gfx1100",), kind="ollama", name="ollama (bundled ROCm)")
    findings = assess_software(SoftwareFacts((ollama, rocm()), (setting,)), [RX6800]).findings
    assert [f.message.split(" ")[0] for f in findings if f.code == "userspace-override-wrong"] == [
        "HSA_OVERRIDE_GFX_VERSION=11.0.0"
    ]
    assert not any(f.code.startswith("userspace-override") and "ROCm 6.2.4" in f.message for f in findings)


@pytest.mark.parametrize(
    ("name", "value", "hidden"),
    [
        ("HIP_VISIBLE_DEVICES", "-1", True),
        ("ROCR_VISIBLE_DEVICES", "", True),
        ("CUDA_VISIBLE_DEVICES", "1,2", True),
        ("HIP_VISIBLE_DEVICES", "0", False),
        ("HIP_VISIBLE_DEVICES", "", False),  # rocclr reads an empty list as none (then CUDA_VISIBLE_DEVICES)
        ("HIP_VISIBLE_DEVICES", "1,0", True),  # it stops at the first index that is no GPU of its own
        ("ROCR_VISIBLE_DEVICES", "GPU-4b2c1a3e5f6d7e8f", False),
    ],
)
def test_visibility(name: str, value: str, hidden: bool) -> None:
    sw = SoftwareFacts((rocm(),), (EnvSetting(name, value, "caller environment"),))
    assert ("userspace-gpus-hidden" in codes(sw, RX7900)) is hidden


def test_sdma_and_hcc_described() -> None:
    sw = SoftwareFacts((), (EnvSetting("HSA_ENABLE_SDMA", "0", "caller environment"),
                            EnvSetting("HCC_AMDGPU_TARGET", "gfx1030", "caller environment")))  # fmt: skip
    message, _, _ = one(sw, "userspace-sdma-disabled", RX7900)
    assert "debugging switch" in message and "not a speed-up" in message
    assert "build scripts only" in one(sw, "userspace-hcc-target", RX7900)[0]


def test_two_rocm_releases_on_one_path() -> None:
    old = Stack("rocm", "ROCm 5.7.1", "/opt/rocm-5.7.1", "5.7.1", (), "/opt/rocm-5.7.1/lib")
    sw = SoftwareFacts((old, rocm()), ld_paths=(("/opt/rocm-5.7.1/lib", "/etc/ld.so.conf.d/a.conf"),
                                                 ("/opt/rocm-6.2.4/lib", "/etc/ld.so.conf.d/b.conf")))  # fmt: skip
    message, _, _ = one(sw, "userspace-rocm-mixed", RX7900)
    assert "/opt/rocm-5.7.1/lib (5.7.1), /opt/rocm-6.2.4/lib (6.2.4)" in message
    env = EnvSetting("LD_LIBRARY_PATH", "/opt/rocm-6.2.4/lib:/opt/rocm-5.7.1/lib/", "caller environment")
    assert "userspace-rocm-mixed" in codes(SoftwareFacts((old, rocm()), (env,)), RX7900)
    assert "userspace-rocm-mixed" not in codes(SoftwareFacts((old, rocm())), RX7900)


def test_no_gpu_inventory_only() -> None:
    verdict = assess_software(SoftwareFacts((rocm(),)), [])
    assert verdict.findings == () and verdict.rows == ()


def test_unreadable_component_gives_unknown_not_missing() -> None:
    broken = Stack("llama.cpp", "llama.cpp (libggml-hip.so)", "/usr/local/lib/libggml-hip.so", None,
                   (Component("libggml-hip.so", "/usr/local/lib/libggml-hip.so", (), "bundles", 1, "bad"),))  # fmt: skip
    verdict = assess_software(SoftwareFacts((broken,)), [RX7900])
    assert verdict.findings == ()
    assert verdict.rows[0].status == "unknown"


# Two GPUs as the KFD topology numbers them: node 0 is the CPU, the GPUs are nodes 1 and 2.
NODE1_7900 = GpuTarget("0000:03:00.0", "AMD Radeon RX 7900 XTX", "gfx1100", node=1)
NODE2_6700 = GpuTarget("0000:0b:00.0", "AMD Radeon RX 6700 XT", "gfx1031", node=2)


def test_per_node_override_applies_to_its_node_only() -> None:
    per = EnvSetting("HSA_OVERRIDE_GFX_VERSION_2", "10.3.0", "ollama.service (u)", "ollama.service")
    findings = assess_software(SoftwareFacts((rocm(),), (per,)), [NODE1_7900, NODE2_6700]).findings
    overrides = [(f.code, f.gpu) for f in findings if f.code.startswith("userspace-override")]
    assert overrides == [("userspace-override-workaround", NODE2_6700.slot)]
    (workaround,) = [f for f in findings if f.code == "userspace-override-workaround"]
    assert "HSA_OVERRIDE_GFX_VERSION_2=10.3.0 in the ollama.service (u)" in workaround.message


def test_per_node_override_wins_over_the_global_one() -> None:
    env = (
        EnvSetting("HSA_OVERRIDE_GFX_VERSION", "11.0.0", "caller environment"),
        EnvSetting("HSA_OVERRIDE_GFX_VERSION_2", "10.3.0", "caller environment"),
    )
    findings = assess_software(SoftwareFacts((rocm(),), env), [NODE1_7900, NODE2_6700]).findings
    by_slot = {f.gpu: f for f in findings if f.code.startswith("userspace-override")}
    assert {slot: f.code for slot, f in by_slot.items()} == {
        NODE1_7900.slot: "userspace-override-unneeded",
        NODE2_6700.slot: "userspace-override-workaround",
    }
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 in the caller environment" in by_slot[NODE1_7900.slot].message
    assert "HSA_OVERRIDE_GFX_VERSION_2=10.3.0 in the caller environment" in by_slot[NODE2_6700.slot].message


def test_workaround_names_the_per_node_variable_where_gpus_differ() -> None:
    _, remedy, _ = one(SoftwareFacts((rocm(),)), "userspace-target-unsupported", NODE1_7900, NODE2_6700)
    assert "HSA_OVERRIDE_GFX_VERSION_2=10.3.0" in remedy  # the global one would move the 7900 XTX too
    _, remedy, _ = one(SoftwareFacts((rocm(),)), "userspace-target-unsupported", NODE2_6700)
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in remedy  # one GPU: the global one is enough


def test_per_node_override_of_a_cpu_node_is_named() -> None:
    # ollama's documentation writes HSA_OVERRIDE_GFX_VERSION_0: on a usual machine node 0 is the CPU.
    env = (EnvSetting("HSA_OVERRIDE_GFX_VERSION_0", "10.3.0", "ollama.service (u)", "ollama.service"),)
    message, remedy, evidence = one(SoftwareFacts((rocm(),), env), "userspace-override-node", NODE1_7900, NODE2_6700)
    assert "names KFD node 0, which is no GPU here" in message
    assert "node 2 gfx1031 (AMD Radeon RX 6700 XT)" in message
    assert remedy.startswith("rename it to HSA_OVERRIDE_GFX_VERSION_1 or HSA_OVERRIDE_GFX_VERSION_2")
    assert evidence[0] == "HSA_OVERRIDE_GFX_VERSION_0=10.3.0 (ollama.service (u))"
    # It never reaches a GPU: the 6700 XT is still without code and without an override.
    assert "userspace-target-unsupported" in codes(SoftwareFacts((rocm(),), env), NODE1_7900, NODE2_6700)
    # Without the topology (no node numbers) nothing can be said about node numbers.
    assert "userspace-override-node" not in codes(SoftwareFacts((rocm(),), env), RX7900, RX6700)


def test_environment_visibility_as_rocr_then_hip_apply_it() -> None:
    from kfdguard.userspace.assess import environment_visibility

    assert environment_visibility({}, 2) == (
        True, "no visibility variable is set: ROCm programs started here see every AMD GPU"
    )  # fmt: skip
    assert environment_visibility({"HIP_VISIBLE_DEVICES": ""}, 2)[0] is True  # empty: HIP filters nothing
    assert environment_visibility({"ROCR_VISIBLE_DEVICES": ""}, 2)[0] is False  # set: ROCr filters, to nothing
    assert environment_visibility({"HIP_VISIBLE_DEVICES": "", "CUDA_VISIBLE_DEVICES": "7"}, 2)[0] is False
    assert environment_visibility({"ROCR_VISIBLE_DEVICES": "2,3"}, 2)[1].startswith(
        "ROCR_VISIBLE_DEVICES='2,3' hides every AMD GPU (the 2 on this machine)"
    )
    # ROCr keeps GPU 1 only; HIP then numbers what is left from 0, so HIP's 1 is nothing.
    visible, why = environment_visibility({"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, 2)
    assert not visible and why.startswith("HIP_VISIBLE_DEVICES='1' hides every AMD GPU (the 1 left by")
    # HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES: CUDA's empty list is not read.
    assert environment_visibility({"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": ""}, 1) == (
        True, "HIP_VISIBLE_DEVICES='0' leaves 1 of 1"
    )  # fmt: skip
    visible, why = environment_visibility({"ROCR_VISIBLE_DEVICES": "GPU-4a2c1b"}, 1)
    assert visible and "by UUID" in why
    assert environment_visibility({}, 0) == (False, "this machine has no AMD GPU for ROCm to see")


def test_a_visibility_index_of_thousands_of_digits_is_a_bad_entry_not_a_crash() -> None:
    from kfdguard.userspace.assess import visible_count

    huge = "9" * 5000
    assert visible_count("HIP_VISIBLE_DEVICES", f"0,{huge}", 2) == 1  # HIP stops at the first bad entry
    assert visible_count("ROCR_VISIBLE_DEVICES", f"{huge},1", 2) == 1  # ROCr counts the good ones


def test_a_kmsg_record_with_an_absurd_priority_is_not_the_kernels() -> None:
    from kfdguard.host.system import kmsg_is_kernel

    assert kmsg_is_kernel("6,1234,5678,-;amdgpu: hello")
    assert not kmsg_is_kernel("9" * 5000 + ",1,1,-;forged")
