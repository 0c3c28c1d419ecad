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
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from typing import Any

    from kfdguard.host.beneath import Beneath
    from kfdguard.host.paths import HostPath

# _IOR('K', 0x01, struct kfd_ioctl_get_version_args) from <linux/kfd_ioctl.h>:
# direction read (2) << 30 | size 8 << 16 | type 'K' << 8 | nr 1.
AMDKFD_IOC_GET_VERSION = 0x80084B01

# The budget of one read of a log (the journal over all the boots asked for, /dev/kmsg, a file): the boot
# pass and the resident (MemoryMax=128M) both read through it, so nothing logged can grow them past it.
# A kernel record holds at most 1 KiB of text (printk's LOG_LINE_MAX, PRINTKRB_RECORD_MAX: 1024), so an
# entry longer than ENTRY_LIMIT is no kernel line: it is cut there, and counted.
ENTRY_LIMIT = 4096
READ_ENTRIES = 200_000
READ_CHARS = 16 << 20
# Past the budget, the entries left are still counted (not kept), up to this many.
COUNT_LIMIT = 200_000
# Boot-time userspace messages that explain compute problems, besides the kernel's: the program, by the
# system unit journald files its messages under. journald stamps _SYSTEMD_UNIT and _UID itself (trusted
# fields: from the sender's cgroup and credentials); SYSLOG_IDENTIFIER is whatever the sender wrote.
JOURNAL_UNITS = {"systemd-modules-load.service": "systemd-modules-load", "systemd-udevd.service": "systemd-udevd"}
JOURNAL_IDENTIFIERS = tuple(JOURNAL_UNITS.values())


class LogUnavailable(Exception):
    """A log source cannot be read here; the message says why."""


class LogLines(list[str]):
    """The lines of one read (one boot of the journal, /dev/kmsg), and what its budget left out:
    ``cut`` entries shortened to ENTRY_LIMIT, ``dropped`` entries not kept because the read's budget
    was spent (counted up to COUNT_LIMIT; ``more`` when there were more still), ``unread`` when the
    budget was spent before this boot was reached, ``refused`` entries whose trusted fields do not say
    the kernel or a boot-time program wrote them."""

    cut = 0
    dropped = 0
    more = False
    unread = False
    refused = 0

    def budget_notes(self, source: str) -> list[str]:
        """What the budget did to this read, in words ("" parts left out)."""
        notes = []
        if self.cut:
            notes.append(f"{self.cut} {source} entries longer than {ENTRY_LIMIT} characters cut")
        if self.dropped or self.more:
            count = f"more than {self.dropped}" if self.more else str(self.dropped)
            notes.append(
                f"{count} {source} entries dropped by the read budget ({READ_ENTRIES} entries or "
                f"{READ_CHARS >> 20} MiB a read; the oldest are kept)"
            )
        if self.unread:
            notes.append(f"not read: the read budget ({READ_ENTRIES} entries or {READ_CHARS >> 20} MiB) was spent")
        return notes


class ReadBudget:
    """What one read may still keep; ``take`` cuts an entry and says whether it is kept."""

    def __init__(self) -> None:
        self.entries = READ_ENTRIES
        self.chars = READ_CHARS
        self.counted = 0  # entries counted past the budget, over the whole read

    @property
    def spent(self) -> bool:
        return self.entries <= 0 or self.chars <= 0

    def take(self, message: str, lines: LogLines) -> str | None:
        """``message`` cut to the entry limit, or None (and counted in ``lines``) when the budget is spent."""
        if self.spent:
            self.counted += 1
            lines.dropped += 1
            return None
        if len(message) > ENTRY_LIMIT:
            message = message[:ENTRY_LIMIT]
            lines.cut += 1
        self.entries -= 1
        self.chars -= len(message)
        return message

    def exhausted(self) -> bool:
        """Spent, and no longer even counting: reading on would only cost time."""
        return self.spent and self.counted >= COUNT_LIMIT


def _field(entry: Mapping[str, object], name: str) -> str:
    """A journal field as text: systemd-python converts some (_UID, SYSLOG_FACILITY) to int, others to str."""
    value = entry.get(name)
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return "" if value is None else str(value)


