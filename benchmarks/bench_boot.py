"""The boot critical path: process start to READY=1 on a healthy simulated machine.

Baseline in the same run: the same interpreter, with the same flags, doing
nothing — the floor of any Python service. The unit starts
``/usr/bin/python3 -I -m kfdguard.service`` with the package in
dist-packages. A development virtualenv adds its own start-up work
(``.pth`` hooks of an editable install: ~14 ms here) that a packaged install
does not have, so both runs here skip site processing (``-S``) and append the
package and its dependencies to sys.path, after the standard library as
dist-packages would be (PYTHONPATH would put them first and make every
standard-library import search them). Bytecode is compiled first, as the
Debian package does at install time.
"""

from __future__ import annotations

import compileall
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from benchmarks.common import Result, bus, machine, median, scratch
from tools.launch import launch

RUNS = 15
GOAL = 5.0
PACKAGE = Path(__file__).resolve().parent.parent / "kfdguard"


def bootstrap(run_service: bool) -> tuple[str, ...]:
    """-S and a sys.path like a packaged install's; for the service, then its main() (argv after the -m)."""
    paths = [str(PACKAGE.parent), sysconfig.get_paths()["purelib"]]
    code = f"import sys; sys.path += {paths!r}"
    if run_service:
        # launch() appends "-m kfdguard.service ARGS": after -c those are sys.argv[1:].
        code += "; from kfdguard.service.main import main; raise SystemExit(main(sys.argv[3:]))"
    return ("-S", "-c", code)


def bare() -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, *bootstrap(run_service=False)], check=True)
    return time.monotonic() - start


def main() -> list[Result]:
    compileall.compile_dir(str(PACKAGE), quiet=1)
    with scratch() as d, bus(d / "bus") as private:
        root = machine("rx7900xtx-ubuntu2404", d / "machine")
        times: list[float] = []
        bases: list[float] = []
        for i in range(RUNS + 2):  # the first two warm the page cache
            bases.append(bare())
            launched = launch(root, private.address, d / f"notify{i}", interpreter_flags=bootstrap(run_service=True),
                              capture_stderr=False)  # fmt: skip
            try:
                times.append(launched.wait_ready(30))
            finally:
                launched.stop()
    ours, base = median(times[2:]), median(bases[2:])
    return [
        Result(
            "boot critical path: process start to READY=1 (healthy RX 7900 XTX, enforce on)",
            f"{ours * 1e3:.1f} ms (median of {RUNS})",
            f"python3 -S, the same sys.path, nothing else: {base * 1e3:.1f} ms",
            f"{ours / base:.1f}x",
            f"<= {GOAL:g}x",
            ours / base <= GOAL,
        )
    ]


if __name__ == "__main__":
    for r in main():
        print(r)
