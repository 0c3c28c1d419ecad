"""gjs tests of the extension's client against the real service on a private bus (tests/gnome/js/test_client.js)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tool
from tests.gnome.kit import REPO
from tests.servicekit import machine
from tools.privatebus import PrivateBus

SCRIPT = Path(__file__).resolve().parent / "js/test_client.js"
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root may own the name on a system-like bus (CI runs as root)"
)


def test_client_follows_the_service(tmp_path: Path) -> None:
    root = machine("rx7900xtx-ubuntu2404", tmp_path)
    with PrivateBus() as bus:
        service = [sys.executable, "-m", "kfdguard.service", "--root", str(root), "--bus", bus.address, "--no-enforce"]
        env = {**bus.env(), "KFDGUARD_MACHINE": str(root), "KFDGUARD_SERVICE_ARGV": json.dumps(service)}
        for name in ("NOTIFY_SOCKET", "JOURNAL_STREAM"):
            env.pop(name, None)
        result = subprocess.run(
            [tool("gjs"), "-m", str(SCRIPT)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    output = result.stdout + result.stderr
    plan = re.search(r"^1\.\.(\d+)$", result.stdout, re.M)
    assert plan, output
    passed = re.findall(r"^ok \d+ - (.*)$", result.stdout, re.M)
    assert result.returncode == 0 and len(passed) == int(plan.group(1)), output
    # The scenario the issue asks for is in the plan (a renamed test must not silently drop it).
    for name in ("the service appears", "a permission problem", "the service stops", "the service comes back"):
        assert any(p.startswith(name) for p in passed), (name, passed)
