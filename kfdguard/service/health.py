"""The loop's side of live health: kernel lines and uevents in, the tracker fed, the change published.

A change is published at once from the loop (no check runs first: the reaction is the
time to parse one line). When a GPU comes back the service also asks for a re-check
(a device event's: re-evaluate, never repair), so "back" is what a fresh look says.
"""

from __future__ import annotations

import os
import re
import time

from kfdguard.app.triggers import Trigger

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

    from kfdguard.health.model import HealthEvent
    from kfdguard.service.checks import Checks
    from kfdguard.service.core import Service

_CARD = re.compile(r"^card\d{1,4}$")
_SLOT = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


# This boot's health record (kfdguard/health/store.py) is rewritten at most this often: a storm of
# ring timeouts must not become a storm of fsyncs on the loop. The last change is always written.
KEEP_INTERVAL = 1.0
# ...and never in the loop round that publishes the event: dbus-next sends from the loop's writer
# callback, one round later, and a write with its fsync (5 to 20 ms measured) must not come first.
AFTER_PUBLISH = 0.01


class HealthFeed:
    def __init__(self, service: Service, checks: Checks, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.service = service
        self.checks = checks
        self.loop = loop  # None: every change is written at once
        self.kept_at = -KEEP_INTERVAL
        self.keep_pending: asyncio.TimerHandle | None = None
        # Imported now (after READY, off the boot path) rather than when the first reset line comes:
        # the patterns' compilation would otherwise be part of that reaction.
        import kfdguard.health.events  # noqa: F401

    def log_line(self, raw: str) -> None:
        from kfdguard.health.events import from_log

        event = from_log(raw)
        if event is not None:
            self._feed(event, "kernel")

    def uevent(self, action: str, subsystem: str, name: str, props: dict[str, str]) -> None:
        from kfdguard.health.events import from_uevent

        event = from_uevent(action, subsystem, name, props, self.card_slot(name))
        if event is not None:
            self._feed(event, "uevent")

    def _keep(self) -> None:
        if self.keep_pending is not None:
            return  # a write is already due, and it takes the counts as they are then
        if self.loop is None:
            self._write()
            return
        wait = max(self.kept_at + KEEP_INTERVAL - time.monotonic(), AFTER_PUBLISH)
        self.keep_pending = self.loop.call_later(wait, self._write)

    def _recovered(self, back: list[str], line: str) -> None:
        # The re-check reads the record (its recommendation counts this boot's resets): written first.
        # amdgpu reports a recovery once per hung job, after its timeout (amdgpu.lockup_timeout) or a reset,
        # and only the kernel writes its log: this bypass of the rate limit is bounded by the kernel's pace.
        self.flush(always=True)
        self.checks.request(Trigger.DEVICE_EVENT, f"GPU {', '.join(back)} recovered ({line})")

    def flush(self, *, always: bool = False) -> None:
        """Write now a record that is still due (the service is stopping), or (``always``) this one."""
        if self.keep_pending is not None:
            self.keep_pending.cancel()
        elif not always:
            return
        self._write()

    def _write(self) -> None:
        self.keep_pending = None
        self.kept_at = time.monotonic()
        self.service.keep_health()

    def card_slot(self, name: str) -> str:
        """cardN's PCI slot: /sys/class/drm/cardN links to .../SLOT/drm/cardN; "" when not a GPU's card."""
        if not _CARD.match(name):
            return ""
        target = os.path.realpath(self.service.system.root.sys / "class/drm" / name)
        slot = os.path.basename(os.path.dirname(os.path.dirname(target)))
        return slot if _SLOT.match(slot) else ""

    def _feed(self, event: HealthEvent, via: str) -> None:
        health = self.service.health
        before = set(health.in_trouble())
        if not health.feed(event, time.time_ns() // 1000):
            return
        self.service.republish(f"{via}: {event.line}")
        # After the publication, and (with a loop) a round later: the reaction is not held by a disk write.
        back = sorted(before - set(health.in_trouble()))
        if not back:
            self._keep()
        elif self.loop is None:
            self._recovered(back, event.line)
        else:
            self.loop.call_later(AFTER_PUBLISH, self._recovered, back, event.line)
