"""The assessment of each bundled machine: state, readiness and the codes a person needs."""

from __future__ import annotations

import pytest

from kfdguard.assess import assess
from kfdguard.facts import Facts
from kfdguard.verdict import Severity, State

EXPECTED: dict[str, tuple[State, set[str]]] = {
    "rx7900xtx-ubuntu2404": (State.READY, {"kfd-ready"}),
    "780m-ubuntu2204-ga": (State.UNAVAILABLE, {"kernel-too-old", "fallback-available"}),
    "rx6800-seed-advice": (State.READY, {"kfd-ready", "softdep-missing-module", "module-param-unknown"}),
    "no-hsa-amd": (State.UNAVAILABLE, {"kfd-not-built", "userspace-target-unsupported", "fallback-available"}),
    "legacy-4.15-amdkfd": (State.UNAVAILABLE, {"kernel-too-old", "kfd-no-gpu-node", "userspace-target-unsupported"}),
    "kfd-perms-0600": (State.UNAVAILABLE, {"device-permissions", "user-not-in-group", "userspace-target-unsupported"}),
    "bad-sched-policy": (State.UNAVAILABLE, {"kfd-init-failed", "module-param-invalid"}),
    "nvidia-only": (State.NO_DEVICE, {"no-amd-gpu"}),
    # The Raphael iGPU on 6.8: KFD has only its 512 MiB carve-out (before 6.10, eb853413d02c).
    "dgpu-plus-igpu-atomics": (
        State.DEGRADED,
        {"kfd-ready", "pcie-atomics", "userspace-target-unsupported", "memory-apu-carve-out-only"},
    ),
    "dkms-missing-for-new-kernel": (State.UNAVAILABLE, {"dkms-not-built", "kfd-no-gpu-node", "fallback-available"}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_state_and_codes(name: str, machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts[name])
    state, codes = EXPECTED[name]
    assert verdict.state == state
    assert set(verdict.codes()) == codes
    assert verdict.ready == (state in (State.READY, State.DEGRADED))
    for finding in verdict.findings:
        assert finding.message and "\n" not in finding.message
        assert finding.evidence, finding.code
        if finding.severity is not Severity.INFO:
            assert finding.remedy, finding.code


def test_findings_are_ordered_errors_first(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["kfd-perms-0600"])
    severities = [f.severity for f in verdict.findings]
    assert severities == sorted(severities, key=[Severity.ERROR, Severity.WARNING, Severity.INFO].index)


def test_assess_is_deterministic(machine_facts: dict[str, Facts]) -> None:
    for facts in machine_facts.values():
        assert assess(facts) == assess(facts)


def test_seed_advice_names_each_line_and_the_truth(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["rx6800-seed-advice"])
    lines = sorted(f.message.split(": ")[0] for f in verdict.by_code("softdep-missing-module"))
    assert lines == [
        "/etc/modprobe.d/amdkfd.conf:2",
        "/etc/modprobe.d/amdkfd.conf:3",
        "/etc/modprobe.d/amdkfd.conf:4",
        "/etc/modules-load.d/modules.conf:7 asks systemd-modules-load to load amdkfd, which does not exist",
    ]
    softdep = next(f for f in verdict.by_code("softdep-missing-module") if ":2:" in f.message)
    assert "install amdkfd" in softdep.message  # kmod runs the install line instead (see test_simulation)
    bogus = {f.message.split("'")[1] for f in verdict.by_code("module-param-unknown")}
    assert bogus == {"enable_iommu", "max_num_of_devices"}
    assert any("ROCR_VISIBLE_DEVICES" in f.message for f in verdict.by_code("module-param-unknown"))


def test_kernel_too_old_points_at_the_installed_kernel(machine_facts: dict[str, Facts]) -> None:
    (finding,) = assess(machine_facts["780m-ubuntu2204-ga"]).by_code("kernel-too-old")
    assert "gfx1103" in finding.message and "6.0" in finding.message
    assert "6.8.0-49-generic" in finding.remedy


def test_dgpu_plus_igpu_per_gpu_status(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["dgpu-plus-igpu-atomics"])
    assert [(g.slot, g.gfx, g.compute_ready, g.kfd_node) for g in verdict.gpus] == [
        ("0000:03:00.0", "gfx1030", True, 1),
        ("0000:0a:00.0", "gfx803", False, None),
        ("0000:12:00.0", "gfx1036", True, 2),
    ]
    (atomics,) = verdict.by_code("pcie-atomics")
    assert atomics.gpu == "0000:0a:00.0"


def test_permissions_finding_shows_the_node_and_the_fix(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["kfd-perms-0600"])
    (perm,) = verdict.by_code("device-permissions")
    assert perm.message.startswith("/dev/kfd is crw------- root:root")
    assert 'SUBSYSTEM=="kfd", GROUP="render", MODE="0660"' in perm.remedy
    (user,) = verdict.by_code("user-not-in-group")
    assert "sudo usermod -aG render bob" in user.remedy


def test_log_evidence_confirms_the_causes(machine_facts: dict[str, Facts]) -> None:
    legacy = assess(machine_facts["legacy-4.15-amdkfd"]).by_code("kernel-too-old")[0]
    assert "amdgpu 0000:01:00.0: kfd not supported on this ASIC" in " ".join(legacy.evidence)
    atomics = assess(machine_facts["dgpu-plus-igpu-atomics"]).by_code("pcie-atomics")[0]
    assert "skipped device 1002:67df, PCI rejects atomics" in " ".join(atomics.evidence)
    sched = assess(machine_facts["bad-sched-policy"]).by_code("kfd-init-failed")[0]
    assert "amdgpu: sched_policy has invalid value" in " ".join(sched.evidence)
    modules_load = next(f for f in assess(machine_facts["rx6800-seed-advice"]).by_code("softdep-missing-module")
                    if "systemd-modules-load" in f.message)  # fmt: skip
    assert "Failed to find module 'amdkfd'" in " ".join(modules_load.evidence)
