"""Issue 21: the shipped polkit rule lets the user kfdguard start exactly kfdguard's oneshots, through the real polkitd.

pkcheck (run as root, which may pass details) asks polkitd on a private bus whether a process of a
given user may do org.freedesktop.systemd1.manage-units with the details systemd itself sends for
StartUnit ("unit" and "verb": src/core/dbus-unit.c, bus_verify_manage_units_async_full).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kfdguard.service.starter import UNITS
from tools import polkitbus
from tools.polkitbus import FixtureUser, PolkitBus

SERVICE_USER = FixtureUser("kfdguard", 4261)
OTHER_USER = FixtureUser("kfdother", 4262)
MANAGE = "org.freedesktop.systemd1.manage-units"
ONESHOTS = tuple(UNITS.values())  # enforce, fallback@apply/clear, remedy@apply-ollama/clear-ollama
SYSTEMD_POLICY = Path("/usr/share/polkit-1/actions/org.freedesktop.systemd1.policy")
real = pytest.mark.skipif(polkitbus.available() is not None, reason=f"real polkitd: {polkitbus.available()}")
with_systemd = pytest.mark.skipif(not SYSTEMD_POLICY.exists(), reason="systemd's polkit actions are not installed")


@pytest.fixture(scope="module")
def polkit() -> Iterator[PolkitBus]:
    with tempfile.TemporaryDirectory(prefix="kfdguard-privsep-") as tmp:
        os.chmod(tmp, 0o755)  # the fixture users' processes are looked up by polkitd
        bus = PolkitBus(Path(tmp), [SERVICE_USER, OTHER_USER]).start()
        try:
            yield bus
        finally:
            bus.stop()


def allowed(bus: PolkitBus, user: FixtureUser, action: str, **details: str) -> bool:
    """What polkitd answers for a process of ``user`` (a sleep started as that user)."""
    subject = subprocess.Popen(
        ["setpriv", f"--reuid={user.uid}", f"--regid={user.uid}", "--clear-groups", "sleep", "30"]
    )
    try:
        # Until setpriv has exec'd sleep, the process is still root's (and root is allowed everything).
        deadline = time.monotonic() + 10
        while Path(f"/proc/{subject.pid}/comm").read_text().strip() != "sleep":
            assert time.monotonic() < deadline, "the subject process did not start"
            time.sleep(0.01)
        assert Path(f"/proc/{subject.pid}").stat().st_uid == user.uid
        argv = ["pkcheck", "--action-id", action, "--process", str(subject.pid)]
        for key, value in details.items():
            argv += ["--detail", key, value]
        result = subprocess.run(argv, env=bus.env(), capture_output=True, text=True, timeout=30, check=False)
    finally:
        subject.kill()
        subject.wait()
    # pkcheck: 0 authorized, 1 not authorized, 2 challenge (authentication could help); anything else is the test's.
    assert result.returncode in (0, 1, 2), result.stderr
    return result.returncode == 0


@real
@with_systemd
def test_the_service_user_may_start_the_oneshots_and_nothing_else(polkit: PolkitBus) -> None:
    for unit in ONESHOTS:
        assert allowed(polkit, SERVICE_USER, MANAGE, unit=unit, verb="start"), unit
    # Another verb on the same units, another unit, another instance of the template: no.
    for verb in ("stop", "restart", "reload", "kill"):
        assert not allowed(polkit, SERVICE_USER, MANAGE, unit=ONESHOTS[0], verb=verb), verb
    others = (
        "kfdguard.service",
        "kfdguard-fallback@status.service",
        "ssh.service",
        "kfdguard-enforce.service.x",
        "kfdguard-remedy@apply-llama.service",
        "kfdguard-remedy@.service",
        "kfdguard-remedy@apply.service",
    )
    for unit in others:
        assert not allowed(polkit, SERVICE_USER, MANAGE, unit=unit, verb="start"), unit
    # Without details (a caller that does not say which unit) and systemd's other actions: no.
    assert not allowed(polkit, SERVICE_USER, MANAGE)
    for action in ("org.freedesktop.systemd1.manage-unit-files", "org.freedesktop.systemd1.reload-daemon"):
        assert not allowed(polkit, SERVICE_USER, action), action


@real
@with_systemd
def test_other_users_get_nothing_from_the_rule(polkit: PolkitBus) -> None:
    # No session, no seat: the defaults (auth_admin) apply, which is "not authorized" here.
    for unit in ONESHOTS:
        assert not allowed(polkit, OTHER_USER, MANAGE, unit=unit, verb="start"), unit
