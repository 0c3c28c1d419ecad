"""The package's shape: the service does not know it is tested, and test tooling is not installed."""

from __future__ import annotations

import ast
import subprocess
import zipfile
from pathlib import Path

from tests.paths import TOP

PACKAGE = TOP / "kfdguard"
# The one module outside kfdguard/simulate/ that may choose a simulated machine.
TARGET_SELECTION = PACKAGE / "app" / "targets.py"
# make install and the Debian build make the wheel with Debian's interpreter, setuptools and
# wheel (python3-setuptools, python3-wheel in scripts/debian-packages.txt); the venv has no wheel.
DEBIAN_PYTHON = "/usr/bin/python3"


def _production_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "simulate" not in p.relative_to(PACKAGE).parts[:1]]


def _simulation_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kfdguard.simulate"):
            found.append(f"line {node.lineno}: from {node.module} import ...")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "kfdguard"
            and any(a.name == "simulate" for a in node.names)
        ):
            found.append(f"line {node.lineno}: from kfdguard import simulate")
        elif isinstance(node, ast.Import) and any(a.name.startswith("kfdguard.simulate") for a in node.names):
            found.append(f"line {node.lineno}: import kfdguard.simulate")
        # Branching on simulation: the old flag, or asking the simulator whether a root is one of its machines.
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("simulated", "is_simulated", "uevent_fifo")
            and isinstance(node.ctx, ast.Load)
            # Facts.simulated is what the report shows, not a decision.
            and not (isinstance(node.value, ast.Name) and node.value.id == "facts")
        ):
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


def test_only_target_selection_knows_the_simulator() -> None:
    offenders = {}
    for path in _production_modules():
        if path == TARGET_SELECTION:
            continue
        uses = _simulation_uses(ast.parse(path.read_text(), str(path)))
        if uses:
            offenders[str(path.relative_to(TOP))] = uses
    assert offenders == {}


def test_the_walker_sees_what_it_forbids() -> None:
    # The check above passes on an empty package too: it must recognise each form.
    code = (
        "import kfdguard.simulate.state\nfrom kfdguard.simulate import bundled\nfrom kfdguard import simulate\n"
        "if system.simulated:\n    pass\n"
    )
    assert len(_simulation_uses(ast.parse(code))) == 4
    assert _simulation_uses(ast.parse(TARGET_SELECTION.read_text())) != []


def test_the_wheel_holds_the_package_only(tmp_path: Path) -> None:
    # Build from a copy of the tracked tree: an in-tree build would leave build/ behind.
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=TOP, capture_output=True,
                            check=True).stdout.split(b"\0")  # fmt: skip
    source = tmp_path / "src"
    for name in filter(None, listed):
        path = TOP / name.decode()
        if path.is_file():
            (source / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            (source / name.decode()).write_bytes(path.read_bytes())
    result = subprocess.run(
        [DEBIAN_PYTHON, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
         "-q", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = (tmp_path / "dist").glob("kfdguard-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kfdguard/app/pipeline.py" in names  # the list is the package's
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"kfdguard"}
    assert not [n for n in names if "devtools" in n or "/tests/" in n or n.startswith(("tools/", "tests/"))]
