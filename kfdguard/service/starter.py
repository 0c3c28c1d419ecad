"""Starting a privileged oneshot and waiting for its end (issue 21).

The resident service holds no privilege: a repair or a boot-loader change is the work of
kfdguard-enforce.service or kfdguard-fallback@apply/clear.service. A *starter* runs one and
waits, with a timeout, until it has ended; what it did is in its state file (app/runstate.py),
which the caller reads. Two starters, chosen by the command line (``--starter``), never by
looking at the machine:

- ``systemd``: ``StartUnit(name, "replace")`` on org.freedesktop.systemd1, then the job's
  ``JobRemoved`` signal. A shipped polkit rule (polkit/50-kfdguard-units.rules) lets the user
  kfdguard start these units (``UNITS``) and nothing else.
- ``child``: the test bed (a simulated machine on a private bus, no systemd there) runs the same
  command the unit runs, ``python3 -c ENTRY ... --record --root DIR``, through the one
  subprocess runner.

``COMMANDS`` is what each unit's ExecStart runs after ``/usr/bin/python3 -I`` and ``ENTRY``;
tests/service/test_privsep_service.py holds the units to both.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from kfdguard import log
from kfdguard.record import dataclass
from kfdguard.userspace.dropin import ACTIONS, SERVICES, instance

REMEDY_INSTANCES = tuple(instance(action, application) for application in SERVICES for action in ACTIONS)

UNITS = {
    "enforce": "kfdguard-enforce.service",
    "fallback-apply": "kfdguard-fallback@apply.service",
    "fallback-clear": "kfdguard-fallback@clear.service",
    # kfdguard-remedy@.service's instances: one per action and application (userspace/dropin.py)
    **{f"remedy-{i}": f"kfdguard-remedy@{i}.service" for i in REMEDY_INSTANCES},
}
COMMANDS = {
    "enforce": ("enforce", "--record"),
    "fallback-apply": ("fallback", "apply", "--record"),
    "fallback-clear": ("fallback", "clear", "--record"),
    **{f"remedy-{i}": ("remedy", "--record", "--instance", i) for i in REMEDY_INSTANCES},
}
# The package's entry without runpy, before COMMANDS (kfdguard/__main__.py says why not "-m kfdguard").
ENTRY = ("-c", "from kfdguard.__main__ import run; run()")
# The resident kfdguard.service's, before its options.
SERVICE_ENTRY = ("-c", "from kfdguard.service.main import run; run()")
STARTERS = ("systemd", "child")
SYSTEMD = "org.freedesktop.systemd1"
SYSTEMD_PATH = "/org/freedesktop/systemd1"
MANAGER = "org.freedesktop.systemd1.Manager"
JOB_REMOVED_MATCH = f"type='signal',sender='{SYSTEMD}',path='{SYSTEMD_PATH}',interface='{MANAGER}',member='JobRemoved'"
DBUS = "org.freedesktop.DBus"
# Who owns systemd's name: asked once, then followed (systemd reconnects under a new unique name
# after daemon-reexec). The bus itself stamps the sender of every message, so a NameOwnerChanged
# whose sender is the bus driver cannot be forged.
OWNER_MATCH = (
    f"type='signal',sender='{DBUS}',path='/org/freedesktop/DBus',interface='{DBUS}',"
    f"member='NameOwnerChanged',arg0='{SYSTEMD}'"
)


@dataclass(frozen=True)
class Started:
    """How the run ended, as the starter saw it (the state file says what it did)."""

    ok: bool  # systemd: the job's result was "done"; child: the command ended with a state (0-4)
    detail: str  # for messages: "done", "failed", "timeout", an error


class ChildStarter:
    """Runs the oneshot's command as a child (the test bed, where there is no systemd)."""

    def __init__(self, root: str | None, python: str = sys.executable) -> None:
        self.root = root
        self.python = python

    def argv(self, kind: str) -> list[str]:
        return [self.python, *ENTRY, *COMMANDS[kind], *(("--root", self.root) if self.root else ())]

    async def start(self, kind: str, timeout: float) -> Started:
        import kfdguard
        from kfdguard.host.runner import Runner

        # The same kfdguard as this process, whatever the runner's clean environment says.
        top = os.path.dirname(os.path.dirname(os.path.abspath(kfdguard.__file__)))
        runner = Runner(extra_env={"PYTHONPATH": top, "PYTHONDONTWRITEBYTECODE": "1"})
        argv = self.argv(kind)
        result = await asyncio.get_running_loop().run_in_executor(None, lambda: runner.run(argv, timeout=timeout))
        for line in result.stderr.splitlines()[-50:]:
            log.info(f"{UNITS[kind]}: {line.removeprefix('kfdguard: ')}")
        if result.timed_out:
            return Started(False, f"timeout after {timeout:g} s")
        if result.returncode is None:
            return Started(False, result.error or "could not run")
        return Started(result.returncode in (0, 1, 2, 3, 4), f"exit status {result.returncode}")

    async def last_result(self, kind: str, timeout: float) -> str | None:
        """No unit runs here: nothing but this process's own runs to tell of."""
        return None


