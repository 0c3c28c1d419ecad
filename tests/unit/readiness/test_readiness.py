"""Compute-ready: the runtime marker, and kfdguard wait over the bus and without one."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kfdguard.host.root import READY_MARKER, Root
from kfdguard.host.system import RealSystem
from kfdguard.readiness.cli import EXIT_READY, EXIT_TIMEOUT
from kfdguard.readiness.condition import normal_slot, satisfied
from kfdguard.readiness.marker import Marker, MarkerPublisher, parse, publish, read, render, wanted
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Status
from tests.servicekit import REPO, guardian
from tests.servicekit import machine as render_machine

GPU = "0000:03:00.0"


def _status(state: str, *devices: tuple[str, bool, str], summary: str = "s") -> Status:
    return Status(
        state,
        state == "ready",
        summary,
        devices=tuple({"Slot": s, "ComputeReady": r, "GfxTarget": g} for s, r, g in devices),
    )


# --- the rule ----------------------------------------------------------------------------


def test_what_ready_means() -> None:
    assert satisfied("ready", [GPU], "all")
    assert not satisfied("degraded", [GPU], "all")
    assert satisfied("degraded", [GPU], "any")
    assert not satisfied("unavailable", [], "any")
    assert not satisfied("no-device", [], "any")
    assert satisfied("degraded", [GPU], "all", gpu="03:00.0")
    assert not satisfied("ready", [GPU], "all", gpu="0000:04:00.0")
    assert normal_slot("03:00.0") == GPU == normal_slot("0000:03:00.0")


# --- the marker ----------------------------------------------------------------------------


def test_the_marker_is_sourceable_and_reads_back() -> None:
    marker = Marker("ready", (GPU,), ("gfx1100",), 1764579200, 'a "GPU" $HOME `x` \\ ok\nSTATE=evil')
    text = render(marker)
    assert "\nSTATE=evil" not in text, "a hostile summary cannot add a line"
    back = parse(text)
    assert back is not None and back.ready_gpus == (GPU,) and back.since == 1764579200
    assert back.summary == 'a "GPU" $HOME `x` \\ ok?STATE=evil'
    shell = subprocess.run(["sh", "-c", '. "$1" && printf %s "$READY_GPUS|$SUMMARY"', "sh", "/dev/stdin"],
                           input=text, capture_output=True, text=True, check=True)  # fmt: skip
    assert shell.stdout == f'{GPU}|a "GPU" $HOME `x` \\ ok?STATE=evil'


@pytest.mark.parametrize(
    "text", ["", "STATE=unavailable\nSINCE=1\n", "STATE=ready\n", "STATE=ready\nSINCE=²\n", "\x00" * 100, "garbage"]
)
def test_what_is_not_a_marker(text: str) -> None:
    assert parse(text) is None


def test_a_marker_that_is_a_link_is_refused(tmp_path: Path) -> None:
    # /run/kfdguard is the resident service's to write; `kfdguard wait` runs as root. A marker that is a
    # link (here to a file inside the machine, which a root other than "/" would read) is not read.
    system = RealSystem(Root(tmp_path))
    marker = tmp_path / READY_MARKER.lstrip("/")
    marker.parent.mkdir(parents=True)
    roots_file = tmp_path / "etc/roots-file"
    roots_file.parent.mkdir()
    roots_file.write_text(render(Marker("ready", (GPU,), ("gfx1100",), 1, "what root's file says")))
    marker.write_text(roots_file.read_text())
    assert read(system) is not None  # a marker as the service writes it is read
    marker.unlink()
    marker.symlink_to("../../etc/roots-file")
    assert read(system) is None


def test_the_marker_follows_the_state_world_readable_and_keeps_its_time(tmp_path: Path) -> None:
    system = RealSystem(Root(tmp_path))
    path = tmp_path / READY_MARKER.lstrip("/")
    old_umask = os.umask(0o077)  # the unit's UMask
    try:
        clock = iter([100.0, 200.0, 300.0, 400.0])
        publisher = MarkerPublisher(system, lambda: "all", lambda: next(clock))
        publisher(_status("starting"), _status("ready", (GPU, True, "gfx1100"), summary="one"))
        assert path.stat().st_mode & 0o777 == 0o644
        first = read(system)
        assert first is not None and first.since == 100 and first.gfx_targets == ("gfx1100",)
        publisher(_status("ready"), _status("ready", (GPU, True, "gfx1100"), summary="two"))
        second = read(system)
        assert second is not None and second.summary == "two" and second.since == 100
        publisher(_status("ready"), _status("degraded", (GPU, True, "gfx1100")))
        assert not path.exists(), "require all: degraded is not ready"
    finally:
        os.umask(old_umask)


def test_a_stale_marker_from_an_earlier_run_goes_at_the_first_transition(tmp_path: Path) -> None:
    system = RealSystem(Root(tmp_path))
    assert publish(system, Marker("ready", (GPU,), (), 1, "old"), None) is None
    MarkerPublisher(system, lambda: "all", time.time)(_status("starting"), _status("unavailable"))
    assert read(system) is None


def test_require_any_keeps_the_marker_while_degraded(tmp_path: Path) -> None:
    assert wanted("degraded", [(GPU, True, "gfx1100"), ("0000:04:00.0", False, "gfx1030")], "s", "any", 5) == Marker(
        "degraded", (GPU,), ("gfx1100",), 5, "s"
    )
    assert wanted("degraded", [(GPU, True, "gfx1100")], "s", "all", 5) is None


def test_a_marker_that_cannot_be_written_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("not a directory")
    problem = publish(RealSystem(Root(tmp_path)), Marker("ready", (GPU,), (), 1, "x"), None)
    assert problem is not None and READY_MARKER in problem


# --- kfdguard wait -------------------------------------------------------------------------


def _wait(
    *args: str, root: Path | None = None, bus: str | None = "unix:path=/nonexistent/bus"
) -> tuple[int, str, float, float]:
    """Runs kfdguard wait; returns (exit status, stderr+stdout, seconds, CPU seconds it used)."""
    argv = [sys.executable, "-m", "kfdguard", "wait", *args]
    if bus is not None:
        argv += ["--bus", bus]
    if root is not None:
        argv += ["--root", str(root)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return result.returncode, result.stdout + result.stderr, elapsed, cpu


def test_wait_without_a_bus_reads_the_marker(tmp_path: Path) -> None:
    rc, out, _, _ = _wait("--timeout", "0", root=tmp_path)
    assert rc == 1 and "no system bus" in out and "compute not ready" in out
    publish(RealSystem(Root(tmp_path)), Marker("ready", (GPU,), ("gfx1100",), 1, "1 GPU can compute"), None)
    rc, out, _, _ = _wait("--timeout", "0", root=tmp_path)
    assert rc == 0 and "compute is ready" in out
    rc, _, _, _ = _wait("--gpu", "0000:04:00.0", "--timeout", "0", root=tmp_path)
    assert rc == 1


def _readable(fd: int, timeout: float) -> bool:
    import select

    return bool(select.select([fd], [], [], timeout)[0])


def test_the_watch_goes_down_as_the_markers_directories_appear(tmp_path: Path) -> None:
    """The interleaving that slept through a marker under load: the waiter wakes for run/ and looks before
    run/kfdguard exists; the service then makes run/kfdguard and the marker. Only a watch on run/ hears it."""
    from kfdguard.readiness.wait import _drain, _inotify, rewatch

    marker_dir = str(tmp_path / "run" / "kfdguard")
    fd = _inotify(marker_dir)
    assert fd is not None
    try:
        (tmp_path / "run").mkdir()
        assert _readable(fd, 5)  # tmp_path is watched: run/ appearing wakes the waiter
        _drain(fd)
        rewatch(fd, marker_dir)  # what the waiter does when it wakes: run/kfdguard is not there yet
        (tmp_path / "run" / "kfdguard").mkdir()
        assert _readable(fd, 5), "run/kfdguard appeared unheard: the marker would be missed until the timeout"
        _drain(fd)
        rewatch(fd, marker_dir)
        (tmp_path / "run" / "kfdguard" / "ready").write_text("x")
        assert _readable(fd, 5)
    finally:
        os.close(fd)


def test_a_level_made_while_the_watch_is_added_is_watched_too(tmp_path: Path) -> None:
    """The whole chain made between two looks: the watch goes straight to the deepest level there is."""
    from kfdguard.readiness.wait import _drain, _inotify, rewatch

    marker_dir = tmp_path / "run" / "kfdguard"
    fd = _inotify(str(marker_dir))
    assert fd is not None
    try:
        marker_dir.mkdir(parents=True)
        rewatch(fd, str(marker_dir))
        _drain(fd)
        (marker_dir / "ready").write_text("x")  # an entry of run/kfdguard: heard only if that is watched
        assert _readable(fd, 5)
    finally:
        os.close(fd)


def test_wait_without_a_bus_wakes_when_the_marker_appears_and_does_not_spin(tmp_path: Path) -> None:
    # Not even /run/kfdguard exists yet: the nearest existing directory is watched.
    def later() -> None:
        time.sleep(1.5)
        publish(RealSystem(Root(tmp_path)), Marker("ready", (GPU,), (), 1, "now"), None)

    thread = threading.Thread(target=later)
    thread.start()
    rc, out, elapsed, cpu = _wait("--timeout", "20", root=tmp_path)
    thread.join()
    assert rc == 0, out
    assert 1.4 < elapsed < 10
    # An interpreter start and imports cost about a third of a second; a spinning loop would burn all 1.5 s.
    assert cpu < 1.2, f"kfdguard wait used {cpu:.2f} s of CPU in {elapsed:.2f} s"


def test_wait_times_out_with_the_reason(tmp_path: Path) -> None:
    rc, out, elapsed, _ = _wait("--timeout", "1", root=tmp_path)
    # The message gives the time really waited: at least the timeout, 1.1 s or more on a loaded machine.
    said = re.search(r"after (\d+\.\d) s", out)
    assert rc == 1 and 0.9 < elapsed < 10 and said is not None
    assert 1.0 <= float(said.group(1)) <= elapsed + 0.05


@pytest.mark.parametrize("bad", [["--timeout", "-1"], ["--timeout", "nan"], ["--gpu", "x"], ["--any", "--all"]])
def test_wait_usage_errors(bad: list[str]) -> None:
    rc, _, _, _ = _wait(*bad)
    assert rc == 64


@pytest.mark.root
def test_wait_over_the_bus_ready_already(each_bus: str) -> None:
    with guardian("rx7900xtx-ubuntu2404") as g:
        rc, out, _, _ = _wait("--timeout", "10", bus=g.address, root=g.root)
        assert rc == 0 and "compute is ready" in out and "no system bus" not in out
        marker = g.root / READY_MARKER.lstrip("/")
        assert marker.stat().st_mode & 0o777 == 0o644 and "STATE=ready" in marker.read_text()


@pytest.mark.root
def test_wait_over_the_bus_ready_later_after_a_device_event(each_bus: str) -> None:
    with guardian("kfd-perms-0600", enforce=False) as g:
        assert not (g.root / READY_MARKER.lstrip("/")).exists()
        root = Root(g.root)

        def repair() -> None:
            time.sleep(1.5)
            render_gid = next(int(line.split(":")[2]) for line in (g.root / "etc/group").read_text().splitlines()
                              if line.startswith("render:"))  # fmt: skip
            SimulatedSystem(root).set_node_owner(root.kfd, 0, render_gid, 0o660)
            g.uevent("change kfd kfd")

        thread = threading.Thread(target=repair)
        thread.start()
        rc, out, elapsed, cpu = _wait("--timeout", "30", bus=g.address, root=g.root)
        thread.join()
        assert rc == 0, out
        assert elapsed > 1.4 and cpu < 1.5, (elapsed, cpu)
        assert (g.root / READY_MARKER.lstrip("/")).exists()


@pytest.mark.root
def test_wait_over_the_bus_never_ready(each_bus: str) -> None:
    with guardian("nvidia-only") as g:
        rc, out, elapsed, cpu = _wait("--any", "--timeout", "2", bus=g.address, root=g.root)
        assert rc == EXIT_TIMEOUT == 1 and "no-device" in out, out
        # It says how long it really waited: never less than the timeout, later only by the machine's load.
        waited = re.search(r"after (\d+\.\d) s", out)
        assert waited and 2.0 <= float(waited.group(1)) <= elapsed + 0.1, out
        assert 1.9 < elapsed < 15 and cpu < 1.5, (elapsed, cpu)


def test_the_exit_codes_are_in_the_help() -> None:
    result = subprocess.run([sys.executable, "-m", "kfdguard", "wait", "--help"], cwd=REPO, capture_output=True,
                            text=True, timeout=60, check=True)  # fmt: skip
    assert f"  {EXIT_READY}   compute is ready" in result.stdout
    assert f"  {EXIT_TIMEOUT}   not ready within --timeout" in result.stdout
    assert "  64  usage error" in result.stdout


@pytest.mark.root
def test_wait_for_a_service_that_is_not_running_yet(each_bus: str, tmp_path: Path) -> None:
    from tools.privatebus import PrivateBus

    (tmp_path / "bus").mkdir()
    bus = PrivateBus(tmp_path / "bus").start()
    try:
        rc, out, _, _ = _wait("--timeout", "1", bus=bus.address, root=tmp_path)
        assert rc == 1 and "does not answer" in out
        result: list[tuple[int, str, float, float]] = []
        thread = threading.Thread(target=lambda: result.append(_wait("--timeout", "40", bus=bus.address)))
        thread.start()
        time.sleep(1.0)
        with guardian("rx7900xtx-ubuntu2404", bus=bus):
            thread.join(45)
        assert result and result[0][0] == 0, result
    finally:
        bus.stop()


def test_a_simulated_machine_renders_no_marker_by_itself(tmp_path: Path) -> None:
    root = render_machine("rx7900xtx-ubuntu2404", tmp_path)
    assert not (root / READY_MARKER.lstrip("/")).exists()
