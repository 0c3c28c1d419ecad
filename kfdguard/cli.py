"""The ``kfdguard`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys

from kfdguard import __version__
from kfdguard.verdict import EXIT_USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.app.remedy import Outcome as RemedyOutcome
    from kfdguard.app.targets import Target

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


DIAGNOSE_DESCRIPTION = (
    "Without FILE: a full diagnosis of this machine (or --root/--machine), including the "
    "kernel log of this boot and earlier ones. With FILE (or - for standard input): diagnose text pasted "
    "from a bug report — dmesg or journalctl output in any timestamp format, rocminfo, 'ls -l /dev/kfd', "
    "'id' or 'groups', 'uname -r', modinfo, 'lspci -nn', kernel config lines, modprobe.d lines, quoted "
    "with '> ' or not — and say what it shows, what is wrong, and what it cannot tell. With a directory (a "
    "bundle written by 'kfdguard snapshot', or a machine root): diagnose that machine."
)
DIAGNOSE_EPILOG = (
    EXIT_HELP.replace("(check, diagnose)", "(diagnose without FILE)")
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
"""
)
ENFORCE_DESCRIPTION = (
    "Probe, assess and carry out the plan: write /etc/modprobe.d/kfdguard.conf for the "
    "kernel's layout, disable contradicting lines in other files (only with module.repair: true, after a "
    "backup), install the udev rule, load amdgpu, give /dev/kfd and the render nodes the configured group "
    "and mode, add configured users to the group. Every change is atomic and reported; a second run changes "
    "nothing. Needs root (except with --dry-run or on a simulated machine)."
)
ENFORCE_EPILOG = """exit status: the state after enforcing, as for 'check' (0 ready, 1 degraded, 2 unavailable,
3 no-device, 4 error); 1 instead of 0 when an action failed; 64 usage error.
With --record (kfdguard-enforce.service): the same codes; the pass also keeps the kernel history
and applies the fallback policy, logs to the journal instead of printing the report, and writes
its result to /run/kfdguard/enforce.json (under --root DIR: DIR/run/kfdguard/enforce.json),
which the resident kfdguard.service reads; 4 (error) as well when that file cannot be written.

examples:
  sudo kfdguard enforce --dry-run        show the plan and the diffs, change nothing
  sudo kfdguard enforce
  kfdguard enforce --machine kfd-perms-0600   try it on a simulated machine
"""
FALLBACK_DESCRIPTION = (
    "When the running kernel cannot run compute on the GPU (too old for it, built without "
    "KFD, an amdgpu-dkms not built for it or refused by Secure Boot) but another installed kernel can, "
    "kfdguard recommends that kernel: the last known good, else the newest. 'status' shows every "
    "installed kernel with the reason it can or cannot be used; 'apply' makes the boot loader start the "
    "recommended kernel at the next boot only (--pin: from now on) through grub-reboot/grub-set-default or "
    "bootctl; 'clear' undoes it. kfdguard never reboots by itself."
)
FALLBACK_EPILOG = """exit status: 0 done (or nothing to do), 1 refused or failed, 64 usage error.
With --record (kfdguard-fallback@apply/clear.service): apply pins when fallback.policy is pin (as
the service did), the outcome is logged and written to /run/kfdguard/fallback.json.

examples:
  kfdguard fallback                  same as 'fallback status'
  sudo kfdguard fallback apply && sudo reboot
  sudo kfdguard fallback clear
"""

