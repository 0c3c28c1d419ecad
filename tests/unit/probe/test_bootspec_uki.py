"""Type #2 entries: unified kernel images in EFI/Linux, on the ESP and on an XBOOTLDR partition."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.probe import pe, probe
from kfdguard.simulate import bundled
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from tests.pe_files import objcopy_uki, pe_image, uki_image

Make = Callable[[str | MachineSpec], SimulatedSystem]


def uki_machine(fresh_machine: Make) -> SimulatedSystem:
    """The DKMS machine booted by systemd-boot from UKIs only: no Type #1 entries."""
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))
    for conf in (system.root.efi / "loader/entries").iterdir():
        conf.unlink()
    (system.root.efi / "loader/entries").rmdir()
    linux = system.root.efi / "EFI/Linux"
    linux.mkdir(parents=True)
    for release, counter in (("6.8.0-50-generic", ""), ("6.8.0-51-generic", "+2-1")):
        objcopy_uki(Path(linux) / f"ubuntu-{release}{counter}.efi", uname=release,
                    osrel=f'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\nVERSION="{release}"\n')  # fmt: skip
    return system


def test_ukis_made_by_objcopy_are_entries_with_their_kernel(fresh_machine: Make) -> None:
    system = uki_machine(fresh_machine)
    facts = probe(system)
    loader = facts.bootloader
    assert loader.kind == "systemd-boot"
    got = [(e.id, e.kind, e.release, e.title, e.version, e.tries_left, e.tries_done) for e in loader.entries]
    assert got == [
        ("ubuntu-6.8.0-51-generic.efi", "type2", "6.8.0-51-generic", "Ubuntu 24.04.1 LTS", "6.8.0-51-generic", 2, 1),
        ("ubuntu-6.8.0-50-generic.efi", "type2", "6.8.0-50-generic", "Ubuntu 24.04.1 LTS", "6.8.0-50-generic", None,
         None),
    ]  # fmt: skip
    assert loader.entries[0].path == "/efi/EFI/Linux/ubuntu-6.8.0-51-generic+2-1.efi"
    assert not [p for p in facts.problems if "EFI/Linux" in p.path]
    from kfdguard.assess import assess

    rec = assess(facts).fallback
    assert rec is not None and rec.command == "sudo bootctl set-oneshot ubuntu-6.8.0-50-generic.efi && sudo reboot"


def test_xbootldr_entries_join_the_esps(fresh_machine: Make) -> None:
    """ESP at /efi (loader.conf, one UKI), XBOOTLDR at /boot (a Type #1 entry and a UKI)."""
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))
    esp_entries = system.root.efi / "loader/entries"
    boot = system.root.boot
    (boot / "loader/entries").mkdir(parents=True)
    (esp_entries / "ubuntu-6.8.0-50-generic.conf").rename(boot / "loader/entries/ubuntu-6.8.0-50-generic+1-2.conf")
    (esp_entries / "ubuntu-6.8.0-51-generic.conf").unlink()
    (boot / "EFI/Linux").mkdir(parents=True)
    (boot / "EFI/Linux/ubuntu-6.8.0-51-generic.efi").write_bytes(uki_image(uname="6.8.0-51-generic"))
    (system.root.efi / "EFI/Linux").mkdir(parents=True)
    (system.root.efi / "EFI/Linux/old-6.8.0-49.efi").write_bytes(uki_image(uname="6.8.0-49-generic"))
    loader = probe(system).bootloader
    assert loader.xbootldr == "/boot"
    by_id = {e.id: (e.kind, e.release, e.path) for e in loader.entries}
    assert by_id == {
        "ubuntu-6.8.0-50-generic.conf": ("type1", "6.8.0-50-generic", "/boot/loader/entries/ubuntu-6.8.0-50-generic+1-2.conf"),
        "ubuntu-6.8.0-51-generic.efi": ("type2", "6.8.0-51-generic", "/boot/EFI/Linux/ubuntu-6.8.0-51-generic.efi"),
        "old-6.8.0-49.efi": ("type2", "6.8.0-49-generic", "/efi/EFI/Linux/old-6.8.0-49.efi"),
    }  # fmt: skip


def test_an_esp_with_grub_alone_is_not_systemd_boot(fresh_machine: Make) -> None:
    system = fresh_machine("dkms-missing-for-new-kernel")
    (system.root.boot / "efi/EFI/debian").mkdir(parents=True)
    (system.root.boot / "efi/EFI/debian/grubx64.efi").write_bytes(b"MZ" + b"\0" * 100)
    assert probe(system).bootloader.kind == "grub"


