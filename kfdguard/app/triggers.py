"""Why a check runs, and what that reason asks for: one table.

A trigger travels with its request. Requests that arrive while a check runs
are folded into one more check that keeps the strongest trigger, so a pending
SIGHUP (reload and repair) is never lost behind a device event (re-evaluate
only).
"""

from __future__ import annotations

from enum import StrEnum

from kfdguard.record import dataclass


class Trigger(StrEnum):
    BOOT = "boot"
    DEVICE_EVENT = "device-event"
    SIGHUP = "sighup"
    DBUS_RELOAD = "dbus-reload"
    CLI = "cli"
    DIAGNOSE = "diagnose"  # Diagnose over D-Bus, kfdguard diagnose: the whole kernel log, never acting
    RESUME = "resume"  # logind's PrepareForSleep(false): the machine woke up (service/sleep.py)
    REMEDY = "remedy"  # ApplyRemedy/ClearRemedy changed an application's service: its verdict follows


@dataclass(frozen=True)
class Policy:
    reload: bool  # re-read the configuration first
    repair: bool  # carry out the plan (when the service or command may act at all)

    def covers(self, other: Policy) -> bool:
        return (self.reload or not other.reload) and (self.repair or not other.repair)


POLICIES: dict[Trigger, Policy] = {
    Trigger.BOOT: Policy(reload=False, repair=True),
    # Repairing on every event would fight an administrator who unloads amdgpu or
    # changes a node on purpose: an event only re-evaluates.
    Trigger.DEVICE_EVENT: Policy(reload=False, repair=False),
    # systemctl reload and Reload over D-Bus are requests to act on the current file.
    Trigger.SIGHUP: Policy(reload=True, repair=True),
    Trigger.DBUS_RELOAD: Policy(reload=True, repair=True),
    # The command decides: 'check' is read-only (it caps repair), 'enforce' acts.
    Trigger.CLI: Policy(reload=False, repair=True),
    Trigger.DIAGNOSE: Policy(reload=False, repair=False),
    # After a resume the devices are back; re-evaluate like a device event.
    Trigger.RESUME: Policy(reload=False, repair=False),
    # A drop-in written or removed changes what an application sees, not the GPU: re-evaluate.
    Trigger.REMEDY: Policy(reload=False, repair=False),
}


def policy(trigger: Trigger) -> Policy:
    return POLICIES[trigger]


def fold(pending: Trigger | None, new: Trigger) -> Trigger:
    """The trigger of one check that stands for both requests: the one whose policy covers the other's."""
    if pending is None:
        return new
    if POLICIES[pending].covers(POLICIES[new]):
        return pending
    if POLICIES[new].covers(POLICIES[pending]):
        return new
    # The table keeps the policies in one order (tests/unit/app/test_app_pipeline.py checks it);
    # should a row ever break it, acting and reloading is the side that loses nothing.
    return Trigger.SIGHUP


__all__ = ["POLICIES", "Policy", "Trigger", "fold", "policy"]
