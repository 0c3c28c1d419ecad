"""Which gfx targets a file, a directory or a wheel carries code for.

Three kinds of evidence, the first two as ``roc-obj-ls`` and ollama's discovery use them:

* the offload bundles in an ELF file's ``.hip_fatbin`` (HIP programs and
  libraries: librocblas.so, libggml-hip.so, libtorch_hip.so);
* TheRock's kernel packs (kfdguard/userspace/kpack.py): a ``.kpack`` archive's
  table of contents, and for a split host library (``.rocm_kpack_ref``) the
  archives its reference names, resolved as ROCm's loader resolves them;
* the file names of libraries that keep their code objects outside ELF
  files, one file per target (rocBLAS/hipBLASLt/Tensile:
  ``TensileLibrary_lazy_gfx1030.dat``, ``TensileLibrary_gfx1100.co``,
  ``Kernels.so-000-gfx90a-xnack-.hsaco``).

Everything is bounded: directories by depth and entry count, files by what
they claim (only section headers and bundle tables are read, through mmap),
zip members by size. A file that cannot be read gives an error in its
result, never an exception.
"""

from __future__ import annotations

import mmap
import os
import stat

from kfdguard.record import dataclass
from kfdguard.userspace.bundle import BundleError, read_bundles
from kfdguard.userspace.elf import ElfError, Section, hip_sections, is_elf, open_regular
from kfdguard.userspace.kpack import REF_LIMIT, SUFFIX, KpackError, parse_ref, read_kpack, resolve
from kfdguard.userspace.targets import parse_entry_id, targets_in_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    import zipfile

MAX_DEPTH = 8
MAX_ENTRIES = 50_000
MAX_MEMBERS = 200_000
MEMBER_LIMIT = 256 << 20
# File names whose targets are in the name (one code object file per target).
NAMED_SUFFIXES = (".dat", ".co", ".hsaco", ".yaml", ".msgpack")


@dataclass(frozen=True, slots=True)
class FileScan:
    path: str
    # "bundles" (offload bundles in .hip_fatbin), "name" (the file name) or "kpack" (a kernel pack's
    # table of contents, or the packs a split library's reference leads to)
    source: str
    targets: tuple[str, ...]  # target ids, sorted
    bundles: int = 0
    compressed: int = 0
    error: str | None = None
    note: str | None = None  # where the targets came from when that is not the file itself (kpack)


@dataclass(frozen=True, slots=True)
class PathScan:
    path: str
    kind: str  # file, directory, wheel, missing, unreadable
    files: tuple[FileScan, ...] = ()
    error: str | None = None
    truncated: str | None = None  # which bound stopped the walk

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted({t for f in self.files for t in f.targets}))

    @property
    def processors(self) -> tuple[str, ...]:
        return tuple(sorted({t.split(":")[0] for t in self.targets}))


def _named(name: str) -> tuple[str, ...]:
    if not name.endswith(NAMED_SUFFIXES):
        return ()
    return tuple(sorted({str(t) for t in targets_in_name(name)}))


def _elf_candidate(name: str, mode: int) -> bool:
    return ".so" in name or name.endswith((".node", ".bin")) or bool(mode & 0o111)


def scan_kpack(fd: int, size: int, path: str) -> FileScan:
    """A kernel pack's targets: the architectures its table of contents has code for and lists."""
    try:
        archive = read_kpack(fd, size)
    except KpackError as exc:
        return FileScan(path, "kpack", (), error=str(exc))
    return FileScan(path, "kpack", archive.targets, note=f"kernel pack {archive.group or '?'} {archive.family or '?'}")


def _split_library(fd: int, path: str, location: str | None, ref: Section) -> FileScan:
    """A TheRock host file whose code is in kernel packs: the targets of the packs its reference finds."""
    if ref.size > REF_LIMIT:
        return FileScan(path, "kpack", (), error=f".rocm_kpack_ref of {ref.size} bytes (at most {REF_LIMIT})")
    try:
        found = parse_ref(os.pread(fd, ref.size, ref.offset))
    except KpackError as exc:
        return FileScan(path, "kpack", (), error=str(exc))
    if location is None:
        return FileScan(path, "kpack", (), note="code in kernel packs, not looked for outside the file system")
    result = resolve(location, found)
    if not result.archives:
        wanted = ", ".join(found.search_paths)
        return FileScan(path, "kpack", (), note=f"code in kernel packs, none installed ({wanted})")
    if result.problems and not result.targets:
        return FileScan(path, "kpack", (), error="; ".join(result.problems))
    names = ", ".join(os.path.basename(a) for a in result.archives)
    return FileScan(path, "kpack", result.targets, note=f"code in {names}")


