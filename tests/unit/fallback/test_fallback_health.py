"""The per-kernel history and live GPU health (issues 17.4, 18.5): recorded, folded, ranked, explained.

"Good" is "compute came up and stayed healthy": the resident service's per-boot health
(kfdguard/health/store.py) goes into each kernel's record, and the recommendation ranks and
says why by it; an unstable running kernel is acted on only with fallback.unstable: act.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from kfdguard.config import load_config
from kfdguard.facts import HEALTH_BOOTS, BootHealth, Facts, HealthFiles, History, KernelRecord
from kfdguard.fallback.apply import history_json
from kfdguard.fallback.policy import auto_action, fold_health, recommend, record_check
from kfdguard.health import store
from kfdguard.health.events import from_log
from kfdguard.health.tracker import Health
from kfdguard.host.root import Root
from kfdguard.probe.boot import history_from_json, probe_health, probe_history
from kfdguard.probe.reader import Reader
from kfdguard.record import replace
from kfdguard.verdict import Recommendation
from tests.paths import TOP
from tests.robustness.test_fallback_property import facts_for
from tests.unit.fallback.test_fallback_rank import KERNELS, RUNNING, loader

if TYPE_CHECKING:
    import asyncio

    from kfdguard.service.checks import Checks
    from kfdguard.service.core import Service

NEWER, OLDER = "6.8.0-1-generic", "6.5.0-1-generic"
RESET = "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"


def boot(boot_id: str, release: str = RUNNING, resets: int = 0, failures: int = 0, timeouts: int = 0) -> BootHealth:
    return BootHealth(boot_id, release, resets, failures, timeouts, 0, "2026-11-30T21:04:05Z" if resets else "",
                      "reset-begin" if resets else "", "GPU reset begin!" if resets else "",
                      "llama-server (pid 777)" if resets else "")  # fmt: skip


def record(*boots: BootHealth, ok: int | None = None) -> KernelRecord:
    ok = len(boots) if ok is None else ok
    return KernelRecord(ok=ok, failed=0, last="ok", boot_id=boots[-1].boot_id if boots else "", boots=boots)


def recommendation(history: dict[str, KernelRecord], codes: frozenset[str] = frozenset(), *, policy: str = "notify",
                   unstable: str = "report", health: tuple[BootHealth, ...] = ()) -> Recommendation:  # fmt: skip
    facts = replace(facts_for(KERNELS, loader(), RUNNING, History(history), "boot9"), health=HealthFiles(health))
    return recommend(facts, set(codes), policy, unstable, 3)


# --- record_check keeps the boots with compute; fold_health lays the health into them ---------


def test_a_boot_with_compute_joins_the_record_once_and_leaves_it_when_compute_goes() -> None:
    facts = facts_for(KERNELS, loader(), RUNNING, History(), "b1")
    history = record_check(History(), facts, True, "2026-12-01T10:00:00Z")
    assert history.kernels[RUNNING].boots == (BootHealth("b1", RUNNING),)
    again = record_check(history, facts, True, "2026-12-01T10:05:00Z")
    assert again.kernels[RUNNING].boots == (BootHealth("b1", RUNNING),) and again.kernels[RUNNING].ok == 1
    down = record_check(again, facts, False, "2026-12-01T10:06:00Z")
    assert down.kernels[RUNNING].boots == () and (down.kernels[RUNNING].ok, down.kernels[RUNNING].failed) == (0, 1)


def test_the_record_keeps_only_the_newest_boots() -> None:
    history = History()
    for n in range(HEALTH_BOOTS + 3):
        history = record_check(history, facts_for(KERNELS, loader(), RUNNING, history, f"b{n}"), True, "t")
    ids = [b.boot_id for b in history.kernels[RUNNING].boots]
    assert ids == [f"b{n}" for n in range(3, HEALTH_BOOTS + 3)]
    assert history.kernels[RUNNING].ok == HEALTH_BOOTS + 3  # the counts are not bounded by the window


def test_the_previous_boots_health_is_folded_at_the_next_boots_pass() -> None:
    first = facts_for(KERNELS, loader(), RUNNING, History(), "b1")
    history = record_check(History(), first, True, "t1")
    # During b1 the GPU reset 4 times; the resident wrote it; the enforce pass of b2 reads it.
    second = replace(facts_for(KERNELS, loader(), RUNNING, history, "b2"),
                     health=HealthFiles((boot("b1", resets=4),)))  # fmt: skip
    history = record_check(history, second, True, "t2")
    boots = history.kernels[RUNNING].boots
    assert [(b.boot_id, b.resets) for b in boots] == [("b1", 4), ("b2", 0)]
    assert boots[0].last_line == "GPU reset begin!" and boots[0].last_process == "llama-server (pid 777)"


def test_folding_is_idempotent_and_keeps_the_larger_counts() -> None:
    history = History({RUNNING: record(boot("b1"))})
    once = fold_health(history, (boot("b1", resets=5, timeouts=2),))
    # The same record again, and a restarted service's smaller count of the same boot: nothing lost.
    twice = fold_health(once, (boot("b1", resets=5, timeouts=2), boot("b1", resets=1)))
    assert once == twice and (
        twice.kernels[RUNNING].boots[0].resets,
        twice.kernels[RUNNING].boots[0].ring_timeouts,
    ) == (5, 2)


def test_health_of_a_boot_or_kernel_the_history_does_not_hold_is_not_invented() -> None:
    history = History({RUNNING: record(boot("b1"))})
    # b7: compute never came up on it as far as the history knows; 9.9: no record at all.
    assert fold_health(history, (boot("b7", resets=9), boot("b1", "9.9.0", resets=9))) == history


# --- rank and why -----------------------------------------------------------------------------


def test_a_kernel_that_came_up_and_stayed_healthy_ranks_above_one_that_came_up_and_reset() -> None:
    history = {
        # More boots with compute, but unstable on one of them.
        NEWER: record(*(boot(f"n{i}", NEWER) for i in range(5)), boot("n5", NEWER, resets=4), ok=9),
        OLDER: record(boot("o1", OLDER), boot("o2", OLDER)),
    }
    rec = recommendation(history, frozenset({"kfd-not-built"}))
    assert rec.kernel == OLDER
    assert rec.reason == (
        "it ran compute on 2 of its 2 boots kfdguard saw, the last one included (last known good), "
        "and the GPU stayed healthy (no reset or hang) through its last 2 boots with compute"
    )
    newer = next(c for c in rec.choices if c.release == NEWER)
    assert (newer.healthy, newer.troubled, newer.unstable) == (5, 1, 1)
    assert newer.trouble == (
        "4 GPU resets in the boot of 2026-11-30, the last at 21:04 UTC: amdgpu reset the GPU (running GPU "
        "programs lost their work)"
    )
    # The boot's record has the kernel's line and the process; the text, which reaches the bus, has neither.
    assert "llama-server" not in rec.reason + newer.trouble and "pid" not in newer.trouble


def test_trouble_below_the_threshold_lowers_the_rank_and_is_said() -> None:
    history = {
        NEWER: record(boot("n1", NEWER), boot("n2", NEWER, resets=1), boot("n3", NEWER, resets=1)),
        OLDER: record(boot("o1", OLDER), boot("o2", OLDER)),
    }
    rec = recommendation(history, frozenset({"kfd-not-built"}))
    # 3 boots with compute, 2 of them with a reset: net 1 healthy boot, against the older kernel's 2.
    assert rec.kernel == OLDER
    alone = recommendation({NEWER: history[NEWER]}, frozenset({"kfd-not-built"}))
    assert alone.kernel == NEWER and alone.reason.endswith(
        "; the GPU stayed healthy through 1 of its last 3 boots with compute (the latest trouble: 1 GPU reset in "
        "the boot of 2026-11-30, the last at 21:04 UTC: amdgpu reset the GPU (running GPU programs lost their "
        "work))"
    )


def test_an_unstable_kernel_is_still_better_than_nothing_and_the_reason_says_it_is_unstable() -> None:
    rec = recommendation({NEWER: record(boot("n1", NEWER, failures=1))}, frozenset({"kfd-not-built"}))
    assert rec.kernel == NEWER
    assert ", but it is unstable too: the GPU reset repeatedly on 1 of its last 1 boots with compute" in rec.reason
    assert "1 failed reset" in rec.reason


def test_a_history_without_health_ranks_and_reads_as_before() -> None:
    plain = {NEWER: KernelRecord(ok=1, failed=3, last="ok"), OLDER: KernelRecord(ok=6, failed=0, last="ok")}
    rec = recommendation(plain, frozenset({"kfd-not-built"}))
    assert (rec.kernel, rec.reason) == (
        OLDER,
        "it ran compute on 6 of its 6 boots kfdguard saw, the last one included (last known good)",
    )


# --- the running kernel unstable: a recommendation, acted on only when the policy says so ------


UNSTABLE_RUNNING = {
    RUNNING: record(boot("b8", resets=3), boot("b9")),
    OLDER: record(boot("o1", OLDER), boot("o2", OLDER)),
    NEWER: record(boot("n1", NEWER, resets=5)),  # unstable too: never the way out of instability
}


def test_an_unstable_running_kernel_is_reported_with_a_stable_kernel_and_why() -> None:
    rec = recommendation(UNSTABLE_RUNNING, policy="oneshot")
    assert (rec.needed, rec.unstable, rec.kernel, rec.act_on_unstable) == (False, True, OLDER, False)
    assert rec.reason.endswith(
        f"; the running {RUNNING} runs compute but is unstable: the GPU reset repeatedly on 1 of its last 2 boots "
        "with compute (latest: 3 GPU resets in the boot of 2026-11-30, the last at 21:04 UTC: amdgpu reset the GPU "
        "(running GPU programs lost their work)) "
        "(fallback.unstable: report, so kfdguard only recommends)"
    )
    mode, why = auto_action(rec, History(UNSTABLE_RUNNING), "boot9")
    assert mode is None and why == rec.reason


@pytest.mark.parametrize("policy", ["oneshot", "pin"])
def test_fallback_unstable_act_lets_oneshot_and_pin_act_once_per_boot(policy: str) -> None:
    rec = recommendation(UNSTABLE_RUNNING, policy=policy, unstable="act")
    assert rec.act_on_unstable and rec.kernel == OLDER
    mode, why = auto_action(rec, History(UNSTABLE_RUNNING), "boot9")
    assert mode == policy and why.startswith(f"boot {OLDER}: it ran compute")


@pytest.mark.parametrize("policy", ["off", "notify", "assess"])
def test_fallback_unstable_act_never_touches_the_boot_loader_without_a_policy_that_does(policy: str) -> None:
    rec = recommendation(UNSTABLE_RUNNING, policy=policy, unstable="act")
    assert auto_action(rec, History(UNSTABLE_RUNNING), "boot9")[0] is None


def test_health_not_yet_in_the_history_already_counts_for_the_recommendation() -> None:
    history = {RUNNING: record(boot("b9")), OLDER: record(boot("o1", OLDER))}
    assert not recommendation(history).unstable
    rec = recommendation(history, health=(boot("b9", resets=3),))
    assert rec.unstable and rec.kernel == OLDER


def test_an_unstable_running_kernel_with_no_stable_alternative_says_so() -> None:
    rec = recommendation({RUNNING: record(boot("b9", resets=7))})
    assert rec.unstable and rec.kernel is None
    assert rec.reason.endswith("no other installed, bootable kernel ran compute here without being unstable")


def test_the_assessment_warns_of_an_unstable_running_kernel_without_changing_the_state(
    machine_facts: dict[str, Facts],
) -> None:
    from kfdguard.assess import assess
    from kfdguard.config import Config, FallbackConfig

    ready = machine_facts["rx7900xtx-ubuntu2404"]
    facts = replace(ready, kernel=replace(ready.kernel, release=RUNNING, boot_id="boot9"), kernels=tuple(KERNELS),
                    bootloader=loader(), history=History(UNSTABLE_RUNNING))  # fmt: skip
    verdict = assess(facts, Config(fallback=FallbackConfig(policy="notify")))
    assert verdict.state == "ready"
    found = [f for f in verdict.findings if f.code == "kernel-unstable"]
    assert len(found) == 1 and str(found[0].severity) == "warning"
    assert found[0].message == (
        f"kernel {RUNNING} runs compute, but the GPU reset repeatedly on 1 of its last 2 boots with compute (latest: "
        "3 GPU resets in the boot of 2026-11-30, the last at 21:04 UTC: amdgpu reset the GPU (running GPU programs "
        f"lost their work)); installed kernel {OLDER} ran compute "
        "here without being unstable: it ran compute on 2 of its 2 boots kfdguard saw, the last one included (last "
        "known good), and the GPU stayed healthy (no reset or hang) through its last 2 boots with compute"
    )
    assert (
        found[0].remedy
        == f"sudo bootctl set-oneshot debian-{OLDER}.conf && sudo reboot, or: sudo kfdguard fallback apply"
    )
    acting = assess(facts, Config(fallback=FallbackConfig(policy="oneshot", unstable="act")))
    assert [f.remedy for f in acting.findings if f.code == "kernel-unstable"] == [
        f"nothing to do: fallback.unstable is act, so kfdguard arranges {OLDER} by itself"
    ]
    off = assess(facts, Config(fallback=FallbackConfig(policy="off")))
    assert "kernel-unstable" not in off.codes() and off.state == "ready"


# --- the history file: additive, bounded, hostile input a clear problem -------------------------


def test_the_history_file_keeps_the_boots_and_reads_files_from_before_them() -> None:
    history = History({RUNNING: record(boot("b1", resets=2), boot("b2"))})
    data = json.loads(history_json(history))
    assert data["version"] == 1 and "release" not in data["kernels"][RUNNING]["boots"][0]
    assert history_from_json(data) == history
    del data["kernels"][RUNNING]["boots"]
    assert history_from_json(data).kernels[RUNNING].boots == ()


@pytest.mark.parametrize(
    ("boots", "problem"),
    [
        ("many", "boots is not a list"),
        ([{"boot_id": "b1", "resets": -1}], "'resets' is not a count"),
        ([{"boot_id": "b1", "resets": True}], "'resets' is not a count"),
        ([{"boot_id": "../x"}], "'boot_id' is not a boot id"),
        ([{"boot_id": "b1", "last_line": "x" * 513}], "'last_line' is not a UTF-8 string of at most 512"),
        ([{"boot_id": "b1", "last_line": "\ud800"}], "'last_line' is not a UTF-8 string"),
        ([{"boot_id": "b1", "last_event": "meltdown"}], "'last_event' is not one of"),
        (["b1"], "not a JSON object"),
    ],
)
def test_a_hostile_history_is_a_clear_problem(tmp_path: Path, boots: object, problem: str) -> None:
    root = Root(tmp_path)
    (root.var_lib / "kfdguard").mkdir(parents=True)
    body = {"version": 1, "kernels": {RUNNING: {"ok": 1, "last": "ok", "boots": boots}}}
    (root.var_lib / "kfdguard/history.json").write_text(json.dumps(body))
    history = probe_history(Reader(root))
    assert history.kernels == {} and history.problem is not None
    assert problem in history.problem and "starting a new history" in history.problem


def test_an_overlong_boots_list_keeps_its_newest() -> None:
    entries = [{"boot_id": f"b{n}"} for n in range(100)]
    data = {"version": 1, "kernels": {RUNNING: {"ok": 100, "last": "ok", "boots": entries}}}
    assert [b.boot_id for b in history_from_json(data).kernels[RUNNING].boots] == [f"b{n}" for n in range(92, 100)]


# --- the resident's records: written, pruned, read as hostile ----------------------------------


def _health_after(lines: list[str]) -> Health:
    health = Health()
    health.know(("0000:03:00.0",))
    for n, line in enumerate(lines):
        event = from_log(line)
        assert event is not None, line
        health.feed(event, 1_764_536_645_000_000 + n)
    return health


def test_the_resident_sums_its_gpus_and_writes_a_record_the_probe_reads(tmp_path: Path) -> None:
    health = _health_after([RESET, "amdgpu 0000:03:00.0: amdgpu: GPU reset(2) succeeded!", RESET])
    boot_health = store.summary(health, "b1", RUNNING)
    assert (boot_health.resets, boot_health.last_event, boot_health.last_at) == (
        2,
        "reset-begin",
        "2025-11-30T21:04:05Z",
    )
    root = Root(tmp_path)
    path = store.write(root, boot_health)
    assert path.name == "boot-b1.json" and oct(path.stat().st_mode & 0o777) == "0o644"
    assert probe_health(Reader(root)) == HealthFiles((boot_health,))


def test_the_writer_keeps_this_boot_and_the_three_newest_others(tmp_path: Path) -> None:
    root = Root(tmp_path)
    for n in range(6):
        path = store.write(root, BootHealth(f"b{n}", RUNNING, resets=1))
        os.utime(path, ns=(n * 10**9, n * 10**9))
    store.write(root, BootHealth("b0", RUNNING, resets=2))  # the current boot is older than others on disk
    names = sorted(p.name for p in (root.var_lib / store.DIRECTORY).iterdir())
    assert names == ["boot-b0.json", "boot-b3.json", "boot-b4.json", "boot-b5.json"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{", "not JSON"),
        (b'{"version": 2, "boot_id": "b1", "release": "6.11"}', "not a version 1 health record"),
        (b'{"version": 1, "boot_id": "b1", "release": ""}', "'release' is empty"),
        (b'{"version": 1, "boot_id": "b2", "release": "6.11"}', "names boot b2, not the boot of its file name"),
        (b'{"version": 1, "boot_id": "b1", "release": "6.11", "hangs": 4294967296}', "'hangs' is not a count"),
        (b" " * (store.FILE_LIMIT + 1), "larger than 8192 bytes"),
        (b"\xff", "not JSON"),
    ],
)
def test_a_hostile_health_record_is_a_problem_and_ignored(tmp_path: Path, content: bytes, problem: str) -> None:
    root = Root(tmp_path)
    directory = root.var_lib / store.DIRECTORY
    directory.mkdir(parents=True)
    (directory / "boot-b1.json").write_bytes(content)
    found = probe_health(Reader(root))
    assert found.boots == () and len(found.problems) == 1 and problem in found.problems[0]


def test_a_health_record_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    root = Root(tmp_path)
    directory = root.var_lib / store.DIRECTORY
    directory.mkdir(parents=True)
    elsewhere = tmp_path / "roots-own.json"
    elsewhere.write_text(json.dumps({"version": 1, "boot_id": "b1", "release": RUNNING, "resets": 9}))
    (directory / "boot-b1.json").symlink_to(elsewhere)
    (directory / "notes.txt").write_text("not a record: skipped without a word")
    found = probe_health(Reader(root))
    assert found.boots == () and len(found.problems) == 1 and "unreadable" in found.problems[0]


def test_more_records_than_the_writer_keeps_are_read_up_to_a_bound(tmp_path: Path) -> None:
    root = Root(tmp_path)
    directory = root.var_lib / store.DIRECTORY
    directory.mkdir(parents=True)
    # More than the writer ever leaves (it prunes to KEEP): a hostile writer's, each one valid.
    for n in range(store.READ_LIMIT + 4):
        body = {"version": 1, "boot_id": f"x{n:02}", "release": RUNNING, "resets": 1}
        (directory / f"boot-x{n:02}.json").write_text(json.dumps(body))
    found = probe_health(Reader(root))
    assert len(found.boots) == store.READ_LIMIT
    assert found.problems == (
        f"{root.display(directory)}: more than {store.READ_LIMIT} entries; only {store.READ_LIMIT} looked at",
    )


class _CountingScandir:
    """os.scandir's iterator, counting the entries it hands out (issue 35.8's proof: calls, not time)."""

    def __init__(self, inner: object, counted: list[int]) -> None:
        self.inner = inner
        self.counted = counted

    def __enter__(self) -> _CountingScandir:
        return self

    def __exit__(self, *_: object) -> None:
        self.inner.close()  # type: ignore[attr-defined]

    def __iter__(self) -> _CountingScandir:
        return self

    def __next__(self) -> os.DirEntry[str]:
        entry = next(self.inner)  # type: ignore[call-overload]
        self.counted[0] += 1
        return cast("os.DirEntry[str]", entry)


def test_a_directory_of_ten_thousand_entries_is_not_listed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The resident service (not root) owns the directory; the root pass lists no more of it than it reads.
    root = Root(tmp_path)
    directory = root.var_lib / store.DIRECTORY
    directory.mkdir(parents=True)
    for n in range(10_000):
        (directory / f"boot-b{n:05}.json").write_bytes(b"{}")
    counted = [0]
    real_scandir, real_listdir = os.scandir, os.listdir

    def scandir(path: object = ".") -> _CountingScandir:
        return _CountingScandir(real_scandir(path), counted)  # type: ignore[call-overload]

    def listdir(path: object = ".") -> list[str]:
        names = real_listdir(path)  # type: ignore[call-overload]
        counted[0] += len(names)
        return cast("list[str]", names)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    found = probe_health(Reader(root))
    monkeypatch.undo()
    assert counted[0] == store.READ_LIMIT + 1, "names listed"
    assert found.boots == ()
    assert len(found.problems) == store.READ_LIMIT + 1  # each record read is not one, and the excess
    assert found.problems[-1] == (
        f"{root.display(directory)}: more than {store.READ_LIMIT} entries; only {store.READ_LIMIT} looked at"
    )


# --- configuration --------------------------------------------------------------------------------


def test_the_configuration_rows(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("fallback:\n  policy: oneshot\n  unstable: act\n  unstable_resets: 5\n")
    loaded = load_config(path, "config.yaml")
    assert loaded.ok and (loaded.config.fallback.unstable, loaded.config.fallback.unstable_resets) == ("act", 5)
    assert load_config(tmp_path / "absent.yaml", "absent.yaml").config.fallback.unstable == "report"
    path.write_text("fallback:\n  unstable: always\n  unstable_resets: 0\n")
    assert [str(e) for e in load_config(path, "config.yaml").errors] == [
        "config.yaml:2:13: fallback.unstable: 'always' is not valid; expected one of: report, act",
        "config.yaml:3:20: fallback.unstable_resets: 0 is out of range (1..1000: a boot without a reset is not "
        "unstable)",
    ]


# --- the resident's writes: rate-limited, and never behind the re-check that reads them ----------


class _Handle:
    def __init__(self, delay: float, fn: Callable[..., None], args: tuple[object, ...]) -> None:
        self.delay = delay
        self.fn: Callable[..., None] | None = fn
        self.args = args

    def cancel(self) -> None:
        self.fn = None


class _Loop:
    def __init__(self) -> None:
        self.timers: list[_Handle] = []

    def call_later(self, delay: float, fn: Callable[..., None], *args: object) -> _Handle:
        self.timers.append(_Handle(delay, fn, args))
        return self.timers[-1]

    def due(self) -> list[_Handle]:
        return [t for t in self.timers if t.fn is not None]

    def run(self) -> None:
        """Let the time pass: every timer fires, the soonest first (one cancelled meanwhile does not)."""
        for timer in sorted(self.due(), key=lambda t: t.delay):
            fn, timer.fn = timer.fn, None
            if fn is not None:
                fn(*timer.args)


class _Service:
    def __init__(self) -> None:
        self.health = Health()
        self.health.know(("0000:03:00.0",))
        self.writes: list[int] = []  # the ring timeouts counted at each write

    def republish(self, _reason: str) -> None:
        pass

    def keep_health(self) -> None:
        self.writes.append(self.health.gpus["0000:03:00.0"].ring_timeouts)


class _Checks:
    def __init__(self) -> None:
        self.requests: list[str] = []

    def request(self, _trigger: object, reason: str) -> None:
        self.requests.append(reason)


def test_a_storm_of_events_is_one_write_and_a_recovery_writes_before_its_recheck() -> None:
    from kfdguard.service.health import AFTER_PUBLISH, KEEP_INTERVAL, HealthFeed

    service, checks, loop = _Service(), _Checks(), _Loop()
    feed = HealthFeed(cast("Service", service), cast("Checks", checks), cast("asyncio.AbstractEventLoop", loop))
    timeout = "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=7, emitted seq=9"
    for _ in range(50):
        feed.log_line(timeout)
    # Nothing is written in the round that publishes; one write is due, a round later, for all 50.
    assert service.writes == [] and [t.delay for t in loop.due()] == [AFTER_PUBLISH]
    loop.run()
    assert service.writes == [50]
    feed.log_line(timeout)
    (due,) = loop.due()
    assert KEEP_INTERVAL - 0.5 < due.delay <= KEEP_INTERVAL  # within the interval: at its end
    feed.log_line("amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, but soft recovered")
    assert checks.requests == []  # not in the publishing round either
    loop.run()
    # Back: the record is written (the due one with it, once) before the re-check that reads it is asked for.
    assert service.writes == [50, 52] and len(checks.requests) == 1 and "recovered" in checks.requests[0]
    feed.flush()  # stopping with nothing due: no write
    assert service.writes == [50, 52]
    feed.log_line(timeout)
    feed.flush()  # stopping: what is due is written
    assert service.writes == [50, 52, 53] and loop.due() == []


def test_the_resident_unit_lets_it_write_where_the_store_writes() -> None:
    # The sandbox (ProtectSystem=strict) makes /var/lib read-only but for the unit's StateDirectory=;
    # the directory must be the one store.write uses, and the root oneshot's must hold it (it reads it).
    units = TOP / "units"
    resident = (units / "kfdguard.service").read_text().splitlines()
    enforce = (units / "kfdguard-enforce.service").read_text().splitlines()
    assert f"StateDirectory={store.DIRECTORY}" in resident and "User=kfdguard" in resident
    assert f"StateDirectory={store.DIRECTORY.split('/')[0]}" in enforce
