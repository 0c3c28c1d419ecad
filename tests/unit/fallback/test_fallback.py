"""The kernel-fallback policy on simulated /boot trees, with the real GRUB tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable

import pytest

from kfdguard.assess import assess
from kfdguard.config import Config, FallbackConfig
from kfdguard.fallback.apply import after_check, arrange, clear
from kfdguard.probe import probe
from kfdguard.simulate import bundled, state
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from tests.conftest import tool

Make = Callable[[str | MachineSpec], SimulatedSystem]
UUID = "6a1c6f0e-3e0b-4c53-9c1e-5b0f4e0d2a11"


def entry(release: str) -> str:
    return f"gnulinux-advanced-{UUID}>gnulinux-{release}-advanced-{UUID}"


def grubenv(system: SimulatedSystem) -> dict[str, str]:
    out = subprocess.run([tool("grub-editenv"), str(system.root.boot / "grub/grubenv"), "list"],
                         capture_output=True, text=True, check=True, timeout=30).stdout  # fmt: skip
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def recommendation(system: SimulatedSystem, policy: str = "notify") -> object:
    verdict = assess(probe(system), Config(fallback=FallbackConfig(policy)))
    return verdict.fallback


def test_bundled_recommendations(fresh_machine: Make) -> None:
    from kfdguard.verdict import Recommendation

    expected = {
        "780m-ubuntu2204-ga": ("6.8.0-49-generic", True),  # the HWE kernel, installed and already the default
        "dkms-missing-for-new-kernel": ("6.8.0-50-generic", False),  # the previous kernel, last known good
        "no-hsa-amd": ("6.1.0-27-amd64", False),  # Debian's own kernel has KFD
        "rx7900xtx-ubuntu2404": (None, False),
        "nvidia-only": (None, False),
        "legacy-4.15-amdkfd": (None, False),  # nothing newer is installed
    }
    for name, (kernel, default) in expected.items():
        rec = recommendation(fresh_machine(name))
        assert isinstance(rec, Recommendation)
        assert (rec.kernel, rec.already_default) == (kernel, default), name
    dkms = recommendation(fresh_machine("dkms-missing-for-new-kernel"))
    assert isinstance(dkms, Recommendation) and dkms.reason == "it ran compute before (last known good)"


def test_oneshot_through_the_real_grub_reboot_then_clear(fresh_machine: Make) -> None:
    system = fresh_machine("dkms-missing-for-new-kernel")
    facts = probe(system)
    rec = assess(facts).fallback
    assert rec is not None
    outcome, _history = arrange(system, facts, rec, "oneshot")
    assert outcome.ok, outcome.message
    assert grubenv(system) == {"next_entry": entry("6.8.0-50-generic")}
    saved = json.loads((system.root.var_lib / "kfdguard/history.json").read_text())
    assert saved["attempts"][-1]["to"] == "6.8.0-50-generic" and saved["attempts"][-1]["result"] == "pending"
    assert probe(system).bootloader.next_entry == entry("6.8.0-50-generic")
    outcome, _ = clear(system, probe(system))
    assert outcome.ok and grubenv(system) == {}
    assert (
        json.loads((system.root.var_lib / "kfdguard/history.json").read_text())["attempts"][-1]["result"] == "cleared"
    )


def test_the_attempt_is_recorded_before_the_boot_loader_is_touched(fresh_machine: Make) -> None:
    system = fresh_machine("dkms-missing-for-new-kernel")
    state.set_fault(system.root, "grub-reboot", "fail:grub-reboot: error: cannot open grubenv")
    facts = probe(system)
    rec = assess(facts).fallback
    assert rec is not None
    outcome, _ = arrange(system, facts, rec, "oneshot")
    assert not outcome.ok and "cannot open grubenv" in outcome.message
    attempts = json.loads((system.root.var_lib / "kfdguard/history.json").read_text())["attempts"]
    assert [(a["to"], a["result"]) for a in attempts] == [("6.8.0-50-generic", "failed")]
    assert grubenv(system) == {}


def test_pin_needs_grub_default_saved_and_is_undone(fresh_machine: Make) -> None:
    spec = bundled.load("dkms-missing-for-new-kernel")
    refused = fresh_machine(spec)
    facts = probe(refused)
    outcome, _ = arrange(refused, facts, assess(facts).fallback, "pin")  # type: ignore[arg-type]
    assert not outcome.ok and "GRUB_DEFAULT=saved" in outcome.message
    system = fresh_machine(spec.with_changes(grub_default="saved"))
    facts = probe(system)
    outcome, _ = arrange(system, facts, assess(facts).fallback, "pin")  # type: ignore[arg-type]
    assert outcome.ok, outcome.message
    assert grubenv(system)["saved_entry"] == entry("6.8.0-50-generic")
    assert probe(system).bootloader.default_release == "6.8.0-50-generic"
    outcome, _ = clear(system, probe(system))
    assert outcome.ok and grubenv(system)["saved_entry"] == "0"


@pytest.mark.parametrize(
    ("boot_fs", "why"),
    [
        ("btrfs /dev/nvme0n1p2", "btrfs"),
        ("zfs rpool/ROOT/ubuntu", "zfs"),
        ("ext4 /dev/mapper/vg0-root", "RAID or LVM"),
        ("ext4 /dev/md0", "RAID or LVM"),
    ],
)
def test_no_oneshot_where_grub_cannot_write_its_environment(fresh_machine: Make, boot_fs: str, why: str) -> None:
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(boot_fs=boot_fs))
    facts = probe(system)
    outcome, _ = arrange(system, facts, assess(facts).fallback, "oneshot")  # type: ignore[arg-type]
    assert not outcome.ok and why in outcome.message and "would become permanent" in outcome.message
    assert grubenv(system) == {}
    assert not (system.root.var_lib / "kfdguard/history.json").read_text().count('"attempts": [\n  {')


def test_systemd_boot_oneshot(fresh_machine: Make) -> None:
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))
    facts = probe(system)
    assert facts.bootloader.kind == "systemd-boot"
    assert {e.id: e.release for e in facts.bootloader.entries} == {
        "ubuntu-6.8.0-50-generic.conf": "6.8.0-50-generic",
        "ubuntu-6.8.0-51-generic.conf": "6.8.0-51-generic",
    }
    rec = assess(facts).fallback
    assert rec is not None and rec.command == "sudo bootctl set-oneshot ubuntu-6.8.0-50-generic.conf && sudo reboot"
    outcome, _ = arrange(system, facts, rec, "oneshot")
    assert outcome.ok and outcome.commands == ("bootctl set-oneshot ubuntu-6.8.0-50-generic.conf",)
    assert probe(system).bootloader.next_entry == "ubuntu-6.8.0-50-generic.conf"
    system.reboot()
    after = probe(system)
    assert after.kernel.release == "6.8.0-50-generic" and after.bootloader.next_entry is None  # consumed


def test_bls_entries_parse_like_real_bootctl(fresh_machine: Make) -> None:
    if os.geteuid() != 0:
        pytest.skip("bootctl needs the ESP to be a mount point: a bind mount needs root (CI runs as root)")
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))
    esp = system.root.efi
    subprocess.run(["mount", "--bind", str(esp), str(esp)], check=True, timeout=30)
    try:
        listed = subprocess.run(
            [shutil.which("bootctl") or "bootctl", f"--esp-path={esp}", "--no-variables", "list", "--json=short"],
            capture_output=True, text=True, timeout=30, check=True, env={**os.environ, "SYSTEMD_RELAX_ESP_CHECKS": "1"},
        ).stdout  # fmt: skip
    finally:
        subprocess.run(["umount", str(esp)], check=False, timeout=30)
    # systemd 252 prints one JSON object per entry, a line each.
    real = {e["id"]: e["version"] for e in map(json.loads, listed.splitlines())}
    ours = {e.id: e.release for e in probe(system).bootloader.entries}
    assert real == ours


def test_policy_oneshot_end_to_end_and_no_loop(fresh_machine: Make) -> None:
    config = Config(fallback=FallbackConfig("oneshot"))

    def check(system: SimulatedSystem) -> tuple[str, str, object]:
        facts = probe(system)
        verdict = assess(facts, config)
        assert verdict.fallback is not None
        _, outcome, _why = after_check(system, facts, verdict.ready, verdict.fallback)
        return facts.kernel.release, str(verdict.state), outcome

    system = fresh_machine("dkms-missing-for-new-kernel")
    release, status, outcome = check(system)
    assert (release, status) == ("6.8.0-51-generic", "unavailable") and outcome is not None
    assert check(system)[2] is None  # at most one automatic attempt per boot
    system.reboot()
    release, status, outcome = check(system)
    assert (release, status, outcome) == ("6.8.0-50-generic", "ready", None)
    history = json.loads((system.root.var_lib / "kfdguard/history.json").read_text())
    assert [a["result"] for a in history["attempts"]] == ["ok"]

    # Now the previous kernel breaks too (say its DKMS module was removed): one attempt, then no more.
    spec = bundled.load("dkms-missing-for-new-kernel")
    broken = spec.with_changes(gpus=tuple(g.__class__(**{**g.__dict__, "outcomes": (("6.8.0-50-generic", "init-failed"),)})
                                         for g in spec.gpus))  # fmt: skip
    system = fresh_machine(broken)
    attempts = 0
    for _ in range(6):
        _, _, outcome = check(system)
        attempts += outcome is not None
        system.reboot()
    assert attempts == 1
    history = json.loads((system.root.var_lib / "kfdguard/history.json").read_text())
    assert [a["result"] for a in history["attempts"]] == ["failed"]
    rec = assess(probe(system), config).fallback
    assert rec is not None and rec.kernel is None and "no other installed, bootable kernel" in rec.reason


def test_notify_and_off_never_touch_the_boot_loader(fresh_machine: Make) -> None:
    for policy in ("off", "notify"):
        system = fresh_machine("dkms-missing-for-new-kernel")
        facts = probe(system)
        verdict = assess(facts, Config(fallback=FallbackConfig(policy)))
        assert verdict.fallback is not None
        _, outcome, why = after_check(system, facts, verdict.ready, verdict.fallback)
        assert outcome is None and f"policy {policy}" in why
        assert grubenv(system) == {}
        log = system.root.path / ".kfdguard-sim/commands.log"
        assert not log.exists() or "grub" not in log.read_text()
        assert ("fallback-available" in verdict.codes()) == (policy == "notify")


def test_corrupt_history_is_a_finding_and_replaced(fresh_machine: Make) -> None:
    system = fresh_machine("dkms-missing-for-new-kernel")
    path = system.root.var_lib / "kfdguard/history.json"
    path.write_text("{not json")
    facts = probe(system)
    verdict = assess(facts)
    assert "history-unusable" in verdict.codes()
    assert verdict.fallback is not None
    after_check(system, facts, verdict.ready, verdict.fallback)
    assert json.loads(path.read_text())["version"] == 1


def test_cli_status_and_apply(fresh_machine: Make) -> None:
    import sys

    system = fresh_machine("dkms-missing-for-new-kernel")
    args = [sys.executable, "-m", "kfdguard", "fallback", "--root", str(system.root.path), "--json"]
    status = json.loads(subprocess.run(args, capture_output=True, text=True, check=True, timeout=60).stdout)
    assert status["recommended"] == "6.8.0-50-generic" and status["result"] is None
    applied = subprocess.run([*args[:4], "apply", *args[4:]], capture_output=True, text=True, timeout=60, check=False)
    assert applied.returncode == 0 and json.loads(applied.stdout)["result"]["ok"]
    assert grubenv(system)["next_entry"] == entry("6.8.0-50-generic")


def test_the_history_counts_boots_not_checks(fresh_machine: Make) -> None:
    """Re-checks within one boot update that boot's outcome; a reboot adds one; no AMD GPU records nothing."""
    from kfdguard.facts import History
    from kfdguard.fallback.policy import record_check

    system = fresh_machine("rx7900xtx-ubuntu2404")
    facts = probe(system, log="never")
    release = facts.kernel.release
    history = History()
    for ready in (False, False, True):  # a failed pass, a failed re-check, then a repair: one boot, which worked
        history = record_check(history, facts, ready, "2026-11-29T00:00:00Z")
    record = history.kernels[release]
    assert (record.ok, record.failed, record.last) == (1, 0, "ok")
    system.reboot()
    after_reboot = probe(system, log="never")
    assert after_reboot.kernel.boot_id != facts.kernel.boot_id
    history = record_check(history, after_reboot, False, "2026-11-29T01:00:00Z")
    record = history.kernels[release]
    assert (record.ok, record.failed, record.last) == (1, 1, "failed")

    no_gpu = probe(fresh_machine("nvidia-only"), log="never")
    assert record_check(History(), no_gpu, False, "2026-11-29T00:00:00Z").kernels == {}
