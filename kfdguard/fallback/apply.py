"""Arranging (and undoing) a fallback through the boot loader's own tools.

GRUB: grub-reboot (next boot only), grub-set-default (pin), grub-editenv
(unset). grubenv is rewritten in place by those tools and never written here.
A one-shot needs GRUB to clear next_entry itself while booting, which it can
only do on a plain filesystem: on RAID, LVM, btrfs or ZFS the "one-shot" would
stay for good, so it is refused (findmnt tells). systemd-boot: bootctl
set-oneshot / set-default.

The attempt is written to the history before the boot loader is touched, so
that a crash in between can never lead to a loop.
"""

from __future__ import annotations

import json
import time

from kfdguard import log
from kfdguard.facts import Attempt, Facts, History
from kfdguard.fallback.policy import fingerprint, sdboot_target
from kfdguard.health.store import to_json
from kfdguard.host.files import remove_stale_temporaries
from kfdguard.host.root import VOLUME_DEVICES
from kfdguard.record import dataclass, replace
from kfdguard.verdict import Recommendation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.system import System

TOOL_TIMEOUT = 30.0
UNWRITABLE_FS = frozenset({"btrfs", "zfs", "xfs", "squashfs", "overlay", "nfs", "nfs4", "cifs", "tmpfs", "fuse"})


@dataclass(frozen=True)
class Outcome:
    ok: bool
    message: str
    commands: tuple[str, ...] = ()


def history_json(history: History) -> str:
    data = {
        "version": 1,
        "kernels": {
            rel: {
                "ok": r.ok,
                "failed": r.failed,
                "last": r.last,
                "last_seen": r.last_seen,
                "gpus": list(r.gpus),
                "boot_id": r.boot_id,
                # Additive (a reader from before ignores it): each boot with compute and its live GPU health.
                "boots": [{k: v for k, v in to_json(b).items() if k != "release"} for b in r.boots],
            }
            for rel, r in sorted(history.kernels.items())
        },
        "attempts": [
            {
                "from": a.source,
                "to": a.target,
                "entry": a.entry,
                "mode": a.mode,
                "boot_id": a.boot_id,
                "at": a.at,
                "installed": a.installed,
                "result": a.result,
            }
            for a in history.attempts[-50:]
        ],
        "pinned_from": history.pinned_from,
    }
    return json.dumps(data, indent=1) + "\n"


def save_history(system: System, history: History) -> None:
    path = system.root.var_lib / "kfdguard/history.json"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    # A writer killed between write and rename left its temporary here; the writers
    # of this file (the service, 'kfdguard fallback') share no lock, so only the dead one's.
    remove_stale_temporaries(path.parent, only_dead=True)
    system.write_file(path, history_json(history).encode(), 0o644)


def grub_env_writable(system: System) -> tuple[bool, str]:
    """Can GRUB itself write grubenv while booting (its save_env)?"""
    target = system.root.boot / "grub"
    result = system.run(["findmnt", "-no", "FSTYPE,SOURCE", "-T", str(target)], timeout=TOOL_TIMEOUT)
    if not result.ok or not result.stdout.strip():
        return False, f"cannot tell which filesystem holds /boot/grub ({result.describe()})"
    fstype, _, source = result.stdout.strip().partition(" ")
    source = source.strip()
    if fstype in UNWRITABLE_FS:
        return False, f"/boot/grub is on {fstype}, where GRUB cannot write its environment block"
    if source.startswith(VOLUME_DEVICES):
        return False, f"/boot/grub is on {source} (RAID or LVM), where GRUB cannot write its environment block"
    return True, f"/boot/grub is on {fstype} {source}"


def _grub_args(system: System) -> list[str]:
    return [] if system.root.is_host else [f"--boot-directory={system.root.boot}"]


def _refusal(system: System, facts: Facts, rec: Recommendation, mode: str) -> str | None:
    """Why the boot loader cannot do what is asked, or None."""
    kind = facts.bootloader.kind
    if kind == "systemd-boot":
        return None
    if kind != "grub":
        return "no supported boot loader (GRUB or systemd-boot) was found"
    if mode == "oneshot":
        writable, why = grub_env_writable(system)
        if not writable:
            return (
                f"refusing a one-shot boot: {why} (it would become permanent); "
                f"pick {rec.kernel} in GRUB's 'Advanced options' menu instead"
            )
    elif facts.bootloader.default is None or "saved_entry" not in facts.bootloader.default:
        return (
            "GRUB_DEFAULT is not 'saved', so grub-set-default would have no effect: set "
            "GRUB_DEFAULT=saved in /etc/default/grub and run update-grub first"
        )
    return None


