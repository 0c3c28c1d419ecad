"""Enforcement on simulated machines: plans, results, idempotence, and real kmod on what it writes."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.app.pipeline import enforce
from kfdguard.config import Config, DeviceConfig, ModuleConfig, UsersConfig
from kfdguard.probe import probe
from kfdguard.record import replace
from kfdguard.simulate import bundled
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import State
from tests.conftest import MACHINES, tool
from tests.paths import TOP, unreachable_by

Make = Callable[[str | MachineSpec], SimulatedSystem]
REPAIR = Config(module=ModuleConfig(repair=True))

# Per bundled machine: the dry-run plan (kind, target) and the state after enforcing
# (with repairs allowed) and, where a reboot is what remains, after rebooting.
PLANS: dict[str, tuple[list[tuple[str, str]], State, State]] = {
    "rx7900xtx-ubuntu2404": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.READY, State.READY,
    ),
    "kfd-perms-0600": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev"), ("fix-node", "/dev/kfd")],
        State.READY, State.READY,
    ),
    "rx6800-seed-advice": (
        [("comment-out", "/etc/modprobe.d/amdkfd.conf"), ("comment-out", "/etc/modules-load.d/modules.conf"),
         ("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.READY, State.READY,
    ),
    "bad-sched-policy": (
        [("comment-out", "/etc/modprobe.d/amdgpu-tuning.conf"), ("write-file", "/etc/udev/rules.d/71-kfdguard.rules"),
         ("udev-reload", "udev")],
        State.UNAVAILABLE, State.READY,
    ),
    "legacy-4.15-amdkfd": (
        [("write-file", "/etc/modprobe.d/kfdguard.conf"), ("write-file", "/etc/udev/rules.d/71-kfdguard.rules"),
         ("udev-reload", "udev")],
        State.UNAVAILABLE, State.UNAVAILABLE,
    ),
    "780m-ubuntu2204-ga": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.UNAVAILABLE, State.READY,  # the next boot starts the installed HWE kernel, GRUB's default
    ),
    "no-hsa-amd": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.UNAVAILABLE, State.UNAVAILABLE,
    ),
    "nvidia-only": ([], State.NO_DEVICE, State.NO_DEVICE),
    "dgpu-plus-igpu-atomics": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.DEGRADED, State.DEGRADED,
    ),
    "dkms-missing-for-new-kernel": (
        [("write-file", "/etc/udev/rules.d/71-kfdguard.rules"), ("udev-reload", "udev")],
        State.UNAVAILABLE, State.UNAVAILABLE,
    ),
}  # fmt: skip


def test_every_machine_has_a_plan_expectation() -> None:
    assert sorted(PLANS) == sorted(MACHINES)


@pytest.mark.parametrize("name", sorted(PLANS))
def test_dry_run_plan_then_apply_then_idempotent(name: str, fresh_machine: Make) -> None:
    system = fresh_machine(name)
    expected_plan, after_state, after_reboot = PLANS[name]
    before_files = sorted(p.relative_to(system.root.path) for p in Path(system.root.etc).rglob("*"))
    report, before, after = enforce(system, REPAIR, dry_run=True)
    assert [(c.action.kind, c.action.target) for c in report.changes] == expected_plan
    assert all(c.status in ("would-change", "unchanged") for c in report.changes)
    assert sorted(p.relative_to(system.root.path) for p in Path(system.root.etc).rglob("*")) == before_files
    assert after.state == before.state  # nothing happened
    report, _, after = enforce(system, REPAIR)
    assert not report.failed, report.changes
    assert after.state == after_state
    again, _, _ = enforce(system, REPAIR)
    assert [c.status for c in again.changes if c.status not in ("unchanged",)] == []
    system.reboot()
    rebooted = enforce(system, REPAIR, dry_run=True)[1]
    assert rebooted.state == after_reboot


def test_seed_advice_is_disabled_with_a_backup(fresh_machine: Make) -> None:
    system = fresh_machine("rx6800-seed-advice")
    _, _, after = enforce(system, REPAIR)
    text = (system.root.etc / "modprobe.d/amdkfd.conf").read_text()
    assert "# kfdguard disabled: softdep amdgpu pre: amdkfd" in text
    assert "# kfdguard disabled: options amdkfd enable_iommu=1 max_num_of_devices=2" in text
    modules = (system.root.etc / "modules").read_text()  # the file the modules-load.d symlink names
    assert "# kfdguard disabled: amdkfd" in modules
    assert (system.root.etc / "modules-load.d/modules.conf").is_symlink()
    backups = sorted(p for p in Path(system.root.var_lib / "kfdguard/backups").rglob("*") if p.is_file())
    assert {p.name for p in backups} == {"amdkfd.conf", "modules"}
    original = next(p for p in backups if p.name == "amdkfd.conf").read_text()
    assert original.splitlines()[1] == "softdep amdgpu pre: amdkfd"
    assert "softdep-missing-module" not in after.codes()
    system.reboot()
    journal = "\n".join(system.read_journal(0)[0][1])
    assert "Failed to find module" not in journal  # the next boot is clean


def test_without_repair_foreign_files_are_only_reported(fresh_machine: Make) -> None:
    system = fresh_machine("rx6800-seed-advice")
    before = (system.root.etc / "modprobe.d/amdkfd.conf").read_text()
    _, _, after = enforce(system, Config())
    assert (system.root.etc / "modprobe.d/amdkfd.conf").read_text() == before
    assert "softdep-missing-module" in after.codes()
    assert any("module.repair" in f.remedy for f in after.by_code("softdep-missing-module"))


def test_loading_amdgpu_then_fixing_the_new_nodes(fresh_machine: Make) -> None:
    spec = MachineBuilder("late").ubuntu2404().with_gpu(0x744C).without_kfd_udev_rule().amdgpu_not_loaded()
    system = fresh_machine(spec.with_user("alice", groups=["render"]).build())
    config = Config(
        module=ModuleConfig(options=(("sched_policy", "1"), ("cwsr_enable", "0"))), device=DeviceConfig(udev_rule=False)
    )
    report, before, after = enforce(system, config)
    kinds = [(c.action.kind, c.status) for c in report.changes]
    assert kinds == [("write-file", "changed"), ("load-module", "changed"), ("fix-node", "changed")]
    assert before.state is State.UNAVAILABLE and after.state is State.READY
    facts = probe(system)
    assert facts.amdgpu.params["sched_policy"] == "1" and facts.amdgpu.params["cwsr_enable"] == "0"
    assert facts.kfd.node.stat is not None and facts.kfd.node.stat.mode == 0o660
    # sched_policy is a plain module_param up to 6.12 (issue 22; 7.2 makes it _unsafe): 6.8 does not taint.
    assert "module-param-taints" not in after.codes()


def test_generated_modprobe_conf_as_real_kmod_reads_it(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    config = Config(module=ModuleConfig(options=(("sched_policy", "1"), ("cwsr_enable", "0"))))
    enforce(system, config)
    root, release = str(system.root.path), "6.8.0-45-generic"
    conf = (system.root.etc / "modprobe.d/kfdguard.conf").read_text()
    assert conf.startswith("# Generated by kfdguard") and conf.endswith("options amdgpu sched_policy=1 cwsr_enable=0\n")
    assert subprocess.run([tool("depmod"), "-b", root, release], check=False, timeout=60).returncode == 0
    show = subprocess.run(
        [tool("modprobe"), "-C", f"{root}/etc/modprobe.d", "-d", root, "-S", release, "--showconfig"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert "options amdgpu sched_policy=1 cwsr_enable=0" in show.splitlines()
    depends = subprocess.run(
        [tool("modprobe"), "-C", f"{root}/etc/modprobe.d", "-d", root, "-S", release, "--dry-run", "--show-depends", "amdgpu"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert depends.splitlines()[-1].rstrip().endswith("amdgpu.ko.zst sched_policy=1 cwsr_enable=0")


def test_a_line_ending_in_an_escaped_backslash_is_disabled_alone_as_kmod_reads_it(fresh_machine: Make) -> None:
    # "C:\\\\" ends in an escaped backslash: kmod reads two directives, not one continued line. Only the
    # second is wrong, and only it is disabled; the first stays as kmod read it.
    spec = bundled.load("bad-sched-policy")
    tuning = "/etc/modprobe.d/amdgpu-tuning.conf"
    text = "# tuning for compute\noptions amdgpu lockup_timeout=10000 \\\\\noptions amdgpu sched_policy=9\n"
    system = fresh_machine(replace(spec, files={**spec.files, tuning: text}))
    report, _, _ = enforce(system, REPAIR)
    assert not report.failed, report.changes
    lines = (system.root.etc / "modprobe.d/amdgpu-tuning.conf").read_text().splitlines()
    assert lines[2] == "options amdgpu lockup_timeout=10000 \\\\"
    assert lines[3] == "# kfdguard disabled: options amdgpu sched_policy=9"
    show = subprocess.run(
        [tool("modprobe"), "-C", f"{system.root.path}/etc/modprobe.d", "--showconfig"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.splitlines()  # fmt: skip
    assert "options amdgpu lockup_timeout=10000 \\" in show
    assert not [line for line in show if "sched_policy" in line]


def test_separate_amdkfd_layout_gets_its_ordering_as_kmod_resolves_it(fresh_machine: Make) -> None:
    system = fresh_machine("legacy-4.15-amdkfd")
    enforce(system, Config(module=ModuleConfig(options=(("sched_policy", "0"),))))
    root, release = str(system.root.path), "4.15.0-213-generic"
    conf = (system.root.etc / "modprobe.d/kfdguard.conf").read_text()
    assert "softdep amdgpu pre: amdkfd" in conf and "options amdkfd sched_policy=0" in conf
    subprocess.run([tool("depmod"), "-b", root, release], check=True, timeout=60)
    depends = subprocess.run(
        [tool("modprobe"), "-C", f"{root}/etc/modprobe.d", "-d", root, "-S", release, "--show-depends", "amdgpu"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.splitlines()  # fmt: skip
    names = [line.split()[1].rsplit("/", 1)[-1] for line in depends]
    assert names.index("amdkfd.ko") < names.index("amdgpu.ko")
    assert "sched_policy=0" in next(line for line in depends if "amdkfd.ko" in line)


def test_refused_options_change_nothing(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    config = Config(module=ModuleConfig(options=(("sched_policy", "1"), ("enable_iommu", "1"))))
    report, _, after = enforce(system, config)
    assert not (system.root.etc / "modprobe.d/kfdguard.conf").exists()
    assert "write-file" not in [c.action.kind for c in report.changes if c.action.target.endswith("kfdguard.conf")]
    (refused,) = after.by_code("module-param-unknown")
    assert "enable_iommu" in refused.message


@pytest.mark.parametrize("option", [("sched_policy", "7"), ("enable_iommu", "1")])
def test_refused_options_change_nothing_without_a_gpu_either(fresh_machine: Make, option: tuple[str, str]) -> None:
    """A machine with amdgpu but no AMD GPU (the VM lane's): the options are still checked before any write."""
    spec = MachineBuilder("no-gpu").debian12().build().with_changes(amdgpu_loaded=True)
    system = fresh_machine(spec)
    _, _, after = enforce(system, Config(module=ModuleConfig(options=(option,))))
    assert not (system.root.etc / "modprobe.d/kfdguard.conf").exists()
    assert after.state is State.NO_DEVICE
    assert {"module-param-invalid", "module-param-unknown"} & set(after.codes())


def test_removing_options_removes_our_file(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    enforce(system, Config(module=ModuleConfig(options=(("cwsr_enable", "0"),))))
    assert (system.root.etc / "modprobe.d/kfdguard.conf").exists()
    report, _, _ = enforce(system, Config())
    assert ("remove-file", "changed") in [(c.action.kind, c.status) for c in report.changes]
    assert not (system.root.etc / "modprobe.d/kfdguard.conf").exists()


def test_a_foreign_file_at_our_path_is_backed_up(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    path = system.root.etc / "udev/rules.d/71-kfdguard.rules"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# someone's own rule\n")
    report, _, _ = enforce(system, Config())
    change = next(c for c in report.changes if c.action.target.endswith("71-kfdguard.rules"))
    assert "saved as /var/lib/kfdguard/backups/" in change.detail
    saved = next(Path(system.root.var_lib / "kfdguard/backups").rglob("71-kfdguard.rules"))
    assert saved.read_text() == "# someone's own rule\n"


def test_configured_users_are_added(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    report, _, after = enforce(system, Config(users=UsersConfig(add_to_group=("bob", "nosuchuser"))))
    assert ("add-to-group", "bob", "changed") in [(c.action.kind, c.action.target, c.status) for c in report.changes]
    assert "user-not-in-group" not in after.codes()
    group = next(line for line in (system.root.etc / "group").read_text().splitlines() if line.startswith("render:"))
    assert group.endswith(":bob")


def test_coldplug_keeps_the_permissions_after_enforce(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    enforce(system, Config())
    system.run(["udevadm", "trigger", "--action=add"], timeout=5)
    node = probe(system).kfd.node.stat
    assert node is not None and node.mode == 0o660  # the rule, not just the chmod


def test_initramfs_is_reported_or_regenerated(fresh_machine: Make) -> None:
    spec = MachineBuilder("initrd").ubuntu2404().with_gpu(0x744C).with_user("a", groups=["render"])
    spec = spec.with_kernel("6.8.0-45-generic", amdgpu_in_initrd=True, compression="zst", kfd_interface=(1, 14))
    options = ModuleConfig(options=(("cwsr_enable", "0"),))
    report, _, after = enforce(fresh_machine(spec.build()), Config(module=options))
    (stale,) = after.by_code("initramfs-stale") or report.findings
    assert "sudo update-initramfs -u -k 6.8.0-45-generic" in stale.remedy
    regen = Config(module=ModuleConfig(options=(("cwsr_enable", "0"),), initramfs="regenerate"))
    report, _, _ = enforce(fresh_machine(spec.build()), regen)
    (change,) = [c for c in report.changes if c.action.kind == "regenerate-initramfs"]
    assert change.status == "changed"


def test_udev_template_in_the_tree_is_what_kfdguard_writes(fresh_machine: Make) -> None:
    from kfdguard import __version__

    template = (TOP / "udev/71-kfdguard.rules.in").read_text()
    system = fresh_machine("rx7900xtx-ubuntu2404")
    enforce(system, Config(device=DeviceConfig(group="video", mode=0o660)))
    written = (system.root.etc / "udev/rules.d/71-kfdguard.rules").read_text()
    expected = template.replace("@VERSION@", __version__).replace("@GROUP@", "video").replace("@MODE@", "0660")
    assert written == expected


def test_cli_enforce_dry_run_and_json(fresh_machine: Make) -> None:
    import json
    import sys

    system = fresh_machine("kfd-perms-0600")
    args = [sys.executable, "-m", "kfdguard", "enforce", "--root", str(system.root.path)]
    dry = subprocess.run([*args, "--dry-run"], capture_output=True, text=True, timeout=60, check=False)
    assert dry.returncode == 2  # still unavailable: nothing changed
    assert "+ fix-node             /dev/kfd  [would change]" in dry.stdout
    assert "+# /dev/kfd: every ROCm program opens it read-write." in dry.stdout  # the diff is shown
    done = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=60, check=False)
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["state"] == "ready" and data["state_before"] == "unavailable"
    assert {c["target"]: c["status"] for c in data["changes"]}["/dev/kfd"] == "changed"


def test_cli_enforce_on_the_real_root_needs_root() -> None:
    import os
    import shutil
    import sys

    argv = [sys.executable, "-m", "kfdguard", "enforce"]
    if os.geteuid() == 0:
        # Run it as nobody, as an ordinary user would (setpriv is util-linux, always there).
        argv = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        if why := unreachable_by(65534):
            pytest.skip(why)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=str(TOP))
    assert result.returncode == 64 and "run it as root" in result.stderr


def test_reload_only_an_unused_headless_amdgpu(fresh_machine: Make) -> None:
    config = Config(module=ModuleConfig(options=(("cwsr_enable", "0"),), reload=True))
    headless = MachineBuilder("compute").ubuntu2404().with_gpu(0x744C, boot_vga=False).with_user("a", groups=["render"])
    system = fresh_machine(headless.build())
    report, _, after = enforce(system, config)
    assert ("reload-module", "changed") in [(c.action.kind, c.status) for c in report.changes]
    assert probe(system).amdgpu.params["cwsr_enable"] == "0" and "module-param-mismatch" not in after.codes()
    display = fresh_machine("rx7900xtx-ubuntu2404")
    report, _, after = enforce(display, config)
    assert "reload-module" not in [c.action.kind for c in report.changes]
    assert "module-param-mismatch" in after.codes()  # it drives the display: applied at the next boot
    assert probe(display).amdgpu.loaded
