"""clang offload bundles, plain and compressed, read from a bounded region of a file.

Layouts from clang/lib/Driver/OffloadBundler.cpp (``BinaryFileHandler`` and
``CompressedOffloadBundle``), all integers little-endian:

* plain: ``__CLANG_OFFLOAD_BUNDLE__``, u64 entry count, then per entry u64
  offset (from the bundle's start, never 0), u64 size, u64 id length and the
  id; the code objects follow.
* compressed: ``CCOB``, u16 version, u16 method (llvm::compression::Format:
  zlib 0, zstd 1), then v1: u32 uncompressed size, u64 hash (20 bytes; the
  bundle runs to the next ``CCOB`` or the region's end); v2: u32 total size,
  u32 uncompressed size, u64 hash (24 bytes); v3: u64 total size, u64
  uncompressed size, u64 hash (32 bytes). The compressed data is a plain
  bundle.

A ``.hip_fatbin`` section holds one bundle per translation unit, one after
the other (page-aligned in real libraries). Only headers are read: of a
compressed bundle, just enough is decompressed to hold the entry table
(``HEADER_LIMIT``), so neither a 450 MB library nor a decompression bomb
costs more than a few small reads and a bounded buffer. Every malformation is
a ``BundleError`` that says where and what.
"""

from __future__ import annotations

import itertools
import re
import struct

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable
    from typing import Any

    Buffer = bytes | mmap.mmap

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CMAGIC = b"CCOB"
METHODS = {0: "zlib", 1: "zstd"}
HEADER_SIZES = {1: 20, 2: 24, 3: 32}
# Bounds. Real bundles have one entry per target plus the host (a dozen);
# ids are ~50 bytes; rocBLAS 5.5's .hip_fatbin holds 65 bundles, a PyTorch
# library a few thousand.
MAX_ENTRIES = 4096
MAX_ID = 1024
MAX_BUNDLES = 65536
# Decompressed bytes a compressed bundle's entry table may take.
HEADER_LIMIT = 1 << 20
_CHUNK = 1 << 16
_PRINTABLE = re.compile(rb"[\x21-\x7e]+")


class BundleError(ValueError):
    """A malformed offload bundle; the message says where and what."""


@dataclass(frozen=True, slots=True)
class BundleEntry:
    id: str
    offset: int  # from the start of the (uncompressed) bundle
    size: int


@dataclass(frozen=True, slots=True)
class Bundle:
    offset: int  # from the start of the region (the section)
    size: int  # bytes it occupies in the region
    entries: tuple[BundleEntry, ...]
    compressed: bool = False
    version: int | None = None  # CCOB header version
    method: str | None = None  # zlib, zstd
    uncompressed_size: int | None = None


def _u64(data: bytes, pos: int) -> int:
    value: int = struct.unpack_from("<Q", data, pos)[0]
    return value


def _entry_count(head: bytes, total: int, where: str) -> int:
    """The entry count of a plain bundle's header, refused when it is beyond MAX_ENTRIES or the bundle's size."""
    if len(head) < len(MAGIC) + 8:
        raise BundleError(f"{where}: truncated header ({len(head)} bytes)")
    if head[: len(MAGIC)] != MAGIC:
        raise BundleError(f"{where}: no {MAGIC.decode()} magic")
    count = _u64(head, len(MAGIC))
    if count > MAX_ENTRIES:
        raise BundleError(f"{where}: {count} entries (more than {MAX_ENTRIES})")
    # Each entry takes at least 24 bytes of table: a count the bundle cannot hold is refused before any work.
    if len(MAGIC) + 8 + 24 * count > total:
        raise BundleError(f"{where}: {count} entries do not fit in its {total} bytes")
    return count


def _holding(get: Callable[[int], bytes], data: bytes, need: int, more: int, error: str) -> bytes:
    """``data`` if it holds ``need`` bytes, else ``get(need + more)``; ``error`` when even that is shorter."""
    if len(data) >= need:
        return data
    data = get(need + more)
    if len(data) < need:
        raise BundleError(error)
    return data


