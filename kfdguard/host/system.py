"""The System layer: everything that touches the machine beyond reading files.

Device nodes (stat, ACLs, the KFD version ioctl), the kernel's message
buffer, subprocesses and (for enforcement) writes all go through a
``System``. ``RealSystem`` does the syscalls; the simulated machines in
``kfdguard.simulate`` answer the same calls from their recorded state, which
is how a machine can be rendered and probed without root.
"""

from __future__ import annotations

import abc
import errno
import os
import stat
import struct

from kfdguard.access import AclEntry, NodeStat, parse_posix_acl
from kfdguard.host.paths import as_host
from kfdguard.host.root import PROC_SELF_FD, Root
from kfdguard.host.runner import Runner, RunResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kfdguard.host.paths import HostPath

# _IOR('K', 0x01, struct kfd_ioctl_get_version_args) from <linux/kfd_ioctl.h>:
# direction read (2) << 30 | size 8 << 16 | type 'K' << 8 | nr 1.
AMDKFD_IOC_GET_VERSION = 0x80084B01
KMSG_RECORD_LIMIT = 200_000


JOURNAL_LINE_LIMIT = 200_000
# Boot-time userspace messages that explain compute problems, besides the kernel's.
JOURNAL_IDENTIFIERS = ("systemd-modules-load", "systemd-udevd")


class LogUnavailable(Exception):
    """A log source cannot be read here; the message says why."""


def journal_line(monotonic_usec: int, ident: str, message: str) -> str:
    """An entry as ``journalctl -o short-monotonic`` shows it (what kernellog parses)."""
    return f"[{monotonic_usec // 1_000_000:5d}.{monotonic_usec % 1_000_000:06d}] localhost {ident}: {message}"


