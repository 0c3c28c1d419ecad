"""Linters are tests: ruff (check and format) and mypy --strict over the whole project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.paths import TOP


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=TOP, capture_output=True, text=True, timeout=600, check=False
    )


def test_ruff_check() -> None:
    result = _run("ruff", "check", "kfdguard", "tests", "vm", "benchmarks", "tools", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run("ruff", "format", "--check", "kfdguard", "tests", "vm", "benchmarks", "tools", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = _run("mypy", "--strict", "kfdguard", "tests", "vm", "benchmarks", "tools", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


FUNCTION_LINES = 80


def _long_functions(path: Path, top: Path = TOP) -> list[str]:
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > FUNCTION_LINES:
                found.append(f"{path.relative_to(top)}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_function_is_longer_than_80_lines() -> None:
    # Data tables are module-level constants, not functions: they are not counted.
    files = [p for d in ("kfdguard", "tools", "tests", "benchmarks", "vm") for p in sorted((TOP / d).rglob("*.py"))]
    long = [f for p in files for f in _long_functions(p)]
    assert long == []


def test_the_length_check_counts_lines(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LINES))
    path = tmp_path / "sample.py"
    path.write_text(f"def long():\n{body}\n\n\ndef short():\n    pass\n")
    assert _long_functions(path, tmp_path) == [f"sample.py:1 long: {FUNCTION_LINES + 1} lines"]