def _read_entry(
    get: Callable[[int], bytes], data: bytes, pos: int, index: int, where: str
) -> tuple[bytes, int, int, int, str]:
    """The entry at ``pos``: the data read so far, the position after it, its offset, size and id."""
    data = _holding(get, data, pos + 24, MAX_ID, f"{where}: entry {index}: truncated table at 0x{pos:x}")
    offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
    pos += 24
    if id_len == 0 or id_len > MAX_ID:
        raise BundleError(f"{where}: entry {index}: id length {id_len} (1 to {MAX_ID})")
    error = f"{where}: entry {index}: id runs past the end of the data at 0x{pos:x}"
    data = _holding(get, data, pos + id_len, 24 + MAX_ID, error)
    raw = bytes(data[pos : pos + id_len])
    pos += id_len
    if not _PRINTABLE.fullmatch(raw):
        raise BundleError(f"{where}: entry {index}: id is not printable ASCII: {raw[:40]!r}")
    return data, pos, offset, size, raw.decode("ascii")


def _check_spans(entries: list[BundleEntry], table_end: int, where: str) -> None:
    """No entry with data starts inside the table, and no two overlap."""
    spans = sorted((e.offset, e.offset + e.size, i) for i, e in enumerate(entries) if e.size)
    for start, _, index in spans:
        if start < table_end:
            raise BundleError(f"{where}: entry {index} ({entries[index].id}): offset 0x{start:x} inside the table")
    for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
        if start_b < end_a:
            raise BundleError(f"{where}: entries {a} ({entries[a].id}) and {b} ({entries[b].id}) overlap")


def parse_table(get: Callable[[int], bytes], total: int, where: str) -> tuple[tuple[BundleEntry, ...], int]:
    """The entry table of a plain bundle of ``total`` bytes; ``get(n)`` returns its first n bytes (or fewer).

    Returns the entries and the end of the table.
    """
    data = get(len(MAGIC) + 8)
    count = _entry_count(data, total, where)
    entries: list[BundleEntry] = []
    seen: dict[str, int] = {}
    pos = len(MAGIC) + 8
    for index in range(count):
        data, pos, offset, size, ident = _read_entry(get, data, pos, index, where)
        if ident in seen:
            raise BundleError(f"{where}: entry {index}: id {ident} repeats entry {seen[ident]}")
        seen[ident] = index
        if offset == 0 or offset + size > total:
            raise BundleError(
                f"{where}: entry {index} ({ident}): offset 0x{offset:x} size 0x{size:x} beyond the bundle's "
                f"0x{total:x} bytes"
            )
        entries.append(BundleEntry(ident, offset, size))
    _check_spans(entries, pos, where)
    return tuple(entries), pos


class _Prefix:
    """The first bytes of a compressed stream, decompressed on demand up to HEADER_LIMIT."""

    def __init__(self, method: str, data: Buffer, start: int, end: int, where: str) -> None:
        import zlib

        self.where = where
        self.out = b""
        self.done = False
        self.data, self.pos, self.end = data, start, end
        self._zlib: zlib._Decompress | None = None
        self._reader: Any = None
        self._view: memoryview | None = None
        self._errors: tuple[type[Exception], ...] = (zlib.error,)
        if method == "zlib":
            self._zlib = zlib.decompressobj()
        else:
            try:
                import zstandard
            except ImportError:
                raise BundleError(f"{where}: zstd-compressed, and python3-zstandard is not installed") from None
            self._errors = (zstandard.ZstdError,)
            # A view, not a copy: the compressed data of a big bundle stays in the page cache.
            self._view = memoryview(data)[start:end]
            self._reader = zstandard.ZstdDecompressor().stream_reader(self._view, read_size=_CHUNK)

    def close(self) -> None:
        # The view must be gone before the caller can close its mmap.
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._view is not None:
            self._view.release()
            self._view = None

    def __call__(self, n: int) -> bytes:
        n = min(n, HEADER_LIMIT)
        try:
            while len(self.out) < n and not self.done:
                if self._reader is not None:
                    chunk = self._reader.read(min(_CHUNK, n - len(self.out)))
                    if not chunk:
                        self.done = True
                    self.out += chunk
                else:
                    assert self._zlib is not None
                    tail = self._zlib.unconsumed_tail
                    if not tail:
                        if self.pos >= self.end:
                            self.done = True
                            break
                        tail = self.data[self.pos : min(self.end, self.pos + _CHUNK)]
                        self.pos += len(tail)
                    self.out += self._zlib.decompress(tail, n - len(self.out))
                    if self._zlib.eof:
                        self.done = True
        except self._errors as exc:
            raise BundleError(f"{self.where}: corrupt compressed data: {exc}") from None
        return self.out


