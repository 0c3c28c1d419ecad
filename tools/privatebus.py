"""A private D-Bus daemon with system-bus semantics and kfdguard's own bus policy.

It is configured like Debian's system bus (deny own and method calls by
default, EXTERNAL authentication) and includes dbus/org.kfdguard.Guardian1.conf
from this tree, so tests and the demo exercise the real policy file with a
real dbus-daemon. Name ownership needs root, exactly as on a real system.

The same configuration also runs under dbus-broker (kind "broker", or
KFDGUARD_TEST_BUS=broker): dbus-broker-launch ignores <listen> and takes the
listening socket by socket activation (LISTEN_FDS, fd name "dbus.socket"), and
it refuses to start without /run/systemd/journal/socket, so it runs in a
private mount namespace where that path is a datagram socket of ours; its log
lines are kept (log()). That needs root, which owning the name needs anyway.
docs/PLATFORMS.md lists where the two buses behave differently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "dbus" / "org.kfdguard.Guardian1.conf"
POLKIT_POLICY = "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>{policy}</include>
  <include ignore_missing="yes">{polkit}</include>
  {extra}
</busconfig>
"""


KINDS = ("daemon", "broker")
# How long a bus (or polkitd on it) may take to become ready. A bound, not a wait: readiness is
# polled. A fixed 10 s was too short with two heavy test runs on two CPUs (the broker's start failed).
READY_TIMEOUT = 60.0


def wait_ready(
    what: str,
    conditions: Sequence[tuple[str, Callable[[], bool]]],
    alive: Callable[[], bool],
    *,
    timeout: float = READY_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    interval: float = 0.02,
) -> None:
    """Poll until every condition holds; RuntimeError naming what was waited for when ``alive()``
    turns false or ``timeout`` seconds pass, with each condition's last answer."""
    deadline = clock() + timeout
    while True:
        met = [(name, bool(check())) for name, check in conditions]
        if all(ok for _, ok in met):
            return
        state = "; ".join(f"{name}: {'yes' if ok else 'not yet'}" for name, ok in met)
        if not alive():
            raise RuntimeError(f"{what} exited before it was ready (waited for {state})")
        if clock() >= deadline:
            raise RuntimeError(f"{what} was not ready within {timeout:g} s (waited for {state})")
        sleep(interval)


# In the broker's own mount namespace, our datagram socket ($1/socket) is the journal. Where the
# host has a journal directory only that is covered; elsewhere a tmpfs on /run/systemd (or /run)
# makes room for it. The host's journal and /run are never touched.
BROKER_JOURNAL = """if [ ! -d /run/systemd/journal ]; then
  if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 kfdguard-bus /run/systemd
  else mount -t tmpfs -o mode=0755 kfdguard-bus /run; fi
  mkdir -p /run/systemd/journal
fi
mount --bind "$1" /run/systemd/journal
"""
# Socket activation: the listener (inherited as stdin) becomes fd 3 of the launcher.
BROKER_EXEC = """LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=dbus.socket exec "$@" 3<&0 0</dev/null"""
BROKER_NAMESPACE = f"""set -e
{BROKER_JOURNAL}shift
{BROKER_EXEC}
"""


def default_kind() -> str:
    """The bus the tests run on unless they choose: KFDGUARD_TEST_BUS=daemon|broker (default daemon)."""
    kind = os.environ.get("KFDGUARD_TEST_BUS", "") or "daemon"
    if kind not in KINDS:
        raise ValueError(f"KFDGUARD_TEST_BUS={kind!r}: expected one of {', '.join(KINDS)}")
    return kind


