"""The service against hostile input on the bus, and hostile machine content that reaches the bus."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from kfdguard.service.backend import load
from kfdguard.service.dbusapi import GuardianAPI, fit
from kfdguard.service.status import Status
from tests.servicekit import guardian

BACKENDS = ["fast", "next"]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root may own the name on a system-like bus")


class _Service:
    """What GuardianAPI reads of the service before any call."""

    def __init__(self, status: Status) -> None:
        self.status = status


class _Bus:
    """Keeps what the service sends instead of sending it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, msg: Any) -> None:
        self.sent.append(msg)


def _marshalled(backend: str, status: Status) -> list[bytes]:
    """What the service puts on the wire for ``status``: PropertiesChanged and StateChanged after a check."""
    b = load(backend)
    bus = _Bus()
    api = GuardianAPI(bus, b, _Service(Status("starting", False, "checking")), 1.0)  # type: ignore[arg-type]
    api.publish(Status("starting", False, "checking"), status)
    assert [m.member for m in bus.sent] == ["PropertiesChanged", "StateChanged"]
    return [bytes(m._marshall(False) if backend == "fast" else m._marshall()) for m in bus.sent]


def test_fit_makes_values_valid_for_their_bus_type() -> None:
    assert fit("q", 0x10000744C) == 0 and fit("q", 0x744C) == 0x744C
    assert fit("i", 2**40) == -1 and fit("i", -5) == -5  # KfdNode: -1 is "no node"
    assert fit("t", -1) == 0 and fit("b", 1) is True
    assert fit("s", "6.8.0\x00evil") == "6.8.0 evil"
    assert fit("s", "slot\udcff") == "slot?"  # a lone surrogate (a non-UTF-8 file name) cannot be encoded
    assert fit("s", "Navi31 — ok") == "Navi31 — ok"


@pytest.mark.parametrize("backend", BACKENDS)
def test_properties_from_hostile_content_marshal(backend: str) -> None:
    status = Status(
        "degraded", True, "summary\x00with nul \udcff",
        kernel="6.8.0\x00x",
        devices=({"Slot": "0000:03:00.0\udcff", "VendorId": 0x1002, "DeviceId": 0x10000744C, "Name": "AMD GPU",
                  "GfxTarget": "", "KfdNode": 2**40, "ComputeReady": True, "RenderNode": "", "Reason": "ready"},),
        findings=(("code", "error", "message\udcff", "remedy\x00"),),
        fallback={"Needed": False, "Kernel": "\x00", "Reason": "", "AlreadyDefault": False, "Command": ""},
        last_check=2**70,
    )  # fmt: skip
    changed, state = _marshalled(backend, status)
    assert b"summary with nul ?" in changed and b"6.8.0 x" in changed and b"0000:03:00.0?" in changed
    assert b"summary with nul ?" in state
    assert b"\x00with" not in changed + state


def _device_id(value: str) -> Any:
    def prepare(root: Path) -> None:
        (pci,) = [p for p in (root / "sys/devices").glob("pci*/*/device") if p.is_file()]
        pci.write_text(value + "\n")

    return prepare


@as_root
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sysfs_id_too_large_for_the_bus_does_not_kill_the_service(backend: str) -> None:
    """A corrupt sysfs 'device' file (0x10000744c does not fit a uint16) once made the service die at start."""
    from kfdguard.client import call

    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False, prepare=_device_id("0x10000744c")) as g:
        (status,) = call("GetStatus", g.address)
        (device,) = status["Devices"]
        assert device["DeviceId"] == 0 and device["VendorId"] == 0x1002
        assert "10000744c" in device["Name"]  # the name still says what the file held
        assert g.proc.poll() is None


