"""What the command line and the D-Bus adapter both ask for, written once.

Each function is blocking and takes the machine (``System``) and the
configuration; the adapters only translate arguments and results.
"""

from __future__ import annotations

from kfdguard.app import pipeline
from kfdguard.app.triggers import Trigger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.access import NodeStat
    from kfdguard.app.pipeline import ConfigSource, Outcome
    from kfdguard.facts import Facts
    from kfdguard.fallback.apply import Outcome as FallbackOutcome
    from kfdguard.host.system import System


def reload(system: System, config: ConfigSource, trigger: Trigger, *, may_repair: bool = True) -> Outcome:
    """Re-read the configuration and check with repairs (SIGHUP, Reload, kfdguard reload through the service)."""
    return pipeline.check(system, config, trigger, may_repair=may_repair)


def diagnose(system: System, config: ConfigSource, previous_boots: int | None = None) -> Outcome:
    """A full look, the kernel log of this boot and earlier ones included; never acts."""
    boots = config.loaded.config.log.previous_boots if previous_boots is None else previous_boots
    return pipeline.check(system, config, Trigger.DIAGNOSE, log="always", previous_boots=max(0, boots))


def fallback_apply(
    system: System, config: ConfigSource, *, pin: bool, look: Outcome | None = None
) -> tuple[Facts, FallbackOutcome | None, str]:
    """Arrange the recommended kernel for the next boot (``pin``: from now on); None when nothing is recommended.

    ``look``: a check the caller has just shown, so that what is arranged is what was shown.
    """
    from kfdguard.fallback.apply import arrange

    outcome = look or pipeline.check(system, config, Trigger.CLI, may_repair=False, log="needed")
    rec = outcome.verdict.fallback
    if rec is None:
        return outcome.facts, None, "no recommendation"
    result, _ = arrange(system, outcome.facts, rec, "pin" if pin else "oneshot")
    return outcome.facts, result, result.message


def fallback_clear(system: System) -> FallbackOutcome:
    """Undo a one-shot or pinned fallback."""
    from kfdguard.fallback.apply import clear
    from kfdguard.probe import probe

    result, _ = clear(system, probe(system, log="never"))
    return result


def access(
    system: System,
    uid: int,
    session_gids: frozenset[int] | None,
    nodes: tuple[tuple[str, NodeStat], ...],
    *,
    ready: bool,
    summary: str,
    state: str,
) -> tuple[bool, str]:
    """Can this user open /dev/kfd and the render nodes of the GPUs now, and if not, why."""
    from kfdguard.access import explain_caller
    from kfdguard.parsers.accounts import parse_group, parse_passwd
    from kfdguard.probe.reader import Reader

    reader = Reader(system.root)
    groups, _ = parse_group(reader.text(system.root.etc / "group") or "")
    users, _ = parse_passwd(reader.text(system.root.etc / "passwd") or "")
    user = next((u for u in users if u.uid == uid), None)
    name = user.name if user else str(uid)
    listed = frozenset({user.gid} if user else set()) | {g.gid for g in groups if name in g.members}
    if not nodes:
        return False, f"{summary} (state {state})"
    current = []
    for path, probed in nodes:
        try:
            node = system.stat_node(system.root.join(path)) or probed
        except OSError:
            node = probed
        current.append((path, node))
    gids = listed if session_gids is None else session_gids
    allowed, problems, fix = explain_caller(name, uid, gids, listed, current, {g.gid: g.name for g in groups})
    if not allowed:
        return False, f"{name} (uid {uid}) cannot open " + "; ".join(problems) + f". Fix: {fix}"
    paths = ", ".join(path for path, _ in current)
    tail = "" if ready else f"; but compute is not ready: {summary}"
    return ready, f"{name} (uid {uid}) can open {paths}{tail}"


__all__ = ["access", "diagnose", "fallback_apply", "fallback_clear", "reload"]