class SystemdStarter:
    """StartUnit on org.freedesktop.systemd1 and the job's JobRemoved signal."""

    def __init__(self, bus: Any, backend: Any) -> None:
        self.bus = bus
        self.backend = backend
        self.results: dict[str, asyncio.Future[str]] = {}  # job path -> its result
        self.early: dict[str, str] = {}  # JobRemoved that came before StartUnit's reply
        self.subscribed = False
        # The unique name that owns org.freedesktop.systemd1; None: unknown, or nobody.
        self.owner: str | None = None
        self.owner_seen = False  # a NameOwnerChanged came: it is newer than any GetNameOwner reply
        self.forged_logged = False

    def handle(self, msg: Any) -> None:
        """The bus's message handler: JobRemoved (u job, o path, s unit, s result) of systemd's jobs."""
        if msg.message_type != self.backend.MessageType.SIGNAL:
            return
        if msg.member == "NameOwnerChanged":
            self._owner_changed(msg)
            return
        if msg.member != "JobRemoved" or msg.interface != MANAGER or msg.path != SYSTEMD_PATH:
            return
        if msg.signature != "uoss" or not self._from_systemd(msg):
            return
        _id, job, unit, result = msg.body
        waiter = self.results.get(job)
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(result)
        elif unit in UNITS.values():
            # Only ours, and only the last few: a job of ours ends once, and is looked up at once.
            if len(self.early) >= 16:
                del self.early[next(iter(self.early))]
            self.early[job] = result

    def _from_systemd(self, msg: Any) -> bool:
        # The match rule names systemd, but any client may send a signal straight to us (unicast
        # signals pass every match rule and the usual bus policy): only systemd's own count. A
        # forged one would end our wait for a job with its result, or seed the result of a job to come.
        if self.owner and msg.sender == self.owner:
            return True
        if not self.forged_logged:
            self.forged_logged = True  # once: anyone may send as many as they like
            log.debug(f"ignoring JobRemoved from {msg.sender or 'nobody'}: it is not {SYSTEMD} ({self.owner})")
        return False

    def _owner_changed(self, msg: Any) -> None:
        if msg.sender != DBUS or msg.path != "/org/freedesktop/DBus" or msg.interface != DBUS:
            return
        if msg.signature != "sss" or msg.body[0] != SYSTEMD:
            return
        self.owner = msg.body[2] or None
        self.owner_seen = True

    async def _call(self, destination: str, path: str, interface: str, member: str, signature: str,
                    body: list[Any], timeout: float) -> Any:  # fmt: skip
        msg = self.backend.Message(
            destination=destination, path=path, interface=interface, member=member, signature=signature, body=body
        )
        reply = await asyncio.wait_for(self.bus.call(msg), timeout)
        if reply.message_type != self.backend.MessageType.METHOD_RETURN:
            raise RuntimeError(f"{reply.error_name}: {reply.body[0] if reply.body else ''}")
        return reply

    async def _subscribe(self, timeout: float) -> None:
        if self.subscribed:
            return
        self.bus.add_message_handler(self.handle)
        for rule in (OWNER_MATCH, JOB_REMOVED_MATCH):
            await self._call(DBUS, "/org/freedesktop/DBus", DBUS, "AddMatch", "s", [rule], timeout)
        # After the owner's match: a change from now on is seen, and wins over this (older) answer.
        reply = await self._call(DBUS, "/org/freedesktop/DBus", DBUS, "GetNameOwner", "s", [SYSTEMD], timeout)
        if not self.owner_seen and reply.signature == "s":
            self.owner = reply.body[0]
        # systemd sends JobRemoved only while some client is subscribed (org.freedesktop.systemd1(5)).
        await self._call(SYSTEMD, SYSTEMD_PATH, MANAGER, "Subscribe", "", [], timeout)
        self.subscribed = True

    async def last_result(self, kind: str, timeout: float) -> str | None:
        """The unit's Result property (org.freedesktop.systemd1(5): "success", "exit-code", "timeout",
        "start-limit-hit", ...): how its last start ended, including one systemd refused. None when it
        cannot be read; reading it needs no privilege."""
        unit = UNITS[kind]
        try:
            reply = await self._call(SYSTEMD, SYSTEMD_PATH, MANAGER, "GetUnit", "s", [unit], timeout)
            if reply.signature != "o":
                return None
            reply = await self._call(SYSTEMD, reply.body[0], "org.freedesktop.DBus.Properties", "Get", "ss",
                                     ["org.freedesktop.systemd1.Service", "Result"], timeout)  # fmt: skip
        except (RuntimeError, TimeoutError, OSError, EOFError) as exc:
            log.info(f"{unit}: its Result cannot be read: {exc or type(exc).__name__}")
            return None
        value = getattr(reply.body[0], "value", None) if reply.signature == "v" else None
        return value if isinstance(value, str) else None

    async def start(self, kind: str, timeout: float) -> Started:
        unit = UNITS[kind]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            await self._subscribe(timeout)
            reply = await self._call(SYSTEMD, SYSTEMD_PATH, MANAGER, "StartUnit", "ss", [unit, "replace"],
                                     max(0.1, deadline - loop.time()))  # fmt: skip
        except (RuntimeError, TimeoutError, OSError, EOFError) as exc:
            detail = "timeout" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            return Started(False, f"StartUnit {unit}: {detail}")
        if reply.signature != "o":
            return Started(False, f"StartUnit {unit} answered {reply.signature!r:.20} instead of a job")
        job = reply.body[0]
        if job in self.early:
            result = self.early.pop(job)
        else:
            waiter: asyncio.Future[str] = loop.create_future()
            self.results[job] = waiter
            try:
                result = await asyncio.wait_for(waiter, max(0.1, deadline - loop.time()))
            except TimeoutError:
                return Started(False, f"{unit}: no end of job {job} within {timeout:g} s")
            finally:
                self.results.pop(job, None)
        # done, canceled, timeout, failed, dependency, skipped (org.freedesktop.systemd1(5), JobRemoved)
        return Started(result == "done", f"{unit}: job {result}")


__all__ = ["COMMANDS", "STARTERS", "UNITS", "ChildStarter", "Started", "SystemdStarter"]
