"""No function in the package over 80 lines (issue 14), except those listed with their owner."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kfdguard"
LIMIT = 80
# Temporary: functions in files outside the evidence/rules work, to be split by their owners.
KNOWN = {
    ("cli.py", "build_parser"),  # part A (cli.py becomes parsing only)
    ("simulate/spec.py", "spec_from_dict"),  # neither part: the lead assigns it
}


def test_no_function_is_over_80_lines() -> None:
    long = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > LIMIT:
                    long.add((path.relative_to(PACKAGE).as_posix(), node.name))
    assert long <= KNOWN, sorted(long - KNOWN)
