"""org.kfdguard.Guardian1 on the bus: a thin adapter over Service.

Every call passes through one message handler, because neither D-Bus library
hands the caller to a method: the handler sees the sender (the polkit
subject) and the allow-interactive-authorization flag. Introspection is the
XML file itself, so what clients read is exactly the contract. A method not
in AUTH is refused; a failure becomes a named error with a human message and
never a traceback.
"""

from __future__ import annotations

import asyncio
import math
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kfdguard import log
from kfdguard.app.triggers import Trigger
from kfdguard.publish import names
from kfdguard.publish.names import (
    ACTION_CONFIGURE,
    ACTION_MANAGE,
    ACTION_RELOAD,
    BUS_NAME,
    ERROR_BUSY,
    ERROR_FAILED,
    ERROR_INVALID_ARGS,
    ERROR_NOT_AUTHORIZED,
    OBJECT_PATH,
)
from kfdguard.record import dataclass
from kfdguard.service.checks import Checks
from kfdguard.service.core import Service
from kfdguard.service.polkit import Authority
from kfdguard.service.status import DEVICE_KEYS, FALLBACK_KEYS, SIGNATURES
from kfdguard.verdict import Status

# The names live in publish/names.py; these short aliases keep the handler readable.
NAME, PATH, INTERFACE = BUS_NAME, OBJECT_PATH, names.INTERFACE
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
PEER = "org.freedesktop.DBus.Peer"
XML = (Path(__file__).resolve().parent / "org.kfdguard.Guardian1.xml").read_text()

# Deny by default: a method missing here is refused, whatever the XML says.
AUTH: dict[str, str | None] = {
    "GetStatus": None,
    "CheckAccess": None,
    "CheckAccessWithEnvironment": None,
    "Diagnose": None,
    "Reload": ACTION_RELOAD,
    "ApplyFallback": ACTION_MANAGE,
    "ClearFallback": ACTION_MANAGE,
    "ApplyRemedy": ACTION_CONFIGURE,
    "ClearRemedy": ACTION_CONFIGURE,
}
OUT = {"GetStatus": "a{sv}", "CheckAccess": "bs", "CheckAccessWithEnvironment": "bsbs", "Diagnose": "a(ssss)",
       "Reload": "s", "ApplyFallback": "s", "ClearFallback": "s", "ApplyRemedy": "s", "ClearRemedy": "s"}  # fmt: skip
# The in-signature of the methods that take arguments; every other method takes none.
IN = {"CheckAccessWithEnvironment": "a{ss}", "ApplyRemedy": "s", "ClearRemedy": "s"}
# A caller's environment as CheckAccessWithEnvironment accepts it: the CLI sends the few
# variables that decide what ROCm sees; more, or longer, is not an environment but a flood.
ENV_ENTRIES = 64
ENV_NAME_LIMIT = 256
ENV_VALUE_LIMIT = 4096
MUTATING = frozenset({"Reload", "ApplyFallback", "ClearFallback", "ApplyRemedy", "ClearRemedy"})
PER_CALLER = 4  # calls in flight per connection, awaiting polkit included; more get Busy at once
IN_FLIGHT = 64  # calls at work overall (a call that awaits polkit is not yet at work)


@dataclass(frozen=True)
class Rate:
    burst: int  # calls a user may make at once
    every: float  # seconds after which one more is allowed


# Methods that cost the machine real work and need no authorization (issue 35). Diagnose reads the
# whole kernel log of this boot and earlier ones: concurrent calls already share one run
# (_do_Diagnose), and each user gets this rate on top, so a loop of calls cannot keep the journal
# busy. Per user (the caller's uid from the bus), not per connection, which costs nothing to open
# anew; root is not limited (it may read the journal itself). Over the rate: Busy, saying when.
# Rate limiting was chosen over a polkit action: a script keeps working without an agent or a rule.
RATES = {"Diagnose": Rate(burst=4, every=15.0)}
USERS_TRACKED = 1024  # rate records kept per method; beyond, full (rested) ones are forgotten


