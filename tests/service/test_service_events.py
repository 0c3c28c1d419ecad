"""Device events: bursts fold into one re-check, and a burst never postpones its own reaction."""

from __future__ import annotations

import asyncio

from kfdguard.service.events import Debouncer


class FakeLoop:
    """Records call_later instead of waiting: the window's arithmetic without a clock."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[float, object]] = []

    def call_later(self, delay: float, callback: object) -> object:
        self.scheduled.append((delay, callback))
        return object()  # a handle: only its presence matters


def test_a_burst_is_one_check_with_every_reason() -> None:
    fired: list[str] = []
    loop = FakeLoop()
    debouncer = Debouncer(loop, 0.02, fired.append)  # type: ignore[arg-type]
    for reason in ("add kfd kfd", "add drm card0", "add drm renderD128", "add kfd kfd"):
        debouncer.poke(reason)
    # One timer for the whole burst: later events joined it without rescheduling.
    assert [delay for delay, _ in loop.scheduled] == [0.02]
    callback = loop.scheduled[0][1]
    callback()  # type: ignore[operator]
    assert fired == ["add kfd kfd, add drm card0, add drm renderD128"]
    debouncer.poke("remove kfd kfd")
    assert len(loop.scheduled) == 2  # after firing, the next event opens a new window


def test_on_a_real_loop() -> None:
    async def run() -> list[str]:
        fired: list[str] = []
        debouncer = Debouncer(asyncio.get_running_loop(), 0.01, fired.append)
        debouncer.poke("a")
        debouncer.poke("b")
        await asyncio.sleep(0.1)
        debouncer.poke("c")
        await asyncio.sleep(0.1)
        return fired

    assert asyncio.run(run()) == ["a, b", "c"]
