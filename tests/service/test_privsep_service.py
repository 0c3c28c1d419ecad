"""Issue 21: the resident service with a starter: read-only itself, the oneshots do the privileged work.

The service runs on a simulated machine on a private bus, as the other service tests do. The
child starter runs the units' command as a child; the systemd starter talks to a stand-in for
systemd's manager on that bus (StartUnit, Subscribe, JobRemoved as org.freedesktop.systemd1(5)
describes them), which runs the command of the unit's own ExecStart line. systemd's real bus
policy file (org.freedesktop.systemd1.conf) is part of the private bus's configuration.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kfdguard.app import runstate
from kfdguard.host.root import Root
from kfdguard.service.starter import COMMANDS, ENTRY, SERVICE_ENTRY, UNITS
from tests.servicekit import REPO, call, guardian
from tools.privatebus import PrivateBus

SYSTEMD_POLICY = Path("/usr/share/dbus-1/system.d/org.freedesktop.systemd1.conf")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="owning names on a system-type bus needs root")
CHILD = ("--starter", "child")


def exec_start(kind: str) -> list[str]:
    """The argv of the unit's ExecStart, with the instance filled in for the template."""
    unit = UNITS[kind]
    path = REPO / "units" / (unit.split("@")[0] + "@.service" if "@" in unit else unit)
    (line,) = [line for line in path.read_text().splitlines() if line.startswith("ExecStart=")]
    instance = unit.split("@")[1].removesuffix(".service") if "@" in unit else ""
    return shlex.split(line.removeprefix("ExecStart=").replace("%i", instance))


@pytest.mark.parametrize("kind", sorted(UNITS))
def test_each_unit_runs_the_command_the_child_starter_runs(kind: str) -> None:
    assert exec_start(kind) == ["/usr/bin/python3", "-I", *ENTRY, *COMMANDS[kind]]


def test_the_resident_unit_runs_the_service_entry() -> None:
    (line,) = [
        line for line in (REPO / "units/kfdguard.service").read_text().splitlines() if line.startswith("ExecStart=")
    ]
    assert shlex.split(line.removeprefix("ExecStart=")) == [
        "/usr/bin/python3",
        "-I",
        *SERVICE_ENTRY,
        "--starter=systemd",
    ]


def boot_pass(root: Path) -> None:
    """What kfdguard-enforce.service does before the resident service starts."""
    result = subprocess.run([sys.executable, *ENTRY, *COMMANDS["enforce"], "--root", str(root)],
                            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode in (0, 1, 2, 3, 4), result.stderr


def findings(env: dict[str, str]) -> str:
    argv = ["busctl", "--system", "get-property", "org.kfdguard.Guardian1", "/org/kfdguard/Guardian1",
            "org.kfdguard.Guardian1", "Findings"]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=True).stdout


def state(env: dict[str, str]) -> str:
    argv = ["busctl", "--system", "get-property", "org.kfdguard.Guardian1", "/org/kfdguard/Guardian1",
            "org.kfdguard.Guardian1", "State"]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def kfd_mode(root: Path) -> int:
    """/dev/kfd's mode as the simulated machine has it (its nodes are records, not files)."""
    from kfdguard.simulate.system import SimulatedSystem

    system = SimulatedSystem(Root(root))
    node = system.stat_node(system.root.join("/dev/kfd"))
    assert node is not None
    return node.mode


@as_root
def test_the_service_starts_from_the_boot_pass_record() -> None:
    with guardian("kfd-perms-0600", args=CHILD, prepare=boot_pass) as g:
        assert state(g.env()) == 's "ready"'
        assert "enforce-not-run" not in findings(g.env())
        # KFD's version is root's answer from the record (the service does not open /dev/kfd).
        argv = ["busctl", "--system", "get-property", "org.kfdguard.Guardian1", "/org/kfdguard/Guardian1",
                "org.kfdguard.Guardian1", "KfdVersion"]  # fmt: skip
        shown = subprocess.run(argv, env=g.env(), capture_output=True, text=True, timeout=30, check=True).stdout
        assert shown.strip() == f's "{runstate.read(Root(g.root), "enforce").kfd_version}"' != 's ""'
        _code, log = g.stop()
    assert "kfdguard-enforce.service" not in log  # it read the record; it started nothing


