"""The boot critical path: process start to READY=1 on a healthy simulated machine.

Baseline in the same run: the same interpreter, with the same flags, doing
nothing (``python3 -I -c pass``) — the floor of any Python service. The unit
starts ``/usr/bin/python3 -I -m kfdguard.service``; bytecode is compiled
first, as the Debian package does at install time.
"""

from __future__ import annotations

import compileall
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import Result, bus, machine, median, scratch
from kfdguard.devtools.launch import launch

RUNS = 15
GOAL = 5.0
PACKAGE = Path(__file__).resolve().parent.parent / "kfdguard"


def interpreter_flags() -> tuple[str, ...]:
    """-I as in the unit, when kfdguard is importable that way (installed, or an editable install)."""
    probe = subprocess.run([sys.executable, "-I", "-c", "import kfdguard"], capture_output=True, check=False)
    return ("-I",) if probe.returncode == 0 else ()


def bare(flags: tuple[str, ...]) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, *flags, "-c", "pass"], check=True)
    return time.monotonic() - start


def main() -> list[Result]:
    compileall.compile_dir(str(PACKAGE), quiet=1)
    flags = interpreter_flags()
    with scratch() as d, bus(d / "bus") as private:
        root = machine("rx7900xtx-ubuntu2404", d / "machine")
        times: list[float] = []
        bases: list[float] = []
        for i in range(RUNS + 2):  # the first two warm the page cache
            bases.append(bare(flags))
            launched = launch(root, private.address, d / f"notify{i}", interpreter_flags=flags, capture_stderr=False)
            try:
                times.append(launched.wait_ready(30))
            finally:
                launched.stop()
    ours, base = median(times[2:]), median(bases[2:])
    return [
        Result(
            "boot critical path: process start to READY=1 (healthy RX 7900 XTX, enforce on)",
            f"{ours * 1e3:.1f} ms (median of {RUNS})",
            f"python3 {' '.join(flags)} -c pass: {base * 1e3:.1f} ms".replace("  ", " "),
            f"{ours / base:.1f}x",
            f"<= {GOAL:g}x",
            ours / base <= GOAL,
        )
    ]


if __name__ == "__main__":
    for r in main():
        print(r)
