"""Live GPU health: kernel lines and WEDGED uevents -> per GPU counts and a degraded state while in trouble."""

from __future__ import annotations

from pathlib import Path

import pytest

from kfdguard.facts import Facts
from kfdguard.health import events, model
from kfdguard.health.events import from_log, from_uevent, parse_uevent_line
from kfdguard.health.tracker import Health
from kfdguard.host.root import Root
from kfdguard.record import replace
from kfdguard.service.status import DEVICE_KEYS
from kfdguard.simulate import bundled, gpureset, state
from kfdguard.simulate.render import render
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Status
from tests.paths import TESTS

GPU = "0000:03:00.0"
REPORTS = TESTS / "data" / "real-reports"


def _status(*slots: str, state_: str = "ready") -> Status:
    devices = tuple({"Slot": s, "Name": "RX 7900 XTX", "ComputeReady": True, "Reason": "ready"} for s in slots)
    return Status(state_, True, "1 GPU can compute", devices=devices)


def _health(*slots: str) -> Health:
    health = Health()
    health.know(slots)
    return health


def _feed(health: Health, lines: list[str]) -> None:
    for n, line in enumerate(lines):
        event = from_log(line)
        if event is not None:
            health.feed(event, 1000 + n)


# --- the kernel's lines, as real reports show them --------------------------------------------


def _report(name: str) -> list[str]:
    return [line for line in (REPORTS / name).read_text().splitlines() if not line.startswith("#")]


def test_a_real_ring_timeout_then_reset_counts_and_names_the_process() -> None:
    # ROCm/TheRock#1271: ring timeout, a failed ring reset, a full reset (the begin line is the log's last).
    health = _health("0000:c1:00.0")
    _feed(health, _report("053-gfx1150-comfyui-mes-remove-queue-ring-reset.txt"))
    gpu = health.gpus["0000:c1:00.0"]
    assert (gpu.ring_timeouts, gpu.resets, gpu.state) == (1, 1, "resetting")
    assert gpu.last_process == "ptyxis (pid 4049)"
    # MES failed to respond, Failed to evict queue: the episode the ring timeout opened, not another hang.
    assert gpu.hangs == 0 and gpu.last_line == "GPU reset begin!"


def test_a_real_mes_hang_with_the_source_suffix() -> None:
    health = _health("0000:c5:00.0")
    _feed(health, _report("008-mes-hang-strix-halo.txt"))
    gpu = health.gpus["0000:c5:00.0"]
    assert gpu.resets == 1 and gpu.state == "resetting" and gpu.last_line == "GPU reset begin!. Source:  3"


@pytest.mark.parametrize(
    ("line", "kind", "slot"),
    [
        # 6.1: DRM_ERROR, no device named; 6.12: dev_err with dev_fmt "amdgpu: "; 7.2: without dev_fmt.
        ("3,900,5000,-;[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=7, "
         "emitted seq=9", model.RING_TIMEOUT, ""),
        ("3,901,5001,-;amdgpu 0000:03:00.0: amdgpu: ring comp_1.0.0 timeout, signaled seq=7, emitted seq=9",
         model.RING_TIMEOUT, GPU),
        ("6,902,5002,-;amdgpu 0000:03:00.0: GPU reset begin!. Source:  1", model.RESET_BEGIN, GPU),
        ("6,903,5003,-;amdgpu 0000:03:00.0: amdgpu: GPU jobs stop begin!", model.RESET_BEGIN, GPU),
        ("[ 12.000001] localhost kernel: amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!", model.RESET_DONE, GPU),
        ("amdgpu 0000:03:00.0: GPU reset(3) failed with error -110", model.RESET_FAILED, GPU),
        ("amdgpu 0000:03:00.0: amdgpu: GPU reset end with ret = -110", model.RESET_FAILED, GPU),
        ("amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered", model.RING_RECOVERED, GPU),
        ("amdgpu 0000:03:00.0: Ring gfx_0.0.0 reset succeeded", model.RING_RECOVERED, GPU),
        ("amdgpu 0000:03:00.0:  Process python3 pid 4242 thread pt_main pid 4250", model.PROCESS, GPU),
        ("amdgpu 0000:03:00.0: amdgpu: The cp might be in an unrecoverable state due to an unsuccessful queues "
         "preemption", model.HANG, GPU),
    ],
)  # fmt: skip
def test_each_format_string(line: str, kind: str, slot: str) -> None:
    event = from_log(line)
    assert event is not None and (event.kind, event.slot) == (kind, slot)


