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

        _ignore_unknown_header_fields()

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


class _HeaderFields:
    """dbus-next's HeaderField enum as its unmarshaller calls it, except that a code it does not know
    is ignored, as the D-Bus specification requires ("implementations must ignore header fields they
    do not understand").

    dbus-next 0.2.3 raises ValueError on one and drops the connection. dbus-daemon removes unknown
    fields before relaying a message, dbus-broker (Fedora's and Arch's system bus) relays them: with
    it, one message from any local user ended the service (found running the fuzzer on dbus-broker;
    tests/service/test_backend_headers.py fails the day dbus-next copes by itself).
    """

    def __init__(self, enum: Any) -> None:
        self._enum = enum

    def __call__(self, code: int) -> Any:
        try:
            return self._enum(code)
        except ValueError:
            return _IgnoredField(code)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._enum, name)


class _IgnoredField:
    def __init__(self, code: int) -> None:
        # Stored under a name dbus-next never reads back: the field is dropped.
        self.name = f"_ignored_{code}"


DBUS_NEXT_HEADER_FIELD: Any = None  # the library's own, kept for the test that shows why the guard is there


def _ignore_unknown_header_fields() -> None:
    global DBUS_NEXT_HEADER_FIELD  # noqa: PLW0603  (one library module, patched once)
    import importlib

    # Any: the patch replaces an enum class with a callable, which the library's types cannot say.
    unmarshaller: Any = importlib.import_module("dbus_next._private.unmarshaller")
    if not isinstance(unmarshaller.HeaderField, _HeaderFields):
        DBUS_NEXT_HEADER_FIELD = unmarshaller.HeaderField
        unmarshaller.HeaderField = _HeaderFields(unmarshaller.HeaderField)


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
