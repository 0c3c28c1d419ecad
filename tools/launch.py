"""Starting the service the way systemd does (Type=notify), for tests, the demo and benchmarks.

A datagram socket stands in for systemd's notify socket: the service sends
READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 to it, and the caller reads them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kfdguard.publish.names import BUS_NAME, OBJECT_PATH

NAME, PATH = BUS_NAME, OBJECT_PATH
REPO = Path(__file__).resolve().parents[1]


class NotifyListener:
    """A datagram socket standing in for systemd's notify socket, read all the time by a thread, as systemd
    reads its own: a datagram socket's queue holds only a few messages (net.unix.max_dgram_qlen), and a
    service whose STATUS= and WATCHDOG=1 go unread blocks in sd_notify.

    ``close`` stops the reader before it closes the socket. Closed under a reader still about to call
    recv(), the descriptor's number went to the next test's notify socket, and the old thread read that
    one's datagrams: a service's READY=1 went to a test long finished (issue 35's harness under load).
    """

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.messages: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() at which each message was received
        self.arrived = threading.Condition()
        self._closing = False
        self._reader = threading.Thread(target=self._read, name="notify-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            if self._closing and not data:  # shut down for reading: close() is waiting for this thread
                return
            now = time.monotonic()
            with self.arrived:
                self.arrivals.append(now)
                self.messages.append(data.decode(errors="replace"))
                self.arrived.notify_all()

    def close(self) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RD)  # wakes the reader's recv() with an empty read
        self._reader.join(10)
        if self._reader.is_alive():
            return  # never close a descriptor a thread may still read: its number would be reused
        self.sock.close()


class Launched:
    """A started service and what it told its "systemd" (a NotifyListener)."""

    def __init__(self, proc: subprocess.Popen[str], notify: NotifyListener, started: float) -> None:
        self.proc = proc
        self.notify = notify
        self.started = started  # time.monotonic() just before the process was started
        self.messages = notify.messages
        self.arrivals = notify.arrivals
        self._arrived = notify.arrived
        self._stopped: tuple[int, str] | None = None

    def read_notify(self, timeout: float) -> list[str]:
        """Wait ``timeout`` seconds for more datagrams; returns all that arrived so far."""
        time.sleep(timeout)
        with self._arrived:
            return list(self.messages)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float) -> str | None:
        """The first datagram (already received or still to come) for which ``predicate`` holds."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._arrived:
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.proc.poll() is not None:
                    return None
                self._arrived.wait(min(remaining, 0.1))

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Seconds from process start to READY=1. The deadline is for a hang: a loaded machine (two test suites
        on 2 CPUs) stretches a start several times over, and a passing start returns as soon as it is ready."""
        ready = self.wait_for(lambda m: "READY=1" in m, timeout)
        if ready is not None:
            with self._arrived:
                return self.arrivals[self.messages.index(ready)] - self.started
        if self.proc.poll() is not None:
            raise RuntimeError(f"the service exited: {self.stderr_text()}")
        # Stop it to read what it logged: a failure without the service's own words is a guess.
        _, err = self.stop(timeout=5)
        raise TimeoutError(f"no READY=1 within {timeout} s; got {self.messages}; its log:\n{err[-3000:]}")

    def stderr_text(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read()

    def stop(self, timeout: float = 15) -> tuple[int, str]:
        """Terminate (kill after ``timeout``) and collect its log; a second call returns the same."""
        if self._stopped is None:
            if self.proc.poll() is None:
                self.proc.terminate()
            try:
                _, err = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate()
            self.notify.close()
            self._stopped = (self.proc.returncode, err or "")
        return self._stopped


def launch(
    root: Path,
    bus_address: str,
    notify_path: Path,
    *,
    backend: str = "fast",
    enforce: bool = True,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    interpreter_flags: tuple[str, ...] = (),
    capture_stderr: bool = True,
    kind: type[Launched] = Launched,  # a subclass that carries more (the tests' Guardian)
) -> Launched:
    notify = NotifyListener(notify_path)
    argv = [python, *interpreter_flags, "-m", "kfdguard.service", "--root", str(root), "--bus", bus_address]
    argv += ["--backend", backend, *(() if enforce else ("--no-enforce",)), *args]
    full_env = {**os.environ, "NOTIFY_SOCKET": str(notify_path), **(env or {})}
    full_env.pop("JOURNAL_STREAM", None)  # stderr is a pipe here, not the journal
    stderr = subprocess.PIPE if capture_stderr else subprocess.DEVNULL
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=full_env, stderr=stderr, text=True, cwd=REPO)
    return kind(proc, notify, started)


def wait_name(env: dict[str, str], proc: subprocess.Popen[str] | None = None, timeout: float = 20.0) -> None:
    """Until the service owns its name on the bus that ``env`` points at."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = subprocess.run(["busctl", "--system", "status", NAME], env=env, capture_output=True, check=False)
        if probe.returncode == 0:
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("the service exited before owning its name")
        time.sleep(0.05)
    raise TimeoutError(f"{NAME} did not appear")