@pytest.mark.parametrize(
    "line",
    [
        "amdgpu 0000:03:00.0: [drm] device wedged, but no recovery needed",  # the uevent counts, not this
        "amdgpu 0000:03:00.0: amdgpu: Ring gfx_0.0.0 reset failed",  # a full reset follows, counted then
        "systemd[1]: GPU reset begin!",  # not the kernel
        # another driver's words (issue 34): i915's reset, nouveau's ring timeout
        "[  812.1] [drm:intel_gt_reset [i915]] *ERROR* GPU reset begin!",
        "[  812.2] nouveau 0000:01:00.0: ring gfx_0.0.0 timeout, signaled seq=4, emitted seq=6",
        "ring buffer of the audio device timeout",
        "",
        "\x00" * 5000,
    ],
)
def test_lines_that_are_not_health_events(line: str) -> None:
    assert from_log(line) is None


def test_a_hostile_line_is_cleaned_and_bounded() -> None:
    event = from_log("amdgpu 0000:03:00.0: amdgpu: GPU reset begin!" + "\x1b[31m" + "x" * 5000)
    assert event is not None and "\x1b" not in event.line and len(event.line) <= events.LINE_LIMIT


# --- the uevent ----------------------------------------------------------------------------


def test_the_wedged_uevent() -> None:
    parts = parse_uevent_line("change drm card0 WEDGED=none PID=4242 TASK=python3")
    assert parts == ("change", "drm", "card0", {"WEDGED": "none", "PID": "4242", "TASK": "python3"})
    event = from_uevent(*parts, slot=GPU)
    assert event is not None and (event.kind, event.detail, event.process) == (
        model.WEDGED,
        "none",
        "python3 (pid 4242)",
    )
    odd = from_uevent("change", "drm", "card0", {"WEDGED": "rebind,bus-reset,$(reboot)", "PID": "-1"}, GPU)
    assert odd is not None and odd.detail == "rebind,bus-reset,unknown" and odd.process == ""
    assert from_uevent("add", "drm", "card0", {"WEDGED": "none"}, GPU) is None
    assert from_uevent("change", "drm", "card0", {}, GPU) is None


# --- the tracker and the published status ------------------------------------------------------


def test_a_reset_degrades_and_recovery_restores_with_the_counts_kept() -> None:
    health = _health(GPU)
    base = _status(GPU)
    assert health.overlay(base).state == "ready"
    _feed(health, ["amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=7, emitted seq=9",
                   "amdgpu 0000:03:00.0: amdgpu: Process information: process python3 pid 42 thread python3 pid 42",
                   "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"])  # fmt: skip
    during = health.overlay(base, disclose=True)
    assert (during.state, during.ready) == ("degraded", False)
    device = during.devices[0]
    assert device["ComputeReady"] is False and device["Health"] == "resetting" and device["Resets"] == 1
    assert during.findings[0][0] == "gpu-hang" and "python3 (pid 42)" in during.findings[0][2]
    assert (device["LastHealthLine"], device["LastProcess"]) == ("GPU reset begin!", "python3 (pid 42)")
    # Undisclosed (the kernel keeps its log from users): the same state and counts, the cause alone.
    hidden = health.overlay(base)
    assert (hidden.state, hidden.ready, hidden.devices[0]["Resets"]) == ("degraded", False, 1)
    assert (hidden.devices[0]["LastHealthLine"], hidden.devices[0]["LastProcess"]) == ("GPU reset begin", "")
    assert hidden.devices[0]["Reason"] == "resetting: GPU reset begin"
    assert "python3" not in repr(hidden) and "pid" not in repr(hidden)
    _feed(health, ["amdgpu 0000:03:00.0: amdgpu: GPU reset(1) succeeded!"])
    after = health.overlay(base)
    assert (after.state, after.ready, after.findings) == ("ready", True, ())
    assert after.devices[0]["Health"] == "ok" and after.devices[0]["Resets"] == 1
    assert after.devices[0]["RingTimeouts"] == 1 and after.devices[0]["ComputeReady"] is True