@as_root
def test_without_a_boot_pass_it_repairs_nothing_until_reload_runs_the_oneshot() -> None:
    with guardian("kfd-perms-0600", args=CHILD) as g:
        env = g.env()
        # Read-only: the 0600 node stays as it is, and the missing run is a finding.
        assert state(env) == 's "unavailable"' and kfd_mode(g.root) == 0o600
        assert "enforce-not-run" in findings(env) and "enforce.json does not exist" in findings(env)
        assert call("Reload", env=env).stdout == 's "ready"\n'
        assert kfd_mode(g.root) == 0o660 and "enforce-not-run" not in findings(env)
        record = runstate.read(Root(g.root), "enforce")
        assert record.ok and "changed: fix-node /dev/kfd" in record.changes
        _code, log = g.stop()
    assert "starting kfdguard-enforce.service (Reload by" in log


@as_root
def test_sighup_runs_the_oneshot_as_systemctl_reload_does() -> None:
    with guardian("kfd-perms-0600", args=CHILD, prepare=boot_pass) as g:
        before = runstate.read(Root(g.root), "enforce").stamp
        g.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        while runstate.read(Root(g.root), "enforce").stamp == before:
            assert time.monotonic() < deadline, "SIGHUP did not run kfdguard-enforce.service"
            time.sleep(0.1)
        _code, log = g.stop()
    assert "starting kfdguard-enforce.service (SIGHUP)" in log


@as_root
def test_a_hostile_state_file_is_a_finding_not_a_crash() -> None:
    def garbage(root: Path) -> None:
        (root / "run/kfdguard").mkdir(parents=True, exist_ok=True)
        (root / "run/kfdguard/enforce.json").write_bytes(b'{"version": 1, "kind": "enforce", "ok": "\\u0000"}')

    with guardian("kfd-perms-0600", args=CHILD, prepare=garbage) as g:
        text = findings(g.env()).replace("\\'", "'")  # busctl escapes quotes
        assert "enforce-not-run" in text and "'ok' is not true or false" in text
        assert g.proc.poll() is None


@as_root
def test_fallback_goes_to_the_fallback_oneshot() -> None:
    with guardian("dkms-missing-for-new-kernel", args=CHILD, prepare=boot_pass) as g:
        env = g.env()
        applied = call("ApplyFallback", env=env)
        record = runstate.read(Root(g.root), "fallback-apply")
        assert record.kind == "fallback-apply" and record.ok
        assert applied.stdout.strip() == f"s {_quoted(record.message)}"
        cleared = call("ClearFallback", env=env)
        record = runstate.read(Root(g.root), "fallback-clear")
        assert record.kind == "fallback-clear" and cleared.stdout.strip() == f"s {_quoted(record.message)}"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- the systemd starter, against a stand-in for systemd's manager --------------------------------


