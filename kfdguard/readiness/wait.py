"""``kfdguard wait``: block until compute is ready, without a busy loop.

With a bus: GetStatus, then sleep until the service signals (StateChanged,
PropertiesChanged) or its name changes owner, and ask again. A service that is
not running yet is waited for (NameOwnerChanged); D-Bus activation may start it.
Without a bus (a container, an early boot without dbus): the runtime marker,
watched with inotify on its directory; only where inotify cannot be had,
a look once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import os
from typing import Any

from kfdguard.readiness.condition import satisfied
from kfdguard.record import dataclass

NAME = "org.kfdguard.Guardian1"
PATH = "/org/kfdguard/Guardian1"
DBUS = "org.freedesktop.DBus"
CONNECT_TIMEOUT = 5.0
CALL_TIMEOUT = 10.0
POLL_FALLBACK = 1.0
# inotify(7): the marker's directory is watched for the marker appearing, changing or going.
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO = 0x2, 0x8, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF = 0x100, 0x200, 0x400
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
WATCH = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF


@dataclass(frozen=True)
class Outcome:
    ready: bool
    via: str  # "bus" or "marker"
    state: str  # the last state seen ("" when nothing was seen)
    summary: str
    waited: float
    note: str = ""  # why the bus was not used, or why nothing was seen


class Want:
    def __init__(self, require: str, gpu: str | None) -> None:
        self.require = require
        self.gpu = gpu

    def met(self, state: str, ready_slots: list[str]) -> bool:
        return satisfied(state, ready_slots, self.require, self.gpu)


# --- the bus -----------------------------------------------------------------------


async def _bus_wait(bus: Any, b: Any, want: Want, deadline: float, start: float) -> Outcome:
    from kfdguard.publish.client import _plain

    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    def on_message(msg: Any) -> None:
        if msg.message_type == b.MessageType.SIGNAL and (
            msg.path == PATH or (msg.member == "NameOwnerChanged" and msg.body and msg.body[0] == NAME)
        ):
            changed.set()

    bus.add_message_handler(on_message)
    for rule in (
        f"type='signal',path='{PATH}'",
        f"type='signal',sender='{DBUS}',member='NameOwnerChanged',arg0='{NAME}'",
    ):
        await bus.call(
            b.Message(destination=DBUS, path="/org/freedesktop/DBus", interface=DBUS, member="AddMatch",
                      signature="s", body=[rule])
        )  # fmt: skip
    state, summary, note = "", "", ""
    while True:
        changed.clear()
        reply = await asyncio.wait_for(
            bus.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="GetStatus")), CALL_TIMEOUT
        )
        if reply.message_type == b.MessageType.ERROR:
            note = f"the kfdguard service does not answer: {reply.error_name}"
        else:
            status = _plain(reply.body[0]) if reply.body else {}
            state, summary, note = str(status.get("State", "")), str(status.get("Summary", "")), ""
            slots = [str(d.get("Slot")) for d in status.get("Devices", []) if d.get("ComputeReady")]
            if want.met(state, slots):
                return Outcome(True, "bus", state, summary, loop.time() - start)
        remaining = deadline - loop.time()
        if remaining <= 0:
            return Outcome(False, "bus", state, summary, loop.time() - start, note)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), remaining)


# --- the marker --------------------------------------------------------------------


@functools.cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return None if name is None else ctypes.CDLL(name, use_errno=True)


def _watch(fd: int, directory: str) -> None:
    if os.path.isdir(directory):
        _libc().inotify_add_watch(fd, directory.encode(), WATCH)


def _nearest(directory: str) -> str:
    """``directory`` if it exists, else its deepest existing ancestor."""
    path = directory
    while path not in ("", "/") and not os.path.isdir(path):
        path = os.path.dirname(path)
    return path or "/"


def rewatch(fd: int, directory: str) -> None:
    """Watch ``directory``, or the deepest of its ancestors that exists, until that stops changing.

    inotify sees only a watched directory's own entries: with /run/kfdguard/ready wanted and only /run
    there, /run is watched; when kfdguard creates /run/kfdguard, the event wakes the waiter, which must
    now watch /run/kfdguard before the marker lands in it. A level that appeared while the watch was
    being added sends no event to anyone, so the nearest ancestor is looked up again after each watch
    (a watch added twice is harmless). Under load the service made the whole chain between a waiter's
    two looks, and the waiter slept through the marker until its timeout."""
    watched = None
    while (path := _nearest(directory)) != watched:
        _watch(fd, path)
        watched = path


def _inotify(directory: str) -> int | None:
    """An inotify descriptor watching ``directory`` (or its nearest existing ancestor), or None."""
    libc = _libc()
    if libc is None or not hasattr(libc, "inotify_init1"):
        return None
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        return None
    rewatch(int(fd), directory)
    return int(fd)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError, OSError):
        while os.read(fd, 4096):
            pass


async def _marker_wait(read: Any, marker_dir: str, want: Want, deadline: float, start: float, note: str) -> Outcome:
    loop = asyncio.get_running_loop()
    fd = _inotify(marker_dir)
    woke = asyncio.Event()
    if fd is not None:
        loop.add_reader(fd, woke.set)
    try:
        while True:
            woke.clear()
            if fd is not None:
                _drain(fd)
                # A level of the marker's directory may have appeared since: watch down to it, then read.
                rewatch(fd, marker_dir)
            marker = read()
            state = marker.state if marker is not None else ""
            summary = (
                marker.summary if marker is not None else "no marker: compute is not ready (or kfdguard is not running)"
            )
            if marker is not None and want.met(marker.state, list(marker.ready_gpus)):
                return Outcome(True, "marker", state, summary, loop.time() - start, note)
            remaining = deadline - loop.time()
            if remaining <= 0:
                return Outcome(False, "marker", state, summary, loop.time() - start, note)
            wait_for = remaining if fd is not None else min(remaining, POLL_FALLBACK)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woke.wait(), wait_for)
    finally:
        if fd is not None:
            loop.remove_reader(fd)
            os.close(fd)


# --- the whole ---------------------------------------------------------------------


async def _wait(bus_address: str | None, want: Want, timeout: float, read: Any, marker_dir: str) -> Outcome:
    from kfdguard.service.backend import load

    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + timeout
    note = ""
    try:
        b = load()
        bus = await asyncio.wait_for(
            b.MessageBus(bus_address=bus_address, bus_type=b.BusType.SYSTEM).connect(), CONNECT_TIMEOUT
        )
    except (TimeoutError, OSError, ValueError) as exc:
        bus = None
        note = f"no system bus ({exc or type(exc).__name__}): watching the marker instead"
    except ImportError as exc:
        bus = None
        note = f"no D-Bus library ({exc.name}): watching the marker instead"
    if bus is None:
        return await _marker_wait(read, marker_dir, want, deadline, start, note)
    try:
        return await _bus_wait(bus, b, want, deadline, start)
    except (TimeoutError, OSError, EOFError) as exc:
        # The bus went away while waiting (dbus restarted): the marker still tells.
        note = f"the bus connection failed ({exc or type(exc).__name__}): watching the marker instead"
        return await _marker_wait(read, marker_dir, want, deadline, start, note)
    finally:
        bus.disconnect()


def wait(bus_address: str | None, want: Want, timeout: float, read: Any, marker_dir: str) -> Outcome:
    """Block until ``want`` is met or ``timeout`` seconds have passed."""
    return asyncio.run(_wait(bus_address, want, timeout, read, marker_dir))
