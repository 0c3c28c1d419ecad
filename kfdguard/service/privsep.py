"""The resident service's side of privilege separation (issue 21).

With ``--starter``, the service acts on nothing itself: its checks are read-only (the Service is
built with ``enforce=False``), and what needs privilege goes to a oneshot through the starter.
This module holds what the service knows of those runs:

- at start, the record kfdguard-enforce.service left from the boot pass;
- for a check whose trigger asks for repairs (Reload, SIGHUP), a run of kfdguard-enforce.service
  first, then the read-only look at what it left;
- for ApplyFallback/ClearFallback, a run of kfdguard-fallback@apply/clear.service;
- for ApplyRemedy/ClearRemedy, a run of kfdguard-remedy@ACTION-APPLICATION.service;
- the problems the last enforce run met (a write that failed...), and a run that left no record,
  as findings on the published status.

A record counts only when it finished after the request (``runstate`` stamps are
CLOCK_MONOTONIC); an older one means the run did not get as far as writing it.
"""

from __future__ import annotations

import errno

from kfdguard import log
from kfdguard.app import runstate
from kfdguard.host.system import KfdIoctlError, System
from kfdguard.record import replace
from kfdguard.verdict import Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Sequence

    from kfdguard.access import NodeStat
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root
    from kfdguard.host.runner import RunResult
    from kfdguard.service.starter import ChildStarter, SystemdStarter
    from kfdguard.verdict import Status

# kfdguard-enforce.service's TimeoutStartSec is 60 s; a little longer, so that systemd's own end
# of the job (JobRemoved "timeout") is what the service reports.
RUN_TIMEOUT = 75.0
NO_RECORD = "enforce-not-run"
RUN_FAILED = "enforce-run-failed"


class Privsep:
    """Built before READY (no asyncio yet: tests/service/test_boot_path.py); the loop gives it its starter."""

    def __init__(self, starter_kind: str, root: Root, timeout: float = RUN_TIMEOUT) -> None:
        self.starter_kind = starter_kind  # "systemd" or "child": the command line's choice
        self.starter: ChildStarter | SystemdStarter | None = None
        self.root = root
        self.timeout = timeout
        self.lock: asyncio.Lock | None = None  # made in the loop: one oneshot run at a time
        self.record: runstate.RunRecord | None = None
        self.problem: str | None = None  # why there is no usable record of the last enforce run

    def load(self) -> None:
        """The record the boot pass left (blocking: a small file; before the loop)."""
        try:
            self.record, self.problem = runstate.read(self.root, "enforce"), None
        except runstate.RunStateError as exc:
            self.record, self.problem = None, f"kfdguard-enforce.service has left no usable result: {exc}"
            log.warning(self.problem)

    async def check_last_run(self) -> bool:
        """Once connected: whether systemd ran kfdguard-enforce.service's last start, as this start asked.

        This unit Wants= the pass, which does not hold it back when the pass cannot start: past the pass's
        start limit (ten a minute) systemd refuses it, this service starts anyway, and the record read at
        start is an earlier run's. True when that became a problem to publish."""
        if self.starter is None:
            return False
        result = await self.starter.last_result("enforce", 5.0)
        if result in (None, "success"):
            return False
        if result == "start-limit-hit":
            why = (
                "did not run for this start: systemd refused to start it (its start limit, ten starts a minute, was "
                "reached: a reload runs it once that minute is over, or at once after 'systemctl reset-failed "
                "kfdguard-enforce.service')"
            )
        else:  # it ran and failed (exit-code, signal, timeout, ...): the bus's word, bounded
            why = f"did not complete for this start: systemd's result is {result[:40]!r}"
        shown = "an earlier run's" if self.record is not None else "none"
        self.problem = f"kfdguard-enforce.service {why}; the result shown is {shown}"
        log.warning(self.problem)
        return True

    async def _run(self, kind: str, record_kind: str | None = None) -> tuple[runstate.RunRecord | None, str]:
        """Run one oneshot (``kind``: a starter.UNITS key); its record (of ``record_kind``, by default the
        same), or None and why not."""
        import asyncio

        if self.starter is None:
            return None, "no starter (the service is not connected to the bus yet)"
        if self.lock is None:
            self.lock = asyncio.Lock()
        async with self.lock:
            asked = runstate.now()
            started = await self.starter.start(kind, self.timeout)
            loop = asyncio.get_running_loop()
            try:
                record = await loop.run_in_executor(None, runstate.read, self.root, record_kind or kind)
            except runstate.RunStateError as exc:
                return None, f"{started.detail}; {exc}"
            if record.stamp < asked:
                return None, f"{started.detail}; it left no result of this run (only an earlier one)"
            return record, started.detail

    async def enforce(self, reason: str) -> None:
        """Run kfdguard-enforce.service for a check that asks for repairs; keep what it says."""
        log.info(f"starting kfdguard-enforce.service ({reason})")
        record, detail = await self._run("enforce")
        if record is None:
            self.problem = f"kfdguard-enforce.service ({reason}) did not complete: {detail}"
            log.warning(self.problem)
            return
        self.record, self.problem = record, None
        log.info(f"kfdguard-enforce.service ({reason}): {detail}; {record.state}: {record.message}")

    async def fallback(self, clear: bool) -> tuple[bool, str]:
        kind = "fallback-clear" if clear else "fallback-apply"
        record, detail = await self._run(kind)
        if record is None:
            message = f"kfdguard-fallback@{kind.removeprefix('fallback-')}.service did not complete: {detail}"
            log.warning(message)
            return False, message
        log.emit(log.NOTICE if record.ok else log.WARNING, f"{kind.replace('-', ' ')}: {record.message}")
        return record.ok, record.message

    async def remedy(self, action: str, application: str) -> tuple[bool, str]:
        """kfdguard-remedy@ACTION-APPLICATION.service: write or remove the application's drop-in."""
        from kfdguard.userspace.dropin import instance

        name = instance(action, application)
        record, detail = await self._run(f"remedy-{name}", f"remedy-{action}")
        if record is None:
            message = f"kfdguard-remedy@{name}.service did not complete: {detail}"
            log.warning(message)
            return False, message
        log.emit(log.NOTICE if record.ok else log.WARNING, f"remedy {action} {application}: {record.message}")
        return record.ok, record.message

    def annotate(self, status: Status) -> Status:
        """The status with the last enforce run's own problems, or the lack of a run, as findings."""
        own = (NO_RECORD, RUN_FAILED)
        findings = [f for f in status.findings if f[0] not in own]
        if self.problem is not None:
            remedy = "see 'journalctl -u kfdguard-enforce.service'; 'systemctl reload kfdguard' runs it again"
            findings.append((RUN_FAILED if self.record else NO_RECORD, str(Severity.WARNING), self.problem, remedy))
        if self.record is not None:
            known = {f[0] for f in findings}
            findings += [f for f in self.record.findings if f[0] not in known]
        merged = tuple(findings)
        return status if merged == status.findings else replace(status, findings=merged)


