"""Reading the kernel log: the real journal (files written by systemd-journal-remote), kmsg, files."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.host.root import Root
from kfdguard.host.system import LogUnavailable, RealSystem
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
Make = Callable[[str | MachineSpec], SimulatedSystem]


def _export(entries: list[dict[str, str]]) -> str:
    return "".join("".join(f"{k}={v}\n" for k, v in e.items()) + "\n" for e in entries)


def _journal(tmp: Path, boots: list[tuple[str, int, list[tuple[str, str]]]]) -> Path:
    """Write a real journal file: boots of (boot id, realtime base, [(identifier, message)])."""
    if not JOURNAL_REMOTE.exists():
        pytest.fail("systemd-journal-remote is needed to write test journals; 'make test' installs it")
    entries = []
    for boot_id, base, messages in boots:
        for i, (ident, message) in enumerate(messages):
            entry = {
                "__REALTIME_TIMESTAMP": str(base + i * 1000),
                "__MONOTONIC_TIMESTAMP": str(3_000_000 + i * 1000),
                "_BOOT_ID": boot_id,
                "MESSAGE": message,
                "PRIORITY": "6",
                "_HOSTNAME": "box",
            }
            if ident == "kernel":
                entry["_TRANSPORT"] = "kernel"
                entry["SYSLOG_IDENTIFIER"] = "kernel"
            else:
                entry.update({"_TRANSPORT": "syslog", "SYSLOG_IDENTIFIER": ident, "_PID": "312"})
            entries.append(entry)
    directory = tmp / "journal"
    directory.mkdir()
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(directory / "remote.journal"), "-"], input=_export(entries),
                   text=True, check=True, capture_output=True, timeout=30)  # fmt: skip
    return directory


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
                                      ("systemd-modules-load", "Failed to find module 'amdkfd'"),
                                      ("systemd-logind", "New session 1 of user alice.")]),
    ])  # fmt: skip
    system = RealSystem(_root(tmp_path / "root", now), journal_dir=journal)
    boots = system.read_journal(1)
    assert [b for b, _ in boots] == [0, -1]
    this, previous = boots[0][1], boots[1][1]
    assert this == [
        "[    3.000000] localhost kernel: kfd kfd: amdgpu: added device 1002:744c",
        "[    3.001000] localhost systemd-modules-load: Failed to find module 'amdkfd'",
    ]  # logind is not asked for
    assert "MES failed to respond" in previous[0]


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