class FakeSystemd:
    """org.freedesktop.systemd1 on the private bus: StartUnit runs the unit's ExecStart with --root."""

    def __init__(self, address: str, root: Path) -> None:
        self.address = address
        self.root = root
        self.started: list[tuple[str, str]] = []
        self.subscribed = False
        self.result = "done"  # what JobRemoved says (a unit that fails: "failed", and nothing runs)
        self.early = False  # JobRemoved before StartUnit's reply (the race the starter must survive)
        self.unit_result = "success"  # the units' Result property (systemd's "start-limit-hit", ...)
        self.delay = 0.0  # seconds between StartUnit's reply and JobRemoved (a unit that takes its time)
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._connect(), self.loop).result(20)

    async def _connect(self) -> None:
        from dbus_fast import Message, MessageType
        from dbus_fast.aio import MessageBus

        self.Message, self.MessageType = Message, MessageType
        self.bus = await MessageBus(bus_address=self.address).connect()
        self.bus.add_message_handler(self._handle)
        await self.bus.request_name("org.freedesktop.systemd1")
        self.jobs = 0

    def _handle(self, msg: Any) -> Any:
        if msg.message_type != self.MessageType.METHOD_CALL:
            return None
        unit_object = msg.path.startswith("/org/freedesktop/systemd1/unit/")
        if msg.interface == "org.freedesktop.DBus.Properties" and unit_object:
            from dbus_fast import Variant

            if msg.member != "Get" or list(msg.body) != ["org.freedesktop.systemd1.Service", "Result"]:
                return self.Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownProperty", str(msg.body))
            return self.Message.new_method_return(msg, "v", [Variant("s", self.unit_result)])
        if msg.interface != "org.freedesktop.systemd1.Manager":
            return None
        if msg.member == "GetUnit" and msg.signature == "s":
            # systemd's object path of a unit: every byte outside [A-Za-z0-9] as _xx (sd_bus_path_encode)
            encoded = "".join(c if c.isalnum() and c.isascii() else f"_{ord(c):02x}" for c in msg.body[0])
            return self.Message.new_method_return(msg, "o", [f"/org/freedesktop/systemd1/unit/{encoded}"])
        if msg.member == "Subscribe":
            self.subscribed = True
            return self.Message.new_method_return(msg)
        if msg.member != "StartUnit" or msg.signature != "ss":
            return self.Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", msg.member)
        unit, mode = msg.body
        self.started.append((unit, mode))
        kind = next((k for k, u in UNITS.items() if u == unit), None)
        if kind is None:
            return self.Message.new_error(msg, "org.freedesktop.systemd1.NoSuchUnit", f"Unit {unit} not found.")
        self.jobs += 1
        job = f"/org/freedesktop/systemd1/job/{self.jobs}"
        reply = self.Message.new_method_return(msg, "o", [job])
        asyncio.get_running_loop().create_task(self._run(kind, unit, job, msg if self.early else None, reply))
        return True if self.early else reply  # True: handled, the reply is sent later

    async def _run(self, kind: str, unit: str, job: str, hold: Any, reply: Any) -> None:
        if not self.early:
            await asyncio.sleep(self.delay)
        if self.result == "done":
            argv = [sys.executable, *exec_start(kind)[2:], "--root", str(self.root)]
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: subprocess.run(argv, cwd=REPO, capture_output=True, timeout=120, check=False)
            )
        removed = self.Message(message_type=self.MessageType.SIGNAL, path="/org/freedesktop/systemd1",
                               interface="org.freedesktop.systemd1.Manager", member="JobRemoved", signature="uoss",
                               body=[int(job.rsplit("/", 1)[1]), job, unit, self.result])  # fmt: skip
        await self.bus.send(removed)
        if hold is not None:
            await self.bus.send(reply)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.bus.disconnect)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def systemd_bus(tmp_path: Path) -> Iterator[PrivateBus]:
    if not SYSTEMD_POLICY.exists():
        pytest.skip("systemd's bus policy is not installed")
    (tmp_path / "bus").mkdir()
    bus = PrivateBus(tmp_path / "bus", extra=f"<include>{SYSTEMD_POLICY}</include>").start()
    try:
        yield bus
    finally:
        bus.stop()


