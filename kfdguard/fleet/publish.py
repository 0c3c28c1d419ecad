"""Writing the fleet files: the one place where the service touches them.

``write`` renders the enabled outputs and replaces each file atomically
(``files.atomic_write``: same-directory temporary, fsync, rename), so
node_exporter and nfd-worker never read half a file. A file is written only
where its directory exists: the directory belongs to the tool that reads it
(prometheus-node-exporter's package, NFD's hostPath mount), and a missing one
means that tool is not here. Failures are returned, never raised: a full disk
or a read-only /etc must not stop the service.
"""

from __future__ import annotations

import os

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.config import FleetConfig
    from kfdguard.facts import Facts
    from kfdguard.root import Root
    from kfdguard.verdict import Verdict

# The service rewrites the files on every state change and at least every REFRESH
# seconds; the NFD labels lapse NFD_TTL after the last write. Three periods: one missed
# timer (a suspended machine, a busy boot) does not drop a node's labels, a dead
# service does within a quarter of an hour.
REFRESH = 300.0
NFD_TTL = 3 * REFRESH
MODE = 0o644  # both readers run as other users (prometheus, nfd-worker in its container)


@dataclass(frozen=True, slots=True)
class Written:
    output: str  # "textfile" or "nfd"
    path: str  # as shown on the machine
    status: str  # "written", "skipped" (its directory does not exist) or "failed"
    detail: str = ""


def write(root: Root, paths: FleetConfig, verdict: Verdict, facts: Facts, now: float) -> list[Written]:
    """Write every enabled fleet output for the check at ``now``; one result per enabled output."""
    from kfdguard.fleet import metrics, nfd

    wanted: list[tuple[str, str, str]] = []
    if paths.textfile:
        wanted.append(("textfile", paths.textfile, metrics.render(verdict, facts, now)))
    if paths.nfd:
        wanted.append(("nfd", paths.nfd, nfd.render(verdict, now, NFD_TTL)))
    return [_write_one(root, output, shown, text) for output, shown, text in wanted]


def _write_one(root: Root, output: str, shown: str, text: str) -> Written:
    from kfdguard.files import atomic_write

    try:
        path = root.join(shown)
    except ValueError as exc:
        return Written(output, shown, "failed", str(exc))
    if not path.parent.is_dir():
        return Written(output, shown, "skipped", f"{os.path.dirname(shown)} does not exist")
    try:
        atomic_write(path, text.encode("utf-8", errors="replace"), MODE)
    except OSError as exc:
        return Written(output, shown, "failed", exc.strerror or str(exc))
    return Written(output, shown, "written")
