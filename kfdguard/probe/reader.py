"""Careful reads of machine files: bounded, non-blocking, never raising."""

from __future__ import annotations

import os
import stat

from kfdguard.facts import Problem
from kfdguard.host.root import Root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath

TEXT_LIMIT = 4 << 20


class Reader:
    """Reads files under a Root and collects what could not be read."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.problems: list[Problem] = []

    def complain(self, path: HostPath, reason: str) -> None:
        self.problems.append(Problem(self.root.display(path), reason))

    def data(
        self, path: HostPath, *, limit: int = TEXT_LIMIT, report_missing: bool = False, nofollow: bool = False
    ) -> bytes | None:
        # O_NONBLOCK: a FIFO planted where a file belongs must not hang the
        # boot. Regular files and sysfs attributes ignore the flag.
        # nofollow: a file in a directory that a less privileged user owns (root reading the
        # resident service's health records) must not be a link to one of root's files.
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            if report_missing:
                self.complain(path, "missing")
            return None
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            self.complain(path, f"unreadable: {getattr(exc, 'strerror', None) or exc}")
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
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, ValueError) as exc:
            self.complain(path, f"unreadable: {getattr(exc, 'strerror', None) or exc}")
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

    def text(self, path: HostPath, *, limit: int = TEXT_LIMIT, report_missing: bool = False) -> str | None:
        data = self.data(path, limit=limit, report_missing=report_missing)
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
            directory_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (OSError, ValueError):
            return self.values_by_path(directory, names, skip_denied=skip_denied)  # they say why
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        found: dict[str, str] = {}
        try:
            for name in names:
                if skip_denied and not os.access(name, os.R_OK, dir_fd=directory_fd):
                    continue
                try:
                    fd = os.open(name, flags, dir_fd=directory_fd)
                except FileNotFoundError:
                    continue
                except (OSError, ValueError) as exc:
                    self.complain(directory / name, f"unreadable: {getattr(exc, 'strerror', None) or exc}")
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
            if skip_denied and not os.access(path, os.R_OK):
                continue
            value = self.value(path)
            if value is not None:
                found[name] = value
        return found

    def listdir(self, path: HostPath) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            self.complain(path, f"unreadable directory: {getattr(exc, 'strerror', None) or exc}")
            return []

    # Existence tests go through the Reader too, so that it is the one seam through
    # which the probe sees the machine (a snapshot records exactly what passes here).

    def is_file(self, path: HostPath) -> bool:
        try:
            return path.is_file()
        except (OSError, ValueError):
            return False

    def is_dir(self, path: HostPath) -> bool:
        try:
            return path.is_dir()
        except (OSError, ValueError):
            return False

    def is_symlink(self, path: HostPath) -> bool:
        try:
            return path.is_symlink()
        except (OSError, ValueError):
            return False

    def realpath(self, path: HostPath) -> str:
        return os.path.realpath(path)

    def readlink_name(self, path: HostPath) -> str | None:
        """Last component of a symlink's target (a sysfs ``driver`` link)."""
        try:
            target = os.readlink(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self.complain(path, f"unreadable link: {getattr(exc, 'strerror', None) or exc}")
            return None
        return target.rstrip("/").rsplit("/", 1)[-1] or None
