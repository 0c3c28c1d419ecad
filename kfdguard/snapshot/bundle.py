"""A snapshot bundle on disk: the files the probe read, and a manifest of everything else.

Layout of a bundle directory (usable as a machine root, ``--root BUNDLE``)::

    BUNDLE/.kfdguard-snapshot.json   the manifest: device nodes, KFD ioctl answers,
                                     classified kernel log lines, command outputs
    BUNDLE/sys/..., /proc/..., /etc/..., /boot/..., /lib/modules/...
                                     the files and links the probe read, as they were
                                     (kernel modules reduced to their .modinfo)

The manifest comes from outside when a bundle is replayed (a bug report): it is
parsed field by field, and anything malformed is a ``SnapshotError`` naming
the field, never an exception from deep inside.
"""

from __future__ import annotations

import errno
import os
import posixpath
import struct

from kfdguard.snapshot import MANIFEST
from kfdguard.snapshot.recorder import ABSENT, DIR, FIFO, FILE, LINK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath
    from kfdguard.snapshot.recorder import RecordingReader, RecordingSystem

FORMAT = "kfdguard-snapshot"
VERSION = 1
MANIFEST_LIMIT = 64 << 20
# Kernel modules larger than this are stored as a minimal ELF with their .modinfo only.
MODULE_KEEP_LIMIT = 1 << 20
LINK_HOPS = 40


class SnapshotError(ValueError):
    """A bundle that cannot be written or read; the message says which part and why."""


# --- writing -------------------------------------------------------------------------------


def _resolve(machine_path: str, links: dict[str, str]) -> str | None:
    """Where a machine path really lives once the recorded links are followed; None if it leaves the root."""
    parts = [p for p in machine_path.split("/") if p]
    done: list[str] = []
    hops = 0
    while parts:
        done.append(parts.pop(0))
        current = "/" + "/".join(done)
        target = links.get(current)
        if target is None:
            continue
        hops += 1
        if hops > LINK_HOPS:
            return None
        base = target if target.startswith("/") else posixpath.join("/" + "/".join(done[:-1]), target)
        joined = posixpath.normpath(posixpath.join(base, *parts)) if parts else posixpath.normpath(base)
        if not joined.startswith("/") or joined.startswith("//"):
            return None
        parts = [p for p in joined.split("/") if p]
        done = []
    return "/" + "/".join(done)


def minimal_module(modinfo: list[tuple[str, str]], filename: str) -> bytes:
    """An ELF64 relocatable object holding only ``.modinfo`` (what the probe reads of a module)."""
    blob = b"".join(f"{k}={v}".encode() + b"\0" for k, v in modinfo)
    shstrtab = b"\0.modinfo\0.shstrtab\0"
    modinfo_off = 64
    shstr_off = modinfo_off + len(blob)
    shoff = (shstr_off + len(shstrtab) + 7) & ~7
    header = struct.pack(
        "<16sHHIQQQIHHHHHH",
        b"\x7fELF\x02\x01\x01" + bytes(9), 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 2,
    )  # fmt: skip
    sections = bytes(64)
    sections += struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, modinfo_off, len(blob), 0, 0, 1, 0)
    sections += struct.pack("<IIQQQQIIQQ", 10, 3, 0, 0, shstr_off, len(shstrtab), 0, 0, 1, 0)
    elf = header + blob + shstrtab + bytes(shoff - shstr_off - len(shstrtab)) + sections
    if filename.endswith(".xz"):
        import lzma

        return lzma.compress(elf, format=lzma.FORMAT_XZ)
    if filename.endswith(".gz"):
        import gzip

        return gzip.compress(elf, mtime=0)
    return elf


