"""Linters are tests: ruff (check and format) and mypy --strict over the whole project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=TOP, capture_output=True, text=True, timeout=600, check=False
    )


def test_ruff_check() -> None:
    result = _run("ruff", "check", "kfdguard", "tests", "vm", "benchmarks", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run("ruff", "format", "--check", "kfdguard", "tests", "vm", "benchmarks", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run("mypy", "--strict", "kfdguard", "tests", "vm", "benchmarks", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr
