"""What systemd hears from the service: READY, STATUS, WATCHDOG, STOPPING, through a fake NOTIFY_SOCKET."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from kfdguard.host.root import Root
from kfdguard.simulate import bundled, state
from tests.servicekit import call, guardian

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root may own the name on a system-like bus (CI runs as root)"
)


def fields(messages: list[str]) -> list[dict[str, str]]:
    return [dict(line.split("=", 1) for line in m.splitlines() if "=" in line) for m in messages]


def test_ready_carries_the_state_and_the_watchdog_is_fed_from_the_loop() -> None:
    # WATCHDOG_USEC=400 ms: systemd would expect a ping at least every 400 ms; we send every 200 ms.
    env = {"WATCHDOG_USEC": "400000"}
    with guardian("rx7900xtx-ubuntu2404", enforce=False, env=env) as g:
        sent = fields(g.messages)
        ready = next(m for m in sent if m.get("READY") == "1")
        assert ready["STATUS"].startswith("ready: ")
        start = len(g.messages)
        g.read_notify(1.5)
        pings = [m for m in fields(g.messages[start:]) if m.get("WATCHDOG") == "1"]
        assert 4 <= len(pings) <= 12, pings
        # The loop that feeds the watchdog is the loop that answers calls.
        assert call("GetStatus", env=g.env()).stdout.startswith("a{sv}")


def test_no_watchdog_for_another_process() -> None:
    # sd_watchdog_enabled(3): WATCHDOG_PID names the process meant; a child that inherited it stays quiet.
    with guardian("rx7900xtx-ubuntu2404", enforce=False, env={"WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"}) as g:
        g.read_notify(1.0)
        assert not [m for m in fields(g.messages) if m.get("WATCHDOG") == "1"]


def test_status_follows_state_changes_and_stopping_is_announced() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        root = Root(g.root)
        devices = state.read_devices(root)
        del devices["/dev/kfd"]
        state.write_devices(root, devices)
        g.uevent("remove kfd kfd")
        deadline = time.monotonic() + 10
        while not any(m.get("STATUS", "").startswith("unavailable") for m in fields(g.messages)):
            assert time.monotonic() < deadline, g.messages
            g.read_notify(0.2)
        code, _ = g.stop()
        g.messages.clear()
    assert code == 0


def _hang_modprobe(path: Path) -> None:
    state.set_fault(Root(path), "modprobe", "hang")


def test_a_hung_modprobe_does_not_hold_back_ready() -> None:
    """The boot pass is stuck in modprobe; READY still goes out at the deadline and says so."""
    spec = bundled.load("rx7900xtx-ubuntu2404").with_changes(amdgpu_loaded=False)

    config = "timeouts:\n  modprobe: 4\n"
    with guardian(spec, args=("--deadline", "1"), wait=False, prepare=_hang_modprobe, config=config) as g:
        g.wait_ready(timeout=15)
        g.wait_name()
        ready = next(m for m in fields(g.messages) if m.get("READY") == "1")
        # READY went out while modprobe was still hanging: the state says the check is not done.
        assert ready["STATUS"] == "starting: kfdguard is checking the GPUs"
        assert "modprobe" in (g.root / ".kfdguard-sim/commands.log").read_text()
        # The pass finishes in the background once modprobe is killed at its own bound, and says why.
        deadline = time.monotonic() + 20
        while (state_now := call("GetStatus", env=g.env()).stdout).find('"State" s "starting"') >= 0:
            assert time.monotonic() < deadline, "the boot pass never finished"
            time.sleep(0.2)
        assert '"State" s "unavailable"' in state_now
        assert '"module-load-timeout" "error" "modprobe amdgpu did not finish in 4 s and was killed"' in state_now
        g.read_notify(0.3)
        assert any(m.get("STATUS", "").startswith("unavailable: ") for m in fields(g.messages))


def test_notify_without_a_listener_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kfdguard.service.notify import notify

    gone = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(gone))
    sock.close()  # the path stays, nobody listens: connect() is refused
    monkeypatch.setenv("NOTIFY_SOCKET", str(gone))
    assert notify("STATUS=still here") is False


def test_sighup_during_the_boot_pass_is_kept_for_the_loop() -> None:
    """systemctl reload while the boot pass runs: the service must neither die nor forget it."""
    spec = bundled.load("rx7900xtx-ubuntu2404").with_changes(amdgpu_loaded=False)

    config = "timeouts:\n  modprobe: 2\n"
    with guardian(spec, args=("--deadline", "10"), wait=False, prepare=_hang_modprobe, config=config) as g:
        time.sleep(0.5)  # inside the boot pass: modprobe hangs for 2 s
        assert g.proc.poll() is None and not g.messages
        g.proc.send_signal(signal.SIGHUP)
        g.wait_ready(timeout=15)
        g.wait_name()
        code, err = g.stop()
    assert code == 0, err
    assert "SIGHUP arrived during start-up: reloading the configuration" in err


def _fill(name: str) -> socket.socket:
    """A sender whose non-blocking datagrams have filled the abstract socket NAME's queue."""
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sender.setblocking(False)
    with pytest.raises(BlockingIOError):
        for i in range(100_000):  # net.unix.max_dgram_qlen (512 by default) is the bound
            sender.sendto(f"STATUS={i}".encode(), "\0" + name)
    return sender


def test_the_early_datagram_waits_for_room_in_a_full_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """A manager busy with a boot's worth of units: READY=1 waits for room instead of being lost."""
    from kfdguard.service import notify as module

    name = f"kfdguard-test-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind("\0" + name)
    sender = _fill(name)
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        drain = threading.Timer(0.3, lambda: listener.recv(4096))  # the manager reads one message
        drain.start()
        started = time.monotonic()
        assert module.notify("READY=1\nSTATUS=ready: test", early=True)
        assert time.monotonic() - started >= 0.2
        drain.join()
        received = []
        listener.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                received.append(listener.recv(4096))
        assert received[-1] == b"READY=1\nSTATUS=ready: test"
    finally:
        sender.close()
        listener.close()


def test_the_early_datagram_gives_up_on_a_manager_that_never_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    from kfdguard.service import notify as module

    name = f"kfdguard-test-{os.getpid()}-deaf"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind("\0" + name)
    sender = _fill(name)
    try:
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        monkeypatch.setattr(module, "SEND_TIMEOUT", 0.3)
        started = time.monotonic()
        assert module.notify("READY=1", early=True) is False
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        sender.close()
        listener.close()
