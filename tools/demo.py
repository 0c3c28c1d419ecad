"""The service demo of ``make demo``: kfdguard on a private system bus, seen by its users.

A simulated Ubuntu 24.04 machine with an RX 7900 XTX; a private dbus-daemon
with the project's bus policy; the real polkitd with kfdguard's actions and
rules when it can run here (root, a mount namespace); two users: kfdrender
(in the render group) and kfdplain. Every client is a real one: busctl,
gdbus, ``kfdguard status``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kfdguard.host.root import Root
from kfdguard.simulate import bundled, state
from kfdguard.simulate.render import RENDER_GID, render
from kfdguard.simulate.spec import UserSpec
from kfdguard.simulate.system import SimulatedSystem
from tools import polkitbus
from tools.launch import NAME, PATH, Launched, launch, wait_name
from tools.polkitbus import FixtureUser, PolkitBus
from tools.privatebus import PrivateBus

MACHINE = "rx7900xtx-ubuntu2404"
RENDER_USER = FixtureUser("kfdrender", 4242, ("render",))
PLAIN_USER = FixtureUser("kfdplain", 4243)
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def say(text: str) -> None:
    print(f"\n{BOLD}── {text}{RESET}", flush=True)


def shown(text: str) -> None:
    for line in text.rstrip("\n").splitlines():
        print(f"   {line}", flush=True)


class Demo:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.bus: PrivateBus | None = None
        self.real_polkit = False
        self.service: Launched | None = None
        self.monitor: subprocess.Popen[str] | None = None
        self.root: Path | None = None

    def env(self) -> dict[str, str]:
        assert self.bus is not None
        return self.bus.env()

    def run(self, argv: list[str], user: FixtureUser | None = None, show: str | None = None) -> int:
        label = f"({user.name}) " if user else ""
        print(f"{DIM}   {label}${RESET} {show or ' '.join(argv)}", flush=True)
        if user is not None:
            groups = ",".join(str(RENDER_GID["ubuntu"]) for _ in user.groups[:1]) or ""
            argv = ["setpriv", f"--reuid={user.uid}", f"--regid={user.uid}",
                    f"--groups={groups}" if groups else "--clear-groups", *argv]  # fmt: skip
        result = subprocess.run(argv, env=self.env(), capture_output=True, text=True, timeout=60, check=False)
        shown(result.stdout + result.stderr)
        return result.returncode

    def busctl(self, *args: str, user: FixtureUser | None = None) -> int:
        # On a real machine busctl talks to the system bus by default; here it is the private one.
        return self.run(["busctl", "--system", *args], user, show="busctl " + " ".join(args))

    def start(self) -> None:
        busdir = self.dir / "bus"
        busdir.mkdir()
        why = polkitbus.available()
        if why is None:
            self.bus = PolkitBus(busdir, [RENDER_USER, PLAIN_USER], {"render": RENDER_GID["ubuntu"]}).start()
            self.real_polkit = True
        else:
            self.bus = PrivateBus(busdir).start()
            print(f"   (the real polkitd cannot run here: {why}; kfdguard then allows only root: fail closed)")
        spec = bundled.load(MACHINE)
        # The machine knows the demo's users too, so answers can name them.
        users = tuple(UserSpec(u.name, u.uid, u.groups) for u in (RENDER_USER, PLAIN_USER))
        self.root = Path(render(spec.with_changes(users=(*spec.users, *users)), self.dir / "machine").path)
        print(f"{DIM}   #{RESET} kfdguard.service --root <{MACHINE}> --bus <private bus>  (systemd's Type=notify)")
        # The notify socket stays open for the service's lifetime, like systemd's.
        self.service = launch(self.root, self.bus.address, self.dir / "notify", env={"PYTHONDONTWRITEBYTECODE": "1"})
        elapsed = self.service.wait_ready(30)
        message = next(m for m in self.service.messages if "READY=1" in m)
        status = next((line[7:] for line in message.splitlines() if line.startswith("STATUS=")), "")
        shown(f"READY=1 after {elapsed:.2f} s; STATUS={status}")
        wait_name(self.env(), self.service.proc, 10)

    def watch_signals(self) -> None:
        self.monitor = subprocess.Popen(
            ["gdbus", "monitor", "--system", "--dest", NAME, "--object-path", PATH],
            env=self.env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.5)

    def wait_state(self, wanted: str) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            got = subprocess.run(["busctl", "--system", "get-property", NAME, PATH, NAME, "State"], env=self.env(),
                                 capture_output=True, text=True, check=False).stdout  # fmt: skip
            if got.strip() == f's "{wanted}"':
                time.sleep(0.3)  # let gdbus print the signal
                return
            time.sleep(0.1)
        raise RuntimeError(f"the state did not become {wanted}")

    def signals(self) -> None:
        """What a subscribed client (the GNOME indicator, a script) received."""
        assert self.monitor is not None and self.monitor.stdout is not None
        os.set_blocking(self.monitor.stdout.fileno(), False)
        text = self.monitor.stdout.read() or ""
        for line in text.splitlines():
            if ".StateChanged " in line:
                shown("signal " + line.split(": ", 1)[-1].strip())

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.terminate()
            self.monitor.wait(5)
        if self.service is not None:
            code, err = self.service.stop()
            say(f"SIGTERM: the service stopped with status {code}; what it logged (journal):")
            shown("\n".join(line for line in err.splitlines() if line.strip()))
        if self.bus is not None:
            self.bus.stop()


def story(demo: Demo) -> None:
    say(f"The service starts on a simulated {MACHINE} (boot pass, then READY)")
    demo.start()
    assert demo.root is not None
    say("Anyone can read the state: busctl and kfdguard status")
    demo.busctl("get-property", NAME, PATH, NAME, "State", "Summary")
    demo.run([sys.executable, "-m", "kfdguard", "status"], show="kfdguard status")

    say("CheckAccess: can the calling user open /dev/kfd and the render node?")
    demo.busctl("call", NAME, PATH, NAME, "CheckAccess", user=RENDER_USER)
    demo.busctl("call", NAME, PATH, NAME, "CheckAccess", user=PLAIN_USER)

    say("A vendor package installs a udev rule that locks /dev/kfd to root, and runs udevadm trigger")
    rule = 'KERNEL=="kfd", MODE="0600"\n'
    shown(f"/etc/udev/rules.d/99-vendor-tools.rules: {rule.strip()}")
    demo.watch_signals()
    (demo.root / "etc/udev/rules.d").mkdir(parents=True, exist_ok=True)
    (demo.root / "etc/udev/rules.d/99-vendor-tools.rules").write_text(rule)
    SimulatedSystem(Root(demo.root)).run(["udevadm", "trigger", "--action=add"], timeout=5)
    demo.wait_state("unavailable")
    print("   kfdguard's udev monitor saw the event and re-evaluated (events only observe):")
    demo.signals()
    demo.busctl("get-property", NAME, PATH, NAME, "Summary")
    demo.busctl("call", NAME, PATH, NAME, "CheckAccess", user=RENDER_USER)

    say("Reload (re-check and repair) is decided by polkit: org.kfdguard.reload")
    demo.busctl("call", NAME, PATH, NAME, "Reload", user=PLAIN_USER)
    if demo.real_polkit:
        print("   (kfdplain is outside the render group and not at the machine's seat: refused)")
        demo.busctl("call", NAME, PATH, NAME, "Reload", user=RENDER_USER)
        print("   (49-kfdguard.rules grants it to the render group, from any session)")
    else:
        demo.busctl("call", NAME, PATH, NAME, "Reload")
    demo.wait_state("ready")
    demo.signals()
    demo.busctl("call", NAME, PATH, NAME, "CheckAccess", user=RENDER_USER)
    node = state.read_devices(Root(demo.root))["/dev/kfd"]
    shown(f"/dev/kfd is now {node.symbolic} (gid {node.gid}); the vendor rule is still there: the next coldplug")
    shown("re-applies it, the service notices, and the next boot pass repairs it again.")

    say("Scripts: one call returns everything")
    demo.busctl("--json=short", "call", NAME, PATH, NAME, "GetStatus")


def main() -> int:
    if os.geteuid() != 0:
        print("The service demo needs root: only root may own org.kfdguard.Guardian1 on a system bus, and the")
        print("real polkitd needs a mount namespace. Run: sudo make demo", file=sys.stderr)
        return 1
    for tool in ("dbus-daemon", "busctl", "gdbus", "setpriv"):
        if shutil.which(tool) is None:
            print(f"demo: {tool} is missing (make deps installs it)", file=sys.stderr)
            return 1
    with tempfile.TemporaryDirectory(prefix="kfdguard-demo-") as tmp:
        os.chmod(tmp, 0o755)  # noqa: S103 - the demo's users reach the bus socket inside
        demo = Demo(Path(tmp))
        try:
            story(demo)
        finally:
            demo.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
