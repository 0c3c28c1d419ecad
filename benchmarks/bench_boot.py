"""The boot critical path, and the resident service's start, on a healthy simulated machine.

Since the privilege split (issue 21) the display manager waits for kfdguard-enforce.service, a
oneshot: its exec → exit (``python3 -I -c "from kfdguard.__main__ import run; run()" enforce
--record``: probe, assess, the plan, the history, the state file) is the boot critical path. The
resident kfdguard.service starts after it; its start → READY=1 (``--starter``: it reads what the
oneshot left and checks read-only) is measured too, with the same goal, because ``systemctl start``
and everything ordered after it wait for it. Issue 21's own goal compares the oneshot with what the
display manager waited for before the split: the single root service's exec → READY=1 (enforce on),
no worse than 1.2 times.

Baseline in the same run: the same interpreter, with the same flags, doing nothing — the floor of
any Python service. The units start ``/usr/bin/python3 -I -c …`` (no runpy) with the package in
dist-packages. A development virtualenv adds its own start-up work (``.pth`` hooks of an editable
install: ~14 ms here) that a packaged install does not have, so every run here skips site
processing (``-S``) and appends the package and its dependencies to sys.path, after the standard
library as dist-packages would be (PYTHONPATH would put them first and make every standard-library
import search them). Bytecode is compiled first, as the Debian package does at install time.
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
SPLIT_GOAL = 1.2
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


def enforce_argv(root: str) -> list[str]:
    # The unit's ExecStart: python3 -I -c "from kfdguard.__main__ import run; run()" enforce --record.
    code = bootstrap(run_service=False)[2] + "; from kfdguard.__main__ import run; run()"
    return [sys.executable, "-S", "-c", code, "enforce", "--record", "--root", root]


def enforce_once(root: str) -> float:
    start = time.monotonic()
    result = subprocess.run(enforce_argv(root), capture_output=True, text=True, check=False, cwd="/")
    elapsed = time.monotonic() - start
    if result.returncode not in (0, 1, 2, 3, 4):
        raise RuntimeError(f"kfdguard enforce --record failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed


def main() -> list[Result]:
    compileall.compile_dir(str(PACKAGE), quiet=1)
    with scratch() as d, bus(d / "bus") as private:
        root = machine("rx7900xtx-ubuntu2404", d / "machine")
        enforce_once(str(root))  # the machine as a usual boot finds it: repaired before
        times: dict[str, list[float]] = {"bare": [], "oneshot": [], "resident": [], "single": []}
        for i in range(RUNS + 2):  # the first two warm the page cache
            times["bare"].append(bare())
            times["oneshot"].append(enforce_once(str(root)))
            for kind, args in (("resident", ("--starter", "child")), ("single", ())):
                launched = launch(root, private.address, d / f"notify-{kind}{i}", args=args,
                                  interpreter_flags=bootstrap(run_service=True), capture_stderr=False)  # fmt: skip
                try:
                    times[kind].append(launched.wait_ready(30))
                finally:
                    launched.stop()
    bare_s, oneshot, resident, single = (median(t[2:]) for t in times.values())
    critical = "boot critical path: kfdguard-enforce.service exec to exit (RX 7900 XTX; the display manager waits)"
    started = "resident kfdguard.service: process start to READY=1 (after the oneshot, read-only pass)"
    return [
        _row(critical, oneshot, bare_s),
        _row(started, resident, bare_s),
        Result(
            "boot critical path, split units against the single root service (issue 21)",
            f"kfdguard-enforce exec to exit: {oneshot * 1e3:.1f} ms (median of {RUNS})",
            f"the single service's exec to READY=1, enforce on: {single * 1e3:.1f} ms",
            f"{oneshot / single:.2f}x",
            f"<= {SPLIT_GOAL:g}x",
            oneshot / single <= SPLIT_GOAL,
        ),
    ]


def _row(name: str, ours: float, base: float) -> Result:
    return Result(
        name,
        f"{ours * 1e3:.1f} ms (median of {RUNS})",
        f"python3 -S, the same sys.path, nothing else: {base * 1e3:.1f} ms",
        f"{ours / base:.1f}x",
        f"<= {GOAL:g}x",
        ours / base <= GOAL,
    )


if __name__ == "__main__":
    for r in main():
        print(r)
