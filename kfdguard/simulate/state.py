"""The simulated machine's own bookkeeping, kept beside the rendered tree.

``<root>/.kfdguard-sim/`` holds what a directory tree cannot: device nodes
(type, numbers, owner, mode, ACL), the kernel's message buffer, a clock, and
the description the machine was rendered from. Files are plain text, so
probing a simulated machine costs no more imports than probing a real one.
"""

from __future__ import annotations

import os
import stat

from kfdguard.access import AclEntry, NodeStat
from kfdguard.host.root import Root

SIM_DIR = ".kfdguard-sim"
UEVENT_FIFO = "uevent.fifo"  # the simulated machine's udev monitor: lines "ACTION SUBSYSTEM NAME [KEY=VALUE...]"
KMSG_FIFO = "kmsg.fifo"  # the simulated kernel's live log: the kmsg records it prints while a service follows


def sim_dir(root: Root) -> str:
    return str(root.path / SIM_DIR)


def is_simulated(root: Root) -> bool:
    return os.path.isdir(sim_dir(root))


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def uevent_fifo(root: Root) -> str:
    return os.path.join(sim_dir(root), UEVENT_FIFO)


def kmsg_fifo(root: Root) -> str:
    return os.path.join(sim_dir(root), KMSG_FIFO)


def send_uevents(root: Root, lines: list[str]) -> bool:
    """Tell a listening service what udev would announce; False when nobody listens."""
    return _send(uevent_fifo(root), lines)


def send_kmsg(root: Root, records: list[str]) -> bool:
    """Hand new kernel log records to a service following the log; False when nobody follows."""
    return _send(kmsg_fifo(root), records)


def _send(fifo: str, lines: list[str]) -> bool:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # no FIFO yet (ENOENT) or no reader (ENXIO): events are lost, as with no monitor
        return False
    try:
        os.write(fd, "".join(line + "\n" for line in lines).encode())
    except OSError:  # a full pipe (EAGAIN): the listener re-reads the whole machine anyway
        return False
    finally:
        os.close(fd)
    return True


# --- device nodes ------------------------------------------------------------


def format_acl(acl: tuple[AclEntry, ...]) -> str:
    return ",".join(f"{e.tag}:{'' if e.qualifier is None else e.qualifier}:{e.perms}" for e in acl) or "-"


def parse_acl(text: str) -> tuple[AclEntry, ...]:
    if text == "-":
        return ()
    entries = []
    for item in text.split(","):
        tag, qualifier, perms = item.split(":")
        entries.append(AclEntry(tag, int(qualifier) if qualifier else None, int(perms)))
    return tuple(entries)


def read_devices(root: Root) -> dict[str, NodeStat]:
    nodes: dict[str, NodeStat] = {}
    try:
        with open(os.path.join(sim_dir(root), "devices"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return nodes
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        path, kind, major, minor, uid, gid, mode, acl = line.split()
        nodes[path] = NodeStat(kind, int(major), int(minor), int(uid), int(gid), int(mode, 8), parse_acl(acl))
    return nodes


def write_devices(root: Root, nodes: dict[str, NodeStat]) -> None:
    lines = ["# path kind major minor uid gid mode acl  (simulated device nodes)"]
    for path in sorted(nodes):
        n = nodes[path]
        lines.append(f"{path} {n.kind} {n.major} {n.minor} {n.uid} {n.gid} {n.mode:04o} {format_acl(n.acl)}")
    _write(os.path.join(sim_dir(root), "devices"), "\n".join(lines) + "\n")


# --- key=value state -------------------------------------------------------------


def read_state(root: Root) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        with open(os.path.join(sim_dir(root), "state"), encoding="utf-8") as handle:
            for line in handle.read().splitlines():
                key, sep, value = line.partition("=")
                if sep:
                    values[key] = value
    except FileNotFoundError:
        pass
    return values


def write_state(root: Root, values: dict[str, str]) -> None:
    text = "".join(f"{k}={v}\n" for k, v in sorted(values.items()))
    _write(os.path.join(sim_dir(root), "state"), text)


# --- kernel message buffer ------------------------------------------------------


def set_fault(root: Root, name: str, value: str) -> None:
    """Arm a simulated fault ("fault:modprobe" = "hang", "fault:kfd-open" = "eperm", ...)."""
    values = read_state(root)
    values[f"fault:{name}"] = value
    write_state(root, values)


def read_kmsg(root: Root) -> list[str]:
    return read_log(os.path.join(sim_dir(root), "kmsg"))


def read_log(path: str) -> list[str]:
    """The lines of a simulated log (kmsg records, journal lines); [] when missing or not a file.

    The logs are machine content that tests spoil on purpose: a FIFO planted in a
    log's place must not hang the reader (O_NONBLOCK, then regular files only).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        return handle.read().decode("utf-8", errors="replace").splitlines()
