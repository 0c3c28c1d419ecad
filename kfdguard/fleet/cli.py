"""``kfdguard metrics``: the fleet outputs of one check, printed."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kfdguard.verdict import EXIT_CODES, EXIT_USAGE, State

DESCRIPTION = """\
Probe this machine (or --root/--machine) once, read-only, and print what the
service writes for fleets: the node_exporter textfile (default), or with
--format nfd the Node Feature Discovery feature file, with --format cdi
kfdguard's own CDI spec (kind kfdguard.org/gpu; nothing when no GPU can
compute). The service writes the same files by itself when fleet.textfile /
fleet.nfd / fleet.cdi are set in config.yaml.
"""

EPILOG = """\
exit status: as for 'check' (0 ready, 1 degraded, 2 unavailable, 3 no-device,
4 error), so a cron job can both save the output and test readiness; 64 usage error.

examples:
  kfdguard metrics | promtool check metrics
  kfdguard metrics > /var/lib/prometheus/node-exporter/kfdguard.prom.$$ &&
      mv /var/lib/prometheus/node-exporter/kfdguard.prom.$$ /var/lib/prometheus/node-exporter/kfdguard.prom
  kfdguard metrics --format nfd --machine kfd-perms-0600
  kfdguard metrics --format cdi --machine rx7900xtx-ubuntu2404
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "metrics",
        help="print the Prometheus textfile (or NFD feature file) of one check",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--root", metavar="DIR", help="inspect the machine whose root directory is DIR")
    group.add_argument("--machine", metavar="NAME", help="inspect a bundled simulated machine")
    parser.add_argument("--config", metavar="FILE", help="configuration file (default: ROOT/etc/kfdguard/config.yaml)")
    parser.add_argument(
        "--format",
        choices=["prometheus", "nfd", "cdi"],
        default="prometheus",
        help="prometheus: node_exporter textfile (default); nfd: Node Feature Discovery feature file; "
        "cdi: kfdguard's Container Device Interface spec",
    )


def run(args: argparse.Namespace, open_of: object) -> int:
    """``open_of(args)`` is the CLI's own: (target, configuration source), or None after saying why."""
    from kfdguard.app import pipeline
    from kfdguard.app.triggers import Trigger
    from kfdguard.fleet import cdi, metrics, nfd
    from kfdguard.fleet.publish import NFD_TTL

    assert callable(open_of)
    opened = open_of(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        # A one-off look through the one pipeline, read-only like kfdguard check.
        outcome = pipeline.check(target.system, config, Trigger.CLI, may_repair=False)
        facts, verdict = outcome.facts, outcome.verdict
    except Exception as exc:
        print(f"kfdguard: check failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CODES[State.ERROR]
    finally:
        target.close()
    now = time.time()
    if args.format == "nfd":
        sys.stdout.write(nfd.render(verdict, now, NFD_TTL))
    elif args.format == "cdi":
        sys.stdout.write(cdi.render_spec(verdict, facts) or "")
    else:
        sys.stdout.write(metrics.render(verdict, facts, now))
    return verdict.exit_code
