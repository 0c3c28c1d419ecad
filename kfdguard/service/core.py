"""The service's state: one current Status, replaced as a whole at one point."""

from __future__ import annotations

import _thread
import time

from kfdguard import log
from kfdguard.config import LoadedConfig, load_config
from kfdguard.record import dataclass, replace
from kfdguard.service.notify import notify
from kfdguard.service.status import Status, from_verdict, starting
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from kfdguard.facts import Facts
    from kfdguard.system import System
    from kfdguard.verdict import Verdict


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


@dataclass(frozen=True)
class PassResult:
    status: Status
    facts: Facts
    verdict: Verdict


class Service:
    """Checks the machine and holds what was found. Blocking methods run off the event loop."""

    def __init__(
        self, system: System, config_path: Path, config_shown: str, cache: Path | None, *, enforce: bool = True
    ) -> None:
        self.system = system
        self.config_path = config_path
        self.config_shown = config_shown
        self.cache = cache
        self.enforce = enforce
        self.loaded: LoadedConfig = load_config(config_path, config_shown, cache)
        self.status: Status = starting()
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
        self.ready_sent = False  # until READY=1, notifications avoid systemd-python's import cost

    # --- the one transition point ------------------------------------------------------

    def transition(self, new: Status, reason: str) -> None:
        new = self._with_history_problem(new)
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
        """Publish the current status again with what changed outside a check (the history)."""
        self.transition(self.status, reason)

    # --- checks (blocking) ---------------------------------------------------------------

    def reload_config(self) -> LoadedConfig:
        self.loaded = load_config(self.config_path, self.config_shown, self.cache)
        for error in self.loaded.errors:
            log.error(f"configuration: {error}")
        return self.loaded

    def check(self, *, enforce: bool | None = None) -> PassResult:
        """probe, assess, enforce when allowed, probe again: the boot pass and every re-check."""
        with self.lock:
            return self._check(self.enforce if enforce is None else enforce)

    def _check(self, enforce: bool) -> PassResult:
        from kfdguard.assess import assess
        from kfdguard.probe import probe

        config = self.loaded.config
        errors = self.loaded.errors
        extra: tuple[Finding, ...] = ()
        if enforce:
            from kfdguard.enforce import enforce_with_facts

            report, _before, verdict, facts = enforce_with_facts(self.system, config, config_errors=errors)
            extra = report.findings
        else:
            facts = probe(self.system, log="needed", log_sources=config.log.sources)
            verdict = assess(facts, config, errors)
        status = from_verdict(facts, verdict, config.fallback.policy, time.time_ns() // 1000)
        if extra:
            # Problems met while repairing are findings like the others.
            merged = tuple(sorted((*verdict.findings, *extra), key=lambda f: f.key()))
            status = replace(status, findings=tuple((f.code, str(f.severity), f.message, f.remedy) for f in merged))
        return PassResult(status, facts, verdict)

    def diagnose(self) -> tuple[tuple[str, str, str, str], ...]:
        """A fresh look including the kernel log; classified findings only."""
        from kfdguard.assess import assess
        from kfdguard.probe import probe

        config = self.loaded.config
        facts = probe(
            self.system, log="always", log_sources=config.log.sources, previous_boots=config.log.previous_boots
        )
        verdict = assess(facts, config, self.loaded.errors)
        return tuple((f.code, str(f.severity), f.message, f.remedy) for f in verdict.findings)

    def access_for(self, uid: int, session_gids: frozenset[int] | None) -> tuple[bool, str]:
        """CheckAccess: can this user open /dev/kfd and the render nodes of the GPUs now, and if not why."""
        from kfdguard.access import explain_caller
        from kfdguard.parsers.accounts import parse_group, parse_passwd
        from kfdguard.probe.reader import Reader

        system = self.system
        reader = Reader(system.root)
        groups, _ = parse_group(reader.text(system.root.etc / "group") or "")
        users, _ = parse_passwd(reader.text(system.root.etc / "passwd") or "")
        user = next((u for u in users if u.uid == uid), None)
        name = user.name if user else str(uid)
        listed = frozenset({user.gid} if user else set()) | {g.gid for g in groups if name in g.members}
        status = self.status
        if not status.nodes:
            return False, f"{status.summary} (state {status.state})"
        nodes = []
        for path, probed in status.nodes:
            try:
                node = system.stat_node(system.root.join(path)) or probed
            except OSError:
                node = probed
            nodes.append((path, node))
        gids = listed if session_gids is None else session_gids
        allowed, problems, fix = explain_caller(name, uid, gids, listed, nodes, {g.gid: g.name for g in groups})
        if not allowed:
            return False, f"{name} (uid {uid}) cannot open " + "; ".join(problems) + f". Fix: {fix}"
        paths = ", ".join(path for path, _ in nodes)
        tail = "" if status.ready else f"; but compute is not ready: {status.summary}"
        return status.ready, f"{name} (uid {uid}) can open {paths}{tail}"

    def record_and_fallback(self, result: PassResult) -> str:
        """After a check: write the history and let the fallback policy act."""
        from kfdguard.fallback.apply import after_check

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

    def fallback(self, clear: bool) -> tuple[bool, str]:
        from kfdguard.assess import assess
        from kfdguard.fallback.apply import arrange
        from kfdguard.fallback.apply import clear as clear_fallback
        from kfdguard.probe import probe

        with self.lock:
            facts = probe(self.system, log="never")
            if clear:
                outcome, _ = clear_fallback(self.system, facts)
            else:
                verdict = assess(facts, self.loaded.config, self.loaded.errors)
                if verdict.fallback is None:
                    return False, "no recommendation"
                mode = "pin" if self.loaded.config.fallback.policy == "pin" else "oneshot"
                outcome, _ = arrange(self.system, facts, verdict.fallback, mode)
        log.emit(
            log.NOTICE if outcome.ok else log.WARNING, f"fallback {'clear' if clear else 'apply'}: {outcome.message}"
        )
        return outcome.ok, outcome.message


def error_status(message: str) -> Status:
    return Status("error", False, message, findings=(("internal-error", str(Severity.ERROR), message, ""),))
