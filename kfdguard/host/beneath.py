"""Opening a machine root's files without leaving the root: openat2(RESOLVE_BENEATH), in Python.

A Root that is not ``/`` is a directory somebody else may have filled: a snapshot bundle from a bug
report, a simulated machine, an image. Handed to ``os.open``, ``ROOT/etc/modprobe.d/x.conf`` follows a
link ``-> /etc/shadow`` to the *host's* file, and whatever kfdguard says about that file (a parse
complaint quotes its lines) shows the host's secret. Python has no openat2 wrapper (and ctypes costs
~4 ms to import, more than the boot pass's margin), so ``Beneath`` does what RESOLVE_BENEATH does:
it walks the path one component at a time from a descriptor of the root, reads each symbolic link
itself, and opens each step relative to the directory before it with ``O_NOFOLLOW``, so no name is
ever resolved by the kernel past a link it was not shown.

A link that leads out of the root is refused (``EXDEV``, as openat2 says it), not re-rooted as
RESOLVE_IN_ROOT would: an absolute target other than one inside the root's own directory, or a
``..`` that climbs above the root. Why refuse: the trees kfdguard replays never hold such a link when
kfdguard made them (``kfdguard snapshot`` makes every absolute target relative and leaves out links
that lead out of the machine, ``snapshot/bundle.py``; simulated machines link relatively), so one
that is there was planted or is broken, and the person reading the verdict should see it, where
re-rooting would silently read whatever the tree's author put at the re-rooted place. An installed
system mounted at ``--root /mnt`` with absolute links (``/etc/alternatives``) gets "link leaves the
machine's root" for those files, where before it silently read the host's.

Directories already walked are kept open (a bounded cache of ``O_PATH`` descriptors), so the second
file of a directory costs one ``openat``: the boot benchmark reads a simulated root through this.
"""

from __future__ import annotations

import errno
import os
import stat

from kfdguard.host.paths import HostPath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

LEAVES = "link leaves the machine's root"
LINK_HOPS = 40  # the kernel's own limit on links followed in one lookup
OPEN_DIRS = 64  # directory descriptors kept; a pass reads from about fifty directories
LINKS = 256  # link targets kept
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def leaves(detail: str) -> OSError:
    return OSError(errno.EXDEV, f"{LEAVES} ({detail})")


