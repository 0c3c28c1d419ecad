"""make demo's service part tells the story it promises (the README's first command)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.paths import TOP
from tools import polkitbus

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the service demo needs root, like make demo")


def test_the_service_demo() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tools.demo"], capture_output=True, text=True, timeout=180, check=False,
        cwd=TOP,  # tools/ is not installed: it runs from the tree
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "READY=1 after" in out and 's "ready"' in out
    assert 'bs true "kfdrender (uid 4242) can open /dev/kfd, /dev/dri/renderD128"' in out
    assert "StateChanged ('ready', 'unavailable'" in out and "StateChanged ('unavailable', 'ready'" in out
    assert "the service stopped with status 0" in out and "Traceback" not in out + result.stderr
    if polkitbus.available() is None:
        assert "Reload is not allowed: denied by polkit (org.kfdguard.reload)" in out
