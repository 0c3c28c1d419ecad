"""kfdguard's service entry point: the boot pass first, the event loop after READY.

Only what the boot pass needs is imported before READY=1: asyncio and the
D-Bus library together cost several times an interpreter's start, and a
client that calls early is held by D-Bus activation until the name appears.
"""

from __future__ import annotations

# The C module: signal.py builds its enums at import (3 M instructions before READY); no stub.
import _signal  # type: ignore[import-not-found]
import gc
import os
import sys

from kfdguard import log
from kfdguard.service.core import Background, Service, error_status
from kfdguard.service.notify import notify
from kfdguard.service.options import early_signals, parse
from kfdguard.service.status import PassResult


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


def run() -> None:
    """The unit's entry (kfdguard.service's ExecStart): main() with sys.argv, then exit with its status."""
    raise SystemExit(main())


def main(argv: list[str] | None = None) -> int:
    # The cycle collector waits until READY: its passes over the objects of the modules being
    # imported were a twentieth of the start's instructions (callgrind), and the boot pass is
    # bounded (BOOT_DEADLINE). It runs from READY on, for the life of the service.
    gc.disable()
    opts = parse(sys.argv[1:] if argv is None else argv)
    # SIGHUP's default action ends the process, and systemd counts that as a clean
    # exit (no restart): a "systemctl reload" during the boot pass must only be noted,
    # for the loop to honour once it runs.
    _signal.signal(_signal.SIGHUP, lambda signum, _frame: early_signals.append(signum))
    log.set_journal("JOURNAL_STREAM" in os.environ)
    # The edge: which machine, and where its device events come from. The service
    # below runs the same whatever the answer is.
    from kfdguard.app.pipeline import ConfigSource
    from kfdguard.app.targets import service_target

    target = service_target(opts.root)
    root = target.root
    config_path = root.etc / "kfdguard/config.yaml"
    # root=: under a root that is not / (a simulated machine, an image) the file is read beneath it.
    config = ConfigSource(config_path, root.display(config_path), root.var_lib / "kfdguard/config.cache", root=root)
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
    if notify(f"READY=1\nSTATUS={status.state}: {status.summary}", early=True):
        log.info(f"READY=1 sent; {status.state}: {status.summary}")
    elif os.environ.get("NOTIFY_SOCKET"):
        log.error("READY=1 could not be sent to $NOTIFY_SOCKET; serving anyway")
    service.ready_sent = True
    gc.enable()
    from kfdguard.service.loop import serve

    return serve(service, opts, target.events)
