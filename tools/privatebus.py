"""A private D-Bus daemon with system-bus semantics and kfdguard's own bus policy.

It is configured like Debian's system bus (deny own and method calls by
default, EXTERNAL authentication) and includes dbus/org.kfdguard.Guardian1.conf
from this tree, so tests and the demo exercise the real policy file with a
real dbus-daemon. Name ownership needs root, exactly as on a real system.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "dbus" / "org.kfdguard.Guardian1.conf"
POLKIT_POLICY = "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <include>{policy}</include>
  <include ignore_missing="yes">{polkit}</include>
  {extra}
</busconfig>
"""


class PrivateBus:
    def __init__(self, directory: Path | None = None, extra: str = "") -> None:
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="kfdguard-bus-")
        self.dir = directory or Path(self._tmp.name)  # type: ignore[union-attr]
        self.socket = self.dir / "system_bus_socket"
        self.address = f"unix:path={self.socket}"
        self.config = self.dir / "bus.conf"
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None

    def config_text(self) -> str:
        return CONFIG.format(socket=self.socket, policy=POLICY, polkit=POLKIT_POLICY, extra=self.extra)

    def start(self) -> PrivateBus:
        daemon = shutil.which("dbus-daemon") or "/usr/bin/dbus-daemon"
        self.config.write_text(self.config_text())
        # Non-root test users must reach the socket.
        os.chmod(self.dir, 0o755)  # noqa: S103 - a test bus directory, readable by the test users
        self.proc = subprocess.Popen(
            [daemon, f"--config-file={self.config}", "--nofork", "--nopidfile"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while not self.socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"dbus-daemon did not start: {err}")
            time.sleep(0.02)
        os.chmod(self.socket, 0o666)  # noqa: S103 - like /run/dbus/system_bus_socket
        return self

    def env(self) -> dict[str, str]:
        return {**os.environ, "DBUS_SYSTEM_BUS_ADDRESS": self.address}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> PrivateBus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
