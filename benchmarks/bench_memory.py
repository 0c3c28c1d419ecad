"""Memory: the service's resident set when idle, after 100k calls, and after 100k more.

Baseline in the same run: benchmarks.baresvc (the bare D-Bus library holding
one copy of the same reply) — the floor of any Python service on that
library. No growth means the second 100k calls leave RSS where the first
left it (allocator noise aside).
"""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.bench_dbus import _wait_bare
from benchmarks.common import Result, bus, machine, rss_kib, scratch, service
from benchmarks.load import spawn
from tools.launch import NAME

IDLE_GOAL_MB = 30.0
GROWTH_GOAL_MB = 1.0
PROCESSES, CONNECTIONS, CALLS = 5, 10, 2000  # 100,000 calls per round


def main() -> list[Result]:
    with scratch() as d, bus(d / "bus") as private:
        root = machine("rx7900xtx-ubuntu2404", d / "machine")
        with service(root, private, d) as launched:
            pid = launched.proc.pid
            time.sleep(1.0)  # the history and fallback work after READY settles
            idle = rss_kib(pid)
            first = spawn(private.address, NAME, PROCESSES, CONNECTIONS, calls=CALLS)
            after_first = rss_kib(pid)
            second = spawn(private.address, NAME, PROCESSES, CONNECTIONS, calls=CALLS)
            after_second = rss_kib(pid)
            bare = subprocess.Popen([sys.executable, "-m", "benchmarks.baresvc", "--bus", private.address,
                                     "--fifo", str(d / "bare.fifo")])  # fmt: skip
            try:
                _wait_bare(private.env(), bare)
                time.sleep(0.5)
                bare_idle = rss_kib(bare.pid)
            finally:
                bare.terminate()
                bare.wait(10)
    calls = first["calls"] + second["calls"]
    errors = first["errors"] + second["errors"]
    growth = (after_second - after_first) / 1024
    return [
        Result(
            "memory: idle RSS of the service (dbus-fast)",
            f"{idle / 1024:.1f} MB",
            f"bare dbus-fast service: {bare_idle / 1024:.1f} MB",
            f"{idle / bare_idle:.2f}x",
            f"<= {IDLE_GOAL_MB:g} MB",
            idle / 1024 <= IDLE_GOAL_MB,
        ),
        Result(
            "memory: RSS after 100k and 200k GetStatus calls",
            f"{after_first / 1024:.1f} MB, then {after_second / 1024:.1f} MB ({growth:+.2f} MB; {calls:.0f} calls, "
            f"{errors:.0f} errors)",
            f"idle {idle / 1024:.1f} MB",
            f"{after_second / idle:.2f}x idle",
            f"no growth from the first 100k to the second (< {GROWTH_GOAL_MB:g} MB), no errors",
            growth < GROWTH_GOAL_MB and errors == 0,
        ),
    ]


if __name__ == "__main__":
    for r in main():
        print(r)
