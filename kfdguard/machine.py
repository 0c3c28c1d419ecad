"""Choosing the machine a command works on: this host, a root directory, or a bundled simulation."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kfdguard.record import dataclass
from kfdguard.root import Root
from kfdguard.system import RealSystem, System


@dataclass
class Target:
    system: System
    name: str | None  # bundled machine name, if simulated from one
    tempdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def root(self) -> Root:
        return self.system.root

    def close(self) -> None:
        if self.tempdir is not None:
            self.tempdir.cleanup()
            self.tempdir = None


def open_target(root: str | None, machine: str | None) -> Target:
    """Raises ValueError with a user-facing message when the choice is unusable."""
    if root and machine:
        raise ValueError("--root and --machine exclude each other")
    if machine:
        from kfdguard.simulate.bundled import render_bundled
        from kfdguard.simulate.system import SimulatedSystem

        tmp = tempfile.TemporaryDirectory(prefix=f"kfdguard-{machine}-")
        try:
            rendered = render_bundled(machine, Path(tmp.name) / "root")
        except Exception:
            tmp.cleanup()
            raise
        return Target(SimulatedSystem(rendered), machine, tmp)
    if root:
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"--root {root}: not a directory")
        from kfdguard.simulate import state

        r = Root(path.resolve())
        from kfdguard.snapshot import is_bundle

        if is_bundle(r.path):
            from kfdguard.snapshot.replay import ReplaySystem

            return Target(ReplaySystem(r), None)
        if state.is_simulated(r):
            from kfdguard.simulate.system import SimulatedSystem

            return Target(SimulatedSystem(r), _sim_name(r))
        return Target(RealSystem(r), None)
    return Target(RealSystem(Root()), None)


def _sim_name(root: Root) -> str | None:
    try:
        with open(os.path.join(root.path, ".kfdguard-sim", "spec.json"), encoding="utf-8") as handle:
            import json

            name = json.load(handle).get("name")
            return str(name) if name else None
    except (OSError, ValueError):
        return None
