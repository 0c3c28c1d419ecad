"""``kfdguard targets PATH…``: the gfx targets files carry code for, and which of this machine's GPUs can run them."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kfdguard.app.targets import Target
    from kfdguard.config import Config
    from kfdguard.facts import Facts
    from kfdguard.userspace.assess import GpuTarget
    from kfdguard.userspace.scan import PathScan

EXIT_OK, EXIT_NO_CODE, EXIT_UNREADABLE, EXIT_NOTHING, EXIT_USAGE = 0, 1, 2, 3, 64

EPILOG = """\
Like roc-obj-ls, without ROCm: the offload bundles in a HIP program's or
library's .hip_fatbin section (plain and compressed, zlib or zstd), the
per-target file names of rocBLAS/hipBLASLt/Tensile libraries, and TheRock's
kernel packs: a .kpack archive's table of contents, and for a host library
whose code was split out (a .rocm_kpack_ref section) the packs it names,
found as ROCm's loader finds them (relative to the library, @GFXARCH@
matched against the packs installed). Only section headers, bundle tables
and tables of contents are read: a 450 MB library takes milliseconds.
PATH may be a file, a directory (read up to 8 levels deep, links to
directories not followed) or a wheel (.whl or .zip: member names, and the
ELF members up to 256 MiB).

exit status:
  0   every AMD GPU here can run the code of every PATH that carries any
      (also when there is no AMD GPU)
  1   some AMD GPU here has no code in some PATH
  2   some PATH could not be read or is malformed (the others are listed)
  3   no PATH carries GPU code
  64  usage error

examples:
  kfdguard targets /usr/lib/x86_64-linux-gnu/librocblas.so.0
  kfdguard targets ~/.venv/lib/python3.11/site-packages/torch/lib
  kfdguard targets /opt/rocm/lib/.kpack/blas_lib_gfx1151.kpack
  kfdguard targets --json /usr/lib/ollama | jq '.paths[].targets'
  kfdguard targets --machine 780m-ubuntu2204-ga libggml-hip.so