def scan_fd(fd: int, size: int, path: str, *, explicit: bool, location: str | None = None) -> FileScan | None:
    """The GPU code of the ELF file open at ``fd`` (at ``location`` on the file system, if it is there):
    its bundles, or the kernel packs it points to; None when it is no HIP file and was not asked for."""
    head = os.pread(fd, 4, 0)
    if not is_elf(head):
        return FileScan(path, "bundles", (), error="not an ELF file") if explicit else None
    with os.fdopen(os.dup(fd), "rb") as stream:
        try:
            sections = hip_sections(stream, size)
        except ElfError as exc:
            return FileScan(path, "bundles", (), error=str(exc))
    if sections.kpack_ref is not None:
        return _split_library(fd, path, location, sections.kpack_ref)
    if sections.fatbin is None:
        return FileScan(path, "bundles", (), error="no .hip_fatbin section (no HIP device code)") if explicit else None
    if sections.fatbin.size == 0:
        return FileScan(path, "bundles", (), error="empty .hip_fatbin section")
    section = sections.fatbin
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        return FileScan(path, "bundles", (), error=f"cannot map: {exc}")
    try:
        bundles = read_bundles(mapped, section.offset, section.offset + section.size, ".hip_fatbin")
    except BundleError as exc:
        return FileScan(path, "bundles", (), error=str(exc))
    finally:
        mapped.close()
    # Each target's id repeats in every bundle (one per translation unit): parse each once.
    targets = set()
    for ident in {e.id for b in bundles for e in b.entries}:
        parsed = parse_entry_id(ident)
        if parsed is not None and parsed.is_amdgpu and parsed.target is not None:
            targets.add(str(parsed.target))
    return FileScan(path, "bundles", tuple(sorted(targets)), len(bundles), sum(b.compressed for b in bundles))


def scan_file(path: str, display: str | None = None, *, explicit: bool = False) -> FileScan | None:
    shown = display or path
    name = os.path.basename(path)
    named = _named(name)
    if named:
        return FileScan(shown, "name", named)
    try:
        fd, size = open_regular(path)
    except OSError as exc:
        return FileScan(shown, "bundles", (), error=exc.strerror or str(exc)) if explicit else None
    try:
        if name.endswith(SUFFIX):
            return scan_kpack(fd, size, shown)
        return scan_fd(fd, size, shown, explicit=explicit, location=path)
    except OSError as exc:
        return FileScan(shown, "bundles", (), error=exc.strerror or str(exc))
    finally:
        os.close(fd)


def _sorted_entries(directory: str) -> list[os.DirEntry[str]]:
    """A directory's entries by name; none when it cannot be read."""
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []


def _new_candidate(entry: os.DirEntry[str], seen: set[tuple[int, int]]) -> bool:
    """A regular file (links followed) not seen before whose name or mode says it may carry HIP code."""
    try:
        st = entry.stat(follow_symlinks=True)
    except OSError:
        return False  # a dangling link or a loop: nothing to read
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
        return False
    seen.add((st.st_dev, st.st_ino))
    return bool(_named(entry.name)) or entry.name.endswith(SUFFIX) or _elf_candidate(entry.name, st.st_mode)


def scan_tree(top: str, display: str | None = None, *, max_depth: int = MAX_DEPTH) -> PathScan:
    """The HIP files under a directory, without following directory links."""
    shown = display or top
    files: list[FileScan] = []
    seen: set[tuple[int, int]] = set()
    visited = 0
    truncated = None
    stack = [(top, 0)]
    while stack:
        directory, depth = stack.pop()
        for entry in _sorted_entries(directory):
            visited += 1
            if visited > MAX_ENTRIES:
                truncated = f"stopped after {MAX_ENTRIES} entries"
                stack.clear()
                break
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if depth + 1 < max_depth:
                    stack.append((entry.path, depth + 1))
                else:
                    truncated = f"not deeper than {max_depth} levels"
            elif _new_candidate(entry, seen):
                result = scan_file(entry.path, os.path.join(shown, os.path.relpath(entry.path, top)))
                if result is not None:
                    files.append(result)
    files.sort(key=lambda f: f.path)
    return PathScan(shown, "directory", tuple(files), truncated=truncated)