def journal_ident(entry: Mapping[str, object]) -> str | None:
    """Who wrote a journal entry, by the fields journald stamps itself and its sender cannot set:
    "kernel", a boot-time program of JOURNAL_UNITS, or None (not evidence of either).

    - _TRANSPORT=kernel is what journald read from /dev/kmsg. The kernel's own records have facility
      LOG_KERN (0); printk's devkmsg_write gives a record written into /dev/kmsg from userspace a
      facility other than 0 (LOG_USER when the writer names none), so such a record is never the kernel's.
      Writing into /dev/kmsg takes write access to the node (0644 root on Debian), so journald parses its
      identifier: it counts as a boot-time program when it names one (early boot, before journald listens).
    - Any other transport (syslog, journal, stdout): only a message from a process that runs as root
      (_UID=0) inside a boot-time program's system unit (_SYSTEMD_UNIT, from the sender's cgroup, which
      an unprivileged user cannot join). SYSLOG_IDENTIFIER and MESSAGE are the sender's to choose:
      ``logger -t systemd-udevd`` or ``-t kernel`` by any user proves nothing.
    """
    transport = _field(entry, "_TRANSPORT")
    if transport == "kernel":
        facility = _field(entry, "SYSLOG_FACILITY")
        if facility in ("", "0"):
            return "kernel"
        ident = _field(entry, "SYSLOG_IDENTIFIER")
        return ident if ident in JOURNAL_IDENTIFIERS else None
    if _field(entry, "_UID") != "0":
        return None
    return JOURNAL_UNITS.get(_field(entry, "_SYSTEMD_UNIT"))


