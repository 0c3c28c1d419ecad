"""The configuration file: defaults, exact errors, and never a half-applied file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.config import Config, load_config, parse_config
from tests.fuzzing import examples
from tests.paths import TOP

EXAMPLE = TOP / "conf" / "config.yaml"


def errors(text: str) -> list[str]:
    _, errs = parse_config(text, "config.yaml")
    return [str(e) for e in errs]


def test_empty_file_gives_distribution_defaults() -> None:
    config, errs = parse_config("", "config.yaml")
    assert errs == []
    assert config == Config()
    assert (config.device.group, config.device.mode, config.fallback.policy) == ("render", 0o660, "notify")


def test_shipped_example_is_valid_and_documents_every_key() -> None:
    text = EXAMPLE.read_text()
    config, errs = parse_config(text, str(EXAMPLE))
    assert errs == []
    assert config == Config()  # the example spells out the defaults
    for key in ("module:", "options:", "reload:", "repair:", "device:", "group:", "mode:", "udev_rule:", "users:",
                "add_to_group:", "fallback:", "policy:", "timeouts:", "modprobe:", "log:", "sources:"):  # fmt: skip
        assert key in text, key


def test_values() -> None:
    config, errs = parse_config(
        "module:\n  options:\n    sched_policy: 1\n    cwsr_enable: false\n  repair: true\n"
        "device:\n  mode: 0640\n  group: video\nfallback:\n  policy: oneshot\n"
        "timeouts:\n  modprobe: 7.5\nlog:\n  sources: [kmsg, /var/log/kern.log]\n",
        "config.yaml",
    )
    assert errs == []
    assert config.module.options == (("sched_policy", "1"), ("cwsr_enable", "0"))
    assert config.module.repair
    assert (config.device.mode, config.device.group) == (0o640, "video")
    assert config.fallback.policy == "oneshot"
    assert config.timeouts.modprobe == 7.5
    assert config.log.sources == ("kmsg", "/var/log/kern.log")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("devce:\n  mode: 0660\n", "config.yaml:1:1: devce: unknown key at the top level; did you mean 'device'?"),
        ("device:\n  mode: 0x1\n", "config.yaml:2:9: device.mode: '0x1' is not an octal mode (0..0777)"),
        ("device:\n  mode: 0066\n", "config.yaml:2:9: device.mode: 0066 would deny the owner (root) read-write access"),
        ("device:\n  mode: 0660\n  mode: 0640\n", "config.yaml:3:3: device.mode: duplicate key"),
        ("device:\n  groupp: render\n", "config.yaml:2:3: device.groupp: unknown key in 'device'; did you mean 'group'?"),
        ("device:\n  group: 'ren der'\n", "config.yaml:2:10: device.group: 'ren der' is not a group name"),
        ("fallback:\n  policy: oneshott\n", "config.yaml:2:11: fallback.policy: 'oneshott' is not valid; did you mean 'oneshot'?"),
        ("timeouts: {modprobe: 9000}\n", "config.yaml:1:22: timeouts.modprobe: 9000 is out of range (0.1..600 seconds)"),
        ("module:\n  options:\n    sched_policy: '1; rm -rf /'\n", "config.yaml:3:19: module.options.sched_policy: '1; rm -rf /' is not a usable parameter value"),
        ("module:\n  load: maybe\n", "config.yaml:2:9: module.load: 'maybe' is not true or false"),
        ("log:\n  sources: [syslog]\n", "config.yaml:2:13: log.sources: 'syslog' is not journal, kmsg or an absolute path"),
        ("version: 2\n", "config.yaml:1:10: version: 2 is out of range (max 1)"),
        ("device: [1, 2]\n", "config.yaml:1:9: device: expected a mapping of group, mode, udev_rule"),
        ("device:\n  mode: [1]\n", "config.yaml:2:9: device.mode: expected a single value, not a list or mapping"),
        (": : :\n", "config.yaml:1:1: not valid YAML: did not find expected key"),
        ("- a\n- b\n", "config.yaml:1:1: expected a mapping of version, module, device, users, fallback, timeouts, log, compute, software, fleet, memory"),
    ],
)  # fmt: skip
def test_errors_carry_line_column_and_key(text: str, expected: str) -> None:
    assert errors(text) == [expected]


def test_all_errors_reported_and_defaults_returned() -> None:
    config, errs = parse_config("device:\n  mode: 9\n  group: ''\nfallback:\n  policy: pin\n", "c.yaml")
    assert len(errs) == 2
    assert config == Config()  # nothing from a broken file is applied, not even the valid policy


@pytest.mark.fuzz
@settings(max_examples=examples(400))
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    config, errs = parse_config(text, "c.yaml")
    assert isinstance(config, Config)
    for e in errs:
        assert str(e).startswith("c.yaml")
    if errs:
        assert config == Config()


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
sections = st.dictionaries(
    st.sampled_from(["module", "device", "users", "fallback", "timeouts", "log", "version", "other"]),
    st.one_of(
        yaml_values,
        st.dictionaries(
            st.sampled_from(
                [
                    "options",
                    "load",
                    "repair",
                    "group",
                    "mode",
                    "policy",
                    "modprobe",
                    "sources",
                    "min_uid",
                    "add_to_group",
                ]
            ),
            yaml_values,
            max_size=4,
        ),
    ),
    max_size=5,
)


@pytest.mark.fuzz
@settings(max_examples=examples(400))
@given(sections)
def test_structured_garbage_never_raises(data: dict[str, object]) -> None:
    import yaml

    text = yaml.safe_dump(data)
    config, errs = parse_config(text, "c.yaml")
    assert isinstance(config, Config)
    assert all(e.line >= 1 for e in errs if "YAML" not in e.message)


def test_load_missing_file_is_defaults(tmp_path: Path) -> None:
    loaded = load_config(tmp_path / "absent.yaml", "/etc/kfdguard/config.yaml")
    assert loaded.ok and loaded.source == "defaults" and loaded.config == Config()


def test_load_bad_file_uses_last_good_from_cache(tmp_path: Path) -> None:
    path, cache = tmp_path / "config.yaml", tmp_path / "state" / "config.cache"
    path.write_text("fallback:\n  policy: pin\n")
    first = load_config(path, "config.yaml", cache)
    assert first.ok and first.config.fallback.policy == "pin" and cache.is_file()
    path.write_text("fallback:\n  policy: [oops\n")
    second = load_config(path, "config.yaml", cache)
    assert not second.ok and second.source == "last-good"
    assert second.config.fallback.policy == "pin"
    assert "not valid YAML" in str(second.errors[0])


def test_the_last_good_cache_is_readable_by_the_unprivileged_service(tmp_path: Path) -> None:
    # Root's oneshot writes it, the resident service (user kfdguard) falls back to it too (issue 21).
    import stat

    path, cache = tmp_path / "config.yaml", tmp_path / "state" / "config.cache"
    path.write_text("fallback:\n  policy: pin\n")
    load_config(path, "config.yaml", cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o644


def test_unchanged_file_is_served_from_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kfdguard.config as mod

    path, cache = tmp_path / "config.yaml", tmp_path / "config.cache"
    path.write_text("device:\n  group: video\n")
    load_config(path, "config.yaml", cache)

    def parse_again(text: str, file: str) -> object:
        pytest.fail("parsed again although unchanged")

    # Prove the cache is used: the parser must not run for the unchanged file.
    monkeypatch.setattr(mod, "parse_config", parse_again)
    assert load_config(path, "config.yaml", cache).config.device.group == "video"


def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    path, cache = tmp_path / "config.yaml", tmp_path / "config.cache"
    cache.write_bytes(b"\x00garbage")
    path.write_text("device:\n  group: video\n")
    assert load_config(path, "config.yaml", cache).config.device.group == "video"


@pytest.mark.parametrize("kind", ["fifo", "dir", "huge", "binary"])
def test_hostile_files_get_a_clear_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "config.yaml"
    if kind == "fifo":
        os.mkfifo(path)  # must not block the boot
    elif kind == "dir":
        path.mkdir()
    elif kind == "huge":
        path.write_text("#" * (300 * 1024))
    else:
        path.write_bytes(b"device:\n  group: \xff\xfe\n")
    loaded = load_config(path, "/etc/kfdguard/config.yaml")
    assert not loaded.ok and loaded.config == Config()
    message = str(loaded.errors[0])
    assert message.startswith("/etc/kfdguard/config.yaml: ")
    assert {"fifo": "not a regular file", "dir": "not a regular file", "huge": "larger than",
            "binary": "not UTF-8"}[kind] in message  # fmt: skip


def test_a_cache_write_that_fails_keeps_the_previous_last_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    path, cache = tmp_path / "config.yaml", tmp_path / "state" / "config.cache"
    path.write_text("fallback:\n  policy: pin\n")
    assert load_config(path, "config.yaml", cache).ok
    kept = cache.read_bytes()

    def disk_full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    path.write_text("fallback:\n  policy: oneshot\n")
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", disk_full)  # the temporary file is written, then the disk is full
        assert load_config(path, "config.yaml", cache).config.fallback.policy == "oneshot"
    assert cache.read_bytes() == kept and sorted(os.listdir(cache.parent)) == ["config.cache"]
    path.write_text("fallback: [broken\n")
    assert load_config(path, "config.yaml", cache).config.fallback.policy == "pin"  # the last good that was kept
