"""Running the real service on a private system-like bus, as tests need it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kfdguard.host.root import Root
from kfdguard.simulate import bundled, state
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec
from tools.launch import NAME, PATH, REPO, Launched, launch, wait_name
from tools.privatebus import PrivateBus

# Tests import the service's names from here.
__all__ = ["NAME", "PATH", "REPO", "Guardian", "busctl", "call", "guardian", "machine", "run_as"]


class Guardian(Launched):
    """The launched service plus its bus and machine (set by guardian())."""

    bus: PrivateBus
    root: Path

    @property
    def address(self) -> str:
        return self.bus.address

    def env(self) -> dict[str, str]:
        return self.bus.env()

    def wait_name(self, timeout: float = 60.0) -> None:
        """Until the service owns its name. The deadline is for a hang, not a wait: on a machine running two
        test suites on 2 CPUs a start once took over 20 s from READY=1 to its name (issue 35's flakes)."""
        try:
            wait_name(self.env(), self.proc, timeout)
        except TimeoutError as exc:
            # Stop it to read what it logged: a failure without the service's own words is a guess.
            _, err = self.stop(timeout=5)
            raise TimeoutError(f"{exc} within {timeout} s; its log:\n{err[-3000:]}") from None

    def uevent(self, text: str) -> None:
        assert state.send_uevents(Root(self.root), [text]), "the service is not listening for uevents"


def machine(which: str | MachineSpec, directory: Path) -> Path:
    spec = bundled.load(which) if isinstance(which, str) else which
    return Path(render(spec, directory / "machine").path)


@contextmanager
def guardian(
    which: str | MachineSpec,
    *,
    backend: str = "fast",
    enforce: bool = True,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    bus: PrivateBus | None = None,
    config: str | None = None,
    wait: bool = True,
    prepare: Callable[[Path], None] | None = None,
) -> Iterator[Guardian]:
    with tempfile.TemporaryDirectory(prefix="kfdguard-svc-") as tmp:
        directory = Path(tmp)
        os.chmod(directory, 0o755)  # non-root test users reach the bus socket inside
        own_bus = bus is None
        if bus is None:
            (directory / "bus").mkdir()
            bus = PrivateBus(directory / "bus").start()
        root = machine(which, directory)
        if config is not None:
            (root / "etc/kfdguard").mkdir(parents=True, exist_ok=True)
            (root / "etc/kfdguard/config.yaml").write_text(config)
        if prepare is not None:
            prepare(root)
        launched = launch(root, bus.address, directory / "notify", backend=backend, enforce=enforce, args=args,
                          env=env, kind=Guardian)  # fmt: skip
        assert isinstance(launched, Guardian)
        g = launched
        g.bus, g.root = bus, root
        try:
            if wait:
                g.wait_ready()
                g.wait_name()
            yield g
        finally:
            g.stop()
            if own_bus:
                bus.stop()


def busctl(
    *args: str, env: dict[str, str], check: bool = True, user: int | None = None, groups: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    argv = [shutil.which("busctl") or "busctl", "--system", *args]
    return run_as(argv, env=env, check=check, user=user, groups=groups)


def run_as(
    argv: list[str],
    *,
    env: dict[str, str],
    check: bool = True,
    user: int | None = None,
    groups: tuple[int, ...] = (),
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    if user is not None:
        group_opt = f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"
        argv = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}", group_opt, *argv]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr}")
    return result


def call(
    member: str,
    *args: str,
    env: dict[str, str],
    user: int | None = None,
    groups: tuple[int, ...] = (),
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    return busctl("call", NAME, PATH, NAME, member, *args, env=env, check=check, user=user, groups=groups)