@as_root
def test_the_systemd_starter_starts_the_unit_and_waits_for_its_job(systemd_bus: PrivateBus) -> None:
    fakes: list[FakeSystemd] = []

    def with_systemd(root: Path) -> None:
        fakes.append(FakeSystemd(systemd_bus.address, root))

    with guardian("kfd-perms-0600", args=("--starter", "systemd"), bus=systemd_bus, prepare=with_systemd) as g:
        fake = fakes[0]
        try:
            env = g.env()
            assert call("Reload", env=env).stdout == 's "ready"\n'
            assert fake.started == [("kfdguard-enforce.service", "replace")] and fake.subscribed
            assert kfd_mode(g.root) == 0o660
            # JobRemoved before the reply to StartUnit: the starter still sees the end of its job.
            fake.early = True
            applied = call("ApplyFallback", env=env, check=False)
            assert fake.started[-1] == ("kfdguard-fallback@apply.service", "replace")
            assert "did not complete" not in applied.stdout + applied.stderr
            assert runstate.read(Root(g.root), "fallback-apply").message in applied.stdout + applied.stderr
            # A job that fails without a run: Reload answers, and the status says the run did not complete.
            fake.early, fake.result = False, "failed"
            assert call("Reload", env=env).stdout == 's "ready"\n'
            assert "enforce-run-failed" in findings(env) and "job failed" in findings(env)
        finally:
            fake.close()


@as_root
def test_a_boot_pass_systemd_refused_is_a_finding_not_a_silent_old_result(systemd_bus: PrivateBus) -> None:
    """kfdguard.service Wants= the pass, so it starts when systemd refuses the pass (its start limit): the
    record read at start is an earlier run's, and the status says so until a Reload runs the pass."""
    fakes: list[FakeSystemd] = []

    def refused(root: Path) -> None:
        boot_pass(root)  # an earlier run's record
        fakes.append(FakeSystemd(systemd_bus.address, root))
        fakes[0].unit_result = "start-limit-hit"

    with guardian("kfd-perms-0600", args=("--starter", "systemd"), bus=systemd_bus, prepare=refused) as g:
        fake = fakes[0]
        try:
            env = g.env()
            shown = findings(env)
            assert "enforce-run-failed" in shown and "start limit" in shown and "an earlier run" in shown
            fake.unit_result = "success"
            assert call("Reload", env=env).stdout == 's "ready"\n'
            assert "enforce-run-failed" not in findings(env)
        finally:
            fake.close()


def _job_removed(b: Any, job: str, unit: str, result: str, destination: str | None = None) -> Any:
    return b.Message(message_type=b.MessageType.SIGNAL, destination=destination, path="/org/freedesktop/systemd1",
                     interface="org.freedesktop.systemd1.Manager", member="JobRemoved", signature="uoss",
                     body=[int(job.rsplit("/", 1)[1]), job, unit, result])  # fmt: skip


@as_root
def test_a_job_removed_from_anyone_but_systemd_is_ignored(systemd_bus: PrivateBus, tmp_path: Path) -> None:
    """Issue 35: any client may send JobRemoved straight to the service (a unicast signal passes every match
    rule). A forged one must neither end the wait for a job with its result nor seed the result of a job to
    come: only the owner of org.freedesktop.systemd1 speaks for systemd."""
    from kfdguard.service.backend import load
    from kfdguard.service.starter import SystemdStarter

    fake = FakeSystemd(systemd_bus.address, tmp_path)
    fake.result, fake.delay = "failed", 1.0  # the real end of every job: "failed", a second after StartUnit

    async def scenario() -> tuple[Any, Any, dict[str, str]]:
        b = load()
        service = await b.MessageBus(bus_address=systemd_bus.address, bus_type=b.BusType.SYSTEM).connect()
        forger = await b.MessageBus(bus_address=systemd_bus.address, bus_type=b.BusType.SYSTEM).connect()
        starter = SystemdStarter(service, b)

        async def forge(job: str, unit: str) -> None:
            await forger.send(_job_removed(b, job, unit, "done", destination=service.unique_name))
            # Round trips on both connections: the bus has passed the signal on and the service has read it.
            for bus in (forger, service):
                await bus.call(b.Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                         interface="org.freedesktop.DBus", member="GetId"))  # fmt: skip

        try:
            # Seeding: a "done" for the job StartUnit will return next, before it is started.
            await starter._subscribe(10)
            await forge(f"/org/freedesktop/systemd1/job/{fake.jobs + 1}", UNITS["enforce"])
            seeded = dict(starter.early)
            first = await starter.start("enforce", 20)
            # Ending the wait: a "done" for the job being waited on, while systemd has not ended it.
            waiting = asyncio.ensure_future(starter.start("enforce", 20))
            deadline = asyncio.get_running_loop().time() + 10
            while not starter.results:
                assert asyncio.get_running_loop().time() < deadline, "the starter never waited for its job"
                await asyncio.sleep(0.01)
            await forge(next(iter(starter.results)), UNITS["enforce"])
            second = await waiting
            return first, second, seeded
        finally:
            service.disconnect()
            forger.disconnect()

    try:
        first, second, seeded = asyncio.run(scenario())
    finally:
        fake.close()
    assert seeded == {}
    assert (first.ok, first.detail) == (False, "kfdguard-enforce.service: job failed")
    assert (second.ok, second.detail) == (False, "kfdguard-enforce.service: job failed")
    assert fake.started == [("kfdguard-enforce.service", "replace")] * 2


