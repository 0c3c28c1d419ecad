"""The one module that imports a D-Bus library.

dbus-fast is the default (maintained, faster, no traceback in error replies);
dbus-next, whose API it forked, stays supported: KFDGUARD_DBUS=next. Only the
low-level Message API is used, which the two share.
"""

from __future__ import annotations

import os
from typing import Any

from kfdguard.record import dataclass

BACKENDS = ("fast", "next")


@dataclass(frozen=True)
class Backend:
    name: str  # "dbus-fast" or "dbus-next"
    MessageBus: Any
    Message: Any
    MessageType: Any
    MessageFlag: Any
    Variant: Any
    BusType: Any
    NameFlag: Any
    RequestNameReply: Any


def load(choice: str | None = None) -> Backend:
    choice = choice or os.environ.get("KFDGUARD_DBUS", "fast")
    if choice == "next":
        import dbus_next
        from dbus_next.aio import MessageBus as NextBus  # type: ignore[attr-defined]

        lib: Any = dbus_next
        bus: Any = NextBus
        name = "dbus-next"
    elif choice == "fast":
        import dbus_fast
        import dbus_fast.aio

        lib = dbus_fast
        bus = dbus_fast.aio.MessageBus
        name = "dbus-fast"
    else:
        raise ValueError(f"unknown D-Bus backend {choice!r}; choose one of {', '.join(BACKENDS)}")
    return Backend(
        name=name,
        MessageBus=bus,
        Message=lib.Message,
        MessageType=lib.MessageType,
        MessageFlag=lib.MessageFlag,
        Variant=lib.Variant,
        BusType=lib.BusType,
        NameFlag=lib.NameFlag,
        RequestNameReply=lib.RequestNameReply,
    )
