"""Issue 35: a costly method anyone may call (Diagnose reads the whole kernel log) is shared and rate-limited.

Concurrent callers share one diagnosis, so N calls at once read the log once (counted from outside the
service: inotify's open events on the simulated machine's log files); and each user has a rate, past
which the call answers Busy with when to try again, while other users and root are served.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import pwd
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kfdguard.host.root import Root
from kfdguard.publish.names import ERROR_BUSY
from kfdguard.service.dbusapi import RATES, Buckets, Rate
from kfdguard.simulate import state
from tests.servicekit import NAME, PATH, call, guardian, run_as

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root may own the name on a system-like bus")
NOBODY = 65534
OTHER = pwd.getpwnam("daemon").pw_uid  # a user the bus knows (dbus-daemon refuses a uid without an account)
IN_OPEN = 0x20  # inotify(7)
NOISE = 200_000  # kernel log lines
LOG_FILES = ("kmsg", "journal")  # what the simulated machine's read_journal and read_kmsg open


@contextmanager
def opens(directory: str) -> Iterator[dict[str, int]]:
    """How often each file of ``directory`` was opened while the block ran (inotify, read at its end)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0, os.strerror(ctypes.get_errno())
    counts: dict[str, int] = {}
    try:
        assert libc.inotify_add_watch(fd, os.fsencode(directory), IN_OPEN) >= 0, os.strerror(ctypes.get_errno())
        yield counts
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                _wd, mask, _cookie, size = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + size].rstrip(b"\0").decode()
                offset += 16 + size
                if mask & IN_OPEN:
                    counts[name] = counts.get(name, 0) + 1
    finally:
        os.close(fd)


def log_reads(counts: dict[str, int]) -> int:
    return sum(counts.get(name, 0) for name in LOG_FILES)


async def _diagnose_at_once(address: str, callers: int) -> list[str]:
    from kfdguard.service.backend import load

    b = load()
    buses = [await b.MessageBus(bus_address=address, bus_type=b.BusType.SYSTEM).connect() for _ in range(callers)]
    try:
        replies = await asyncio.gather(
            *(bus.call(b.Message(destination=NAME, path=PATH, interface=NAME, member="Diagnose")) for bus in buses)
        )
    finally:
        for bus in buses:
            bus.disconnect()
    return [r.error_name or r.signature for r in replies]


@as_root
def test_concurrent_diagnoses_read_the_kernel_log_once() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        sim = state.sim_dir(Root(g.root))
        # A long-running machine's log, the case where Diagnose costs: one read takes long enough that
        # every caller below arrives while it runs (with the 11 lines of a fresh boot it ends first).
        with open(os.path.join(sim, "kmsg"), "a") as log:
            log.writelines(f"6,{20 + i},{9_000_000 + i},-;usb 1-{i % 8}: new high-speed USB device number {i % 128} "
                           "using xhci_hcd\n" for i in range(NOISE))  # fmt: skip
        with opens(sim) as alone:
            started = time.monotonic()
            assert call("Diagnose", env=g.env()).stdout.startswith("a(ssss)")
            took = time.monotonic() - started
        one = log_reads(alone)
        assert one >= 1, alone  # what one diagnosis reads (the journal's files), measured rather than assumed
        with opens(sim) as together:
            answers = asyncio.run(_diagnose_at_once(g.address, 8))
        assert answers == ["a(ssss)"] * 8
        assert log_reads(together) == one, (together, f"one diagnosis took {took:.2f} s")


def gdbus_diagnose(env: dict[str, str], user: int) -> tuple[bool, str]:
    out = run_as(["gdbus", "call", "--system", "--dest", NAME, "--object-path", PATH, "--method", f"{NAME}.Diagnose"],
                 env=env, user=user, check=False)  # fmt: skip
    return out.returncode == 0, out.stdout + out.stderr


@as_root
def test_a_user_over_the_diagnose_rate_gets_busy_and_others_are_served() -> None:
    rate = RATES["Diagnose"]
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        env = g.env()
        for _ in range(rate.burst):
            ok, text = gdbus_diagnose(env, NOBODY)
            assert ok, text
        ok, text = gdbus_diagnose(env, NOBODY)
        assert not ok and f"GDBus.Error:{ERROR_BUSY}: Diagnose was called too often by this user" in text, text
        assert f"at most {rate.burst} at once, then one every {rate.every:g} s); try again in " in text
        # Another user has a rate of their own; root has none.
        ok, text = gdbus_diagnose(env, OTHER)
        assert ok, text
        for _ in range(rate.burst + 2):
            assert call("Diagnose", env=env).stdout.startswith("a(ssss)")
        # A new connection is no way around it: the rate is the user's.
        ok, text = gdbus_diagnose(env, NOBODY)
        assert not ok and "too often" in text


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_one_call_per_interval() -> None:
    clock = Clock()
    buckets = Buckets(Rate(burst=3, every=10.0), clock)
    assert [buckets.take(1000) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take(1000) == pytest.approx(10.0)
    clock.now += 4
    assert buckets.take(1000) == pytest.approx(6.0)  # a refused call costs nothing
    assert buckets.take(1001) == 0.0  # another user's own bucket
    clock.now += 6
    assert buckets.take(1000) == 0.0 and buckets.take(1000) == pytest.approx(10.0)
    clock.now += 1000  # rested: the burst again, never more
    assert [buckets.take(1000) for _ in range(4)][-1] == pytest.approx(10.0)


def test_the_buckets_stay_bounded_whatever_the_number_of_users() -> None:
    from kfdguard.service.dbusapi import USERS_TRACKED

    clock = Clock()
    buckets = Buckets(Rate(burst=1, every=60.0), clock)
    for uid in range(3 * USERS_TRACKED):
        assert buckets.take(uid) == 0.0
    assert len(buckets.users) <= USERS_TRACKED
