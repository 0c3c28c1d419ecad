"""Talking to the running service from the command line (kfdguard status, reload, access, diagnose)."""

from __future__ import annotations

import asyncio
from typing import Any

from kfdguard.publish.names import BUS_NAME, INTERFACE, OBJECT_PATH

TIMEOUT = 10.0
INTERACTIVE_TIMEOUT = 120.0  # a polkit password prompt may wait for a person


class ServiceError(Exception):
    def __init__(self, name: str, text: str) -> None:
        super().__init__(f"{text} ({name})")
        self.name = name
        self.text = text

    @property
    def unreachable(self) -> bool:
        return self.name in (
            "org.freedesktop.DBus.Error.ServiceUnknown",
            "org.freedesktop.DBus.Error.NameHasNoOwner",
            "org.freedesktop.DBus.Error.NoServer",
            "org.freedesktop.DBus.Error.FileNotFound",
            "kfdguard.NoBus",
        )


def _plain(value: Any) -> Any:
    """Variants and their nested containers as plain Python values."""
    if hasattr(value, "signature") and hasattr(value, "value"):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


async def _call(
    member: str, bus_address: str | None, interactive: bool, signature: str = "", body: list[Any] | None = None
) -> list[Any]:
    from kfdguard.service.backend import load

    b = load()
    try:
        bus = await asyncio.wait_for(
            b.MessageBus(bus_address=bus_address, bus_type=b.BusType.SYSTEM).connect(), TIMEOUT
        )
    except (TimeoutError, OSError) as exc:
        raise ServiceError("kfdguard.NoBus", f"cannot connect to the system bus: {exc}") from None
    try:
        flags = b.MessageFlag.ALLOW_INTERACTIVE_AUTHORIZATION if interactive else b.MessageFlag.NONE
        msg = b.Message(
            destination=BUS_NAME, path=OBJECT_PATH, interface=INTERFACE, member=member, flags=flags,
            signature=signature, body=body or [],
        )  # fmt: skip
        timeout = INTERACTIVE_TIMEOUT if interactive else TIMEOUT
        reply = await asyncio.wait_for(bus.call(msg), timeout)
    except TimeoutError:
        raise ServiceError("kfdguard.Timeout", f"{member}: no answer within {timeout:g} s") from None
    finally:
        bus.disconnect()
    if reply.message_type == b.MessageType.ERROR:
        raise ServiceError(reply.error_name or "", str(reply.body[0]) if reply.body else "")
    return [_plain(v) for v in reply.body]


def call(
    member: str,
    bus_address: str | None = None,
    *,
    interactive: bool = False,
    signature: str = "",
    body: list[Any] | None = None,
) -> list[Any]:
    return asyncio.run(_call(member, bus_address, interactive, signature, body))
