"""The HIP sections of an ELF file, found from the section headers alone: three bounded reads.

A reader of its own rather than pyelftools (which the tests keep as the
oracle it agrees with, tests/test_userspace_elf.py): what is needed is the
ELF header, the section header table and the section-name string table,
~60 lines of struct; pyelftools costs 66 ms to import and 5.7 ms per file
(its construct-based parser builds every structure; measured on Debian 13's
librocblas.so), which a PyTorch torch/lib of forty libraries multiplies, and
it raises a dozen kinds of exceptions on hostile files. Here every bound is
explicit (section count, table and string-table sizes, all within the file)
and every malformation is an ``ElfError`` saying which.

Layout: the System V gABI, "ELF Header" and "Sections" (Elf32_Ehdr/Elf64_Ehdr,
Elf32_Shdr/Elf64_Shdr; extended numbering through section 0's sh_size and
sh_link when e_shnum is 0 or e_shstrndx is SHN_XINDEX).
"""

from __future__ import annotations

import os
import stat
import struct

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

ELF_MAGIC = b"\x7fELF"
FATBIN = ".hip_fatbin"
# hipFatBinSegment: clang's wrapper {u32 magic "HIPF" = 0x48495046, u32 version, void* fatbin, void* unused},
# what __hipRegisterFatBinary receives; it points at .hip_fatbin.
SEGMENT = ".hipFatBinSegment"
SEGMENT_MAGIC = 0x48495046
# An executable or library has a few dozen sections; more than this is hostile.
MAX_SECTIONS = 4096
EM_AMDGPU = 224


class ElfError(ValueError):
    """Not an ELF file, or one whose headers cannot be read."""


@dataclass(frozen=True, slots=True)
class Section:
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class HipSections:
    machine: str  # "EM_X86_64", "EM_AMDGPU" (a code object)
    fatbin: Section | None
    segment: Section | None
    segment_magic: bool  # the wrapper starts with "HIPF"


def is_elf(head: bytes) -> bool:
    return head[:4] == ELF_MAGIC


MACHINES = {3: "EM_386", 62: "EM_X86_64", 183: "EM_AARCH64", 224: "EM_AMDGPU", 243: "EM_RISCV"}
SHT_NOBITS = 8
SHN_XINDEX = 0xFFFF
STRTAB_LIMIT = 1 << 20


def _ident(stream: BinaryIO) -> tuple[bytes, bool, bool]:
    """The ELF header's first 64 bytes, whether the file is little-endian, and whether it is 64-bit."""
    stream.seek(0)
    ident = stream.read(64)
    if len(ident) < 52 or ident[:4] != ELF_MAGIC:
        raise ElfError("truncated ELF header" if ident[:4] == ELF_MAGIC else "not an ELF file")
    klass, data = ident[4], ident[5]
    if klass not in (1, 2) or data not in (1, 2):
        raise ElfError(f"ELF class {klass} / data encoding {data} (known: 1 or 2)")
    wide = klass == 2
    if wide and len(ident) < 64:
        raise ElfError("truncated ELF header")
    return ident, data == 1, wide


def _section_fields(ident: bytes, end: str, wide: bool) -> tuple[int, int, int, int, str, int]:
    """e_shoff, e_shentsize, e_shnum, e_shstrndx, and the struct format and size of one section header."""
    if wide:
        (shoff,) = struct.unpack_from(end + "Q", ident, 40)
        entsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 58)
        return shoff, entsize, shnum, shstrndx, end + "IIQQQQIIQQ", 64
    (shoff,) = struct.unpack_from(end + "I", ident, 32)
    entsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 46)
    return shoff, entsize, shnum, shstrndx, end + "IIIIIIIIII", 40


def _extended_numbering(
    stream: BinaryIO, shoff: int, fmt: str, need: int, shnum: int, shstrndx: int, size: int
) -> tuple[int, int]:
    """The section count and name-table index, from section 0's sh_size and sh_link where the ELF header defers."""
    # Before the seek: an offset of 2**63 and more cannot even be sought (ValueError, not OSError).
    if shoff + need > size:
        raise ElfError("section header 0 beyond the end of the file")
    stream.seek(shoff)
    raw = stream.read(need)
    if len(raw) < need:
        raise ElfError("section header 0 beyond the end of the file")
    first: tuple[int, ...] = struct.unpack(fmt, raw)
    return shnum or first[5], first[6] if shstrndx == SHN_XINDEX else shstrndx


