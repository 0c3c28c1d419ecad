"""The ``kfdguard`` command line."""

from __future__ import annotations

import argparse
import json
import sys

from kfdguard import __version__
from kfdguard.verdict import EXIT_USAGE

DESCRIPTION = """\
kfdguard makes AMD GPUs ready for compute (ROCm, llama.cpp, PyTorch-ROCm,
OpenCL) and keeps them ready. It checks the chain every ROCm program depends
on: kernel support for the GPU's KFD driver, amdgpu's module options and
order, /dev/kfd and the render nodes with their permissions, and the KFD
topology, and says what is wrong and how to fix it.
"""

EXIT_HELP = """\
exit status (check, diagnose):
  0   ready: every AMD GPU can compute for the compute group
  1   degraded: some GPU can compute, something else is wrong
  2   unavailable: there is an AMD GPU but it cannot compute
  3   no-device: no AMD GPU
  4   error: kfdguard could not check
  64  usage error
"""

CHECK_EPILOG = (
    EXIT_HELP
    + """
examples:
  kfdguard check                         this machine
  kfdguard check --json | jq .state      for scripts
  kfdguard check --machine kfd-perms-0600
                                         a bundled simulated machine (see 'kfdguard machines')
  kfdguard check --root /mnt/sysimage    a machine directory (chroot, image, simulation)
  kfdguard check --root ./kfd-report    replay a bundle written by 'kfdguard snapshot'
"""
)


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which would read as 'unavailable'."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--root", metavar="DIR", help="inspect the machine whose root directory is DIR")
    group.add_argument("--machine", metavar="NAME", help="inspect a bundled simulated machine")
    parser.add_argument("--config", metavar="FILE", help="configuration file (default: ROOT/etc/kfdguard/config.yaml)")


def build_parser() -> Parser:
    parser = Parser(
        prog="kfdguard",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'kfdguard COMMAND --help' for a command's options. Documentation: kfdguard(8).",
    )
    parser.add_argument("--version", action="version", version=f"kfdguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    check = sub.add_parser(
        "check",
        help="check compute readiness once and explain it",
        description="Probe the machine once, assess it and print the state, the GPUs and the findings "
        "with their remedies. Read-only: nothing is changed.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=CHECK_EPILOG,
    )
    _target_options(check)
    check.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (keys: state, ready, summary, kernel, gpus, kfd, findings)",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="show all evidence for each finding")

    diagnose = sub.add_parser(
        "diagnose",
        help="explain why compute does not work, here or in pasted text",
        description="Without FILE: a full diagnosis of this machine (or --root/--machine), including the "
        "kernel log of this boot and earlier ones. With FILE (or - for standard input): diagnose text pasted "
        "from a bug report — dmesg or journalctl output in any timestamp format, rocminfo, 'ls -l /dev/kfd', "
        "'id' or 'groups', 'uname -r', modinfo, 'lspci -nn', kernel config lines, modprobe.d lines, quoted "
        "with '> ' or not — and say what it shows, what is wrong, and what it cannot tell. With a directory (a "
        "bundle written by 'kfdguard snapshot', or a machine root): diagnose that machine.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXIT_HELP.replace("(check, diagnose)", "(diagnose without FILE)")
        + """
exit status (diagnose FILE):
  0   the text shows no problem
  1   only warnings
  2   at least one error
  4   nothing in the text could be recognised

examples:
  sudo kfdguard diagnose
  sudo dmesg | kfdguard diagnose -
  kfdguard diagnose --json pasted-issue.txt
""",
    )
    diagnose.add_argument("file", nargs="?", metavar="FILE", help="text to diagnose, - for standard input")
    _target_options(diagnose)
    diagnose.add_argument("--json", action="store_true", help="print one JSON object")
    diagnose.add_argument("-v", "--verbose", action="store_true", help="show all evidence for each finding")
    diagnose.add_argument("--boots", type=int, metavar="N", help="also read the kernel log of N earlier boots")
    diagnose.add_argument("--local", action="store_true", help="diagnose in this process instead of asking the service")
    diagnose.add_argument("--bus", metavar="ADDRESS", help="bus address of the service (default: the system bus)")

    enforce = sub.add_parser(
        "enforce",
        help="bring the machine to the configured state (modprobe.d, module, permissions)",
        description="Probe, assess and carry out the plan: write /etc/modprobe.d/kfdguard.conf for the "
        "kernel's layout, disable contradicting lines in other files (only with module.repair: true, after a "
        "backup), install the udev rule, load amdgpu, give /dev/kfd and the render nodes the configured group "
        "and mode, add configured users to the group. Every change is atomic and reported; a second run changes "
        "nothing. Needs root (except with --dry-run or on a simulated machine).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""exit status: the state after enforcing, as for 'check' (0 ready, 1 degraded, 2 unavailable,
3 no-device, 4 error); 1 instead of 0 when an action failed; 64 usage error.

