"""The service's state: one current Status, replaced as a whole at one point."""

from __future__ import annotations

import _thread
import os
import time

from kfdguard import log
from kfdguard.app import pipeline, usecases
from kfdguard.app.triggers import Trigger, policy
from kfdguard.record import replace
from kfdguard.service.notify import notify
from kfdguard.service.status import PassResult, from_verdict, starting
from kfdguard.verdict import Severity, Status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.config import LoadedConfig
    from kfdguard.host.root import Root
    from kfdguard.host.system import System
    from kfdguard.service.privsep import Privsep


class Background:
    """A function in its own thread whose end can be waited for with a timeout.

    threading.Thread without the threading module: the boot pass needs nothing
    more, and the import is a measurable part of the time to READY.
    """

    def __init__(self, fn: Callable[[], PassResult]) -> None:
        self.result: list[PassResult] = []
        self.failure: list[Exception] = []
        self._done = _thread.allocate_lock()
        self._done.acquire()
        _thread.start_new_thread(self._run, (fn,))

    def _run(self, fn: Callable[[], PassResult]) -> None:
        try:
            self.result.append(fn())
        except Exception as exc:
            self.failure.append(exc)
        finally:
            self._done.release()

    def join(self, timeout: float | None = None) -> bool:
        """True once the function has returned or raised."""
        if self._done.acquire(timeout=-1 if timeout is None else timeout):
            self._done.release()
            return True
        return False


HISTORY_WRITE_FAILED = "history-write-failed"


