"""Choosing the machine a command or the service works on: the one place that knows about test beds.

This host, a root directory (a chroot, an image, a snapshot bundle, a
rendered simulated machine) or a bundled simulated machine. Everything the rest of kfdguard
needs to know about the choice travels in ``Target``: the ``System`` that
answers, where device events come from, and whether acting on it needs
root. This is the only module outside ``kfdguard.simulate`` that imports it
(``tests/system/test_layout.py`` holds that); the service and the pipeline run
unmodified over whichever System they are given.
"""

from __future__ import annotations

from kfdguard.host.root import Root
from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tempfile

    from kfdguard.host.system import System


class TargetError(ValueError):
    """The chosen machine cannot be used; the message is for the user."""


@dataclass(frozen=True)
class EventSource:
    """Where the service hears of device changes: udev's netlink monitor, or lines in a FIFO."""

    kind: str  # "udev" or "fifo"
    path: str = ""  # the FIFO's path for "fifo"
    # Where the live kernel log comes from (kfdguard/health): "" is the journal; a simulated
    # machine's kernel writes its records into a FIFO of its own.
    log: str = ""


UDEV = EventSource("udev")


@dataclass
class Target:
    system: System
    name: str | None  # the bundled machine's name, when there is one
    events: EventSource = UDEV
    # Acting on a real machine changes system files: root only. A rendered copy is anyone's.
    needs_root: bool = True
    tempdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def root(self) -> Root:
        return self.system.root

    @property
    def where(self) -> str:
        """The machine as a report names it."""
        if self.name:
            return f"simulated machine {self.name}"
        return "this machine" if self.root.is_host else str(self.root.path)

    def close(self) -> None:
        if self.tempdir is not None:
            self.tempdir.cleanup()
            self.tempdir = None


def open_target(root: str | None, machine: str | None) -> Target:
    """The command line's choice (--root DIR, --machine NAME, or this host); TargetError when unusable."""
    if root and machine:
        raise TargetError("--root and --machine exclude each other")
    if machine:
        return _bundled(machine)
    if root:
        from kfdguard.host.paths import HostPath  # not pathlib: this is the boot pass's path (paths.py)

        path = HostPath(root)
        if not path.is_dir():
            raise TargetError(f"--root {root}: not a directory")
        return _directory(Root(path.resolve()))
    return _host()


def service_target(root: str | None) -> Target:
    """The service's choice: this host, or the machine directory given with --root."""
    if root is None:
        return _host()
    from kfdguard.host.paths import HostPath

    return _directory(Root(HostPath(root).resolve()))


def _host() -> Target:
    from kfdguard.host.system import RealSystem

    return Target(RealSystem(Root()), None)


def _directory(root: Root) -> Target:
    from kfdguard.simulate import state
    from kfdguard.snapshot import is_bundle

    if is_bundle(root.path):
        # A bundle written by 'kfdguard snapshot' answers from what was recorded.
        from kfdguard.snapshot.bundle import SnapshotError
        from kfdguard.snapshot.replay import ReplaySystem

        try:
            return Target(ReplaySystem(root), None)
        except SnapshotError as exc:
            raise TargetError(str(exc)) from None
    if not state.is_simulated(root):
        from kfdguard.host.system import RealSystem

        return Target(RealSystem(root), None)
    from kfdguard.simulate.system import SimulatedSystem

    # The simulated kernel and udev announce their uevents in this FIFO.
    fifo = EventSource("fifo", state.uevent_fifo(root), state.kmsg_fifo(root))
    return Target(SimulatedSystem(root), _machine_name(state.sim_dir(root)), fifo, needs_root=False)


def _machine_name(sim_dir: str) -> str | None:
    import json
    import os

    try:
        with open(os.path.join(sim_dir, "spec.json"), encoding="utf-8") as handle:
            name = json.load(handle).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return str(name) if name else None


def _bundled(machine: str) -> Target:
    import tempfile
    from pathlib import Path

    from kfdguard.simulate.bundled import render_bundled
    from kfdguard.simulate.spec import SpecError
    from kfdguard.simulate.state import kmsg_fifo, uevent_fifo
    from kfdguard.simulate.system import SimulatedSystem

    tmp = tempfile.TemporaryDirectory(prefix=f"kfdguard-{machine}-")
    try:
        rendered = render_bundled(machine, Path(tmp.name) / "root")
    except SpecError as exc:
        tmp.cleanup()
        raise TargetError(str(exc)) from None
    except BaseException:
        tmp.cleanup()
        raise
    fifo = EventSource("fifo", uevent_fifo(rendered), kmsg_fifo(rendered))
    return Target(SimulatedSystem(rendered), machine, fifo, needs_root=False, tempdir=tmp)


def machine_names() -> list[tuple[str, str]]:
    """The bundled simulated machines: (name, description)."""
    from kfdguard.simulate import bundled

    specs = [bundled.load(name) for name in bundled.names()]
    return [(spec.name, spec.description) for spec in specs]


def render_machine(name: str, dest: str) -> Root:
    """Write a bundled machine out as a directory tree usable with --root; TargetError when it cannot."""
    from pathlib import Path

    from kfdguard.simulate import bundled
    from kfdguard.simulate.spec import SpecError

    try:
        return bundled.render_bundled(name, Path(dest))
    except (SpecError, FileExistsError) as exc:
        raise TargetError(str(exc)) from None


__all__ = ["UDEV", "EventSource", "Target", "TargetError", "machine_names", "open_target", "render_machine"]
