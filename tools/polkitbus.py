"""A private system bus with the real polkitd, kfdguard's actions and rules, and fixture users.

polkitd reads its actions and rules from fixed directories and resolves users
and groups through NSS, so the bus and polkitd run in a private mount
namespace where those directories, /etc/passwd and /etc/group are bind
mounts of prepared copies. The host is untouched. Needs root (unshare,
polkitd's switch to its own user) and util-linux's ``unshare``.

Without logind every subject is neither local nor active: only the
``allow_any`` defaults and the rules apply, which is the case of an SSH
session or a script (the active-session defaults are the VM lane's job).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from kfdguard.record import dataclass
from tools.privatebus import BROKER_EXEC, BROKER_JOURNAL, REPO, PrivateBus, wait_ready

POLKITD_CANDIDATES = ("/usr/lib/polkit-1/polkitd", "/usr/libexec/polkitd", "/usr/libexec/polkit-1/polkitd")
AUTHORITY = "org.freedesktop.PolicyKit1"


@dataclass(frozen=True)
class FixtureUser:
    name: str
    uid: int
    groups: tuple[str, ...] = ()


def polkitd_path() -> str | None:
    return next((p for p in POLKITD_CANDIDATES if os.access(p, os.X_OK)), None)


def available() -> str | None:
    """Why the real polkitd cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (a mount namespace and polkitd's own user)"
    if polkitd_path() is None:
        return "polkitd is not installed (Debian package polkitd)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is missing"
    try:
        import pwd

        pwd.getpwnam("polkitd")
    except KeyError:
        return "the polkitd system user does not exist"
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"mount namespaces are not allowed here: {probe.stderr.strip()}"
    return None


def _with_users(passwd: str, group: str, users: list[FixtureUser], gids: dict[str, int]) -> tuple[str, str]:
    passwd_lines = passwd.rstrip("\n").split("\n")
    group_lines = group.rstrip("\n").split("\n")
    taken = {line.split(":")[0] for line in group_lines if line}
    for user in users:
        passwd_lines.append(f"{user.name}:x:{user.uid}:{user.uid}::/nonexistent:/usr/sbin/nologin")
        group_lines.append(f"{user.name}:x:{user.uid}:")
    for name, gid in gids.items():
        if name not in taken:
            group_lines.append(f"{name}:x:{gid}:")
    # Supplementary groups live in the group file: polkit's isInGroup() asks NSS, not the process.
    for i, line in enumerate(group_lines):
        name, _, gid_text, members = [*line.split(":"), "", "", ""][:4]
        extra = [u.name for u in users if name in u.groups]
        if extra:
            current = [m for m in members.split(",") if m]
            group_lines[i] = f"{name}:x:{gid_text}:{','.join(current + extra)}"
    return "\n".join(passwd_lines) + "\n", "\n".join(group_lines) + "\n"


class PolkitBus(PrivateBus):
    """PrivateBus whose dbus-daemon and a real polkitd share a prepared mount namespace."""

    def __init__(
        self, directory: Path, users: list[FixtureUser], gids: dict[str, int] | None = None, kind: str | None = None
    ) -> None:
        super().__init__(directory, kind=kind)
        self.users = users
        self.gids = gids or {}
        self.ns: subprocess.Popen[bytes] | None = None
        self._launcher: list[str] = []

    def _prepare(self, journal: Path | None = None) -> Path:
        d = self.dir
        actions = d / "actions"
        rules = d / "rules.d"
        actions.mkdir(exist_ok=True)
        rules.mkdir(exist_ok=True)
        for policy in Path("/usr/share/polkit-1/actions").glob("*.policy"):
            shutil.copy(policy, actions)
        shutil.copy(REPO / "polkit" / "org.kfdguard.policy", actions)
        for rule in (REPO / "polkit").glob("*.rules"):
            shutil.copy(rule, rules)
        shutil.chown(rules, "polkitd", "root")
        for rule in rules.iterdir():
            shutil.chown(rule, "polkitd", "root")
        os.chmod(rules, 0o700)
        passwd, group = _with_users(
            Path("/etc/passwd").read_text(), Path("/etc/group").read_text(), self.users, self.gids
        )
        (d / "passwd").write_text(passwd)
        (d / "group").write_text(group)
        os.chmod(d / "passwd", 0o644)
        os.chmod(d / "group", 0o644)
        self.config.write_text(self.config_text())
        if self.kind == "broker":
            # privatebus's dbus-broker pieces: the journal it needs, the listener on stdin as fd 3.
            # sh gives a background job /dev/null as stdin unless redirected explicitly: hence fd 4.
            bus = f"""exec 4<&0 0</dev/null
set -- {journal}
{BROKER_JOURNAL}set -- {" ".join(self._launcher)}
DBUS_SYSTEM_BUS_ADDRESS={self.address} sh -c '{BROKER_EXEC}' sh "$@" 0<&4 &
exec 4<&-
"""
        else:
            bus = f"dbus-daemon --config-file={self.config} --nofork --nopidfile &\n"
        script = d / "namespace.sh"
        script.write_text(
            f"""set -e
mount --bind {d}/actions /usr/share/polkit-1/actions
mount --bind {d}/rules.d /usr/share/polkit-1/rules.d
mkdir -p /etc/polkit-1/rules.d && mount --bind {d}/rules.d /etc/polkit-1/rules.d
mount --bind {d}/passwd /etc/passwd
mount --bind {d}/group /etc/group
{bus}while [ ! -S {self.socket} ]; do sleep 0.02; done
chmod 666 {self.socket}
DBUS_SYSTEM_BUS_ADDRESS={self.address} {polkitd_path()} --no-debug &
wait
"""
        )
        return script

    def start(self) -> PolkitBus:
        why = available()
        if why is not None:
            raise RuntimeError(f"the real polkitd cannot run here: {why}")
        os.chmod(self.dir, 0o755)  # noqa: S103 - fixture users reach the bus socket inside
        listener = None
        if self.kind == "broker":
            listener, journal_dir, self._launcher = self.broker_prepare()
        script = self._prepare() if listener is None else self._prepare(journal_dir)
        try:
            self.ns = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", str(script)],
                stdin=listener.fileno() if listener is not None else subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            if listener is not None:
                listener.close()  # the broker holds it now
        ns = self.ns
        try:
            wait_ready("polkitd on the private bus", [(f"{AUTHORITY} to have an owner", self._authority_up)],
                       lambda: ns.poll() is None, interval=0.05)  # fmt: skip
        except RuntimeError as exc:
            err = ns.stderr.read().decode(errors="replace") if ns.stderr and ns.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"{exc}: {err}") from None
        return self

    def _authority_up(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            probe = subprocess.run(
                ["busctl", "--system", "status", AUTHORITY],
                env=self.env(),
                capture_output=True,
                check=False,
                timeout=10,
            )
        except subprocess.TimeoutExpired:
            return False  # a loaded machine: asked again until wait_ready's bound
        return probe.returncode == 0

    def stop(self) -> None:
        if self.ns is not None and self.ns.poll() is None:
            os.killpg(self.ns.pid, signal.SIGTERM)
            try:
                self.ns.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.ns.pid, signal.SIGKILL)
                self.ns.wait()
        super().stop()