class _Answers:
    """A starter that only answers last_result, with what the bus would have said."""

    def __init__(self, result: str | None) -> None:
        self.result = result

    async def last_result(self, kind: str, timeout: float) -> str | None:
        assert kind == "enforce"
        return self.result


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        (None, None),
        ("success", None),
        ("exit-code", "did not complete for this start: systemd's result is 'exit-code'"),
        ("x" * 5000, "systemd's result is '" + "x" * 40 + "'; the result shown is none"),
    ],
)
def test_a_pass_that_ran_and_failed_is_told_apart_from_one_refused(
    tmp_path: Path, result: str | None, problem: str | None
) -> None:
    from kfdguard.service.privsep import Privsep

    privsep = Privsep("systemd", Root(tmp_path))
    privsep.starter = _Answers(result)  # type: ignore[assignment]
    assert asyncio.run(privsep.check_last_run()) is (problem is not None)
    if problem is None:
        assert privsep.problem is None
    else:
        assert privsep.problem is not None and problem in privsep.problem and "refused" not in privsep.problem


class _Reply:
    def __init__(self, signature: str, body: list[Any]) -> None:
        self.signature, self.body = signature, body


@pytest.mark.parametrize(
    ("unit_reply", "result_reply", "expected"),
    [
        (("o", ["/org/freedesktop/systemd1/unit/x"]), ("v", ["start-limit-hit"]), "start-limit-hit"),
        (("o", ["/org/freedesktop/systemd1/unit/x"]), ("v", [5]), None),  # a number, not systemd's word
        (("o", ["/org/freedesktop/systemd1/unit/x"]), ("v", [["success"]]), None),  # an array
        (("o", ["/org/freedesktop/systemd1/unit/x"]), ("s", ["success"]), None),  # not a variant at all
        (("s", ["/org/freedesktop/systemd1/unit/x"]), ("v", ["success"]), None),  # GetUnit without a path
        (("o", ["/org/freedesktop/systemd1/unit/x"]), RuntimeError("org.freedesktop.DBus.Error.AccessDenied"), None),
        (TimeoutError(), None, None),
    ],
)
def test_the_systemd_starter_takes_only_a_string_result_from_the_bus(
    unit_reply: Any, result_reply: Any, expected: str | None
) -> None:
    """Whatever the bus answers for GetUnit and the unit's Result (another type, another signature, an error, no
    answer), last_result gives systemd's word or None, and raises nothing."""
    from dbus_fast import Variant

    from kfdguard.service.starter import SystemdStarter

    answers = [unit_reply, result_reply]

    class Starter(SystemdStarter):
        async def _call(self, *args: Any) -> Any:
            answer = answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            signature, body = answer
            if signature == "v":
                value = body[0]
                body = [Variant("s" if isinstance(value, str) else "u" if isinstance(value, int) else "as", value)]
            return _Reply(signature, body)

    assert asyncio.run(Starter(None, None).last_result("enforce", 1.0)) == expected
