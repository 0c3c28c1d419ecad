"""Shared fixtures: simulated machines rendered into temporary directories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.facts import Facts
from kfdguard.probe import probe
from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

MACHINES = bundled.names()


@pytest.fixture(scope="session")
def rendered_machines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every bundled machine rendered once, for read-only tests."""
    base = tmp_path_factory.mktemp("machines")
    return {name: bundled.render_bundled(name, base / name).path for name in MACHINES}


@pytest.fixture(scope="session")
def machine_facts(rendered_machines: dict[str, Path]) -> dict[str, Facts]:
    from kfdguard.root import Root

    return {name: probe(SimulatedSystem(Root(path))) for name, path in rendered_machines.items()}


@pytest.fixture
def fresh_machine(tmp_path: Path) -> Callable[[str | MachineSpec], SimulatedSystem]:
    """Render a bundled machine (by name) or a spec into a private directory, for tests that change it."""
    counter = iter(range(1000))

    def make(which: str | MachineSpec) -> SimulatedSystem:
        spec = bundled.load(which) if isinstance(which, str) else which
        root = render(spec, tmp_path / f"m{next(counter)}")
        return SimulatedSystem(root)

    return make


def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        pytest.fail(f"{name} is required for this test and missing; 'make test' installs it")
    return path
