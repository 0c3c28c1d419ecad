"""What every benchmark shares: the result record, statistics, a private bus and a simulated machine."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.baresvc import BENCH_NAME
from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import MachineSpec
from tools.launch import Launched, launch, wait_name
from tools.privatebus import PrivateBus

# The bare baseline service owns its own name; the project's policy knows only kfdguard's.
BENCH_POLICY = (
    f'<policy user="root"><allow own="{BENCH_NAME}"/></policy>'
    f'<policy context="default"><allow send_destination="{BENCH_NAME}"/></policy>'
)


@dataclass(frozen=True)
class Result:
    name: str  # what was measured
    value: str  # the absolute figure, with its unit
    baseline: str  # what it is compared with, and that figure
    ratio: str  # value against baseline
    goal: str
    passed: bool
    note: str = ""  # how, or why it missed


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def best_of(runs: int, fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """The least time of ``runs`` calls, by ``clock`` (wall clock; time.process_time for CPU time)."""
    best = float("inf")
    for _ in range(runs):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


@contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kfdguard-bench-") as tmp:
        os.chmod(tmp, 0o755)  # unprivileged clients reach the bus socket inside
        yield Path(tmp)


def machine(which: str | MachineSpec, directory: Path) -> Path:
    spec = bundled.load(which) if isinstance(which, str) else which
    return Path(render(spec, directory).path)


@contextmanager
def bus(directory: Path) -> Iterator[PrivateBus]:
    directory.mkdir(parents=True, exist_ok=True)
    private = PrivateBus(directory, extra=BENCH_POLICY).start()
    try:
        yield private
    finally:
        private.stop()


@contextmanager
def service(
    root: Path, private: PrivateBus, directory: Path, *, backend: str = "fast", enforce: bool = False
) -> Iterator[Launched]:
    launched = launch(root, private.address, directory / f"notify-{time.monotonic_ns()}", backend=backend,
                      enforce=enforce, capture_stderr=False)  # fmt: skip
    try:
        launched.wait_ready(30)
        wait_name(private.env(), launched.proc)
        yield launched
    finally:
        launched.stop()
