"""The named sections of a PE file (a unified kernel image), read with bounded I/O.

A UKI is 30-100 MB; kfdguard needs three short texts in it (``.osrel``,
``.uname``, ``.cmdline``). This reads the DOS header, the PE header, the
section table and those sections only, through a ``read(offset, size)``
callable, and refuses a hostile file with a specific ``PeError``:

- at most 96 sections and 4 MiB per section read, systemd's own limits
  (src/shared/bootspec.c ``find_sections``/``PE_SECTION_SIZE_MAX``), so a file
  costs at most 4 header reads plus 3 x 4 MiB whatever its headers claim;
- every offset is checked against the file's size before it is read;
- the section's data is ``VirtualSize`` bytes at ``PointerToRawData``, as
  systemd reads it; a NUL inside the text refuses it, trailing NULs are padding.

Why not the ``pefile`` library (python3-pefile in Debian): it parses the whole
image (directories, imports, relocations, resources) from an mmap of the whole
file, with its own, larger limits, and does not read through kfdguard's Reader
(the one seam through which a probe sees, and a snapshot records, the
machine). What kfdguard needs is the PE/COFF header and section table, which
are fixed-layout records (Microsoft PE Format: "MS-DOS Stub", "COFF File
Header", "Section Table"); a reader of exactly that is smaller than the
glue around a library and gives the same answer as systemd, which also reads
them itself.
"""

from __future__ import annotations

import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

MAX_SECTIONS = 96
SECTION_LIMIT = 4 << 20
DOS_HEADER = 64
PE_HEADER = 24  # "PE\0\0" + the 20-byte COFF file header
SECTION_HEADER = 40


class PeError(ValueError):
    """A file that is not a PE image kfdguard can read (the text says why)."""


def _u16(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", data, at)[0])


def _u32(data: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", data, at)[0])


def read_exact(read: Callable[[int, int], bytes], offset: int, size: int, size_of_file: int, what: str) -> bytes:
    if offset < 0 or offset + size > size_of_file:
        raise PeError(f"{what} ({size} bytes at offset {offset}) runs past the end of the file ({size_of_file} bytes)")
    data = read(offset, size)
    if len(data) != size:
        raise PeError(f"{what}: short read ({len(data)} of {size} bytes at offset {offset}); the file changed?")
    return data


def sections(read: Callable[[int, int], bytes], size_of_file: int, wanted: Iterable[str]) -> dict[str, str]:
    """The text of each ``wanted`` section present (the first one of a name), by name."""
    names = {name.encode("ascii") for name in wanted}
    if any(len(n) > 8 for n in names):
        raise ValueError("PE section names are at most 8 bytes")
    if size_of_file < DOS_HEADER:
        raise PeError(f"truncated: {size_of_file} bytes, shorter than a DOS header")
    dos = read_exact(read, 0, DOS_HEADER, size_of_file, "DOS header")
    if dos[:2] != b"MZ":
        raise PeError("not a PE image: no 'MZ' DOS header")
    pe_at = _u32(dos, 0x3C)
    header = read_exact(read, pe_at, PE_HEADER, size_of_file, "PE header")
    if header[:4] != b"PE\0\0":
        raise PeError(f"not a PE image: no 'PE' signature at offset {pe_at}")
    count = _u16(header, 6)
    optional = _u16(header, 20)
    if count > MAX_SECTIONS:
        raise PeError(f"{count} sections, more than the {MAX_SECTIONS} systemd accepts")
    table_at = pe_at + PE_HEADER + optional
    table = read_exact(read, table_at, count * SECTION_HEADER, size_of_file, f"section table of {count} entries")
    found: dict[str, str] = {}
    for i in range(count):
        base = i * SECTION_HEADER
        raw_name = table[base : base + 8].rstrip(b"\0")
        if raw_name not in names or raw_name.decode("ascii") in found:
            continue
        name = raw_name.decode("ascii")
        virtual_size = _u32(table, base + 8)
        pointer = _u32(table, base + 20)
        if virtual_size > SECTION_LIMIT:
            raise PeError(f"section {name} is {virtual_size} bytes, more than {SECTION_LIMIT}")
        data = read_exact(read, pointer, virtual_size, size_of_file, f"section {name}").rstrip(b"\0")
        if b"\0" in data:
            raise PeError(f"section {name} holds a NUL byte inside its text")
        found[name] = data.decode("utf-8", errors="replace")
    return found
