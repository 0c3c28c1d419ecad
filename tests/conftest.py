"""Shared fixtures: simulated machines rendered into temporary directories."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kfdguard.facts import Facts
from kfdguard.probe import probe
from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

MACHINES = bundled.names()

# Hypothesis profiles. "default" is what `make test` runs: each property test
# keeps its own modest budget (tests/fuzzing.py). "fuzz" is the long campaign
# (HYPOTHESIS_PROFILE=fuzz pytest -m fuzz): at least 10,000 examples for every
# property test. Neither has a deadline: a loaded CI machine must not turn a
# slow example into a failure (no timing-based pass/fail).
settings.register_profile("default", max_examples=100, deadline=None, print_blob=True)
settings.register_profile(
    "fuzz",
    max_examples=10_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def rendered_machines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every bundled machine rendered once, for read-only tests."""
    base = tmp_path_factory.mktemp("machines")
    return {name: Path(bundled.render_bundled(name, base / name).path) for name in MACHINES}


@pytest.fixture(scope="session")
def machine_facts(rendered_machines: dict[str, Path]) -> dict[str, Facts]:
    from kfdguard.host.root import Root

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


@pytest.fixture(params=["daemon", "broker"])
def each_bus(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a private-bus test on dbus-daemon and again on dbus-broker (PrivateBus reads KFDGUARD_TEST_BUS).

    Only the tests that exercise the bus policy and the service's bus behaviour take it,
    so the suite does not run twice; KFDGUARD_TEST_BUS=broker runs every other one on dbus-broker.
    """
    kind: str = request.param
    if kind == "broker" and shutil.which("dbus-broker-launch") is None:
        pytest.skip("dbus-broker is not installed (Debian package dbus-broker)")
    monkeypatch.setenv("KFDGUARD_TEST_BUS", kind)
    return kind
