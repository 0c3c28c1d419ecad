"""Recording what the probe reads: a Reader and a System that remember every answer.

The probe sees a machine only through its Reader (files, directories, links,
existence tests) and its System (device nodes, the KFD ioctl, the kernel log,
subprocesses). Wrapping both records exactly what one probe pass used, no more:
that record is what a snapshot bundle holds.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from kfdguard.host.system import KfdIoctlError, LogUnavailable, System
from kfdguard.probe.reader import Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kfdguard.access import NodeStat
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root
    from kfdguard.host.runner import RunResult

# What a path was when the probe looked at it.
FILE, DIR, LINK, FIFO, ABSENT, OTHER = "file", "dir", "link", "fifo", "absent", "other"


def _kind_of(st: os.stat_result) -> str:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISFIFO(mode):
        return FIFO
    return OTHER


class RecordingReader(Reader):
    """A Reader that remembers, per machine path, what it found there.

    ``entries`` maps a machine path ("/sys/class/drm/card0/device/vendor") to
    its kind, ``data`` holds the bytes of the files read, ``links`` the targets
    of every symbolic link met on the way (ancestors included, so that sysfs's
    class -> device links and a merged /usr come out as they were).
    """

    def __init__(self, root: Root) -> None:
        super().__init__(root)
        self.entries: dict[str, str] = {}
        self.data_of: dict[str, bytes] = {}
        self.sizes: dict[str, int] = {}
        self.links: dict[str, str] = {}
        self.unreadable: dict[str, str] = {}
        # The mode of every file opened: what only root may read is left out of a bundle or redacted
        # (kfdguard/snapshot/redact.py's ROOT_ONLY).
        self.modes: dict[str, int] = {}
        # Files read in pieces (a UKI's PE headers and sections): offset -> bytes, and the file's size.
        self.pieces: dict[str, dict[int, bytes]] = {}

    def _note(self, path: HostPath) -> str:
        shown = self.root.display(path)
        if not shown.startswith("/"):
            return shown  # outside the root: not part of the machine
        self._ancestors(shown)
        if shown not in self.entries:
            kind, target, size = self._kind(path)
            self.entries[shown] = kind
            if kind == LINK and target is not None:
                self.links[shown] = target
            elif kind == FILE:
                self.sizes[shown] = size
        return shown

    def _kind(self, path: HostPath) -> tuple[str, str | None, int]:
        """(kind, link target, size) of a path without following a final symlink (nor, beneath a root
        that is not the host's, any link out of it: such a path is absent from the machine)."""
        try:
            if self.beneath is None:
                st = os.lstat(path)
                kind = _kind_of(st)
                return kind, (os.readlink(path) if kind == LINK else None), st.st_size
            st = self.beneath.stat(path, follow=False)
            kind = _kind_of(st)
            return kind, (self.beneath.readlink(path) if kind == LINK else None), st.st_size
        except (OSError, ValueError):
            return ABSENT, None, 0

    def _open(self, path: HostPath, flags: int) -> int:
        fd = super()._open(path, flags)
        with contextlib.suppress(OSError):
            self.modes[self.root.display(path)] = os.fstat(fd).st_mode
        return fd

    def _ancestors(self, shown: str) -> None:
        parts = shown.strip("/").split("/")[:-1]
        current = ""
        for part in parts:
            current += "/" + part
            if current in self.entries:
                continue
            kind, target, _size = self._kind(self.root.join(current))
            self.entries[current] = kind
            if kind == LINK and target is not None:
                self.links[current] = target

    def data(
        self, path: HostPath, *, limit: int = 4 << 20, report_missing: bool = False, nofollow: bool = False
    ) -> bytes | None:
        before = len(self.problems)
        result = super().data(path, limit=limit, report_missing=report_missing, nofollow=nofollow)
        shown = self._note(path)
        if result is not None:
            self.data_of[shown] = result
        elif len(self.problems) > before and self.entries.get(shown) != ABSENT:
            self.unreadable[shown] = self.problems[-1].reason
        return result

    def read_at(self, path: HostPath, offset: int, size: int) -> tuple[bytes, int] | None:
        result = super().read_at(path, offset, size)
        shown = self._note(path)
        if result is not None:
            data, total = result
            self.sizes[shown] = total
            if data:
                self.pieces.setdefault(shown, {})[offset] = data
        return result

    def values(self, directory: HostPath, names: list[str], *, skip_denied: bool = False) -> dict[str, str]:
        # Through data(), one path at a time, so that each file is recorded.
        return self.values_by_path(directory, names, skip_denied=skip_denied)

    def listdir(self, path: HostPath, *, limit: int | None = None) -> list[str]:
        names = super().listdir(path, limit=limit)
        shown = self._note(path)
        base = shown.rstrip("/")
        for name in names:
            self._note(self.root.join(f"{base}/{name}"))
        return names

    def is_file(self, path: HostPath) -> bool:
        self._note(path)
        return super().is_file(path)

    def is_dir(self, path: HostPath) -> bool:
        self._note(path)
        return super().is_dir(path)

    def is_symlink(self, path: HostPath) -> bool:
        self._note(path)
        return super().is_symlink(path)

    def realpath(self, path: HostPath) -> str:
        self._note(path)
        return super().realpath(path)

    def readlink_name(self, path: HostPath) -> str | None:
        self._note(path)
        return super().readlink_name(path)


class RecordingSystem(System):
    """Passes every read-only call to ``inner`` and remembers call and answer."""

    def __init__(self, inner: System) -> None:
        self.inner = inner
        self.root = inner.root
        self.provenance = inner.provenance  # the report says what was recorded
        self.nodes: dict[str, NodeStat | None] = {}
        self.versions: dict[str, tuple[int, int] | tuple[str, int, str]] = {}
        self.kmsg: list[str] | str | None = None
        self.journal: tuple[int, list[tuple[int, list[str]]] | str] | None = None
        self.runs: list[RunResult] = []

    def stat_node(self, path: HostPath) -> NodeStat | None:
        result = self.inner.stat_node(path)
        self.nodes[self.root.display(path)] = result
        return result

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        shown = self.root.display(path)
        try:
            version = self.inner.kfd_version(path)
        except KfdIoctlError as exc:
            self.versions[shown] = (exc.step, exc.errno, str(exc).partition(": ")[2])
            raise
        except OSError as exc:
            self.versions[shown] = ("open", exc.errno or errno.EIO, exc.strerror or str(exc))
            raise
        self.versions[shown] = version
        return version

    def read_kmsg(self) -> list[str]:
        try:
            lines = self.inner.read_kmsg()
        except (LogUnavailable, OSError) as exc:
            self.kmsg = str(exc) or type(exc).__name__
            raise
        self.kmsg = lines
        return lines

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        try:
            entries = self.inner.read_journal(boots)
        except (LogUnavailable, OSError) as exc:
            self.journal = (boots, str(exc) or type(exc).__name__)
            raise
        self.journal = (boots, entries)
        return entries

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        result = self.inner.run(argv, timeout=timeout)
        self.runs.append(result)
        return result

    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        raise OSError(errno.EROFS, "a snapshot only reads")

    def write_file(self, path: HostPath, data: bytes, mode: int = 0o644) -> None:
        raise OSError(errno.EROFS, "a snapshot only reads")

    def remove_file(self, path: HostPath) -> None:
        raise OSError(errno.EROFS, "a snapshot only reads")