def _section_table(
    stream: BinaryIO, shoff: int, entsize: int, shnum: int, fmt: str, size: int
) -> list[tuple[int, ...]]:
    """Every section header, the table refused when it runs past the file's ``size`` bytes."""
    if shoff + shnum * entsize > size:
        raise ElfError(f"section header table (0x{shoff:x}, {shnum} x {entsize}) beyond the file's 0x{size:x} bytes")
    stream.seek(shoff)
    table = stream.read(shnum * entsize)
    return [struct.unpack_from(fmt, table, i * entsize) for i in range(shnum)]


def _section_names(stream: BinaryIO, headers: list[tuple[int, ...]], shstrndx: int, size: int) -> bytes:
    """The section-name string table, refused when its index, size or place is out of bounds."""
    shnum = len(headers)
    if not 0 < shstrndx < shnum:
        raise ElfError(f"section-name table index {shstrndx} outside 1..{shnum - 1}")
    str_off, str_size = headers[shstrndx][4], headers[shstrndx][5]
    if str_size > STRTAB_LIMIT or str_off + str_size > size:
        raise ElfError(f"section-name table (0x{str_off:x}, 0x{str_size:x} bytes) too large or beyond the file")
    stream.seek(str_off)
    return stream.read(str_size)


def _hip_headers(headers: list[tuple[int, ...]], names: bytes) -> list[tuple[str, str, int, int]]:
    """(name, type, offset, size) of the sections named .hip_fatbin or .hipFatBinSegment."""
    found = []
    for fields in headers:
        at = fields[0]
        if at >= len(names):
            continue
        stop = names.find(b"\0", at)
        section = names[at : stop if stop >= 0 else len(names)]
        if section in (b".hip_fatbin", b".hipFatBinSegment"):
            kind = "SHT_NOBITS" if fields[1] == SHT_NOBITS else f"type {fields[1]}"
            found.append((section.decode(), kind, fields[4], fields[5]))
    return found


def _headers(stream: BinaryIO, size: int) -> tuple[str, bool, int, list[tuple[str, str, int, int]]]:
    """Machine, endianness, section count, and (name, type, offset, size) of the HIP sections."""
    ident, little, wide = _ident(stream)
    end = "<" if little else ">"
    (machine,) = struct.unpack_from(end + "H", ident, 18)
    shoff, entsize, shnum, shstrndx, fmt, need = _section_fields(ident, end, wide)
    name = MACHINES.get(machine, f"machine {machine}")
    if shoff == 0:
        return name, little, 0, []
    if entsize < need:
        raise ElfError(f"section header size {entsize} (at least {need})")
    if shnum == 0 or shstrndx == SHN_XINDEX:
        shnum, shstrndx = _extended_numbering(stream, shoff, fmt, need, shnum, shstrndx, size)
    if shnum > MAX_SECTIONS:
        return name, little, shnum, []
    headers = _section_table(stream, shoff, entsize, shnum, fmt, size)
    names = _section_names(stream, headers, shstrndx, size)
    return name, little, shnum, _hip_headers(headers, names)


def hip_sections(stream: BinaryIO, size: int) -> HipSections:
    """The .hip_fatbin and .hipFatBinSegment sections of the ELF file in ``stream`` of ``size`` bytes."""
    machine, little, count, found = _headers(stream, size)
    if count > MAX_SECTIONS:
        raise ElfError(f"{count} sections (more than {MAX_SECTIONS})")
    sections: dict[str, Section] = {}
    for name, kind, offset, length in found:
        if kind == "SHT_NOBITS":
            raise ElfError(f"section {name} has no data in the file (SHT_NOBITS)")
        if offset + length > size:
            raise ElfError(f"section {name}: offset 0x{offset:x} size 0x{length:x} beyond the file's 0x{size:x}")
        sections.setdefault(name, Section(offset, length))
    segment = sections.get(SEGMENT)
    magic = False
    if segment is not None and segment.size >= 4:
        stream.seek(segment.offset)
        word = stream.read(4)
        magic = len(word) == 4 and int.from_bytes(word, "little" if little else "big") == SEGMENT_MAGIC
    return HipSections(machine, sections.get(FATBIN), segment, magic)


def open_regular(path: str) -> tuple[int, int]:
    """An fd and the size of a regular file; OSError for anything else (FIFO, device, loop of links)."""
    # O_NONBLOCK: opening a FIFO planted in a library directory must not wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(0, "not a regular file")
    return fd, st.st_size
