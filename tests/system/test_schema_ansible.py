"""docs/examples/ansible-kfdguard.yml run by real ansible-playbook against this host (connection local)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.paths import TOP

REPO = TOP
PLAYBOOK = REPO / "docs" / "examples" / "ansible-kfdguard.yml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("ansible-playbook") is None, reason="ansible-playbook (Debian's ansible-core) is not installed"
    ),
]


def play(machine: str) -> subprocess.CompletedProcess[str]:
    check = f"{sys.executable} -m kfdguard check --machine {machine} --json"
    env = os.environ | {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", f"kfdguard_check='{check}'", str(PLAYBOOK)],
        capture_output=True, text=True, timeout=180, env=env, cwd=REPO, check=False,
    )  # fmt: skip


def test_a_host_that_cannot_compute_fails_with_the_headline_finding() -> None:
    result = play("kfd-perms-0600")
    assert result.returncode != 0, result.stdout
    assert "failed=1" in result.stdout
    assert "kfdguard: unavailable (exit status 2): device-permissions: /dev/kfd is crw-------" in result.stdout


def test_a_ready_host_passes() -> None:
    result = play("rx7900xtx-ubuntu2404")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "failed=0" in result.stdout
    assert "kfdguard: ready: 1 GPU can compute" in result.stdout
