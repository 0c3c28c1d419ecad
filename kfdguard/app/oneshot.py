"""The privileged oneshots' work (issue 21): one enforce pass, one boot-loader action, each recorded.

``kfdguard enforce --record`` is kfdguard-enforce.service: the boot pass that the single root
service used to run before READY, and every repair the resident service asks for since. It runs
the one pipeline (``pipeline.check``), then what the service did after a check (the history and the
fallback policy, ``fallback.apply.after_check``), and leaves a ``runstate.RunRecord`` in
/run/kfdguard/enforce.json. ``kfdguard fallback apply|clear --record`` is kfdguard-fallback@.service.
Both log what they did as the service logged it, for the journal.
"""

from __future__ import annotations

from kfdguard import log
from kfdguard.app import pipeline, runstate, usecases
from kfdguard.app.triggers import Trigger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.app.pipeline import ConfigSource, Outcome
    from kfdguard.system import System


def enforce(system: System, config: ConfigSource) -> tuple[Outcome, runstate.RunRecord]:
    """Probe, assess, repair, record: the whole pass, and the record of it (written)."""
    # BOOT's row (repair, no second read): a new process has just read the configuration.
    outcome = pipeline.check(system, config, Trigger.BOOT)
    for error in outcome.loaded.errors:
        log.error(f"configuration: {error}")
    verdict = outcome.verdict
    report = outcome.report
    failed = report is not None and report.failed
    # Each change is logged by the Enforcer as it is made; here the end state, as the service logged it.
    level = log.INFO if verdict.state in ("ready", "no-device") else log.WARNING
    log.emit(level, f"state {verdict.state} (enforce): {verdict.summary}")
    _after_check(system, outcome)
    code = verdict.exit_code
    record = runstate.RunRecord(
        kind="enforce",
        ok=not failed,
        state=str(verdict.state),
        message=verdict.summary,
        findings=tuple(
            (f.code, str(f.severity), f.message, f.remedy) for f in (report.findings if report is not None else ())
        ),
        changes=tuple(
            f"{c.status}: {c.action.kind} {c.action.target}"
            for c in (report.changes if report is not None else ())
            if c.status != "unchanged"
        ),
        exit_code=1 if code == 0 and failed else code,
        stamp=runstate.now(),
    )
    runstate.write(system.root, record)
    return outcome, record


def _after_check(system: System, outcome: Outcome) -> None:
    """The history and the fallback policy, as the service ran them after each check."""
    from kfdguard.fallback.apply import after_check

    rec = outcome.verdict.fallback
    if rec is None:
        return
    try:
        _history, acted, _why = after_check(system, outcome.facts, outcome.verdict.ready, rec)
    except OSError as exc:  # the pass's record is written whatever the history's fate
        log.error(f"fallback: the history could not be kept: {exc.strerror or exc}")
        return
    if acted is not None:
        log.emit(log.NOTICE if acted.ok else log.WARNING, f"fallback: {acted.message}")


def fallback(system: System, config: ConfigSource, action: str, *, pin: bool) -> runstate.RunRecord:
    """``apply`` (``pin``: as the default) or ``clear``, recorded."""
    if action == "clear":
        result = usecases.fallback_clear(system)
        ok, message = result.ok, result.message
    else:
        _facts, outcome, message = usecases.fallback_apply(system, config, pin=pin)
        ok = outcome is not None and outcome.ok
    log.emit(log.NOTICE if ok else log.WARNING, f"fallback {action}: {message}")
    record = runstate.RunRecord(
        kind=f"fallback-{action}", ok=ok, state="", message=message, exit_code=0 if ok else 1, stamp=runstate.now()
    )
    runstate.write(system.root, record)
    return record


__all__ = ["enforce", "fallback"]
