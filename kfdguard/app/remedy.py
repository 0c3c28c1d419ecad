"""``kfdguard remedy``: an application's service environment, planned, written or removed (issue 37).

The decision is userspace/dropin.py's (from the application verdicts of this machine); this module takes
the inventory, carries the decision out and tells systemd. It is the one place the three ways in meet:
``kfdguard remedy`` as root, kfdguard-remedy@.service (``--record``) and the test bed's child starter.
"""

from __future__ import annotations

from kfdguard import log
from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.app.targets import Target
    from kfdguard.userspace.dropin import Plan

RELOAD_TIMEOUT = 30.0  # systemctl daemon-reload on a machine with many units


@dataclass(frozen=True)
class Outcome:
    ok: bool  # the request was carried out (or there was nothing left to do for clear)
    message: str
    plan: Plan | None = None  # apply: what was (or, dry, would be) written
    changed: bool = False
    refused: bool = False  # a Refusal: nothing was written, the message says why


def plan(target: Target, config: ConfigSource, application: str) -> Plan:
    """What ``apply`` would write here; dropin.Refusal when it would not."""
    from kfdguard.probe import probe
    from kfdguard.userspace import dropin
    from kfdguard.userspace.cli import with_inventory

    facts = with_inventory(probe(target.system, log="never"), target, config.loaded.config)
    return dropin.plan_apply(target.root, facts, application)


def carry_out(target: Target, config: ConfigSource, action: str, application: str, *, dry: bool = False) -> Outcome:
    """apply or clear for ``application``; ``dry``: say what apply would write and write nothing."""
    from kfdguard.userspace import dropin

    unit = dropin.SERVICES[application]
    try:
        if action == "clear":  # show (dry) is apply's plan only: the command never asks for a dry clear
            removed = dropin.clear(target.root, application)
            if removed is None:
                return Outcome(True, f"kfdguard has no drop-in for {unit}: nothing to remove")
            return Outcome(True, f"removed {removed}; {_reload(target, unit)}", changed=True)
        planned = plan(target, config, application)
        if dry:
            return Outcome(True, f"would write {planned.shown}", planned)
        changed = dropin.write(target.root, planned)
    except dropin.NothingToDo as exc:
        return Outcome(True, str(exc))
    except dropin.Refusal as exc:
        return Outcome(False, str(exc), refused=True)
    except OSError as exc:
        return Outcome(False, f"{exc.filename or 'the drop-in'}: {exc.strerror or exc}")
    values = " ".join(f"{k}={v}" for k, v in planned.environment)
    if not changed:
        return Outcome(True, f"{planned.shown} already sets {values}", planned)
    return Outcome(True, f"wrote {planned.shown} ({values}); {_reload(target, unit)}", planned, changed=True)


def _reload(target: Target, unit: str) -> str:
    """Tell systemd of the changed drop-in, so that the next start of the unit takes it; what happened, to say."""
    if not target.root.is_host:
        return f"not this machine's systemd (a --root or --machine): restart {unit} there after a daemon-reload"
    from kfdguard.host.root import SYSTEMD_BOOTED

    if not target.root.join(SYSTEMD_BOOTED).is_dir():
        return f"systemd is not running here: the next boot's {unit} takes it"
    result = target.system.run(["systemctl", "daemon-reload"], timeout=RELOAD_TIMEOUT)
    if result.returncode != 0:
        why = (result.stderr.strip().splitlines() or [result.error or "failed"])[-1]
        log.warning(f"systemctl daemon-reload: {why}")
        return f"systemctl daemon-reload failed ({why}): run it, then 'systemctl restart {unit}'"
    # Not restarted here: that stops the models a user is running; the administrator chooses when.
    return f"systemd reloaded; 'systemctl restart {unit}' makes the running service take it"


def record(target: Target, config: ConfigSource, action: str, application: str) -> int:
    """kfdguard-remedy@ACTION-APPLICATION.service: carry out, log, and leave the result for the service."""
    from kfdguard.app import runstate

    outcome = carry_out(target, config, action, application)
    log.emit(log.NOTICE if outcome.ok else log.WARNING, f"remedy {action} {application}: {outcome.message}")
    code = 0 if outcome.ok else 1
    rec = runstate.RunRecord(
        kind=f"remedy-{action}",
        ok=outcome.ok,
        state="",
        message=outcome.message,
        changes=(f"changed: {outcome.message}",) if outcome.changed else (),
        exit_code=code,
        stamp=runstate.now(),
    )
    runstate.write(target.root, rec)
    return code


__all__ = ["Outcome", "carry_out", "plan", "record"]
