"""Following the kernel log on the event loop: the journal, or a FIFO of kmsg records.

The unit has ProtectKernelLogs=yes, so on a real machine the kernel's lines come
from the journal (the kernel transport of this boot), read from its tail with
systemd-python's Reader: its ``fileno()`` is an inotify descriptor the loop
watches, ``process()`` says what changed, and the reader's position is the
cursor. Each wake-up reads at most BATCH entries and schedules itself again
for the rest, so a log storm cannot hold the loop; nothing is kept but the
cursor. A simulated machine's kernel writes its records ("pri,seq,usec,flags;text")
into ``.kfdguard-sim/kmsg.fifo`` instead (``app/targets.py`` chooses).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kfdguard import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

BATCH = 256
BUFFER_LIMIT = 64 << 10  # a FIFO writer that never ends its line cannot grow the buffer past this


class JournalFollower:
    """The journal's kernel lines from now on, handed to ``on_line`` as short-monotonic lines."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_line: Callable[[str], None], reader: Any = None) -> None:
        from systemd import journal

        self.journal = journal
        self.loop = loop
        self.on_line = on_line
        # ``reader``: a test's stand-in with journal.Reader's methods; the service opens the system journal.
        self.reader = journal.Reader() if reader is None else reader
        self.reader.this_boot()
        self.reader.add_match(_TRANSPORT="kernel")
        self.reader.seek_tail()
        self.reader.get_previous()  # the position is now the last entry: get_next() returns only new ones
        self.cursor: str | None = None
        self.scheduled = False
        self.fd = self.reader.fileno()
        loop.add_reader(self.fd, self._readable)

    def _readable(self) -> None:
        try:
            if self.reader.process() == self.journal.INVALIDATE and self.cursor is not None:
                # Files were rotated or vacuumed: go back to the last entry handed on, by its cursor.
                self.reader.seek_cursor(self.cursor)
                self.reader.get_next()
        except OSError as exc:
            log.warning(f"following the journal: {exc}")
            return
        self._drain()

    def _drain(self) -> None:
        self.scheduled = False
        from kfdguard.host.system import ENTRY_LIMIT, journal_ident, journal_line

        for _ in range(BATCH):
            try:
                entry = self.reader.get_next()
            except (OSError, ValueError) as exc:  # a corrupt entry: skip past it on the next wake-up
                log.warning(f"following the journal: {exc}")
                return
            if not entry:
                return
            self.cursor = str(entry.get("__CURSOR", "")) or self.cursor
            if journal_ident(entry) != "kernel":
                continue  # written into /dev/kmsg from userspace (a facility other than the kernel's)
            usec = _usec(entry.get("__MONOTONIC_TIMESTAMP"))
            message = entry.get("MESSAGE", "")
            if isinstance(message, bytes):
                message = message.decode("utf-8", errors="replace")
            self.on_line(journal_line(usec, "kernel", str(message)[:ENTRY_LIMIT].replace("\n", " ")))
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._drain)  # more than a batch waits: let the loop breathe first

    def close(self) -> None:
        self.loop.remove_reader(self.fd)
        self.reader.close()


def _usec(mono: Any) -> int:
    """systemd-python's Monotonic (timestamp: timedelta, bootid) or a bare timedelta -> microseconds."""
    try:
        return int(getattr(mono, "timestamp", mono).total_seconds() * 1_000_000)
    except (AttributeError, TypeError, ValueError, OverflowError):
        return 0


class FifoFollower:
    """Lines written into a FIFO (a simulated kernel's kmsg records)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, path: str, on_line: Callable[[str], None]) -> None:
        if not os.path.exists(path):
            os.mkfifo(path, 0o600)
        # O_RDWR keeps the FIFO open with no writer, so the reader never sees EOF.
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.loop = loop
        self.on_line = on_line
        self.buffer = bytearray()
        loop.add_reader(self.fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        self.buffer.extend(chunk)
        lines = self.buffer.split(b"\n")
        self.buffer = bytearray(lines.pop()[-BUFFER_LIMIT:])
        for line in lines:
            text = line.decode("utf-8", errors="replace").strip()
            if text:
                self.on_line(text)

    def close(self) -> None:
        self.loop.remove_reader(self.fd)
        os.close(self.fd)


def follow(loop: asyncio.AbstractEventLoop, fifo: str, on_line: Callable[[str], None]) -> object | None:
    """The FIFO when the target names one, else the journal; None (and a warning) when neither can be had."""
    try:
        if fifo:
            return FifoFollower(loop, fifo, on_line)
        return JournalFollower(loop, on_line)
    except ImportError:
        log.warning("systemd-python is not installed: GPU resets and hangs are noticed only at the next check")
    except OSError as exc:
        log.warning(f"cannot follow the kernel log ({exc}): GPU resets and hangs are noticed only at the next check")
    return None