@pytest.mark.parametrize(
    ("lines", "shown"),
    [
        (["amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=7, emitted seq=9",
          "amdgpu 0000:03:00.0: amdgpu:  Process ollama pid 2231 thread ollama pid 2240"], "ring gfx_0.0.0 timeout"),
        (["amdgpu 0000:03:00.0: amdgpu: ring comp_1.0.0 timeout, but soft recovered"],
         "ring comp_1.0.0 timeout, soft recovered"),
        (["amdgpu 0000:03:00.0: amdgpu: GPU reset(2) failed with error -110"], "GPU reset failed (error -110)"),
        (["amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE"], "MES stopped answering"),
        (["amdgpu 0000:03:00.0: amdgpu: Failed to evict process queues"],
         "the hardware scheduler (HWS) stopped answering"),
    ],
)  # fmt: skip
def test_an_undisclosed_line_is_its_cause_without_process_or_pid(lines: list[str], shown: str) -> None:
    health = _health(GPU)
    _feed(health, lines)
    device = health.overlay(_status(GPU)).devices[0]
    assert (device["LastHealthLine"], device["LastProcess"]) == (shown, "")
    assert "ollama" not in repr(health.overlay(_status(GPU)))
    disclosed = health.overlay(_status(GPU), disclose=True).devices[0]
    assert disclosed["LastHealthLine"] == health.gpus[GPU].last_line != shown


def test_an_undisclosed_wedge_names_no_task() -> None:
    health = _health(GPU)
    event = from_uevent("change", "drm", "card0", {"WEDGED": "rebind", "PID": "2231", "TASK": "ollama"}, GPU)
    assert event is not None and health.feed(event, 1)
    shown = health.overlay(_status(GPU))
    assert shown.devices[0]["LastHealthLine"] == "GPU wedged (WEDGED=rebind)"
    assert "ollama" not in repr(shown) and "2231" not in repr(shown)
    assert health.overlay(_status(GPU), disclose=True).devices[0]["LastProcess"] == "ollama (pid 2231)"


def test_wedged_needing_recovery_stays_until_the_kernel_says_otherwise() -> None:
    health = _health(GPU)
    event = from_uevent("change", "drm", "card0", {"WEDGED": "rebind"}, GPU)
    assert event is not None and health.feed(event, 1)
    assert health.overlay(_status(GPU)).state == "degraded"
    done = from_log("amdgpu 0000:03:00.0: amdgpu: GPU reset(1) succeeded!")
    assert done is not None and health.feed(done, 2)
    assert health.overlay(_status(GPU)).state == "ready"


def test_a_failed_reset_is_an_error_that_stays() -> None:
    health = _health(GPU)
    _feed(health, ["amdgpu 0000:03:00.0: GPU reset begin!. Source:  1",
                   "amdgpu 0000:03:00.0: GPU reset(1) failed with error -110",
                   "amdgpu 0000:03:00.0: GPU reset end with ret = -110"])  # fmt: skip
    gpu = health.gpus[GPU]
    assert (gpu.state, gpu.reset_failures, gpu.resets) == ("reset-failed", 1, 1)
    shown = health.overlay(_status(GPU))
    assert shown.state == "degraded" and shown.findings[0][1] == "error"


def test_a_line_without_a_device_belongs_to_the_only_gpu_and_to_none_of_several() -> None:
    line = "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=7, emitted seq=9"
    one, two = _health(GPU), _health(GPU, "0000:04:00.0")
    _feed(one, ["3,1,1,-;" + line])
    _feed(two, ["3,1,1,-;" + line])
    assert one.gpus[GPU].ring_timeouts == 1 and two.gpus == {}


