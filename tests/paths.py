"""Where things are, for tests at any depth under tests/."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TOP = TESTS.parent  # the checkout


@functools.cache
def unreachable_by(uid: int) -> str:
    """Why a process of ``uid`` cannot run this checkout's interpreter on its code, or "" when it can. A
    checkout under a 0700 directory (``mktemp -d``) is reachable by root alone: tests that run a client
    of the checkout as another user skip with this reason, as nothing they assert could run there."""
    setpriv = shutil.which("setpriv") or "setpriv"
    argv = [
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        sys.executable,
        "-c",
        "import kfdguard, tools",
    ]
    reach = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=str(TOP))
    if reach.returncode == 0:
        return ""
    return f"uid {uid} cannot reach this checkout or its interpreter (a 0700 directory above {TOP}?)"
