"""Careful reads of machine files: bounded, non-blocking, never raising, never out of the root.

A Root other than ``/`` is a directory somebody else may have filled (a snapshot bundle from a bug
report): every read through it is resolved beneath it (kfdguard/host/beneath.py), and a link that
leads out is a problem ("unreadable: link leaves the machine's root (...)"), never followed. The
host's own Root reads with plain ``os`` calls: the boot pass on a real machine pays nothing for it.
"""

from __future__ import annotations

import errno
import os
import stat

from kfdguard.facts import Problem
from kfdguard.host.root import Root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.host.beneath import Beneath
    from kfdguard.host.paths import HostPath

TEXT_LIMIT = 4 << 20


class Reader:
    """Reads files under a Root and collects what could not be read."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.problems: list[Problem] = []
        # None on the host: its files are the machine's whatever they link to.
        self.beneath: Beneath | None = None
        self._refused: set[str] = set()  # links already said to lead out of the root
        if not root.is_host:
            from kfdguard.host.beneath import Beneath

            self.beneath = Beneath(root.path)

    def complain(self, path: HostPath, reason: str) -> None:
        self.problems.append(Problem(self.root.display(path), reason))

    def _unreadable(self, path: HostPath, exc: Exception, what: str = "unreadable") -> None:
        if isinstance(exc, OSError) and exc.errno == errno.EXDEV:
            # A link out of the root: said once (its text names the link), though the probe may test a
            # path and then read it, or read several files below a directory that is such a link.
            said = str(exc.strerror)
            if said in self._refused:
                return
            self._refused.add(said)
        self.complain(path, f"{what}: {getattr(exc, 'strerror', None) or exc}")

    def _open(self, path: HostPath, flags: int) -> int:
        """os.open, beneath the root when it is not the host's (the one place a file is opened)."""
        if self.beneath is None:
            return os.open(path, flags)
        return self.beneath.open(path, flags)

    def data(
        self, path: HostPath, *, limit: int = TEXT_LIMIT, report_missing: bool = False, nofollow: bool = False
    ) -> bytes | None:
        # O_NONBLOCK: a FIFO planted where a file belongs must not hang the
        # boot. Regular files and sysfs attributes ignore the flag.
        # nofollow: a file in a directory that a less privileged user owns (root reading the
        # resident service's health records) must not be a link to one of root's files.
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
        try:
            fd = self._open(path, flags)
        except FileNotFoundError:
            if report_missing:
                self.complain(path, "missing")
            return None
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            self._unreadable(path, exc)
            return None
        return self._drain(fd, path, None, limit)

    def _drain(self, fd: int, where: HostPath, name: str | None, limit: int) -> bytes | None:
        """The whole of a regular file open at ``fd`` (closed here): ``where``, or ``name`` in it."""
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                self.complain(where if name is None else where / name, "unreadable: not a regular file")
                return None
            chunks = []
            size = 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 16, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            self.complain(where if name is None else where / name, f"unreadable: {exc.strerror or exc}")
            return None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > limit:
            self.complain(where if name is None else where / name, f"larger than {limit} bytes; ignored")
            return None
        return data

    def read_at(self, path: HostPath, offset: int, size: int) -> tuple[bytes, int] | None:
        """``size`` bytes at ``offset`` of a regular file (fewer at its end), and the file's size:
        for the few headers and sections kfdguard reads of files too large to read whole (a UKI)."""
        try:
            fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, ValueError) as exc:
            self._unreadable(path, exc)
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self.complain(path, "unreadable: not a regular file")
                return None
            return (os.pread(fd, size, offset) if size > 0 else b""), st.st_size
        except OSError as exc:
            self.complain(path, f"unreadable: {exc.strerror or exc}")
            return None
        finally:
            os.close(fd)

    def text(
        self, path: HostPath, *, limit: int = TEXT_LIMIT, report_missing: bool = False, nofollow: bool = False
    ) -> str | None:
        data = self.data(path, limit=limit, report_missing=report_missing, nofollow=nofollow)
        return None if data is None else data.decode("utf-8", errors="replace")

    def attribute(self, path: HostPath) -> str | None:
        """A sysfs attribute's text, up to its first NUL byte (``unpadded``): what probe/devices.py reads
        of PCI devices and the KFD topology, which real captures show padded."""
        data = self.data(path)
        return None if data is None else self.unpadded(path, data).decode("utf-8", errors="replace")

    def value(self, path: HostPath) -> str | None:
        """A one-value sysfs attribute, stripped."""
        text = self.text(path)
        return None if text is None else text.strip()

    def attribute_value(self, path: HostPath) -> str | None:
        """A one-value attribute of a PCI device or of the KFD topology, unpadded and stripped."""
        text = self.attribute(path)
        return None if text is None else text.strip()

    def unpadded(self, path: HostPath, data: bytes) -> bytes:
        """What precedes the first NUL of a sysfs attribute, and a Problem that says what followed.

        The kernel never writes a NUL into one (sysfs_emit prints text), so a NUL is a copy's:
        a capture that read each file into a fixed buffer and wrote the whole buffer pads it
        to the buffer's size (LACT's RX 6900 XT snapshot: every file is 4096 bytes, its value
        then NULs). str.strip() keeps NULs, so without this "0x030000\n" and 4087 NULs was no
        number at all and the GPU was lost. Said, not silently dropped: what the kernel wrote
        is not what was read.
        """
        cut = data.find(b"\0")
        if cut < 0:
            return data
        rest = len(data) - cut
        if data.count(b"\0", cut) == rest:
            self.complain(
                path,
                f"{rest} NUL bytes after its {cut}-byte value, which the kernel never writes "
                f"(a copy padded to its buffer?); the {cut} bytes before them are read",
            )
        else:
            self.complain(
                path,
                f"a NUL byte at offset {cut}, then more text, which the kernel never writes; "
                f"the {cut} bytes before it are read, the rest is left out",
            )
        return data[:cut]

    def values(self, directory: HostPath, names: list[str], *, skip_denied: bool = False) -> dict[str, str]:
        """Several one-value attributes of one directory (a module's parameters), stripped, by name.

        As value() on each, but each opened relative to the directory: amdgpu has ~90 parameters,
        and a path object per parameter was a fiftieth of the boot pass's instructions (callgrind).
        An unreadable one is left out and said why; ``skip_denied``: one this process may not read
        (os.access) is left out silently.
        """
        try:
            directory_fd = self._open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (OSError, ValueError):
            return self.values_by_path(directory, names, skip_denied=skip_denied)  # they say why
        # Beneath a root, a name is not followed by the kernel: a link is read through data(), beneath it.
        host = self.beneath is None
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if host else os.O_NOFOLLOW)
        found: dict[str, str] = {}
        try:
            for name in names:
                if skip_denied and not os.access(name, os.R_OK, dir_fd=directory_fd, follow_symlinks=host):
                    continue
                try:
                    fd = os.open(name, flags, dir_fd=directory_fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    if not host and exc.errno == errno.ELOOP:
                        value = self.value(directory / name)
                        if value is not None:
                            found[name] = value
                        continue
                    self._unreadable(directory / name, exc)
                    continue
                except ValueError as exc:
                    self._unreadable(directory / name, exc)
                    continue
                data = self._drain(fd, directory, name, TEXT_LIMIT)
                if data is not None:
                    found[name] = data.decode("utf-8", errors="replace").strip()
        finally:
            os.close(directory_fd)
        return found

    def values_by_path(self, directory: HostPath, names: list[str], *, skip_denied: bool = False) -> dict[str, str]:
        """values(), one path and one value() at a time (what a recording Reader needs)."""
        found: dict[str, str] = {}
        for name in names:
            path = directory / name
            if skip_denied and not self._may_read(path):
                continue
            value = self.value(path)
            if value is not None:
                found[name] = value
        return found

    def _may_read(self, path: HostPath) -> bool:
        if self.beneath is None:
            return os.access(path, os.R_OK)
        try:
            return os.access(self.beneath.realpath(path), os.R_OK, follow_symlinks=False)
        except (OSError, ValueError):
            return True  # data() says why it cannot be read

    def listdir(self, path: HostPath, *, limit: int | None = None) -> list[str]:
        """The names in a directory, sorted; with ``limit``, at most ``limit + 1`` of them, in no
        particular order before the sort (one more than asked says there are more): a directory
        somebody else fills can hold a million names, and os.listdir would read them all."""
        try:
            if self.beneath is None:
                return sorted(os.listdir(path) if limit is None else _first(path, limit + 1))
            fd = self.beneath.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                return sorted(os.listdir(fd) if limit is None else _first(fd, limit + 1))
            finally:
                os.close(fd)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            self._unreadable(path, exc, "unreadable directory")
            return []

    # Existence tests go through the Reader too, so that it is the one seam through
    # which the probe sees the machine (a snapshot records exactly what passes here).

    def _test(self, path: HostPath, check: Callable[[int], bool], follow: bool = True) -> bool:
        """A test of the mode, beneath the root; a link out of it is said, and is not there."""
        assert self.beneath is not None
        try:
            return check(self.beneath.stat(path, follow=follow).st_mode)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                self._unreadable(path, exc)
            return False
        except ValueError:
            return False

    def is_file(self, path: HostPath) -> bool:
        if self.beneath is not None:
            return self._test(path, stat.S_ISREG)
        try:
            return path.is_file()
        except (OSError, ValueError):
            return False

    def is_dir(self, path: HostPath) -> bool:
        if self.beneath is not None:
            return self._test(path, stat.S_ISDIR)
        try:
            return path.is_dir()
        except (OSError, ValueError):
            return False

    def is_symlink(self, path: HostPath) -> bool:
        if self.beneath is not None:
            return self._test(path, stat.S_ISLNK, follow=False)
        try:
            return path.is_symlink()
        except (OSError, ValueError):
            return False

    def realpath(self, path: HostPath) -> str:
        if self.beneath is None:
            return os.path.realpath(path)
        try:
            return self.beneath.realpath(path)
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EXDEV:
                self._unreadable(path, exc)
            return str(path)  # missing on the way, or leading out: the path as it is named

    def readlink_name(self, path: HostPath) -> str | None:
        """Last component of a symlink's target (a sysfs ``driver`` link)."""
        try:
            target = os.readlink(path) if self.beneath is None else self.beneath.readlink(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self._unreadable(path, exc, "unreadable link")
            return None
        return target.rstrip("/").rsplit("/", 1)[-1] or None


def _first(directory: HostPath | int, count: int) -> list[str]:
    """At most ``count`` names of a directory, read lazily (os.scandir stops where we stop)."""
    names: list[str] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) >= count:
                break
    return names
