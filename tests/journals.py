"""Real journal files for tests, written by systemd-journal-remote from journal export format.

The export format carries every field, journald's trusted ones (``_UID``, ``_SYSTEMD_UNIT``,
``_TRANSPORT``, ``_COMM``, ``_EXE``) too: that is how a test builds both what the kernel and the
boot-time programs log and what an unprivileged user can get into the journal (``logger -t
systemd-udevd ...``: ``_TRANSPORT=syslog``, ``_UID`` of the user, any ``SYSLOG_IDENTIFIER``), which
no client could do through journald's sockets, where journald stamps the trusted fields itself.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

JOURNAL_REMOTE = Path("/lib/systemd/systemd-journal-remote")
NOBODY = "65534"
# journald's trusted fields of a message from each boot-time program, as on Debian 12 (systemd 252):
# udevd's binary is udevadm (/lib/systemd/systemd-udevd links to it), its workers are "(udev-worker)".
PROGRAMS = {
    "systemd-modules-load": {"_SYSTEMD_UNIT": "systemd-modules-load.service", "_COMM": "systemd-modules",
                             "_EXE": "/usr/lib/systemd/systemd-modules-load"},
    "systemd-udevd": {"_SYSTEMD_UNIT": "systemd-udevd.service", "_COMM": "(udev-worker)", "_EXE": "/usr/bin/udevadm"},
}  # fmt: skip


def kernel(message: str, **fields: str) -> dict[str, str]:
    """A line the kernel printed: journald read it from /dev/kmsg."""
    return {"_TRANSPORT": "kernel", "SYSLOG_IDENTIFIER": "kernel", "SYSLOG_FACILITY": "0", "MESSAGE": message,
            **fields}  # fmt: skip


def program(ident: str, message: str) -> dict[str, str]:
    """A line a boot-time program (systemd-modules-load, systemd-udevd) logged, as root in its unit."""
    return {"_TRANSPORT": "journal", "SYSLOG_IDENTIFIER": ident, "_UID": "0", "_GID": "0", "_PID": "312",
            **PROGRAMS[ident], "MESSAGE": message}  # fmt: skip


def user(ident: str, message: str, transport: str = "syslog", uid: str = NOBODY) -> dict[str, str]:
    """What ``logger -t IDENT MESSAGE`` run by an unprivileged user leaves in the journal (``transport``
    syslog), or the same through the native socket (journal) or a service's output (stdout)."""
    return {"_TRANSPORT": transport, "SYSLOG_IDENTIFIER": ident, "_UID": uid, "_GID": uid, "_PID": "4242",
            "_COMM": "logger", "_EXE": "/usr/bin/logger", "_SYSTEMD_UNIT": "session-3.scope", "MESSAGE": message}  # fmt: skip


def export(entries: list[dict[str, str]]) -> bytes:
    """Journal export format; a field with a newline (or that is long) in its binary form."""
    out = bytearray()
    for entry in entries:
        for key, value in entry.items():
            data = value.encode()
            if b"\n" in data:
                out += key.encode() + b"\n" + len(data).to_bytes(8, "little") + data + b"\n"
            else:
                out += key.encode() + b"=" + data + b"\n"
        out += b"\n"
    return bytes(out)


def write_journal(directory: Path, boots: list[tuple[str, int, list[dict[str, str]]]]) -> Path:
    """A journal file in ``directory``: boots of (boot id, realtime base, entries), the entries a
    millisecond apart, three seconds into their boot."""
    if not JOURNAL_REMOTE.exists():
        pytest.fail("systemd-journal-remote is needed to write test journals; 'make test' installs it")
    entries = []
    for boot_id, base, fields in boots:
        for i, entry in enumerate(fields):
            entries.append({
                "__REALTIME_TIMESTAMP": str(base + i * 1000),
                "__MONOTONIC_TIMESTAMP": str(3_000_000 + i * 1000),
                "_BOOT_ID": boot_id,
                "PRIORITY": "6",
                "_HOSTNAME": "box",
                **entry,
            })  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(JOURNAL_REMOTE), "-o", str(directory / "remote.journal"), "-"], input=export(entries),
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    return directory
