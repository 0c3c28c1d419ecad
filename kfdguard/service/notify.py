"""sd_notify(3): systemd-python once the service runs, the bare datagram for READY.

READY=1 is on the display manager's path, and importing systemd.daemon costs
about 4 ms there (it imports socket, which builds its enums), a tenth of the
whole time to READY. The protocol is one datagram to $NOTIFY_SOCKET
(sd_notify(3) documents it as stable), which _send writes with the C socket
module alone. Everything after READY (STATUS=, WATCHDOG=1, STOPPING=1) goes
through systemd-python.
"""

from __future__ import annotations

import os

SEND_TIMEOUT = 5.0  # seconds a datagram may wait for room in the manager's queue


def notify(text: str, *, early: bool = False) -> bool:
    """Send READY=1, STATUS=..., WATCHDOG=1...; False when not run by systemd.

    ``early``: before the event loop, where every import counts (the bare datagram).
    """
    if not os.environ.get("NOTIFY_SOCKET"):
        return False
    if early:
        return _send(text)
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
    import _socket  # the C module: socket.py's enums are the cost being avoided

    address = os.environ["NOTIFY_SOCKET"]
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket, as sd_notify(3) allows
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM | _socket.SOCK_CLOEXEC)
        try:
            # Bounded, not non-blocking: a full queue (a manager busy with a boot's worth of units)
            # gives EAGAIN at once, and a READY=1 lost that way fails the unit at its start timeout.
            # libsystemd's sd_notify blocks; a manager that never reads must still not stall the boot.
            sock.settimeout(SEND_TIMEOUT)
            sock.sendto(text.encode(), address)
        finally:
            sock.close()
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
