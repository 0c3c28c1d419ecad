"""The offload-bundle reader on real ELF files built here, and on hostile input."""

from __future__ import annotations

import os
import struct
import subprocess
import tracemalloc
import zlib
from pathlib import Path

import pytest
import zstandard

from kfdguard.userspace import bundle as B
from kfdguard.userspace.bundle import BundleError, read_bundles
from kfdguard.userspace.scan import scan_file, scan_path
from tests.conftest import tool

HOST = "host-x86_64-unknown-linux-gnu-"


def plain(entries: list[tuple[str, bytes]], *, align: int = 8) -> bytes:
    """A plain bundle as clang-offload-bundler writes it: table, then each entry's code object."""
    table = len(B.MAGIC) + 8 + sum(24 + len(i) for i, _ in entries)
    pos = -(-table // align) * align
    head = B.MAGIC + struct.pack("<Q", len(entries))
    body = b""
    for ident, payload in entries:
        offset = pos + len(body)
        head += struct.pack("<QQQ", offset, len(payload), len(ident)) + ident.encode()
        body += payload + b"\0" * (-len(payload) % align)
    return head + b"\0" * (pos - len(head)) + body


def ccob(data: bytes, *, version: int = 3, method: str = "zstd", claimed: int | None = None) -> bytes:
    packed = zstandard.ZstdCompressor().compress(data) if method == "zstd" else zlib.compress(data)
    code = {"zlib": 0, "zstd": 1}[method]
    size = len(data) if claimed is None else claimed
    if version == 1:
        return B.CMAGIC + struct.pack("<HHIQ", 1, code, size, 0) + packed
    if version == 2:
        return B.CMAGIC + struct.pack("<HHIIQ", 2, code, 24 + len(packed), size, 0) + packed
    return B.CMAGIC + struct.pack("<HHQQQ", 3, code, 32 + len(packed), size, 0) + packed


def section(*bundles: bytes, align: int = 4096) -> bytes:
    out = b""
    for b in bundles:
        out += b + b"\0" * (-len(b) % align)
    return out


def code_object(tag: str) -> bytes:
    # Stands in for an AMDGPU ELF: the reader never looks inside entries.
    return b"\x7fELF" + tag.encode() * 20


def elf_with(tmp_path: Path, fatbin: bytes, name: str = "libtoy.so") -> Path:
    """A real shared library from gcc with ``fatbin`` as its .hip_fatbin section (objcopy adds it)."""
    src = tmp_path / "toy.c"
    src.write_text("int toy(void) { return 42; }\n")
    lib = tmp_path / name
    subprocess.run([tool("gcc"), "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    blob = tmp_path / "fatbin.bin"
    blob.write_bytes(fatbin)
    subprocess.run(
        [tool("objcopy"), "--add-section", f".hip_fatbin={blob}", "--set-section-flags", ".hip_fatbin=alloc,readonly",
         "--set-section-alignment", ".hip_fatbin=4096", str(lib)],
        check=True, timeout=60,
    )  # fmt: skip
    return lib


TWO_TARGETS = [
    (HOST, b""),
    ("hipv4-amdgcn-amd-amdhsa--gfx1100", code_object("a")),
    ("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", code_object("b")),
]


def test_plain_bundle_entries_as_written() -> None:
    data = plain(TWO_TARGETS)
    (b,) = read_bundles(data, 0, len(data))
    assert [e.id for e in b.entries] == [i for i, _ in TWO_TARGETS]
    for entry, (_, payload) in zip(b.entries, TWO_TARGETS, strict=True):
        assert data[entry.offset : entry.offset + entry.size] == payload
    assert not b.compressed


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("method", ["zlib", "zstd"])
def test_compressed_bundle_every_version_and_method(version: int, method: str) -> None:
    inner = plain(TWO_TARGETS)
    data = ccob(inner, version=version, method=method)
    (b,) = read_bundles(data, 0, len(data))
    assert b.compressed and b.version == version and b.method == method
    assert b.uncompressed_size == len(inner)
    assert [e.id for e in b.entries] == [i for i, _ in TWO_TARGETS]


def test_real_elf_with_plain_and_compressed_bundles(tmp_path: Path) -> None:
    fatbin = section(
        plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx1030", code_object("c"))]),
        ccob(plain([(HOST, b""), ("hip-amdgcn-amd-amdhsa--gfx1100", code_object("d"))]), version=2, method="zlib"),
        ccob(plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx11-generic", code_object("e"))]), version=3),
    )
    lib = elf_with(tmp_path, fatbin)
    result = scan_file(str(lib), explicit=True)
    assert result is not None and result.error is None
    assert result.targets == ("gfx1030", "gfx11-generic", "gfx1100")
    assert (result.bundles, result.compressed) == (3, 2)
    readelf = subprocess.run([tool("readelf"), "-SW", str(lib)], capture_output=True, text=True, check=True).stdout
    assert ".hip_fatbin" in readelf


def test_elf_without_fatbin_and_not_elf(tmp_path: Path) -> None:
    src = tmp_path / "plain.c"
    src.write_text("int f(void) { return 1; }\n")
    lib = tmp_path / "libplain.so"
    subprocess.run([tool("gcc"), "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    result = scan_file(str(lib), explicit=True)
    assert result is not None and result.targets == () and "no .hip_fatbin" in (result.error or "")
    text = tmp_path / "libnot.so"
    text.write_text("INPUT(-lfoo)\n")  # a linker script named like a library
    result = scan_file(str(text), explicit=True)
    assert result is not None and result.error == "not an ELF file"
    assert scan_file(str(text)) is None  # inside a directory walk it is simply not a HIP file


# --- hostile bundles ---------------------------------------------------------------------------


def test_every_truncation_is_a_bundle_error() -> None:
    data = plain(TWO_TARGETS)
    for cut in range(len(data)):
        with pytest.raises(BundleError):
            read_bundles(data[:cut] if cut else b"x", 0, max(cut, 1))


def test_huge_count_refused_before_work() -> None:
    data = B.MAGIC + struct.pack("<Q", 2**63) + b"\0" * 64
    with pytest.raises(BundleError, match=r"9223372036854775808 entries \(more than 4096\)"):
        read_bundles(data, 0, len(data))
    data = B.MAGIC + struct.pack("<Q", 1000) + b"\0" * 64
    with pytest.raises(BundleError, match="1000 entries do not fit"):
        read_bundles(data, 0, len(data))


def _entry_table(entries: list[tuple[int, int, str]], total: int) -> bytes:
    head = B.MAGIC + struct.pack("<Q", len(entries))
    for offset, size, ident in entries:
        head += struct.pack("<QQQ", offset, size, len(ident)) + ident.encode()
    return head + b"\0" * (total - len(head))


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([(0x200, 0x10_0000, "hip-amdgcn-amd-amdhsa--gfx1100")], r"entry 0 \(hip-amdgcn-amd-amdhsa--gfx1100\): offset 0x200 size 0x100000 beyond the bundle's 0x400 bytes"),
        ([(0, 0, HOST)], "offset 0x0"),
        ([(0x100, 0x40, "hip-amdgcn-amd-amdhsa--gfx1100"), (0x120, 0x40, "hip-amdgcn-amd-amdhsa--gfx1030")], "entries 0 .* and 1 .* overlap"),
        ([(0x10, 0x40, "hip-amdgcn-amd-amdhsa--gfx1100")], "inside the table"),
        ([(0x100, 0x10, HOST), (0x200, 0x10, HOST)], "repeats entry 0"),
        ([(0x100, 0x10, "hip-amdgcn\x1b[31m")], "not printable ASCII"),
        ([(2**64 - 1, 2, HOST)], "beyond the bundle"),
    ],
)  # fmt: skip
def test_bad_entries(entries: list[tuple[int, int, str]], message: str) -> None:
    data = _entry_table(entries, 0x400)
    with pytest.raises(BundleError, match=message):
        read_bundles(data, 0, len(data))


def test_id_length_bounds() -> None:
    data = B.MAGIC + struct.pack("<QQQQ", 1, 0x100, 0, 2**40) + b"\0" * 0x200
    with pytest.raises(BundleError, match=r"id length 1099511627776 \(1 to 1024\)"):
        read_bundles(data, 0, len(data))


def test_garbage_between_bundles_named() -> None:
    data = plain(TWO_TARGETS) + b"\0" * 100 + b"JUNKJUNK" + b"\0" * 100
    with pytest.raises(BundleError, match=r"at 0x[0-9a-f]+: neither __CLANG_OFFLOAD_BUNDLE__ nor CCOB: b'JUNKJUNK'"):
        read_bundles(data, 0, len(data))


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (B.CMAGIC + struct.pack("<HH", 4, 1) + b"\0" * 40, "version 4"),
        (B.CMAGIC + struct.pack("<HH", 3, 7) + b"\0" * 40, "compression method 7"),
        (B.CMAGIC + struct.pack("<HH", 3, 1) + b"\0" * 4, "truncated version 3 header"),
        (B.CMAGIC + struct.pack("<HHQQQ", 3, 1, 2**40, 100, 0) + b"\0" * 8, "total size 0x10000000000 outside"),
        (B.CMAGIC + struct.pack("<HHIIQ", 2, 0, 24 + 16, 100, 0) + b"not zlib data!!!", "corrupt compressed data"),
        (B.CMAGIC + struct.pack("<HHIIQ", 2, 1, 24 + 16, 100, 0) + b"not zstd data!!!", "corrupt compressed data"),
    ],
)
def test_bad_compressed_headers(header: bytes, message: str) -> None:
    with pytest.raises(BundleError, match=message):
        read_bundles(header, 0, len(header))


def _bomb(method: str, zeros: int) -> bytes:
    """A compressed bundle whose entry table is fine and whose data decompresses to ``zeros`` more bytes."""
    table = plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"x" * 64)])
    if method == "zstd":
        compressor = zstandard.ZstdCompressor(level=1).compressobj()
        packed = compressor.compress(table)
        chunk = b"\0" * (1 << 24)
        for _ in range(zeros >> 24):
            packed += compressor.compress(chunk)
        packed += compressor.flush()
        code = 1
    else:
        z = zlib.compressobj(1)
        packed = z.compress(table)
        chunk = b"\0" * (1 << 24)
        for _ in range(zeros >> 24):
            packed += z.compress(chunk)
        packed += z.flush()
        code = 0
    total = len(table) + zeros
    return B.CMAGIC + struct.pack("<HHQQQ", 3, code, 32 + len(packed), total, 0) + packed


