"""A kill point for tests: stop this process when it renames a chosen file.

Python imports ``sitecustomize`` at start-up from the first directory on its
path that has one, so a test that puts this directory on PYTHONPATH and sets
KFDGUARD_STOP_AT=<file name>:before (or :after) gets a kfdguard process (the
CLI or the service, unchanged) that sends itself SIGSTOP right before, or
right after, ``os.rename`` puts a file of that name in place. The test waits
for the stop (waitpid with WUNTRACED), looks at the files, and kills the
process with SIGKILL: exactly the "kill -9 between write and rename" of a
real crash, without a hook in kfdguard's own code.
"""

from __future__ import annotations

import os
import signal
import threading

_WANTED = os.environ.get("KFDGUARD_STOP_AT", "")
if _WANTED:
    _NAME, _, _WHEN = _WANTED.partition(":")
    _rename = os.rename

    def _stop() -> None:
        # To this thread: kill(getpid()) may be taken by another thread (the service's
        # event loop), and this one would run on into the rename before the group stops.
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)

    def _stopping_rename(src: str, dst: str, *args: object, **kwargs: object) -> None:
        hit = os.path.basename(os.fspath(dst)) == _NAME
        if hit and _WHEN == "before":
            _stop()
        _rename(src, dst, *args, **kwargs)  # type: ignore[arg-type]
        if hit and _WHEN == "after":
            _stop()

    os.rename = _stopping_rename  # type: ignore[assignment]