class Buckets:
    """A token bucket per user: ``burst`` calls, then one per ``every`` seconds."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.clock = clock
        self.users: dict[int, tuple[float, float]] = {}  # uid -> (tokens, when counted)

    def take(self, uid: int) -> float:
        """Count one call: 0 when it may go, else the seconds until one more is allowed."""
        now = self.clock()
        tokens, at = self.users.get(uid, (float(self.rate.burst), now))
        tokens = min(float(self.rate.burst), tokens + (now - at) / self.rate.every)
        if tokens < 1:
            self.users[uid] = (tokens, now)
            return (1 - tokens) * self.rate.every
        if uid not in self.users and len(self.users) >= USERS_TRACKED:
            self._forget(now)
        self.users[uid] = (tokens - 1, now)
        return 0.0

    def _forget(self, now: float) -> None:
        rested = [u for u, (t, at) in self.users.items() if t + (now - at) / self.rate.every >= self.rate.burst]
        for uid in rested or list(self.users)[: USERS_TRACKED // 4]:
            del self.users[uid]


# Integer types of the properties and the value that stands for "unknown" when
# the machine's value does not fit (KfdNode's -1 means no node; ids become 0).
_RANGES = {"y": (0, 2**8 - 1), "q": (0, 2**16 - 1), "i": (-(2**31), 2**31 - 1), "u": (0, 2**32 - 1),
           "t": (0, 2**64 - 1)}  # fmt: skip
_UNKNOWN = {"i": -1}


def fit(signature: str, value: object) -> object:
    """``value`` as the bus accepts it for a basic ``signature``.

    Properties carry what the machine's files say, and a hostile or corrupt
    file must not stop the service from publishing: a sysfs ``device`` of
    0x10000744c does not fit a uint16 (the Variant refuses it and the service
    died at start), and a string with a NUL or a lone surrogate (from a file
    name) is invalid on the wire, so dbus-daemon would drop the connection.
    """
    if signature == "s":
        text = value if isinstance(value, str) else str(value)
        if "\0" in text:
            text = text.replace("\0", " ")
        if not text.isascii():
            text = text.encode("utf-8", "replace").decode("utf-8")
        return text
    if signature == "b":
        return bool(value)
    if signature in _RANGES:
        low, high = _RANGES[signature]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return _UNKNOWN.get(signature, 0)
    return value


class CallError(Exception):
    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name
        self.text = text


class GuardianAPI:
    def __init__(
        self, bus: Any, backend: Any, service: Service, polkit_timeout: float, *, checks: Checks | None = None
    ) -> None:
        self.bus = bus
        self.b = backend
        self.service = service
        # The loop's request queue, shared with SIGHUP and device events (folded together).
        self.checks = checks if checks is not None else Checks(service)
        self.authority = Authority(bus, backend, polkit_timeout)
        self.in_flight: dict[str, int] = {}
        self.total = 0
        self.mutating = False
        self.diagnosing: asyncio.Future[tuple[tuple[str, str, str, str], ...]] | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.rates = {member: Buckets(rate) for member, rate in RATES.items()}
        self._props: dict[str, Any] = {}
        self._status_reply: dict[str, Any] = {}
        self._cache(service.status)

    # --- values ---------------------------------------------------------------------------

    def _variant(self, name: str, value: object) -> Any:
        V = self.b.Variant
        sig = SIGNATURES[name]
        if name == "Devices":
            assert isinstance(value, list)
            value = [{k: V(DEVICE_KEYS[k], fit(DEVICE_KEYS[k], v)) for k, v in d.items()} for d in value]
        elif name == "FallbackRecommendation":
            assert isinstance(value, dict)
            value = {k: V(FALLBACK_KEYS[k], fit(FALLBACK_KEYS[k], v)) for k, v in value.items()}
        elif name == "Findings":
            assert isinstance(value, list)
            value = [[fit("s", text) for text in finding] for finding in value]
        elif name == "Applications":
            assert isinstance(value, list)
            value = [[fit("s", text) for text in row] for row in value]
        elif name == "Software":
            assert isinstance(value, list)
            value = [[fit("s", n), fit("s", k), fit("s", p), [fit("s", x) for x in t], [fit("s", x) for x in v]]
                     for n, k, p, t, v in value]  # fmt: skip
        else:
            value = fit(sig, value)
        return V(sig, value)

    def _cache(self, status: Status) -> None:
        self._raw = status.properties()
        self._props = {name: self._variant(name, value) for name, value in self._raw.items()}

    def publish(self, old: Status, new: Status) -> None:
        """Core changed its status: PropertiesChanged for what differs, StateChanged for the state."""
        before = self._raw
        self._cache(new)
        changed = {k: self._props[k] for k, v in self._raw.items() if before.get(k) != v}
        if changed:
            self._signal(PROPERTIES, "PropertiesChanged", "sa{sv}as", [INTERFACE, changed, []])
        if old.state != new.state:
            self._signal(
                INTERFACE, "StateChanged", "sss", [fit("s", old.state), fit("s", new.state), fit("s", new.summary)]
            )

    def _signal(self, interface: str, member: str, signature: str, body: list[Any]) -> None:
        msg = self.b.Message.new_signal(PATH, interface, member, signature, body)
        self._send(msg)

    def _send(self, msg: Any) -> None:
        try:
            result = self.bus.send(msg)
            if asyncio.isfuture(result):
                result.add_done_callback(_consume)
        except Exception as exc:
            log.warning(f"D-Bus send failed: {exc}")

    # --- dispatch --------------------------------------------------------------------------

    def handle(self, msg: Any) -> Any:
        try:
            reply = self._handle(msg)
        except CallError as exc:
            reply = self.b.Message.new_error(msg, exc.name, exc.text)
        except Exception:
            log.error("D-Bus dispatch failed: " + traceback.format_exc().replace("\n", " | "))
            reply = self.b.Message.new_error(msg, ERROR_FAILED, "internal error; see the service's journal")
        if reply is not None and reply is not True and msg.flags & self.b.MessageFlag.NO_REPLY_EXPECTED:
            return True  # handled; the caller asked for no answer (the bus would refuse an unrequested one)
        return reply

    def _reply(self, msg: Any, signature: str, body: list[Any]) -> Any:
        return self.b.Message.new_method_return(msg, signature, body)

    def _handle(self, msg: Any) -> Any:
        if msg.message_type != self.b.MessageType.METHOD_CALL:
            return None
        iface, member = msg.interface, msg.member
        if iface == PEER:
            return self._peer(msg)
        if msg.path != PATH:
            return self._elsewhere(msg)
        if iface == INTROSPECTABLE and member == "Introspect":
            _no_arguments(msg)
            return self._reply(msg, "s", [XML])
        if iface == PROPERTIES:
            return self._properties(msg)
        _check_method(msg)
        if member in ("ApplyRemedy", "ClearRemedy"):
            _application_argument(msg.body[0])  # before polkit: no password asked for a call that cannot work
        if member == "GetStatus":
            return self._reply(msg, "a{sv}", [self._props])
        sender = msg.sender or ""
        self._admit_caller(member, sender)
        task = asyncio.get_running_loop().create_task(self._call(msg, member, sender))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    def _elsewhere(self, msg: Any) -> Any:
        """A call to another object path: only the parents of ours introspect (to show the way)."""
        path = msg.path
        if (
            msg.interface in (INTROSPECTABLE, None)
            and msg.member == "Introspect"
            and PATH.startswith(path.rstrip("/") + "/")
        ):
            _no_arguments(msg)
            child = PATH[len(path.rstrip("/")) + 1 :].split("/", 1)[0]
            return self._reply(msg, "s", [f'<node>\n  <node name="{child}"/>\n</node>\n'])
        # Answered here too: the libraries' own handlers for other paths log a traceback
        # for every such call sent without expecting a reply (dbus-next), which let any
        # caller flood the journal.
        raise CallError("org.freedesktop.DBus.Error.UnknownObject", f"no object at {path!r:.80}")

    # Admission comes in two steps, so that what one caller waits for cannot refuse another (issue 35):
    # at arrival only the caller's own budget is taken (PER_CALLER bounds what one connection can
    # leave waiting, polkit's answer included: it can only make itself Busy); the shared budget and
    # the one change at a time are taken once polkit has said yes (_start_work). A caller that polkit
    # keeps waiting on (an unanswered password dialog, a hung polkitd) holds nothing anyone else needs.

    def _admit_caller(self, member: str, sender: str) -> None:
        """Count the call against its caller's budget, or refuse it as Busy; nothing shared is taken."""
        if self.in_flight.get(sender, 0) >= PER_CALLER:
            raise CallError(ERROR_BUSY, "too many calls in progress; try again shortly")
        self._shared_room(member)  # said at once, before any password dialog; taken only after polkit
        self.in_flight[sender] = self.in_flight.get(sender, 0) + 1

    def _shared_room(self, member: str) -> None:
        if self.total >= IN_FLIGHT:
            raise CallError(ERROR_BUSY, "too many calls in progress; try again shortly")
        if member in MUTATING and self.mutating:
            raise CallError(ERROR_BUSY, "a re-check or a change (boot loader, remedy) is already running")

    def _start_work(self, member: str) -> None:
        """An authorized call takes its share of the work: Busy when there is none left for it."""
        self._shared_room(member)
        self.total += 1
        if member in MUTATING:
            self.mutating = True

    def _peer(self, msg: Any) -> Any:
        # Answered here, on every path, rather than by the library: dbus-fast and
        # dbus-next ask the bus for the machine id, which a system bus's policy
        # refuses (Debian's system.conf allows no Peer call to org.freedesktop.DBus),
        # so callers got AccessDenied quoting the service's pid and command line.
        if msg.member not in ("Ping", "GetMachineId"):
            raise CallError("org.freedesktop.DBus.Error.UnknownMethod", f"no method {msg.member!r:.60} in {PEER}")
        _no_arguments(msg)
        if msg.member == "Ping":
            return self._reply(msg, "", [])
        machine_id = _machine_id()
        if machine_id is None:
            raise CallError("org.freedesktop.DBus.Error.FileNotFound", "this host has no machine id (machine-id(5))")
        return self._reply(msg, "s", [machine_id])

    def _properties(self, msg: Any) -> Any:
        member, sig, body = msg.member, msg.signature, msg.body
        if member == "Get" and sig == "ss":
            iface, name = body
            if iface != INTERFACE or name not in self._props:
                raise CallError(
                    "org.freedesktop.DBus.Error.UnknownProperty", f"no property {name!r:.60} in {iface!r:.60}"
                )
            return self._reply(msg, "v", [self._props[name]])
        if member == "GetAll" and sig == "s":
            return self._reply(msg, "a{sv}", [self._props if body[0] == INTERFACE else {}])
        if member == "Set" and sig == "ssv":
            raise CallError("org.freedesktop.DBus.Error.PropertyReadOnly", "all properties are read-only")
        raise CallError("org.freedesktop.DBus.Error.InvalidArgs", f"bad call {member}({sig})")

    async def _call(self, msg: Any, member: str, sender: str) -> None:
        no_reply = bool(msg.flags & self.b.MessageFlag.NO_REPLY_EXPECTED)
        working = False
        try:
            await self._authorize(msg, member, sender)
            await self._within_rate(member, sender)
            self._start_work(member)
            working = True
            body = await getattr(self, f"_do_{member}")(sender, *msg.body)
            reply = self._reply(msg, OUT[member], body)
        except CallError as exc:
            reply = self.b.Message.new_error(msg, exc.name, exc.text)
        except Exception:
            log.error(f"{member} failed: " + traceback.format_exc().replace("\n", " | "))
            reply = self.b.Message.new_error(msg, ERROR_FAILED, f"{member} failed; see the service's journal")
        finally:
            self.in_flight[sender] -= 1
            if not self.in_flight[sender]:
                del self.in_flight[sender]
            if working:
                self.total -= 1
                if member in MUTATING:
                    self.mutating = False
        if not no_reply:
            self._send(reply)

    async def _authorize(self, msg: Any, member: str, sender: str) -> None:
        action = AUTH[member]
        if action is None:
            return
        interactive = bool(msg.flags & self.b.MessageFlag.ALLOW_INTERACTIVE_AUTHORIZATION)
        decision = await self.authority.check(sender, action, interactive)
        if decision.allowed:
            return
        if decision.challenge and not interactive:
            raise CallError(
                "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
                f"{member} needs authentication ({action}); call it with interactive authorization allowed",
            )
        raise CallError(ERROR_NOT_AUTHORIZED, f"{member} is not allowed: {decision.detail} ({action})")

    async def _within_rate(self, member: str, sender: str) -> None:
        buckets = self.rates.get(member)
        if buckets is None:
            return
        uid = await self.authority.caller_uid(sender)
        if uid == 0:
            return
        wait = buckets.take(-1 if uid is None else uid)  # a caller the bus cannot name: one shared record
        if wait:
            rate = buckets.rate
            raise CallError(
                ERROR_BUSY,
                f"{member} was called too often by this user (at most {rate.burst} at once, then one every "
                f"{rate.every:g} s); try again in {math.ceil(wait)} s",
            )

    # --- the methods --------------------------------------------------------------------------

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def _do_CheckAccess(self, sender: str) -> list[Any]:
        creds = await self.authority.credentials(sender)
        uid = creds.get("UnixUserID")
        if uid is None:
            raise CallError(ERROR_FAILED, "the bus did not say who is calling")
        gids = creds.get("UnixGroupIDs")
        session = None if gids is None else frozenset(gids)
        allowed, text = await self._in_thread(self.service.access_for, int(uid), session)
        return [allowed, text]

    async def _do_CheckAccessWithEnvironment(self, sender: str, environment: Any) -> list[Any]:
        env = _environment_argument(environment)
        allowed, text = await self._do_CheckAccess(sender)
        visible, why = self.service.environment_visibility(env)
        return [allowed, text, visible, why]

    async def _do_Diagnose(self, sender: str) -> list[Any]:
        # Concurrent callers share one fresh diagnosis instead of each starting a probe.
        if self.diagnosing is None or self.diagnosing.done():
            log.info(f"Diagnose by {sender}: a fresh diagnosis, reading the kernel log")
            self.diagnosing = asyncio.ensure_future(self._in_thread(self.service.diagnose))
        findings = await asyncio.shield(self.diagnosing)
        return [[list(f) for f in findings]]

    async def _do_Reload(self, sender: str) -> list[Any]:
        log.info(f"re-check requested over D-Bus by {sender}")
        # Through the loop's one queue: the reply carries the state of a check that started after the call.
        result = await self.checks.run(Trigger.DBUS_RELOAD, f"Reload by {sender}")
        return [result.status.state]

    async def _fallback(self, clear: bool) -> tuple[bool, str]:
        if self.service.privsep is not None:  # issue 21: kfdguard-fallback@apply/clear.service does it
            return await self.service.privsep.fallback(clear)
        result: tuple[bool, str] = await self._in_thread(self.service.fallback, clear)
        return result

    async def _do_ApplyFallback(self, sender: str) -> list[Any]:
        ok, message = await self._fallback(False)
        if not ok:
            raise CallError(ERROR_FAILED, message)
        return [message]

    async def _do_ClearFallback(self, sender: str) -> list[Any]:
        ok, message = await self._fallback(True)
        if not ok:
            raise CallError(ERROR_FAILED, message)
        return [message]

    async def _remedy(self, action: str, application: str) -> list[Any]:
        if self.service.privsep is not None:  # kfdguard-remedy@ACTION-APPLICATION.service does it
            ok, message = await self.service.privsep.remedy(action, application)
        else:
            ok, message = await self._in_thread(self.service.remedy, action, application)
        if not ok:
            raise CallError(ERROR_FAILED, message)
        # The Applications property follows before the reply: a caller that reads it next sees the change.
        await self.checks.run(Trigger.REMEDY, f"{action} remedy for {application}")
        return [message]

    async def _do_ApplyRemedy(self, sender: str, application: str) -> list[Any]:
        log.info(f"ApplyRemedy({application}) by {sender}")
        return await self._remedy("apply", application)

    async def _do_ClearRemedy(self, sender: str, application: str) -> list[Any]:
        log.info(f"ClearRemedy({application}) by {sender}")
        return await self._remedy("clear", application)


