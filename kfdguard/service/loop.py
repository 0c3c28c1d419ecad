"""After READY: the event loop, the bus, the watchdog, device events and signals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from kfdguard import log
from kfdguard.app.targets import UDEV, EventSource
from kfdguard.app.triggers import Trigger
from kfdguard.fleet.publish import serve as fleet_publish
from kfdguard.publish.names import BUS_NAME
from kfdguard.service.checks import Checks
from kfdguard.service.core import Service, error_status
from kfdguard.service.dbusapi import GuardianAPI
from kfdguard.service.events import SETTLE, Debouncer, watch
from kfdguard.service.notify import notify, watchdog_interval
from kfdguard.service.options import early_signals

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kfdguard.service.options import Options
    from kfdguard.service.starter import ChildStarter, SystemdStarter


def serve(service: Service, opts: Options, events: EventSource = UDEV) -> int:
    try:
        return asyncio.run(Loop(service, opts, events).run())
    except KeyboardInterrupt:
        return 0


class Loop:
    def __init__(self, service: Service, opts: Options, events: EventSource = UDEV) -> None:
        self.service = service
        self.opts = opts
        self.events = events  # chosen by the target: the loop does not know what is behind it
        self.stop = asyncio.Event()
        self.checks = Checks(service)

    async def run(self) -> int:
        from kfdguard.service.backend import keep_writing_when_full, load

        loop = asyncio.get_running_loop()
        backend = load(self.opts.backend)
        try:
            # Unix fds negotiated: dbus-broker 37's GetConnectionCredentials reply carries the caller's
            # pidfd (ProcessFD), and the broker disconnects a peer that cannot receive it, so any local
            # user calling CheckAccess would drop the service off the bus. kfdguard takes no fd argument:
            # close_fds closes every descriptor a message brings, before any other handler sees it.
            bus = await backend.MessageBus(
                bus_address=self.opts.bus, bus_type=backend.BusType.SYSTEM, negotiate_unix_fd=True
            ).connect()
        except Exception as exc:
            log.error(f"cannot connect to the bus: {exc}")
            return 1
        bus.add_message_handler(close_fds)
        keep_writing_when_full(bus)
        privsep = self.service.privsep
        if privsep is not None:
            privsep.starter = _starter(privsep.starter_kind, self.opts, bus, backend)
            if await privsep.check_last_run():
                self.service.transition(privsep.annotate(self.service.base), "kfdguard-enforce.service's last start")
        api = GuardianAPI(bus, backend, self.service, self.service.loaded.config.timeouts.polkit, checks=self.checks)
        bus.add_message_handler(api.handle)
        # Before anything can change the status: the adapter's cache follows every transition.
        self.service.listeners.append(api.publish)
        debouncer = Debouncer(loop, SETTLE, self.device_event)
        # Live health (kfdguard/health): the kernel log followed, uevents' WEDGED= read.
        from kfdguard.health.follow import follow
        from kfdguard.service.health import HealthFeed

        feed = HealthFeed(self.service, self.checks, loop)
        self.follower = follow(loop, self.events.log, feed.log_line)
        # The watcher stays referenced for the loop's lifetime (a collected monitor closes its socket).
        self.watcher = watch(self.events, loop, debouncer.poke, feed.uevent)
        # All of it before the name is taken: a client that sees the name sees every change from then on.
        await self._watch_sleep(bus, backend)
        reply = await bus.request_name(BUS_NAME, backend.NameFlag.DO_NOT_QUEUE)
        if reply not in (backend.RequestNameReply.PRIMARY_OWNER, backend.RequestNameReply.ALREADY_OWNER):
            log.error(f"cannot own {BUS_NAME} on the bus ({reply}): is another kfdguard running?")
            return 1
        log.info(f"serving {BUS_NAME} ({backend.name})")
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: self.checks.request(Trigger.SIGHUP, "SIGHUP"))
        if signal.SIGHUP in early_signals:
            log.info("SIGHUP arrived during start-up: reloading the configuration and checking again")
            self.checks.request(Trigger.SIGHUP, "SIGHUP during start-up")
        tasks = [loop.create_task(self._after_boot())]
        # Fleet hook (kfdguard.fleet.publish): node_exporter textfile and NFD file, on each transition and a timer.
        tasks.append(loop.create_task(fleet_publish(self.service)))
        interval = watchdog_interval()
        if interval:
            tasks.append(loop.create_task(self._watchdog(interval)))
        lost = loop.create_task(self._bus_lost(bus))
        await asyncio.wait([lost, loop.create_task(self.stop.wait())], return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        feed.flush()  # a health record still due is written before the service goes (a shutdown, a restart)
        if lost.done():
            # Alive but off the bus nobody can reach us: exit with failure, so that
            # systemd (Restart=on-failure) starts a fresh service on a fresh connection.
            log.error(f"lost the connection to the bus ({lost.result()}); exiting so that systemd restarts kfdguard")
            return 1
        lost.cancel()
        notify("STOPPING=1")
        log.info("stopping")
        bus.disconnect()
        return 0

    async def _watch_sleep(self, bus: object, backend: object) -> None:
        """Re-check after a resume (logind's PrepareForSleep(false)); without the match, only events remain."""
        from kfdguard.service.sleep import SleepWatch

        self.sleep = SleepWatch(bus, backend, self.checks)
        try:
            await self.sleep.start()
        except Exception as exc:  # the library hands over why the call failed
            log.warning(f"cannot watch for resume from sleep ({exc}): devices are re-checked on their events only")

    @staticmethod
    async def _bus_lost(bus: object) -> str:
        try:
            await bus.wait_for_disconnect()  # type: ignore[attr-defined]
        except Exception as exc:  # the library hands over why the connection ended
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return "the bus closed it"

    async def _watchdog(self, interval: float) -> None:
        # Sent from the loop itself: a loop blocked for longer than WatchdogSec
        # stops the pings and systemd restarts the service.
        while True:
            notify("WATCHDOG=1")
            await asyncio.sleep(interval)

    async def _after_boot(self) -> None:
        loop = asyncio.get_running_loop()
        service = self.service
        if service.pending is not None:
            await loop.run_in_executor(None, service.pending.join)
            if service.pending.result:
                service.last = service.pending.result[0]
                service.transition(service.last.status, "boot pass (late)")
            elif service.pending.failure:
                failure = service.pending.failure[0]
                log.error(f"boot pass failed: {type(failure).__name__}: {failure}")
                service.transition(error_status(f"the check failed: {failure}"), "boot pass (late)")
            service.pending = None
        if service.last is not None:
            await loop.run_in_executor(None, service.record_and_fallback, service.last)
            service.republish("history")
            base = service.last
            inventory = await loop.run_in_executor(None, service.take_inventory)
            # Published from the loop, like every transition, and only over the result it extends:
            # a check that finished meanwhile (SIGHUP, an event) has taken the inventory itself.
            if inventory is not None and service.last is base:
                service.last = inventory
                service.transition(inventory.status, "software inventory")

    def device_event(self, reason: str) -> None:
        self.checks.request(Trigger.DEVICE_EVENT, reason)


def close_fds(msg: Any) -> None:
    """Close the file descriptors a message carried (a caller's pidfd, or a hostile client's burst);
    None: the message goes on to the next handler, or to the reply it answers."""
    fds = getattr(msg, "unix_fds", None) or ()
    for fd in fds:
        if isinstance(fd, int) and fd >= 0:
            with contextlib.suppress(OSError):  # already closed: nothing was kept open
                os.close(fd)


def _starter(kind: str, opts: Options, bus: object, backend: object) -> ChildStarter | SystemdStarter:
    """The command line's choice of starter (issue 21), given the connected bus."""
    from kfdguard.service.starter import ChildStarter, SystemdStarter

    if kind == "systemd":
        return SystemdStarter(bus, backend)
    return ChildStarter(opts.root)
