"""Kernel-log diagnosis speed on a generated 1 M-line log (goal: >= 1 M lines/s).

Baseline in the same run: splitting the text into lines, the least any
line-oriented reader must do.
"""

from __future__ import annotations

from benchmarks.common import Result, best_of
from benchmarks.logdata import generate
from kfdguard.kernellog import scan

GOAL = 1_000_000


def main() -> list[Result]:
    text = generate(1_000_000)
    baseline = best_of(3, lambda: text.split("\n"))
    elapsed = best_of(3, lambda: scan(text))
    count, events = scan(text)
    rate = count / elapsed
    return [
        Result(
            "kernel-log diagnosis on a generated 1 M-line log",
            f"{rate / 1e6:.2f} M lines/s ({elapsed * 1000:.0f} ms for {count:,} lines, {len(events)} events)",
            f"splitting the text into lines: {baseline * 1000:.0f} ms",
            f"{elapsed / baseline:.1f}x the split",
            ">= 1 M lines/s",
            rate >= GOAL,
        )
    ]


if __name__ == "__main__":
    for r in main():
        print(r)
