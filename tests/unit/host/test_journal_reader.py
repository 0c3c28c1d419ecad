"""RealSystem's log readers: who wrote an entry (journald's trusted fields, kmsg facilities) and the budget.

A stand-in for systemd-python's Reader hands RealSystem every entry whatever its matches say (as if
journald filtered nothing): what the reader keeps is then decided by its own test of each entry.
The same with real journal files: tests/unit/probe/test_probe_log.py.
"""

from __future__ import annotations

import datetime
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kfdguard.host import system as host_system
from kfdguard.host.root import Root
from kfdguard.host.system import ENTRY_LIMIT, LogLines, RealSystem, journal_ident, kernel_records

BOOT = uuid.uuid4().hex
GC_HWIP = "amdgpu 0000:03:00.0: amdgpu: Failed to add gfx ip block(GC_HWIP:0xb0001)"
RING = "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=2"


class FakeJournal:
    """journal.Reader's methods that RealSystem uses, over entries typed as systemd-python gives them
    (_UID and SYSLOG_FACILITY int, the monotonic time a (timedelta, boot id) pair). It records the matches
    and ignores them."""

    def __init__(self, entries: list[dict[str, object]] | Iterator[dict[str, object]]) -> None:
        self.entries = entries
        self.matches: list[list[str]] = []
        self.data_threshold = 0

    def flush_matches(self) -> None:
        self.matches = [[]]

    def add_match(self, *args: str, **kwargs: str) -> None:
        self.matches[-1].extend([*args, *(f"{k}={v}" for k, v in kwargs.items())])

    def add_disjunction(self) -> None:
        self.matches.append([])

    def seek_head(self) -> None: ...

    def query_unique(self, field: str) -> list[uuid.UUID]:
        return [uuid.UUID(BOOT)]

    def get_next(self) -> dict[str, object]:
        return {}

    def __iter__(self) -> Iterator[dict[str, object]]:
        return iter(self.entries)

    def close(self) -> None: ...


def entry(message: str | bytes, n: int = 0, **fields: object) -> dict[str, object]:
    mono = (datetime.timedelta(seconds=3, milliseconds=n), uuid.UUID(BOOT))
    return {"__MONOTONIC_TIMESTAMP": mono, "_BOOT_ID": uuid.UUID(BOOT), "MESSAGE": message, **fields}


def kernel(message: str | bytes, n: int = 0) -> dict[str, object]:
    return entry(message, n, _TRANSPORT="kernel", SYSLOG_IDENTIFIER="kernel", SYSLOG_FACILITY=0)


def udevd(message: str, n: int = 0) -> dict[str, object]:
    return entry(message, n, _TRANSPORT="stdout", SYSLOG_IDENTIFIER="systemd-udevd", _UID=0,
                 _SYSTEMD_UNIT="systemd-udevd.service", _COMM="(udev-worker)", _EXE="/usr/bin/udevadm")  # fmt: skip


def system_with(tmp_path: Path, reader: FakeJournal) -> RealSystem:
    random = tmp_path / "proc/sys/kernel/random"
    random.mkdir(parents=True)
    (random / "boot_id").write_text(str(uuid.UUID(BOOT)) + "\n")
    return RealSystem(Root(tmp_path), journal_dir=tmp_path / "journal", journal_open=lambda path: reader)