def arrange(
    system: System, facts: Facts, rec: Recommendation, mode: str, now: str | None = None
) -> tuple[Outcome, History]:
    """Make the boot loader start rec.kernel: next boot only ("oneshot") or from now on ("pin")."""
    history = facts.history
    if rec.kernel is None or rec.entry is None:
        return Outcome(False, f"nothing to boot: {rec.reason}"), history
    refusal = _refusal(system, facts, rec, mode)
    if refusal is not None:
        return Outcome(False, refusal), history
    kind = facts.bootloader.kind
    stamp = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    attempt = Attempt(rec.running, rec.kernel, rec.entry, mode, facts.kernel.boot_id, stamp, fingerprint(facts.kernels))
    pinned_from = history.pinned_from
    if mode == "pin" and pinned_from is None:
        pinned_from = facts.bootloader.saved_entry or "0"
    history = replace(history, attempts=(*history.attempts, attempt), pinned_from=pinned_from)
    try:
        save_history(system, history)  # before the boot loader is touched
    except OSError as exc:
        return Outcome(False, f"not arranged: the history cannot be written ({exc.strerror or exc})"), facts.history
    if kind == "grub":
        tool = "grub-reboot" if mode == "oneshot" else "grub-set-default"
        argv = [tool, *_grub_args(system), rec.entry]
        note = ""
    else:
        # The history keeps the counter-less id (stable across boots); the boot loader gets the name
        # the installed systemd-boot matches, which for a counted entry depends on its version.
        target = sdboot_target(facts, rec.entry, persistent=mode == "pin")
        argv, note = ["bootctl", "set-oneshot" if mode == "oneshot" else "set-default", target.value], target.note
    result = system.run(argv, timeout=TOOL_TIMEOUT)
    if not result.ok:
        failed = replace(attempt, result="failed")
        history = replace(history, attempts=(*history.attempts[:-1], failed))
        save_history(system, history)
        return Outcome(False, f"{result.describe()}", (" ".join(argv),)), history
    when = "at the next boot only" if mode == "oneshot" else "from now on"
    named = f"; the boot loader was given {argv[-1]}: {note}" if note else ""
    return Outcome(
        True,
        f"{rec.kernel} will boot {when} ({rec.reason}); kfdguard does not reboot by itself{named}",
        (" ".join(argv),),
    ), history


def _undo(system: System, facts: Facts, history: History) -> list[tuple[list[str], bool]]:
    """The boot loader's commands that undo a one-shot and a pin, each with whether it must succeed."""
    kind, steps = facts.bootloader.kind, []
    if kind == "grub":
        if facts.bootloader.next_entry:
            steps.append((["grub-editenv", str(system.root.boot / "grub/grubenv"), "unset", "next_entry"], True))
        if history.pinned_from is not None:
            steps.append((["grub-set-default", *_grub_args(system), history.pinned_from], True))
    elif kind == "systemd-boot":
        if facts.bootloader.next_entry:
            steps.append((["bootctl", "set-oneshot", ""], True))
        if history.pinned_from is not None:
            steps.append((["bootctl", "set-default", history.pinned_from], False))
    return steps


def clear(system: System, facts: Facts) -> tuple[Outcome, History]:
    """Undo what kfdguard arranged: the pending one-shot, and a pin (back to the previous default)."""
    history = facts.history
    commands: list[str] = []
    pending = [a for a in history.attempts if a.result == "pending"]
    for argv, must_succeed in _undo(system, facts, history):
        result = system.run(argv, timeout=TOOL_TIMEOUT)
        commands.append(" ".join(argv))
        if must_succeed and not result.ok:
            return Outcome(False, result.describe(), tuple(commands)), history
    settled = tuple(replace(a, result="cleared") if a.result == "pending" else a for a in history.attempts)
    history = replace(history, attempts=settled, pinned_from=None)
    save_history(system, history)
    if not commands and not pending:
        return Outcome(True, "nothing was arranged"), history
    return Outcome(True, "the boot loader is back to its own default", tuple(commands)), history


def after_check(
    system: System, facts: Facts, ready: bool, rec: Recommendation, now: str | None = None
) -> tuple[History, Outcome | None, str]:
    """After a boot pass or re-check: record the result, settle earlier attempts, and
    act when the policy says so. Returns (history, outcome if it acted, why)."""
    from kfdguard.fallback.policy import auto_action, record_check

    stamp = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    history = record_check(facts.history, facts, ready, stamp)
    mode, why = auto_action(rec, history, facts.kernel.boot_id)
    if mode is None:
        try:
            save_history(system, history)
        except OSError as exc:
            why += f"; the history could not be written ({exc.strerror or exc})"
            shown = system.root.display(system.root.var_lib / "kfdguard/history.json")
            log.warning(f"fallback: {shown} could not be written: {exc.strerror or exc}")
            # The caller publishes it: a history that is not kept cannot prevent a fallback loop.
            history = replace(history, problem=f"{shown} could not be written: {exc.strerror or exc}")
        return history, None, why
    outcome, history = arrange(system, replace(facts, history=history), rec, mode, stamp)
    return history, outcome, why
