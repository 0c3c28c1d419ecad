"""The simulator's own boot model (kfdguard/simulate/bootloader.py): GRUB's environment block against real
grub-editenv, the menu it resolves against what the simulator rendered, systemd-boot's choice of entry."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.probe.boot import parse_grubenv
from kfdguard.simulate import bundled
from kfdguard.simulate.bootloader import (
    EnvTooBig,
    efi_string,
    efi_value,
    grub_next,
    parse_env,
    render_env,
    resolve,
    sdboot_entry,
    sdboot_next,
)
from kfdguard.simulate.menu import grub_menu

EDITENV = shutil.which("grub-editenv")
editenv = pytest.mark.skipif(EDITENV is None, reason="grub-editenv (grub2-common) is not installed")
# Names as GRUB scripts use them (grub-editenv would take a leading "-" for an option).
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
VALUES = st.text(st.sampled_from(list("ab >=#\\\n\t-0_")), max_size=20)


def _editenv(path: Path, *args: str) -> str:
    assert EDITENV is not None
    return subprocess.run([EDITENV, str(path), *args], capture_output=True, text=True, timeout=30,
                          check=True).stdout  # fmt: skip


@editenv
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(NAMES, VALUES, max_size=5))
def test_what_grub_editenv_writes_the_model_reads_and_back(tmp_path: Path, values: dict[str, str]) -> None:
    path = tmp_path / "grubenv"
    path.unlink(missing_ok=True)
    _editenv(path, "create")
    if values:
        _editenv(path, "set", *(f"{k}={v}" for k, v in values.items()))
    assert parse_env(path.read_bytes()) == values
    # And the model's own block is one grub-editenv reads as the same values, byte for byte what it writes.
    assert render_env(values) == path.read_bytes()


@editenv
def test_kfdguards_probe_reads_grub_editenvs_escapes(tmp_path: Path) -> None:
    path = tmp_path / "grubenv"
    _editenv(path, "create")
    _editenv(path, "set", "next_entry=gnulinux-advanced-x>gnulinux-6.1-advanced-x", "odd=a\\b\nc")
    assert parse_grubenv(path.read_text()) == parse_env(path.read_bytes())


def test_a_block_that_does_not_fit_is_refused() -> None:
    with pytest.raises(EnvTooBig):
        render_env({"x": "y" * 2000})


def test_the_menu_resolves_as_grub_does() -> None:
    spec = bundled.load("dkms-missing-for-new-kernel")  # 6.8.0-51 (running, newest) and 6.8.0-50
    menu = grub_menu(spec)
    simple, advanced = menu[0].ident, menu[1].ident
    assert resolve(menu, "0") == resolve(menu, simple) == resolve(menu, menu[0].title) == "6.8.0-51-generic"
    older = next(e for e in menu[1].children if e.release == "6.8.0-50-generic")
    assert resolve(menu, f"{advanced}>{older.ident}") == "6.8.0-50-generic"
    assert resolve(menu, f"1>{menu[1].children.index(older)}") == "6.8.0-50-generic"
    assert resolve(menu, f"{menu[1].title}>{older.title}") == "6.8.0-50-generic"
    assert resolve(menu, "1") == menu[1].children[0].release  # a submenu as the default: its first entry
    assert resolve(menu, older.ident) is None  # not at the top level
    assert resolve(menu, "7") is None


def test_next_entry_is_used_once_and_saved_entry_follows_grub_default() -> None:
    menu = grub_menu(bundled.load("dkms-missing-for-new-kernel"))
    older = next(e for e in menu[1].children if e.release == "6.8.0-50-generic")
    path = f"{menu[1].ident}>{older.ident}"
    chosen, after = grub_next(menu, {"next_entry": path, "saved_entry": "0"}, "0")
    assert chosen == "6.8.0-50-generic" and after == {"saved_entry": "0"}
    assert grub_next(menu, after, "0")[0] == "6.8.0-51-generic"
    assert grub_next(menu, {"saved_entry": path}, "saved")[0] == "6.8.0-50-generic"
    assert grub_next(menu, {"saved_entry": path}, "0")[0] == "6.8.0-51-generic"  # GRUB_DEFAULT=0 ignores it
    assert grub_next(menu, {"saved_entry": "gone"}, "saved")[0] == "6.8.0-51-generic"


def test_systemd_boot_picks_oneshot_then_default_variable_then_glob_then_newest() -> None:
    new, old = sdboot_entry("debian-6.12.conf", "6.12.9-amd64"), sdboot_entry("debian-6.1.conf", "6.1.0-27-amd64")
    order = [new, old]
    for version in (252, 259):  # entries without counters: one name for every version
        assert sdboot_next(order, version, "debian-6.1.conf", "debian-6.12.conf", None) == old
        assert sdboot_next(order, version, None, "DEBIAN-6.1.conf", "debian-6.12*") == old  # case-folded
        assert sdboot_next(order, version, "gone.conf", None, "debian-6.1.*") == old
        assert sdboot_next(order, version, None, None, "debian-6.1*") == new  # the first match in menu order
        assert sdboot_next(order, version, None, None, None) == new


def test_systemd_boot_names_counted_entries_by_file_before_259_and_without_counters_after() -> None:
    new = sdboot_entry("debian-6.12+1-1.conf", "6.12.9-amd64")
    old = sdboot_entry("debian-6.1+3.conf", "6.1.0-27-amd64")
    assert (old.stem, old.ext, old.tries_left, old.tries_done) == ("debian-6.1", ".conf", 3, None)
    assert (new.loader_id(252), new.loader_id(258), new.loader_id(259)) == (
        "debian-6.12+1-1.conf", "debian-6.12+1-1.conf", "debian-6.12.conf")  # fmt: skip
    assert sdboot_next([new, old], 252, "debian-6.1+3.conf", None, None) == old
    assert sdboot_next([new, old], 252, "debian-6.1.conf", None, None) == new  # names nothing: the first
    assert sdboot_next([new, old], 259, "debian-6.1.conf", None, None) == old
    assert sdboot_next([new, old], 259, "debian-6.1+3.conf", None, None) == new
    for version in (252, 259):
        assert sdboot_next([new, old], version, "debian-6.1[+.]*", None, None) == old
    # Out of tries: last in the menu, so not the one picked by itself; a pattern may still name it.
    bad = sdboot_entry("debian-6.12+0-2.conf", "6.12.9-amd64")
    assert sdboot_next([bad, old], 252, None, None, None) == old
    assert sdboot_next([bad, old], 252, "debian-6.12+0-2.conf", None, None) == bad


def test_systemd_boot_counts_the_try_of_the_entry_it_boots() -> None:
    assert sdboot_entry("a+3.conf", "r").after_boot() == "a+2-1.conf"
    assert sdboot_entry("a+1-1.conf", "r").after_boot() == "a+0-2.conf"
    assert sdboot_entry("a+0-2.conf", "r").after_boot() == "a+0-3.conf"  # at 0 only "done" grows
    assert sdboot_entry("a.conf", "r").after_boot() is None
    assert sdboot_entry("a+x.conf", "r").tries_left is None  # not a counter


def test_efi_variables_are_attributes_and_utf16() -> None:
    data = efi_value("debian-6.1.conf")
    assert data[:4] == b"\x07\x00\x00\x00" and efi_string(data) == "debian-6.1.conf"
    assert efi_string(b"\x07\x00") is None and efi_string(None) is None