def test_slots_no_check_found_are_not_tracked() -> None:
    health = _health(GPU)
    for n in range(500):
        _feed(health, [f"amdgpu 0000:{n % 256:02x}:{n // 256:02x}.0: amdgpu: GPU reset begin!"])
    assert set(health.gpus) <= {GPU}


def test_other_gpus_keep_computing_and_unavailable_stays_unavailable() -> None:
    health = _health(GPU, "0000:04:00.0")
    _feed(health, ["amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"])
    shown = health.overlay(_status(GPU, "0000:04:00.0"))
    assert shown.state == "degraded" and shown.ready, "the other GPU still computes"
    assert [d["ComputeReady"] for d in shown.devices] == [False, True]
    assert health.overlay(_status(GPU, state_="unavailable")).state == "unavailable"


def test_every_device_key_has_a_bus_type() -> None:
    shown = _health(GPU).overlay(_status(GPU))
    assert set(shown.devices[0]) <= set(DEVICE_KEYS)


# --- the simulator prints what the kernel prints -------------------------------------------------


@pytest.mark.parametrize("release", ["6.1.0-27-amd64", "6.12.57+deb13-amd64", "7.2.13-amd64"])
def test_a_simulated_reset_reads_back_on_every_kernel_form(release: str, tmp_path: Path) -> None:
    spec = bundled.load("rx7900xtx-ubuntu2404")
    spec = replace(spec, kernel=replace(spec.kernel, release=release))
    root = Root(render(spec, tmp_path / "m").path)
    before = len(state.read_kmsg(root))
    kernel = SimulatedSystem(root).kernel()
    gpureset.hang(kernel, GPU)
    gpureset.recover(kernel, GPU)
    uevents = list(kernel.uevents)
    kernel.save()
    lines = state.read_kmsg(root)[before:]
    health = _health(GPU)
    _feed(health, lines)
    for text in uevents:
        parts = parse_uevent_line(text)
        assert parts is not None
        event = from_uevent(*parts, slot=GPU)
        if event is not None:
            health.feed(event, 9)
    gpu = health.gpus[GPU]
    assert (gpu.resets, gpu.ring_timeouts, gpu.state) == (1, 1, "ok")
    assert gpu.last_process == "python3 (pid 4242)"
    # 6.14+ sends the WEDGED uevent after a successful reset; 6.1 and 6.12 do not have it.
    assert gpu.wedged == (1 if release.startswith("7.") else 0)
    if release.startswith("6.1."):
        assert lines[0].split(";", 1)[1].startswith("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring ")


# --- the Prometheus counters --------------------------------------------------------------------


def test_the_counters_in_the_textfile_pass_promtool(machine_facts: dict[str, Facts]) -> None:
    import subprocess

    from kfdguard.assess import assess
    from kfdguard.fleet.metrics import render as render_metrics
    from tests.unit.fleet.test_fleet_metrics import PROMTOOL, samples

    facts = machine_facts["dgpu-plus-igpu-atomics"]
    verdict = assess(facts)
    slots = tuple(g.slot for g in verdict.gpus)
    assert len(slots) >= 2
    health = _health(*slots)
    _feed(health, [f"amdgpu {slots[0]}: amdgpu: GPU reset begin!", f"amdgpu {slots[0]}: amdgpu: GPU reset(1) succeeded!",
                   f"amdgpu {slots[0]}: amdgpu: GPU reset begin!"])  # fmt: skip
    text = render_metrics(verdict, facts, 1_796_000_000.0, health=health.counts())
    got = samples(text)
    assert {labels["slot"]: value for labels, value in got["kfdguard_gpu_resets_total"]} == {
        slots[0]: 2
    } | dict.fromkeys(slots[1:], 0)
    assert "# TYPE kfdguard_gpu_resets_total counter" in text
    assert "kfdguard_gpu_resets_total" not in render_metrics(verdict, facts, 1.0), "a one-off run counts nothing"
    if PROMTOOL is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed")
    result = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60,
                            check=False)  # fmt: skip
    assert result.returncode == 0 and result.stdout == result.stderr == "", result.stdout + result.stderr


# --- following the journal (the loop's side), with a stand-in for systemd's Reader --------------