examples:
  sudo kfdguard enforce --dry-run        show the plan and the diffs, change nothing
  sudo kfdguard enforce
  kfdguard enforce --machine kfd-perms-0600   try it on a simulated machine
""",
    )
    _target_options(enforce)
    enforce.add_argument("-n", "--dry-run", action="store_true", help="show what would change, with diffs")
    enforce.add_argument("--json", action="store_true", help="print one JSON object")
    enforce.add_argument("-v", "--verbose", action="store_true", help="show diffs and all evidence")

    fallback = sub.add_parser(
        "fallback",
        help="the kernel-fallback policy: which kernel can run compute, and booting it",
        description="When the running kernel cannot run compute on the GPU (too old for it, built without "
        "KFD, an amdgpu-dkms not built for it or refused by Secure Boot) but another installed kernel can, "
        "kfdguard recommends that kernel: the last known good, else the newest. 'status' shows every "
        "installed kernel with the reason it can or cannot be used; 'apply' makes the boot loader start the "
        "recommended kernel at the next boot only (--pin: from now on) through grub-reboot/grub-set-default or "
        "bootctl; 'clear' undoes it. kfdguard never reboots by itself.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""exit status: 0 done (or nothing to do), 1 refused or failed, 64 usage error.

examples:
  kfdguard fallback                  same as 'fallback status'
  sudo kfdguard fallback apply && sudo reboot
  sudo kfdguard fallback clear
""",
    )
    fallback.add_argument("action", nargs="?", choices=["status", "apply", "clear"], default="status")
    _target_options(fallback)
    fallback.add_argument("--pin", action="store_true", help="apply: make it the default instead of next boot only")
    fallback.add_argument("--json", action="store_true", help="print one JSON object")

    for name, summary, description in (
        ("status", "show what the running service reports",
         "Ask the kfdguard service (org.kfdguard.Guardian1 on the system bus) for its current status: state, "
         "GPUs, findings and the fallback recommendation. Needs no privileges."),
        ("reload", "make the service re-read its configuration and check again",
         "Ask the service to re-read /etc/kfdguard/config.yaml and run a full check with its repairs. Allowed "
         "for the active local session and members of the compute group (polkit action org.kfdguard.reload); "
         "polkit may ask for a password."),
        ("access", "can I (this user) run GPU compute?",
         "Ask the service whether the calling user can open /dev/kfd and the render nodes of the GPUs that "
         "compute, and if not, why. Exit status 0 when yes, 1 when no."),
    ):  # fmt: skip
        client = sub.add_parser(name, help=summary, description=description)
        client.add_argument("--json", action="store_true", help="print one JSON object")
        client.add_argument("--bus", metavar="ADDRESS", help="bus address (default: the system bus)")

    daemon = sub.add_parser(
        "daemon",
        help="run the service (systemd starts it as python3 -m kfdguard.service)",
        description="Run the kfdguard service in the foreground: the boot pass, READY=1 to systemd, then the "
        "org.kfdguard.Guardian1 API. For a simulated machine on a private bus: "
        "kfdguard daemon --root DIR --bus unix:path=/tmp/bus.",
    )
    daemon.add_argument("--root", metavar="DIR", help="serve the machine whose root directory is DIR")
    daemon.add_argument("--bus", metavar="ADDRESS", help="bus address (default: the system bus)")
    daemon.add_argument("--backend", choices=["fast", "next"], help="D-Bus library: dbus-fast (default) or dbus-next")
    daemon.add_argument("--no-enforce", action="store_true", help="observe only: change nothing on the machine")

    from kfdguard.snapshot.cli import add_parser as add_snapshot

    add_snapshot(sub)
    from kfdguard.readiness.cli import add_parser as add_wait

    add_wait(sub)
    from kfdguard.fleet.cli import add_parser as add_fleet

    add_fleet(sub)

    machines = sub.add_parser(
        "machines",
        help="list or render the bundled simulated machines",
        description="The simulated machines bundled with kfdguard, for trying it out and for tests. "
        "'render NAME DIR' writes one out as a directory tree usable with --root.",
    )
    machines.add_argument("action", nargs="?", choices=["list", "render"], default="list")
    machines.add_argument("name", nargs="?", help="machine to render")
    machines.add_argument("dest", nargs="?", help="empty directory to render it into")
    machines.add_argument("--json", action="store_true", help="list as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from kfdguard import log

    # Commands print their own report; progress lines are for the service's journal.
    log.set_level(log.WARNING)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "check":
            return cmd_check(args)
        if args.command == "machines":
            return cmd_machines(args, parser)
        if args.command == "diagnose":
            return cmd_diagnose(args)
        if args.command == "enforce":
            return cmd_enforce(args)
        if args.command == "fallback":
            return cmd_fallback(args)
        if args.command == "wait":
            from kfdguard.readiness.cli import run as wait

            return wait(args)
        if args.command == "snapshot":
            from kfdguard.snapshot.cli import run as snapshot

            return snapshot(args, _config)
        if args.command == "metrics":
            from kfdguard.fleet.cli import run as fleet

            return fleet(args, _config)
        if args.command in ("status", "reload", "access"):
            return cmd_client(args)
        if args.command == "daemon":
            from kfdguard.service.main import main as service_main

            argv2 = [f"--{k}={v}" for k, v in (("root", args.root), ("bus", args.bus), ("backend", args.backend)) if v]
            return service_main(argv2 + (["--no-enforce"] if args.no_enforce else []))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def _config(args: argparse.Namespace, target: object) -> tuple[object, tuple[object, ...]]:
    from pathlib import Path

    from kfdguard.config import load_config
    from kfdguard.machine import Target

    assert isinstance(target, Target)
    if args.config:
        path = Path(args.config)
        loaded = load_config(path, str(path))
    else:
        path = target.root.etc / "kfdguard/config.yaml"
        loaded = load_config(path, target.root.display(path))
    return loaded.config, loaded.errors


TEXT_LIMIT = 16 << 20


def cmd_fallback(args: argparse.Namespace) -> int:
    import os

    from kfdguard.assess import assess
    from kfdguard.config import Config
    from kfdguard.fallback import apply
    from kfdguard.machine import open_target
    from kfdguard.probe import probe
    from kfdguard.report import fallback_json, fallback_text
    from kfdguard.simulate.spec import SpecError

    try:
        target = open_target(args.root, args.machine)
    except (ValueError, SpecError) as exc:
        print(f"kfdguard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action != "status" and not target.system.simulated and os.geteuid() != 0:
            print(f"kfdguard: fallback {args.action} changes the boot loader: run it as root", file=sys.stderr)
            return EXIT_USAGE
        config, errors = _config(args, target)
        assert isinstance(config, Config)
        facts = probe(target.system, log="needed", log_sources=config.log.sources)
        verdict = assess(facts, config, errors)  # type: ignore[arg-type]
        rec = verdict.fallback
        assert rec is not None
        outcome = None
        if args.action == "apply":
            outcome, _ = apply.arrange(target.system, facts, rec, "pin" if args.pin else "oneshot")
        elif args.action == "clear":
            outcome, _ = apply.clear(target.system, facts)
        if outcome is not None:
            facts = probe(target.system, log="never")
        if args.json:
            print(json.dumps(fallback_json(rec, facts, outcome), indent=2))
        else:
            sys.stdout.write(fallback_text(rec, facts, outcome, target.name))
    finally:
        target.close()
    return 0 if outcome is None or outcome.ok else 1


def cmd_enforce(args: argparse.Namespace) -> int:
    import os

    from kfdguard.config import Config
    from kfdguard.enforce import enforce
    from kfdguard.machine import open_target
    from kfdguard.report import enforce_json, enforce_text
    from kfdguard.simulate.spec import SpecError
    from kfdguard.verdict import EXIT_CODES, State

    try:
        target = open_target(args.root, args.machine)
    except (ValueError, SpecError) as exc:
        print(f"kfdguard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if not args.dry_run and not target.system.simulated and os.geteuid() != 0:
            print(
                "kfdguard: enforce changes system files and devices: run it as root (or use --dry-run)", file=sys.stderr
            )
            return EXIT_USAGE
        config, errors = _config(args, target)
        assert isinstance(config, Config)
        report, before, after = enforce(target.system, config, dry_run=args.dry_run, config_errors=errors)
    except Exception as exc:
        print(f"kfdguard: enforce failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CODES[State.ERROR]
    finally:
        target.close()
    where = (
        f"simulated machine {target.name}"
        if target.name
        else ("this machine" if target.root.is_host else str(target.root.path))
    )
    if args.json:
        print(json.dumps(enforce_json(report, before, after), indent=2))
    else:
        sys.stdout.write(enforce_text(report, before, after, where, verbose=args.verbose))
    code = after.exit_code
    return 1 if code == 0 and report.failed else code


def cmd_diagnose(args: argparse.Namespace) -> int:
    if args.file is None:
        if args.local or args.root or args.machine:
            return cmd_check(args, full=True)
        return cmd_client(args)
    import os

    if os.path.isdir(args.file) and not (args.root or args.machine):
        # A directory is a machine to diagnose: a snapshot bundle (or any machine root), replayed.
        args.root = args.file
        return cmd_check(args, full=True)
    from kfdguard.diagnose import diagnose_text
    from kfdguard.report import text_diagnosis_json, text_diagnosis_text

    if args.root or args.machine:
        print("kfdguard: diagnose FILE reads text; --root and --machine apply without FILE", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read(TEXT_LIMIT + 1)
            source = "standard input"
        else:
            with open(args.file, "rb") as handle:
                data = handle.read(TEXT_LIMIT + 1)
            source = args.file
    except OSError as exc:
        print(f"kfdguard: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    if len(data) > TEXT_LIMIT:
        print(f"kfdguard: {args.file}: larger than {TEXT_LIMIT >> 20} MiB; paste the relevant part", file=sys.stderr)
        return EXIT_USAGE
    result = diagnose_text(data.decode("utf-8", errors="replace"))
    if args.json:
        print(json.dumps(text_diagnosis_json(result), indent=2))
    else:
        sys.stdout.write(text_diagnosis_text(result, source, verbose=args.verbose))
    return result.exit_code


EX_NOPERM = 77
EX_UNAVAILABLE = 69


def cmd_client(args: argparse.Namespace) -> int:
    from kfdguard.client import ServiceError, call
    from kfdguard.report import findings_from_bus, status_text

    member = {"status": "GetStatus", "reload": "Reload", "access": "CheckAccess", "diagnose": "Diagnose"}[args.command]
    try:
        body = call(member, args.bus, interactive=args.command == "reload")
    except ServiceError as exc:
        if exc.unreachable and args.command == "diagnose":
            print("kfdguard: the service is not running; diagnosing in this process (sudo shows more)", file=sys.stderr)
            args.local = True
            return cmd_check(args, full=True)
        hint = " (is kfdguard.service running? systemctl status kfdguard)" if exc.unreachable else ""
        print(f"kfdguard: {member}: {exc.text}{hint}", file=sys.stderr)
        if "NotAuthorized" in exc.name or "AccessDenied" in exc.name or "InteractiveAuthorization" in exc.name:
            return EX_NOPERM
        return EX_UNAVAILABLE
    if args.command == "status":
        status = body[0]
        if args.json:
            print(json.dumps(status, indent=2))
        else:
            sys.stdout.write(status_text(status))
        return {"ready": 0, "degraded": 1, "unavailable": 2, "no-device": 3}.get(str(status.get("State")), 4)
    if args.command == "access":
        allowed, text = body
        if args.json:
            print(json.dumps({"allowed": allowed, "explanation": text}, indent=2))
        else:
            print(("yes: " if allowed else "no: ") + text)
        return 0 if allowed else 1
    if args.command == "reload":
        state = body[0]
        print(json.dumps({"state": state}) if args.json else f"checked again: {state}")
        return 0
    findings = findings_from_bus(body[0])
    if args.json:
        from kfdguard.report import finding_json

        print(json.dumps({"findings": [finding_json(f) for f in findings]}, indent=2))
    else:
        from kfdguard.report import render_findings

        lines = ["kfdguard diagnose (from the service)", "", *render_findings(findings), ""]
        sys.stdout.write("\n".join(lines))
    return 2 if any(f.severity == "error" for f in findings) else 0


def cmd_check(args: argparse.Namespace, *, full: bool = False) -> int:
    from kfdguard.assess import assess
    from kfdguard.config import Config
    from kfdguard.machine import open_target
    from kfdguard.probe import probe
    from kfdguard.report import to_json, to_text
    from kfdguard.simulate.spec import SpecError
    from kfdguard.verdict import EXIT_CODES, State

    try:
        target = open_target(args.root, args.machine)
    except (ValueError, SpecError) as exc:
        print(f"kfdguard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config, errors = _config(args, target)
        assert isinstance(config, Config)
        boots = args.boots if full and args.boots is not None else (config.log.previous_boots if full else 0)
        facts = probe(target.system, log="always", log_sources=config.log.sources, previous_boots=max(0, boots))
        verdict = assess(facts, config, errors)  # type: ignore[arg-type]
    except Exception as exc:
        print(f"kfdguard: check failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.json:
            print(json.dumps({"state": str(State.ERROR), "ready": False, "error": str(exc)}))
        return EXIT_CODES[State.ERROR]
    finally:
        target.close()
    if args.json:
        print(json.dumps(to_json(facts, verdict, target.name), indent=2))
    else:
        command = "diagnose" if full else "check"
        sys.stdout.write(to_text(facts, verdict, target.name, verbose=args.verbose or full, command=command))
    return verdict.exit_code


def cmd_machines(args: argparse.Namespace, parser: Parser) -> int:
    from pathlib import Path

    from kfdguard.simulate import bundled
    from kfdguard.simulate.spec import SpecError

    if args.action == "render":
        if not args.name or not args.dest:
            parser.error("machines render needs NAME and DIR")
        try:
            root = bundled.render_bundled(args.name, Path(args.dest))
        except (SpecError, FileExistsError) as exc:
            print(f"kfdguard: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"rendered {args.name} into {root.path}; inspect it with: kfdguard check --root {root.path}")
        return 0
    specs = [bundled.load(name) for name in bundled.names()]
    if args.json:
        print(json.dumps([{"name": s.name, "description": s.description} for s in specs], indent=2))
        return 0
    import textwrap

    for spec in specs:
        print(spec.name)
        print(textwrap.fill(spec.description, width=96, initial_indent="    ", subsequent_indent="    "))
    return 0
