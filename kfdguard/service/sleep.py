"""Resume from suspend: logind's PrepareForSleep(false) asks for a re-check (Trigger.RESUME).

The signal is org.freedesktop.login1.Manager.PrepareForSleep(b) on
/org/freedesktop/login1: true before the machine sleeps, false after it woke
(logind's documentation, org.freedesktop.login1(5)). The match rule names
logind's bus name as sender, so the bus delivers only logind's broadcasts;
a signal sent straight to kfdguard by someone else could still carry that
member, so its sender is checked against the name's owner before it counts.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kfdguard import log
from kfdguard.app.triggers import Trigger

LOGIN1 = "org.freedesktop.login1"
MANAGER = "org.freedesktop.login1.Manager"
LOGIN1_PATH = "/org/freedesktop/login1"
DBUS = "org.freedesktop.DBus"
RULE = f"type='signal',sender='{LOGIN1}',interface='{MANAGER}',member='PrepareForSleep',path='{LOGIN1_PATH}'"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.service.checks import Checks


class SleepWatch:
    def __init__(self, bus: Any, backend: Any, checks: Checks) -> None:
        self.bus = bus
        self.b = backend
        self.checks = checks
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await self.bus.call(
            self.b.Message(destination=DBUS, path="/org/freedesktop/DBus", interface=DBUS, member="AddMatch",
                           signature="s", body=[RULE])
        )  # fmt: skip
        self.bus.add_message_handler(self.handle)

    def handle(self, msg: Any) -> None:
        """A message handler that never answers: it only notices the signal."""
        if (
            msg.message_type != self.b.MessageType.SIGNAL
            or msg.interface != MANAGER
            or msg.member != "PrepareForSleep"
            or msg.path != LOGIN1_PATH
            or msg.signature != "b"
        ):
            return
        if msg.body[0] is not False:
            return  # about to sleep: nothing to check until the machine is back
        task = asyncio.get_running_loop().create_task(self._resumed(str(msg.sender or "")))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _resumed(self, sender: str) -> None:
        try:
            reply = await asyncio.wait_for(
                self.bus.call(self.b.Message(destination=DBUS, path="/org/freedesktop/DBus", interface=DBUS,
                                             member="GetNameOwner", signature="s", body=[LOGIN1])),
                5.0,
            )  # fmt: skip
        except (TimeoutError, OSError, EOFError) as exc:
            log.warning(f"PrepareForSleep(false): cannot ask who owns {LOGIN1}: {exc}")
            return
        if reply.message_type != self.b.MessageType.METHOD_RETURN or reply.body != [sender]:
            log.warning(f"ignoring PrepareForSleep from {sender or 'nobody'}: it is not {LOGIN1}")
            return
        self.checks.request(Trigger.RESUME, "resume from sleep (logind PrepareForSleep false)")