REMEDY_DESCRIPTION = (
    "Where an application's verdict (kfdguard check: Applications) is fixed by an environment value of its "
    "systemd service - ollama 0.30 on an integrated GPU needs OLLAMA_IGPU_ENABLE=1, ollama 0.12.11 to 0.29 "
    "needs OLLAMA_VULKAN=1 for its Vulkan backend - 'apply' writes it as kfdguard's own drop-in, "
    "/etc/systemd/system/ollama.service.d/50-kfdguard-remedy.conf, and reloads systemd; 'clear' removes it; "
    "'show' (the default) prints what apply would write and changes nothing. kfdguard never overrides a "
    "value another file sets, never replaces a file it did not write, and never restarts the service: "
    "the message says what to do instead. Nothing but this command, or the service's ApplyRemedy method "
    "after polkit's org.kfdguard.configure-applications, writes it."
)
REMEDY_EPILOG = """exit status: 0 done (or nothing left to do; show: there is a plan), 1 refused or failed
(the message says why; nothing was written), 64 usage error.
With --record --instance ACTION-APPLICATION (kfdguard-remedy@apply-ollama.service and
@clear-ollama.service): the outcome is logged and written to /run/kfdguard/remedy.json.

examples:
  kfdguard remedy                          what 'apply ollama' would write, if anything
  sudo kfdguard remedy apply ollama && sudo systemctl restart ollama.service
  sudo kfdguard remedy clear ollama
  kfdguard remedy show ollama --machine 780m-ubuntu2204-ga --json
"""

BOOT_CHECK_DESCRIPTION = (
    "With fallback.policy: assess, kfdguard-boot-check.service (RequiredBy=boot-complete.target) runs this "
    "after the boot pass: it probes and assesses once, read-only, and fails when compute did not come up "
    "because of the running kernel (too old for the GPU, built without KFD, amdgpu-dkms not built for it or "
    "refused by Secure Boot) - only when another installed kernel can run it (the one 'kfdguard fallback' "
    "recommends), unless fallback.assess is 'always'. boot-complete.target is then not reached, "
    "systemd-bless-boot does not mark the boot loader entry good, and once its tries run out systemd-boot "
    "starts the next entry by itself, even for a kernel that hangs before kfdguard runs. Compute that is "
    "down for another reason (permissions, a missing library) never marks a boot bad. With any other policy "
    "it reports and exits 0. GRUB has no boot counting: there, use fallback.policy oneshot (grub-reboot), "
    "which kfdguard arms only after it saw the running kernel fail."
)
BOOT_CHECK_EPILOG = """exit status: 0 the boot is good (or not kfdguard's to judge), 1 the kernel kept
compute from coming up, 64 usage error.

examples:
  kfdguard boot-check                         what kfdguard-boot-check.service would decide now
  kfdguard boot-check --machine legacy-4.15-amdkfd --json
  sudo systemctl enable kfdguard-boot-check.service   (with fallback.policy: assess)
"""

# Options, one row each: (flags, argparse keywords). Commands below name the rows they take.
Option = tuple[tuple[str, ...], dict[str, object]]
JSON: Option = (("--json",), {"action": "store_true", "help": "print one JSON object"})
VERBOSE: Option = (("-v", "--verbose"), {"action": "store_true", "help": "show all evidence for each finding"})
BUS: Option = (("--bus",), {"metavar": "ADDRESS", "help": "bus address (default: the system bus)"})
RECORD: Option = (
    ("--record",),
    {"action": "store_true", "help": "run as the privileged oneshot: log, and write the result under /run/kfdguard"},
)

