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
    from kfdguard.health.model import HealthEvent
    from kfdguard.service.checks import Checks
    from kfdguard.service.core import Service

_CARD = re.compile(r"^card\d{1,4}$")
_SLOT = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


class HealthFeed:
    def __init__(self, service: Service, checks: Checks) -> None:
        self.service = service
        self.checks = checks
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
        self.service.keep_health()  # after the publication: the reaction is not held by a disk write
        back = before - set(health.in_trouble())
        if back:
            self.checks.request(Trigger.DEVICE_EVENT, f"GPU {', '.join(sorted(back))} recovered ({event.line})")
