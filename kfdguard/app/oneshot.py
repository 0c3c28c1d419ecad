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
from kfdguard.app import pipeline, runstate
from kfdguard.app.triggers import Trigger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.app.pipeline import ConfigSource, Outcome
    from kfdguard.host.system import System


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
    _prepare_fleet(system, outcome)
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
        kfd_version=_kfd_version(outcome),
        kfd_error=outcome.facts.kfd.version_error or "",
        kfd_errno=outcome.facts.kfd.version_errno or 0,
    )
    runstate.write(system.root, record)
    return outcome, record


def _kfd_version(outcome: Outcome) -> str:
    version = outcome.facts.kfd.version
    return "" if version is None else f"{version[0]}.{version[1]}"


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


def _prepare_fleet(system: System, outcome: Outcome) -> None:
    """The fleet files' stage directories and links for the resident service (fleet/prepare.py).

    Here because this is the process that is root and reads config.yaml: at boot, before the
    resident starts, and at every Reload, so an output turned on takes effect with the reload.
    """
    from kfdguard.fleet import prepare

    paths = outcome.loaded.config.fleet
    present = [shown for _output, shown in prepare.enabled(paths) if prepare.directory_exists(system.root, shown)]
    if not present:
        return  # the default outputs are on: most machines have none of their readers
    user = prepare.owner()
    if user is None:
        log.warning(f"fleet: no user {prepare.USER}: {', '.join(present)} left to whoever runs the service")
        return
    try:
        results = prepare.prepare(system.root, paths, user)
    except OSError as exc:  # the list for the package's postrm; the pass's record comes first
        log.error(f"fleet: {exc.strerror or exc}")
        return
    for r in results:
        if r.status == "made":
            log.info(f"fleet: {r.detail} for the service")
        elif r.status == "failed":
            log.warning(f"fleet: the service cannot write {r.path}: {r.detail}")


def fallback(system: System, config: ConfigSource, action: str, *, pin: bool) -> runstate.RunRecord:
    """``apply`` (``pin``: as the default) or ``clear``, recorded."""
    from kfdguard.app import usecases  # not on the boot pass: only the boot-loader oneshot needs it

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


def fast_argv(argv: list[str]) -> tuple[str, str | None, bool] | None:
    """The oneshots' own command lines, recognized without argparse: (command, --root, --pin).

    ``enforce --record [--root DIR]`` and ``fallback apply|clear --record [--root DIR] [--pin]``,
    options in any order, nothing else; any other command line (or a mistake in one of these)
    is None and goes to the full command line, which parses and reports it. The display manager
    waits for kfdguard-enforce.service to exit: argparse and the CLI's other modules cost about
    as much as the pass itself on a healthy machine (benchmarks/bench_boot.py).
    """
    if argv[:1] == ["enforce"]:
        command, rest = "enforce", argv[1:]
    elif argv[:1] == ["fallback"] and argv[1:2] in (["apply"], ["clear"]):
        command, rest = f"fallback-{argv[1]}", argv[2:]
    else:
        return None
    root: str | None = None
    record = pin = False
    while rest:
        arg = rest.pop(0)
        if arg == "--record" and not record:
            record = True
        elif arg == "--pin" and command == "fallback-apply" and not pin:
            pin = True
        elif arg == "--root" and root is None and rest and rest[0] and not rest[0].startswith("-"):
            root = rest.pop(0)
        elif arg.startswith("--root=") and root is None and len(arg) > len("--root="):
            root = arg.removeprefix("--root=")
        else:
            return None
    return (command, root, pin) if record else None


def main(argv: list[str]) -> int | None:
    """Run a oneshot's command line (``fast_argv``); None when it is not one."""
    parsed = fast_argv(list(argv))
    if parsed is None:
        return None
    import os
    import sys

    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.app.targets import TargetError, open_target
    from kfdguard.verdict import EXIT_CODES, EXIT_USAGE, State

    command, root, pin = parsed
    log.set_journal("JOURNAL_STREAM" in os.environ)
    try:
        target = open_target(root, None)
    except TargetError as exc:
        sys.stderr.write(f"kfdguard: {exc}\n")
        return EXIT_USAGE
    try:
        if target.needs_root and os.geteuid() != 0:
            sys.stderr.write(f"kfdguard: {command.replace('-', ' ')} --record: run it as root\n")
            return EXIT_USAGE
        path = target.root.etc / "kfdguard/config.yaml"
        # The last configuration that validated, as the resident service keeps it: a broken file must not
        # make the repair pass fall back to the defaults and undo the administrator's options.
        config = ConfigSource(
            path, target.root.display(path), target.root.var_lib / "kfdguard/config.cache", root=target.root
        )
        if command == "enforce":
            return enforce(target.system, config)[1].exit_code
        action = command.removeprefix("fallback-")
        pin = pin or config.loaded.config.fallback.policy == "pin"
        return fallback(target.system, config, action, pin=pin).exit_code
    except Exception as exc:  # the unit fails with the reason in its journal; the service reports it
        sys.stderr.write(f"kfdguard: {command.replace('-', ' ')} failed: {type(exc).__name__}: {exc}\n")
        return EXIT_CODES[State.ERROR] if command == "enforce" else 1
    finally:
        target.close()


__all__ = ["enforce", "fallback", "fast_argv", "main"]
