"""The libraries' writers against a socket whose buffer fills: the burst that ended the service's bus connection."""

from __future__ import annotations

import asyncio
import importlib
import socket
from typing import Any

import pytest

from kfdguard.service.backend import keep_writing_when_full, load

BACKENDS = ["fast", "next"]
MESSAGES = 400  # x ~16 kB: far beyond a Unix socket's send buffer


class _Bus:
    """What a library's _MessageWriter reads from its MessageBus."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._sock, self._fd, self._loop = sock, sock.fileno(), loop
        self._negotiate_unix_fd = False
        self._user_disconnect = False
        self.unique_name = ":1.1"
        self.finalized: list[BaseException] = []

    def _finalize(self, err: BaseException | None = None) -> None:
        self.finalized.append(err or RuntimeError("finalized"))


async def _burst(backend: str, patient: bool) -> tuple[int, int, list[BaseException]]:
    b = load(backend)
    module: Any = importlib.import_module(
        "dbus_fast.aio.message_bus" if backend == "fast" else "dbus_next.aio.message_bus"
    )
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    peer.setblocking(False)
    loop = asyncio.get_running_loop()
    bus = _Bus(ours, loop)
    writer = module._MessageWriter(bus)
    bus._writer = writer  # type: ignore[attr-defined]
    if patient:
        keep_writing_when_full(bus)
    sent = 0
    for i in range(MESSAGES):
        msg = b.Message(destination=":1.2", path="/p", interface="a.b", member="C", signature="s", body=["x" * 16000])
        data = msg._marshall(False) if backend == "fast" else msg._marshall()
        sent += len(data)
        writer.schedule_write(msg, None)
        if i % 50 == 0:
            await asyncio.sleep(0)
    received = 0
    while received < sent and not bus.finalized:
        try:
            chunk = peer.recv(1 << 16)
        except BlockingIOError:
            await asyncio.sleep(0.001)
            continue
        received += len(chunk)
    loop.remove_writer(ours.fileno())
    ours.close()
    peer.close()
    return sent, received, bus.finalized


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_full_socket_buffer_delays_the_messages_and_loses_none(backend: str) -> None:
    sent, received, finalized = asyncio.run(_burst(backend, patient=True))
    assert not finalized, finalized
    assert received == sent


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_the_fix_the_library_ends_the_connection(backend: str) -> None:
    """Guards the reason for keep_writing_when_full: when a library fixes its writer, this fails and the shim can go."""
    _, received, finalized = asyncio.run(_burst(backend, patient=False))
    assert finalized and isinstance(finalized[0], BlockingIOError), finalized
    assert received < MESSAGES * 16000