class Beneath:
    """Resolves and opens paths under one root directory, never past it. Not thread-safe (a Reader's)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root).rstrip("/") or "/"
        self._root_parts = HostPath(self.root).parts
        self._real_root: str | None = None
        self._dirs: dict[tuple[str, ...], int] = {}
        # Links met, by their resolved place: sysfs reads go through the same class -> device link
        # dozens of times. A link changed since is followed as it was, still beneath the root.
        self._links: dict[tuple[str, ...], str] = {}

    def close(self) -> None:
        dirs, self._dirs = self._dirs, {}
        for fd in dirs.values():
            os.close(fd)

    def __del__(self) -> None:
        try:  # noqa: SIM105 (contextlib stays off the boot path)
            self.close()
        except (OSError, TypeError):  # TypeError: os already torn down at interpreter exit
            pass

    # -- the walk --------------------------------------------------------------------------------

    def parts(self, path: str | os.PathLike[str]) -> list[str]:
        """The path's parts below the root; OSError(EXDEV) for a path that is not under it."""
        if type(path) is HostPath and path.parts[: len(self._root_parts)] == self._root_parts:
            return list(path.parts[len(self._root_parts) :])  # a Root's own path: already split
        text = os.fspath(path)
        if text == self.root:
            return []
        prefix = self.root if self.root == "/" else self.root + "/"
        if not text.startswith(prefix):
            raise OSError(errno.EXDEV, f"{text}: not under the machine's root {self.root}")
        return [p for p in text[len(prefix) :].split("/") if p and p != "."]

    def _dir(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the real directory at ``parts`` (already resolved: no link among them)."""
        fd = self._dirs.get(parts)
        if fd is not None:
            return fd
        if parts:
            parent = self._dir(parts[:-1])
            fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
        else:
            fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        if len(self._dirs) >= OPEN_DIRS:
            self.close()  # nobody holds one across calls: the walk asks again for each step
        self._dirs[parts] = fd
        return fd

    def _inside(self, target: str) -> list[str] | None:
        """An absolute link target's parts below the root, or None when it points out of it."""
        for root in (self.root, self._real()):
            if target == root or target.startswith(root.rstrip("/") + "/"):
                return [p for p in target[len(root) :].split("/") if p and p != "."]
        return None

    def _real(self) -> str:
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def resolve(self, path: str | os.PathLike[str], *, follow: bool = True) -> tuple[tuple[str, ...], str | None]:
        """(resolved parts of the directory that holds the last component, that component's name).

        Every link on the way is followed inside the root (the last one too when ``follow``); the name
        is None when the path is a directory reached by ``..`` or the root itself. Raises OSError:
        EXDEV for a link that leads out, ELOOP, ENOENT/ENOTDIR for a missing directory on the way.
        """
        todo = self.parts(path)
        todo.reverse()  # a stack: the next part last
        done: list[str] = []
        hops = 0
        via = ""  # the last link followed, for the message
        while todo:
            part = todo.pop()
            if part == "..":
                if not done:
                    raise leaves(via or f"{os.fspath(path)}: '..' above the root")
                done.pop()
                continue
            last = not todo
            if last and not follow:
                return tuple(done), part
            target = self._link(done, part, last)
            if target is None:
                if last:
                    return tuple(done), part
                done.append(part)
                continue
            hops += 1
            if hops > LINK_HOPS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            via = "/" + "/".join((*done, part)) + " -> " + target
            if target.startswith("/"):
                inside = self._inside(target)
                if inside is None:
                    raise leaves(via)
                done = []
                todo.extend(reversed(inside))
            else:
                todo.extend(reversed([p for p in target.split("/") if p and p != "."]))
        return tuple(done), None

    def _link(self, done: list[str], part: str, last: bool) -> str | None:
        """The target of ``part`` in the resolved directory ``done`` when it is a link; None when it
        is not (or, as the last component, is missing: the caller's call says so)."""
        key = (*done, part)
        if not last and key in self._dirs:
            return None  # a directory walked before: known not to be a link
        target = self._links.get(key)
        if target is not None:
            return target
        where = self._dir(tuple(done))
        try:
            mode = os.stat(part, dir_fd=where, follow_symlinks=False).st_mode
        except FileNotFoundError:
            if last:
                return None
            raise
        if not stat.S_ISLNK(mode):
            return None
        target = os.readlink(part, dir_fd=where)
        if len(self._links) >= LINKS:
            self._links.clear()
        self._links[key] = target
        return target

    def _at(self, path: str | os.PathLike[str], follow: bool, call: Callable[[str, int], object]) -> object:
        """``call(name, directory fd)`` on the path's last component, its directory resolved beneath
        the root, and itself too when ``follow``."""
        parts, name = self.resolve(path, follow=follow)
        if name is None:  # a directory reached through "..", or the root: its own parent and name
            if not parts:
                return call(".", self._dir(()))
            parts, name = parts[:-1], parts[-1]
        return call(name, self._dir(parts))

    # -- what a Reader needs ---------------------------------------------------------------------

    def open(self, path: str | os.PathLike[str], flags: int) -> int:
        """os.open(path, flags) beneath the root; the last link is followed there, not by the kernel
        (with O_NOFOLLOW in ``flags``, not at all: a link is ELOOP, as os.open says)."""

        def opened(name: str, where: int) -> int:
            return os.open(name, flags | os.O_NOFOLLOW, dir_fd=where)

        try:
            # Most names are no link: one openat in their (cached) directory says so.
            fd = self._at(path, False, opened)
        except OSError as exc:
            # O_NOFOLLOW on a link is ELOOP; with O_DIRECTORY, ENOTDIR.
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or flags & os.O_NOFOLLOW:
                raise
            fd = self._at(path, True, opened)  # a link: followed, beneath the root
        assert isinstance(fd, int)
        return fd

    def stat(self, path: str | os.PathLike[str], *, follow: bool = True) -> os.stat_result:
        def stated(name: str, where: int) -> os.stat_result:
            return os.stat(name, dir_fd=where, follow_symlinks=False)

        result = self._at(path, False, stated)
        assert isinstance(result, os.stat_result)
        if follow and stat.S_ISLNK(result.st_mode):
            result = self._at(path, True, stated)
            assert isinstance(result, os.stat_result)
        return result

    def readlink(self, path: str | os.PathLike[str]) -> str:
        def read(name: str, where: int) -> str:
            return os.readlink(name, dir_fd=where)

        result = self._at(path, False, read)
        assert isinstance(result, str)
        return result

    def realpath(self, path: str | os.PathLike[str]) -> str:
        """The path with every link resolved beneath the root (the last one need not exist)."""
        parts, name = self.resolve(path)
        joined = "/".join((*parts, name) if name is not None else parts)
        if not joined:
            return self.root
        return f"{self.root}/{joined}" if self.root != "/" else f"/{joined}"


__all__ = ["LEAVES", "Beneath", "leaves"]
