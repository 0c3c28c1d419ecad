"""Asking polkitd whether a caller may do something.

The subject is the caller's unique bus name (never a pid: racy; never our own
pid: everyone would be root). Every call has a timeout; when polkitd cannot
be reached or answers an error, only uid 0 is allowed (fail closed). uid 0
is allowed without asking: polkit grants root every action anyway, and root
must not wait on a hung polkitd.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kfdguard.record import dataclass

AUTHORITY = "org.freedesktop.PolicyKit1"
AUTHORITY_PATH = "/org/freedesktop/PolicyKit1/Authority"
AUTHORITY_IFACE = "org.freedesktop.PolicyKit1.Authority"
ALLOW_USER_INTERACTION = 1
# polkitd answers hundreds of checks a second on two cores; more at once only
# queue there (and slow every other polkit user on the machine).
CONCURRENT_CHECKS = 16
# Time for a person to answer a password dialog, kept under the 25 s default
# reply timeout of libdbus, sd-bus and GDBus so the caller gets our answer.
INTERACTIVE_TIMEOUT = 20.0


@dataclass(frozen=True)
class Decision:
    allowed: bool
    challenge: bool  # authentication would be needed, and the caller did not allow interaction
    detail: str


class Authority:
    def __init__(
        self, bus: Any, backend: Any, timeout: float, interactive_timeout: float = INTERACTIVE_TIMEOUT
    ) -> None:
        self.bus = bus
        self.backend = backend
        self.timeout = timeout
        self.interactive_timeout = interactive_timeout
        self.slots = asyncio.Semaphore(CONCURRENT_CHECKS)

    async def _call(self, destination: str, path: str, interface: str, member: str, signature: str,
                    body: list[Any], timeout: float, returns: str) -> Any:  # fmt: skip
        msg = self.backend.Message(
            destination=destination, path=path, interface=interface, member=member, signature=signature, body=body
        )
        reply = await asyncio.wait_for(self.bus.call(msg), timeout)
        if reply.message_type != self.backend.MessageType.METHOD_RETURN:
            raise RuntimeError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
        # Whoever owns the name may answer anything: only the documented shape is an answer.
        if reply.signature != returns:
            raise RuntimeError(f"{member} answered {reply.signature or 'nothing'!r:.40} instead of {returns!r}")
        return reply.body

    async def caller_uid(self, sender: str) -> int | None:
        try:
            body = await self._call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                    "GetConnectionUnixUser", "s", [sender], self.timeout, "u")  # fmt: skip
            return int(body[0])
        except (TimeoutError, RuntimeError, OSError, ValueError, IndexError):
            return None

    async def credentials(self, sender: str) -> dict[str, Any]:
        """GetConnectionCredentials: UnixUserID, ProcessID and (dbus >= 1.12) UnixGroupIDs."""
        try:
            body = await self._call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                    "GetConnectionCredentials", "s", [sender], self.timeout, "a{sv}")  # fmt: skip
        except (TimeoutError, RuntimeError, OSError):
            return {}
        return {k: v.value for k, v in dict(body[0]).items()}

    async def check(self, sender: str, action: str, interactive: bool) -> Decision:
        if await self.caller_uid(sender) == 0:
            return Decision(True, False, "the caller is root")
        subject = ["system-bus-name", {"name": self.backend.Variant("s", sender)}]
        flags = ALLOW_USER_INTERACTION if interactive else 0
        timeout = self.interactive_timeout if interactive else self.timeout
        try:
            async with self.slots:
                args = [subject, action, {}, flags, ""]
                body = await self._call(AUTHORITY, AUTHORITY_PATH, AUTHORITY_IFACE, "CheckAuthorization",
                                        "(sa{sv})sa{ss}us", args, timeout, "(bba{ss})")  # fmt: skip
        except (TimeoutError, RuntimeError, OSError) as exc:
            # Fail closed: without an answer from polkit only root (answered above) may act.
            why = "timed out" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            return Decision(False, False, f"polkit unavailable ({why}); only root is allowed")
        authorized, challenge, _details = body[0]
        if authorized is True:
            return Decision(True, False, "authorized by polkit")
        return Decision(False, bool(challenge), "polkit requires authentication" if challenge else "denied by polkit")
