"""The baseline: the bare D-Bus library doing what kfdguard's service does, and nothing else.

It copies kfdguard's GetStatus reply once (the same body, so marshalling costs
the same), then answers GetStatus from a raw message handler, as cheaply as
the library allows; and on every line written to a FIFO it emits a signal, the
floor of "event in, PropertiesChanged out". Run by the benchmarks:

    python -m benchmarks.baresvc --bus ADDRESS --backend fast|next --fifo PATH
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from kfdguard.publish.names import BUS_NAME, OBJECT_PATH
from kfdguard.service.backend import load

# Literal, not imported: the baseline loads nothing of kfdguard but the library switch.
NAME, PATH = BUS_NAME, OBJECT_PATH
BENCH_NAME = "org.kfdguard.Bench"


async def serve(address: str, backend_name: str, fifo: str) -> None:
    b = load(backend_name)
    bus = await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect()
    reply = await bus.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="GetStatus"))
    body: list[Any] = reply.body

    def handle(msg: Any) -> Any:
        if msg.message_type != b.MessageType.METHOD_CALL or msg.path != PATH:
            return None
        if msg.member == "GetStatus":
            return b.Message.new_method_return(msg, "a{sv}", body)
        return None

    bus.add_message_handler(handle)
    await bus.request_name(BENCH_NAME, b.NameFlag.DO_NOT_QUEUE)
    loop = asyncio.get_running_loop()
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o600)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    changed = {"State": b.Variant("s", "ready")}

    def readable() -> None:
        try:
            os.read(fd, 4096)
        except BlockingIOError:
            return
        properties = "org.freedesktop.DBus.Properties"
        bus.send(b.Message.new_signal(PATH, properties, "PropertiesChanged", "sa{sv}as", [NAME, changed, []]))

    loop.add_reader(fd, readable)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bus", required=True, help="bus address")
    parser.add_argument("--backend", default="fast", choices=["fast", "next"])
    parser.add_argument("--fifo", required=True, help="FIFO whose lines become signals")
    args = parser.parse_args()
    asyncio.run(serve(args.bus, args.backend, args.fifo))


if __name__ == "__main__":
    main()
