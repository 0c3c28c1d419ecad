"""Building the GNOME Shell extension and running it in a real headless gnome-shell."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import tool

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "gnome-extension"
UUID = "kfdguard@kfdguard.org"
HELPER = Path(__file__).resolve().parent / "helper"
HELPER_UUID = "kfdguard-test-helper@kfdguard.org"
NOBODY = 65534
HELPER_NAME = "org.kfdguard.ShellTest"
HELPER_PATH = "/org/kfdguard/ShellTest"
SCREEN = (1280, 800)
# Debian 13's GNOME Shell 48 and gjs 1.82 live in a chroot that scripts/trixie-chroot builds once.
TRIXIE = Path(os.environ.get("KFDGUARD_TRIXIE_CHROOT") or "/var/cache/kfdguard/trixie-gnome")

# Run argv inside the chroot $1, in a private mount namespace (nothing stays mounted after the
# last process exits): /proc, /dev, /sys, and /tmp and the tree at their own paths, so every path
# the tests hand over (bus sockets, HOME, the built extension, simulated machines) is the same inside.
CHROOT_NAMESPACE = """set -e
D=$1 TREE=$2 CHROOT=$3
shift 3
mount -t proc proc "$D/proc"
mount --rbind /dev "$D/dev"
mount --rbind /sys "$D/sys"
mount --bind /tmp "$D/tmp"
mkdir -p "$D$TREE"
mount --bind "$TREE" "$D$TREE"
exec "$CHROOT" "$D" "$@"
"""


def trixie_chroot() -> Path | None:
    """The Debian 13 chroot if scripts/trixie-chroot has built it, else None."""
    return TRIXIE if (TRIXIE / ".kfdguard-ready").is_file() else None


def in_chroot(chroot: Path | None, argv: list[str]) -> list[str]:
    """argv as run in ``chroot`` (its own programs, found on its PATH), or unchanged on the host."""
    if chroot is None:
        return argv
    return [tool("unshare"), "--mount", "--propagation", "private", "--", "sh", "-c", CHROOT_NAMESPACE, "sh",
            str(chroot), str(REPO), tool("chroot"), *argv]  # fmt: skip


def helper_45(out: Path) -> Path:
    """The test helper as a GNOME 45+ extension (ES modules, a default-exported Extension subclass).

    The helper is written once, for the legacy loader; this rewrites its imports and entry point
    the way GNOME 45 requires (https://gjs.guide/extensions/upgrading/gnome-shell-45.html).
    """
    text = (HELPER / "extension.js").read_text()
    rewrites = [
        ("const {Gio, GLib, Shell, St} = imports.gi;\n",
         "import Gio from 'gi://Gio';\nimport GLib from 'gi://GLib';\nimport Shell from 'gi://Shell';\n"
         "import St from 'gi://St';\n"
         "import {Extension} from 'resource:///org/gnome/shell/extensions/extension.js';\n"),
        ("const Main = imports.ui.main;\n", "import * as Main from 'resource:///org/gnome/shell/ui/main.js';\n"),
        ("const Config = imports.misc.config;\n",
         "import * as Config from 'resource:///org/gnome/shell/misc/config.js';\n"),
        ("class Extension {\n", "export default class ShellTestExtension extends Extension {\n"),
        ("function init() {\n    return new Extension();\n}\n", ""),
        ("/* exported init */\n", ""),
    ]  # fmt: skip
    for old, new in rewrites:
        assert old in text, f"tests/gnome/helper/extension.js no longer has {old!r}"
        text = text.replace(old, new)
    out.mkdir(parents=True, exist_ok=True)
    (out / "extension.js").write_text(text)
    metadata = json.loads((HELPER / "metadata.json").read_text())
    metadata["shell-version"] = ["45", "46", "47", "48"]
    (out / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    return out


def build(out: Path) -> dict[str, Path]:
    """Run gnome-extension/build.sh (what `make extension` runs) into ``out``."""
    result = subprocess.run(
        ["sh", str(EXTENSION / "build.sh"), str(out)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, f"build.sh failed: {result.stdout}{result.stderr}"
    return {target: out / target / UUID for target in ("shell43", "shell45")}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


class ShellError(AssertionError):
    pass


class HeadlessShell:
    """gnome-shell --headless as an unprivileged user, with a private session bus.

    The system bus is the one given (the private bus kfdguard serves on). HOME,
    XDG_RUNTIME_DIR and the GSettings keyfile are private; the kfdguard
    extension (as built for GNOME 43) and the test helper are installed and
    enabled there. The helper answers on the session bus; the test reaches it
    with busctl running as the same user.
    """

    def __init__(
        self,
        extension_dir: Path,
        system_bus: str,
        groups: tuple[int, ...] = (),
        user: int = NOBODY,
        chroot: Path | None = None,
        helper: Path = HELPER,
    ) -> None:
        self.extension_dir = extension_dir
        self.chroot = chroot  # None: the host's Shell; else the Shell of this chroot (trixie_chroot())
        self.helper = helper
        self.system_bus = system_bus
        self.groups = groups
        self.user = user
        self._tmp = tempfile.TemporaryDirectory(prefix="kfdguard-shell-")
        self.dir = Path(self._tmp.name)
        self.home = self.dir / "home"
        self.runtime = self.dir / "run"
        self.shots = self.home / "shots"
        self.log = self.dir / "gnome-shell.log"
        self.address_file = self.runtime / "session-bus"
        self.proc: subprocess.Popen[bytes] | None = None
        self.session_bus = ""
        self.final_log = ""

    def _prepare(self) -> None:
        os.chmod(self.dir, 0o755)
        extensions = self.home / ".local/share/gnome-shell/extensions"
        shutil.copytree(self.extension_dir, extensions / UUID)
        shutil.copytree(self.helper, extensions / HELPER_UUID)
        # No "Screen Lock disabled" notification over the panel (there is no display manager).
        (extensions.parent / "lock-warning-shown").touch()
        settings = self.home / ".config/glib-2.0/settings"
        settings.mkdir(parents=True)
        (settings / "keyfile").write_text(
            "[org/gnome/shell]\n"
            f"enabled-extensions=['{UUID}', '{HELPER_UUID}']\n"
            "disable-user-extensions=false\n"
            # No welcome tour over the panel.
            "welcome-dialog-last-shown-version='999'\n"
        )
        self.shots.mkdir()
        self.runtime.mkdir(mode=0o700)
        for path in [self.home, self.runtime, *self.home.rglob("*")]:
            os.chown(path, self.user, self.user, follow_symlinks=False)

    def _setpriv(self, inside: bool = False) -> list[str]:
        groups = f"--groups={','.join(map(str, self.groups))}" if self.groups else "--clear-groups"
        setpriv = "setpriv" if inside else tool("setpriv")
        return [setpriv, f"--reuid={self.user}", f"--regid={self.user}", groups, "--"]

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "DBUS_SYSTEM_BUS_ADDRESS": self.system_bus,
            "GSETTINGS_BACKEND": "keyfile",
            "LANG": "C.UTF-8",
            "NO_AT_BRIDGE": "1",
        }

    def start(self, timeout: float = 60) -> HeadlessShell:
        self._prepare()
        inside = self.chroot is not None  # the chroot's own programs, by name on its PATH
        shell = [
            "gnome-shell" if inside else tool("gnome-shell"),
            "--headless",
            "--virtual-monitor",
            f"{SCREEN[0]}x{SCREEN[1]}",
            "--wayland",
        ]
        shell.append("--no-x11")
        script = 'echo "$DBUS_SESSION_BUS_ADDRESS" > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"'
        session = "dbus-run-session" if inside else tool("dbus-run-session")
        argv = [*self._setpriv(inside), session, "--", "sh", "-c", script, str(self.address_file), *shell]
        # The helper is reached from the host (busctl): the session bus socket is under /tmp, shared.
        argv = in_chroot(self.chroot, argv)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not self.address_file.exists():
            self._check_alive()
            if time.monotonic() > deadline:
                raise ShellError(f"no session bus within {timeout} s\n{self.log_text()}")
            time.sleep(0.05)
        self.session_bus = self.address_file.read_text().strip()
        self.wait(lambda s: s["startupComplete"] and s["indicator"] is not None, "the Shell and the indicator", timeout)
        return self

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise ShellError(f"gnome-shell exited with {self.proc.returncode}\n{self.log_text()}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def call(self, member: str, signature: str = "", *args: str, check: bool = True) -> Any:
        argv = [*self._setpriv(), tool("busctl"), f"--address={self.session_bus}", "--json=short", "call"]
        argv += [HELPER_NAME, HELPER_PATH, HELPER_NAME, member]
        if signature:
            argv += [signature, *args]
        result = subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=30, check=False)
        if result.returncode != 0:
            if check:
                self._check_alive()
                raise ShellError(f"{member} failed: {result.stderr.strip()}")
            return None
        return json.loads(result.stdout)["data"] if result.stdout.strip() else None

    def state(self) -> dict[str, Any] | None:
        data = self.call("State", check=False)
        if data is None:
            return None
        state: dict[str, Any] = json.loads(data[0])
        return state

    def wait(self, check: Callable[[dict[str, Any]], bool], what: str, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        while True:
            self._check_alive()
            last = self.state()
            if last is not None and check(last):
                return last
            if time.monotonic() > deadline:
                raise ShellError(f"timed out waiting for {what}; last state: {json.dumps(last, indent=1)}")
            time.sleep(0.1)

    def indicator(self) -> dict[str, Any]:
        state = self.state()
        assert state is not None and state["indicator"] is not None
        indicator: dict[str, Any] = state["indicator"]
        return indicator

    def wait_label(self, label: str, timeout: float = 20) -> dict[str, Any]:
        state = self.wait(lambda s: s["indicator"] is not None and s["indicator"]["label"] == label, label, timeout)
        indicator: dict[str, Any] = state["indicator"]
        return indicator

    def wait_text(self, prefix: str, timeout: float = 20) -> str:
        """Wait until a visible menu text starts with ``prefix``; return it."""
        state = self.wait(
            lambda s: any(t.startswith(prefix) for t in s["indicator"]["menuTexts"]), f"menu text {prefix!r}", timeout
        )
        texts: list[str] = state["indicator"]["menuTexts"]
        return next(t for t in texts if t.startswith(prefix))

    def open_menu(self) -> dict[str, Any]:
        self.call("OpenMenu")
        state = self.wait(lambda s: s["indicator"]["menuOpen"] and s["indicator"]["menuRect"], "the menu to open")
        indicator: dict[str, Any] = state["indicator"]
        return indicator

    def screenshot_menu(self, name: str, destination: Path, margin: int = 24) -> Path:
        """The panel's right part and the open menu, saved as ``destination/name``."""
        indicator = self.open_menu()
        button, menu = indicator["rect"], indicator["menuRect"]
        x = max(0, min(button["x"], menu["x"]) - margin)
        height = min(SCREEN[1], menu["y"] + menu["height"] + margin)
        shot = self.shots / name
        self.call("Screenshot", "siiii", str(shot), str(x), "0", str(SCREEN[0] - x), str(height))
        destination.mkdir(parents=True, exist_ok=True)
        target = destination / name
        shutil.copyfile(shot, target)
        return target

    def stop(self) -> None:
        if self.proc is not None:
            # The whole session: dbus-run-session, its dbus-daemon, gnome-shell and what the bus activated.
            _killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                _killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            time.sleep(0.1)
            _killpg(self.proc.pid, signal.SIGKILL)
        self.final_log = self.log_text()
        self._tmp.cleanup()

    def __enter__(self) -> HeadlessShell:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
