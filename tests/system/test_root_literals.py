"""Every host path goes through Root: no other module spells /sys, /dev, /etc... itself.

Messages may mention such paths in prose (they contain spaces); a string that
starts with one of them and looks like a path is what would be opened.
"""

from __future__ import annotations

import ast

from tests.paths import TOP

PACKAGE = TOP / "kfdguard"
PREFIXES = ("/sys", "/dev", "/proc", "/etc", "/boot", "/lib/modules", "/run", "/var/lib", "/usr/lib", "/lib/")
# root.py owns the paths; the simulator describes machines in their own terms
# and maps every such path through Root.join; diagnose reads paths that appear
# in text pasted from other machines and opens nothing. (The test and demo
# infrastructure, tools/, is outside the package and not scanned.)
# evidence/text.py is where diagnose's reading of pasted text moved; knowledge/appformats.py
# holds the userspace message formats it matches (paths as programs print them) and
# assess/app_rules.py, assess/report_rules.py and assess/stack_rules.py the rules over those messages: all read
# text and open nothing.
EXEMPT = {"root.py"}
EXEMPT_DIRS = {"simulate", "diagnose"}
EXEMPT_PATHS = {
    "evidence/text.py",
    "knowledge/appformats.py",
    "assess/app_rules.py",
    "assess/report_rules.py",
    "assess/stack_rules.py",
}


def _path_like_constants(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = str(node.values[0].value)
            if text.startswith(PREFIXES) and " " not in text:
                found.append((node.lineno, text + "{…}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            text = node.value
            if text.startswith(PREFIXES) and " " not in text and "\n" not in text:
                found.append((node.lineno, text))
    return found


def test_no_host_path_literals_outside_root() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.name in EXEMPT or rel.parts[0] in EXEMPT_DIRS or rel.as_posix() in EXEMPT_PATHS:
            continue
        # Docstrings and JoinedStr parts inside them are prose; skip module/function docstrings.
        tree = ast.parse(path.read_text())
        for lineno, text in _path_like_constants(tree):
            offenders.append(f"{rel}:{lineno}: {text!r}")
    assert offenders == []


def test_the_check_itself_catches_a_literal() -> None:
    tree = ast.parse('open("/sys/class/kfd/kfd/topology/generation_id")\nx = f"/dev/dri/{name}"\n')
    assert sorted(t for _, t in _path_like_constants(tree)) == [
        "/dev/dri/{…}",
        "/sys/class/kfd/kfd/topology/generation_id",
    ]