@pytest.mark.parametrize("method", ["zstd", "zlib"])
def test_decompression_bomb_costs_a_bounded_buffer(method: str) -> None:
    # Zeros behind a valid table: 1 GiB for zstd; zlib (at most ~1000:1, and slower) gets 256 MiB.
    data = _bomb(method, 1 << 30 if method == "zstd" else 1 << 28)
    assert len(data) < 8 << 20  # zlib stops near 1000:1, zstd goes much further
    tracemalloc.start()
    try:
        (b,) = read_bundles(data, 0, len(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert b.uncompressed_size == (1 << 30 if method == "zstd" else 1 << 28) + len(
        plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"x" * 64)])
    )
    assert [e.id for e in b.entries][1] == "hipv4-amdgcn-amd-amdhsa--gfx1100"
    assert peak < 4 * B._CHUNK + (1 << 20), f"peak {peak} bytes while reading a bomb"


def test_entry_table_bigger_than_the_limit() -> None:
    # 4096 entries of 1000-byte ids: a 4 MiB table, more than HEADER_LIMIT decompressed.
    ids = [f"hipv4-amdgcn-amd-amdhsa--gfx1100:xnack-{'x' * 950}{i:05d}" for i in range(4096)]
    head = B.MAGIC + struct.pack("<Q", len(ids))
    for ident in ids:
        head += struct.pack("<QQQ", 1 << 24, 0, len(ident)) + ident.encode()
    data = ccob(head, claimed=1 << 32)
    with pytest.raises(BundleError, match="entry table larger than 1048576 bytes decompressed"):
        read_bundles(data, 0, len(data))


# --- hostile files ---------------------------------------------------------------------------


def test_fifo_symlink_loop_and_device(tmp_path: Path) -> None:
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    loop = tmp_path / "libloop.so"
    loop.symlink_to(tmp_path / "libloop2.so")
    (tmp_path / "libloop2.so").symlink_to(loop)
    result = scan_path(str(fifo))
    assert result.error == "not a regular file or directory"
    result = scan_path(str(loop))
    assert result.kind == "unreadable" and "symbolic links" in (result.error or "")
    assert scan_path("/dev/zero").error == "not a regular file or directory"
    # The same names inside a directory are skipped, and the walk ends.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to(tmp_path)  # a directory loop
    tree = scan_path(str(tmp_path))
    assert tree.kind == "directory" and tree.files == () and tree.error is None


def test_section_beyond_the_file_and_truncated_elf(tmp_path: Path) -> None:
    lib = elf_with(tmp_path, section(plain(TWO_TARGETS)))
    data = lib.read_bytes()
    short = tmp_path / "libshort.so"
    for cut in (3, 16, 64, len(data) // 2, len(data) - 1):
        short.write_bytes(data[:cut])
        result = scan_file(str(short), explicit=True)
        assert result is not None and result.error, cut
        assert result.targets == ()
