"""Device events that make the service look again: udev's monitor, or uevent
lines written into a FIFO (how a test bed announces them). Which one is the
target's choice (``app.targets.EventSource``); both only ask for a re-check
and decide nothing."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from kfdguard import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.app.targets import EventSource

SUBSYSTEMS = ("kfd", "drm", "pci")
# Events come in bursts (udev's add of a device and its change events, a card's
# drm nodes: within a few milliseconds of each other; a real GPU's kfd and drm
# nodes are seconds apart, no window folds those). The first event of a burst
# starts a short settle window and later ones join it without pushing it back,
# so a reaction never waits more than the window; what arrives during the check
# itself folds into one more. The window is every reaction's floor (make bench,
# goal 50 ms from event to signal): 10 ms folds a burst and leaves the rest to
# the check.
SETTLE = 0.01


class Debouncer:
    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float, action: Callable[[str], None]) -> None:
        self.loop = loop
        self.delay = delay
        self.action = action
        self.handle: asyncio.TimerHandle | None = None
        self.reasons: list[str] = []

    def poke(self, reason: str) -> None:
        self.reasons.append(reason)
        if self.handle is None:
            self.handle = self.loop.call_later(self.delay, self._fire)

    def _fire(self) -> None:
        reasons, self.reasons, self.handle = self.reasons, [], None
        self.action(", ".join(dict.fromkeys(reasons)))


def watch_udev(loop: asyncio.AbstractEventLoop, poke: Callable[[str], None]) -> object | None:
    """pyudev's monitor on the loop's own reader: no thread."""
    try:
        import pyudev
    except ImportError:
        log.warning("pyudev is not installed: device changes are noticed only on SIGHUP or Reload")
        return None
    try:
        monitor = pyudev.Monitor.from_netlink(pyudev.Context())
        for subsystem in SUBSYSTEMS:
            monitor.filter_by(subsystem=subsystem)
        monitor.start()
    except (OSError, ImportError) as exc:
        log.warning(f"udev monitor unavailable ({exc}): device changes are noticed only on SIGHUP or Reload")
        return None

    def readable() -> None:
        while True:
            try:
                device = monitor.poll(timeout=0)
            except OSError:
                return
            if device is None:
                return
            poke(f"udev {device.action} {device.subsystem} {device.sys_name}")

    loop.add_reader(monitor.fileno(), readable)
    kept: object = monitor  # the caller keeps it alive for the loop's lifetime
    return kept


def watch(source: EventSource, loop: asyncio.AbstractEventLoop, poke: Callable[[str], None]) -> object | None:
    """Start the source the target names; None when it is unavailable (then SIGHUP and Reload remain)."""
    if source.kind == "fifo":
        return watch_fifo(loop, source.path, poke)
    return watch_udev(loop, poke)


def watch_fifo(loop: asyncio.AbstractEventLoop, fifo: str, poke: Callable[[str], None]) -> int | None:
    """Uevents as lines "ACTION SUBSYSTEM NAME" written into a FIFO."""
    try:
        if not os.path.exists(fifo):
            os.mkfifo(fifo, 0o600)
        # O_RDWR keeps the FIFO open with no writer, so the reader never sees EOF.
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        log.warning(f"uevents from {fifo} unavailable: {exc}")
        return None
    buffer = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        buffer.extend(chunk)
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            text = line.decode(errors="replace").strip()[:200]
            if text:
                poke(f"uevent {text}")

    loop.add_reader(fd, readable)
    return fd
