"""Authorization: python-dbusmock's polkitd for the fast cases, the real polkitd for the matrix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kfdguard.publish.names import ACTION_MANAGE, ACTION_RELOAD, BUS_NAME, INTERFACE, OBJECT_PATH
from kfdguard.simulate.render import RENDER_GID
from tests.servicekit import call, guardian
from tools import polkitbus
from tools.polkitbus import FixtureUser, PolkitBus
from tools.privatebus import PrivateBus

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root may own names on a system-like bus (CI runs as root)"
)

NOBODY = 65534
MOCK = "org.freedesktop.PolicyKit1"
MOCK_PATH = "/org/freedesktop/PolicyKit1/Authority"
# A polkit answer slower than this is no answer: the fail-closed path is what is tested.
# The mock answers at once: a long bound costs nothing and keeps a loaded machine from turning an answer into a
# timeout (a 1 s bound could, with two test suites on 2 CPUs).
ANSWERED_TIMEOUT = "timeouts:\n  polkit: 15\n"
# Long enough that a GetStatus through busctl is answered within it on a loaded machine (1 s was not, with
# two test suites on 2 CPUs), short enough to wait out: the order of the answers is what is tested.
STALL_TIMEOUT = "timeouts:\n  polkit: 6\n"


class MockPolkit:
    def __init__(self, bus: PrivateBus, proc: subprocess.Popen[bytes]) -> None:
        self.bus = bus
        self.proc = proc

    def control(self, method: str, signature: str, *args: str) -> str:
        argv = ["busctl", "--system", "call", MOCK, MOCK_PATH, "org.freedesktop.DBus.Mock", method, signature, *args]
        return subprocess.run(argv, env=self.bus.env(), check=True, capture_output=True, text=True, timeout=10).stdout


@contextmanager
def open_dir() -> Iterator[Path]:
    """A scratch directory the unprivileged test users can traverse (pytest's tmp_path is 0700)."""
    with tempfile.TemporaryDirectory(prefix="kfdguard-polkit-") as tmp:
        os.chmod(tmp, 0o755)
        yield Path(tmp)


@pytest.fixture
def mock_polkit() -> Iterator[MockPolkit]:
    with open_dir() as directory:
        yield from _mock_polkit(directory)


@pytest.fixture
def bare_polkit() -> Iterator[MockPolkit]:
    """A mock with polkit's name and object but no methods: each test gives CheckAuthorization its answer."""
    with open_dir() as directory:
        yield from _mock_polkit(directory, MOCK, MOCK_PATH, "org.freedesktop.PolicyKit1.Authority")


def _mock_polkit(directory: Path, *what: str) -> Iterator[MockPolkit]:
    # The mock runs as root, so root may own polkit's name on this bus (polkitd's user may on a real one).
    bus = PrivateBus(directory, extra=f'<policy user="root"><allow own="{MOCK}"/></policy>').start()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dbusmock", "--system", *(what or ("--template", "polkitd"))],
        env=bus.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(
            ["busctl", "--system", "status", MOCK], env=bus.env(), capture_output=True, check=False
        ).returncode:
            assert proc.poll() is None and time.monotonic() < deadline, "the polkitd mock did not start"
            time.sleep(0.05)
        yield MockPolkit(bus, proc)
    finally:
        proc.terminate()
        proc.wait(10)
        bus.stop()


def test_mock_polkit_decides_reload(each_bus: str, mock_polkit: MockPolkit) -> None:
    assert mock_polkit.bus.kind == each_bus
    with guardian("rx7900xtx-ubuntu2404", bus=mock_polkit.bus, enforce=False) as g:
        env = g.env()
        refused = call("Reload", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and "denied by polkit (org.kfdguard.reload)" in refused.stderr
        mock_polkit.control("SetAllowed", "as", "1", ACTION_RELOAD)
        assert call("Reload", env=env, user=NOBODY).stdout == 's "ready"\n'
        # Another action is still its own decision.
        refused = call("ClearFallback", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and "(org.kfdguard.manage)" in refused.stderr


@pytest.mark.parametrize("fault", ["SetDelay", "SimulateHang"])
def test_a_slow_or_hung_polkit_fails_closed_and_others_are_served(
    each_bus: str, mock_polkit: MockPolkit, fault: str
) -> None:
    assert mock_polkit.bus.kind == each_bus
    with guardian("rx7900xtx-ubuntu2404", bus=mock_polkit.bus, enforce=False, config=STALL_TIMEOUT) as g:
        env = g.env()
        mock_polkit.control("SetAllowed", "as", "1", ACTION_RELOAD)
        if fault == "SetDelay":
            mock_polkit.control("SetDelay", "d", "12")  # beyond the service's 6 s: its timeout decides
        else:
            mock_polkit.control("SimulateHang", "b", "true")
        waiting = subprocess.Popen(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "busctl", "--system", "--allow-interactive-authorization=no", "call", BUS_NAME, OBJECT_PATH,
             INTERFACE, "Reload"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # While polkit stalls, readers are answered: GetStatus returns before the Reload does.
        time.sleep(0.2)
        assert call("GetStatus", env=env).stdout.startswith("a{sv}")
        assert waiting.poll() is None
        _, err = waiting.communicate(timeout=30)
        assert waiting.returncode != 0
        assert "polkit unavailable (timed out); only root is allowed (org.kfdguard.reload)" in err
        # root is still served, without polkit's answer.
        assert call("Reload", env=env).stdout == 's "ready"\n'
        if fault == "SimulateHang":
            mock_polkit.control("ReleaseHangingCalls", "")


def test_polkit_vanishing_mid_call_fails_closed_at_once(each_bus: str, mock_polkit: MockPolkit) -> None:
    assert mock_polkit.bus.kind == each_bus
    # Our own timeout is long: the refusal must come from polkitd's disappearance, not from waiting it out.
    with guardian("rx7900xtx-ubuntu2404", bus=mock_polkit.bus, enforce=False, config="timeouts:\n  polkit: 15\n") as g:
        env = g.env()
        mock_polkit.control("SetAllowed", "as", "1", ACTION_RELOAD)
        mock_polkit.control("SimulateHang", "b", "true")
        waiting = subprocess.Popen(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "busctl", "--system", "--allow-interactive-authorization=no", "call", BUS_NAME,
             OBJECT_PATH, INTERFACE, "Reload"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while mock_polkit.control("HaveHangingCalls", "") != "b true\n":  # the check is inside polkitd now
            assert time.monotonic() < deadline and waiting.poll() is None, "the check never reached polkitd"
            time.sleep(0.05)
        mock_polkit.proc.kill()
        _, err = waiting.communicate(timeout=10)
        assert waiting.returncode != 0
        assert "Reload is not allowed: polkit unavailable (" in err and "only root is allowed" in err
        assert "timed out" not in err
        # The service goes on: readers are served, root acts, and with polkitd gone others are refused.
        assert call("GetStatus", env=env).stdout.startswith("a{sv}")
        assert call("Reload", env=env).stdout == 's "ready"\n'
        refused = call("Reload", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and "only root is allowed (org.kfdguard.reload)" in refused.stderr


def test_a_caller_polkit_keeps_waiting_holds_nothing_another_caller_needs(
    each_bus: str, mock_polkit: MockPolkit
) -> None:
    """Issue 35: an ApplyFallback whose authorization polkit keeps pending (a password dialog nobody answers)
    must not make the administrator's ClearFallback or a Reload answer Busy: nothing shared is taken before
    polkit says yes."""
    assert mock_polkit.bus.kind == each_bus
    with guardian("rx7900xtx-ubuntu2404", bus=mock_polkit.bus, enforce=False) as g:
        env = g.env()
        mock_polkit.control("SimulateHang", "b", "true")
        pending = subprocess.Popen(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "busctl", "--system", "--allow-interactive-authorization=yes", "--timeout=60", "call", BUS_NAME,
             OBJECT_PATH, INTERFACE, "ApplyFallback"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 10
            while mock_polkit.control("HaveHangingCalls", "") != "b true\n":  # nobody's check is in polkitd
                assert time.monotonic() < deadline and pending.poll() is None, "the check never reached polkitd"
                time.sleep(0.05)
            # root needs no polkit answer: the administrator's change and a re-check run now.
            cleared = call("ClearFallback", env=env, check=False)
            assert cleared.returncode == 0 and "Busy" not in cleared.stderr, cleared.stderr
            reloaded = call("Reload", env=env, check=False)
            assert reloaded.stdout == 's "ready"\n', reloaded.stderr
            # ...while nobody's ApplyFallback still waits for polkit.
            assert pending.poll() is None and mock_polkit.control("HaveHangingCalls", "") == "b true\n"
        finally:
            pending.kill()
            pending.wait(10)
            mock_polkit.control("ReleaseHangingCalls", "")


@pytest.mark.parametrize(
    ("signature", "answer"),
    [
        ("(bba{ss})", "(False, False, {})"),  # a well-formed refusal, for comparison
        ("", "None"),  # no body at all
        ("b", "True"),  # a bare boolean
        ("(bb)", "(True, False)"),  # a short struct
        ("(sss)", "('yes', 'no', '')"),  # three values of the wrong type
        ("s", "'yes'"),  # a three-letter string unpacks into three too
        ("(iia{ss})", "(1, 0, {})"),  # truthy, but not a boolean
    ],
)
def test_a_garbled_polkit_answer_fails_closed(bare_polkit: MockPolkit, signature: str, answer: str) -> None:
    """Only a (bba{ss}) whose first member is true authorizes; anything else is no answer (fail closed)."""
    bare_polkit.control(
        "AddMethod", "sssss", "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization", "(sa{sv})sa{ss}us",
        signature, f"ret = {answer}" if signature else "",
    )  # fmt: skip
    with guardian("rx7900xtx-ubuntu2404", bus=bare_polkit.bus, enforce=False, config=ANSWERED_TIMEOUT) as g:
        refused = call("Reload", env=g.env(), user=NOBODY, check=False)
        assert refused.returncode != 0 and refused.stdout == "", refused.stdout
        expected = "denied by polkit" if signature == "(bba{ss})" else "polkit unavailable (CheckAuthorization answered"
        assert expected in refused.stderr, refused.stderr
        assert call("GetStatus", env=g.env()).stdout.startswith("a{sv}")


@pytest.mark.usefixtures("each_bus")
def test_polkit_absent_means_root_only() -> None:
    with guardian("rx7900xtx-ubuntu2404", enforce=False) as g:
        env = g.env()
        refused = call("ClearFallback", env=env, user=NOBODY, check=False)
        assert refused.returncode != 0 and "only root is allowed" in refused.stderr
        assert call("Reload", env=env).stdout == 's "ready"\n'


# --- the real polkitd ---------------------------------------------------------------------------

RENDER_USER = FixtureUser("kfdrender", 4242, ("render",))
PLAIN_USER = FixtureUser("kfdplain", 4243)
UBUNTU_RENDER_GID = RENDER_GID["ubuntu"]
real = pytest.mark.skipif(polkitbus.available() is not None, reason=f"real polkitd: {polkitbus.available()}")


@pytest.fixture(scope="module", params=["daemon", "broker"])
def real_polkit(request: pytest.FixtureRequest) -> Iterator[PolkitBus]:
    kind: str = request.param  # module-scoped, so it cannot take each_bus: the same two buses
    if kind == "broker" and shutil.which("dbus-broker-launch") is None:
        pytest.skip("dbus-broker is not installed (Debian package dbus-broker)")
    with open_dir() as directory:
        bus = PolkitBus(directory, [RENDER_USER, PLAIN_USER], {"render": UBUNTU_RENDER_GID}, kind=kind).start()
        # The bus polkitd is on is the one asked for (dbus-broker-launch logs to our journal socket).
        assert (bus.journal() == ["Ready"]) == (kind == "broker"), bus.journal()
        try:
            yield bus
        finally:
            bus.stop()


def as_user(
    member: str, user: FixtureUser | int, env: dict[str, str], *flags: str, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    uid = user if isinstance(user, int) else user.uid
    groups = (UBUNTU_RENDER_GID,) if isinstance(user, FixtureUser) and "render" in user.groups else ()
    argv = ["busctl", "--system", *flags, "call", BUS_NAME, OBJECT_PATH,
            INTERFACE, member, *args]  # fmt: skip
    if uid:
        group_opt = f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", group_opt, *argv]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


@real
def test_real_polkit_reload_matrix(real_polkit: PolkitBus) -> None:
    """uid 0 always; a render-group member by 49-kfdguard.rules from any session; others not outside a local seat."""
    with guardian("rx7900xtx-ubuntu2404", bus=real_polkit, enforce=False) as g:
        env = g.env()
        assert as_user("Reload", 0, env).stdout == 's "ready"\n'
        member = as_user("Reload", RENDER_USER, env)
        assert member.returncode == 0 and member.stdout == 's "ready"\n', member.stderr
        plain = as_user("Reload", PLAIN_USER, env)
        assert plain.returncode != 0 and "Reload is not allowed: denied by polkit (org.kfdguard.reload)" in plain.stderr


@real
def test_real_polkit_manage_needs_an_administrator(real_polkit: PolkitBus) -> None:
    with guardian("rx7900xtx-ubuntu2404", bus=real_polkit, enforce=False) as g:
        env = g.env()
        for user in (RENDER_USER, PLAIN_USER):
            # Without the interactive flag: the caller learns that authentication would help.
            quiet = as_user("ClearFallback", user, env, "--allow-interactive-authorization=no")
            assert quiet.returncode != 0
            assert "ClearFallback needs authentication (org.kfdguard.manage)" in quiet.stderr
            # With it, but no authentication agent in this session: refused, not hung.
            loud = as_user("ClearFallback", user, env)
            assert loud.returncode != 0 and ACTION_MANAGE in loud.stderr
        assert as_user("ClearFallback", 0, env).returncode == 0


@real
def test_real_polkit_configure_applications_needs_an_administrator(real_polkit: PolkitBus) -> None:
    """Issue 37: writing another program's drop-in is an administrator's act, like changing the boot loader."""
    with guardian("rx7900xtx-ubuntu2404", bus=real_polkit, enforce=False) as g:
        env = g.env()
        for user in (RENDER_USER, PLAIN_USER):
            quiet = as_user("ClearRemedy", user, env, "--allow-interactive-authorization=no", args=("s", "ollama"))
            assert quiet.returncode != 0
            assert "ClearRemedy needs authentication (org.kfdguard.configure-applications)" in quiet.stderr
        cleared = as_user("ClearRemedy", 0, env, args=("s", "ollama"))
        assert cleared.returncode == 0 and "nothing to remove" in cleared.stdout, cleared.stderr


@real
def test_real_polkit_check_access_uses_the_bus_credentials(real_polkit: PolkitBus) -> None:
    with guardian("rx7900xtx-ubuntu2404", bus=real_polkit, enforce=False) as g:
        env = g.env()
        member = as_user("CheckAccess", RENDER_USER, env)
        assert member.stdout.startswith("bs true"), member.stdout + member.stderr
        plain = as_user("CheckAccess", PLAIN_USER, env)
        assert plain.stdout.startswith("bs false") and "render" in plain.stdout
