"""HostPath: a path on the machine a Root points at, without importing pathlib.

Why not pathlib: kfdguard-enforce.service is the display manager's critical path, and from process
start to exit most of its time is imports (benchmarks/bench_boot.py; measured with callgrind:
imports are ~88% of its instructions above a bare interpreter). ``pathlib`` brings ``urllib.parse``,
``ipaddress``, ``fnmatch``, ``ntpath`` and ``warnings`` with it, 18 M of the pass's 158 M
instructions (11%) for what the boot pass uses of it: joining names with ``/`` and handing the
result to ``os``. So every path a ``Root`` makes is a HostPath: a string with the slice of
``pathlib.PurePosixPath`` and ``pathlib.Path`` that kfdguard and its tests use, each method a thin
call into ``os`` with pathlib's behaviour (``tests/unit/host/test_paths.py`` holds them to it, method
by method). Code off the boot path (the CLI, the simulator, tests) keeps using pathlib; the two mix:
a HostPath is ``os.PathLike``, ``Path(host_path)`` and ``host_path / Path(...)`` work, and a HostPath
equals the pathlib path of the same parts.

Two differences from pathlib, on purpose: a leading ``//`` becomes ``/`` (POSIX leaves the meaning of
exactly two leading slashes to the implementation; Linux treats them as one), and text is read and
written as UTF-8 unless told otherwise, not in the locale's encoding (a boot runs with whatever locale
the unit has; kfdguard's files are UTF-8).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import IO, Any

# What pathlib's exists()/is_file()/is_dir() treat as "no" rather than raise (pathlib._IGNORED_ERRNOS).
_IGNORED = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _parts(text: str) -> tuple[str, ...]:
    """The parts of a path text as PurePosixPath has them: "/" first when it is absolute."""
    parts = tuple(p for p in text.split("/") if p and p != ".")
    return ("/", *parts) if text.startswith("/") else parts


def _text(parts: tuple[str, ...]) -> str:
    if parts[:1] == ("/",):
        return "/" + "/".join(parts[1:])
    return "/".join(parts) or "."


class HostPath:
    """An absolute or relative POSIX path, normalised as PurePosixPath normalises (no "." parts, no
    repeated or trailing slash; ".." kept), with the filesystem calls of pathlib.Path."""

    __slots__ = ("_parts", "_text")

    def __init__(self, path: str | os.PathLike[str] = ".") -> None:
        self._parts = _parts(path if type(path) is str else os.fspath(path))
        self._text = _text(self._parts)

    @classmethod
    def _made(cls, parts: tuple[str, ...]) -> HostPath:
        new = cls.__new__(cls)
        new._parts, new._text = parts, _text(parts)
        return new

    # -- the pure part (PurePosixPath) -------------------------------------------------------------

    def __fspath__(self) -> str:
        return self._text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"HostPath({self._text!r})"

    def __hash__(self) -> int:
        # As PurePosixPath hashes (the tuple of its parts), so that equal paths of either kind hash alike.
        return hash(self._parts)

    def __eq__(self, other: object) -> bool:
        if type(other) is HostPath:
            return self._text == other._text
        if isinstance(other, os.PathLike):
            # A pathlib path of the same parts is the same path (PurePosixPath compares parts).
            fspath = other.__fspath__()
            return type(fspath) is str and self._text == HostPath(fspath)._text
        return NotImplemented

    def __lt__(self, other: HostPath) -> bool:
        return self._parts < other._parts

    def __le__(self, other: HostPath) -> bool:
        return self._parts <= other._parts

    def __gt__(self, other: HostPath) -> bool:
        return self._parts > other._parts

    def __ge__(self, other: HostPath) -> bool:
        return self._parts >= other._parts

    def __truediv__(self, other: str | os.PathLike[str]) -> HostPath:
        parts = _parts(other if type(other) is str else os.fspath(other))
        if parts[:1] == ("/",):  # as pathlib: an absolute right-hand side replaces the left
            return HostPath._made(parts)
        return HostPath._made(self._parts + parts) if parts else self

    def __rtruediv__(self, other: str) -> HostPath:
        return HostPath(other) / self

    def joinpath(self, *others: str | os.PathLike[str]) -> HostPath:
        path = self
        for other in others:
            path = path / other
        return path

    @property
    def parts(self) -> tuple[str, ...]:
        return self._parts

    @property
    def name(self) -> str:
        last = self._parts[-1] if self._parts else ""
        return "" if last == "/" else last

    @property
    def suffix(self) -> str:
        name = self.name
        dot = name.rfind(".")
        return name[dot:] if 0 < dot < len(name) - 1 else ""

    @property
    def stem(self) -> str:
        name, suffix = self.name, self.suffix
        return name[: len(name) - len(suffix)] if suffix else name

    @property
    def parent(self) -> HostPath:
        parts = self._parts
        if not parts or parts == ("/",):
            return self
        return HostPath._made(parts[:-1])

    def is_absolute(self) -> bool:
        return self._parts[:1] == ("/",)

    def with_name(self, name: str) -> HostPath:
        if not self.name:
            raise ValueError(f"{self!r} has an empty name")
        if not name or "/" in name or name == ".":
            raise ValueError(f"invalid name {name!r}")
        return HostPath._made((*self._parts[:-1], name))

    def with_suffix(self, suffix: str) -> HostPath:
        if suffix and (not suffix.startswith(".") or suffix == "." or "/" in suffix):
            raise ValueError(f"invalid suffix {suffix!r}")
        return self.with_name(self.stem + suffix)

    def relative_to(self, other: str | os.PathLike[str]) -> HostPath:
        base = other._parts if type(other) is HostPath else HostPath(other)._parts
        if self._parts[: len(base)] != base or (not base and self.is_absolute()):
            raise ValueError(f"{self._text!r} is not in the subpath of {os.fspath(other)!r}")
        return HostPath._made(self._parts[len(base) :])

    def is_relative_to(self, other: str | os.PathLike[str]) -> bool:
        try:
            self.relative_to(other)
        except ValueError:
            return False
        return True

    # -- the filesystem (pathlib.Path), each a call into os -----------------------------------------

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return os.stat(self._text, follow_symlinks=follow_symlinks)

    def lstat(self) -> os.stat_result:
        return os.lstat(self._text)

    def _test(self, check: Callable[[int], bool], *, follow: bool = True) -> bool:
        try:
            return check(os.stat(self._text, follow_symlinks=follow).st_mode)
        except OSError as exc:
            if exc.errno not in _IGNORED:
                raise
            return False
        except ValueError:  # an embedded NUL: no such file, as pathlib says
            return False

    def exists(self) -> bool:
        return self._test(lambda _mode: True)

    def is_file(self) -> bool:
        return self._test(stat.S_ISREG)

    def is_dir(self) -> bool:
        return self._test(stat.S_ISDIR)

    def is_symlink(self) -> bool:
        return self._test(stat.S_ISLNK, follow=False)

    def is_char_device(self) -> bool:
        return self._test(stat.S_ISCHR)

    def iterdir(self) -> Iterator[HostPath]:
        for name in os.listdir(self._text):
            yield self / name

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        try:
            os.mkdir(self._text, mode)
        except FileNotFoundError:
            if not parents or self.parent == self:
                raise
            self.parent.mkdir(parents=True, exist_ok=True)
            self.mkdir(mode, parents=False, exist_ok=exist_ok)
        except OSError:
            if not exist_ok or not self.is_dir():
                raise

    def open(
        self, mode: str = "r", buffering: int = -1, encoding: str | None = None, errors: str | None = None
    ) -> IO[Any]:
        if "b" not in mode and encoding is None:
            encoding = "utf-8"  # kfdguard's files are UTF-8 whatever the locale of the boot
        return open(self._text, mode, buffering, encoding, errors)  # the caller closes it

    def read_bytes(self) -> bytes:
        with open(self._text, "rb") as f:
            return f.read()

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        with open(self._text, encoding=encoding or "utf-8", errors=errors) as f:
            return f.read()

    def write_bytes(self, data: bytes) -> int:
        with open(self._text, "wb") as f:
            return f.write(data)

    def write_text(self, data: str, encoding: str | None = None, errors: str | None = None) -> int:
        with open(self._text, "w", encoding=encoding or "utf-8", errors=errors) as f:
            return f.write(data)

    def touch(self, mode: int = 0o666, exist_ok: bool = True) -> None:
        if exist_ok:
            try:
                os.utime(self._text)
            except OSError:
                pass
            else:
                return
        os.close(os.open(self._text, os.O_CREAT | os.O_WRONLY | (0 if exist_ok else os.O_EXCL), mode))

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            os.unlink(self._text)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rmdir(self) -> None:
        os.rmdir(self._text)

    def chmod(self, mode: int) -> None:
        os.chmod(self._text, mode)

    def rename(self, target: str | os.PathLike[str]) -> HostPath:
        os.rename(self._text, target)
        return HostPath(target)

    def replace(self, target: str | os.PathLike[str]) -> HostPath:
        os.replace(self._text, target)
        return HostPath(target)

    def symlink_to(self, target: str | os.PathLike[str]) -> None:
        os.symlink(target, self._text)

    def readlink(self) -> HostPath:
        return HostPath(os.readlink(self._text))

    def resolve(self, strict: bool = False) -> HostPath:
        return HostPath(os.path.realpath(self._text, strict=strict))


def as_host(path: str | os.PathLike[str]) -> HostPath:
    """``path`` as a HostPath: itself when it is one (for callers that take pathlib paths too)."""
    return path if type(path) is HostPath else HostPath(path)


__all__ = ["HostPath", "as_host"]
