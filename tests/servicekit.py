"""Running the real service on a private system-like bus, as tests need it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kfdguard.devtools.privatebus import PrivateBus
from kfdguard.root import Root
from kfdguard.simulate import bundled, state
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec

NAME = "org.kfdguard.Guardian1"
PATH = "/org/kfdguard/Guardian1"
REPO = Path(__file__).resolve().parent.parent


class Guardian:
    def __init__(self, bus: PrivateBus, root: Path, proc: subprocess.Popen[str], notify: socket.socket) -> None:
        self.bus = bus
        self.root = root
        self.proc = proc
        self.notify_sock = notify
        self.messages: list[str] = []

    @property
    def address(self) -> str:
        return self.bus.address

    def env(self) -> dict[str, str]:
        return self.bus.env()

    def read_notify(self, timeout: float) -> list[str]:
        """Collect sd_notify datagrams for up to ``timeout`` seconds (returns what arrived)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.notify_sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.notify_sock.recv(4096)
            except TimeoutError:
                break
            self.messages.append(data.decode())
        return self.messages

    def wait_ready(self, timeout: float = 20.0) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            self.read_notify(0.1)
            if any("READY=1" in m for m in self.messages):
                return time.monotonic() - start
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited: {self.proc.communicate()[1]}")
        raise TimeoutError(f"no READY=1 within {timeout} s; got {self.messages}")

    def wait_name(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if busctl("status", NAME, env=self.env(), check=False).returncode == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited: {self.proc.communicate()[1]}")
            time.sleep(0.05)
        raise TimeoutError(f"{NAME} did not appear")

    def uevent(self, text: str) -> None:
        assert state.send_uevents(Root(self.root), [text]), "the service is not listening for uevents"

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.notify_sock.close()
        return self.proc.returncode, err


def machine(which: str | MachineSpec, directory: Path) -> Path:
    spec = bundled.load(which) if isinstance(which, str) else which
    return render(spec, directory / "machine").path


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
        notify_path = directory / "notify"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(notify_path))
        argv = [
            sys.executable,
            "-m",
            "kfdguard.service",
            "--root",
            str(root),
            "--bus",
            bus.address,
            "--backend",
            backend,
            *(() if enforce else ("--no-enforce",)),
            *args,
        ]
        full_env = {**os.environ, "NOTIFY_SOCKET": str(notify_path), **(env or {})}
        full_env.pop("JOURNAL_STREAM", None)
        proc = subprocess.Popen(argv, env=full_env, stderr=subprocess.PIPE, text=True, cwd=REPO)
        g = Guardian(bus, root, proc, sock)
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
