"""A line any user can write to the journal decides no verdict and no kernel fallback (issue 35).

The machine is simulated (a GPU whose firmware is missing, another kernel installed, fallback.policy
oneshot); its journal is a real journal file read by RealSystem's reader: the simulated kernel's and
udevd's lines with the fields journald gives them, beside what an unprivileged user logs with
``logger -t systemd-udevd`` or ``-t kernel``.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from kfdguard.assess import assess
from kfdguard.config import Config, FallbackConfig
from kfdguard.fallback.apply import after_check
from kfdguard.host.system import RealSystem
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Verdict
from tests.conftest import tool
from tests.journals import kernel, program, user, write_journal
from tests.unit.fallback.test_fallback import entry, grubenv

Make = Callable[[str | MachineSpec], SimulatedSystem]
SLOT = "0000:03:00.0"
FORGED = (
    f"amdgpu {SLOT}: amdgpu: GC IP 0b0001 not supported in kfd",
    f"amdgpu {SLOT}: amdgpu: Failed to add gfx ip block(GC_HWIP:0xb0001)",
)
RING = f"amdgpu {SLOT}: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=2"
_LINE = re.compile(r"^\[ *(\d+)\.(\d+)\] localhost (\S+): (.*)$")


class JournalFileMachine(SimulatedSystem):
    """The simulated machine, with its journal read from a real journal file by RealSystem's reader."""

    def __init__(self, simulated: SimulatedSystem, journal: Path) -> None:
        super().__init__(simulated.root)
        self.reader = RealSystem(simulated.root, journal_dir=journal)

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        return self.reader.read_journal(boots)


def machine(fresh_machine: Make, tmp_path: Path, extra: list[dict[str, str]]) -> JournalFileMachine:
    spec = (
        MachineBuilder("forged")
        .ubuntu2404()
        .with_gpu(0x744C, slot=SLOT, outcome="firmware")
        .with_user("alice", groups=["render"])
        .with_other_kernel("6.11.0-9-generic")
        .build()
        # The administrator keeps the running kernel as the default (GRUB_DEFAULT=saved): a newer one
        # is booted only when something arranges it.
        .with_changes(grub_default="saved")
    )
    simulated = fresh_machine(spec)
    subprocess.run([tool("grub-editenv"), str(simulated.root.boot / "grub/grubenv"), "set",
                    f"saved_entry={entry(spec.kernel.release)}"], check=True, timeout=30)  # fmt: skip
    entries = []
    for line in simulated.read_journal(0)[0][1]:
        m = _LINE.match(line)
        assert m is not None, line
        seconds, micros, ident, message = m.groups()
        made = kernel(message) if ident == "kernel" else program(ident, message)
        entries.append({**made, "__MONOTONIC_TIMESTAMP": str(int(seconds) * 1_000_000 + int(micros))})
    boot = uuid.uuid4()
    random = simulated.root.path / "proc/sys/kernel/random"
    random.mkdir(parents=True, exist_ok=True)
    (random / "boot_id").write_text(f"{boot}\n")
    journal = write_journal(tmp_path / "journal", [(boot.hex, 1_800_000_000_000_000, [*entries, *extra])])
    return JournalFileMachine(simulated, journal)


def root_pass(system: SimulatedSystem) -> tuple[Verdict, object]:
    """What kfdguard-enforce does at boot with fallback.policy oneshot: check, then the fallback step."""
    facts = probe(system)
    verdict = assess(facts, Config(fallback=FallbackConfig("oneshot")))
    assert verdict.fallback is not None
    _, outcome, _ = after_check(system, facts, verdict.ready, verdict.fallback)
    return verdict, outcome


def test_a_users_forged_kernel_lines_change_no_verdict_and_no_boot_loader(fresh_machine: Make, tmp_path: Path) -> None:
    forged = [user(ident, text, transport) for text in FORGED for ident in ("systemd-udevd", "kernel")
              for transport in ("syslog", "journal")]  # fmt: skip
    forged.append(user("kernel", RING))
    system = machine(fresh_machine, tmp_path, forged)
    before = grubenv(system)
    verdict, outcome = root_pass(system)
    codes = [f.code for f in verdict.findings]
    assert codes[0] == "firmware-missing", codes
    assert "kernel-too-old" not in codes and "fallback-available" not in codes and "gpu-hang" not in codes
    assert verdict.fallback is not None and not verdict.fallback.needed
    assert outcome is None and grubenv(system) == before and "next_entry" not in before
    assert "kernel-too-old" not in [f.code for f in assess(probe(system)).findings]  # kfdguard diagnose's look


def test_the_same_line_from_the_kernel_does_count(fresh_machine: Make, tmp_path: Path) -> None:
    """The control: the harness would see the forged line if the reader took it."""
    system = machine(fresh_machine, tmp_path, [kernel(FORGED[0])])
    verdict, outcome = root_pass(system)
    assert next(f.code for f in verdict.findings) == "kernel-too-old"
    assert outcome is not None and "next_entry" in grubenv(system)


def test_a_snapshot_of_the_machine_replays_without_the_forged_lines(fresh_machine: Make, tmp_path: Path) -> None:
    """kfdguard snapshot records the journal as the reader returned it: the replay reaches the same
    verdict, and the forged lines are in neither."""
    from kfdguard.host.root import Root
    from kfdguard.snapshot.replay import ReplaySystem
    from kfdguard.snapshot.take import take

    system = machine(fresh_machine, tmp_path, [user("systemd-udevd", FORGED[0]), user("kernel", RING)])
    live = assess(probe(system, previous_boots=0))
    take(system, tmp_path / "bundle", source="forged", names=True)
    replayed = assess(probe(ReplaySystem(Root(tmp_path / "bundle")), previous_boots=0))
    assert [f.code for f in replayed.findings] == [f.code for f in live.findings]
    assert "kernel-too-old" not in [f.code for f in replayed.findings]
    recorded = (tmp_path / "bundle").rglob("*")
    assert not any(p.is_file() and b"GC IP 0b0001" in p.read_bytes() for p in recorded)
