"""GetStatus over the bus: round-trip latency and throughput with 50 clients, both D-Bus backends.

Baseline in the same run: benchmarks.baresvc, the same library answering the
same reply body from a raw message handler on the same bus — what any
service built on that library pays. The client is dbus-fast in every case.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from benchmarks.baresvc import BENCH_NAME
from benchmarks.common import Result, bus, machine, percentile, scratch, service
from benchmarks.load import latencies, spawn
from tools.launch import NAME

CALLS = 5000
CLIENTS = 50
PROCESSES = 5  # client processes, CLIENTS / PROCESSES connections each
SECONDS = 3.0
P50_RATIO_GOAL = 1.5
P99_GOAL_MS = 5.0
THROUGHPUT_GOAL = 2000


def _wait_bare(env: dict[str, str], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while subprocess.run(["busctl", "--system", "status", BENCH_NAME], env=env, capture_output=True,
                         check=False).returncode:  # fmt: skip
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the bare baseline service did not start")
        time.sleep(0.05)


def measure(backend: str) -> list[Result]:
    library = {"fast": "dbus-fast", "next": "dbus-next"}[backend]
    with scratch() as d, bus(d / "bus") as private:
        root = machine("rx7900xtx-ubuntu2404", d / "machine")
        with service(root, private, d, backend=backend):
            bare = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.baresvc", "--bus", private.address, "--backend", backend,
                 "--fifo", str(d / "bare.fifo")],
            )  # fmt: skip
            try:
                _wait_bare(private.env(), bare)
                base = asyncio.run(latencies(private.address, BENCH_NAME, CALLS))
                ours = asyncio.run(latencies(private.address, NAME, CALLS))
                base_load = spawn(private.address, BENCH_NAME, PROCESSES, CLIENTS // PROCESSES, seconds=SECONDS)
                our_load = spawn(private.address, NAME, PROCESSES, CLIENTS // PROCESSES, seconds=SECONDS)
            finally:
                bare.terminate()
                bare.wait(10)
    p50, p99 = percentile(ours, 50) * 1e3, percentile(ours, 99) * 1e3
    b50, b99 = percentile(base, 50) * 1e3, percentile(base, 99) * 1e3
    rate = our_load["calls"] / our_load["seconds"]
    base_rate = base_load["calls"] / base_load["seconds"]
    return [
        Result(
            f"GetStatus round trip, service on {library}",
            f"p50 {p50:.3f} ms, p99 {p99:.3f} ms ({CALLS} sequential calls)",
            f"bare {library}: p50 {b50:.3f} ms, p99 {b99:.3f} ms",
            f"p50 {p50 / b50:.2f}x, p99 {p99 / b99:.2f}x",
            f"p50 <= {P50_RATIO_GOAL}x bare, p99 <= {P99_GOAL_MS:g} ms",
            p50 / b50 <= P50_RATIO_GOAL and p99 <= P99_GOAL_MS,
        ),
        Result(
            f"GetStatus throughput, {CLIENTS} clients, service on {library}",
            f"{rate:,.0f} calls/s ({our_load['calls']:.0f} calls, {our_load['errors']:.0f} errors)",
            f"bare {library}: {base_rate:,.0f} calls/s",
            f"{rate / base_rate:.2f}x",
            f">= {THROUGHPUT_GOAL:,} calls/s, no errors",
            rate >= THROUGHPUT_GOAL and our_load["errors"] == 0,
            note=f"{PROCESSES} client processes x {CLIENTS // PROCESSES} connections, {SECONDS:g} s",
        ),
    ]


def main() -> list[Result]:
    return measure("fast") + measure("next")


if __name__ == "__main__":
    for r in main():
        print(r)
