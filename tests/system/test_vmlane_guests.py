"""vm/vmlane.py's guest table: which scenarios each guest runs, the private apt
configuration for a suite the host does not carry, and the guest x scenario matrix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from tests.paths import TOP

sys.path.insert(0, str(TOP / "vm"))
sys.path.insert(0, str(TOP / "scripts"))
import aptsources  # a script beside the package, not part of it
import vmlane  # the lane is a script too (stdlib only)

HOST_SOURCES = """Types: deb
URIs: http://archive.example/debian
Suites: bookworm bookworm-updates bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main contrib
"""


def _scenario(directory: Path, name: str, *header: str) -> Path:
    path = directory / f"{name}.sh"
    path.write_text("#!/bin/bash\n" + "".join(f"{line}\n" for line in header) + f"# Scenario {name}\n")
    return path


def test_every_row_is_well_formed() -> None:
    names = [g.name for g in vmlane.GUESTS]
    assert len(set(names)) == len(names)
    for guest in vmlane.GUESTS:
        assert guest.bus in vmlane.BUSES, guest
        # A boot-time variant boots a row that has an image of its own, on the same suite.
        owner = vmlane.image_guest(guest)
        assert not owner.image and owner.suite == guest.suite, guest
    assert {g.suite for g in vmlane.GUESTS} >= {"bookworm", "trixie"}
    assert any(g.bus == "dbus-broker" for g in vmlane.GUESTS)
    with pytest.raises(vmlane.LaneError, match="no guest 'sid'"):
        vmlane.guest_named("sid")


def test_a_row_with_only_keeps_the_tagged_scenarios_in_order(tmp_path: Path) -> None:
    a = _scenario(tmp_path, "a", "# vmlane: bus")
    b = _scenario(tmp_path, "b")
    c = _scenario(tmp_path, "c", "# vmlane: install=no")
    d = _scenario(tmp_path, "d", "# vmlane: bus")
    chains = [[a, b, d], [c]]
    everything = vmlane.Guest("x", "trixie", "every scenario")
    assert vmlane.chains_for(everything, chains) == [[a, b, d], [c]]
    bus_only = vmlane.Guest("y", "trixie", "bus scenarios", only="bus")
    # A new scenario is picked up by every full row without touching the table;
    # the filtered row takes it when its header names the tag.
    assert vmlane.chains_for(bus_only, chains) == [[a, d]]


def test_private_sources_map_the_hosts_entries_to_the_guests_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(HOST_SOURCES)
    monkeypatch.setattr(aptsources, "APT_DIR", tmp_path)
    monkeypatch.setattr(aptsources.read_sources, "__defaults__", (tmp_path,))
    keyring = vmlane.ARCHIVE_KEYRING
    assert vmlane.private_source_lines("trixie") == [
        f"deb [signed-by={keyring}] http://archive.example/debian trixie main",
        f"deb [signed-by={keyring}] http://archive.example/debian trixie-updates main",
        f"deb [signed-by={keyring}] http://security.example/debian-security trixie-security main",
    ]
    assert vmlane.host_carries("bookworm") and not vmlane.host_carries("trixie")
    assert vmlane.archive_mirror("trixie") == "http://archive.example/debian"


def test_the_matrix_has_one_cell_per_guest_and_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    guests = [vmlane.Guest("g1", "bookworm", "one"), vmlane.Guest("g2", "trixie", "two", only="bus")]
    ok = vmlane.ScenarioResult("boot", "boot", "g1", status=0, tap=["ok 1 - a", "not ok 2 - b # TODO known bug: x"])
    bad = vmlane.ScenarioResult("purge", "purge", "g1", status=1, tap=["ok 1 - a", "not ok 2 - b"])
    ok2 = vmlane.ScenarioResult("boot", "boot", "g2", status=0, tap=["ok 1 - a"])
    vmlane.print_matrix(guests, {"g1": ["boot", "purge"], "g2": ["boot"]}, [ok, bad, ok2])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].split() == ["boot", "purge"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert rows == {"g1": ["TODO", "1", "FAIL"], "g2": ["pass", "-"]}


def test_a_pass_on_the_retry_is_marked_in_the_matrix_and_the_closing_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A guest whose first boot never reached its runner and whose second attempt
    # passed: the matrix and the closing line say so instead of a plain "pass".
    guests = [vmlane.Guest("g1", "trixie", "one")]
    reason = "runner did not start within 300 s of QEMU start"
    clean = vmlane.ScenarioResult("faults", "faults", "g1", status=0, tap=["ok 1 - a"])
    retried = vmlane.ScenarioResult("boot", "boot", "g1", status=0, tap=["ok 1 - a"], retried_because=reason)
    runs = [
        vmlane.GuestRun("g1", "faults", 0, 1, 10.0),
        vmlane.GuestRun("g1", "boot", 0, 2, 20.0, reason),
    ]
    args = argparse.Namespace(lane_start=None, budget=600)
    rc = vmlane.print_summary(
        args, guests, {"g1": ["boot", "faults"]}, [retried, clean], runs, [], 30.0, Path("/nonexistent")
    )
    out = capsys.readouterr().out
    assert rc == 0  # every check passed; the retry is reported, not hidden
    matrix = out[out.index("matrix (guest x scenario)") :].splitlines()
    assert matrix[2].split() == ["g1", "pass*", "pass"]
    assert f"g1 boot: exit 0, 2 boot(s), 20.0 s (QEMU, install, scenarios); RETRIED, the first attempt: {reason}" in out
    assert out.rstrip().endswith("system-tests: 2 passed, 0 failed, 1 guest(s) retried")


def test_the_closing_lines_say_why_each_scenario_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # CI keeps only a run's last lines: the reason must be among them, not only in the share.
    result = tmp_path / "result.txt"
    result.write_text(
        "# vmlane-chain: begin faults boot 1\nok 1 - a\nnot ok 2 - the node is 0660\nnot ok 3 - c\n"
        "# vmlane-chain: end faults boot 1 status 0 ms 10\n"
        "# vmlane-chain: begin seed boot 1\nok 1 - a\n# vmlane-chain: end seed boot 1 status 200 ms 10\n"
        "# vmlane-chain: begin seed boot 2\nok 2 - b\n# vmlane-chain: end seed boot 2 status 200 ms 10\n"
        "# vmlane-chain: begin cut boot 1\nok 1 - a\n"
        "# vmlane-chain: begin crash boot 1\nok 1 - a\n# vmlane-chain: end crash boot 1 status 3 ms 10\n"
    )
    names = ["faults", "seed", "cut", "crash", "absent"]
    results = vmlane.split_chain(result, names, "+".join(names))
    for r in results:
        r.guest = "g1"
    why = {r.name: r.why for r in results}
    assert why == {
        "faults": "not ok 2 - the node is 0660 and 1 more",
        "seed": "boot 3, which boot 2 asked for, left nothing in result.txt",
        "cut": "boot 1 left no end marker in result.txt (the guest's run stopped, or a write was lost)",
        "crash": "exit 3",
        "absent": "it never began: result.txt has no begin marker for it",
    }
    args = argparse.Namespace(lane_start=None, budget=600)
    runs = [vmlane.GuestRun("g1", "+".join(names), 1, 3, 30.0)]
    rc = vmlane.print_summary(
        args, [vmlane.Guest("g1", "trixie", "one")], {"g1": names}, results, runs, [], 30.0, tmp_path
    )
    out = capsys.readouterr().out
    assert rc == 1
    tail = out.splitlines()[-9:]
    for name, reason in why.items():
        assert f"vmlane:   g1/{name}: {reason}" in tail


def _watched(lines: list[str]) -> vmlane.SerialWatcher:
    watcher = vmlane.SerialWatcher(None, Path("/dev/null"), None, 0.0)  # type: ignore[arg-type]
    for line in lines:
        watcher.parse(line)
    return watcher


# A trixie guest's third boot under TCG (a fresh clone's make test, 2026-12-07): an int3 oops while the kernel
# patched its own text, before any module was loaded or the runner started.
CORE_PANIC = [
    "[    1.954728] Call Trace:",
    "[    1.955842] Modules linked in:",
    "[    1.956114] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI",
    "[    1.956362] Kernel panic - not syncing: Fatal exception in interrupt",
]


def test_a_later_boot_that_panics_in_the_core_kernel_is_an_infrastructure_failure() -> None:
    """The runner started in boots 1 and 2; boot 3 died in the core kernel before it: nothing the scenario did
    (it acts through modules, their options and userspace) can have made that, so the attempt is retried."""
    att = vmlane.Attempt(runner_started=True)
    vmlane.note_boot(att, _watched(CORE_PANIC))
    assert att.infra_failure


def test_a_panic_with_modules_loaded_or_after_the_runner_is_the_scenario_s() -> None:
    with_modules = [line.replace("linked in:", "linked in: amdgpu(+) drm_exec") for line in CORE_PANIC]
    att = vmlane.Attempt(runner_started=True)
    vmlane.note_boot(att, _watched(with_modules))
    assert not att.infra_failure
    att = vmlane.Attempt(runner_started=True)
    vmlane.note_boot(att, _watched([f"{vmlane.MARK_RUNNER} started", *CORE_PANIC]))
    assert not att.infra_failure