def ask(address: str, backend: str, path: str, interface: str, member: str, signature: str = "",
        body: list[Any] | None = None) -> tuple[str | None, Any]:  # fmt: skip
    """One call with the given library: (error name or None, the first value of the body)."""

    async def go() -> tuple[str | None, Any]:
        b = load(backend)
        bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
        try:
            msg = b.Message(destination="org.kfdguard.Guardian1", path=path, interface=interface, member=member,
                            signature=signature, body=body or [])  # fmt: skip
            reply = await asyncio.wait_for(bus.call(msg), 20)
        finally:
            bus.disconnect()
        first = reply.body[0] if reply.body else None
        return (reply.error_name if reply.message_type == b.MessageType.ERROR else None), first

    return asyncio.run(go())


@as_root
@pytest.mark.parametrize("backend", BACKENDS)
def test_peer_and_introspect_follow_the_standard_interfaces(backend: str) -> None:
    """Found by kfdguard.devtools.dbusfuzz: Introspect took any arguments, and GetMachineId answered
    AccessDenied (the libraries ask the bus, whose system policy refuses it) quoting the service's
    command line."""
    peer, intro = "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable"
    machine_id = Path("/etc/machine-id").read_text().strip()
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        for path in ("/org/kfdguard/Guardian1", "/", "/somewhere/else"):
            assert ask(g.address, backend, path, peer, "GetMachineId") == (None, machine_id)
            assert ask(g.address, backend, path, peer, "Ping") == (None, None)
            error, text = ask(g.address, backend, path, peer, "Ping", "s", ["x"])
            assert error == "org.freedesktop.DBus.Error.InvalidArgs" and "takes no arguments" in text
            assert ask(g.address, backend, path, peer, "Frob")[0] == "org.freedesktop.DBus.Error.UnknownMethod"
        for path in ("/org/kfdguard/Guardian1", "/org"):
            assert ask(g.address, backend, path, intro, "Introspect")[0] is None
            error, text = ask(g.address, backend, path, intro, "Introspect", "u", [1])
            assert error == "org.freedesktop.DBus.Error.InvalidArgs" and "Introspect takes no arguments" in text
        assert g.proc.poll() is None


def _send_without_reply(address: str, backend: str, path: str, interface: str, member: str, signature: str,
                        body: list[Any], count: int) -> None:  # fmt: skip
    async def go() -> None:
        b = load(backend)
        bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
        try:
            for _ in range(count):
                await bus.send(b.Message(destination="org.kfdguard.Guardian1", path=path, interface=interface,
                                         member=member, signature=signature, body=body,
                                         flags=b.MessageFlag.NO_REPLY_EXPECTED))  # fmt: skip
            # A call with a reply after them: the service has handled them all when it answers.
            await asyncio.wait_for(bus.call(b.Message(destination="org.kfdguard.Guardian1", path="/",
                                                      interface="org.freedesktop.DBus.Peer", member="Ping")), 20)  # fmt: skip
        finally:
            bus.disconnect()

    asyncio.run(go())


@as_root
@pytest.mark.parametrize("backend", BACKENDS)
def test_calls_to_other_paths_are_answered_without_library_tracebacks(backend: str) -> None:
    """Found by the fuzzer: Properties.Get on another path, sent without expecting a reply, made
    dbus-next log a traceback each time (any caller could flood the journal)."""
    props = "org.freedesktop.DBus.Properties"
    with guardian("rx7900xtx-ubuntu2404", backend=backend, enforce=False) as g:
        _send_without_reply(
            g.address, backend, "/elsewhere", props, "Get", "ss", ["org.kfdguard.Guardian1", "State"], 20
        )
        _send_without_reply(g.address, backend, "/org/kfdguard/Guardian1", props, "Get", "ss", ["x", "y"], 20)
        error, text = ask(g.address, backend, "/elsewhere", props, "Get", "ss", ["org.kfdguard.Guardian1", "State"])
        assert error == "org.freedesktop.DBus.Error.UnknownObject" and "/elsewhere" in text
        assert ask(g.address, backend, "/elsewhere", "org.kfdguard.Guardian1", "GetStatus")[0] == (
            "org.freedesktop.DBus.Error.UnknownObject"
        )
        assert g.proc.poll() is None
        _, stderr = g.stop()
    assert "Traceback" not in stderr and "unexpected error" not in stderr, stderr[-2000:]
