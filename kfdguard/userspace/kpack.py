"""Kernel packs: the ``.kpack`` archives of TheRock's split ROCm builds and the host files that point to them.

TheRock splits a HIP library's device code out of the host file: the host
``.so`` keeps a ``.hip_fatbin`` turned to SHT_NOBITS (no bytes in the file)
and gains a ``.rocm_kpack_ref`` section; the code for each architecture
family sits in ``.kpack`` archives beside it (``lib/.kpack/``). A scanner
that reads only ``.hip_fatbin`` finds no GPU code in such an install.

The format, as ROCm/rocm-kpack e348328 defines it (``python/rocm_kpack/kpack.py``
``PackedKernelArchive``, read back by ``runtime/src/archive.cpp`` and
``toc_parser.cpp``):

- a 16-byte header ``<4sIQ``: the magic ``KPAK``, the format version (1) and
  the offset of the table of contents;
- the blobs, from a 64-byte boundary;
- the table of contents, MessagePack, from its offset to the end of the file:
  ``format_version``, ``group_name``, ``gfx_arch_family``, ``gfx_arches``,
  ``compression_scheme`` and ``toc``, which maps ``"<binary>#<index>"`` to
  ``{gfx: {"type": "hsaco", "ordinal": n, "original_size": bytes}}``.

The host's reference (``python/rocm_kpack/elf/kpack_transform.py``
``add_kpack_ref_section``, read by ``runtime/src/loader.cpp``
``parse_hipk_metadata``) is a MessagePack map ``{"kpack_search_paths": [...],
"kernel_name": "..."}``. The loader resolves each search path against the
binary's directory (absolute paths as they are), expands ``@GFXARCH@`` to the
agent's architecture, and takes an archive only for the architectures its
``gfx_arches`` lists; the code object it loads is ``toc[kernel_name + "#" +
index][arch]``.

Only the table of contents is read, within TOC_LIMIT; the blobs never are.
"""

from __future__ import annotations

import functools
import itertools
import os
import struct

from kfdguard.record import dataclass
from kfdguard.userspace.elf import KPACK_REF as REF_SECTION
from kfdguard.userspace.elf import open_regular
from kfdguard.userspace.targets import parse_target

MAGIC = b"KPAK"
VERSION = 1
HEADER = struct.Struct("<4sIQ")
SUFFIX = ".kpack"
PLACEHOLDER = "@GFXARCH@"
# A table of contents lists every binary x architecture of one family; a whole ROCm
# build's fits in a few MiB. More than this is not read.
TOC_LIMIT = 16 << 20
# A reference is a few paths and a name.
REF_LIMIT = 64 << 10
MAX_ARCHES = 256
MAX_SEARCH_PATHS = 64
# Archives taken for one reference (an @GFXARCH@ pattern matches one per family).
MAX_ARCHIVES = 64
MAX_DIRECTORY = 4096  # names read of a directory an @GFXARCH@ path points into (one per architecture there)


class KpackError(ValueError):
    """A file that is not a kernel pack or a reference kfdguard can read; the message says why."""


@dataclass(frozen=True, slots=True)
class Kpack:
    group: str  # group_name: the build slice ("blas", "torch")
    family: str  # gfx_arch_family ("gfx110X")
    arches: tuple[str, ...]  # gfx_arches: what the loader finds the archive by
    # The table of contents: "<binary>#<index>" -> the architectures it has code for.
    toc: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def targets(self) -> tuple[str, ...]:
        """The architectures the loader can take code from: listed in gfx_arches and with code in the toc."""
        present = {arch for _, arches in self.toc for arch in arches}
        return tuple(sorted(a for a in self.arches if a in present))

    def targets_of(self, kernel_name: str) -> tuple[str, ...]:
        """The architectures of ``kernel_name``'s code objects (``<kernel_name>#<index>``) the loader can take."""
        present: set[str] = set()
        for key, arches in self.toc:
            name, _, index = key.rpartition("#")
            if name == kernel_name and index.isdigit():
                present.update(arches)
        return tuple(sorted(a for a in self.arches if a in present))


@dataclass(frozen=True, slots=True)
class KpackRef:
    kernel_name: str
    search_paths: tuple[str, ...]


def _unpack(data: bytes, what: str) -> object:
    """One MessagePack object from ``data``; what follows it is ignored, as the runtime's msgpack::unpack does."""
    import msgpack  # imported here: only a TheRock install's files need it

    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=True)
    except msgpack.ExtraData as extra:
        return extra.unpacked
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        # ValueError covers msgpack's FormatError, StackError and a truncated input; TypeError an
        # unhashable key; UnpackException (OutOfData) what older versions raise for a cut-off object.
        raise KpackError(f"{what}: not MessagePack ({type(exc).__name__}: {exc})") from None


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise KpackError(f"{what}: {type(value).__name__}, not a string")
    return value