"""


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser(
        "targets",
        help="list the gfx targets of HIP libraries, programs, wheels or directories",
        description="For each PATH, list the AMD GPU targets (gfx1100, gfx90a:xnack-...) it carries code for, "
        "and say which of this machine's GPUs can run it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EPILOG,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or wheel")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--root", metavar="DIR", help="judge against the GPUs of the machine whose root is DIR")
    group.add_argument("--machine", metavar="NAME", help="judge against the GPUs of a bundled simulated machine")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys: gpus, paths)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every file, not only the first 20")


def _gpus(args: argparse.Namespace) -> tuple[tuple[GpuTarget, ...], str | None]:
    from kfdguard.app.targets import TargetError, open_target
    from kfdguard.probe import probe
    from kfdguard.userspace.assess import gpu_targets

    try:
        target = open_target(args.root, args.machine)
    except TargetError as exc:
        return (), str(exc)
    try:
        facts = probe(target.system, log="never")
    finally:
        target.close()
    return gpu_targets(facts), None


def _verdicts(scan: PathScan, gpus: tuple[GpuTarget, ...]) -> list[dict[str, object]]:
    from kfdguard.userspace.assess import match

    out: list[dict[str, object]] = []
    for gpu in gpus:
        if gpu.gfx is None:
            out.append({"slot": gpu.slot, "name": gpu.name, "gfx": None, "runs": None, "detail": "gfx target unknown"})
            continue
        m = match(gpu.gfx, scan.targets)
        runs = m.status in ("exact", "generic")
        if runs:
            detail = f"code for {m.via}" + (f"; {m.note}" if m.note else "")
        else:
            detail = f"no code for {gpu.gfx}" + (f" (nearest {m.nearest})" if m.nearest else "")
        out.append({"slot": gpu.slot, "name": gpu.name, "gfx": gpu.gfx, "runs": runs, "detail": detail})
    return out


def run(args: argparse.Namespace) -> int:
    import os

    from kfdguard.userspace.scan import scan_path

    gpus, error = _gpus(args)
    if error is not None:
        print(f"kfdguard: {error}", file=sys.stderr)
        return EXIT_USAGE
    results = []
    for path in args.paths:
        scan = scan_path(os.path.expanduser(path), path)
        results.append((scan, _verdicts(scan, gpus) if scan.targets else []))
    code = _exit_code(results)
    if args.json:
        import json

        print(json.dumps(_json(gpus, results, code), indent=2))
        return code
    from kfdguard.verdict import clean

    lines = [line for scan, verdicts in results for line in _text(scan, verdicts, gpus, args.verbose)]
    # File names come from the disk (a directory walk, a wheel): no control character reaches the terminal.
    sys.stdout.write("\n".join(clean(line) for line in lines))
    return code


Results = list[tuple["PathScan", list[dict[str, object]]]]


def _exit_code(results: Results) -> int:
    # A Tensile file name has no error to give; a bundle or a kernel pack that cannot be read does.
    unreadable = any(s.error or any(f.error and f.source != "name" for f in s.files) for s, _ in results)
    with_code = [(s, v) for s, v in results if s.targets]
    if not with_code:
        return EXIT_UNREADABLE if unreadable else EXIT_NOTHING
    if any(v["runs"] is False for _, vs in with_code for v in vs):
        return EXIT_NO_CODE
    return EXIT_UNREADABLE if unreadable else EXIT_OK


def _json(gpus: tuple[GpuTarget, ...], results: Results, code: int) -> dict[str, object]:
    from kfdguard.publish.report import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "gpus": [{"slot": g.slot, "name": g.name, "gfx": g.gfx} for g in gpus],
        "paths": [
            {
                "path": s.path,
                "kind": s.kind,
                "targets": list(s.targets),
                "error": s.error,
                "truncated": s.truncated,
                "files": [
                    {
                        "path": f.path,
                        "source": f.source,
                        "targets": list(f.targets),
                        "bundles": f.bundles,
                        "compressed_bundles": f.compressed,
                        "error": f.error,
                        "note": f.note,
                    }
                    for f in s.files
                ],
                "gpus": verdicts,
            }
            for s, verdicts in results
        ],
        "exit_code": code,
    }


def _text(scan: PathScan, verdicts: list[dict[str, object]], gpus: tuple[GpuTarget, ...], verbose: bool) -> list[str]:
    lines = [f"{scan.path}  ({scan.kind})"]
    if scan.error:
        lines.append(f"  error: {scan.error}")
    lines.append("  targets: " + (" ".join(scan.targets) if scan.targets else "none (no GPU code found)"))
    shown = scan.files if verbose else scan.files[:20]
    if scan.kind != "file" or any(f.error or f.note for f in shown):
        for f in shown:
            what = f.error if f.error else " ".join(f.targets) or "no targets"
            bundles = f" [{f.bundles} bundles, {f.compressed} compressed]" if f.bundles else ""
            note = f" ({f.note})" if f.note and not f.error else ""
            shown_path = f.path[len(scan.path) :].lstrip("/") if f.path.startswith(scan.path) else f.path
            lines.append(f"    {shown_path or f.path}: {what}{bundles}{note}")
        if len(scan.files) > len(shown):
            lines.append(f"    (+{len(scan.files) - len(shown)} more files with --verbose)")
    elif shown and shown[0].bundles:
        lines.append(f"  from {shown[0].bundles} offload bundles ({shown[0].compressed} compressed)")
    if scan.truncated:
        lines.append(f"  (walk {scan.truncated})")
    for v in verdicts:
        mark = "runs" if v["runs"] else "cannot run" if v["runs"] is False else "unknown"
        lines.append(f"  {v['slot']} {v['gfx'] or '?'} {v['name']}: {mark} ({v['detail']})")
    if scan.targets and not gpus:
        lines.append("  no AMD GPU on this machine to judge against")
    lines.append("")
    return lines


def with_inventory(facts: Facts, target: Target, config: Config | None = None) -> Facts:
    """Facts with the software inventory, for `kfdguard check`: the caller's environment only on this host."""
    import os

    from kfdguard.config import Config
    from kfdguard.record import replace
    from kfdguard.snapshot.replay import ReplaySystem
    from kfdguard.userspace.probe import probe_software

    if isinstance(target.system, ReplaySystem) and target.system.software is not None:
        # A snapshot bundle holds the inventory its machine took (not the libraries): replay that.
        return replace(facts, software=target.system.software)
    # The caller's environment says something only about this host (a --root or --machine is another machine).
    environ = dict(os.environ) if target.root.is_host else None
    software_config = (config or Config()).software
    software = probe_software(
        target.root, environ, units=software_config.units, paths=software_config.paths, os_name=os_label(facts)
    )
    return replace(facts, software=software)


def os_label(facts: Facts) -> str:
    """The distribution's name as a stack's label says it ("Debian rocBLAS 5.5.1+dfsg-7")."""
    names = {"debian": "Debian", "ubuntu": "Ubuntu", "fedora": "Fedora", "arch": "Arch"}
    return names.get(facts.os.id, facts.os.id.capitalize() or "distribution")