def kmsg_is_kernel(record: str) -> bool:
    """Whether a /dev/kmsg record ("pri,seq,usec,flags;text") is the kernel's: facility LOG_KERN (0).

    printk's devkmsg_write stamps what userspace writes into /dev/kmsg with a facility other than 0."""
    head = record[: record.find(",")]
    return head.isascii() and head.isdigit() and len(head) <= 6 and int(head) >> 3 == 0


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
        self,
        root: Root | None = None,
        runner: Runner | None = None,
        journal_dir: str | os.PathLike[str] | None = None,
        journal_open: Callable[[str | None], Any] | None = None,
    ) -> None:
        self.root = root or Root()
        self.provenance = "host" if self.root.is_host else "directory"
        self.runner = runner or Runner()
        # None: the host's journal, or the image's /var/log/journal under another root.
        self.journal_dir = None if journal_dir is None else as_host(journal_dir)
        # What opens the journal (a directory's files, or the system journal when None): systemd-python's
        # reader; a test hands in a reader of its own making.
        self.journal_open = journal_open or open_journal
        self._beneath: Beneath | None = None  # made when a path under a root other than / is first asked for

    def _place(self, path: HostPath) -> str | HostPath:
        """Where the kernel should look: the path itself on the host; under another root (an image, a
        bundle), its place with every link resolved inside that root, so that a planted ``dev/kfd ->
        /dev/kfd`` is refused (OSError EXDEV, host/beneath.py) rather than opened on the host (issue 35)."""
        if self.root.is_host:
            return path
        if self._beneath is None:
            from kfdguard.host.beneath import Beneath

            self._beneath = Beneath(self.root.path)
        return self._beneath.realpath(path)

    def stat_node(self, path: HostPath) -> NodeStat | None:
        try:
            place = self._place(path)
            st = os.stat(place)
        except FileNotFoundError:
            return None
        acl: bytes | None = None
        try:
            acl = os.getxattr(place, "system.posix_acl_access")
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT):
                raise
        return node_stat_from(st, acl)

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        import fcntl

        try:
            fd = os.open(self._place(path), os.O_RDWR | os.O_CLOEXEC)
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
        fd = os.open(self.root.dev / "kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            return kernel_records(_kmsg_records(fd))
        finally:
            os.close(fd)

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        try:
            with open(self.root.proc / "sys/kernel/random/boot_id", encoding="ascii") as handle:
                current = handle.read().strip().replace("-", "")
        except OSError as exc:
            raise LogUnavailable(f"boot id unknown: {exc.strerror or exc}") from None
        directory = self.journal_dir
        if directory is None and not self.root.is_host:
            directory = self.root.var_lib.parent / "log/journal"
        try:
            reader = self.journal_open(str(directory) if directory else None)
        except OSError as exc:
            raise LogUnavailable(f"cannot open the journal: {exc.strerror or exc}") from None
        try:
            # A hint to sd-journal (it may still return more): decompress no more of a field than an entry
            # may keep. 4 bytes a character at most, and one more: a field cut here is still seen as cut.
            reader.data_threshold = 4 * ENTRY_LIMIT + 4
            ids = [current, *self._earlier_boots(reader, current, boots)]
            budget = ReadBudget()
            result: list[tuple[int, list[str]]] = []
            for offset, boot_id in enumerate(ids):
                lines = _read_boot(reader, boot_id, budget)
                if offset == 0 and not lines and not lines.dropped:
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
        fd = os.open(self._place(path), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISCHR(st.st_mode):
                raise OSError(errno.EINVAL, f"{path} is not a character device")
            proc = f"{PROC_SELF_FD}/{fd}"
            os.chown(proc, uid, gid)
            os.chmod(proc, mode)
        finally:
            os.close(fd)


def _kmsg_records(fd: int) -> Iterator[str]:
    """The records of /dev/kmsg open at ``fd``: one a read, until there is none left."""
    while True:
        try:
            chunk = os.read(fd, 8192)
        except BlockingIOError:
            return
        except BrokenPipeError:
            # The ring buffer overwrote records we had not read yet;
            # the next read continues with the oldest one still there.
            continue
        if not chunk:
            return
        yield chunk.decode(errors="replace").rstrip("\n")


def kernel_records(records: Iterable[str]) -> LogLines:
    """The kernel's own records among /dev/kmsg records, within one read's budget."""
    kept = LogLines()
    budget = ReadBudget()
    for record in records:
        if budget.exhausted():
            kept.more = True
            break
        if not kmsg_is_kernel(record):
            kept.refused += 1
            continue
        line = budget.take(record, kept)
        if line is not None:
            kept.append(line)
    return kept


def open_journal(path: str | None) -> Any:
    """systemd-python's journal reader: the system journal, or the files of a directory."""
    try:
        from systemd import journal
    except ImportError:
        raise LogUnavailable("systemd-python is not installed") from None
    return journal.Reader(path=path) if path else journal.Reader()


def _read_boot(reader: Any, boot_id: str, budget: ReadBudget) -> LogLines:
    """One boot's kernel and boot-time program lines, within what is left of the read's budget."""
    lines = LogLines()
    if budget.exhausted():
        lines.unread = True
        return lines
    # Filtered by journald's own fields on its side, so that no other entry is even loaded: the kernel
    # transport, or root inside a boot-time program's unit (sd-journal: one field's values are OR'd,
    # different fields AND'd, a disjunction ORs the two groups).
    reader.flush_matches()
    reader.add_match(_BOOT_ID=boot_id, _TRANSPORT="kernel")
    reader.add_disjunction()
    reader.add_match(*(f"_SYSTEMD_UNIT={unit}" for unit in JOURNAL_UNITS), _BOOT_ID=boot_id, _UID="0")
    reader.seek_head()
    for entry in reader:
        if budget.exhausted():
            lines.more = True
            break
        # The same test on each entry: the filter is an optimisation, this is the boundary.
        ident = journal_ident(entry)
        if ident is None:
            lines.refused += 1
            continue
        message = entry.get("MESSAGE", "")
        if isinstance(message, bytes):
            message = message.decode(errors="replace")
        kept = budget.take(str(message), lines)
        if kept is not None:
            lines.append(journal_line(_usec(entry.get("__MONOTONIC_TIMESTAMP")), ident, kept.replace("\n", " ")))
    return lines


def _usec(mono: object) -> int:
    # systemd-python gives Monotonic(timestamp=timedelta, bootid=UUID), a namedtuple.
    delta = mono[0] if isinstance(mono, tuple) and mono else None
    seconds = getattr(delta, "total_seconds", None)
    return int(seconds() * 1_000_000) if callable(seconds) else 0
