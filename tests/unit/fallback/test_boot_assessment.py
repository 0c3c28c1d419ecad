"""fallback.policy assess: kfdguard boot-check and kfdguard-boot-check.service (issue 18, item 3).

A boot is bad only when the running kernel is why compute did not come up and
another kernel can run it; anything else (compute up, a permissions problem,
no better kernel, another policy) is good, because a bad mark makes
systemd-boot boot something else.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.cli import main
from kfdguard.facts import BootEntry, Facts
from kfdguard.fallback.assessment import assess_boot, counted
from tests.paths import TOP

UNIT = TOP / "units" / "kfdguard-boot-check.service"
analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def _decide(facts: Facts, mode: str = "if-fallback", policy: str = "assess") -> tuple[bool, str, str | None]:
    verdict = assess(facts)
    assert verdict.fallback is not None
    result = assess_boot(verdict, verdict.fallback, policy, mode, counted=True)
    return result.good, result.reason, result.fallback


def test_a_kernel_that_cannot_while_another_can_is_a_bad_boot(machine_facts: dict[str, Facts]) -> None:
    # amdgpu-dkms did not build for 6.8.0-51; 6.8.0-50 ran compute before.
    good, reason, fallback = _decide(machine_facts["dkms-missing-for-new-kernel"])
    assert not good and fallback == "6.8.0-50-generic"
    assert "6.8.0-51-generic cannot run compute" in reason and "last known good" in reason


def test_compute_up_is_a_good_boot(machine_facts: dict[str, Facts]) -> None:
    good, reason, _ = _decide(machine_facts["rx7900xtx-ubuntu2404"], mode="always")
    assert good and reason.startswith("compute is up")


def test_a_reason_that_is_not_the_kernel_never_marks_a_boot_bad(machine_facts: dict[str, Facts]) -> None:
    good, reason, _ = _decide(machine_facts["kfd-perms-0600"], mode="always")
    assert good and "not because of the kernel" in reason


def test_with_no_better_kernel_the_boot_stays_good_unless_always(machine_facts: dict[str, Facts]) -> None:
    # 4.15 cannot run a Polaris card and it is the only kernel installed.
    legacy = machine_facts["legacy-4.15-amdkfd"]
    good, reason, _ = _decide(legacy)
    assert good and "nothing better to boot" in reason
    good, _, fallback = _decide(legacy, mode="always")
    assert not good and fallback is None


def test_a_kernel_only_known_capable_counts_as_a_fallback(machine_facts: dict[str, Facts]) -> None:
    # 5.15 is too old for the 780M; the installed 6.8 can run it by the tables (never booted yet).
    good, _, fallback = _decide(machine_facts["780m-ubuntu2204-ga"])
    assert not good and fallback == "6.8.0-49-generic"


def test_another_policy_leaves_every_boot_good(machine_facts: dict[str, Facts]) -> None:
    for name in ("dkms-missing-for-new-kernel", "780m-ubuntu2204-ga"):
        good, reason, _ = _decide(machine_facts[name], policy="notify")
        assert good and "fallback.policy is notify" in reason


def test_counted_means_a_running_kernel_entry_with_tries() -> None:
    entries = (
        BootEntry("debian-6.1.conf", "Debian", "6.1.0-27-amd64", kind="type1", tries_left=2, tries_done=1),
        BootEntry("debian-6.12.conf", "Debian", "6.12.9-amd64", kind="type1"),
    )
    assert counted(entries, "6.1.0-27-amd64")
    assert not counted(entries, "6.12.9-amd64")
    assert not counted(entries, "5.10.0-30-amd64")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_the_command_exit_status_follows_the_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: 1\nfallback:\n  policy: assess\n")
    code, out = _cli(capsys, "boot-check", "--machine", "dkms-missing-for-new-kernel", "--config", str(config))
    assert code == 1 and out.startswith("kfdguard boot-check: bad: kernel 6.8.0-51-generic cannot run compute")
    code, out = _cli(capsys, "boot-check", "--machine", "rx7900xtx-ubuntu2404", "--config", str(config), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["good"] is True and doc["policy"] == "assess" and doc["fallback"] is None
    # The machine's own config (policy notify): nothing is judged.
    code, out = _cli(capsys, "boot-check", "--machine", "dkms-missing-for-new-kernel")
    assert code == 0 and "fallback.policy is notify" in out


def test_a_bad_assess_mode_is_a_config_error_not_a_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("version: 1\nfallback:\n  policy: assess\n  assess: sometimes\n")
    _, out = _cli(capsys, "check", "--machine", "rx7900xtx-ubuntu2404", "--config", str(config), "--json")
    findings = {f["code"]: f for f in json.loads(out)["findings"]}
    assert "config-invalid" in findings and "'sometimes' is not valid" in findings["config-invalid"]["message"]


@analyze
def test_the_unit_verifies_and_is_required_by_boot_complete() -> None:
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(UNIT)],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr
    text = UNIT.read_text()
    assert re.search(r"^\[Install\]\nRequiredBy=boot-complete\.target$", text, re.M)
    assert re.search(r"^Before=boot-complete\.target$", text, re.M)
    assert re.search(r"^ExecStart=/usr/bin/python3 -I -m kfdguard boot-check$", text, re.M)


@analyze
def test_the_unit_holds_no_capability() -> None:
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=100", str(UNIT)],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d)", result.stdout)
    assert match, result.stdout + result.stderr
    assert "CapabilityBoundingSet=" in UNIT.read_text()
    assert float(match.group(1)) <= 2.0, result.stdout
