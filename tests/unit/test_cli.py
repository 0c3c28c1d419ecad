"""The kfdguard command as users and scripts run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MACHINES
from tests.unit.assess.test_assess_machines import EXPECTED

EXIT = {"ready": 0, "degraded": 1, "unavailable": 2, "no-device": 3, "error": 4}


def kfdguard(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kfdguard", *args], capture_output=True, text=True, timeout=60, check=check
    )


@pytest.mark.parametrize("name", MACHINES)
def test_check_json_on_each_machine(name: str) -> None:
    result = kfdguard("check", "--machine", name, "--json")
    data = json.loads(result.stdout)
    assert set(data) >= {"state", "ready", "kernel", "gpus", "kfd", "findings", "summary"}
    assert data["state"] == EXPECTED[name][0]
    assert result.returncode == EXIT[data["state"]]
    for finding in data["findings"]:
        assert set(finding) >= {"code", "severity", "message", "remedy", "evidence"}


def test_check_human_output() -> None:
    result = kfdguard("check", "--machine", "rx7900xtx-ubuntu2404")
    assert result.returncode == 0
    out = result.stdout
    assert "State    READY: 1 GPU can compute: AMD Radeon RX 7900 XTX (gfx1100, 0000:03:00.0)" in out
    assert "KFD      /dev/kfd crw-rw----+" not in out  # kfd has no uaccess ACL
    assert "KFD      /dev/kfd crw-rw---- root:render, interface 1.14, topology 1 GPU + 1 CPU node(s)" in out
    assert "0000:03:00.0  1002:744c  AMD Radeon RX 7900 XTX  gfx1100  renderD128  driver=amdgpu  ready" in out


def test_check_on_this_host_tells_the_truth() -> None:
    amd = False
    for dev in Path("/sys/bus/pci/devices").glob("*"):
        try:
            vendor = (dev / "vendor").read_text().strip()
            klass = (dev / "class").read_text().strip()
        except OSError:
            continue
        amd = amd or (vendor == "0x1002" and klass.startswith("0x03"))
    data = json.loads(kfdguard("check", "--json").stdout)
    if amd:
        assert data["state"] != "no-device"
    else:
        assert data["state"] == "no-device"
        codes = [f["code"] for f in data["findings"]]
        if os.geteuid() != 0:
            # Without root the kernel log may be closed (dmesg_restrict, and no journal
            # in a package build's chroot): saying so is the truth there.
            codes = [
                f["code"] for f in data["findings"] if not (f["code"] == "unreadable" and "kernel log" in f["message"])
            ]
        assert codes == ["no-amd-gpu"]


def test_check_root_of_a_rendered_machine(tmp_path: Path) -> None:
    kfdguard("machines", "render", "kfd-perms-0600", str(tmp_path / "m"), check=True)
    data = json.loads(kfdguard("check", "--root", str(tmp_path / "m"), "--json").stdout)
    assert data["state"] == "unavailable" and data["machine"]["name"] == "kfd-perms-0600"


def test_bad_config_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("device:\n  mode: 0x1\n")
    result = kfdguard("check", "--machine", "rx7900xtx-ubuntu2404", "--config", str(config), "--json")
    data = json.loads(result.stdout)
    assert data["state"] == "ready"  # defaults used
    (finding,) = [f for f in data["findings"] if f["code"] == "config-invalid"]
    assert f"{config}:2:9: device.mode: '0x1' is not an octal mode (0..0777)" in finding["message"]


@pytest.mark.parametrize(
    "args",
    [["check", "--machine", "x", "--root", "/"], ["check", "--bogus"], ["nosuchcommand"], []],
)
def test_usage_errors_exit_64(args: list[str]) -> None:
    result = kfdguard(*args)
    assert result.returncode == 64


def test_unknown_machine_is_a_clear_error() -> None:
    result = kfdguard("check", "--machine", "no-such-machine")
    assert result.returncode == 64
    assert "no bundled machine 'no-such-machine'; known: " in result.stderr


def test_machines_lists_every_bundled_machine_with_a_description() -> None:
    data = json.loads(kfdguard("machines", "--json", check=True).stdout)
    assert [m["name"] for m in data] == MACHINES
    assert all(len(m["description"]) > 60 for m in data)


def test_help_documents_exit_codes_and_examples() -> None:
    text = kfdguard("check", "--help", check=True).stdout
    for needle in ("exit status", "0   ready", "3   no-device", "64  usage error", "--json", "--machine", "examples:"):
        assert needle in text
    assert "kfdguard(8)" in kfdguard("--help", check=True).stdout


def test_json_is_the_only_stdout_in_json_mode() -> None:
    env = dict(os.environ, JOURNAL_STREAM="")
    result = subprocess.run(
        [sys.executable, "-m", "kfdguard", "check", "--machine", "nvidia-only", "--json"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    json.loads(result.stdout)
