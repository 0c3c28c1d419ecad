"""Writing the fleet files: the one place where the service touches them.

``write`` renders the enabled outputs and replaces each file atomically
(``files.atomic_write``: same-directory temporary, fsync, rename), so
node_exporter and nfd-worker never read half a file. On an installed system the
file replaced is ``DIR/.kfdguard/NAME``, which ``DIR/NAME`` links to
(``fleet/prepare.py``: the service's user may not write the readers' directories). A file is written only
where its directory exists: the directory belongs to the tool that reads it
(prometheus-node-exporter's package, NFD's hostPath mount), and a missing one
means that tool is not here. Failures are returned, never raised: a full disk
or a read-only /etc must not stop the service.
"""

from __future__ import annotations

import errno
import os

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio

    from kfdguard.config import FleetConfig
    from kfdguard.facts import Facts
    from kfdguard.health.tracker import GpuHealth
    from kfdguard.host.root import Root
    from kfdguard.service.core import Service
    from kfdguard.verdict import Status, Verdict

# The service rewrites the files on every state change and at least every REFRESH
# seconds; the NFD labels lapse NFD_TTL after the last write. Three periods: one missed
# timer (a suspended machine, a busy boot) does not drop a node's labels, a dead
# service does within a quarter of an hour.
REFRESH = 300.0
NFD_TTL = 3 * REFRESH
MODE = 0o644  # both readers run as other users (prometheus, nfd-worker in its container)


@dataclass(frozen=True, slots=True)
class Written:
    output: str  # "textfile", "nfd" or "cdi"
    path: str  # as shown on the machine
    status: str  # "written", "removed" (kfdguard's CDI spec, nothing to offer), "skipped" or "failed"
    detail: str = ""


def write(
    root: Root,
    paths: FleetConfig,
    verdict: Verdict,
    facts: Facts,
    now: float,
    checked: float | None = None,
    health: dict[str, GpuHealth] | None = None,
) -> list[Written]:
    """Write every enabled fleet output at ``now`` for the check made at ``checked`` (default: now).

    One result per enabled output. The NFD expiry counts from ``now`` (the service is alive
    now); the textfile's last-check time is ``checked`` (node_exporter's own
    node_textfile_mtime_seconds says when the file was last written).
    """
    from kfdguard.fleet import cdi, metrics, nfd

    wanted: list[tuple[str, str, str | None]] = []
    if paths.textfile:
        when = now if checked is None else checked
        wanted.append(("textfile", paths.textfile, metrics.render(verdict, facts, when, health=health)))
    if paths.nfd:
        wanted.append(("nfd", paths.nfd, nfd.render(verdict, now, NFD_TTL)))
    if paths.cdi:
        wanted.append(("cdi", paths.cdi, cdi.render_spec(verdict, facts)))
    return [_write_one(root, output, shown, text) for output, shown, text in wanted]


def _write_one(root: Root, output: str, shown: str, text: str | None) -> Written:
    """Write ``text`` to the file; None: nothing may be offered now (kfdguard's CDI spec without a GPU
    that computes), so a file written earlier is removed rather than left handing out broken nodes."""
    from kfdguard.fleet.prepare import STAGE, staged
    from kfdguard.host.files import atomic_write

    try:
        path = root.join(shown)
    except ValueError as exc:
        return Written(output, shown, "failed", str(exc))
    if not path.parent.is_dir():
        return Written(output, shown, "skipped", f"{os.path.dirname(shown)} does not exist")
    # The reader's directory is not the service's to write (it runs as the user kfdguard):
    # kfdguard-enforce.service gives it DIR/.kfdguard/ and links DIR/NAME there (fleet/prepare.py).
    # Without that stage (a test root, a directory the administrator opened) the file itself.
    stage = staged(path)
    if stage.parent.is_dir() and not stage.parent.is_symlink():
        path = stage
    if text is None:
        try:
            path.unlink()
        except FileNotFoundError:
            return Written(output, shown, "skipped", "nothing to offer: no AMD GPU can compute")
        except OSError as exc:
            return Written(output, shown, "failed", exc.strerror or str(exc))
        return Written(output, shown, "removed", "no AMD GPU can compute")
    try:
        atomic_write(path, text.encode("utf-8", errors="replace"), MODE)
    except PermissionError as exc:
        hint = f"; kfdguard-enforce.service prepares {os.path.dirname(shown)}/{STAGE} ('systemctl reload kfdguard')"
        return Written(output, shown, "failed", (exc.strerror or str(exc)) + (hint if path != stage else ""))
    except OSError as exc:
        why = exc.strerror or str(exc)
        if exc.errno == errno.EROFS:
            # ReadWritePaths= take a directory that exists when the service starts (docs/FLEET.md).
            why += f": {os.path.dirname(shown)} appeared after the service started ('systemctl restart kfdguard')"
        return Written(output, shown, "failed", why)
    return Written(output, shown, "written")


