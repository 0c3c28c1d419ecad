"""Read a kernel module's ``.modinfo`` section without running modinfo.

Kernel modules are ELF relocatable objects; ``.modinfo`` holds NUL-separated
``key=value`` strings (``parmtype=sched_policy:int``, ``depends=drm,ttm``...).
Reading it directly keeps subprocesses off the boot path for the common
uncompressed, xz and gzip layouts; zstd modules (Ubuntu 23.10+) go through
the real ``modinfo``.
"""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
MODULE_SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")
MODINFO_LIMIT = 64 << 20  # amdgpu.ko is ~20 MB uncompressed


class ModinfoError(Exception):
    pass


def module_name(filename: str) -> str | None:
    """ "amdgpu.ko.zst" -> "amdgpu"; None for files that are not modules."""
    for suffix in MODULE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)].replace("-", "_")
    return None


def decompress(data: bytes, filename: str) -> bytes:
    if filename.endswith(".xz"):
        import lzma

        try:
            return lzma.decompress(data)
        except lzma.LZMAError as exc:
            raise ModinfoError(f"bad xz data: {exc}") from None
    if filename.endswith(".gz"):
        import gzip

        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ModinfoError(f"bad gzip data: {exc}") from None
    if filename.endswith(".zst"):
        raise ModinfoError("zstd-compressed; needs modinfo")
    return data


def modinfo_entries(elf: bytes) -> list[tuple[str, str]]:
    """The key=value pairs of ``.modinfo``; raises ModinfoError on a bad ELF."""
    if len(elf) < 64 or elf[:4] != ELF_MAGIC:
        raise ModinfoError("not an ELF file")
    if elf[4] != 2 or elf[5] != 1:
        raise ModinfoError("not a little-endian 64-bit ELF")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * 64 > len(elf):
        raise ModinfoError("bad section header table")
    sections = []
    for index in range(shnum):
        base = shoff + index * 64
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", elf, base)
        if offset + size > len(elf):
            raise ModinfoError(f"section {index} runs past the end of the file")
        sections.append((name, offset, size))
    _, str_off, str_size = sections[shstrndx]
    names = elf[str_off : str_off + str_size]
    for name_off, offset, size in sections:
        end = names.find(b"\0", name_off)
        if end >= 0 and names[name_off:end] == b".modinfo":
            blob = elf[offset : offset + size]
            pairs = []
            for item in blob.split(b"\0"):
                key, sep, value = item.decode(errors="replace").partition("=")
                if sep and key:
                    pairs.append((key, value))
            return pairs
    raise ModinfoError("no .modinfo section")


def declared_parameters(entries: list[tuple[str, str]]) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for key, value in entries:
        if key in ("parm", "parmtype"):
            name = value.partition(":")[0].strip()
            if name:
                names[name] = None
    return tuple(names)
