"""The System layer: everything that touches the machine beyond reading files.

Device nodes (stat, ACLs, the KFD version ioctl), the kernel's message
buffer, subprocesses and (for enforcement) writes all go through a
``System``. ``RealSystem`` does the syscalls; the simulated machines in
``kfdguard.simulate`` answer the same calls from their recorded state, which
is how a machine can be rendered and probed without root.
"""

from __future__ import annotations

import errno
import os
import stat
import struct

from kfdguard.access import AclEntry, NodeStat, parse_posix_acl
from kfdguard.root import Root
from kfdguard.runner import Runner, RunResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

# _IOR('K', 0x01, struct kfd_ioctl_get_version_args) from <linux/kfd_ioctl.h>:
# direction read (2) << 30 | size 8 << 16 | type 'K' << 8 | nr 1.
AMDKFD_IOC_GET_VERSION = 0x80084B01
KMSG_RECORD_LIMIT = 200_000


class KfdIoctlError(Exception):
    """Opening /dev/kfd or the version ioctl failed; ``errno`` says how."""

    def __init__(self, step: str, err: int, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
        self.errno = err


class System:
    """Interface; see RealSystem and kfdguard.simulate.system.SimulatedSystem."""

    root: Root
    simulated: bool = False

    def stat_node(self, path: Path) -> NodeStat | None:
        """Attributes of a device node (following symlinks); None if absent."""
        raise NotImplementedError

    def kfd_version(self, path: Path) -> tuple[int, int]:
        """Open the KFD node read-write and ask its interface version."""
        raise NotImplementedError

    def read_kmsg(self) -> list[str]:
        """The kernel's message buffer as /dev/kmsg records ("pri,seq,usec,flags;text")."""
        raise NotImplementedError

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        raise NotImplementedError


def node_stat_from(st: os.stat_result, acl: bytes | None) -> NodeStat:
    mode = st.st_mode
    if stat.S_ISCHR(mode):
        kind = "char"
    elif stat.S_ISBLK(mode):
        kind = "block"
    elif stat.S_ISREG(mode):
        kind = "file"
    elif stat.S_ISDIR(mode):
        kind = "dir"
    else:
        kind = "other"
    entries: tuple[AclEntry, ...] = ()
    if acl:
        try:
            entries = parse_posix_acl(acl)
        except ValueError:
            entries = ()
    return NodeStat(
        kind=kind,
        major=os.major(st.st_rdev),
        minor=os.minor(st.st_rdev),
        uid=st.st_uid,
        gid=st.st_gid,
        mode=stat.S_IMODE(mode),
        acl=entries,
    )


class RealSystem(System):
    def __init__(self, root: Root | None = None, runner: Runner | None = None) -> None:
        self.root = root or Root()
        self.runner = runner or Runner()

    def stat_node(self, path: Path) -> NodeStat | None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        acl: bytes | None = None
        try:
            acl = os.getxattr(path, "system.posix_acl_access")
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT):
                raise
        return node_stat_from(st, acl)

    def kfd_version(self, path: Path) -> tuple[int, int]:
        import fcntl

        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as exc:
            raise KfdIoctlError("open", exc.errno or 0, exc.strerror or str(exc)) from None
        try:
            buf = bytearray(8)
            fcntl.ioctl(fd, AMDKFD_IOC_GET_VERSION, buf, True)
        except OSError as exc:
            raise KfdIoctlError("ioctl", exc.errno or 0, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)
        major, minor = struct.unpack("<II", buf)
        return major, minor

    def read_kmsg(self) -> list[str]:
        records: list[str] = []
        fd = os.open(self.root.dev / "kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            while len(records) < KMSG_RECORD_LIMIT:
                try:
                    chunk = os.read(fd, 8192)
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    # The ring buffer overwrote records we had not read yet;
                    # the next read continues with the oldest one still there.
                    continue
                if not chunk:
                    break
                records.append(chunk.decode(errors="replace").rstrip("\n"))
        finally:
            os.close(fd)
        return records

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        return self.runner.run(argv, timeout=timeout)
