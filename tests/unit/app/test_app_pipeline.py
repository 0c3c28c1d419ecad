"""The one pipeline and its triggers: what each trigger asks for, and folding that never loses a request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kfdguard.app import pipeline
from kfdguard.app.pipeline import ConfigSource
from kfdguard.app.triggers import POLICIES, Trigger, fold, policy
from kfdguard.config import Config
from kfdguard.host.paths import HostPath
from kfdguard.service.checks import Checks
from kfdguard.service.core import Service
from kfdguard.service.status import PassResult
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str | MachineSpec], SimulatedSystem]


def test_every_trigger_has_a_row() -> None:
    assert set(POLICIES) == set(Trigger)


@pytest.mark.parametrize("first", list(Trigger))
@pytest.mark.parametrize("second", list(Trigger))
def test_folding_keeps_what_both_ask_for(first: Trigger, second: Trigger) -> None:
    kept = policy(fold(first, second))
    for asked in (policy(first), policy(second)):
        assert kept.reload or not asked.reload
        assert kept.repair or not asked.repair


def test_folding_into_nothing_pending_is_the_request() -> None:
    assert fold(None, Trigger.DEVICE_EVENT) is Trigger.DEVICE_EVENT
    assert fold(Trigger.SIGHUP, Trigger.DEVICE_EVENT) is Trigger.SIGHUP
    assert fold(Trigger.DEVICE_EVENT, Trigger.DBUS_RELOAD) is Trigger.DBUS_RELOAD


def _kfd_mode(system: SimulatedSystem) -> int:
    node = system.stat_node(system.root.kfd)
    assert node is not None
    return node.mode


def test_a_device_event_only_looks(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.DEVICE_EVENT)
    assert outcome.report is None and outcome.verdict is outcome.before
    assert outcome.verdict.plan  # there was something to repair ...
    assert _kfd_mode(system) == 0o600  # ... and it was left alone


def test_the_boot_pass_repairs_and_looks_again(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.BOOT)
    assert outcome.report is not None and outcome.report.changed
    assert any(a.kind == "fix-node" for a in outcome.before.plan)
    assert str(outcome.verdict.state) == "ready"
    assert _kfd_mode(system) == 0o660


def test_the_caller_can_only_narrow(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.SIGHUP, may_repair=False)
    assert outcome.report is None and _kfd_mode(system) == 0o600


def test_a_dry_run_plans_and_changes_nothing(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.CLI, dry_run=True)
    assert outcome.report is not None and outcome.report.dry_run
    assert {c.status for c in outcome.report.changes} >= {"would-change"}
    assert _kfd_mode(system) == 0o600


def test_a_reloading_trigger_reads_the_file_again(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    path = system.root.etc / "kfdguard/config.yaml"
    source = ConfigSource(path, "/etc/kfdguard/config.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("device:\n  group: video\n")
    assert pipeline.check(system, source, Trigger.DEVICE_EVENT).loaded.config.device.group == "render"
    assert pipeline.check(system, source, Trigger.DBUS_RELOAD).loaded.config.device.group == "video"


class Gated(Service):
    """The real service whose first check waits for the test."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[Trigger] = []
        self.running = threading.Event()
        self.go = threading.Event()

    def check(self, trigger: Trigger = Trigger.BOOT) -> PassResult:
        self.seen.append(trigger)
        if len(self.seen) == 1:
            self.running.set()
            self.go.wait(10)
        return super().check(trigger)


def test_a_dbus_reload_during_a_device_event_waits_for_its_own_check(fresh_machine: Make) -> None:
    system = fresh_machine("kfd-perms-0600")
    service = Gated(system, ConfigSource.fixed(Config()))

    async def scenario() -> PassResult:
        checks = Checks(service)
        checks.request(Trigger.DEVICE_EVENT, "udev change kfd kfd")
        await asyncio.get_running_loop().run_in_executor(None, service.running.wait, 10)
        reload = asyncio.ensure_future(checks.run(Trigger.DBUS_RELOAD, "Reload by :1.7"))
        checks.request(Trigger.DEVICE_EVENT, "udev change drm renderD128")  # folds behind the Reload
        await asyncio.sleep(0.05)
        assert not reload.done()  # the device event's check does not answer the Reload
        service.go.set()
        return await asyncio.wait_for(reload, 20)

    result = asyncio.run(scenario())
    # One more check for both folded requests, with the Reload's trigger: it repaired.
    assert service.seen == [Trigger.DEVICE_EVENT, Trigger.DBUS_RELOAD]
    assert result.status.state == "ready" and _kfd_mode(system) == 0o660


def test_the_enforce_lock_is_in_roots_state_directory_and_a_held_one_is_reported(
    fresh_machine: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import os

    # /run/kfdguard is group-writable for the resident service: the lock must not be there
    # (issue 21), where it could make the file before root and hold it.
    system = fresh_machine("kfd-perms-0600")
    lockfile = system.root.var_lib / "kfdguard/enforce.lock"
    lockfile.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(pipeline, "LOCK_TIMEOUT", 0.2)
    fd = os.open(lockfile, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.BOOT)
    finally:
        os.close(fd)
    assert outcome.report is not None
    assert [f.code for f in outcome.report.findings] == ["enforce-busy"]
    assert _kfd_mode(system) == 0o600  # nothing was repaired without the lock
    assert not (system.root.run / "kfdguard/enforce.lock").exists()


def test_a_lock_file_of_another_user_is_refused_not_waited_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from kfdguard.host import files

    lockfile = tmp_path / "enforce.lock"
    lockfile.write_bytes(b"")
    # The file is this process's; seen from another euid it is "someone else's lock".
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(lockfile).st_uid + 1)
    with pytest.raises(TimeoutError, match="belongs to uid"), files.locked(HostPath(lockfile), 30.0):
        pytest.fail("the lock was taken")


def test_a_lock_that_cannot_be_made_is_reported_not_raised(fresh_machine: Make) -> None:
    # A state directory where nothing can be created (here: a file in its place).
    system = fresh_machine("kfd-perms-0600")
    system.root.var_lib.mkdir(parents=True, exist_ok=True)
    (system.root.var_lib / "kfdguard").write_text("not a directory\n")
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.BOOT)
    assert outcome.report is not None
    [busy] = outcome.report.findings
    assert busy.code == "enforce-busy" and "cannot open" in busy.message