# What an unprivileged user gets into the journal: any SYSLOG_IDENTIFIER, any MESSAGE, over the syslog
# socket (logger), the native one (systemd-cat, sd_journal_send) or a service's output; journald adds the
# sender's _UID, _COMM, _EXE and unit itself.
FORGED = [
    entry(GC_HWIP, _TRANSPORT=transport, SYSLOG_IDENTIFIER=ident, _UID=65534, _COMM="logger",
          _EXE="/usr/bin/logger", _SYSTEMD_UNIT="session-3.scope")
    for transport in ("syslog", "journal", "stdout")
    for ident in ("systemd-udevd", "systemd-modules-load", "kernel")
] + [
    # A user's own service (systemd-run --user) is under user@.service, never a system unit.
    entry(RING, _TRANSPORT="stdout", SYSLOG_IDENTIFIER="kernel", _UID=1000, _SYSTEMD_UNIT="user@1000.service"),
    # Root outside the programs' units is not their word either (sudo logger -t systemd-udevd).
    entry(GC_HWIP, _TRANSPORT="syslog", SYSLOG_IDENTIFIER="systemd-udevd", _UID=0, _SYSTEMD_UNIT="session-3.scope"),
    # No trusted fields at all (journald could not read them): nothing says who wrote it.
    entry(GC_HWIP, _TRANSPORT="syslog", SYSLOG_IDENTIFIER="systemd-udevd"),
    # Written into /dev/kmsg from userspace: the kernel transport, but printk's LOG_USER facility.
    entry(RING, _TRANSPORT="kernel", SYSLOG_IDENTIFIER="kernel", SYSLOG_FACILITY=1),
]  # fmt: skip


@pytest.mark.parametrize("forged", FORGED, ids=lambda e: f"{e['_TRANSPORT']}-{e['SYSLOG_IDENTIFIER']}-{e.get('_UID')}")
def test_an_entry_a_user_can_write_is_no_evidence(tmp_path: Path, forged: dict[str, object]) -> None:
    assert journal_ident(forged) is None
    reader = FakeJournal([kernel("kfd kfd: amdgpu: added device 1002:744c"), forged])
    ((_boot, lines),) = system_with(tmp_path, reader).read_journal(0)
    assert lines == ["[    3.000000] localhost kernel: kfd kfd: amdgpu: added device 1002:744c"]
    assert isinstance(lines, LogLines) and lines.refused == 1


def test_the_kernel_and_the_boot_programs_in_their_units_are_evidence(tmp_path: Path) -> None:
    modules_load = entry("Failed to find module 'amdkfd'", 2, _TRANSPORT="journal", SYSLOG_IDENTIFIER="systemd-modules-load",
                         _UID=0, _SYSTEMD_UNIT="systemd-modules-load.service", _COMM="systemd-modules")  # fmt: skip
    # Early in boot, a program writes into /dev/kmsg (root only): journald parses its identifier.
    early = entry("Failed to find module 'amdkfd'", 3, _TRANSPORT="kernel", SYSLOG_IDENTIFIER="systemd-modules-load",
                  SYSLOG_FACILITY=3)  # fmt: skip
    reader = FakeJournal([kernel(GC_HWIP.encode(), 0), udevd("amdgpu: Process 'x' failed with exit code 1.", 1),
                          modules_load, early])  # fmt: skip
    ((_, lines),) = system_with(tmp_path, reader).read_journal(0)
    assert lines == [
        f"[    3.000000] localhost kernel: {GC_HWIP}",
        "[    3.001000] localhost systemd-udevd: amdgpu: Process 'x' failed with exit code 1.",
        "[    3.002000] localhost systemd-modules-load: Failed to find module 'amdkfd'",
        "[    3.003000] localhost systemd-modules-load: Failed to find module 'amdkfd'",
    ]


def test_the_journal_filters_on_its_own_trusted_fields(tmp_path: Path) -> None:
    """What journald is asked for: user entries are not even loaded (sd-journal ORs one field's values,
    ANDs different fields, and a disjunction ORs the two groups)."""
    reader = FakeJournal([kernel("hello")])
    system_with(tmp_path, reader).read_journal(0)
    assert reader.matches == [
        [f"_BOOT_ID={BOOT}", "_TRANSPORT=kernel"],
        ["_SYSTEMD_UNIT=systemd-modules-load.service", "_SYSTEMD_UNIT=systemd-udevd.service", f"_BOOT_ID={BOOT}",
         "_UID=0"],
    ]  # fmt: skip
    assert "SYSLOG_IDENTIFIER" not in str(reader.matches)
    assert reader.data_threshold == 4 * ENTRY_LIMIT + 4