class KfdIoctlError(Exception):
    """Opening /dev/kfd or the version ioctl failed; ``errno`` says how."""

    def __init__(self, step: str, err: int, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
        self.errno = err


class System(abc.ABC):
    """What needs more than reading files. The service and the commands see only this interface;
    which implementation answers (RealSystem, a simulated machine) is chosen at the edge
    (``kfdguard.app.targets``), and nothing branches on it.

    An ABC rather than a typing.Protocol: ``typing`` stays off the boot path, and the
    writes below are shared by every implementation.
    """

    root: Root
    # Where the answers come from, for the report only ("host", "directory", "simulated").
    provenance: str = "host"

    @abc.abstractmethod
    def stat_node(self, path: HostPath) -> NodeStat | None:
        """Attributes of a device node (following symlinks); None if absent."""

    @abc.abstractmethod
    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        """Open the KFD node read-write and ask its interface version."""

    @abc.abstractmethod
    def read_kmsg(self) -> list[str]:
        """The kernel's message buffer as /dev/kmsg records ("pri,seq,usec,flags;text")."""

    @abc.abstractmethod
    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        """Kernel and boot-time udev/modules-load messages of this boot and ``boots`` earlier ones.

        Returns (0, lines), (-1, lines)...; raises LogUnavailable.
        """

    @abc.abstractmethod
    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        """Run a command through the one runner (or what stands for it)."""

    # --- changes (enforce is the only caller) ------------------------------------------

    def write_file(self, path: HostPath, data: bytes, mode: int = 0o644) -> None:
        from kfdguard.host.files import atomic_write

        atomic_write(path, data, mode)

    def remove_file(self, path: HostPath) -> None:
        from kfdguard.host.files import check_target

        if check_target(path) is not None:
            os.unlink(path)

    @abc.abstractmethod
    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        """chown and chmod a device node, refusing anything that is not one."""

    def add_to_group(self, user: str, group: str, timeout: float) -> RunResult:
        return self.run(["gpasswd", "-a", user, group], timeout=timeout)

    def initramfs_files(self, release: str, timeout: float) -> list[str] | None:
        """File names inside the release's initramfs; None when it cannot be listed."""
        image = self.root.boot / f"initrd.img-{release}"
        if image.exists():
            result = self.run(["lsinitramfs", str(image)], timeout=timeout)
        else:
            image = self.root.boot / f"initramfs-{release}.img"
            if not image.exists():
                return None
            result = self.run(["lsinitrd", str(image)], timeout=timeout)
        return result.stdout.splitlines() if result.ok else None


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
    def __init__(
        self, root: Root | None = None, runner: Runner | None = None, journal_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self.root = root or Root()
        self.provenance = "host" if self.root.is_host else "directory"
        self.runner = runner or Runner()
        # None: the host's journal, or the image's /var/log/journal under another root.
        self.journal_dir = None if journal_dir is None else as_host(journal_dir)

    def stat_node(self, path: HostPath) -> NodeStat | None:
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

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
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

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        try:
            from systemd import journal
        except ImportError:
            raise LogUnavailable("systemd-python is not installed") from None
        try:
            with open(self.root.proc / "sys/kernel/random/boot_id", encoding="ascii") as handle:
                current = handle.read().strip().replace("-", "")
        except OSError as exc:
            raise LogUnavailable(f"boot id unknown: {exc.strerror or exc}") from None
        directory = self.journal_dir
        if directory is None and not self.root.is_host:
            directory = self.root.var_lib.parent / "log/journal"
        try:
            reader = journal.Reader(path=str(directory)) if directory else journal.Reader()
        except OSError as exc:
            raise LogUnavailable(f"cannot open the journal: {exc.strerror or exc}") from None
        try:
            ids = [current, *self._earlier_boots(reader, current, boots)]
            result = []
            for offset, boot_id in enumerate(ids):
                reader.flush_matches()
                reader.add_match(_BOOT_ID=boot_id, _TRANSPORT="kernel")
                reader.add_disjunction()
                reader.add_match(_BOOT_ID=boot_id)
                for ident in JOURNAL_IDENTIFIERS:
                    reader.add_match(SYSLOG_IDENTIFIER=ident)
                reader.seek_head()
                lines: list[str] = []
                for entry in reader:
                    lines.append(_format_entry(entry))
                    if len(lines) >= JOURNAL_LINE_LIMIT:
                        break
                if offset == 0 and not lines:
                    raise LogUnavailable("the journal has no entries for this boot")
                result.append((-offset, lines))
            return result
        finally:
            reader.close()

    @staticmethod
    def _earlier_boots(reader: object, current: str, count: int) -> list[str]:
        if count <= 0:
            return []
        boots = []
        for boot in reader.query_unique("_BOOT_ID"):  # type: ignore[attr-defined]
            hexid = boot.hex if hasattr(boot, "hex") else str(boot).replace("-", "")
            if hexid == current:
                continue
            reader.flush_matches()  # type: ignore[attr-defined]
            reader.add_match(_BOOT_ID=hexid)  # type: ignore[attr-defined]
            reader.seek_head()  # type: ignore[attr-defined]
            first = reader.get_next()  # type: ignore[attr-defined]
            if first:
                boots.append((first.get("__REALTIME_TIMESTAMP"), hexid))
        boots.sort(reverse=True)
        return [hexid for _, hexid in boots[:count]]

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        return self.runner.run(argv, timeout=timeout)

    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        # An O_PATH descriptor pins the inode without opening the device (opening
        # /dev/kfd would create a KFD process context); chmod through
        # /proc/self/fd then acts on exactly that inode, never on a symlink's target.
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISCHR(st.st_mode):
                raise OSError(errno.EINVAL, f"{path} is not a character device")
            proc = f"{PROC_SELF_FD}/{fd}"
            os.chown(proc, uid, gid)
            os.chmod(proc, mode)
        finally:
            os.close(fd)


def _format_entry(entry: dict[str, object]) -> str:
    message = entry.get("MESSAGE", "")
    if isinstance(message, bytes):
        message = message.decode(errors="replace")
    mono = entry.get("__MONOTONIC_TIMESTAMP")
    # systemd-python gives Monotonic(timestamp=timedelta, bootid=UUID), a namedtuple.
    delta = mono[0] if isinstance(mono, tuple) and mono else None
    seconds = getattr(delta, "total_seconds", None)
    usec = int(seconds() * 1_000_000) if callable(seconds) else 0
    ident = "kernel" if entry.get("_TRANSPORT") == "kernel" else str(entry.get("SYSLOG_IDENTIFIER", "unknown"))
    return journal_line(usec, ident, str(message).replace("\n", " "))
