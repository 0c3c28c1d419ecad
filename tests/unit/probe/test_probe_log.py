"""Reading the kernel log: the real journal (files written by systemd-journal-remote), kmsg, files."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.host.root import Root
from kfdguard.host.system import ENTRY_LIMIT, LogLines, LogUnavailable, RealSystem
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from tests.journals import kernel, program, user, write_journal

Make = Callable[[str | MachineSpec], SimulatedSystem]


def _journal(tmp: Path, boots: list[tuple[str, int, list[tuple[str, str]]]]) -> Path:
    """Write a real journal file: boots of (boot id, realtime base, [(identifier, message)]), each line
    with the fields journald gives the kernel's or that program's."""
    return write_journal(tmp / "journal", [
        (boot_id, base, [kernel(m) if ident == "kernel" else program(ident, m) for ident, m in messages])
        for boot_id, base, messages in boots
    ])  # fmt: skip


def _root(tmp: Path, boot_id: str) -> Root:
    (tmp / "proc/sys/kernel/random").mkdir(parents=True)
    (tmp / "proc/sys/kernel/random/boot_id").write_text(str(uuid.UUID(boot_id)) + "\n")
    return Root(tmp)


def test_real_journal_this_boot_and_the_one_before(tmp_path: Path) -> None:
    now, before, older = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    journal = _journal(tmp_path, [
        (older, 1_600_000_000_000_000, [("kernel", "amdgpu: Topology: Add CPU node")]),
        (before, 1_700_000_000_000_000, [("kernel", "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE"),
                                         ("kernel", "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!")]),
        (now, 1_800_000_000_000_000, [("kernel", "kfd kfd: amdgpu: added device 1002:744c"),
                                      ("systemd-modules-load", "Failed to find module 'amdkfd'")]),
    ])  # fmt: skip
    system = RealSystem(_root(tmp_path / "root", now), journal_dir=journal)
    boots = system.read_journal(1)
    assert [b for b, _ in boots] == [0, -1]
    this, previous = boots[0][1], boots[1][1]
    assert this == [
        "[    3.000000] localhost kernel: kfd kfd: amdgpu: added device 1002:744c",
        "[    3.001000] localhost systemd-modules-load: Failed to find module 'amdkfd'",
    ]
    assert "MES failed to respond" in previous[0]


GC_HWIP = "amdgpu 0000:03:00.0: amdgpu: Failed to add gfx ip block(GC_HWIP:0xb0001)"
RING = "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=2"


def test_real_journal_keeps_only_what_journalds_trusted_fields_attribute(tmp_path: Path) -> None:
    """A real journal file with what a user can log (logger -t systemd-udevd / -t kernel, systemd-cat, a
    service's output: journald stamps the sender's _UID and unit) beside the kernel's and udevd's lines."""
    now = uuid.uuid4().hex
    journal = write_journal(tmp_path / "journal", [(now, 1_800_000_000_000_000, [
        kernel("kfd kfd: amdgpu: added device 1002:744c"),
        user("systemd-udevd", GC_HWIP),
        user("systemd-modules-load", "Failed to find module 'amdkfd'", transport="journal"),
        user("kernel", RING),
        user("kernel", RING, transport="stdout"),
        {**user("systemd-udevd", GC_HWIP), "_UID": "0"},  # root, but not in udevd's unit (sudo logger)
        kernel(RING, SYSLOG_FACILITY="1"),  # written into /dev/kmsg from userspace
        program("systemd-udevd", "amdgpu: Process '/usr/bin/x' failed with exit code 1."),
    ])])  # fmt: skip
    system = RealSystem(_root(tmp_path / "root", now), journal_dir=journal)
    ((_, lines),) = system.read_journal(0)
    assert lines == [
        "[    3.000000] localhost kernel: kfd kfd: amdgpu: added device 1002:744c",
        "[    3.007000] localhost systemd-udevd: amdgpu: Process '/usr/bin/x' failed with exit code 1.",
    ]
    # The facility-1 kmsg record is the only one journald's side of the filter lets through.
    assert isinstance(lines, LogLines) and lines.refused == 1
    facts = probe(system, log_sources=("journal",))
    assert [e.rule for e in facts.log.events] == ["kfd-added-device"]


def test_real_journal_entries_are_cut_and_the_read_is_bounded(tmp_path: Path) -> None:
    now = uuid.uuid4().hex
    huge = GC_HWIP + " " + "x" * (2 << 20)
    journal = write_journal(tmp_path / "journal", [(now, 1_800_000_000_000_000, [
        program("systemd-udevd", huge), kernel("kfd kfd: amdgpu: added device 1002:744c"),
    ])])  # fmt: skip
    system = RealSystem(_root(tmp_path / "root", now), journal_dir=journal)
    ((_, lines),) = system.read_journal(0)
    assert lines[0] == "[    3.000000] localhost systemd-udevd: " + huge[:ENTRY_LIMIT]
    assert isinstance(lines, LogLines) and lines.cut == 1
    facts = probe(system, log_sources=("journal",))
    assert facts.log.limited == (f"1 journal entries longer than {ENTRY_LIMIT} characters cut",)
    assert any(p.path == "the kernel log (journal)" for p in facts.problems)
    (finding,) = [f for f in assess(facts).findings if f.code == "unreadable" and "journal" in f.message]
    assert "cut" in finding.message


def test_a_log_file_is_read_within_the_budget(fresh_machine: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    from kfdguard.probe import kernel_log

    monkeypatch.setattr(kernel_log, "READ_CHARS", 64 << 10)
    system = fresh_machine(MachineBuilder("file").with_gpu(0x73BF).build().with_changes(journal=False))
    log = system.root.path / "var/log/kern.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    old = "Jan 30 23:27:53 box kernel: [    7.0] kfd kfd: amdgpu: skipped device 1002:73bf, PCI rejects atomics\n"
    filler = "Jan 30 23:27:54 box kernel: [    8.0] usb 1-1: new device\n" * 2000
    long = "Jan 30 23:27:55 box kernel: [    9.0] " + "w" * 20_000 + "\n"
    log.write_text(
        old + filler + long + "Jan 30 23:27:56 box kernel: [   10.0] kfd kfd: amdgpu: added device 1002:73bf\n"
    )
    facts = probe(system, log_sources=("/var/log/kern.log",))
    assert [e.rule for e in facts.log.events] == ["kfd-added-device"]  # the tail: the boot being diagnosed
    assert len(facts.log.limited) == 2
    assert facts.log.limited[0].endswith(
        "bytes at the start of /var/log/kern.log not read (the read budget is its last 64 KiB)"
    )
    assert facts.log.limited[1] == f"1 /var/log/kern.log lines longer than {ENTRY_LIMIT} characters cut"


def test_empty_journal_is_unavailable(tmp_path: Path) -> None:
    journal = _journal(tmp_path, [(uuid.uuid4().hex, 1_700_000_000_000_000, [("kernel", "hello")])])
    system = RealSystem(_root(tmp_path / "root", uuid.uuid4().hex), journal_dir=journal)
    with pytest.raises(LogUnavailable, match="no entries for this boot"):
        system.read_journal(0)


def test_journal_events_reach_the_assessment(fresh_machine: Make) -> None:
    spec = (
        MachineBuilder("hang")
        .ubuntu2404()
        .with_gpu(0x744C)
        .with_user("alice", groups=["render"])
        .build()
        .with_changes(
            previous_log=(
                "[  950.8] localhost kernel: amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE",
            )
        )
    )
    system = fresh_machine(spec)
    now = assess(probe(system, previous_boots=1))
    (hang,) = now.by_code("gpu-hang")
    assert "previous boot" in hang.message and now.state == "ready"
    assert probe(system, previous_boots=0).log.by_code("gpu-hang", boot=None) == []


def test_falls_back_to_kmsg_without_a_journal(fresh_machine: Make) -> None:
    system = fresh_machine(
        MachineBuilder("nojournal").with_gpu(0x73BF, outcome="atomics").build().with_changes(journal=False)
    )
    facts = probe(system)
    assert facts.log.sources == ("kmsg",)
    assert facts.log.unavailable == ("journal: no journal on this machine (journald is not running)",)
    assert [e.rule for e in facts.log.events if e.klass == "failure"] == ["kfd-pcie-atomics"]


def test_file_source_and_missing_sources(fresh_machine: Make) -> None:
    system = fresh_machine(MachineBuilder("file").with_gpu(0x73BF).build().with_changes(journal=False))
    log = system.root.path / "var/log/kern.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("Jan 30 23:27:53 box kernel: [    7.0] kfd kfd: amdgpu: added device 1002:73bf\n")
    facts = probe(system, log_sources=("/var/log/missing.log", "journal", "/var/log/kern.log"))
    assert facts.log.sources == ("/var/log/kern.log",)
    assert facts.log.unavailable[0] == "/var/log/missing.log: missing or unreadable"
    assert [e.rule for e in facts.log.events] == ["kfd-added-device"]


def test_needed_mode_skips_the_log_on_a_healthy_machine(fresh_machine: Make) -> None:
    healthy = fresh_machine("rx7900xtx-ubuntu2404")
    assert not probe(healthy, log="needed").log.read
    broken = fresh_machine("dgpu-plus-igpu-atomics")
    assert probe(broken, log="needed").log.read
    assert not probe(broken, log="never").log.read