def test_a_long_entry_is_cut_and_counted(tmp_path: Path) -> None:
    huge = GC_HWIP + " " + "x" * (2 << 20)
    reader = FakeJournal([udevd(huge, 0), kernel("kfd kfd: amdgpu: added device 1002:744c", 1)])
    ((_, lines),) = system_with(tmp_path, reader).read_journal(0)
    assert isinstance(lines, LogLines) and lines.cut == 1 and len(lines) == 2
    assert lines[0] == "[    3.000000] localhost systemd-udevd: " + huge[:ENTRY_LIMIT]
    assert lines.budget_notes("journal") == [f"1 journal entries longer than {ENTRY_LIMIT} characters cut"]


def test_sixty_entries_of_two_megabytes_stay_within_the_budget(tmp_path: Path) -> None:
    """The case that killed the resident (141 MB in a 128 MB unit): 60 entries of 2 MB. Entries come one at
    a time, as from sd-journal; what the reader keeps is what counts."""
    body = "amdgpu 0000:03:00.0: amdgpu: " + "y" * (2 << 20)

    def entries() -> Iterator[dict[str, object]]:
        for n in range(60):
            yield udevd(body + str(n), n)

    system = system_with(tmp_path, FakeJournal(entries()))
    tracemalloc.start()
    try:
        ((_, lines),) = system.read_journal(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(lines) == 60 and isinstance(lines, LogLines) and lines.cut == 60
    assert peak < 16 << 20, f"peak {peak >> 20} MiB"  # a few entries in flight, not 60 kept whole (>120 MiB)


def test_the_read_budget_keeps_the_oldest_and_counts_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_system, "READ_ENTRIES", 100)
    monkeypatch.setattr(host_system, "COUNT_LIMIT", 1000)
    reader = FakeJournal([kernel(f"kfd kfd: amdgpu: line {n}", n) for n in range(250)])
    ((_, lines),) = system_with(tmp_path, reader).read_journal(0)
    assert len(lines) == 100 and lines[-1].endswith("line 99")
    assert isinstance(lines, LogLines) and (lines.dropped, lines.more) == (150, False)
    (note,) = lines.budget_notes("journal")
    assert note.startswith("150 journal entries dropped by the read budget (100 entries or 16 MiB a read")


def test_the_read_budget_counts_bytes_and_stops_counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_system, "READ_CHARS", 10 * ENTRY_LIMIT)
    monkeypatch.setattr(host_system, "COUNT_LIMIT", 5)
    reader = FakeJournal([kernel("x" * ENTRY_LIMIT, n) for n in range(30)])
    ((_, lines),) = system_with(tmp_path, reader).read_journal(0)
    assert isinstance(lines, LogLines) and (len(lines), lines.dropped, lines.more) == (10, 5, True)
    assert lines.budget_notes("journal")[0].startswith("more than 5 journal entries dropped by the read budget")


def test_kmsg_keeps_the_kernels_records_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/kmsg records: "pri,seq,usec,flags;text", pri = facility << 3 | level. What userspace writes into
    /dev/kmsg gets a facility other than 0 (printk's devkmsg_write: LOG_USER when none is named)."""
    monkeypatch.setattr(host_system, "READ_ENTRIES", 3)
    records = [
        f"3,1,3000000,-;{GC_HWIP}",
        f"14,2,3000100,-;{RING}",  # <14>: LOG_USER, info: a userspace write
        "30,3,3000200,-;systemd-modules-load[312]: Failed to find module 'amdkfd'",  # LOG_DAEMON
        "6,4,3000300,-;" + "z" * (ENTRY_LIMIT * 2),
        "garbage",
        "6,5,3000400,-;kfd kfd: amdgpu: added device 1002:744c",
        "6,6,3000500,-;past the budget",
    ]
    kept = kernel_records(records)
    assert kept == [records[0], records[3][:ENTRY_LIMIT], records[5]]
    assert (kept.refused, kept.cut, kept.dropped) == (3, 1, 1)