class PrivateBus:
    def __init__(self, directory: Path | None = None, extra: str = "", kind: str | None = None) -> None:
        self.kind = kind or default_kind()
        if self.kind not in KINDS:
            raise ValueError(f"unknown bus kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="kfdguard-bus-")
        self.dir = directory or Path(self._tmp.name)  # type: ignore[union-attr]
        self.socket = self.dir / "system_bus_socket"
        self.address = f"unix:path={self.socket}"
        self.config = self.dir / "bus.conf"
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self._journal: socket.socket | None = None
        self._drainer: threading.Thread | None = None
        self._log: deque[str] = deque(maxlen=2000)  # the last messages; a flood must not grow it
        self._log_lock = threading.Lock()

    def config_text(self) -> str:
        return CONFIG.format(socket=self.socket, policy=POLICY, polkit=POLKIT_POLICY, extra=self.extra)

    def start(self) -> PrivateBus:
        self.config.write_text(self.config_text())
        # Non-root test users must reach the socket.
        os.chmod(self.dir, 0o755)  # noqa: S103 - a test bus directory, readable by the test users
        if self.kind == "broker":
            return self._start_broker()
        daemon = shutil.which("dbus-daemon") or "/usr/bin/dbus-daemon"
        self.proc = subprocess.Popen(
            [daemon, f"--config-file={self.config}", "--nofork", "--nopidfile"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        proc = self.proc
        try:
            # dbus-daemon binds its socket once it is ready to take connections.
            wait_ready("dbus-daemon", [(f"its socket {self.socket}", self.socket.exists)], lambda: proc.poll() is None)
        except RuntimeError as exc:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"dbus-daemon did not start: {exc}: {err}") from None
        os.chmod(self.socket, 0o666)  # noqa: S103 - like /run/dbus/system_bus_socket
        return self

    def broker_prepare(self) -> tuple[socket.socket, Path, list[str]]:
        """For dbus-broker: the bound listener, the journal directory, and the launcher's argv.

        The caller passes the listener as stdin of a shell that runs BROKER_JOURNAL (with the
        journal directory as $1) and BROKER_EXEC (the argv as "$@") in a private mount
        namespace, with DBUS_SYSTEM_BUS_ADDRESS=self.address, then closes its own copy.
        """
        launcher = shutil.which("dbus-broker-launch")
        if launcher is None or shutil.which("unshare") is None:
            raise RuntimeError("dbus-broker did not start: dbus-broker-launch (package dbus-broker) is not installed")
        journal_dir = self.dir / "journal"
        journal_dir.mkdir(exist_ok=True)
        journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        journal.bind(str(journal_dir / "socket"))
        journal.settimeout(0.2)
        self._journal = journal
        # Read it all the time: dbus-broker 33 sends its log datagrams blocking, and with our
        # queue full the whole bus stopped in sendmsg (seen with the D-Bus fuzzer's denied calls).
        self._drainer = threading.Thread(target=self._drain, args=(journal,), name="dbus-broker-journal", daemon=True)
        self._drainer.start()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket))
        os.chmod(self.socket, 0o666)  # noqa: S103 - like /run/dbus/system_bus_socket
        listener.listen(128)
        return listener, journal_dir, [launcher, "--scope", "system", f"--config-file={self.config}"]

    def _start_broker(self) -> PrivateBus:
        listener, journal_dir, launcher = self.broker_prepare()
        try:
            argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", BROKER_NAMESPACE, "sh"]
            argv += [str(journal_dir), *launcher]
            # Its stderr goes to a file: the broker writes there too while it runs, and a pipe
            # nobody reads would fill and stop the whole bus (as quiet_bus in dbusfuzz notes).
            with open(self.dir / "dbus-broker.log", "wb") as stderr:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=listener.fileno(),
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    # The launcher connects to "the system bus" as a client once the broker runs
                    # (to ask systemd for activations): that is this bus, not the host's.
                    env=self.env(),
                )
        finally:
            # The broker holds the listener now: once it is gone, connecting fails at once.
            listener.close()
        proc = self.proc
        try:
            self.wait_broker(lambda: proc.poll() is None)
        except RuntimeError as exc:
            proc.kill()
            proc.wait(5)
            err = (self.dir / "dbus-broker.log").read_text(errors="replace")
            raise RuntimeError(f"dbus-broker did not start: {exc}: {err}{chr(10).join(self.journal())}") from None
        return self

    def broker_conditions(self) -> list[tuple[str, Callable[[], bool]]]:
        """What a started dbus-broker shows: it answers on the socket, and the launcher logged "Ready"
        (it does once the broker runs with its policy). The broker accepts first and logs a moment
        later, so a test reading its log at once raced it."""
        return [
            (f"the bus on {self.socket} to answer AUTH EXTERNAL", self.answers),
            ("dbus-broker-launch to log 'Ready' to its journal socket", lambda: "Ready" in self.journal()),
        ]

    def wait_broker(self, alive: Callable[[], bool], timeout: float = READY_TIMEOUT) -> None:
        wait_ready("dbus-broker", self.broker_conditions(), alive, timeout=timeout)

    def answers(self) -> bool:
        """True once the bus completes a connection (the listener accepts before the broker runs)."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1)
        try:
            probe.connect(str(self.socket))
            probe.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
            return probe.recv(64).startswith(b"OK ")
        except OSError:
            return False
        finally:
            probe.close()

    def _drain(self, journal: socket.socket) -> None:
        while self._journal is journal:
            try:
                datagram = journal.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                return
            # Native journal protocol: KEY=VALUE lines (a value with a newline comes length-prefixed
            # and is skipped here; the broker's messages are one line).
            text = datagram.decode(errors="replace")
            messages = [line.removeprefix("MESSAGE=") for line in text.splitlines() if line.startswith("MESSAGE=")]
            with self._log_lock:
                self._log.extend(messages)

    def journal(self) -> list[str]:
        """dbus-broker's log messages so far (its journal lines' MESSAGE fields); empty for dbus-daemon."""
        with self._log_lock:
            return list(self._log)

    def env(self) -> dict[str, str]:
        return {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": self.address}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._journal is not None:
            journal, self._journal = self._journal, None
            if self._drainer is not None:
                self._drainer.join(2)  # it sees _journal change within its 0.2 s timeout
            with contextlib.suppress(OSError):
                journal.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> PrivateBus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