def _current(service: Service) -> tuple[Verdict, Facts, float | None] | None:
    """The verdict to publish, its facts and when it was checked: the last check's, or the
    service's error state without one."""
    from kfdguard.verdict import State, Verdict

    last = service.last
    status = service.status
    # Status.last_check is in microseconds since the epoch; 0 when no check made it.
    checked = status.last_check / 1e6 if status.last_check else None
    if last is not None and str(last.verdict.state) == status.state:
        return last.verdict, last.facts, checked
    if last is not None and str(last.verdict.state) == service.base.state:
        # Live health changed the state since the check (a GPU resetting): publish the check's
        # GPUs with the state and readiness the service shows now.
        from kfdguard.record import replace

        gpus = tuple(g if _computing(status, g.slot) else replace(g, compute_ready=False) for g in last.verdict.gpus)
        shown = replace(last.verdict, state=State(status.state), ready=status.ready, gpus=gpus)
        return shown, last.facts, checked
    if last is None or status.state == "starting":
        return None  # nothing checked yet: keep what the previous run wrote until it expires
    try:
        state = State(status.state)
    except ValueError:
        state = State.ERROR
    return Verdict(state, status.ready, status.summary, (), ()), last.facts, checked


def publish(service: Service, now: float) -> list[Written]:
    """Write the fleet files for the service's current state (blocking: run it off the event loop)."""
    current = _current(service)
    if current is None:
        return []
    verdict, facts, checked = current
    health = service.health.counts()
    return write(service.system.root, service.loaded.config.fleet, verdict, facts, now, checked, health)


def _computing(status: Status, slot: str) -> bool:
    return any(d.get("Slot") == slot and bool(d.get("ComputeReady")) for d in status.devices)


async def serve(service: Service, interval: float = REFRESH) -> None:
    """The service's hook: the fleet files after every state change and every ``interval`` seconds.

    The timer keeps the NFD expiry moving while the service lives; a dead or hung
    loop stops it, and the labels lapse NFD_TTL later.
    """
    import asyncio
    import contextlib

    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    # Transitions happen on the loop and, during the boot pass, before it: either way a flag.
    def wake(_old: object, _new: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody to wake
            loop.call_soon_threadsafe(changed.set)

    service.listeners.append(wake)
    try:
        await _publish_forever(service, changed, interval)
    finally:
        service.listeners.remove(wake)


async def _publish_forever(service: Service, changed: asyncio.Event, interval: float) -> None:
    import asyncio
    import contextlib
    import time

    from kfdguard import log

    loop = asyncio.get_running_loop()
    reported: dict[str, str] = {}
    while True:
        changed.clear()
        try:
            results = await loop.run_in_executor(None, publish, service, time.time())
        except Exception as exc:  # a fleet file must never take the service down
            results = [Written("fleet", "", "failed", f"{type(exc).__name__}: {exc}")]
        for r in results:
            # One log line per change of outcome, not one every interval.
            outcome = f"{r.status}: {r.detail}"
            if reported.get(r.output) != outcome and r.status == "failed":
                log.warning(f"fleet: cannot write {r.path or r.output}: {r.detail}")
            reported[r.output] = outcome
        with contextlib.suppress(TimeoutError):  # the timer: rewrite even when nothing changed
            await asyncio.wait_for(changed.wait(), interval)