class _Reader:
    """journal.Reader's methods that JournalFollower uses, over a list; fileno() is a pipe to wake the loop."""

    def __init__(self) -> None:
        import os

        self.entries: list[dict[str, object]] = []
        self.position = 0
        self.read_fd, self.write_fd = os.pipe()
        self.sought: list[str] = []
        self.invalidate = False

    def this_boot(self) -> None: ...
    def add_match(self, **_: str) -> None: ...
    def seek_tail(self) -> None:
        self.position = len(self.entries)

    def get_previous(self) -> dict[str, object]:
        return {}

    def fileno(self) -> int:
        return self.read_fd

    def process(self) -> int:
        import os

        os.read(self.read_fd, 4096)
        from systemd import journal

        return int(journal.INVALIDATE if self.invalidate else journal.APPEND)

    def seek_cursor(self, cursor: str) -> None:
        self.sought.append(cursor)
        self.position = next(n for n, e in enumerate(self.entries) if e["__CURSOR"] == cursor)

    def get_next(self) -> dict[str, object]:
        if self.position >= len(self.entries):
            return {}
        entry = self.entries[self.position]
        self.position += 1
        return entry

    def close(self) -> None:
        import os

        os.close(self.read_fd)
        os.close(self.write_fd)

    def append(self, n: int, message: str | bytes, facility: int = 0) -> None:
        import datetime

        # What journald stamps on a record it read from /dev/kmsg (systemd-python's types).
        self.entries.append({"__CURSOR": f"c{n}", "__MONOTONIC_TIMESTAMP": datetime.timedelta(seconds=n),
                             "_TRANSPORT": "kernel", "SYSLOG_FACILITY": facility, "MESSAGE": message})  # fmt: skip

    def wake(self) -> None:
        import os

        os.write(self.write_fd, b"x")


def test_the_journal_follower_hands_on_new_kernel_lines_in_batches_and_keeps_its_cursor() -> None:
    import asyncio

    from kfdguard.health.follow import BATCH, JournalFollower

    reader = _Reader()
    reader.append(0, "old: before the service followed")
    lines: list[str] = []

    async def run() -> None:
        follower = JournalFollower(asyncio.get_running_loop(), lines.append, reader)
        for n in range(1, BATCH + 11):
            reader.append(n, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!" if n == 5 else f"line {n}".encode())
        reader.wake()
        await asyncio.sleep(0.05)
        assert len(lines) == BATCH + 10, "a batch, then the rest on the next turn of the loop"
        # Rotation: the journal says INVALIDATE; the follower goes back to the last entry it handed on.
        reader.invalidate = True
        reader.append(BATCH + 11, "after rotation")
        reader.wake()
        await asyncio.sleep(0.05)
        follower.close()

    asyncio.run(run())
    assert "old" not in lines[0], "the follower starts at the tail"
    assert lines[4] == "[    5.000000] localhost kernel: amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"
    event = from_log(lines[4])
    assert event is not None and event.kind == model.RESET_BEGIN and event.slot == GPU
    assert reader.sought == [f"c{BATCH + 10}"] and lines[-1].endswith("after rotation")
    assert len(lines) == BATCH + 11, "nothing handed on twice after the rotation"


def test_the_journal_follower_skips_what_userspace_wrote_into_kmsg_and_cuts_long_lines() -> None:
    """A record written into /dev/kmsg from userspace reaches the journal on the kernel transport too, but
    printk gives it a facility other than the kernel's (LOG_USER by default): it is no kernel line."""
    import asyncio

    from kfdguard.health.follow import JournalFollower
    from kfdguard.host.system import ENTRY_LIMIT

    reader = _Reader()
    lines: list[str] = []

    async def run() -> None:
        follower = JournalFollower(asyncio.get_running_loop(), lines.append, reader)
        reader.append(1, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", facility=1)
        reader.append(2, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin! " + "x" * 100_000)
        reader.wake()
        await asyncio.sleep(0.05)
        follower.close()

    asyncio.run(run())
    assert len(lines) == 1 and lines[0].startswith("[    2.000000] localhost kernel: amdgpu 0000:03:00.0")
    assert len(lines[0]) < ENTRY_LIMIT + 40