# One row per command: name, help, description, epilog, takes --root/--machine/--config, options.
COMMANDS: tuple[tuple[str, str, str, str | None, bool, tuple[Option, ...]], ...] = (
    ("check", "check compute readiness once and explain it",
     "Probe the machine once, assess it and print the state, the GPUs and the findings "
     "with their remedies. Read-only: nothing is changed.", CHECK_EPILOG, True,
     ((("--json",), {"action": "store_true",
                      "help": "print one JSON object (keys: state, ready, summary, kernel, gpus, kfd, findings)"}),
      VERBOSE)),
    ("diagnose", "explain why compute does not work, here or in pasted text", DIAGNOSE_DESCRIPTION, DIAGNOSE_EPILOG,
     True,
     ((("file",), {"nargs": "?", "metavar": "FILE", "help": "text to diagnose, - for standard input"}),
      JSON, VERBOSE,
      (("--boots",), {"type": int, "metavar": "N", "help": "also read the kernel log of N earlier boots"}),
      (("--local",), {"action": "store_true", "help": "diagnose in this process instead of asking the service"}),
      (("--bus",), {"metavar": "ADDRESS", "help": "bus address of the service (default: the system bus)"}))),
    ("enforce", "bring the machine to the configured state (modprobe.d, module, permissions)",
     ENFORCE_DESCRIPTION, ENFORCE_EPILOG, True,
     ((("-n", "--dry-run"), {"action": "store_true", "help": "show what would change, with diffs"}),
      JSON, (("-v", "--verbose"), {"action": "store_true", "help": "show diffs and all evidence"}),
      RECORD)),
    ("fallback", "the kernel-fallback policy: which kernel can run compute, and booting it",
     FALLBACK_DESCRIPTION, FALLBACK_EPILOG, True,
     ((("action",), {"nargs": "?", "choices": ["status", "apply", "clear"], "default": "status"}),
      (("--pin",), {"action": "store_true", "help": "apply: make it the default instead of next boot only"}),
      JSON, RECORD)),
    ("remedy", "set an application's service environment as its verdict asks (ollama)",
     REMEDY_DESCRIPTION, REMEDY_EPILOG, True,
     ((("action",), {"nargs": "?", "choices": ["show", "apply", "clear"], "default": "show"}),
      (("application",), {"nargs": "?", "choices": ["ollama"], "default": "ollama",
                          "help": "the application whose service it is (default: ollama)"}),
      JSON, RECORD,
      (("--instance",), {"metavar": "ACTION-APPLICATION",
                         "help": "with --record: the unit's instance name (apply-ollama, clear-ollama)"}))),
    ("boot-check", "was this boot good for compute? (systemd's Automatic Boot Assessment)",
     BOOT_CHECK_DESCRIPTION, BOOT_CHECK_EPILOG, True, (JSON,)),
    ("status", "show what the running service reports",
     "Ask the kfdguard service (org.kfdguard.Guardian1 on the system bus) for its current status: state, "
     "GPUs, findings and the fallback recommendation. Needs no privileges.", None, False, (JSON, BUS)),
    ("reload", "make the service re-read its configuration and check again",
     "Ask the service to re-read /etc/kfdguard/config.yaml and run a full check with its repairs. Allowed "
     "for the active local session and members of the compute group (polkit action org.kfdguard.reload); "
     "polkit may ask for a password.", None, False, (JSON, BUS)),
    ("access", "can I (this user) run GPU compute?",
     "Ask the service whether the calling user can open /dev/kfd and the render nodes of the GPUs that "
     "compute, and if not, why. Exit status 0 when yes, 1 when no.", None, False, (JSON, BUS)),
    ("daemon", "run the service (systemd starts it as python3 -m kfdguard.service)",
     "Run the kfdguard service in the foreground: the boot pass, READY=1 to systemd, then the "
     "org.kfdguard.Guardian1 API. For a simulated machine on a private bus: "
     "kfdguard daemon --root DIR --bus unix:path=/tmp/bus.", None, False,
     ((("--root",), {"metavar": "DIR", "help": "serve the machine whose root directory is DIR"}), BUS,
      (("--backend",), {"choices": ["fast", "next"], "help": "D-Bus library: dbus-fast (default) or dbus-next"}),
      (("--no-enforce",), {"action": "store_true", "help": "observe only: change nothing on the machine"}),
      (("--starter",), {"choices": ["systemd", "child"],
                        "help": "unprivileged: repairs and boot-loader changes go to the privileged oneshots, "
                                "started through systemd or as a child (a simulated machine)"}))),
    ("machines", "list or render the bundled simulated machines",
     "The simulated machines bundled with kfdguard, for trying it out and for tests. "
     "'render NAME DIR' writes one out as a directory tree usable with --root.", None, False,
     ((("action",), {"nargs": "?", "choices": ["list", "render"], "default": "list"}),
      (("name",), {"nargs": "?", "help": "machine to render"}),
      (("dest",), {"nargs": "?", "help": "empty directory to render it into"}),
      (("--json",), {"action": "store_true", "help": "list as JSON"}))),
)  # fmt: skip


