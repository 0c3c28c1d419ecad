"""tools/launch.py's stand-in for systemd's notify socket, as the service tests use it hundreds of times a run."""

from __future__ import annotations

import socket
from pathlib import Path

from tools.launch import NotifyListener


def send(path: Path, text: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.sendto(text.encode(), str(path))


def test_a_closed_listener_has_no_reader_left_to_steal_the_next_ones_datagrams(tmp_path: Path) -> None:
    """Issue 35's harness under load: a listener closed while its thread was about to call recv() freed the
    descriptor's number for the next test's socket, and the old thread read from that one: a service's READY=1
    went to a test long finished, and the new one waited 60 s for it. close() now ends the thread first."""
    for i in range(20):
        first = NotifyListener(tmp_path / f"old-{i}")
        send(tmp_path / f"old-{i}", "STOPPING=1")
        first.close()
        assert not first._reader.is_alive()  # nothing is left that could read a reused descriptor
        second = NotifyListener(tmp_path / f"new-{i}")
        try:
            send(tmp_path / f"new-{i}", "READY=1\nSTATUS=ready")
            with second.arrived:
                assert second.arrived.wait_for(lambda: second.messages, timeout=10)  # noqa: B023
            assert second.messages == ["READY=1\nSTATUS=ready"]
            assert "READY=1\nSTATUS=ready" not in first.messages
        finally:
            second.close()


def test_an_empty_datagram_is_a_message_until_the_listener_closes(tmp_path: Path) -> None:
    listener = NotifyListener(tmp_path / "notify")
    try:
        send(tmp_path / "notify", "")
        send(tmp_path / "notify", "READY=1")
        with listener.arrived:
            assert listener.arrived.wait_for(lambda: len(listener.messages) == 2, timeout=10)
        assert listener.messages == ["", "READY=1"]
    finally:
        listener.close()
