"""The one subprocess runner: timeouts that really kill, a fixed environment, captured output."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kfdguard.host.runner import OUTPUT_LIMIT, Runner


def test_runs_with_c_locale_and_captures() -> None:
    result = Runner().run(["sh", "-c", 'echo "$LC_ALL:$PATH"; echo oops >&2; exit 3'], timeout=5)
    assert result.returncode == 3 and not result.ok
    assert result.stdout == "C:/usr/sbin:/usr/bin:/sbin:/bin\n"
    assert result.stderr == "oops\n"
    assert result.describe() == 'sh -c echo "$LC_ALL:$PATH"; echo oops >&2; exit 3: exit status 3: oops'


def test_hang_is_killed_at_timeout_with_its_children(tmp_path: os.PathLike[str]) -> None:
    marker = f"{tmp_path}/child.pid"
    start = time.monotonic()
    # The child ignores SIGTERM, so only the SIGKILL after the grace period stops it.
    script = f"trap '' TERM; sleep 600 & echo $! > {marker}; wait"
    result = Runner(kill_grace=0.3).run(["sh", "-c", script], timeout=0.5)
    elapsed = time.monotonic() - start
    assert result.timed_out and result.returncode is None and not result.ok
    assert elapsed < 5
    assert "killed after" in result.describe()
    child = int(Path(marker).read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("grandchild survived the timeout")


def test_missing_binary_is_reported_not_raised() -> None:
    result = Runner().run(["/nonexistent/modprobe", "amdgpu"], timeout=5)
    assert result.returncode is None and result.error and "No such file" in result.error
    assert result.describe().endswith("could not run: No such file or directory")


def test_output_is_capped() -> None:
    result = Runner().run(["sh", "-c", f"head -c {OUTPUT_LIMIT + 5000} /dev/zero"], timeout=10)
    assert result.ok and len(result.stdout) == OUTPUT_LIMIT


def test_timeout_is_mandatory() -> None:
    with pytest.raises(ValueError, match="timeout"):
        Runner().run(["true"], timeout=0)
    with pytest.raises(ValueError, match="empty"):
        Runner().run([], timeout=1)


def test_stdin_is_passed() -> None:
    assert Runner().run(["cat"], timeout=5, stdin="hello").stdout == "hello"
