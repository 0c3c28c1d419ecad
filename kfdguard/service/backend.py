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


class _PatientSocket:
    """The bus socket as the library's writer sees it: a full send buffer means "later".

    The asyncio writers of dbus-fast 5.2 and dbus-next 0.2.3 send queued messages in
    a loop and treat EAGAIN from the non-blocking socket as fatal, so a burst of
    replies (a hundred clients calling at once) ended the service's connection to
    the bus. Answering "0 bytes sent" instead makes both writers keep the message and
    wait for the socket to become writable, which is what they do after a short send.
    """

    def __init__(self, sock: Any) -> None:
        self._sock = sock

    def send(self, data: Any) -> int:
        try:
            return int(self._sock.send(data))
        except BlockingIOError:
            return 0

    def sendmsg(self, buffers: Any, ancdata: Any = ()) -> int:
        # Only reached with file descriptors, which kfdguard never sends; a message
        # with ancillary data must not be half-sent without them, so EAGAIN stays fatal.
        return int(self._sock.sendmsg(buffers, ancdata))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def keep_writing_when_full(bus: Any) -> None:
    """Make a connected bus survive a full socket buffer (see _PatientSocket)."""
    writer = getattr(bus, "_writer", None)
    if writer is not None and hasattr(writer, "sock") and not isinstance(writer.sock, _PatientSocket):
        writer.sock = _PatientSocket(writer.sock)
