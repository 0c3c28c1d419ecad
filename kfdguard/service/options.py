"""The service's command line: its options, and the signals noted before the event loop runs.

Apart from main.py so that the loop (service/loop.py), which main.py starts after READY,
can read both without importing the entry point that imports it.
"""

from __future__ import annotations

import sys

# The unit's TimeoutStartSec is 30 s: READY goes out by this deadline whatever
# a step is doing (each step is bounded too; this is the bound of them all).
BOOT_DEADLINE = 20.0
early_signals: list[int] = []  # signals that arrived before the event loop took them over
USAGE = """usage: python3 -m kfdguard.service [--root DIR] [--bus ADDRESS] [--backend fast|next] [--no-enforce]
                                  [--starter systemd|child]

The kfdguard system service (see kfdguard(8)); systemd starts it. --root serves
a machine directory (a simulated machine for the demo and the tests), --bus
connects to another bus than the system bus, --no-enforce only observes.
--starter: run unprivileged (issue 21): checks are read-only, and repairs and
boot-loader changes are the privileged oneshots' (kfdguard-enforce.service,
kfdguard-fallback@.service), started through systemd (systemd) or, where there
is no systemd (a simulated machine on a private bus), as a child (child).
"""


class Options:
    def __init__(self) -> None:
        self.root: str | None = None
        self.bus: str | None = None
        self.backend: str | None = None
        self.enforce = True
        self.deadline = BOOT_DEADLINE
        self.starter: str | None = None  # None: one process does everything (the single-unit layout)


def parse(argv: list[str]) -> Options:
    # argparse costs milliseconds the boot path does not need; these few options do not.
    opts = Options()
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            raise SystemExit(0)
        if arg == "--no-enforce":
            opts.enforce = False
            continue
        key, sep, value = arg.partition("=")
        if key not in ("--root", "--bus", "--backend", "--deadline", "--starter"):
            raise SystemExit(f"kfdguard service: unknown option {arg!r}\n{USAGE}")
        if not sep:
            if not args:
                raise SystemExit(f"kfdguard service: {key} needs a value")
            value = args.pop(0)
        if key == "--deadline":
            opts.deadline = float(value)
        elif key == "--starter" and value not in ("systemd", "child"):
            raise SystemExit(f"kfdguard service: --starter is systemd or child, not {value!r}")
        else:
            setattr(opts, key[2:], value)
    return opts