def _file_content(shown: str, data: bytes, redact: object, mode: int | None, log: bool) -> tuple[bytes | None, str]:
    """What the bundle holds of a file that was read (None: left out), and a note when it was reduced."""
    from kfdguard.modinfo import ModinfoError, decompress, modinfo_entries, module_name
    from kfdguard.snapshot.redact import CONFIG, GROUP, PASSWD, NameMap, grub_passwords, log_lines

    name = shown.rsplit("/", 1)[-1]
    if log:  # a kernel log file of log.sources: as the journal's lines are kept, whatever its mode
        return log_lines(data.decode("utf-8", errors="replace")).encode(), ""
    kept, note = _root_only(shown, data, mode)
    if kept is None:
        return None, note
    data = kept
    if name.endswith(".cfg"):  # GRUB's configuration, whoever may read it: no password, no hash
        text = data.decode("utf-8", errors="replace")
        redacted = grub_passwords(text)
        data = data if redacted == text else redacted.encode()
    if isinstance(redact, NameMap):
        text = data.decode("utf-8", errors="replace")
        if shown == PASSWD:
            return redact.passwd(text).encode(), note
        if shown == GROUP:
            return redact.group(text).encode(), note
        if shown == CONFIG:
            return redact.words(text).encode(), note
    if module_name(name) and len(data) > MODULE_KEEP_LIMIT and not name.endswith(".zst"):
        try:
            return minimal_module(modinfo_entries(decompress(data, name)), name), note
        except ModinfoError:
            return data, note
    return data, note


def _root_only(shown: str, data: bytes, mode: int | None) -> tuple[bytes | None, str]:
    """A file as the bundle may hold it by its mode: whole when others may read it; when only root
    may, what redact.ROOT_ONLY_KEPT keeps of it, or nothing; and the note that says which."""
    from kfdguard.snapshot.redact import reduce, root_only, root_only_rule

    if mode is None or not root_only(mode):
        return data, ""
    rule = root_only_rule(shown)
    if rule is None:
        return None, f"{shown}: only root may read it; left out"
    what, how = rule
    if how != "whole":
        data = reduce(data.decode("utf-8", errors="replace"), how).encode()
    return data, f"{shown}: only root may read it; kept as {what}"


# A bundle is its maker's until they share it: the directory 0700, every file 0600 (issue 35.5).
DIR_MODE = 0o700
FILE_MODE = 0o600