class UnprivilegedSystem(System):
    """The machine as the unprivileged service sees it: the real System's answers, except KFD's version.

    Opening /dev/kfd needs the compute group (root:render 0660), which the service does not have and
    must not (it would be a compute user); its unit's DevicePolicy=closed refuses the open too. Root
    asked the ioctl in kfdguard-enforce.service this boot: the record's answer is replayed, its
    failure with its errno. Without a record that says, the open is "denied" (EPERM), which assess
    reads as KFD answering through sysfs only (kfd-ioctl-denied, info), not as a broken KFD.
    Nothing here writes: the service acts through the oneshots only.
    """

    def __init__(self, inner: System, privsep: Privsep) -> None:
        self.inner = inner
        self.privsep = privsep
        self.root = inner.root
        self.provenance = inner.provenance

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        record = self.privsep.record
        if record is not None and record.kfd_version:
            version = runstate.version_tuple(record.kfd_version)
            assert version is not None
            return version
        if record is not None and record.kfd_error:
            raise KfdIoctlError("open (kfdguard-enforce.service)", record.kfd_errno, record.kfd_error)
        raise KfdIoctlError("open", errno.EPERM, "the unprivileged service does not open /dev/kfd, and "
                            "kfdguard-enforce.service has not read its version this boot")  # fmt: skip

    def stat_node(self, path: HostPath) -> NodeStat | None:
        return self.inner.stat_node(path)

    def read_kmsg(self) -> list[str]:
        return self.inner.read_kmsg()

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        return self.inner.read_journal(boots)

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        return self.inner.run(argv, timeout=timeout)

    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        raise PermissionError(errno.EPERM, "the unprivileged service changes no device node")


__all__ = ["RUN_TIMEOUT", "Privsep", "UnprivilegedSystem"]