def parse_compressed(data: Buffer, start: int, end: int, where: str) -> Bundle:
    """The CCOB bundle at ``start`` in ``data[:end]``."""
    fixed = data[start : start + 8]
    if len(fixed) < 8 or fixed[:4] != CMAGIC:
        raise BundleError(f"{where}: truncated compressed header")
    version, method_id = struct.unpack_from("<HH", fixed, 4)
    header = HEADER_SIZES.get(version)
    if header is None:
        raise BundleError(f"{where}: compressed bundle version {version} (known: 1, 2, 3)")
    method = METHODS.get(method_id)
    if method is None:
        raise BundleError(f"{where}: compression method {method_id} (known: 0 zlib, 1 zstd)")
    raw = data[start : start + header]
    if len(raw) < header:
        raise BundleError(f"{where}: truncated version {version} header ({len(raw)} of {header} bytes)")
    if version == 1:
        (uncompressed,) = struct.unpack_from("<I", raw, 8)
        found = data.find(CMAGIC, start + 4, end)
        total = (found if found >= 0 else end) - start
    elif version == 2:
        total, uncompressed = struct.unpack_from("<II", raw, 8)
    else:
        total, uncompressed = struct.unpack_from("<QQ", raw, 8)
    if total < header or start + total > end:
        room = end - start
        raise BundleError(f"{where}: total size 0x{total:x} outside the header and the remaining 0x{room:x} bytes")
    prefix = _Prefix(method, data, start + header, start + total, where)
    try:
        entries, _ = parse_table(prefix, uncompressed, f"{where} (decompressed)")
    except BundleError as exc:
        if len(prefix.out) >= HEADER_LIMIT:
            raise BundleError(f"{where}: entry table larger than {HEADER_LIMIT} bytes decompressed") from exc
        raise
    finally:
        prefix.close()
    return Bundle(start, total, entries, True, version, method, uncompressed)


def parse_plain(data: Buffer, start: int, end: int, where: str) -> Bundle:
    total = end - start

    def get(n: int) -> bytes:
        return data[start : start + min(n, total)]

    entries, table_end = parse_table(get, total, where)
    extent = max([table_end, *(e.offset + e.size for e in entries)])
    return Bundle(start, extent, entries)


def read_bundles(data: Buffer, start: int, end: int, what: str = "bundle") -> tuple[Bundle, ...]:
    """Every bundle in ``data[start:end]`` (a section), the first at ``start``."""
    bundles: list[Bundle] = []
    pos = start
    while pos < end:
        if len(bundles) >= MAX_BUNDLES:
            raise BundleError(f"{what}: more than {MAX_BUNDLES} bundles")
        where = f"{what} at 0x{pos - start:x}"
        head = data[pos : pos + len(MAGIC)]
        if head.startswith(CMAGIC):
            bundle = parse_compressed(data, pos, end, where)
        elif head == MAGIC:
            bundle = parse_plain(data, pos, end, where)
        else:
            raise BundleError(f"{where}: neither {MAGIC.decode()} nor CCOB: {bytes(head[:8])!r}")
        bundles.append(bundle)
        pos = _skip_padding(data, pos + max(bundle.size, 4), end)
    return tuple(bundles)


def _skip_padding(data: Buffer, pos: int, end: int) -> int:
    """The first non-zero byte at or after ``pos``: bundles are padded with zeros to their alignment.

    Searching for the next magic instead (as clang's listBundleIDs does) would
    scan the whole rest of the section for the kind of magic that is absent,
    once per bundle: 9 s on rocBLAS's 437 MB .hip_fatbin.
    """
    step = 4096  # a page first: real padding is shorter than the alignment
    while pos < end:
        chunk = data[pos : min(end, pos + step)]
        rest = chunk.lstrip(b"\0")
        if rest:
            return pos + len(chunk) - len(rest)
        pos += len(chunk)
        step = _CHUNK
    return end
