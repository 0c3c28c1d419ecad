"""``kfdguard snapshot``: what kfdguard read on a machine, as a bundle that replays as that machine.

A bug report becomes a machine: ``kfdguard snapshot DIR`` runs one probe
pass through a recording Reader and System and writes what they saw
(``bundle.py`` has the layout); ``kfdguard check --root DIR`` and
``kfdguard diagnose DIR`` replay it through ``replay.ReplaySystem``, so the
verdict is the one the machine itself gave. Redaction is in ``redact.py``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath

# The package itself holds only what tells a bundle from a machine root: every
# target directory is asked that (app/targets.py), on the service's boot path
# too, so the rest (recording, writing, replaying) is imported where it is used.
MANIFEST = ".kfdguard-snapshot.json"


def is_bundle(path: HostPath) -> bool:
    # Present at all, not "a regular file": a manifest that is a link or a FIFO makes the
    # directory a broken bundle, to be refused, not a plain machine root to be probed.
    return os.path.lexists(path / MANIFEST)
