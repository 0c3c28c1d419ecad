"""kfdguard-compute.target and kfdguard-wait.service, checked by systemd's own tools."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import TOP

TARGET, WAIT, SERVICE = (
    TOP / "units" / n for n in ("kfdguard-compute.target", "kfdguard-wait.service", "kfdguard.service")
)
analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def _directives(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


@analyze
def test_the_units_verify_together_without_a_warning() -> None:
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(TARGET), str(WAIT), str(SERVICE)],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0 and result.stderr == "", result.stderr


@analyze
def test_the_wait_service_holds_no_privilege() -> None:
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--threshold=15", str(WAIT)],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d)", result.stdout)
    assert match and float(match.group(1)) <= 1.5 and result.returncode == 0, result.stdout[-400:]


def test_the_target_is_reached_only_through_the_wait() -> None:
    target, wait = _directives(TARGET), _directives(WAIT)
    assert target["Requires"] == ["kfdguard-wait.service"] and target["After"] == ["kfdguard-wait.service"]
    assert wait["Type"] == ["oneshot"] and wait["RemainAfterExit"] == ["yes"]
    assert wait["ExecStart"] == ["/usr/bin/python3 -I -m kfdguard wait"]
    assert "kfdguard.service" in " ".join(wait["After"]) and wait["Wants"] == ["kfdguard.service"]
    # The wait bounds itself (compute.wait_timeout at most 600 s); systemd's own limit is only a backstop above it.
    assert int(wait["TimeoutStartSec"][0].rstrip("s")) > 600
    assert wait["CapabilityBoundingSet"] == [""] and wait["NoNewPrivileges"] == ["yes"]
    # DynamicUser=yes cannot talk to dbus-daemon (systemd issue 22737; vm/scenarios/consumer.sh found it).
    assert "DynamicUser" not in wait and wait["ProtectSystem"] == ["strict"]


def test_the_units_exec_line_runs_the_wait_command() -> None:
    # What ExecStart runs, in this checkout (python3 -I ignores PYTHONPATH, so run from the tree).
    result = subprocess.run(
        [sys.executable, "-m", "kfdguard", "wait", "--timeout", "0", "--bus", "unix:path=/nonexistent", "--root", str(TOP / "tests")],
        cwd=TOP, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1 and "compute not ready" in result.stderr
