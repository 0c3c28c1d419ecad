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
            # Non-blocking: a manager that does not read its socket must not stall the boot.
            sock.setblocking(False)
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
