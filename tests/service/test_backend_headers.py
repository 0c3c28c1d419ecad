"""Header fields a message carries that the D-Bus library does not know are ignored, as the specification says.

dbus-daemon removes unknown header fields before relaying a message; dbus-broker (Fedora's and Arch's
system bus) relays them. dbus-next 0.2.3 raised "ValueError: 100 is not a valid HeaderField" on one,
lost its connection and the service exited: any local user could stop it with one message.
"""

from __future__ import annotations

import importlib
import io
from typing import Any

import pytest

pytest.importorskip("dbus_next", reason="dbus-next is the optional backend")

# Any: the library's private modules, one of which the backend patches.
dbus_next: Any = importlib.import_module("dbus_next")
marshaller: Any = importlib.import_module("dbus_next._private.marshaller")
unmarshaller: Any = importlib.import_module("dbus_next._private.unmarshaller")


def _message_with_unknown_field() -> bytes:
    fields = [
        [1, dbus_next.Variant("o", "/org/kfdguard/Guardian1")],
        [2, dbus_next.Variant("s", "org.kfdguard.Guardian1")],
        [3, dbus_next.Variant("s", "GetStatus")],
        [100, dbus_next.Variant("s", "a field from a newer specification")],
    ]
    packed = marshaller.Marshaller("yyyyuua(yv)", [ord("l"), 1, 0, 1, 0, 7, fields])
    packed.marshall()
    packed.align(8)
    return bytes(packed.buffer)


def test_dbus_next_as_released_refuses_the_message() -> None:
    # What the backend guards against: this fails the day dbus-next ignores unknown fields itself,
    # and the guard in kfdguard/service/backend.py can go.
    from kfdguard.service import backend

    backend.load("next")  # keeps the library's own enum in DBUS_NEXT_HEADER_FIELD
    patched = unmarshaller.HeaderField
    try:
        unmarshaller.HeaderField = backend.DBUS_NEXT_HEADER_FIELD
        with pytest.raises(ValueError, match="100 is not a valid HeaderField"):
            unmarshaller.Unmarshaller(io.BytesIO(_message_with_unknown_field())).unmarshall()
    finally:
        unmarshaller.HeaderField = patched


def test_the_backend_ignores_unknown_header_fields() -> None:
    from kfdguard.service.backend import load

    load("next")
    message = unmarshaller.Unmarshaller(io.BytesIO(_message_with_unknown_field())).unmarshall()
    assert message is not None
    assert (message.path, message.interface, message.member) == (
        "/org/kfdguard/Guardian1",
        "org.kfdguard.Guardian1",
        "GetStatus",
    )
