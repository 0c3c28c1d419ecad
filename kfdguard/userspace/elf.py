"""The HIP sections of an ELF file, found with pyelftools from the section headers alone.

pyelftools parses the ELF header, the section headers and the names lazily
from a seekable stream, so finding ``.hip_fatbin`` in a 450 MB library costs a
few small reads. It raises many kinds of exceptions on malformed files; each
becomes an ``ElfError`` naming the file.
"""

from __future__ import annotations

import os
import stat

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


def _headers(stream: BinaryIO) -> tuple[str, bool, int, list[tuple[str, str, int, int]]]:
    """pyelftools' view: machine, endianness, section count, and (name, type, offset, size) of the HIP sections."""
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(stream)
        count = elf.num_sections()
        found = []
        if count <= MAX_SECTIONS:
            for index in range(count):
                section = elf.get_section(index)
                if section.name in (FATBIN, SEGMENT):
                    found.append(
                        (section.name, str(section["sh_type"]), int(section["sh_offset"]), int(section["sh_size"]))
                    )
        return str(elf["e_machine"]), bool(elf.little_endian), count, found
    except Exception as exc:  # pyelftools: ELFError, ELFParseError, construct's errors, struct.error...
        raise ElfError(f"malformed ELF headers: {type(exc).__name__}: {str(exc)[:200]}") from None


def hip_sections(stream: BinaryIO, size: int) -> HipSections:
    """The .hip_fatbin and .hipFatBinSegment sections of the ELF file in ``stream`` of ``size`` bytes."""
    machine, little, count, found = _headers(stream)
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