def build_parser() -> Parser:
    parser = Parser(
        prog="kfdguard",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run 'kfdguard COMMAND --help' for a command's options. Documentation: kfdguard(8).",
    )
    parser.add_argument("--version", action="version", version=f"kfdguard {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, summary, description, epilog, target, options in COMMANDS:
        command = sub.add_parser(name, help=summary, description=description, epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        positional = [o for o in options if not o[0][0].startswith("-")]
        for flags, keywords in positional:
            command.add_argument(*flags, **keywords)  # type: ignore[arg-type]
        if target:
            _target_options(command)
        for flags, keywords in options:
            if flags[0].startswith("-"):
                command.add_argument(*flags, **keywords)  # type: ignore[arg-type]
    # Commands that bring their own parser.
    from kfdguard.readiness.cli import add_parser as add_wait
    from kfdguard.snapshot.cli import add_parser as add_snapshot
    from kfdguard.userspace import cli as userspace_cli

    add_snapshot(sub)
    add_wait(sub)
    userspace_cli.add_parser(sub)
    from kfdguard.fleet.cli import add_parser as add_fleet

    add_fleet(sub)
    return parser


def _daemon(args: argparse.Namespace) -> int:
    from kfdguard.service.main import main as service_main

    pairs = (("root", args.root), ("bus", args.bus), ("backend", args.backend), ("starter", args.starter))
    argv = [f"--{k}={v}" for k, v in pairs if v]
    return service_main(argv + (["--no-enforce"] if args.no_enforce else []))


def _wait(args: argparse.Namespace) -> int:
    from kfdguard.readiness.cli import finish, run

    finish(run(args))  # the command's end: no interpreter teardown on the consumers' start path


def _metrics(args: argparse.Namespace) -> int:
    from kfdguard.fleet.cli import run

    return run(args, _open)


def _targets(args: argparse.Namespace) -> int:
    from kfdguard.userspace import cli as userspace_cli

    return userspace_cli.run(args)


def _snapshot(args: argparse.Namespace) -> int:
    from kfdguard.snapshot.cli import run

    return run(args, _open)


def _config_source(args: argparse.Namespace, target: Target) -> ConfigSource:
    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.host.paths import HostPath

    path = HostPath(args.config) if args.config else target.root.etc / "kfdguard/config.yaml"
    if args.config:  # a file the caller names is read as named
        return ConfigSource(path, str(path))
    return ConfigSource(path, target.root.display(path), root=target.root)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from kfdguard import log

    # Commands print their own report; progress lines are for the service's journal.
    log.set_level(log.WARNING)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "check": cmd_check,
        "machines": lambda a: cmd_machines(a, parser),
        "diagnose": cmd_diagnose,
        "enforce": cmd_enforce,
        "fallback": cmd_fallback,
        "remedy": cmd_remedy,
        "boot-check": cmd_boot_check,
        "status": cmd_client,
        "reload": cmd_client,
        "access": cmd_client,
        "daemon": _daemon,
        "wait": _wait,
        "snapshot": _snapshot,
        "targets": _targets,
        "metrics": _metrics,
    }
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _open(args: argparse.Namespace) -> tuple[Target, ConfigSource] | None:
    """The machine and the configuration a command works on; None (after saying why) when unusable."""
    from kfdguard.app.targets import TargetError, open_target

    try:
        target = open_target(args.root, args.machine)
    except TargetError as exc:
        print(f"kfdguard: {exc}", file=sys.stderr)
        return None
    return target, _config_source(args, target)


def _needs_root(target: Target, what: str) -> bool:
    import os

    if target.needs_root and os.geteuid() != 0:
        print(f"kfdguard: {what}: run it as root", file=sys.stderr)
        return True
    return False


TEXT_LIMIT = 16 << 20


def cmd_fallback(args: argparse.Namespace) -> int:
    from kfdguard.app import pipeline, usecases
    from kfdguard.app.triggers import Trigger
    from kfdguard.probe import probe
    from kfdguard.publish.report import fallback_json, fallback_text

    if args.record:
        return _fallback_record(args)
    opened = _open(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        if args.action != "status" and _needs_root(target, f"fallback {args.action} changes the boot loader"):
            return EXIT_USAGE
        look = pipeline.check(target.system, config, Trigger.CLI, may_repair=False)
        rec, facts, outcome = look.verdict.fallback, look.facts, None
        assert rec is not None
        if args.action == "apply":
            facts, outcome, _ = usecases.fallback_apply(target.system, config, pin=args.pin, look=look)
        elif args.action == "clear":
            outcome = usecases.fallback_clear(target.system)
        if outcome is not None:
            facts = probe(target.system, log="never")
        if args.json:
            print(json.dumps(fallback_json(rec, facts, outcome), indent=2))
        else:
            sys.stdout.write(fallback_text(rec, facts, outcome, target.name))
    finally:
        target.close()
    return 0 if outcome is None or outcome.ok else 1


def cmd_boot_check(args: argparse.Namespace) -> int:
    from kfdguard.app import pipeline
    from kfdguard.app.triggers import Trigger
    from kfdguard.fallback.assessment import assess_boot, counted

    opened = _open(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        look = pipeline.check(target.system, config, Trigger.CLI, may_repair=False)
        rec = look.verdict.fallback
        assert rec is not None
        fallback = config.loaded.config.fallback
        result = assess_boot(look.verdict, rec, fallback.policy, fallback.assess,
                             counted(look.facts.bootloader.entries, rec.running))  # fmt: skip
    finally:
        target.close()
    if args.json:
        print(
            json.dumps(
                {
                    "schema_version": _schema_version(),
                    "good": result.good,
                    "reason": result.reason,
                    "running": result.running,
                    "fallback": result.fallback,
                    "counted": result.counted,
                    "policy": result.policy,
                },
                indent=2,
            )
        )
    else:
        print(f"kfdguard boot-check: {'good' if result.good else 'bad'}: {result.reason}")
        if not result.good and not result.counted:
            print("  (the running kernel's boot loader entry carries no boot counter: nothing falls back by itself)")
    return 0 if result.good else 1


def cmd_enforce(args: argparse.Namespace) -> int:
    if args.record:  # the boot path (kfdguard-enforce.service): the report's modules are not needed
        return _enforce_record(args)
    from kfdguard.app import pipeline
    from kfdguard.app.triggers import Trigger
    from kfdguard.enforce import EnforceReport
    from kfdguard.publish.report import enforce_json, enforce_text
    from kfdguard.verdict import EXIT_CODES, State

    opened = _open(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        if not args.dry_run and _needs_root(target, "enforce changes system files and devices (or use --dry-run)"):
            return EXIT_USAGE
        outcome = pipeline.check(target.system, config, Trigger.CLI, dry_run=args.dry_run)
    except Exception as exc:
        print(f"kfdguard: enforce failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CODES[State.ERROR]
    finally:
        target.close()
    report = outcome.report if outcome.report is not None else EnforceReport((), (), args.dry_run)
    before, after = outcome.before, outcome.verdict
    if args.json:
        print(json.dumps(enforce_json(report, before, after), indent=2))
    else:
        sys.stdout.write(enforce_text(report, before, after, target.where, verbose=args.verbose))
    code = after.exit_code
    return 1 if code == 0 and report.failed else code


def _oneshot_open(args: argparse.Namespace, what: str) -> tuple[Target, ConfigSource] | None:
    """The machine of a --record run, with the service's logging (the journal reads stderr)."""
    import os

    from kfdguard import log

    log.set_level(log.INFO)
    log.set_journal("JOURNAL_STREAM" in os.environ)
    if getattr(args, "dry_run", False) or getattr(args, "json", False):
        print("kfdguard: --record takes neither --dry-run nor --json", file=sys.stderr)
        return None
    opened = _open(args)
    if opened is not None and _needs_root(opened[0], what):
        opened[0].close()
        return None
    return opened


def _enforce_record(args: argparse.Namespace) -> int:
    from kfdguard.app import oneshot
    from kfdguard.verdict import EXIT_CODES, State

    opened = _oneshot_open(args, "enforce changes system files and devices")
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        _outcome, record = oneshot.enforce(target.system, config)
    except Exception as exc:  # the unit fails with the reason in the journal; the service reports it
        print(f"kfdguard: enforce failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_CODES[State.ERROR]
    finally:
        target.close()
    return record.exit_code


def _fallback_record(args: argparse.Namespace) -> int:
    from kfdguard.app import oneshot

    if args.action not in ("apply", "clear"):
        print("kfdguard: fallback --record: the action is apply or clear", file=sys.stderr)
        return EXIT_USAGE

    def work(target: Target, config: ConfigSource) -> int:
        pin = args.pin or config.loaded.config.fallback.policy == "pin"
        return oneshot.fallback(target.system, config, args.action, pin=pin).exit_code

    return _as_oneshot(args, f"fallback {args.action}", "changes the boot loader", work)


def _as_oneshot(args: argparse.Namespace, name: str, changes: str, work: Callable[[Target, ConfigSource], int]) -> int:
    """A privileged oneshot's --record run: the machine opened as the unit has it, ``work`` done, its exit
    status; a crash is the unit's failure (status 1) with the reason in the journal."""
    opened = _oneshot_open(args, f"{name} {changes}")
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        return work(target, config)
    except Exception as exc:
        print(f"kfdguard: {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        target.close()


def cmd_remedy(args: argparse.Namespace) -> int:
    from kfdguard.app import remedy
    from kfdguard.userspace import dropin

    if args.record:
        return _remedy_record(args)
    if args.instance:
        print("kfdguard: remedy --instance goes with --record", file=sys.stderr)
        return EXIT_USAGE
    opened = _open(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        unit = dropin.SERVICES[args.application]
        if args.action != "show" and _needs_root(target, f"remedy {args.action} changes {unit}"):
            return EXIT_USAGE
        outcome = remedy.carry_out(target, config, "apply" if args.action == "show" else args.action,
                                   args.application, dry=args.action == "show")  # fmt: skip
    finally:
        target.close()
    if args.json:
        print(json.dumps(_remedy_json(args, outcome), indent=2))
    else:
        said = f"kfdguard: remedy {args.action} {args.application}: {outcome.message}"
        print(outcome.message if outcome.ok else said, file=sys.stdout if outcome.ok else sys.stderr)
        if args.action == "show" and outcome.plan is not None:
            sys.stdout.write(outcome.plan.text)
    return 0 if outcome.ok else 1


def _remedy_json(args: argparse.Namespace, outcome: RemedyOutcome) -> dict[str, object]:
    plan = outcome.plan
    return {
        "schema_version": _schema_version(),
        "action": args.action,
        "application": args.application,
        "ok": outcome.ok,
        "refused": outcome.refused,
        "changed": outcome.changed,
        "message": outcome.message,
        "drop_in": None if plan is None else {
            "unit": plan.unit, "path": plan.shown, "environment": dict(plan.environment),
            "added": dict(plan.added), "reasons": list(plan.reasons), "text": plan.text,
        },
    }  # fmt: skip


def _remedy_record(args: argparse.Namespace) -> int:
    from kfdguard.app import remedy
    from kfdguard.userspace import dropin

    try:
        action, application = dropin.parse_instance(args.instance or "")
    except ValueError as exc:
        print(f"kfdguard: remedy --record --instance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _as_oneshot(args, f"remedy {action} {application}", f"changes {dropin.SERVICES[application]}",
                       lambda target, config: remedy.record(target, config, action, application))  # fmt: skip


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
    from kfdguard.publish.report import text_diagnosis_json, text_diagnosis_text

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
    from kfdguard.publish.client import ServiceError, call
    from kfdguard.publish.report import findings_from_bus, status_text

    member = {"status": "GetStatus", "reload": "Reload", "access": "CheckAccess", "diagnose": "Diagnose"}[args.command]
    try:
        if args.command == "access":
            return _access(args)
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
            # The D-Bus dictionary as it is, plus the contract's version (a key no property has: lower case).
            print(json.dumps({"schema_version": _schema_version(), **status}, indent=2))
        else:
            sys.stdout.write(status_text(status))
        return {"ready": 0, "degraded": 1, "unavailable": 2, "no-device": 3}.get(str(status.get("State")), 4)
    if args.command == "reload":
        state = body[0]
        print(
            json.dumps({"schema_version": _schema_version(), "state": state})
            if args.json
            else f"checked again: {state}"
        )
        return 0
    findings = findings_from_bus(body[0])
    if args.json:
        from kfdguard.publish.report import finding_json

        print(
            json.dumps({"schema_version": _schema_version(), "findings": [finding_json(f) for f in findings]}, indent=2)
        )
    else:
        from kfdguard.publish.report import render_findings

        lines = ["kfdguard diagnose (from the service)", "", *render_findings(findings), ""]
        sys.stdout.write("\n".join(lines))
    return 2 if any(f.severity == "error" for f in findings) else 0


def _schema_version() -> str:
    from kfdguard.publish.report import SCHEMA_VERSION

    return SCHEMA_VERSION


# What this process's environment says about the GPUs ROCm programs started from it would see: sent to
# CheckAccessWithEnvironment (the service reads no caller's environment of its own).
VISIBILITY_VARIABLES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def _access(args: argparse.Namespace) -> int:
    """kfdguard access: CheckAccessWithEnvironment with this shell's visibility variables, or CheckAccess
    from a service that predates it (UnknownMethod)."""
    from kfdguard.publish.client import ServiceError, call

    env = {name: os.environ[name] for name in VISIBILITY_VARIABLES if name in os.environ}
    visible: bool | None = None
    why: str | None = None
    try:
        allowed, text, visible, why = call("CheckAccessWithEnvironment", args.bus, signature="a{ss}", body=[env])
    except ServiceError as exc:
        if exc.name != "org.freedesktop.DBus.Error.UnknownMethod":
            raise
        allowed, text = call("CheckAccess", args.bus)
    if args.json:
        out: dict[str, object] = {"schema_version": _schema_version(), "allowed": allowed, "explanation": text}
        if visible is not None:
            out |= {"visible": visible, "environment": why}
        print(json.dumps(out, indent=2))
    else:
        print(("yes: " if allowed else "no: ") + text)
        if visible is not None:
            print(("GPUs visible here: " if visible else "no GPU visible here: ") + str(why))
    return 0 if allowed and visible is not False else 1


def cmd_check(args: argparse.Namespace, *, full: bool = False) -> int:
    from kfdguard.app import pipeline, usecases
    from kfdguard.app.triggers import Trigger
    from kfdguard.publish.report import to_json, to_text
    from kfdguard.verdict import EXIT_CODES, State

    opened = _open(args)
    if opened is None:
        return EXIT_USAGE
    target, config = opened
    try:
        if full:
            outcome = usecases.diagnose(target.system, config, args.boots)
        else:
            # Read-only: the command narrows the CLI trigger to no repair.
            outcome = pipeline.check(target.system, config, Trigger.CLI, may_repair=False, log="always")
        # The software inventory is not part of the pipeline (the service takes it after READY):
        # add it, and assess again with it, which is pure and cheap.
        from kfdguard.assess import assess
        from kfdguard.userspace.cli import with_inventory

        facts = with_inventory(outcome.facts, target, outcome.loaded.config)
        verdict = assess(facts, outcome.loaded.config, outcome.loaded.errors)
    except Exception as exc:
        print(f"kfdguard: check failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.json:
            failed = {"schema_version": _schema_version(), "state": str(State.ERROR), "ready": False, "error": str(exc)}
            print(json.dumps(failed))
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
    from kfdguard.app.targets import TargetError, machine_names, render_machine

    if args.action == "render":
        if not args.name or not args.dest:
            parser.error("machines render needs NAME and DIR")
        try:
            root = render_machine(args.name, args.dest)
        except TargetError as exc:
            print(f"kfdguard: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"rendered {args.name} into {root.path}; inspect it with: kfdguard check --root {root.path}")
        return 0
    machines = machine_names()
    if args.json:
        # An object since 1.2 (a list before, outside the contract): schema_version needs a key.
        listed = [{"name": name, "description": text} for name, text in machines]
        print(json.dumps({"schema_version": _schema_version(), "machines": listed}, indent=2))
        return 0
    import textwrap

    for name, text in machines:
        print(name)
        print(textwrap.fill(text, width=96, initial_indent="    ", subsequent_indent="    "))
    return 0