def _patched(image: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(image)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


GOOD = uki_image()
PE_AT = 64
TABLE_AT = PE_AT + 24 + 240
HOSTILE = {
    "empty": (b"", "shorter than a DOS header"),
    "truncated DOS header": (GOOD[:40], "shorter than a DOS header"),
    "no MZ": (b"ZM" + GOOD[2:], "not a PE image: Probably a ZM Executable"),
    "PE header beyond the end": (_patched(GOOD, 0x3C, "<I", 0xFFFFFFF0), "not a PE image: Invalid e_lfanew value"),
    "no PE signature": (_patched(GOOD, PE_AT, "<I", 0x12345678), "not a PE image: Invalid NT Headers signature"),
    "65535 sections": (_patched(GOOD, PE_AT + 6, "<H", 0xFFFF), "65535 sections, more than the 96"),
    "section table past the end": (_patched(GOOD, PE_AT + 20, "<H", 0xFFFF), "section table of 5 entries"),
    "truncated in the section table": (GOOD[: TABLE_AT + 50], "not a PE image: Data length less than expected header length. (pefile, on a file of 378 bytes)"),
    ".osrel beyond the end": (_patched(GOOD, TABLE_AT + 40 + 20, "<I", 0x7FFFFFFF), "section .osrel (" ),
    ".osrel of 1 GiB": (_patched(GOOD, TABLE_AT + 40 + 8, "<I", 1 << 30), "section .osrel is 1073741824 bytes"),
    "NUL inside .osrel": (uki_image(osrel="ID=debian\0PRETTY_NAME=x\n"), "section .osrel holds a NUL byte"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_pe_files_get_a_specific_error(case: str) -> None:
    data, expected = HOSTILE[case]

    def read(offset: int, size: int) -> bytes:
        return data[offset : offset + size]

    with pytest.raises(pe.PeError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        pe.sections(read, len(data), (".osrel", ".uname", ".cmdline"))


def test_hostile_ukis_are_problems_not_crashes(fresh_machine: Make) -> None:
    system = uki_machine(fresh_machine)
    linux = system.root.efi / "EFI/Linux"
    for i, case in enumerate(sorted(HOSTILE)):
        (linux / f"bad{i}.efi").write_bytes(HOSTILE[case][0])
    (linux / "no-osrel.efi").write_bytes(pe_image([(b".uname", b"6.8.0-50-generic")]))
    (linux / "nameless.efi").write_bytes(uki_image(osrel="VERSION_ID=1\n"))
    (linux / "fifo.efi").unlink(missing_ok=True)
    import os

    os.mkfifo(linux / "fifo.efi")
    facts = probe(system)
    assert [e.id for e in facts.bootloader.entries] == ["ubuntu-6.8.0-51-generic.efi", "ubuntu-6.8.0-50-generic.efi"]
    problems = {p.path.rsplit("/", 1)[-1]: p.reason for p in facts.problems if "/EFI/Linux/" in p.path}
    assert problems["no-osrel.efi"] == "not a unified kernel image: it has no .osrel section"
    assert problems["nameless.efi"] == "unified kernel image refused by systemd: its .osrel names no OS"
    assert "fifo.efi" not in problems  # not a regular file: skipped, as bootctl skips it, and never opened
    for i, case in enumerate(sorted(HOSTILE)):
        assert problems[f"bad{i}.efi"].startswith("not a usable unified kernel image: "), case


def test_a_large_uki_is_read_in_a_few_small_pieces(tmp_path: Path) -> None:
    """A 100 MB image (sparse here) costs its headers and three short sections, never the whole file."""
    image = uki_image()
    path = tmp_path / "big.efi"
    path.write_bytes(image)
    with path.open("r+b") as f:
        f.truncate(100 << 20)
    reads: list[int] = []
    data = path.read_bytes()

    def read(offset: int, size: int) -> bytes:
        reads.append(size)
        return data[offset : offset + size]

    texts = pe.sections(read, len(data), (".osrel", ".uname", ".cmdline"))
    assert texts[".uname"] == "6.1.0-27-amd64" and texts[".cmdline"] == "ro quiet"
    # One page of headers (what pefile parses) and the three sections.
    assert len(reads) == 4 and reads[0] == 4096 and sum(reads) < 4096 + 200


@pytest.mark.parametrize(
    ("mounts", "part_type", "expected"),
    [
        (None, None, "/boot"),  # nothing to tell by: entries in /boot count (bootctl would need the type)
        ("", None, None),  # /boot is no mount of its own: a plain directory systemd-boot cannot read
        ("/boot", "bc13c2ff-59e6-4262-a352-b275fd6f7172", "/boot"),
        ("/boot", "BC13C2FF-59E6-4262-A352-B275FD6F7172", "/boot"),
        ("/boot", "0fc63daf-8483-4772-8e79-3d69d8477de4", None),  # a Linux filesystem partition
        ("/boot", None, "/boot"),  # a mount, but udev has no word on it
    ],
)
def test_xbootldr_is_told_by_partition_type_when_it_can_be(
    fresh_machine: Make, mounts: str | None, part_type: str | None, expected: str | None
) -> None:
    system = fresh_machine(bundled.load("dkms-missing-for-new-kernel").with_changes(bootloader="systemd-boot"))
    (system.root.boot / "EFI/Linux").mkdir(parents=True)
    (system.root.boot / "EFI/Linux/extra.efi").write_bytes(uki_image(uname="6.8.0-49-generic"))
    if mounts is not None:
        lines = ["22 1 0:21 / /proc rw - proc proc rw", "27 1 8:1 / / rw - ext4 /dev/sda1 rw"]
        if mounts:
            lines.append("31 27 8:2 / /boot rw,relatime - ext4 /dev/sda2 rw")
        (system.root.proc / "self").mkdir(parents=True, exist_ok=True)
        (system.root.proc / "self/mountinfo").write_text("\n".join(lines) + "\n")
    if part_type is not None:
        (system.root.run / "udev/data").mkdir(parents=True, exist_ok=True)
        (system.root.run / "udev/data/b8:2").write_text(f"S:disk/by-partuuid/x\nE:ID_PART_ENTRY_TYPE={part_type}\n")
    loader = probe(system).bootloader
    assert loader.xbootldr == expected
    assert ("extra.efi" in {e.id for e in loader.entries}) == (expected is not None)
