"""vm/uefi.py, the UEFI guest's disk: loader.conf's first default, and the GPT disk the firmware reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import TOP

sys.path.insert(0, str(TOP / "vm"))
import uefi  # the VM lane's script, not part of the package
import vmlane

MID = "0b5b9378fe4047ca81933927d55b1b18"


def _esp(tmp_path: Path, names: list[str]) -> Path:
    esp = tmp_path / "esp"
    (esp / "loader" / "entries").mkdir(parents=True)
    for name in names:
        (esp / "loader" / "entries" / name).write_text("title x\n")
    return esp


def test_loader_conf_default_is_a_glob_over_the_counted_6_1_entry(tmp_path: Path) -> None:
    # What kernel-install wrote on the measured build (/etc/kernel/tries = 2).
    esp = _esp(tmp_path, [f"{MID}-6.1.0-50-amd64+2.conf", f"{MID}-6.12.95+deb12-amd64+2.conf"])
    default, entries = uefi.write_loader_conf(esp)
    # systemd-boot 252's ids are the file names with the counter: the glob matches the
    # entry before and after the boot that renames it (+2 -> +1-1), and not 6.12's.
    assert default == f"{MID}-6.1.0-50-amd64*"
    assert entries == sorted([f"{MID}-6.1.0-50-amd64+2.conf", f"{MID}-6.12.95+deb12-amd64+2.conf"])
    assert (esp / "loader" / "loader.conf").read_text() == f"timeout 0\ndefault {default}\n"


@pytest.mark.parametrize(
    "names",
    [
        [],
        [f"{MID}-6.12.95+deb12-amd64+2.conf"],
        [f"{MID}-6.12.95+deb12-amd64+2.conf", f"{MID}-6.13.1-amd64+2.conf"],
        [f"{MID}-6.1.0-50-amd64+2.conf", f"{MID}-6.1.0-51-amd64+2.conf", f"{MID}-6.12.95+deb12-amd64+2.conf"],
    ],
)
def test_loader_conf_refuses_an_esp_without_exactly_one_6_1_and_one_other_entry(
    tmp_path: Path, names: list[str]
) -> None:
    with pytest.raises(vmlane.LaneError, match="expected two counted entries"):
        uefi.write_loader_conf(_esp(tmp_path, names))


@pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("mkfs.fat", "mcopy", "mtype", "sfdisk", "mkfs.ext4")),
    reason="needs dosfstools, mtools, fdisk and e2fsprogs (vm/uefi.py host-deps)",
)
def test_make_disk_lays_an_esp_and_a_root_into_gpt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uefi, "ROOT_SIZE", "16M")
    monkeypatch.setattr(uefi, "ESP_MIB", 40)  # FAT32's smallest useful size is ~33 MiB
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("kfdvm\n")
    esp = _esp(tmp_path, [f"{MID}-6.1.0-50-amd64+2.conf"])
    (esp / "EFI" / "BOOT").mkdir(parents=True)
    (esp / "EFI" / "BOOT" / "BOOTX64.EFI").write_bytes(b"MZ" + bytes(62))
    disk = tmp_path / "disk.img"
    uefi.make_disk(root, esp, tmp_path, disk, tmp_path / "log")

    table = json.loads(subprocess.run(["sfdisk", "--json", str(disk)], capture_output=True, check=True).stdout)
    parts = table["partitiontable"]["partitions"]
    assert table["partitiontable"]["label"] == "gpt"
    assert [p["type"] for p in parts] == [uefi.ESP_TYPE, uefi.ROOT_TYPE]
    assert [p["start"] for p in parts] == [2048, 2048 + 40 * 2048]
    assert [p["size"] for p in parts] == [40 * 2048, 16 * 2048]
    # The firmware's removable-media path and the entry are on the FAT at partition 1's offset.
    listing = subprocess.run(
        ["mdir", "-b", "-i", f"{disk}@@1M", "::/EFI/BOOT"], capture_output=True, text=True, check=True
    ).stdout
    assert "BOOTX64.EFI" in listing.upper()
    got = subprocess.run(
        ["mtype", "-i", f"{disk}@@1M", f"::/loader/entries/{MID}-6.1.0-50-amd64+2.conf"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert got == "title x\n"
    # And the ext4 root at partition 2's offset carries the tree (its superblock magic 0xEF53 at 1080).
    with disk.open("rb") as fh:
        fh.seek((2048 + 40 * 2048) * 512 + 1080)
        assert fh.read(2) == b"\x53\xef"