def _arch_list(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise KpackError(f"gfx_arches: {type(value).__name__}, not a list")
    if len(value) > MAX_ARCHES:
        raise KpackError(f"gfx_arches: {len(value)} entries (at most {MAX_ARCHES})")
    # The loader keeps the strings of the list and skips anything else (toc_parser.cpp): so does this.
    return tuple(sorted({a for a in value if isinstance(a, str) and parse_target(a) is not None}))


def _toc(value: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise KpackError(f"toc: {type(value).__name__}, not a map")
    entries = []
    for key, arches in value.items():
        if not isinstance(key, str) or not isinstance(arches, dict):
            continue  # toc_parser.cpp skips a key that is not a string and a value that is not a map
        # Only architectures with an entry map count: toc_parser.cpp keeps no other.
        found = sorted(a for a, entry in arches.items() if isinstance(entry, dict) and parse_target(str(a)))
        entries.append((key, tuple(found)))
    return tuple(sorted(entries))


def parse_toc(data: bytes) -> Kpack:
    toc = _unpack(data, "table of contents")
    if not isinstance(toc, dict):
        raise KpackError(f"table of contents: {type(toc).__name__}, not a map")
    version = toc.get("format_version", VERSION)
    if version != VERSION:
        raise KpackError(f"table of contents format_version {version!r} (known: {VERSION})")
    return Kpack(
        _str(toc.get("group_name", ""), "group_name"),
        _str(toc.get("gfx_arch_family", ""), "gfx_arch_family"),
        _arch_list(toc.get("gfx_arches", [])),
        _toc(toc.get("toc", {})),
    )


def read_kpack(fd: int, size: int) -> Kpack:
    """The archive open at ``fd`` (``size`` bytes): its header checked, its table of contents read."""
    head = os.pread(fd, HEADER.size, 0)
    if len(head) < HEADER.size:
        raise KpackError(f"{size} bytes: shorter than a kpack header ({HEADER.size})")
    magic, version, toc_offset = HEADER.unpack(head)
    if magic != MAGIC:
        raise KpackError(f"not a kpack archive (magic {magic!r}, not {MAGIC!r})")
    if version != VERSION:
        raise KpackError(f"kpack format version {version} (known: {VERSION})")
    if not HEADER.size <= toc_offset < size:
        raise KpackError(f"table of contents at 0x{toc_offset:x}, outside the file's 0x{size:x} bytes")
    if size - toc_offset > TOC_LIMIT:
        raise KpackError(f"table of contents of {size - toc_offset} bytes (at most {TOC_LIMIT})")
    return parse_toc(os.pread(fd, size - toc_offset, toc_offset))


def parse_ref(data: bytes) -> KpackRef:
    """A ``.rocm_kpack_ref`` section's bytes; both fields required, as the loader requires them."""
    ref = _unpack(data, REF_SECTION)
    if not isinstance(ref, dict):
        raise KpackError(f"{REF_SECTION}: {type(ref).__name__}, not a map")
    name = ref.get("kernel_name")
    paths = ref.get("kpack_search_paths")
    if not isinstance(name, str) or not name:
        raise KpackError(f"{REF_SECTION}: no kernel_name")
    if not isinstance(paths, list) or not any(isinstance(p, str) and p for p in paths):
        raise KpackError(f"{REF_SECTION}: no kpack_search_paths")
    if len(paths) > MAX_SEARCH_PATHS:
        raise KpackError(f"{REF_SECTION}: {len(paths)} search paths (at most {MAX_SEARCH_PATHS})")
    return KpackRef(name, tuple(p for p in paths if isinstance(p, str) and p and "\0" not in p))


@functools.lru_cache(maxsize=64)
def _archive_at(path: str, identity: tuple[int, int, int, int]) -> Kpack | str:
    """The archive at ``path`` (its identity: device, inode, size, mtime), or why it cannot be read.
    Cached: every library of a component points to the same few archives."""
    del identity  # part of the cache key only: a replaced file is read again
    try:
        fd, size = open_regular(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        return read_kpack(fd, size)
    except KpackError as exc:
        return str(exc)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)


def load_archive(path: str) -> Kpack | str:
    """The archive at ``path``, or why not (a message)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or str(exc)
    return _archive_at(path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


def candidates(binary: str, search_path: str) -> list[str]:
    """The archive files a search path names for the binary at ``binary``, as the loader resolves it:
    relative to the binary's directory; ``@GFXARCH@`` in the file name matched against the files there
    (the loader tries it with each agent's architecture; here every architecture present is one)."""
    resolved = search_path if search_path.startswith("/") else os.path.join(os.path.dirname(binary), search_path)
    resolved = os.path.normpath(resolved)
    directory, name = os.path.split(resolved)
    if PLACEHOLDER not in resolved:
        return [resolved] if os.path.isfile(resolved) else []
    if PLACEHOLDER in directory:
        return []  # the build tools put the placeholder in the file name only
    head, _, tail = name.partition(PLACEHOLDER)
    try:
        # Bounded as every directory read of the scan is: a hostile directory of millions of names
        # (the library's own, anyone's who can write next to it) costs at most MAX_DIRECTORY of them.
        with os.scandir(directory) as listing:
            names = sorted(itertools.islice((e.name for e in listing), MAX_DIRECTORY))
    except OSError:
        return []
    found = []
    for entry in names:
        middle = entry[len(head) : len(entry) - len(tail)] if tail else entry[len(head) :]
        if entry.startswith(head) and entry.endswith(tail) and parse_target(middle) is not None:
            found.append(os.path.join(directory, entry))
    return found


@dataclass(frozen=True, slots=True)
class Resolved:
    targets: tuple[str, ...]
    archives: tuple[str, ...]  # the archive files found
    problems: tuple[str, ...]  # archives found but not readable, each with why


def resolve(binary: str, ref: KpackRef) -> Resolved:
    """The targets the loader can find for ``binary``'s code among the archives its reference names."""
    targets: set[str] = set()
    archives: list[str] = []
    problems: list[str] = []
    for search_path in ref.search_paths:
        for path in candidates(binary, search_path):
            if path in archives or len(archives) >= MAX_ARCHIVES:
                continue
            archives.append(path)
            archive = load_archive(path)
            if isinstance(archive, str):
                problems.append(f"{path}: {archive}")
            else:
                targets.update(archive.targets_of(ref.kernel_name))
    return Resolved(tuple(sorted(targets)), tuple(archives), tuple(problems))
