"""D-Bus clients for the benchmarks: one sequential caller for latency, many for throughput.

Each connection calls GetStatus back to back (a script polling the service).
The load runs in several processes so the clients' own Python is not what is
measured:

    python -m benchmarks.load --bus ADDRESS --dest NAME --connections 10 --seconds 3
    python -m benchmarks.load --bus ADDRESS --dest NAME --connections 10 --calls 1000

prints one JSON object: {"calls": N, "errors": N, "seconds": S}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from kfdguard.service.backend import load
from tools.launch import NAME, PATH

CLIENT_BACKEND = "fast"  # the same client for every service measured: only the service differs


async def _connect(address: str) -> Any:
    b = load(CLIENT_BACKEND)
    return b, await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()


async def latencies(address: str, dest: str, calls: int, warmup: int = 300) -> list[float]:
    """Seconds per GetStatus round trip, one call at a time."""
    b, bus = await _connect(address)
    samples: list[float] = []
    try:
        for i in range(warmup + calls):
            msg = b.Message(destination=dest, path=PATH, interface=NAME, member="GetStatus")
            start = time.perf_counter()
            reply = await bus.call(msg)
            elapsed = time.perf_counter() - start
            if reply.message_type != b.MessageType.METHOD_RETURN:
                raise RuntimeError(f"GetStatus failed: {reply.error_name}")
            if i >= warmup:
                samples.append(elapsed)
    finally:
        bus.disconnect()
    return samples


async def _caller(address: str, dest: str, until: float, calls: int, tally: dict[str, int]) -> None:
    b, bus = await _connect(address)
    try:
        done = 0
        while (calls and done < calls) or (not calls and time.perf_counter() < until):
            reply = await bus.call(b.Message(destination=dest, path=PATH, interface=NAME, member="GetStatus"))
            done += 1
            tally["calls"] += 1
            if reply.message_type != b.MessageType.METHOD_RETURN:
                tally["errors"] += 1
    finally:
        bus.disconnect()


async def run_load(address: str, dest: str, connections: int, seconds: float, calls: int) -> dict[str, float]:
    tally = {"calls": 0, "errors": 0}
    start = time.perf_counter()
    until = start + seconds
    await asyncio.gather(*(_caller(address, dest, until, calls, tally) for _ in range(connections)))
    return {"calls": tally["calls"], "errors": tally["errors"], "seconds": time.perf_counter() - start}


def spawn(
    address: str, dest: str, processes: int, connections: int, *, seconds: float = 0, calls: int = 0
) -> dict[str, float]:
    """Run the load in ``processes`` processes at once; totals and the wall time of the slowest."""
    argv = [sys.executable, "-m", "benchmarks.load", "--bus", address, "--dest", dest,
            "--connections", str(connections), "--seconds", str(seconds), "--calls", str(calls)]  # fmt: skip
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    totals = {"calls": 0.0, "errors": 0.0, "seconds": 0.0}
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        if proc.returncode:
            raise RuntimeError(f"load process failed ({proc.returncode})")
        part = json.loads(out)
        totals["calls"] += part["calls"]
        totals["errors"] += part["errors"]
        totals["seconds"] = max(totals["seconds"], part["seconds"])
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bus", required=True, help="bus address")
    parser.add_argument("--dest", default=NAME, help="service to call (default: %(default)s)")
    parser.add_argument("--connections", type=int, default=10, help="connections in this process")
    parser.add_argument("--seconds", type=float, default=0, help="call for this long")
    parser.add_argument("--calls", type=int, default=0, help="or make this many calls per connection")
    args = parser.parse_args()
    if not args.seconds and not args.calls:
        parser.error("give --seconds or --calls")
    result = asyncio.run(run_load(args.bus, args.dest, args.connections, args.seconds, args.calls))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
