"""The simulated machine behaves like the real kernel, and real kmod accepts its module tree."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from kfdguard.assess import assess
from kfdguard.probe import probe
from kfdguard.simulate import bundled
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec, spec_json
from kfdguard.simulate.system import SimulatedSystem, load_spec, spec_from_json
from tests.conftest import MACHINES, tool

Make = Callable[[str | MachineSpec], SimulatedSystem]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_spec_round_trips_through_json() -> None:
    for name in MACHINES:
        spec = bundled.load(name)
        assert spec_from_json(spec_json(spec)) == spec


def test_real_depmod_agrees_with_rendered_modules_dep(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    release = "6.8.0-45-generic"
    base = system.root.lib_modules / release
    rendered = sorted((base / "modules.dep").read_text().splitlines())
    result = run(tool("depmod"), "-b", str(system.root.path), release)
    assert result.returncode == 0, result.stderr
    assert sorted((base / "modules.dep").read_text().splitlines()) == rendered
    assert "updates" not in "".join(rendered)


def test_real_modinfo_reads_declared_parameters(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    module = system.root.lib_modules / "6.8.0-45-generic/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"
    result = run(tool("modinfo"), "-F", "parmtype", str(module))
    assert result.returncode == 0, result.stderr
    names = [line.split(":")[0] for line in result.stdout.splitlines()]
    assert "sched_policy" in names and "debug_mask" in names and len(names) == 84
    assert run(tool("modinfo"), "-F", "depends", str(module)).stdout.strip() == "drm,drm_kms_helper,ttm,gpu_sched"


def _show_depends(system: SimulatedSystem, release: str, module: str) -> subprocess.CompletedProcess[str]:
    root = str(system.root.path)
    assert run(tool("depmod"), "-b", root, release).returncode == 0
    conf = str(system.root.etc / "modprobe.d")
    return run(tool("modprobe"), "-C", conf, "-d", root, "-S", release, "--show-depends", module)


def test_real_modprobe_skips_a_softdep_on_a_missing_module(fresh_machine: Make) -> None:
    spec = (
        MachineBuilder("softdep").with_gpu(0x73BF).with_file("/etc/modprobe.d/x.conf", "softdep amdgpu pre: amdkfd\n")
    )
    shown = _show_depends(fresh_machine(spec.build()), "6.1.0-27-amd64", "amdgpu")
    assert shown.returncode == 0, shown.stderr
    loads = [line.split()[-1].rsplit("/", 1)[-1] for line in shown.stdout.splitlines()]
    # kfd-facts.md §9: libkmod skips soft dependencies it cannot find, without a word.
    assert loads == ["drm.ko", "drm_kms_helper.ko", "ttm.ko", "gpu-sched.ko", "amdgpu.ko"]
    assert shown.stderr == ""


def test_real_modprobe_runs_the_seeds_install_line_before_amdgpu(fresh_machine: Make) -> None:
    # With an "install amdkfd" line the softdep is no longer a no-op: kmod resolves
    # the soft dependency to that command and runs it before loading amdgpu.
    shown = _show_depends(fresh_machine("rx6800-seed-advice"), "6.1.0-27-amd64", "amdgpu")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[-2].startswith("install /sbin/modprobe --ignore-install amdkfd $CMDLINE_OPTS; /sbin/modprobe amdgpu")
    assert lines[-2].endswith("enable_iommu=1 max_num_of_devices=2 ")
    assert lines[-1].endswith("/amdgpu.ko ")
    missing = _show_depends(fresh_machine("rx6800-seed-advice"), "6.1.0-27-amd64", "amdkfd")
    assert missing.returncode == 0  # the install line makes even "modprobe amdkfd" look resolvable


def test_loading_amdgpu_creates_kfd_and_nodes(fresh_machine: Make) -> None:
    spec = (
        MachineBuilder("late").ubuntu2404().with_gpu(0x744C).with_user("alice", groups=["render"]).amdgpu_not_loaded()
    )
    system = fresh_machine(spec.build())
    before = probe(system)
    assert not before.amdgpu.loaded and before.kfd.node.stat is None
    result = system.run(["modprobe", "amdgpu"], timeout=10)
    assert result.ok, result.stderr
    after = probe(system)
    assert after.amdgpu.loaded and after.kfd.version == (1, 14)
    assert after.kfd.node.stat is not None and after.kfd.node.stat.mode == 0o660
    assert [n.gfx for n in after.kfd.gpu_nodes] == ["gfx1100"]
    assert any("added device 1002:744c" in r for r in system.read_kmsg())
    assert assess(after).state == "ready"


def test_bad_sched_policy_logs_the_kernels_failure(fresh_machine: Make) -> None:
    system = fresh_machine("bad-sched-policy")
    records = system.read_kmsg()
    assert any(r.endswith(";amdgpu: sched_policy has invalid value") and r.startswith("3,") for r in records)
    assert not any("Topology: Add CPU node" in r for r in records)


def test_unload_refused_while_driving_the_display(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    result = system.run(["modprobe", "-r", "amdgpu"], timeout=10)
    assert result.returncode == 1 and "is in use" in result.stderr
    assert probe(system).kfd.node.stat is not None


def test_unload_and_reload_a_headless_gpu(fresh_machine: Make) -> None:
    spec = MachineBuilder("compute-only").ubuntu2404().with_gpu(0x744C, boot_vga=False).build()
    system = fresh_machine(spec)
    assert system.run(["modprobe", "-r", "amdgpu"], timeout=10).ok
    gone = probe(system)
    assert gone.kfd.node.stat is None and not gone.amdgpu.loaded and gone.gpus[0].driver is None
    assert system.run(["modprobe", "amdgpu"], timeout=10).ok
    back = probe(system)
    assert back.gpus[0].render_minor == 128 and [n.gfx for n in back.kfd.gpu_nodes] == ["gfx1100"]


def test_modprobe_amdkfd_on_merged_kernel_fails_like_kmod(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    result = system.run(["modprobe", "amdkfd"], timeout=10)
    assert result.returncode == 1
    assert result.stderr == "modprobe: FATAL: Module amdkfd not found in directory /lib/modules/6.8.0-45-generic\n"


def test_coldplug_applies_udev_rules_and_a_local_rule_wins(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    rules = system.root.etc / "udev/rules.d"
    rules.mkdir(parents=True)
    (rules / "71-kfdguard.rules").write_text('SUBSYSTEM=="kfd", GROUP="render", MODE="0660"\n')
    assert probe(system).kfd.node.stat.mode == 0o600  # type: ignore[union-attr]
    # udevadm trigger without --action=add sends "change": permissions stay.
    system.run(["udevadm", "trigger"], timeout=5)
    assert probe(system).kfd.node.stat.mode == 0o600  # type: ignore[union-attr]
    system.run(["udevadm", "trigger", "--action=add"], timeout=5)
    facts = probe(system)
    node = facts.kfd.node.stat
    assert node is not None and node.mode == 0o660 and facts.accounts.group_name(node.gid) == "render"


def test_fault_injection_hang_is_a_real_timeout(fresh_machine: Make) -> None:
    from kfdguard.simulate import state

    system = fresh_machine("780m-ubuntu2204-ga")
    state.set_fault(system.root, "modprobe", "hang")
    result = system.run(["modprobe", "amdgpu"], timeout=0.3)
    assert result.timed_out and not result.ok


def test_spec_is_recorded_with_the_machine(fresh_machine: Make, tmp_path: Path) -> None:
    system = fresh_machine("nvidia-only")
    assert load_spec(system.root) == bundled.load("nvidia-only")
