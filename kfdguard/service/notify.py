"""sd_notify(3) through systemd-python, with the same datagram as a fallback."""

from __future__ import annotations

import os


def notify(text: str) -> bool:
    """Send READY=1, STATUS=..., WATCHDOG=1...; False when not run by systemd."""
    if not os.environ.get("NOTIFY_SOCKET"):
        return False
    try:
        from systemd import daemon
    except ImportError:
        return _send(text)
    try:
        return bool(daemon.notify(text))
    except OSError:
        # The manager's socket went away (a restart of systemd, a test's listener):
        # a status message is never worth the service.
        return False


def _send(text: str) -> bool:
    import socket

    address = os.environ["NOTIFY_SOCKET"]
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(text.encode(), address)
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Half of WATCHDOG_USEC, as sd_watchdog_enabled(3) advises; None when off."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2_000_000
