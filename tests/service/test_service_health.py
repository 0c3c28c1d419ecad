"""The running service: a simulated GPU reset degrades and restores it; a resume re-checks.

The real service on a private bus (dbus-daemon and dbus-broker), a simulated
machine whose kernel prints the reset lines into the log the service follows and
sends the WEDGED uevent, and logind's PrepareForSleep(false) emitted by a
test-owned org.freedesktop.login1.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

import pytest

from kfdguard.host.root import READY_MARKER, Root
from kfdguard.record import replace
from kfdguard.simulate import bundled, gpureset
from kfdguard.simulate.kernel import SimKernel
from kfdguard.simulate.system import SimulatedSystem
from tests.servicekit import NAME, PATH, Guardian, busctl, guardian
from tools.privatebus import PrivateBus

GPU = "0000:03:00.0"
pytestmark = pytest.mark.root


def _after(g: Guardian, start: int, prefix: str, timeout: float = 20.0) -> int:
    """The index of the first notify message from ``start`` on that starts with ``prefix``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n, message in enumerate(list(g.messages)[start:], start):
            if message.startswith(prefix):
                return n
        time.sleep(0.02)
    raise AssertionError(f"no {prefix!r} after message {start}: {g.messages[start:]}")


def _devices(g: Guardian) -> list[dict[str, object]]:
    out = busctl("--json=short", "call", NAME, PATH, NAME, "GetStatus", env=g.env()).stdout
    status = json.loads(out)["data"][0]
    return [{k: v["data"] for k, v in d.items()} for d in status["Devices"]["data"]]


def _kernel(g: Guardian) -> SimKernel:
    return SimulatedSystem(Root(g.root)).kernel()


@pytest.mark.parametrize("release", ["6.8.0-45-generic", "7.2.13-amd64"])
def test_a_reset_degrades_then_restores_with_counts_in_getstatus(each_bus: str, release: str) -> None:
    spec = bundled.load("rx7900xtx-ubuntu2404")
    spec = replace(spec, kernel=replace(spec.kernel, release=release))
    with guardian(spec) as g:
        ready = _after(g, 0, "STATUS=ready")
        marker = g.root / READY_MARKER.lstrip("/")
        assert marker.exists()
        kernel = _kernel(g)
        gpureset.hang(kernel, GPU, ("llama-server", 777))
        kernel.save()
        degraded = _after(g, ready + 1, "STATUS=degraded")
        # The ring timeout (hung) comes first, the reset's begin line right after it.
        assert GPU in g.messages[degraded] and g.messages[degraded].endswith(("hung", "resetting"))
        time.sleep(0.2)
        device = _devices(g)[0]
        assert (device["Health"], device["Resets"], device["RingTimeouts"]) == ("resetting", 1, 1)
        assert device["ComputeReady"] is False and device["LastProcess"] == "llama-server (pid 777)"
        assert not marker.exists(), "compute is not ready while the GPU resets"
        kernel = _kernel(g)
        gpureset.recover(kernel, GPU, ("llama-server", 777))
        kernel.save()
        _after(g, degraded + 1, "STATUS=ready")
        device = _devices(g)[0]
        assert (device["Health"], device["Resets"], device["ComputeReady"]) == ("ok", 1, True)
        assert device["WedgedEvents"] == (1 if release.startswith("7.") else 0)
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()


def test_a_failed_reset_stays_degraded_with_an_error_finding() -> None:
    with guardian("rx7900xtx-ubuntu2404") as g:
        ready = _after(g, 0, "STATUS=ready")
        gpureset.reset(Root(g.root), GPU, ok=False)
        _after(g, ready + 1, "STATUS=degraded")
        time.sleep(0.5)  # a re-check, were one to run, must not bring it back: the kernel said it failed
        assert busctl("get-property", NAME, PATH, NAME, "State", env=g.env()).stdout == 's "degraded"\n'
        out = busctl("--json=short", "get-property", NAME, PATH, NAME, "Findings", env=g.env()).stdout
        findings = json.loads(out)["data"]
        assert findings[0][:2] == ["gpu-hang", "error"] and "could not be reset" in findings[0][2]


# --- resume ------------------------------------------------------------------------------------

LOGIN1_POLICY = """<policy user="root"><allow own="org.freedesktop.login1"/></policy>"""


async def _emit_prepare_for_sleep(address: str, value: bool, *, own: bool) -> None:
    from dbus_fast import BusType, Message, MessageType
    from dbus_fast.aio import MessageBus

    bus = await MessageBus(bus_address=address, bus_type=BusType.SYSTEM).connect()
    try:
        if own:
            await bus.request_name("org.freedesktop.login1")
        signal = Message.new_signal("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                                    "b", [value])  # fmt: skip
        await bus.send(signal)
        if not own:
            # The same member sent straight to the service by someone who is not logind.
            reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                           interface="org.freedesktop.DBus", member="GetNameOwner", signature="s",
                                           body=[NAME]))  # fmt: skip
            assert reply.message_type == MessageType.METHOD_RETURN
            direct = Message.new_signal("/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                        "PrepareForSleep", "b", [value])  # fmt: skip
            direct.destination = reply.body[0]
            await bus.send(direct)
        await asyncio.sleep(0.2)  # let the bus deliver before the connection (and the name) goes
    finally:
        bus.disconnect()


def _fix_the_node(g: Guardian) -> None:
    root = Root(g.root)
    render = next(int(line.split(":")[2]) for line in (g.root / "etc/group").read_text().splitlines()
                  if line.startswith("render:"))  # fmt: skip
    # Without a uevent: only a re-check can notice it.
    nodes = SimulatedSystem(root)
    nodes.set_node_owner(root.kfd, 0, render, 0o660)


def test_resume_rechecks_and_only_logind_can_ask(each_bus: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kfdguard-resume-") as tmp:
        Path(tmp).chmod(0o755)
        bus = PrivateBus(Path(tmp), extra=LOGIN1_POLICY).start()
        try:
            with guardian("kfd-perms-0600", enforce=False, bus=bus) as g:
                first = _after(g, 0, "STATUS=unavailable")
                _fix_the_node(g)
                # Someone else's PrepareForSleep(false), broadcast and sent straight: no re-check.
                asyncio.run(_emit_prepare_for_sleep(bus.address, False, own=False))
                # logind's PrepareForSleep(true): going to sleep, nothing to look at yet.
                asyncio.run(_emit_prepare_for_sleep(bus.address, True, own=True))
                time.sleep(1.0)
                assert not any(m.startswith("STATUS=ready") for m in g.messages[first:]), g.messages
                start = time.monotonic()
                asyncio.run(_emit_prepare_for_sleep(bus.address, False, own=True))
                _after(g, first + 1, "STATUS=ready", timeout=10)
                assert time.monotonic() - start < 5
            _, log = g.stop()
            assert "ignoring PrepareForSleep from :" in log
            assert "resume from sleep" in log
        finally:
            bus.stop()
