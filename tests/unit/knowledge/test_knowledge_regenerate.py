"""The committed knowledge data equals a fresh run of tools/knowledge/generate.py.

The generator reads ~1.3 GB of Debian packages: this test runs it only from a warm
cache (offline), or fetches when KFDGUARD_NETWORK_TESTS is set; otherwise it is
skipped and says why. A difference means the data was edited by hand or the
generator changed without regenerating. Both read the versions tools/knowledge/pins.tsv
names, so the archive moving on does not fail it (the generator prints what is newer).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import TOP

TREE = TOP
GENERATOR = TREE / "tools/knowledge/generate.py"
CACHE = Path(os.environ.get("KFDGUARD_KNOWLEDGE_CACHE", "/var/cache/kfdguard-testdata/knowledge"))


def _warm() -> bool:
    trees = CACHE / "trees"
    return (
        trees.is_dir() and any(p.name.startswith("source-") for p in trees.iterdir()) and (CACHE / "indices").is_dir()
    )


@pytest.mark.slow
def test_committed_data_matches_a_fresh_run() -> None:
    network = bool(os.environ.get("KFDGUARD_NETWORK_TESTS"))
    if not network and not _warm():
        pytest.skip(f"cold cache {CACHE} and KFDGUARD_NETWORK_TESTS unset: not downloading ~1.3 GB of Debian packages")
    argv = [sys.executable, str(GENERATOR), "--check", "--report", str(TREE / "docs/KNOWLEDGE.md")]
    # Offline: the cached packages. With the network: today's indices (--refresh), through which the
    # pinned .debs are fetched; a pin the archive no longer lists (and the cache lacks) is an error.
    argv.insert(2, "--refresh" if network else "--offline")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False, cwd=TREE)
    if result.returncode == 2 and not network:
        pytest.skip(f"cache incomplete: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
