"""After READY: the event loop, the bus, the watchdog, device events and signals."""

from __future__ import annotations

import asyncio
import signal
from functools import partial

from kfdguard import log
from kfdguard.fleet.publish import serve as fleet_publish
from kfdguard.service.core import PassResult, Service, error_status
from kfdguard.service.dbusapi import NAME, GuardianAPI
from kfdguard.service.events import SETTLE, Debouncer, watch_simulation, watch_udev
from kfdguard.service.notify import notify, watchdog_interval

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.service.main import Options


def serve(service: Service, opts: Options) -> int:
    try:
        return asyncio.run(Loop(service, opts).run())
    except KeyboardInterrupt:
        return 0


class Loop:
    def __init__(self, service: Service, opts: Options) -> None:
        self.service = service
        self.opts = opts
        self.stop = asyncio.Event()
        self.checking = False
        self.again: str | None = None

    async def run(self) -> int:
        from kfdguard.service.backend import keep_writing_when_full, load

        loop = asyncio.get_running_loop()
        backend = load(self.opts.backend)
        try:
            bus = await backend.MessageBus(bus_address=self.opts.bus, bus_type=backend.BusType.SYSTEM).connect()
        except Exception as exc:
            log.error(f"cannot connect to the bus: {exc}")
            return 1
        keep_writing_when_full(bus)
        api = GuardianAPI(bus, backend, self.service, self.service.loaded.config.timeouts.polkit)
        bus.add_message_handler(api.handle)
        reply = await bus.request_name(NAME, backend.NameFlag.DO_NOT_QUEUE)
        if reply not in (backend.RequestNameReply.PRIMARY_OWNER, backend.RequestNameReply.ALREADY_OWNER):
            log.error(f"cannot own {NAME} on the bus ({reply}): is another kfdguard running?")
            return 1
        log.info(f"serving {NAME} ({backend.name})")
        self.service.listeners.append(api.publish)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: self.request("SIGHUP", reload=True))
        from kfdguard.service.main import early_signals

        if signal.SIGHUP in early_signals:
            log.info("SIGHUP arrived during start-up: reloading the configuration and checking again")
            self.request("SIGHUP during start-up", reload=True)
        debouncer = Debouncer(loop, SETTLE, self.request)
        # The watchers stay referenced for the loop's lifetime (a collected monitor closes its socket).
        if self.service.system.simulated:
            from kfdguard.simulate.state import uevent_fifo

            self.watcher: object | None = watch_simulation(loop, uevent_fifo(self.service.system.root), debouncer.poke)
        else:
            self.watcher = watch_udev(loop, debouncer.poke)
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

    def request(self, reason: str, *, reload: bool = False) -> None:
        """Ask for a re-check; requests during a check are folded into one more."""
        if self.checking:
            self.again = reason
            return
        asyncio.get_running_loop().create_task(self._recheck(reason, reload))

    async def _recheck(self, reason: str, reload: bool) -> None:
        loop = asyncio.get_running_loop()
        self.checking = True
        try:
            if reload:
                await loop.run_in_executor(None, self.service.reload_config)
            # A device event only re-evaluates: repairing on every event would fight an
            # administrator who unloads amdgpu or changes a node on purpose. SIGHUP
            # (systemctl reload), like Reload over D-Bus, is a request to act.
            enforce = None if reload else False
            result: PassResult = await loop.run_in_executor(None, partial(self.service.check, enforce=enforce))
            self.service.last = result
            self.service.transition(result.status, reason)
            await loop.run_in_executor(None, self.service.record_and_fallback, result)
            self.service.republish("history")
        except Exception as exc:
            log.error(f"re-check after {reason} failed: {type(exc).__name__}: {exc}")
        finally:
            self.checking = False
        if self.again is not None:
            again, self.again = self.again, None
            self.request(again)
