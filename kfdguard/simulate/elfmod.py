"""Fake kernel modules that real kmod accepts.

Each file is a minimal ELF64 relocatable object with a ``.modinfo`` section
(name, vermagic, depends, parameters, aliases) and a symbol table: exports as
``__crc_<sym>`` (what modversioned kernels emit) and imports as undefined
symbols, which is what depmod reads to compute modules.dep. So ``depmod``, ``modinfo`` and
``modprobe --show-depends`` from the host's kmod work on a simulated tree.
"""

from __future__ import annotations

import struct

from kfdguard.record import dataclass, field

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB = 1, 2, 3
STB_GLOBAL, STT_NOTYPE = 1, 0
SHN_ABS = 0xFFF1
ZSTD_BLOCK = 128 * 1024


@dataclass(frozen=True)
class FakeModule:
    name: str
    vermagic: str
    depends: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()  # (name, type) as modinfo's parmtype
    aliases: tuple[str, ...] = ()
    firmware: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    extra: tuple[tuple[str, str], ...] = field(default=())  # version, description...


def _strtab(names: list[str]) -> tuple[bytes, dict[str, int]]:
    blob = bytearray(b"\0")
    offsets: dict[str, int] = {"": 0}
    for name in names:
        if name not in offsets:
            offsets[name] = len(blob)
            blob += name.encode() + b"\0"
    return bytes(blob), offsets


def _crc(symbol: str) -> int:
    import zlib

    return zlib.crc32(symbol.encode())


def build_elf(module: FakeModule) -> bytes:
    info = [f"name={module.name}", f"vermagic={module.vermagic}", f"depends={','.join(module.depends)}"]
    info += [f"parmtype={name}:{kind}" for name, kind in module.params]
    info += [f"alias={alias}" for alias in module.aliases]
    info += [f"firmware={fw}" for fw in module.firmware]
    info += [f"{key}={value}" for key, value in module.extra]
    modinfo = b"".join(item.encode() + b"\0" for item in info)
    this_module = module.name.encode().ljust(64, b"\0")
    ksymtab = b"\0" * (16 * max(1, len(module.exports)))

    symbols = [f"__crc_{s}" for s in module.exports] + list(module.imports)
    strtab, str_off = _strtab(symbols)
    section_names = [".modinfo", ".gnu.linkonce.this_module", "__ksymtab", ".symtab", ".strtab", ".shstrtab"]
    shstrtab, sh_off = _strtab(section_names)
    symtab = bytearray(_SYM.pack(0, 0, 0, 0, 0, 0))
    for sym in module.exports:
        crc = _crc(sym)
        symtab += _SYM.pack(str_off[f"__crc_{sym}"], STB_GLOBAL << 4 | STT_NOTYPE, 0, SHN_ABS, crc, 0)
    for sym in module.imports:
        symtab += _SYM.pack(str_off[sym], STB_GLOBAL << 4 | STT_NOTYPE, 0, 0, 0, 0)

    # (name, type, data, link, info, entsize)
    sections: list[tuple[str, int, bytes, int, int, int]] = [
        (".modinfo", SHT_PROGBITS, modinfo, 0, 0, 0),
        (".gnu.linkonce.this_module", SHT_PROGBITS, this_module, 0, 0, 0),
        ("__ksymtab", SHT_PROGBITS, ksymtab, 0, 0, 0),
        (".symtab", SHT_SYMTAB, bytes(symtab), 5, 1, _SYM.size),
        (".strtab", SHT_STRTAB, strtab, 0, 0, 0),
        (".shstrtab", SHT_STRTAB, shstrtab, 0, 0, 0),
    ]
    body = bytearray()
    offsets = []
    for _, _, data, _, _, _ in sections:
        while (_EHDR.size + len(body)) % 8:
            body += b"\0"
        offsets.append(_EHDR.size + len(body))
        body += data
    while (_EHDR.size + len(body)) % 8:
        body += b"\0"
    shoff = _EHDR.size + len(body)
    headers = bytearray(_SHDR.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    for (name, kind, data, link, sinfo, entsize), offset in zip(sections, offsets, strict=True):
        headers += _SHDR.pack(sh_off[name], kind, 0, 0, offset, len(data), link, sinfo, 8, entsize)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = _EHDR.pack(ident, 1, 62, 1, 0, 0, shoff, 0, _EHDR.size, 0, 0, _SHDR.size, len(sections) + 1, 6)
    return header + bytes(body) + bytes(headers)


def zstd_store(data: bytes) -> bytes:
    """A valid zstd frame holding ``data`` in raw (stored) blocks.

    Real modules are compressed; for a fake one only the container matters,
    and writing raw blocks needs no zstd library.
    """
    frame = bytearray(b"\x28\xb5\x2f\xfd")
    # Frame header: single segment, 8-byte content size, no checksum, no dictionary.
    frame.append(0b11100000)
    frame += struct.pack("<Q", len(data))
    chunks = [data[i : i + ZSTD_BLOCK] for i in range(0, len(data), ZSTD_BLOCK)] or [b""]
    for i, chunk in enumerate(chunks):
        last = 1 if i == len(chunks) - 1 else 0
        header = last | (0 << 1) | (len(chunk) << 3)
        frame += header.to_bytes(3, "little")
        frame += chunk
    return bytes(frame)


def encode(data: bytes, compression: str) -> bytes:
    if compression == "zst":
        return zstd_store(data)
    if compression == "xz":
        import lzma

        # Kernel modules use CRC32 checks; kmod rejects nothing else, but match it.
        return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    return data


def suffix(compression: str) -> str:
    return {"zst": ".ko.zst", "xz": ".ko.xz"}.get(compression, ".ko")
