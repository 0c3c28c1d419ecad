"""``kfdguard wait``: the command's options and its handler."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from typing import Any, NoReturn

from kfdguard.verdict import EXIT_USAGE

EXIT_READY, EXIT_TIMEOUT = 0, 1

DESCRIPTION = """\
Block until AMD GPU compute is ready, then exit 0; give up after --timeout
seconds and exit 1, saying what kfdguard last reported. "Ready" is
compute.require in /etc/kfdguard/config.yaml unless --all, --any or --gpu say
otherwise: all (every AMD GPU computes: state ready), any (at least one GPU
computes: ready or degraded), or the GPU at SLOT computes.

It asks the kfdguard service on the system bus and then sleeps until the
service signals a change (it waits for a service that is not running yet);
without a bus it watches the runtime marker /run/kfdguard/ready with inotify.
It never polls in a busy loop. kfdguard-wait.service runs it so that
kfdguard-compute.target is reached only when compute is ready: order a
program after it with

  [Unit]
  Requires=kfdguard-compute.target
  After=kfdguard-compute.target
"""

EPILOG = """\
exit status:
  0   compute is ready
  1   not ready within --timeout (the last state seen is printed)
  64  usage error

examples:
  kfdguard wait && ollama serve
  kfdguard wait --any --timeout 300
  kfdguard wait --gpu 0000:03:00.0 --timeout 0      ask once, do not wait
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "wait",
        help="block until GPU compute is ready (for scripts and units)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_const", dest="require", const="all", help="every AMD GPU computes")
    which.add_argument("--any", action="store_const", dest="require", const="any", help="at least one GPU computes")
    which.add_argument("--gpu", metavar="SLOT", help="the GPU at PCI SLOT (0000:03:00.0 or 03:00.0) computes")
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="give up after S seconds (default: compute.wait_timeout, 90)"
    )
    parser.add_argument("--bus", metavar="ADDRESS", help="bus address of the service (default: the system bus)")
    parser.add_argument("--root", metavar="DIR", help="read the marker and configuration of the machine at DIR")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing; the exit status says it")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kfdguard.config import load_config
    from kfdguard.host.root import CONFIG_FILE, READY_MARKER, Root
    from kfdguard.host.system import RealSystem
    from kfdguard.readiness import marker
    from kfdguard.readiness.condition import normal_slot
    from kfdguard.readiness.wait import Want, wait

    if args.timeout is not None and (not math.isfinite(args.timeout) or args.timeout < 0):
        print("kfdguard: --timeout takes a number of seconds, 0 or more", file=sys.stderr)
        return EXIT_USAGE
    if args.gpu is not None and not _slot_like(args.gpu):
        print(f"kfdguard: --gpu {args.gpu!r}: not a PCI slot such as 0000:03:00.0", file=sys.stderr)
        return EXIT_USAGE
    root = Root(Path(args.root).resolve()) if args.root else Root()
    config = load_config(root.join(CONFIG_FILE), CONFIG_FILE, root=root).config.compute
    want = Want(args.require or config.require, normal_slot(args.gpu) if args.gpu else None)
    timeout = config.wait_timeout if args.timeout is None else args.timeout
    system = RealSystem(root)
    outcome = wait(args.bus, want, timeout, lambda: marker.read(system), str(root.join(READY_MARKER).parent))
    what = f"GPU {want.gpu}" if want.gpu else {"all": "every AMD GPU", "any": "an AMD GPU"}[want.require]
    if args.json:
        from kfdguard.publish.report import SCHEMA_VERSION

        doc = {
            "schema_version": SCHEMA_VERSION,
            "ready": outcome.ready,
            "require": "gpu" if want.gpu else want.require,
            "gpu": want.gpu,
            "via": outcome.via,
            "state": outcome.state,
            "summary": outcome.summary,
            "waited_seconds": round(outcome.waited, 3),
            "note": outcome.note,
        }
        print(json.dumps(doc, indent=2))
    elif not args.quiet:
        if outcome.note:
            print(f"kfdguard wait: {outcome.note}", file=sys.stderr)
        if outcome.ready:
            print(f"compute is ready ({what}): {outcome.summary}")
        else:
            seen = f"{outcome.state}: {outcome.summary}" if outcome.state else outcome.summary or "nothing heard"
            print(f"kfdguard wait: compute not ready ({what}) after {outcome.waited:.1f} s; {seen}", file=sys.stderr)
    return EXIT_READY if outcome.ready else EXIT_TIMEOUT


def _slot_like(text: str) -> bool:
    parts = text.strip().lower().split(":")
    if len(parts) not in (2, 3) or "." not in parts[-1]:
        return False
    hexes = [*parts[:-1], *parts[-1].split(".")]
    return all(p and len(p) <= 4 and all(c in "0123456789abcdef" for c in p) for p in hexes)


def finish(code: int) -> NoReturn:
    """Exit at once with ``code``, skipping the interpreter's finalization.

    kfdguard-wait.service sits on every consumer's start path: in the VM lane (TCG)
    the module teardown after the answer (asyncio and the D-Bus library loaded) took
    1.5 s of the 1.9 s between kfdguard reaching ready and systemd starting the
    consumer. Nothing is left to do but flush stdout and stderr.
    """
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