def _application_argument(value: Any) -> None:
    """ApplyRemedy's and ClearRemedy's s: one of the applications kfdguard writes a drop-in for."""
    from kfdguard.userspace.dropin import SERVICES

    if value not in SERVICES:
        known = ", ".join(SERVICES)
        shown = str(value)[:60]
        raise CallError(ERROR_INVALID_ARGS, f"{shown!r} is not an application kfdguard sets up (known: {known})")


def _check_method(msg: Any) -> None:
    """A call on our interface: a method of the AUTH table, with no arguments (none takes any)."""
    iface, member = msg.interface, msg.member
    if iface not in (INTERFACE, None):
        raise CallError("org.freedesktop.DBus.Error.UnknownInterface", f"no interface {iface!r} at {PATH}")
    if member not in AUTH:
        raise CallError("org.freedesktop.DBus.Error.UnknownMethod", f"no method {member!r} in {INTERFACE}")
    wanted = IN.get(member, "")
    if msg.signature != wanted:
        if not wanted:
            raise CallError(ERROR_INVALID_ARGS, f"{member} takes no arguments (got signature {msg.signature!r:.40})")
        raise CallError(ERROR_INVALID_ARGS, f"{member} takes ({wanted}) (got signature {msg.signature!r:.40})")


def _environment_argument(value: Any) -> dict[str, str]:
    """CheckAccessWithEnvironment's a{ss}, bounded: a clear InvalidArgs for a flood, never a crash."""
    if not isinstance(value, dict):
        raise CallError(ERROR_INVALID_ARGS, "the environment must be a{ss}")
    if len(value) > ENV_ENTRIES:
        raise CallError(ERROR_INVALID_ARGS, f"the environment has {len(value)} entries (at most {ENV_ENTRIES})")
    env = {}
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise CallError(ERROR_INVALID_ARGS, "the environment must be a{ss}")
        if len(name) > ENV_NAME_LIMIT or len(text) > ENV_VALUE_LIMIT:
            raise CallError(
                ERROR_INVALID_ARGS,
                f"environment entry {name[:40]!r}: name or value too long "
                f"(at most {ENV_NAME_LIMIT} and {ENV_VALUE_LIMIT} characters)",
            )
        env[name] = text
    return env


def _no_arguments(msg: Any) -> None:
    if msg.signature != "":
        raise CallError(
            "org.freedesktop.DBus.Error.InvalidArgs",
            f"{msg.member} takes no arguments (got signature {msg.signature!r:.40})",
        )


def _machine_id() -> str | None:
    """The host's D-Bus machine id (the host the bus runs on, whatever machine is checked)."""
    from kfdguard.host.root import Root

    host = Root()
    for path in (host.etc / "machine-id", host.var_lib / "dbus" / "machine-id"):
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                text = handle.read(64).strip()
        except OSError:
            continue
        if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
            return text
    return None


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug(f"D-Bus send: {future.exception()}")