def _copy_and_scan(archive: zipfile.ZipFile, info: zipfile.ZipInfo, member: str) -> FileScan | None:
    """An ELF member copied to a temporary file (mmap needs one) and scanned; refused past MEMBER_LIMIT bytes."""
    import tempfile

    with tempfile.TemporaryFile() as copy, archive.open(info) as src:
        copied = 0
        # The header's size is the member's claim: the copy stops at the limit whatever it says.
        while chunk := src.read(1 << 20):
            copied += len(chunk)
            if copied > MEMBER_LIMIT:
                break
            copy.write(chunk)
        if copied > MEMBER_LIMIT:
            return FileScan(member, "bundles", (), error="larger than its header says; not read")
        copy.flush()
        return scan_fd(copy.fileno(), copied, member, explicit=False)


def _scan_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, shown: str) -> FileScan | None:
    """One file of a wheel: targets from its name, or from its bundles if it is a library within MEMBER_LIMIT."""
    member = f"{shown}!{info.filename}"
    base = info.filename.rsplit("/", 1)[-1]
    named = _named(base)
    if named:
        return FileScan(member, "name", named)
    if base.endswith(SUFFIX):
        # A pack inside a wheel is not copied out to reach its table of contents at the end: its name says
        # the family (blas_lib_gfx1151.kpack) as TheRock's device packages name them.
        targets = tuple(sorted({str(t) for t in targets_in_name(base)}))
        return FileScan(member, "name", targets, note="kernel pack in a wheel: targets from its name")
    if ".so" not in base:
        return None
    if info.file_size > MEMBER_LIMIT:
        why = f"not read: {info.file_size >> 20} MiB (limit {MEMBER_LIMIT >> 20} MiB)"
        return FileScan(member, "bundles", (), error=why)
    return _copy_and_scan(archive, info, member)


def scan_wheel(path: str, display: str | None = None) -> PathScan:
    """A wheel or other zip: member names, and the ELF members up to MEMBER_LIMIT bytes, copied to a temporary file."""
    import zipfile

    shown = display or path
    files: list[FileScan] = []
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_MEMBERS:
                return PathScan(shown, "wheel", error=f"{len(infos)} members (more than {MAX_MEMBERS})")
            for info in infos:
                result = None if info.is_dir() else _scan_member(archive, info, shown)
                if result is not None:
                    files.append(result)
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError) as exc:
        # zlib.error is raised for a corrupt deflate stream; NotImplementedError for unknown compression.
        return PathScan(shown, "wheel", tuple(files), error=f"unreadable zip: {exc}")
    except Exception as exc:  # zlib.error, lzma/bz2 errors from a corrupt member
        return PathScan(shown, "wheel", tuple(files), error=f"unreadable zip member: {type(exc).__name__}: {exc}")
    return PathScan(shown, "wheel", tuple(files))


def scan_path(path: str, display: str | None = None) -> PathScan:
    """A file, directory or wheel named by the user."""
    shown = display or path
    try:
        st = os.stat(path)
    except OSError as exc:
        kind = "missing" if isinstance(exc, FileNotFoundError) else "unreadable"
        return PathScan(shown, kind, error=exc.strerror or str(exc))
    except ValueError as exc:
        return PathScan(shown, "unreadable", error=str(exc))
    if stat.S_ISDIR(st.st_mode):
        return scan_tree(path, shown)
    if not stat.S_ISREG(st.st_mode):
        return PathScan(shown, "unreadable", error="not a regular file or directory")
    if path.endswith((".whl", ".zip")):
        return scan_wheel(path, shown)
    result = scan_file(path, shown, explicit=True)
    return PathScan(shown, "file", () if result is None else (result,))
