"""File descriptors a message brings are closed at once (dbus-broker 37 sends the caller's pidfd).

The service negotiates Unix fd passing on its bus connection: dbus-broker 37 answers
GetConnectionCredentials with the caller's pidfd (ProcessFD) and disconnects a peer that cannot
receive it, so without fd passing any local user's CheckAccess dropped the service off the bus.
With fd passing every client may send descriptors too; kfdguard takes no fd argument and must
neither keep them nor fail: a client here sends hundreds of calls that carry pipes.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.servicekit import NAME, PATH, guardian

IFACE = "org.kfdguard.Guardian1"


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _send_with_fds(address: str, rounds: int) -> list[str]:
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    bus = await MessageBus(bus_address=address, negotiate_unix_fd=True).connect()
    answers = []
    try:
        for i in range(rounds):
            r, w = os.pipe()
            try:
                # A method kfdguard has, with an fd argument it does not take, and a property read
                # whose message carries a descriptor it did not ask for.
                if i % 2:
                    msg = Message(destination=NAME, path=PATH, interface=IFACE, member="GetStatus", signature="h",
                                  body=[0], unix_fds=[r])  # fmt: skip
                else:
                    msg = Message(destination=NAME, path=PATH, interface="org.freedesktop.DBus.Properties",
                                  member="Get", signature="ssh", body=[IFACE, "State", 0], unix_fds=[w])  # fmt: skip
                reply = await asyncio.wait_for(bus.call(msg), 10)
                assert reply is not None
                answers.append(reply.error_name or "" if reply.message_type is MessageType.ERROR else "ok")
            finally:
                os.close(r)
                os.close(w)
        status = await bus.call(Message(destination=NAME, path=PATH, interface=IFACE, member="GetStatus"))
        assert status is not None and status.message_type is MessageType.METHOD_RETURN, status
        return answers
    finally:
        bus.disconnect()


@pytest.mark.parametrize("backend", ["fast", "next"])
def test_descriptors_in_calls_are_closed_and_the_service_stays(backend: str, tmp_path: Path) -> None:
    with guardian("nvidia-only", backend=backend, enforce=False) as g:
        pid = g.proc.pid
        asyncio.run(_send_with_fds(g.address, 10))  # settle: the loop's own descriptors are open by now
        before = _open_fds(pid)
        answers = asyncio.run(_send_with_fds(g.address, 300))
        after = _open_fds(pid)
        assert g.proc.poll() is None, "the service left the bus"
        # Every call was answered (an error for the wrong signature), none hung.
        assert len(answers) == 300 and all(answers), answers[:5]
        # 300 calls each brought a descriptor: none of them is kept.
        assert after <= before + 2, (before, after)
