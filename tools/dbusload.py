"""Load on kfdguard's D-Bus service: many clients, many status calls, every answer checked.

Each client has its own connection and calls GetStatus and Properties.Get
(State, Ready, Devices...) one after another; every reply is compared with
what the service said at the start. The service's resident memory (VmRSS) is
read after a warm-up round and after the run: the answers come from a cache,
so the memory must stay flat.

    sudo python -m tools.dbusload --clients 100 --calls 1000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tools.dbusfuzz import NAME, PATH, PROPERTIES, Target, _alive, load_contract, vm_rss_kb

# What a client asks, in turn: the whole status, then single properties.
PROPERTY_GETS = ("State", "Ready", "Summary", "Devices", "Findings", "LastCheck")


@dataclass
class LoadResult:
    clients: int
    calls: int  # answered calls, all clients
    seconds: float
    errors: Counter[str] = field(default_factory=Counter)  # error name or mismatch -> count
    rss_warm_kb: int | None = None
    rss_after_kb: int | None = None

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    def text(self) -> str:
        lines = [f"{self.clients} clients, {self.calls} calls in {self.seconds:.2f} s ({self.rate:.0f} calls/s)"]
        if self.rss_warm_kb is not None and self.rss_after_kb is not None:
            grown = self.rss_after_kb - self.rss_warm_kb
            lines.append(f"service VmRSS after warm-up {self.rss_warm_kb} kB, after the run {self.rss_after_kb} kB "
                         f"({grown:+d} kB)")  # fmt: skip
        lines.append("errors: " + (", ".join(f"{n} {e}" for e, n in self.errors.most_common()) or "none"))
        return "\n".join(lines)


async def _client(address: str, calls: int, expected: dict[str, Any], result: LoadResult, index: int) -> None:
    from kfdguard.service.backend import load

    b = load("fast")
    bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
    try:
        for i in range(calls):
            if i % 2 == 0:
                msg = b.Message(destination=NAME, path=PATH, interface=NAME, member="GetStatus")
            else:
                name = PROPERTY_GETS[(i // 2 + index) % len(PROPERTY_GETS)]
                msg = b.Message(destination=NAME, path=PATH, interface=PROPERTIES, member="Get", signature="ss",
                                body=[NAME, name])  # fmt: skip
            try:
                reply = await asyncio.wait_for(bus.call(msg), 30)
            except TimeoutError:
                result.errors["no answer within 30 s"] += 1
                continue
            if reply.message_type == b.MessageType.ERROR:
                result.errors[str(reply.error_name)] += 1
                continue
            if msg.member == "GetStatus":
                got = {k: v.value for k, v in reply.body[0].items() if k != "LastCheck"}
                ok = reply.signature == "a{sv}" and got == {k: v for k, v in expected.items() if k != "LastCheck"}
            else:
                name = msg.body[1]
                ok = reply.signature == "v" and (name == "LastCheck" or reply.body[0].value == expected[name])
            if not ok:
                result.errors[f"wrong answer to {msg.member}"] += 1
                continue
            result.calls += 1
    finally:
        bus.disconnect()
        await bus.wait_for_disconnect()


async def _status(address: str) -> dict[str, Any]:
    from kfdguard.service.backend import load

    b = load("fast")
    bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
    try:
        reply = await bus.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="GetStatus"))
        status: dict[str, Any] = {k: v.value for k, v in reply.body[0].items()}
    finally:
        bus.disconnect()
    if set(status) != set(load_contract().properties):
        raise RuntimeError(f"GetStatus does not carry every property: {sorted(status)}")
    return status


async def _round(address: str, clients: int, calls: int, expected: dict[str, Any], result: LoadResult,
                 deadline: float) -> None:  # fmt: skip
    tasks = [asyncio.ensure_future(_client(address, calls, expected, result, i)) for i in range(clients)]
    _, late = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
    for task in late:
        task.cancel()
    if late:
        # A service that stops answering must end the run, not hang it (the bus has no reply timeout).
        result.errors["clients unfinished at the deadline"] += len(late)
        await asyncio.wait(late)


async def run_load(address: str, clients: int, calls: int, pid: int | None = None, warmup: int = 20,
                   limit: float = 600.0) -> LoadResult:  # fmt: skip
    """``clients`` connections, ``calls`` checked calls each; VmRSS after a warm-up round and after the run.

    ``limit`` seconds bound the whole run.
    """
    deadline = time.monotonic() + limit
    expected = await _status(address)
    warm = LoadResult(clients, 0, 0.0)
    await _round(address, clients, warmup, expected, warm, deadline)
    result = LoadResult(clients, 0, 0.0, errors=warm.errors)
    if pid is not None:
        result.rss_warm_kb = vm_rss_kb(pid)
    start = time.monotonic()
    await _round(address, clients, calls, expected, result, deadline)
    result.seconds = time.monotonic() - start
    if pid is not None and _alive(pid):
        result.rss_after_kb = vm_rss_kb(pid)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.dbusload", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--clients", type=int, default=100, help="concurrent client connections (default 100)")
    p.add_argument("--calls", type=int, default=1000, help="calls per client (default 1000)")
    p.add_argument("--machine", default="rx7900xtx-ubuntu2404", help="bundled simulated machine for the service")
    p.add_argument("--backend", choices=("fast", "next"), default="fast", help="the service's D-Bus library")
    p.add_argument(
        "--layout",
        choices=("single", "split"),
        default="single",
        help="split: the unprivileged service and its oneshot (issue 21)",
    )
    p.add_argument("--limit", type=float, default=600.0, help="seconds the whole run may take (default 600)")
    args = p.parse_args(argv)
    target = Target(args.machine, args.backend, args.layout)
    try:
        target.wait_ready()
        result = asyncio.run(run_load(target.address, args.clients, args.calls, target.proc.pid, limit=args.limit))
    finally:
        target.close()
    print(result.text())
    return 1 if result.errors else 0


if __name__ == "__main__":
    sys.exit(main())
