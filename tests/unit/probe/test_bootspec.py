"""The Boot Loader Specification as systemd reads it: counted entries, ids, order, the default."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.config import Config, FallbackConfig
from kfdguard.fallback.apply import after_check, arrange
from kfdguard.probe import bootspec, probe
from kfdguard.probe.boot import history_from_json
from kfdguard.simulate import bundled
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str | MachineSpec], SimulatedSystem]


def systemd_boot(fresh_machine: Make) -> SimulatedSystem:
    return fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))


def count_boots(system: SimulatedSystem, tries: int) -> None:
    """Turn boot counting on for every entry, as kernel-install does with /etc/kernel/tries."""
    entries = system.root.efi / "loader/entries"
    for conf in sorted(entries.glob("*.conf")):
        conf.rename(entries / f"{conf.stem}+{tries}.conf")


def sd_boot_counts(system: SimulatedSystem, entry_id: str) -> Path:
    """What systemd-boot does to the entry it boots: one try less, one more done (boot.c)."""
    entries = system.root.efi / "loader/entries"
    stem = entry_id[: -len(".conf")]
    (old,) = [p for p in entries.iterdir() if p.name.startswith(stem + "+")]
    counted = bootspec.split_tries(old.name)
    assert counted.tries_left is not None and counted.tries_left > 0
    new = entries / f"{stem}+{counted.tries_left - 1}-{(counted.tries_done or 0) + 1}.conf"
    old.rename(new)
    return new


def test_a_counted_entry_gets_a_oneshot_by_its_stable_id_and_one_history(fresh_machine: Make) -> None:
    """Regression (issue 18): the id was the file name, counters included, which the next boot renames."""
    system = systemd_boot(fresh_machine)
    count_boots(system, 3)
    facts = probe(system)
    entry = facts.bootloader.entry_for("6.8.0-50-generic")
    assert entry is not None
    assert (entry.id, entry.tries_left, entry.tries_done) == ("ubuntu-6.8.0-50-generic.conf", 3, None)
    assert entry.path == "/efi/loader/entries/ubuntu-6.8.0-50-generic+3.conf"
    config = Config(fallback=FallbackConfig("oneshot"))
    verdict = assess(facts, config)
    assert verdict.fallback is not None
    assert verdict.fallback.command == "sudo bootctl set-oneshot ubuntu-6.8.0-50-generic.conf && sudo reboot"
    _history, outcome, _why = after_check(system, facts, verdict.ready, verdict.fallback)
    assert outcome is not None and outcome.ok
    assert outcome.commands == ("bootctl set-oneshot ubuntu-6.8.0-50-generic.conf",)
    assert probe(system).bootloader.next_entry == "ubuntu-6.8.0-50-generic.conf"

    # The boot loader picks the one-shot (it names an existing id), counts the try, and boots it.
    renamed = sd_boot_counts(system, "ubuntu-6.8.0-50-generic.conf")
    assert renamed.name == "ubuntu-6.8.0-50-generic+2-1.conf"
    system.reboot()
    after = probe(system)
    assert after.kernel.release == "6.8.0-50-generic"
    moved = after.bootloader.entry_for("6.8.0-50-generic")
    assert moved is not None and (moved.id, moved.tries_left, moved.tries_done) == (entry.id, 2, 1)
    verdict = assess(after, config)
    assert verdict.fallback is not None
    after_check(system, after, verdict.ready, verdict.fallback)
    saved = json.loads((system.root.var_lib / "kfdguard/history.json").read_text())
    assert [(a["entry"], a["result"]) for a in saved["attempts"]] == [("ubuntu-6.8.0-50-generic.conf", "ok")]
    # One record per kernel, the boot on the fallback counted once.
    assert set(saved["kernels"]) == {"6.8.0-50-generic", "6.8.0-51-generic"}
    assert saved["kernels"]["6.8.0-50-generic"]["ok"] == facts.history.kernels["6.8.0-50-generic"].ok + 1


def test_pin_names_the_id_without_counters(fresh_machine: Make) -> None:
    system = systemd_boot(fresh_machine)
    count_boots(system, 5)
    facts = probe(system)
    rec = assess(facts).fallback
    assert rec is not None
    outcome, _ = arrange(system, facts, rec, "pin")
    assert outcome.ok and outcome.commands == ("bootctl set-default ubuntu-6.8.0-50-generic.conf",)


def test_old_histories_lose_the_counters_of_their_entry_ids() -> None:
    old = {
        "version": 1,
        "kernels": {"6.1.0-27-amd64": {"ok": 2, "failed": 0, "last": "ok"}},
        "attempts": [
            {"from": "6.12.0-1-amd64", "to": "6.1.0-27-amd64", "entry": "debian-6.1.0-27-amd64+2-1.conf"},
            {"from": "a", "to": "b", "entry": "arch+0-3.efi"},
            # GRUB menu ids are not file names: kept exactly, '+' and all.
            {"from": "a", "to": "b", "entry": "gnulinux-6.8.0+1.2-advanced-x>gnulinux-6.8.0+1.2-x"},
        ],
        "pinned_from": "debian-6.12.0-1-amd64+3.conf",
    }
    history = history_from_json(old)
    assert [a.entry for a in history.attempts] == [
        "debian-6.1.0-27-amd64.conf",
        "arch.efi",
        "gnulinux-6.8.0+1.2-advanced-x>gnulinux-6.8.0+1.2-x",
    ]
    assert history.pinned_from == "debian-6.12.0-1-amd64.conf"


# What systemd 252's bootctl (Debian 12) printed for these file names: id, triesLeft, triesDone;
# None as id = bootctl refused the file (out-of-range counter, invalid name).
BOOTCTL_252 = [
    ("foo+3-1.conf", "foo.conf", 3, 1),
    ("bar+2.conf", "bar.conf", 2, None),
    ("a+.conf", "a+.conf", None, None),
    ("b+x.conf", "b+x.conf", None, None),
    ("c+3-.conf", "c+3-.conf", None, None),
    ("d+3-x.conf", "d+3-x.conf", None, None),
    ("e+3+2.conf", "e+3.conf", 2, None),
    ("+3.conf", ".conf", 3, None),
    ("f+03.conf", "f.conf", 3, None),
    ("g+3-1-2.conf", "g+3-1-2.conf", None, None),
    ("h+3.CONF", "h.CONF", 3, None),
    ("k-1+2-3.conf", "k-1.conf", 2, 3),
    ("m+-1.conf", "m+-1.conf", None, None),
    ("arch+0-3.conf", "arch.conf", 0, 3),
    ("j+99999999999.conf", None, None, None),
    ("p+4294967294.conf", None, None, None),
    ("q+1-4294967294.conf", None, None, None),
    ("l+ 3.conf", None, None, None),
    ("x@y.conf", None, None, None),
]


@pytest.mark.parametrize(("name", "entry_id", "left", "done"), BOOTCTL_252)
def test_counters_are_split_as_bootctl_does(
    name: str, entry_id: str | None, left: int | None, done: int | None
) -> None:
    if entry_id is None:
        with pytest.raises(bootspec.BadEntryName):
            bootspec.split_tries(name)
        return
    assert bootspec.split_tries(name) == bootspec.Counted(entry_id, left, done)


def test_the_counter_limit_is_int_max() -> None:
    assert bootspec.split_tries("a+2147483647.conf").tries_left == 2147483647
    with pytest.raises(bootspec.BadEntryName, match="out of range"):
        bootspec.split_tries("a+2147483648.conf")


def test_version_order_is_systemds() -> None:
    # The order documented in systemd's strverscmp_improved(), oldest first.
    ordered = ["122.1", "123~rc1-1", "123", "123-a", "123-a.1", "123-1", "123-1.1", "123^post1", "123.a-1",
               "123.1-1", "123a-1", "124-1"]  # fmt: skip
    for i, older in enumerate(ordered):
        for newer in ordered[i + 1 :]:
            assert bootspec.verscmp(older, newer) == -1, (older, newer)
            assert bootspec.verscmp(newer, older) == 1, (newer, older)
        assert bootspec.verscmp(older, older) == 0
    assert bootspec.verscmp("6.1.0-10-amd64", "6.1.0-9-amd64") == 1
    assert bootspec.verscmp("00123", "123") == 0
    assert bootspec.verscmp("123_a", "123a") == 0


def test_default_globs_match_case_insensitively_in_menu_order(fresh_machine: Make) -> None:
    system = systemd_boot(fresh_machine)
    facts = probe(system)
    # Newest first, as the menu shows them.
    assert [e.id for e in facts.bootloader.entries] == ["ubuntu-6.8.0-51-generic.conf", "ubuntu-6.8.0-50-generic.conf"]
    assert facts.bootloader.default_release == "6.8.0-51-generic"
    conf = system.root.efi / "loader/loader.conf"
    conf.write_text("timeout 7\ndefault UBUNTU-6.8.0-5[0]*\n")
    loader = probe(system).bootloader
    assert (loader.default_release, loader.timeout) == ("6.8.0-50-generic", "7")
    # LoaderEntryDefault (bootctl set-default) wins over loader.conf.
    var = system.root.sys / "firmware/efi/efivars/LoaderEntryDefault-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
    var.write_bytes(b"\x07\x00\x00\x00" + "ubuntu-6.8.0-51-generic.conf\0".encode("utf-16-le"))
    loader = probe(system).bootloader
    assert (loader.efi_default, loader.default_release) == ("ubuntu-6.8.0-51-generic.conf", "6.8.0-51-generic")
    # A pattern that names nothing falls back to the first entry; so does the id without .conf (bootctl 252).
    var.unlink()
    conf.write_text("default ubuntu-6.8.0-50-generic\n")
    assert probe(system).bootloader.default_release == "6.8.0-51-generic"
    conf.write_text("default nothing-*\n")
    assert probe(system).bootloader.default_release == "6.8.0-51-generic"


def test_entries_out_of_tries_sort_last_and_are_not_the_default(fresh_machine: Make) -> None:
    system = systemd_boot(fresh_machine)
    entries = system.root.efi / "loader/entries"
    (entries / "ubuntu-6.8.0-51-generic.conf").rename(entries / "ubuntu-6.8.0-51-generic+0-3.conf")
    loader = probe(system).bootloader
    assert [(e.id, e.bad) for e in loader.entries] == [
        ("ubuntu-6.8.0-50-generic.conf", False),
        ("ubuntu-6.8.0-51-generic.conf", True),
    ]
    assert loader.default_release == "6.8.0-50-generic"


def test_fnmatch_is_c_fnmatch() -> None:
    match = bootspec.fnmatch_casefold
    assert match("debian-*", "DEBIAN-6.1.conf") and match("a?c.conf", "abc.conf")
    assert match("[!x]b.conf", "ab.conf") and match("[^x]b.conf", "ab.conf") and not match("[!a]b.conf", "ab.conf")
    assert match("a\\*", "a*") and not match("a\\*", "ab")
    assert match("[a", "[a")  # an unclosed bracket is literal
    assert match("[]]x", "]x")


def efivar(system: SimulatedSystem, name: str, value: str) -> None:
    var = system.root.sys / f"firmware/efi/efivars/{name}-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
    var.write_bytes(b"\x07\x00\x00\x00" + (value + "\0").encode("utf-16-le"))


def test_saved_default_and_the_oneshot_resolve_like_systemd_boot(fresh_machine: Make) -> None:
    system = systemd_boot(fresh_machine)
    count_boots(system, 3)
    (system.root.efi / "loader/loader.conf").write_text("default @saved\n")
    efivar(system, "LoaderEntryLastBooted", "ubuntu-6.8.0-50-generic.conf")
    loader = probe(system).bootloader
    assert loader.default_release == "6.8.0-50-generic"
    assert loader.oneshot_entry is None
    efivar(system, "LoaderEntryOneShot", "UBUNTU-6.8.0-51-*")
    oneshot = probe(system).bootloader.oneshot_entry
    assert oneshot is not None and oneshot.release == "6.8.0-51-generic"
    # A one-shot naming a counted file name (what kfdguard wrote before) names no entry at all.
    efivar(system, "LoaderEntryOneShot", "ubuntu-6.8.0-51-generic+3.conf")
    assert probe(system).bootloader.oneshot_entry is None
