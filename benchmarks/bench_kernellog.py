"""Kernel-log diagnosis speed on a generated 1 M-line log (goal: >= 1 M lines/s).

Baseline in the same run: splitting the text into lines, the least any
line-oriented reader must do.
"""

from __future__ import annotations

import time

from benchmarks.logdata import generate
from kfdguard.kernellog import scan

GOAL = 1_000_000


def best_of(runs: int, fn: object) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> dict[str, object]:
    text = generate(1_000_000)
    baseline = best_of(3, lambda: text.split("\n"))
    elapsed = best_of(3, lambda: scan(text))
    count, events = scan(text)
    rate = count / elapsed
    return {
        "name": "kernel-log diagnosis",
        "value": f"{rate / 1e6:.2f} M lines/s ({elapsed * 1000:.0f} ms for {count} lines, {len(events)} events)",
        "baseline": f"line split {baseline * 1000:.0f} ms",
        "ratio": f"{elapsed / baseline:.1f}x the split",
        "goal": ">= 1 M lines/s",
        "pass": rate >= GOAL,
    }


if __name__ == "__main__":
    r = main()
    print(f"{r['name']}: {r['value']}; baseline {r['baseline']}; {r['ratio']}; goal {r['goal']}: "
          f"{'PASS' if r['pass'] else 'MISS'}")  # fmt: skip
