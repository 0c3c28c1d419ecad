"""No import circle between kfdguard's modules.

A circle means modules that can only be understood, tested and moved together: usually a
record defined above the code that reads it, or a shared name kept in the adapter that
first needed it (docs/ARCHITECTURE.md, "Layout"). The graph is built from the source with
``ast`` (nothing of the package is imported) and holds every import that runs when a module
is imported, in if/try/with blocks and class bodies included, plus those under
``if TYPE_CHECKING:``: a type-only import is still a dependency of the design, and mypy
reads the modules of a circle as one unit.

Imports inside a function body are left out on purpose: they run when the function is
called, not when the module is imported, and the boot path relies on them to keep heavy
modules (the D-Bus library, the userspace scanner) out of the time to READY
(docs/ARCHITECTURE.md, "Boot-path discipline"). Such a lazy import may point at the code
that composes the caller; a record or a shared name must still be imported from below.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import TOP

PACKAGE = "kfdguard"


def module_names(top: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the package (a package is its __init__.py)."""
    names = {}
    for path in sorted((top / package).rglob("*.py")):
        parts = path.relative_to(top).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _module_level(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    # Every import that runs at import time: in the body, in if/try/with blocks and class bodies,
    # but not in a function body.
    found: list[ast.Import | ast.ImportFrom] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            found.append(child)
        elif not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            found.extend(_module_level(child))
    return found


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = node.module or ""
    if node.level:
        # Relative import: a package's own name is its anchor, a module's is its package.
        anchor = importer.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    found = set()
    for alias in node.names:
        # "from a import b" names the module a.b when there is one, else a name defined in a.
        sub = f"{base}.{alias.name}"
        if sub in known:
            found.add(sub)
        elif base in known:
            found.add(base)
    return found


def import_graph(top: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at module level."""
    modules = module_names(top, package)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        graph[name] = {t for n in _module_level(tree) for t in _targets(n, name, is_package, known)} - {name}
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through imports (strongly connected, more than one)."""
    # A few hundred modules: every module's reach, then the modules that reach back, is quick and plain.
    reach = {name: _reachable(graph, name) for name in graph}
    found: list[list[str]] = []
    placed: set[str] = set()
    for name in sorted(graph):
        if name in placed or name not in reach[name]:
            continue
        group = sorted(m for m in reach[name] if name in reach[m])
        placed.update(group)
        found.append(group)
    return found


def _explain(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    arrows = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return "circle of " + ", ".join(component) + ":\n    " + "\n    ".join(arrows)


def test_kfdguard_has_no_import_circle() -> None:
    graph = import_graph(TOP)
    assert len(graph) > 100  # the walk found the package
    found = [_explain(graph, c) for c in circles(graph)]
    assert found == [], "\n".join(found)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_walker_finds_each_form_of_circle(tmp_path: Path) -> None:
    # A circle through a from-import of a module, a relative import, a package's __init__,
    # and one that closes only under TYPE_CHECKING.
    top = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from kfdguard import b\n",
        "b.py": "from . import a\n",
        "p/__init__.py": "from kfdguard.p.low import thing\n",
        "p/low.py": "from kfdguard.q import helper\n",
        "q.py": "import os\nfrom kfdguard.p import thing\n",
        "t1.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from kfdguard.t2 import T\n",
        "t2.py": "try:\n    from kfdguard.t1 import U\nexcept ImportError:\n    pass\n",
    })  # fmt: skip
    assert circles(import_graph(top)) == [
        ["kfdguard.a", "kfdguard.b"],
        ["kfdguard.p", "kfdguard.p.low", "kfdguard.q"],
        ["kfdguard.t1", "kfdguard.t2"],
    ]


def test_an_import_inside_a_function_is_no_circle(tmp_path: Path) -> None:
    top = _package(tmp_path, {
        "__init__.py": "",
        "low.py": "def late():\n    from kfdguard.high import compose\n    return compose\n",
        "high.py": "from kfdguard.low import late\n\nclass C:\n    from kfdguard import low\n",
    })  # fmt: skip
    graph = import_graph(top)
    assert graph["kfdguard.high"] == {"kfdguard.low"}
    assert graph["kfdguard.low"] == set()
    assert circles(graph) == []
