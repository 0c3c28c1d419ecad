"""The one probe → assess → enforce → re-probe sequence.

Every check goes through ``check(system, config, trigger)``: the boot pass, a
device event, SIGHUP, Reload over D-Bus and the ``check``/``enforce``/
``diagnose`` commands. The trigger's row (``triggers.POLICIES``) says whether
the configuration is read again and whether the plan is carried out; the
caller can only narrow that (``may_repair=False``: ``kfdguard check``, the
service's ``--no-enforce``).
"""

from __future__ import annotations

from kfdguard.app.triggers import Trigger, policy
from kfdguard.config import LoadedConfig, load_config
from kfdguard.host import files
from kfdguard.record import dataclass
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.config import Config, ConfigError
    from kfdguard.enforce import Enforcer, EnforceReport
    from kfdguard.facts import Facts
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root
    from kfdguard.host.system import System
    from kfdguard.verdict import Verdict

LOCK_TIMEOUT = 30.0


class ConfigSource:
    """Where the configuration comes from, and the one loaded last."""

    def __init__(
        self,
        path: HostPath | None,
        shown: str,
        cache: HostPath | None = None,
        loaded: LoadedConfig | None = None,
        *,
        root: Root | None = None,
    ) -> None:
        self.path = path
        self.shown = shown
        self.cache = cache
        self.root = root  # the machine the file belongs to: read beneath it (config.load_config)
        self.loaded = loaded if loaded is not None else self.reload()

    @classmethod
    def fixed(cls, config: Config, errors: tuple[ConfigError, ...] = ()) -> ConfigSource:
        """A configuration given as a value (tests, callers that loaded it themselves): reloading keeps it."""
        return cls(None, "(given)", loaded=LoadedConfig(config, errors, "given"))

    def reload(self) -> LoadedConfig:
        if self.path is not None:
            self.loaded = load_config(self.path, self.shown, self.cache, root=self.root)
        return self.loaded


@dataclass(frozen=True)
class Outcome:
    """What one pass saw and did."""

    trigger: Trigger
    loaded: LoadedConfig
    facts: Facts  # the last look (after any change)
    before: Verdict  # the first look's verdict
    verdict: Verdict  # the last look's verdict
    report: EnforceReport | None  # None when nothing was carried out

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The verdict's findings and the problems met while repairing, in one order."""
        if self.report is None or not self.report.findings:
            return self.verdict.findings
        return tuple(sorted((*self.verdict.findings, *self.report.findings), key=lambda f: f.key()))


def check(
    system: System,
    config: ConfigSource,
    trigger: Trigger,
    *,
    may_repair: bool = True,
    dry_run: bool = False,
    log: str = "needed",
    previous_boots: int = 0,
) -> Outcome:
    """Probe, assess, and (when the trigger asks and the caller allows) act and look again."""
    from kfdguard.assess import assess
    from kfdguard.probe import probe

    wanted = policy(trigger)
    loaded = config.reload() if wanted.reload else config.loaded
    settings = loaded.config

    def look() -> tuple[Facts, Verdict]:
        facts = probe(system, log=log, log_sources=settings.log.sources, previous_boots=previous_boots)
        return facts, assess(facts, settings, loaded.errors)

    if not (wanted.repair and may_repair) and not dry_run:
        facts, before = look()
        return Outcome(trigger, loaded, facts, before, before, None)
    from kfdguard.enforce import Enforcer

    enforcer = Enforcer(system, settings, dry_run=dry_run)
    if dry_run:
        return _repair(enforcer, trigger, loaded, *look())
    try:
        # The first look is taken under the lock too: a second run must plan from what the first left.
        # In the state directory, which only root writes: /run/kfdguard is group-writable for the
        # resident service (its ready marker), which could create the lock there and hold it.
        with files.locked(system.root.var_lib / "kfdguard/enforce.lock", LOCK_TIMEOUT):
            for directory in (system.root.etc / "modprobe.d", system.root.etc / "udev/rules.d"):
                files.remove_stale_temporaries(directory)
            return _repair(enforcer, trigger, loaded, *look())
    except (TimeoutError, files.LockError) as exc:
        from kfdguard.enforce import EnforceReport

        facts = probe(system, log="never")
        before = assess(facts, settings, loaded.errors)
        remedy = (
            "free space in, or fix, /var/lib/kfdguard (the state directory)"
            if isinstance(exc, files.LockError)
            else "wait for the other run to finish"
        )
        busy = Finding("enforce-busy", Severity.WARNING, str(exc), remedy, (str(exc),))
        return Outcome(trigger, loaded, facts, before, before, EnforceReport((), (busy,), dry_run))


def _repair(enforcer: Enforcer, trigger: Trigger, loaded: LoadedConfig, facts: Facts, before: Verdict) -> Outcome:
    from kfdguard.assess import assess
    from kfdguard.enforce import EnforceReport
    from kfdguard.probe import probe

    system, settings, errors = enforcer.system, loaded.config, loaded.errors
    enforcer.run(before.plan, facts)
    if enforcer.loaded_a_module:
        enforcer.wait_for_kfd()
        # New nodes exist now: plan their permissions from a fresh look.
        fresh = assess(probe(system, log="never"), settings, errors)
        enforcer.run(tuple(a for a in fresh.plan if a.kind in ("fix-node", "add-to-group")), facts)
    if enforcer.dry_run or enforcer.touched:
        after_facts = probe(system, log="needed", log_sources=settings.log.sources)
        after = assess(after_facts, settings, errors)
    else:
        # Nothing was touched: a second look would see what the first saw (the usual boot).
        after_facts, after = facts, before
    if not enforcer.dry_run:
        enforcer.note_initramfs(after_facts)
    report = EnforceReport(tuple(enforcer.changes), tuple(enforcer.findings), enforcer.dry_run)
    return Outcome(trigger, loaded, after_facts, before, after, report)


def enforce(
    system: System, config: Config, *, dry_run: bool = False, config_errors: tuple[ConfigError, ...] = ()
) -> tuple[EnforceReport, Verdict, Verdict]:
    """``kfdguard enforce`` as a function: the report and the verdicts before and after."""
    from kfdguard.enforce import EnforceReport

    outcome = check(system, ConfigSource.fixed(config, config_errors), Trigger.CLI, dry_run=dry_run)
    report = outcome.report if outcome.report is not None else EnforceReport((), (), dry_run)
    return report, outcome.before, outcome.verdict


__all__ = ["ConfigSource", "Outcome", "check", "enforce"]
