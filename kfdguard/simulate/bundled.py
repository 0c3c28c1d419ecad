"""The simulated machines that ship with kfdguard (``kfdguard/machines``)."""

from __future__ import annotations

from pathlib import Path

from kfdguard.host.root import Root
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec, SpecError, spec_from_dict

MACHINES_DIR = Path(__file__).resolve().parent.parent / "machines"


def names() -> list[str]:
    return sorted(p.stem for p in MACHINES_DIR.glob("*.yaml"))


def load(name: str) -> MachineSpec:
    import yaml

    path = MACHINES_DIR / f"{name}.yaml"
    if not path.is_file():
        raise SpecError(f"no bundled machine {name!r}; known: {', '.join(names())}")
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    return spec_from_dict(name, data)


def render_bundled(name: str, dest: Path) -> Root:
    return render(load(name), dest)