def create_file(path: HostPath) -> int:
    """A new file of the bundle, 0600 whatever the umask, never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


def make_dir(path: HostPath) -> None:
    """A directory of the bundle (and its missing parents inside it), 0700."""
    if path.is_dir():
        return
    make_dir(path.parent)
    os.mkdir(path, DIR_MODE)
    os.chmod(path, DIR_MODE)  # the umask may have taken more


class _Writer:
    def __init__(self, dest: HostPath, reader: RecordingReader, log_files: frozenset[str]) -> None:
        self.dest = dest
        self.reader = reader
        self.log_files = log_files
        self.notes: list[str] = []
        self.left_out: set[str] = set()

    def place(self, shown: str) -> HostPath | None:
        real = _resolve(shown, self.reader.links)
        if real is None:
            self.notes.append(f"{shown}: a link leads outside the machine's root; left out")
            return None
        return self.dest / real.lstrip("/")

    def write_entry(self, shown: str, kind: str, redact: object) -> None:
        if kind == LINK and shown in self.reader.data_of:
            kind = FILE  # read through the link: the content belongs where the link leads
        if kind in (ABSENT, LINK):
            return
        path = self.place(shown)
        if path is None:
            return
        if kind == DIR:
            make_dir(path)
            return
        make_dir(path.parent)
        if kind == FIFO:
            if not path.exists():
                os.mkfifo(path, FILE_MODE)
            return
        self.write_file(path, shown, kind, redact)

    def write_file(self, path: HostPath, shown: str, kind: str, redact: object) -> None:
        from kfdguard.snapshot.redact import root_only, root_only_rule

        data = self.reader.data_of.get(shown)
        pieces = self.reader.pieces.get(shown)
        mode = self.reader.modes.get(shown)
        if data is not None:
            data, note = _file_content(shown, data, redact, mode, shown in self.log_files)
            if note:
                self.notes.append(note)
            if data is None:
                self.left_out.add(shown)
                return
        elif pieces is not None and mode is not None and root_only(mode) and root_only_rule(shown) is None:
            self.notes.append(f"{shown}: only root may read it; left out")
            self.left_out.add(shown)
            return
        with os.fdopen(create_file(path), "wb") as handle:
            if data is not None:
                handle.write(data)
            elif pieces is not None:
                # Read in pieces (a UKI): as large as it was, with those bytes where they were, holes between.
                handle.truncate(self.reader.sizes.get(shown, 0))
                for offset, piece in sorted(pieces.items()):
                    handle.seek(offset)
                    handle.write(piece)
            elif kind == FILE and "larger than" in self.reader.unreadable.get(shown, ""):
                # Too large to be read then: as large now, without the content (a sparse file).
                handle.truncate(self.reader.sizes.get(shown, 0))

    def write_link(self, shown: str, target: str) -> None:
        parent = shown.rsplit("/", 1)[0] or "/"
        absolute = posixpath.normpath(target if target.startswith("/") else posixpath.join(parent, target))
        if _resolve(absolute, self.reader.links) is None:
            self.notes.append(f"{shown}: link to {target} leads outside the machine's root; left out")
            return
        # Absolute targets would point into the host that replays the bundle: make them relative.
        relative = posixpath.relpath(absolute, parent) if target.startswith("/") else target
        real_parent = _resolve(parent, self.reader.links)
        if real_parent is None:
            return
        where = self.dest / real_parent.lstrip("/") / shown.rsplit("/", 1)[1]
        make_dir(where.parent)
        if not os.path.lexists(where):
            os.symlink(relative, where)


def write_tree(
    dest: HostPath, reader: RecordingReader, redact: object, log_files: frozenset[str] = frozenset()
) -> tuple[list[str], set[str]]:
    """Writes the recorded files and links under ``dest`` (0700 directories, 0600 files); returns
    notes on what was left out or reduced, and the files left out. ``log_files``: machine paths of
    kernel log files read (their lines are kept as the journal's are)."""
    writer = _Writer(dest, reader, log_files)
    for shown, kind in sorted(reader.entries.items(), key=lambda item: item[0].count("/")):
        if shown != "/":
            writer.write_entry(shown, kind, redact)
    for shown, target in sorted(reader.links.items(), key=lambda item: item[0].count("/")):
        writer.write_link(shown, target)
    return writer.notes, writer.left_out


def manifest(system: RecordingSystem, meta: dict[str, object]) -> dict[str, object]:
    from kfdguard.snapshot.redact import classified_lines

    def lines_of(lines: list[str]) -> dict[str, object]:
        return {"total": len(lines), "lines": [[n, text] for n, text in classified_lines(lines)]}

    doc: dict[str, object] = {"format": FORMAT, "version": VERSION, **meta}
    doc["nodes"] = {path: None if st is None else _node_json(st) for path, st in sorted(system.nodes.items())}
    doc["kfd_version"] = {
        path: {"version": list(v)} if len(v) == 2 else {"step": v[0], "errno": v[1], "message": v[2]}
        for path, v in sorted(system.versions.items())
    }
    if isinstance(system.kmsg, list):
        doc["kmsg"] = lines_of(system.kmsg)
    elif isinstance(system.kmsg, str):
        doc["kmsg"] = {"unavailable": system.kmsg}
    if system.journal is not None:
        boots, entries = system.journal
        if isinstance(entries, str):
            doc["journal"] = {"boots": boots, "unavailable": entries}
        else:
            doc["journal"] = {"boots": boots, "entries": [{"boot": b, **lines_of(lines)} for b, lines in entries]}
    root_prefix = str(system.root.path).rstrip("/")
    doc["runs"] = [
        {
            "argv": [_machine_arg(a, root_prefix) for a in r.argv],
            "returncode": r.returncode,
            "stdout": r.stdout,
            "stderr": r.stderr,
            "timed_out": r.timed_out,
            "error": r.error,
        }
        for r in system.runs
    ]
    return doc


def _machine_arg(arg: str, root_prefix: str) -> str:
    """An argument naming a file of the machine, written as the machine spells it."""
    if root_prefix and arg.startswith(root_prefix + "/"):
        return arg[len(root_prefix) :]
    return arg


def _node_json(st: object) -> dict[str, object]:
    from kfdguard.access import NodeStat

    assert isinstance(st, NodeStat)
    return {
        "kind": st.kind,
        "major": st.major,
        "minor": st.minor,
        "uid": st.uid,
        "gid": st.gid,
        "mode": st.mode,
        "acl": [[e.tag, e.qualifier, e.perms] for e in st.acl],
    }


# --- reading (hostile input) ---------------------------------------------------------------


def read_manifest(root: HostPath) -> dict[str, object]:
    import json

    path = root / MANIFEST
    try:
        # O_NOFOLLOW: a bundle from someone else must not make kfdguard read a file of this host as its manifest.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        raise SnapshotError(f"{MANIFEST}: {exc.strerror or exc}") from None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SnapshotError(f"{MANIFEST}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MANIFEST_LIMIT + 1)
    except OSError as exc:
        raise SnapshotError(f"{MANIFEST}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MANIFEST_LIMIT:
        raise SnapshotError(f"{MANIFEST}: larger than {MANIFEST_LIMIT >> 20} MiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SnapshotError(f"{MANIFEST}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError(f"{MANIFEST}: not a kfdguard snapshot (format {FORMAT!r} expected)")
    if doc.get("version") != VERSION:
        raise SnapshotError(f"{MANIFEST}: version {doc.get('version')!r}; this kfdguard reads version {VERSION}")
    return doc


class Fields:
    """Typed access to one JSON object of the manifest, with the field's path in every error."""

    def __init__(self, value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise SnapshotError(f"{where}: expected an object")
        self.value: dict[str, object] = value
        self.where = where

    def _get(self, key: str, kinds: tuple[type, ...], what: str, optional: bool) -> object:
        if key not in self.value:
            if optional:
                return None
            raise SnapshotError(f"{self.where}.{key}: missing")
        item = self.value[key]
        if item is None and optional:
            return None
        if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
            raise SnapshotError(f"{self.where}.{key}: expected {what}")
        return item

    def number(self, key: str, *, optional: bool = False, low: int = -(2**63), high: int = 2**64) -> int | None:
        item = self._get(key, (int,), "an integer", optional)
        if item is None:
            return None
        assert isinstance(item, int)
        if not low <= item <= high:
            raise SnapshotError(f"{self.where}.{key}: {item} is out of range")
        return item

    def text(self, key: str, *, optional: bool = False) -> str | None:
        item = self._get(key, (str,), "a string", optional)
        assert item is None or isinstance(item, str)
        return item

    def flag(self, key: str) -> bool:
        item = self._get(key, (bool,), "true or false", False)
        assert isinstance(item, bool)
        return item

    def items(self, key: str, *, optional: bool = False) -> list[object]:
        item = self._get(key, (list,), "a list", optional)
        return [] if item is None else list(item)  # type: ignore[call-overload]

    def obj(self, key: str, *, optional: bool = False) -> Fields | None:
        item = self._get(key, (dict,), "an object", optional)
        return None if item is None else Fields(item, f"{self.where}.{key}")


def strings(items: list[object], where: str) -> list[str]:
    if not all(isinstance(i, str) for i in items):
        raise SnapshotError(f"{where}: expected a list of strings")
    return [i for i in items if isinstance(i, str)]


def check_dest(dest: HostPath) -> None:
    """A bundle goes into a new or empty directory: nothing there is overwritten."""
    try:
        entries = os.listdir(dest)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise SnapshotError(f"{dest}: exists and is not a directory") from None
    except OSError as exc:
        raise SnapshotError(f"{dest}: {exc.strerror or exc}") from None
    if entries:
        raise SnapshotError(f"{dest}: not empty; give a new or empty directory")


def errno_name(number: int) -> str:
    return errno.errorcode.get(number, str(number))
