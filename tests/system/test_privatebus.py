"""tools/privatebus.py waits for a bus to be ready, within a generous bound, instead of a fixed 10 s.

Under load (two heavy test runs on two CPUs) dbus-broker took longer than the old fixed 10 s to
log "Ready", and test_bus_policy_is_accepted_by_dbus_daemon_and_dbus_broker[broker] failed.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from tools.privatebus import READY_TIMEOUT, PrivateBus, wait_ready


class Clock:
    """A clock that moves only when waited on: the wait's logic, without its seconds."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_bus_that_takes_longer_than_ten_seconds_is_waited_for() -> None:
    clock = Clock()
    ready_at = clock.now + 30  # three times what the old fixed wait allowed
    wait_ready("dbus-broker", [("it answers", lambda: clock.now >= ready_at)], lambda: True,
               clock=clock, sleep=clock.sleep, interval=0.5)  # fmt: skip
    assert ready_at <= clock.now < ready_at + 0.5  # returned at the first poll that saw it ready


def test_a_bus_never_ready_fails_at_the_bound_naming_what_it_waited_for() -> None:
    clock = Clock()
    start = clock.now
    conditions = [("the socket to answer AUTH EXTERNAL", lambda: True), ("its 'Ready' in the journal", lambda: False)]
    with pytest.raises(RuntimeError) as failed:
        wait_ready("dbus-broker", conditions, lambda: True, clock=clock, sleep=clock.sleep, interval=0.5)
    assert READY_TIMEOUT == 60 and start + READY_TIMEOUT <= clock.now < start + READY_TIMEOUT + 0.5
    assert str(failed.value) == (
        "dbus-broker was not ready within 60 s (waited for the socket to answer AUTH EXTERNAL: yes; "
        "its 'Ready' in the journal: not yet)"
    )


def test_a_bus_that_exits_fails_at_once() -> None:
    clock = Clock()
    start = clock.now
    with pytest.raises(RuntimeError, match=r"^dbus-daemon exited before it was ready \(waited for its socket: not yet"):
        wait_ready("dbus-daemon", [("its socket", lambda: False)], lambda: False, clock=clock, sleep=clock.sleep)
    assert clock.now == start


@pytest.mark.skipif(os.geteuid() != 0, reason="dbus-broker runs in a private mount namespace, which needs root")
@pytest.mark.skipif(
    shutil.which("dbus-broker-launch") is None, reason="dbus-broker is not installed (Debian package dbus-broker)"
)
def test_a_broker_slower_than_the_old_fixed_wait_starts(tmp_path: Path) -> None:
    """The real dbus-broker, started 12 s late (as on a machine busy with two heavy jobs), comes up."""

    class SlowBroker(PrivateBus):
        def broker_prepare(self) -> tuple[socket.socket, Path, list[str]]:
            listener, journal, launcher = super().broker_prepare()
            # exec keeps the pid that LISTEN_PID names, and fd 3 (the listener) is inherited.
            return listener, journal, ["sh", "-c", 'sleep 12; exec "$@"', "sh", *launcher]

    with SlowBroker(tmp_path, kind="broker") as bus:
        assert bus.answers() and bus.journal() == ["Ready"]
