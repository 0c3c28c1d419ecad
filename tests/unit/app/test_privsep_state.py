"""Issue 21: the oneshots' state files (kfdguard/app/runstate.py) and ``kfdguard enforce|fallback --record``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.app import runstate
from kfdguard.app.runstate import RunRecord, RunStateError
from kfdguard.host.root import Root
from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
from tests.paths import TOP

RECORD = RunRecord("enforce", True, "ready", "1 GPU can compute", (("x", "warning", "m", "r"),), ("changed: a",), 0, 5)


def kfdguard(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kfdguard", *argv], cwd=TOP, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    root = Root(tmp_path)
    written = runstate.write(root, RECORD)
    assert written == tmp_path / "run/kfdguard/enforce.json"
    assert written.stat().st_mode & 0o777 == 0o644  # the resident service reads it as another user
    assert runstate.read(root, "enforce") == RECORD
    assert json.loads(written.read_text())["version"] == runstate.VERSION
    # Both fallback actions share one file; asking for either kind finds the last of them.
    runstate.write(root, RunRecord("fallback-clear", False, "", "no", stamp=7))
    assert runstate.read(root, "fallback-apply").kind == "fallback-clear"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "does not exist"),
        (b"\xff\xfe", "is not JSON"),
        (b"{", "is not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"version": 2}', "version 2, this kfdguard reads version 1"),
        (b'{"version": true}', "version True"),
        (b" " * (runstate.SIZE_LIMIT + 1), "is larger than"),
    ],
)
def test_a_bad_file_is_a_specific_error(tmp_path: Path, content: bytes | None, error: str) -> None:
    if content is not None:
        (tmp_path / "run/kfdguard").mkdir(parents=True)
        (tmp_path / "run/kfdguard/enforce.json").write_bytes(content)
    with pytest.raises(RunStateError, match=error):
        runstate.read(Root(tmp_path), "enforce")


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"kind": "reboot"}, "unknown kind 'reboot'"),
        ({"ok": 1}, "'ok' is not true or false"),
        ({"message": "a\u0000b"}, "'message' is not a UTF-8 string"),  # D-Bus strings carry no NUL
        ({"state": "\ud800"}, "'state' is not a UTF-8 string"),  # nor a lone surrogate
        ({"findings": [["a", "b", "c"]]}, "'findings' is not a list"),
        ({"changes": [1]}, "'changes' is not a list of strings"),
        ({"stamp": -1}, "'stamp' is not a non-negative integer"),
        ({"exit_code": True}, "'exit_code' is not a non-negative integer"),
    ],
)
def test_every_field_is_checked(change: dict[str, object], error: str) -> None:
    with pytest.raises(RunStateError, match=error):
        runstate.parse({**RECORD.to_json(), **change})


def test_a_link_or_a_fifo_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "run/kfdguard/enforce.json"
    target.parent.mkdir(parents=True)
    (tmp_path / "elsewhere").write_text(json.dumps(RECORD.to_json()))
    target.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RunStateError, match="cannot be read"):
        runstate.read(Root(tmp_path), "enforce")
    target.unlink()
    os.mkfifo(target)  # O_NONBLOCK: a FIFO without a writer cannot hang the reader
    with pytest.raises(RunStateError, match="not a regular file"):
        runstate.read(Root(tmp_path), "enforce")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=6),
    max_leaves=20,
)
FIELDS = st.fixed_dictionaries({}, optional=dict.fromkeys(RECORD.to_json(), JSON))


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON, FIELDS, FIELDS.map(lambda d: {**RECORD.to_json(), **d})))
def test_any_json_is_a_record_or_a_run_state_error(value: object) -> None:
    try:
        record = runstate.parse(value)
    except RunStateError:
        return
    assert runstate.parse(record.to_json()) == record


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    return Path(render(bundled.load("kfd-perms-0600"), tmp_path / "m").path)


def test_enforce_record_repairs_and_writes_the_state(machine: Path) -> None:
    check = kfdguard("check", "--root", str(machine))
    assert check.returncode == 2, check.stdout  # unavailable: /dev/kfd is 0600
    first = kfdguard("enforce", "--record", "--root", str(machine))
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""  # the journal gets log lines, not the report
    assert "state ready (enforce)" in first.stderr
    record = runstate.read(Root(machine), "enforce")
    assert record.ok and record.state == "ready" and record.exit_code == 0
    assert "changed: fix-node /dev/kfd" in record.changes
    # A second pass changes nothing, and says so in a newer record.
    second = kfdguard("enforce", "--record", "--root", str(machine))
    again = runstate.read(Root(machine), "enforce")
    assert second.returncode == 0 and again.changes == () and again.stamp > record.stamp


def test_record_refuses_the_options_of_a_person(machine: Path) -> None:
    for extra in ("--dry-run", "--json"):
        result = kfdguard("enforce", "--record", extra, "--root", str(machine))
        assert result.returncode == 64 and "--record takes neither" in result.stderr
    assert not (machine / "run/kfdguard/enforce.json").exists()
    status = kfdguard("fallback", "status", "--record", "--root", str(machine))
    assert status.returncode == 64 and "the action is apply or clear" in status.stderr


def test_fallback_record_arranges_and_clears(tmp_path: Path) -> None:
    machine = render(bundled.load("dkms-missing-for-new-kernel"), tmp_path / "m").path
    applied = kfdguard("fallback", "apply", "--record", "--root", str(machine))
    record = runstate.read(Root(machine), "fallback-apply")
    assert applied.returncode == 0 and record.kind == "fallback-apply" and record.ok, applied.stderr
    assert "fallback apply:" in applied.stderr and record.message
    cleared = kfdguard("fallback", "clear", "--record", "--root", str(machine))
    record = runstate.read(Root(machine), "fallback-clear")
    assert cleared.returncode == 0 and record.kind == "fallback-clear" and record.ok, cleared.stderr


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["enforce", "--record"], ("enforce", None, False)),
        (["enforce", "--root", "/m", "--record"], ("enforce", "/m", False)),
        (["enforce", "--record", "--root=/m"], ("enforce", "/m", False)),
        (["fallback", "apply", "--record", "--pin"], ("fallback-apply", None, True)),
        (["fallback", "clear", "--record"], ("fallback-clear", None, False)),
        # Anything else is the full command line's to parse and to report.
        (["enforce"], None),
        (["enforce", "--record", "--dry-run"], None),
        (["enforce", "--record", "--record"], None),
        (["enforce", "--record", "--root"], None),
        (["enforce", "--record", "--root", "--pin"], None),
        (["enforce", "--record", "--pin"], None),
        (["fallback", "clear", "--record", "--pin"], None),
        (["fallback", "status", "--record"], None),
        (["check", "--record"], None),
        ([], None),
    ],
)
def test_the_oneshots_command_lines_are_recognized_exactly(argv: list[str], parsed: object) -> None:
    from kfdguard.app.oneshot import fast_argv

    assert fast_argv(argv) == parsed


def test_the_fast_path_and_the_full_command_line_record_the_same(machine: Path) -> None:
    fast = kfdguard("enforce", "--record", "--root", str(machine))
    first = runstate.read(Root(machine), "enforce")
    full = subprocess.run([sys.executable, "-c", "import sys; from kfdguard.cli import main; sys.exit(main())",
                           "enforce", "--record", "--root", str(machine)], cwd=TOP, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    second = runstate.read(Root(machine), "enforce")
    assert fast.returncode == full.returncode == 0, fast.stderr + full.stderr
    assert (first.kind, first.state, first.message, first.ok) == (second.kind, second.state, second.message, second.ok)
    assert first.changes and second.changes == ()  # the first repaired; the second found nothing to do


def test_root_s_kfd_version_travels_in_the_record(machine: Path) -> None:
    kfdguard("enforce", "--record", "--root", str(machine))
    record = runstate.read(Root(machine), "enforce")
    assert record.kfd_version and runstate.version_tuple(record.kfd_version) is not None
    with pytest.raises(RunStateError, match=r"'kfd_version' is not MAJOR\.MINOR"):
        runstate.parse({**record.to_json(), "kfd_version": "1.x"})


@pytest.mark.parametrize(
    ("record", "version", "codes"),
    [
        # The version root read; the same verdict as root's.
        (RunRecord("enforce", True, "ready", "", kfd_version="1.17"), (1, 17), set()),
        # No record yet (or one that says nothing): KFD answered through sysfs, which is not an error.
        (None, None, {"kfd-ioctl-denied"}),
        # Root's own failure is replayed with its errno: a broken KFD stays an error.
        (RunRecord("enforce", True, "error", "", kfd_error="ioctl: Inappropriate ioctl", kfd_errno=25), None,
         {"kfd-ioctl-failed"}),
    ],
)  # fmt: skip
def test_the_unprivileged_service_reads_kfds_version_from_the_record(
    tmp_path: Path, record: RunRecord | None, version: tuple[int, int] | None, codes: set[str]
) -> None:
    from kfdguard.assess import assess
    from kfdguard.config import Config
    from kfdguard.probe import probe
    from kfdguard.service.privsep import Privsep, UnprivilegedSystem
    from kfdguard.simulate.system import SimulatedSystem

    root = render(bundled.load("rx7900xtx-ubuntu2404"), tmp_path / "m")
    privsep = Privsep("child", root)
    privsep.record = record
    facts = probe(UnprivilegedSystem(SimulatedSystem(root), privsep), log="never")
    assert facts.kfd.version == version
    found = {f.code for f in assess(facts, Config()).findings} & {"kfd-ioctl-denied", "kfd-ioctl-failed"}
    assert found == codes


def test_a_broken_config_keeps_the_last_good_one_in_the_enforce_pass(machine: Path) -> None:
    # Found in the VM lane's faults scenario: the oneshot read config.yaml without the service's cache of
    # the last good file, so a broken file made it fall back to the defaults and rewrite kfdguard.conf.
    config = machine / "etc/kfdguard/config.yaml"
    conf = machine / "etc/modprobe.d/kfdguard.conf"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("version: 1\nmodule:\n  options:\n    cwsr_enable: 0\n")
    assert kfdguard("enforce", "--record", "--root", str(machine)).returncode == 0
    good = conf.read_text()
    assert "options amdgpu cwsr_enable=0" in good
    config.write_text("version: 1\nmodule: [broken\n")
    assert kfdguard("enforce", "--record", "--root", str(machine)).returncode == 0
    assert conf.read_text() == good
    assert "config-invalid" in kfdguard("check", "--root", str(machine), "--json").stdout
