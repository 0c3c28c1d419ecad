"""The HIP sections of an ELF file, found from the section headers alone, with pyelftools.

pyelftools (eliben/pyelftools, python3-pyelftools in Debian) identifies the
file (class, byte order), parses the ELF header, resolves extended section
numbering (section 0's sh_size and sh_link when e_shnum is 0 or e_shstrndx is
SHN_XINDEX) and lays out Elf32_Shdr/Elf64_Shdr in either byte order. It reads
through the stream with seeks, so a 450 MB library costs the header reads
only. What stays here is what a hostile file needs and the library does not
promise: every bound is checked *before* the library is asked to read (section
count, table and name-table sizes, all within the file), the section headers
are parsed from one bounded read of the table instead of through
``ELFFile.get_section`` (which builds symbol and version sections that follow
their sh_link, unbounded recursion on a file whose symbol table links to
itself), and every exception the library raises on a malformed file
(``ELFError``, construct's errors, a seek past 2**63) becomes an ``ElfError``
saying what was wrong.

Layout: the System V gABI, "ELF Header" and "Sections".
"""

from __future__ import annotations

import os
import stat

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from elftools.elf.elffile import ELFFile

ELF_MAGIC = b"\x7fELF"
FATBIN = ".hip_fatbin"
# hipFatBinSegment: clang's wrapper {u32 magic "HIPF" = 0x48495046, u32 version, void* fatbin, void* unused},
# what __hipRegisterFatBinary receives; it points at .hip_fatbin.
SEGMENT = ".hipFatBinSegment"
SEGMENT_MAGIC = 0x48495046
KPACK_REF = ".rocm_kpack_ref"
# An executable or library has a few dozen sections; more than this is hostile.
MAX_SECTIONS = 4096
EM_AMDGPU = 224
STRTAB_LIMIT = 1 << 20


def _library_errors() -> tuple[type[Exception], ...]:
    """What pyelftools raises on a malformed file: its own ELFError (ELFParseError wraps construct's errors
    in struct_parse, but not every read goes through it), construct's errors, and the int conversions of
    a seek to an absurd offset (OverflowError) or a negative one (ValueError)."""
    from elftools.common.exceptions import ELFError
    from elftools.construct import ConstructError

    return (ELFError, ConstructError, ValueError, OverflowError, KeyError)


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
    # TheRock's split builds (kfdguard/userspace/kpack.py): the code is in .kpack archives, the
    # .hip_fatbin has no bytes in the file (SHT_NOBITS), and this section says where to look.
    kpack_ref: Section | None = None


def is_elf(head: bytes) -> bool:
    return head[:4] == ELF_MAGIC


def _open(stream: BinaryIO, size: int) -> ELFFile:
    """pyelftools' view of the file, after the checks its constructor does not make."""
    stream.seek(0)
    ident = stream.read(6)
    if ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    if len(ident) < 6 or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        klass, data = (ident[4], ident[5]) if len(ident) == 6 else (0, 0)
        raise ElfError(f"ELF class {klass} / data encoding {data} (known: 1 or 2)")
    # The whole ELF header must be there before pyelftools parses it (52 bytes for ELFCLASS32, 64 for 64).
    if size < (64 if ident[4] == 2 else 52):
        raise ElfError("truncated ELF header")
    # Imported here: ~70 ms that a scan of Tensile file names alone, and every boot pass, never pays.
    from elftools.elf.elffile import ELFFile

    return ELFFile(stream)


