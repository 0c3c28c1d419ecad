"""Requests for a check, from every source of the loop, one at a time.

A device event, SIGHUP and Reload over D-Bus all come here with their
trigger. One check runs at a time; what arrives meanwhile is folded into one
more check with the strongest trigger (``triggers.fold``), so a SIGHUP during
a device event's re-check still reloads and repairs. After each check: the
transition (state, STATUS=, the bus), then the history and the fallback
policy, then the bus again.
"""

from __future__ import annotations

import asyncio

from kfdguard import log
from kfdguard.app.triggers import Trigger, fold, policy
from kfdguard.service.core import Service
from kfdguard.service.status import PassResult


class Checks:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.checking = False
        self.again: Trigger | None = None  # the folded trigger of the requests that came during a check
        self.reasons: list[str] = []
        self.waiters: list[asyncio.Future[PassResult]] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def request(self, trigger: Trigger, reason: str) -> None:
        """Ask for a check and do not wait for it."""
        self._enqueue(trigger, reason, None)

    async def run(self, trigger: Trigger, reason: str) -> PassResult:
        """Ask for a check and wait for its result (one that started after this request)."""
        waiter: asyncio.Future[PassResult] = asyncio.get_running_loop().create_future()
        self._enqueue(trigger, reason, waiter)
        return await waiter

    def _enqueue(self, trigger: Trigger, reason: str, waiter: asyncio.Future[PassResult] | None) -> None:
        if self.checking:
            self.again = fold(self.again, trigger)
            self.reasons.append(reason)
            if waiter is not None:
                self.waiters.append(waiter)
            return
        self.checking = True
        self._start(trigger, reason, [waiter] if waiter is not None else [])

    def _start(self, trigger: Trigger, reason: str, waiters: list[asyncio.Future[PassResult]]) -> None:
        task = asyncio.get_running_loop().create_task(self._check(trigger, reason, waiters))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _check(self, trigger: Trigger, reason: str, waiters: list[asyncio.Future[PassResult]]) -> None:
        loop = asyncio.get_running_loop()
        service = self.service
        try:
            if service.privsep is not None and policy(trigger).repair:
                # Issue 21: the repairs are kfdguard-enforce.service's; this check then looks at what it left.
                await service.privsep.enforce(reason)
            result: PassResult = await loop.run_in_executor(None, service.check, trigger)
        except Exception as exc:
            log.error(f"re-check after {reason} failed: {type(exc).__name__}: {exc}")
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            self._next()
            return
        service.last = result
        service.transition(result.status, reason)
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(result)
        try:
            await loop.run_in_executor(None, service.record_and_fallback, result)
            service.republish("history")
        except Exception as exc:
            log.error(f"recording the check after {reason} failed: {type(exc).__name__}: {exc}")
        self._next()

    def _next(self) -> None:
        if self.again is None:
            self.checking = False
            return
        trigger, reasons, waiters = self.again, self.reasons, self.waiters
        self.again, self.reasons, self.waiters = None, [], []
        self._start(trigger, ", ".join(dict.fromkeys(reasons)), waiters)


__all__ = ["Checks"]