class Service:
    """Checks the machine and holds what was found. Blocking methods run off the event loop."""

    def __init__(self, system: System, config: ConfigSource, *, enforce: bool = True) -> None:
        self.system = system
        self.config = config
        self.enforce = enforce  # False: --no-enforce, every trigger only observes
        self.status: Status = starting()
        # What the last check said, before live health (kfdguard/health) is laid over it.
        self.base: Status = self.status
        from kfdguard.health.tracker import Health

        self.health = Health()
        self.last: PassResult | None = None
        from kfdguard.readiness.marker import MarkerPublisher

        # /run/kfdguard/ready follows every transition (kfdguard wait, kfdguard-compute.target).
        self.listeners: list[Callable[[Status, Status], None]] = [
            MarkerPublisher(system, lambda: self.loaded.config.compute.require, time.time)
        ]
        # threading.Lock is this; importing threading would cost the boot path ~2 ms for nothing.
        self.lock = _thread.allocate_lock()  # one check or mutation at a time
        # A boot pass that outlived its deadline: the loop publishes its result when done.
        self.pending: Background | None = None
        self.history_problem: str | None = None  # writing /var/lib/kfdguard/history.json failed
        self.health_write_failed = False  # writing this boot's health record failed (logged once)
        self.ready_sent = False  # until READY=1, notifications avoid systemd-python's import cost
        # Issue 21: set when the privileged work is the oneshots' (service/privsep.py); None: it is ours.
        self.privsep: Privsep | None = None

    @property
    def loaded(self) -> LoadedConfig:
        return self.config.loaded

    # --- the one transition point ------------------------------------------------------

    def transition(self, new: Status, reason: str) -> None:
        self.base = new = self._with_history_problem(new)
        self.health.know(tuple(str(d.get("Slot", "")) for d in new.devices))
        new = self.health.overlay(new, disclose=kernel_log_public(self.system.root))
        old = self.status
        self.status = new
        if (old.state, old.summary) != (new.state, new.summary):
            level = log.INFO if new.state in ("ready", "no-device") else log.WARNING
            log.emit(level, f"state {old.state} -> {new.state} ({reason}): {new.summary}")
            notify(f"STATUS={new.state}: {new.summary}", early=not self.ready_sent)
        for listener in self.listeners:
            listener(old, new)

    def _with_history_problem(self, status: Status) -> Status:
        findings = tuple(f for f in status.findings if f[0] != HISTORY_WRITE_FAILED)
        if self.history_problem is not None:
            remedy = "free space on /var/lib or make it writable; until then no fallback is tried automatically"
            problem = (HISTORY_WRITE_FAILED, str(Severity.WARNING), self.history_problem, remedy)
            findings = (*findings, problem)
        return status if findings == status.findings else replace(status, findings=findings)

    def republish(self, reason: str) -> None:
        """Publish the current status again with what changed outside a check (the history, live health)."""
        self.transition(self.base, reason)

    # --- checks (blocking) ---------------------------------------------------------------

    def check(self, trigger: Trigger = Trigger.BOOT) -> PassResult:
        """The pipeline for one trigger (the boot pass, every re-check), under the service's lock."""
        with self.lock:
            outcome = pipeline.check(self.system, self.config, trigger, may_repair=self.enforce)
        if policy(trigger).reload:
            for error in outcome.loaded.errors:
                log.error(f"configuration: {error}")
        facts, verdict = outcome.facts, outcome.verdict
        if self.ready_sent:
            # The software inventory: after READY only (docs/USERSPACE.md), a few ms per check.
            from kfdguard.userspace.service import with_software

            facts, verdict = with_software(self.system.root, facts, verdict, outcome.loaded.config.software)
        status = from_verdict(facts, verdict, outcome.loaded.config.fallback.policy, _now())
        if outcome.report is not None and outcome.report.findings:
            # Problems met while repairing are findings like the others.
            merged = sorted((*verdict.findings, *outcome.report.findings), key=lambda f: f.key())
            status = replace(status, findings=tuple((f.code, str(f.severity), f.message, f.remedy) for f in merged))
        if self.privsep is not None:
            status = self.privsep.annotate(status)  # what the last enforce run met, which this look cannot see
        return PassResult(status, facts, verdict)

    def take_inventory(self) -> PassResult | None:
        """After READY: the last check's result with the software inventory (docs/USERSPACE.md).

        Blocking (the loop runs it in a thread); the loop publishes the result, and only if no
        other check finished meanwhile (that check took the inventory itself).
        """
        from kfdguard.service.status import software_status

        with self.lock:
            last = self.last
            if last is None or last.facts.software is not None:
                return None
            try:
                return software_status(self.system.root, last, self.base, self.loaded.config.software)
            except Exception as exc:  # the inventory is extra: its failure must not touch the service
                log.error(f"software inventory failed: {type(exc).__name__}: {exc}")
                return None

    def diagnose(self) -> tuple[tuple[str, str, str, str], ...]:
        """A fresh look including the kernel log; classified findings only."""
        outcome = usecases.diagnose(self.system, self.config)
        return tuple((f.code, str(f.severity), f.message, f.remedy) for f in outcome.verdict.findings)

    def access_for(self, uid: int, session_gids: frozenset[int] | None) -> tuple[bool, str]:
        """CheckAccess: can this user open /dev/kfd and the render nodes of the GPUs now, and if not why."""
        status = self.status
        return usecases.access(
            self.system,
            uid,
            session_gids,
            tuple(status.nodes),
            ready=status.ready,
            summary=status.summary,
            state=status.state,
        )

    def environment_visibility(self, env: dict[str, str]) -> tuple[bool, str]:
        """CheckAccessWithEnvironment: whether a caller's environment leaves any AMD GPU visible to ROCm."""
        from kfdguard.userspace.assess import environment_visibility

        return environment_visibility(env, len(self.status.devices))

    def record_and_fallback(self, result: PassResult) -> str:
        """After a check: write the history and let the fallback policy act."""
        from kfdguard.fallback.apply import after_check

        if self.privsep is not None:
            return "kept by kfdguard-enforce.service"  # the history is root's, written by the oneshot's pass
        rec = result.verdict.fallback
        if rec is None:
            return "no recommendation"
        with self.lock:
            history, outcome, why = after_check(self.system, result.facts, result.verdict.ready, rec)
        # A problem reading the file is already a finding (history-unusable); one writing it is new.
        fresh = history.problem if history.problem != result.facts.history.problem else None
        self.history_problem = fresh
        if outcome is not None:
            level = log.NOTICE if outcome.ok else log.WARNING
            log.emit(level, f"fallback: {outcome.message}")
            return outcome.message
        return why

    def keep_health(self) -> None:
        """This boot's live GPU health, for the per-kernel history (kfdguard/health/store.py). Never raises."""
        from kfdguard.health import store

        last = self.last
        if last is None or not last.facts.kernel.boot_id:
            return  # no check yet (or no boot id): nothing to say which boot and kernel it belongs to
        boot = store.summary(self.health, last.facts.kernel.boot_id, last.facts.kernel.release)
        if not boot.troubled:
            return
        try:
            store.write(self.system.root, boot)
        except (OSError, ValueError) as exc:
            if not self.health_write_failed:  # once, not at every event of a reset storm
                shown = self.system.root.display(store.path(self.system.root, boot.boot_id))
                log.warning(f"live health: {shown} could not be written: {getattr(exc, 'strerror', None) or exc}")
            self.health_write_failed = True
        else:
            self.health_write_failed = False

    def fallback(self, clear: bool) -> tuple[bool, str]:
        with self.lock:
            if clear:
                result = usecases.fallback_clear(self.system)
                ok, message = result.ok, result.message
            else:
                pin = self.loaded.config.fallback.policy == "pin"
                _facts, outcome, message = usecases.fallback_apply(self.system, self.config, pin=pin)
                ok = outcome is not None and outcome.ok
                if outcome is None:
                    return False, message
        log.emit(log.NOTICE if ok else log.WARNING, f"fallback {'clear' if clear else 'apply'}: {message}")
        return ok, message

    def remedy(self, action: str, application: str) -> tuple[bool, str]:
        """ApplyRemedy/ClearRemedy where the service acts itself (no --starter: the test bed as root)."""
        from kfdguard.app import remedy
        from kfdguard.app.targets import Target

        with self.lock:
            outcome = remedy.carry_out(Target(self.system, None), self.config, action, application)
        log.emit(log.NOTICE if outcome.ok else log.WARNING, f"remedy {action} {application}: {outcome.message}")
        return outcome.ok, outcome.message


def kernel_log_public(root: Root) -> bool:
    """Whether any user may read the kernel log, as the kernel decides: kernel.dmesg_restrict is 0.

    What the service publishes needs no authorization, so the kernel's own lines (which name other
    users' programs and pids) are shown only when the kernel shows them to everyone; with 1, a value
    we cannot read or anything else, the status says the cause alone (health/tracker.py). Read at each
    publication: an administrator may change it at any time, and it is one small read. Non-blocking:
    on a simulated machine the path may be a FIFO.
    """
    try:
        fd = os.open(root.proc / "sys/kernel/dmesg_restrict", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, 16).strip() == b"0"
    except OSError:
        return False
    finally:
        os.close(fd)


def _now() -> int:
    return time.time_ns() // 1000


def error_status(message: str) -> Status:
    return Status("error", False, message, findings=(("internal-error", str(Severity.ERROR), message, ""),))
