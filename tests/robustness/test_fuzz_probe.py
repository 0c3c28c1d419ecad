"""Fuzzing probe with hostile machines: garbage in sysfs, /proc, /etc, /boot and the kernel log.

A few bundled machines are rendered once; each example replaces some of their
files with garbage (random bytes, control characters, huge numbers, NUL,
values one bit too wide, a directory, a FIFO, a dangling or looping symlink),
runs the whole read path a service pass runs, and puts every file back.

Properties:

- probe never raises: what it cannot read is a Problem with a path and a reason;
- assess never raises on what probe found, and every finding has a code, a
  message, and no control character in its message, remedy or evidence;
- what the service would publish from it marshals as D-Bus values (the
  property cache that once killed the service on a too-wide sysfs id);
- probing the same machine twice gives the same facts.

The campaign found that file content which becomes part of a path (the
kernel release from /proc/sys/kernel/osrelease) with a NUL byte made os.open
raise ValueError out of probe: the service reported state 'error'. The
release is now checked before it names a path, and Reader takes ValueError
as a problem like OSError; the last test keeps it fixed.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.assess import assess
from kfdguard.config import Config
from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.publish.names import INTERFACE, OBJECT_PATH
from kfdguard.service.backend import load
from kfdguard.service.dbusapi import GuardianAPI
from kfdguard.service.status import from_verdict
from kfdguard.simulate import bundled
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Status
from tests.fuzzing import examples

pytestmark = pytest.mark.fuzz
MACHINES = ("rx7900xtx-ubuntu2404", "dgpu-plus-igpu-atomics", "legacy-4.15-amdkfd", "kfd-perms-0600")
CONTROL = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
# Files the simulator itself keeps (device nodes, counters, the description): not machine content.
SIMULATOR = {"devices", "state", "spec.json", "commands.log"}
KERN_LOG = "var/log/kern.log"


@dataclass
class Machine:
    root: Path
    files: list[str]  # regular files, relative to root, that a hostile machine may fill with garbage


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Machine]:
    base = tmp_path_factory.mktemp("hostile")
    result = {}
    for name in MACHINES:
        root = bundled.render_bundled(name, base / name).path
        (root / KERN_LOG).parent.mkdir(parents=True, exist_ok=True)
        (root / KERN_LOG).write_text("Jan 30 23:27:53 host kernel: [    7.0] kfd kfd: amdgpu: added device 1002:744c\n")
        files = sorted(
            str(p.relative_to(root))
            for p in Path(root).rglob("*")
            if p.is_file() and not p.is_symlink() and not (p.parent.name == ".kfdguard-sim" and p.name in SIMULATOR)
        )
        result[name] = Machine(Path(root), files)
    return result


numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.integers(0, 2**70).map(hex),
    st.sampled_from(["0x10000744c", "0x1002\n0x744c", "9" * 5000, "0x" + "f" * 40, "-0", "1e9", "0x", "٣", "1_000"]),
)
text_garbage = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=300)
contents = st.one_of(
    st.binary(max_size=300),
    text_garbage.map(lambda t: t.encode()),
    numbers.map(lambda t: (t + "\n").encode()),
    st.sampled_from([b"", b"\n", b"\x00", b"\x1b[31mred\x1b[0m\n", b"\xff\xfe\xfd", "line\r\nline\x85x\u2028".encode(),
                     b"x" * 200_000, b"\n" * 50_000, b"kfd kfd: amdgpu: added device 1002:744c\x00\x1b]0;t\x07\n"]),
)  # fmt: skip
KINDS = ("content", "content", "content", "content", "directory", "fifo", "dangling", "loop", "devzero")


@st.composite
def sabotage(draw: st.DrawFn, files: list[str]) -> list[tuple[str, str, bytes]]:
    chosen = draw(st.lists(st.sampled_from(files), min_size=1, max_size=6, unique=True))
    plan = []
    for rel in chosen:
        kind = draw(st.sampled_from(KINDS))
        data = draw(contents) if kind == "content" else b""
        plan.append((rel, kind, data))
    return plan


class Sabotaged:
    """Applies a sabotage plan to a machine and undoes it."""

    def __init__(self, root: Path, plan: list[tuple[str, str, bytes]]) -> None:
        self.root = root
        self.plan = plan
        self.saved: dict[str, tuple[bytes, int]] = {}

    def __enter__(self) -> Sabotaged:
        for rel, kind, data in self.plan:
            path = self.root / rel
            self.saved[rel] = (path.read_bytes(), path.stat().st_mode)
            path.unlink()
            if kind == "content":
                path.write_bytes(data)
            elif kind == "directory":
                path.mkdir()
            elif kind == "fifo":
                os.mkfifo(path)  # an open() without O_NONBLOCK would hang here
            elif kind == "dangling":
                path.symlink_to(self.root / "nonexistent")
            elif kind == "loop":
                path.symlink_to(path)
            else:
                path.symlink_to("/dev/zero")
        return self

    def __exit__(self, *exc: object) -> None:
        for rel, (data, mode) in self.saved.items():
            path = self.root / rel
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            path.write_bytes(data)
            os.chmod(path, mode & 0o7777)


def published(status: Status) -> None:
    """Build the service's property cache from the status and marshal it, as PropertiesChanged would."""
    b = load("fast")

    class _Service:
        pass

    service = _Service()
    service.status = status  # type: ignore[attr-defined]
    api = GuardianAPI(None, b, service, 1.0)  # type: ignore[arg-type]
    msg = b.Message.new_signal(OBJECT_PATH, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                               "sa{sv}as", [INTERFACE, api._props, []])  # fmt: skip
    assert msg._marshall(False)


def run_pass(root: Path, sources: tuple[str, ...]) -> None:
    system = SimulatedSystem(Root(root))
    facts = probe(system, log="always", log_sources=sources)
    for problem in facts.problems:
        assert problem.path and problem.reason
    verdict = assess(facts, Config())
    for finding in verdict.findings:
        assert finding.code and finding.message
        for text in (finding.message, finding.remedy, *finding.evidence):
            assert not CONTROL.search(text), (finding.code, text)
    assert not CONTROL.search(verdict.summary)
    published(from_verdict(facts, verdict, "notify", 0))
    assert probe(system, log="always", log_sources=sources) == facts


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.data())
def test_a_hostile_machine_never_breaks_a_pass(machines: dict[str, Machine], data: st.DataObject) -> None:
    machine = machines[data.draw(st.sampled_from(MACHINES))]
    plan = data.draw(sabotage(machine.files))
    sources = data.draw(st.sampled_from([("kmsg",), (f"/{KERN_LOG}",), ("journal", "kmsg")]))
    with Sabotaged(machine.root, plan):
        run_pass(machine.root, sources)


@pytest.fixture
def machine_dir(tmp_path: Path) -> Iterator[Path]:
    yield Path(bundled.render_bundled("rx7900xtx-ubuntu2404", tmp_path / "m").path)


@pytest.mark.parametrize("release", [b"6.8.0-45-generic\x00evil\n", b"../../etc\n", b"..\n", b"6.8 0\n"])
def test_a_kernel_release_that_cannot_name_a_path_is_a_problem(machine_dir: Path, release: bytes) -> None:
    (machine_dir / "proc/sys/kernel/osrelease").write_bytes(release)
    run_pass(machine_dir, ("kmsg",))
    facts = probe(SimulatedSystem(Root(machine_dir)), log="always", log_sources=("kmsg",))
    assert facts.kernel.release == ""
    assert [p.reason for p in facts.problems if p.path.endswith("osrelease")] == [
        f"not a kernel release: {release.decode().strip()!r}"
    ]