def _bounded_table(elf: ELFFile, size: int) -> tuple[int, int, int, int]:
    """e_shoff, e_shentsize, the section count and the name-table index, each checked against the file."""
    shoff, entsize = int(elf["e_shoff"]), int(elf["e_shentsize"])
    need = int(elf.structs.Elf_Shdr.sizeof())
    if entsize < need:
        raise ElfError(f"section header size {entsize} (at least {need})")
    # Extended numbering reads section 0: it must lie within the file before pyelftools seeks to it.
    if (elf["e_shnum"] == 0 or elf["e_shstrndx"] == 0xFFFF) and shoff + need > size:
        raise ElfError("section header 0 beyond the end of the file")
    shnum, shstrndx = int(elf.num_sections()), int(elf.get_shstrndx())
    if shnum > MAX_SECTIONS:
        raise ElfError(f"{shnum} sections (more than {MAX_SECTIONS})")
    if shoff + shnum * entsize > size:
        raise ElfError(f"section header table (0x{shoff:x}, {shnum} x {entsize}) beyond the file's 0x{size:x} bytes")
    if not 0 < shstrndx < shnum:
        raise ElfError(f"section-name table index {shstrndx} outside 1..{shnum - 1}")
    return shoff, entsize, shnum, shstrndx


def _headers(elf: ELFFile, stream: BinaryIO, size: int) -> list[tuple[str, Any]]:
    """(name, parsed Elf_Shdr) of every section; the names from one bounded read of the name table."""
    shoff, entsize, shnum, shstrndx = _bounded_table(elf, size)
    stream.seek(shoff)
    table = stream.read(shnum * entsize)
    parse = elf.structs.Elf_Shdr.parse
    headers = [parse(table[i * entsize : (i + 1) * entsize]) for i in range(shnum)]
    str_off, str_size = int(headers[shstrndx]["sh_offset"]), int(headers[shstrndx]["sh_size"])
    if str_size > STRTAB_LIMIT or str_off + str_size > size:
        raise ElfError(f"section-name table (0x{str_off:x}, 0x{str_size:x} bytes) too large or beyond the file")
    stream.seek(str_off)
    names = stream.read(str_size)
    out = []
    for header in headers:
        at = int(header["sh_name"])
        stop = names.find(b"\0", at) if at < len(names) else -1
        out.append((names[at : stop if stop >= 0 else len(names)].decode("latin-1"), header))
    return out


def _machine(elf: ELFFile) -> str:
    machine = elf["e_machine"]
    # pyelftools names the machines it knows ("EM_X86_64") and leaves others as their number.
    return machine if isinstance(machine, str) else f"machine {machine}"


def _hip_sections(stream: BinaryIO, size: int) -> HipSections:
    elf = _open(stream, size)
    machine = _machine(elf)
    if elf["e_shoff"] == 0:
        return HipSections(machine, None, None, segment_magic=False)
    sections: dict[str, Section] = {}
    nobits = set()
    for name, header in _headers(elf, stream, size):
        if name not in (FATBIN, SEGMENT, KPACK_REF):
            continue
        if header["sh_type"] == "SHT_NOBITS":
            nobits.add(name)
            continue
        offset, length = int(header["sh_offset"]), int(header["sh_size"])
        if offset + length > size:
            raise ElfError(f"section {name}: offset 0x{offset:x} size 0x{length:x} beyond the file's 0x{size:x}")
        sections.setdefault(name, Section(offset, length))
    # A split library's .hip_fatbin is memory only, by design; anywhere else that is a broken file.
    broken = sorted(nobits - ({FATBIN} if KPACK_REF in sections else set()))
    if broken:
        raise ElfError(f"section {broken[0]} has no data in the file (SHT_NOBITS)")
    segment = sections.get(SEGMENT)
    magic = False
    if segment is not None and segment.size >= 4:
        stream.seek(segment.offset)
        word = stream.read(4)
        magic = len(word) == 4 and int.from_bytes(word, "little" if elf.little_endian else "big") == SEGMENT_MAGIC
    return HipSections(machine, sections.get(FATBIN), segment, magic, sections.get(KPACK_REF))


def hip_sections(stream: BinaryIO, size: int) -> HipSections:
    """The .hip_fatbin, .hipFatBinSegment and .rocm_kpack_ref sections of the ELF file in ``stream``."""
    try:
        return _hip_sections(stream, size)
    except ElfError:
        raise
    except Exception as exc:
        if not isinstance(exc, _library_errors()):
            raise
        raise ElfError(f"malformed ELF headers: {exc or type(exc).__name__}") from None


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
