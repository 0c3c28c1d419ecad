"""A real systemd-journald, a throwaway namespace of it: what an unprivileged user can write is no evidence.

``systemd-journald NAMESPACE`` (systemd >= 245) opens its own sockets under /run/systemd/journal.NAMESPACE
(dev-log and socket mode 0666, as the system journal's) and writes /var/log/journal/MACHINE-ID.NAMESPACE;
it needs no systemd as PID 1. nobody logs through both sockets what issue 35's attacker logs, even trying
to set journald's trusted fields itself; journald stamps its own (_UID 65534, _TRANSPORT syslog/journal),
and RealSystem's reader, pointed at the namespace's files, finds nothing of this boot to read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kfdguard.host.root import Root
from kfdguard.host.system import LogUnavailable, RealSystem

JOURNALD = Path("/lib/systemd/systemd-journald")
SETPRIV = shutil.which("setpriv")
LOGGER = shutil.which("logger")
PYTHON = "/usr/bin/python3"  # the system's: nobody can run it wherever the checkout is
GC_IP = "amdgpu 0000:03:00.0: amdgpu: GC IP 0b0001 not supported in kfd"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not JOURNALD.exists() or not SETPRIV or not LOGGER or not Path(PYTHON).exists(),
    reason="needs root (to start systemd-journald and to log as nobody), systemd-journald, setpriv, logger, python3",
)


@pytest.fixture
def namespace() -> Iterator[tuple[Path, Path]]:
    """A running journald of a fresh namespace: (its socket directory, its journal directory); removed after."""
    name = f"kfdguardtest{uuid.uuid4().hex[:8]}"
    sockets = Path(f"/run/systemd/journal.{name}")
    machine_id = Path("/etc/machine-id").read_text().strip()
    files = [Path(f"{base}/{machine_id}.{name}") for base in ("/var/log/journal", "/run/log/journal")]
    process = subprocess.Popen([str(JOURNALD), name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not (sockets / "socket").exists() or not any(f.exists() for f in files):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"systemd-journald {name} did not start (exit {process.poll()})")
            time.sleep(0.05)
        yield sockets, next(f for f in files if f.exists())
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(sockets, ignore_errors=True)
        for f in files:
            shutil.rmtree(f, ignore_errors=True)


def as_nobody(*argv: str, stdin: bytes = b"") -> None:
    assert SETPRIV is not None
    subprocess.run([SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv], input=stdin,
                   check=True, timeout=30, capture_output=True)  # fmt: skip


# Through the native socket, a datagram that names journald's trusted fields itself: journald drops
# every field of a client's that begins with "_".
NATIVE = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(sys.stdin.buffer.read(), sys.argv[1])
"""


def entries_of(directory: Path, count: int) -> list[dict[str, object]]:
    """All entries of the namespace's files, once ``count`` of them are there (journald writes soon after)."""
    from systemd import journal

    deadline = time.monotonic() + 15
    while True:
        reader = journal.Reader(path=str(directory))
        try:
            found = [e for e in reader if e.get("_UID") == 65534]
        finally:
            reader.close()
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_what_nobody_logs_to_a_real_journald_is_not_read(namespace: tuple[Path, Path], tmp_path: Path) -> None:
    sockets, files = namespace
    as_nobody(str(LOGGER), "-u", str(sockets / "dev-log"), "-t", "systemd-udevd", GC_IP)
    as_nobody(str(LOGGER), "-u", str(sockets / "dev-log"), "-t", "kernel", GC_IP)
    forged = (
        f"SYSLOG_IDENTIFIER=systemd-udevd\nMESSAGE={GC_IP}\n_UID=0\n_TRANSPORT=kernel\n"
        "_SYSTEMD_UNIT=systemd-udevd.service\nSYSLOG_FACILITY=0\n"
    )
    as_nobody(PYTHON, "-c", NATIVE, str(sockets / "socket"), stdin=forged.encode())
    found = entries_of(files, 3)
    # The attack was delivered: three entries of this boot, as journald stamped them.
    assert sorted((str(e["_TRANSPORT"]), str(e["SYSLOG_IDENTIFIER"])) for e in found) == [
        ("journal", "systemd-udevd"),
        ("syslog", "kernel"),
        ("syslog", "systemd-udevd"),
    ]
    assert all(e["MESSAGE"] == GC_IP for e in found)
    assert not any(e.get("_SYSTEMD_UNIT") == "systemd-udevd.service" for e in found), "journald dropped the client's"
    random = tmp_path / "proc/sys/kernel/random"
    random.mkdir(parents=True)
    shutil.copy("/proc/sys/kernel/random/boot_id", random / "boot_id")
    system = RealSystem(Root(tmp_path), journal_dir=files)
    with pytest.raises(LogUnavailable, match="no entries for this boot"):
        system.read_journal(0)
