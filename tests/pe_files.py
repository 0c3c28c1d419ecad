"""Building real PE files for the tests: a UKI the way ukify makes one, or the bytes by hand.

``objcopy_uki`` adds ``.osrel``/``.uname``/``.cmdline``/``.linux`` sections to
systemd's own EFI stub with binutils' objcopy, as ukify (and dracut before it)
does; bootctl reads the result. ``pe_image`` writes the PE/COFF layout
(Microsoft PE Format: MS-DOS stub, COFF file header, PE32+ optional header,
section table) directly, for hostile variations and for the fuzzer.
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import tool

STUB = Path("/usr/lib/systemd/boot/efi/linuxx64.efi.stub")  # Debian's systemd-boot-efi
OSREL_DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'


def objcopy_uki(dest: Path, *, osrel: str = OSREL_DEBIAN, uname: str | None = None, cmdline: str = "ro quiet") -> Path:
    if not STUB.is_file():
        pytest.fail(f"{STUB} (Debian package systemd-boot-efi) is required for this test; 'make test' installs it")
    work = dest.parent / f".{dest.name}.parts"
    work.mkdir(parents=True, exist_ok=True)
    args = [tool("objcopy")]
    vma = 0x1000000
    parts = {".osrel": osrel, ".cmdline": cmdline, ".linux": "not a kernel\n" * 64}
    if uname is not None:
        parts[".uname"] = uname
    for name, text in parts.items():
        part = work / name.lstrip(".")
        part.write_text(text)
        args += ["--add-section", f"{name}={part}", "--change-section-vma", f"{name}={vma:#x}"]
        vma += 0x100000
    subprocess.run([*args, str(STUB), str(dest)], check=True, capture_output=True, timeout=60)
    for part in work.iterdir():
        part.unlink()
    work.rmdir()
    return dest


FILE_ALIGN = 512


def pe_image(
    sections: list[tuple[bytes, bytes]],
    *,
    count: int | None = None,
    pe_offset: int = 64,
    optional_size: int = 240,
    overrides: dict[int, tuple[int, int]] | None = None,
) -> bytes:
    """A PE32+ image with ``sections`` (name, data). ``count`` overrides NumberOfSections;
    ``overrides`` maps a section index to (VirtualSize, PointerToRawData) as the header claims."""
    header_end = pe_offset + 24 + optional_size + 40 * len(sections)
    data_at = -(-header_end // FILE_ALIGN) * FILE_ALIGN
    table = b""
    body = b""
    for i, (name, data) in enumerate(sections):
        raw = data + b"\0" * (-len(data) % FILE_ALIGN)
        vsize, pointer = (overrides or {}).get(i, (len(data), data_at + len(body)))
        table += struct.pack("<8sIIIIIIHHI", name.ljust(8, b"\0")[:8], vsize, 0x1000 * (i + 1), len(raw),
                             pointer, 0, 0, 0, 0, 0x40000040)  # fmt: skip
        body += raw
    dos = bytearray(64)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, pe_offset)
    coff = struct.pack("<4sHHIIIHH", b"PE\0\0", 0x8664, len(sections) if count is None else count, 0, 0, 0,
                       optional_size, 0x0206)  # fmt: skip
    optional = bytearray(optional_size)
    if optional_size >= 2:
        struct.pack_into("<H", optional, 0, 0x20B)  # PE32+
    head = bytes(dos) + b"\0" * (pe_offset - 64) + coff + bytes(optional) + table
    return head + b"\0" * (data_at - len(head)) + body


def uki_image(osrel: str = OSREL_DEBIAN, uname: str = "6.1.0-27-amd64", cmdline: str = "ro quiet") -> bytes:
    return pe_image([(b".text", b"\xc3" * 16), (b".osrel", osrel.encode()), (b".uname", uname.encode()),
                     (b".cmdline", cmdline.encode()), (b".linux", b"kernel" * 100)])  # fmt: skip
