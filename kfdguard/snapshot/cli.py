"""``kfdguard snapshot``: the command's options and its handler."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kfdguard.verdict import EXIT_USAGE

DESCRIPTION = """\
Probe this machine (or --root/--machine) once, read-only, and write what
kfdguard read into DIR, a new or empty directory: the sysfs, /proc, /etc and
/boot files it used (kernel modules reduced to their .modinfo section), the
device nodes' owner and mode, the KFD version ioctl's answer, the kernel log
lines its rules classify, and the output of the commands it ran. The bundle
replays as that machine: 'kfdguard check --root DIR', 'kfdguard diagnose DIR'.

Redacted unless --include-names: user and group names of uid/gid 1000 and up
become user<uid>/group<gid> (passwd, group, kfdguard's config), with GECOS
fields and home directories blanked; system groups such as render and video
keep their names. The kernel log keeps only the lines kfdguard classifies.
Always: GRUB password lines keep the user name, not the password or its hash;
a file only root may read is left out unless the verdict needs it, and then
only what kfdguard reads of it is kept (the notes name each such file).

DIR is private to whoever took it: the directory is 0700 and every file 0600.
It becomes public only when you share it: DIR/.kfdguard-snapshot.json lists
every file included; read it before you attach the bundle to a report.
"""

EPILOG = """\
exit status: 0 written, 1 could not be written (nothing is left behind), 64 usage error.

examples:
  sudo kfdguard snapshot /tmp/kfd-report        root's alone (0700) until you share it
  sudo chown -R "$USER:" /tmp/kfd-report        make it yours, still private
  kfdguard check --root /tmp/kfd-report         replay it: the verdict this machine gave
  kfdguard diagnose /tmp/kfd-report             the full diagnosis, kernel log included
  tar -C /tmp -czf kfd-report.tar.gz kfd-report     when you choose to attach it to a report
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "snapshot",
        help="write what kfdguard reads here into a bundle that replays as this machine",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    parser.add_argument("dest", metavar="DIR", help="new or empty directory for the bundle")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--root", metavar="DIR", help="snapshot the machine whose root directory is DIR")
    group.add_argument("--machine", metavar="NAME", help="snapshot a bundled simulated machine")
    parser.add_argument("--config", metavar="FILE", help="configuration file (default: ROOT/etc/kfdguard/config.yaml)")
    parser.add_argument("--include-names", action="store_true", help="keep user and group names as they are")
    parser.add_argument("--boots", type=int, metavar="N", help="also record the kernel log of N earlier boots")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace, open_of: object) -> int:
    """``open_of(args)`` is the CLI's own: (target, configuration source), or None after saying why."""
    from kfdguard.host.paths import HostPath
    from kfdguard.snapshot.bundle import SnapshotError
    from kfdguard.snapshot.take import PRIVATE, take

    if args.boots is not None and args.boots < 0:
        print("kfdguard: --boots takes a number of earlier boots, 0 or more", file=sys.stderr)
        return EXIT_USAGE
    assert callable(open_of)
    opened = open_of(args)
    if opened is None:
        return EXIT_USAGE
    target, source_of_config = opened
    try:
        config = source_of_config.loaded.config
        boots = config.log.previous_boots if args.boots is None else args.boots
        source = f"simulated machine {target.name}" if target.name else str(target.root.path)
        snap = take(
            target.system,
            HostPath(args.dest),
            source=source,
            names=args.include_names,
            log_sources=config.log.sources,
            previous_boots=boots,
            software=config.software,
        )
    except SnapshotError as exc:
        print(f"kfdguard: snapshot: {exc}", file=sys.stderr)
        return 1
    finally:
        target.close()
    if args.json:
        from kfdguard.publish.report import SCHEMA_VERSION

        doc = {
            "schema_version": SCHEMA_VERSION,
            "path": str(snap.path),
            "files": snap.files,
            "redacted": list(snap.redacted),
            "notes": list(snap.notes),
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(f"kfdguard snapshot: {snap.files} files from {source} written to {snap.path}")
    print(f"  private: {PRIVATE}")
    for line in snap.redacted:
        print(f"  redacted: {line}")
    for line in snap.notes:
        print(f"  note: {line}")
    print(f"  replay it: kfdguard check --root {snap.path}")
    return 0
