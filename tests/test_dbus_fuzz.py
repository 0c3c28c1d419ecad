"""The service against hostile input on the bus, and hostile machine content that reaches the bus."""

from __future__ import annotations

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
