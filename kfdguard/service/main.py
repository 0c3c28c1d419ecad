"""kfdguard's service entry point: the boot pass first, the event loop after READY.

Only what the boot pass needs is imported before READY=1: asyncio and the
D-Bus library together cost several times an interpreter's start, and a
client that calls early is held by D-Bus activation until the name appears.
"""

from __future__ import annotations

import gc
import os
import signal
import sys

from kfdguard import log
from kfdguard.service.core import Background, PassResult, Service, error_status
from kfdguard.service.notify import notify

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


def boot_pass(service: Service, deadline: float) -> PassResult | None:
    """Run the first check in a thread and give up waiting at the deadline."""
    work = Background(service.check)  # Trigger.BOOT: the first look, with repairs
    if work.join(deadline) and work.result:
        return work.result[0]
    if work.failure:
        log.error(f"boot pass failed: {type(work.failure[0]).__name__}: {work.failure[0]}")
        service.transition(error_status(f"the check failed: {work.failure[0]}"), "boot pass")
        return None
    log.warning(f"boot pass still running after {deadline:g} s; reporting READY and finishing it in the background")
    service.pending = work
    return None


def main(argv: list[str] | None = None) -> int:
    # The cycle collector waits until READY: its passes over the objects of the modules being
    # imported were a twentieth of the start's instructions (callgrind), and the boot pass is
    # bounded (BOOT_DEADLINE). It runs from READY on, for the life of the service.
    gc.disable()
    opts = parse(sys.argv[1:] if argv is None else argv)
    # SIGHUP's default action ends the process, and systemd counts that as a clean
    # exit (no restart): a "systemctl reload" during the boot pass must only be noted,
    # for the loop to honour once it runs.
    signal.signal(signal.SIGHUP, lambda signum, _frame: early_signals.append(signum))
    log.set_journal("JOURNAL_STREAM" in os.environ)
    # The edge: which machine, and where its device events come from. The service
    # below runs the same whatever the answer is.
    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.app.targets import service_target

    target = service_target(opts.root)
    root = target.root
    config_path = root.etc / "kfdguard/config.yaml"
    config = ConfigSource(config_path, root.display(config_path), root.var_lib / "kfdguard/config.cache")
    privsep = None
    system = target.system
    if opts.starter is not None and opts.enforce:
        from kfdguard.service.privsep import Privsep, UnprivilegedSystem

        # The boot pass was kfdguard-enforce.service's (ordered before this unit): read what it left.
        privsep = Privsep(opts.starter, root)
        privsep.load()
        system = UnprivilegedSystem(system, privsep)
    # With a starter this process changes nothing itself: every check is read-only.
    service = Service(system, config, enforce=opts.enforce and privsep is None)
    service.privsep = privsep
    for error in service.loaded.errors:
        log.error(f"configuration: {error}")
    result = boot_pass(service, opts.deadline)
    if result is not None:
        service.last = result
        service.transition(result.status, "boot pass")
    status = service.status
    notify(f"READY=1\nSTATUS={status.state}: {status.summary}", early=True)
    service.ready_sent = True
    gc.enable()
    log.info(f"READY=1 sent; {status.state}: {status.summary}")
    from kfdguard.service.loop import serve

    return serve(service, opts, target.events)
