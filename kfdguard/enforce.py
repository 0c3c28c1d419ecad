"""enforce: the only place that changes the machine, and only through System.

It acts; ``kfdguard.app.pipeline`` decides when (probe, assess, act, look
again). It takes the plan of an assessment (desired states), compares each action
with the machine and acts on differences, so a second run changes nothing.
Every outcome is recorded; a failure becomes a finding and never an
exception, and a refused or failed write leaves the old file as it was.
"""

from __future__ import annotations

import errno
import os
import time

from kfdguard import log
from kfdguard.config import Config
from kfdguard.host import files
from kfdguard.host.root import BOOT_DIR, MODPROBE_D, MODULES_FILES, SERVICE_WRITABLE_ETC, UDEV_DIR, Root
from kfdguard.knowledge.distros import Distribution, detect, initramfs_step
from kfdguard.parsers.modprobe import continues
from kfdguard.record import dataclass
from kfdguard.verdict import Action, Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import Facts
    from kfdguard.host.paths import HostPath
    from kfdguard.host.system import System

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741
INITRAMFS_TIMEOUT = 300.0
SIGNATURE_ERRORS = ("Key was rejected by service", "Required key not available", "unsigned module")


@dataclass(frozen=True)
class Change:
    action: Action
    status: str  # unchanged, changed, would-change, failed, skipped, manual (for a person: never run)
    detail: str = ""
    diff: str = ""


@dataclass(frozen=True)
class EnforceReport:
    changes: tuple[Change, ...]
    findings: tuple[Finding, ...]
    dry_run: bool

    @property
    def changed(self) -> bool:
        return any(c.status in ("changed", "would-change") for c in self.changes)

    @property
    def failed(self) -> bool:
        return any(c.status == "failed" for c in self.changes)


def _diff(old: str, new: str, path: str) -> str:
    import difflib

    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{path} (now)", f"{path} (planned)")
    return "".join(lines)


def _read(path: HostPath) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_failed(action: Action, exc: OSError, kept: bool) -> Finding:
    what = "refused" if isinstance(exc, files.UnsafeTarget) else "failed"
    cause = {
        errno.ENOSPC: "the filesystem is full",
        errno.EROFS: "the filesystem is read-only",
        errno.EACCES: "permission denied (run as root)",
        errno.EPERM: "not permitted (run as root)",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    remedy = "fix the cause and run 'sudo kfdguard enforce' again"
    if exc.errno == errno.EROFS and not action.target.startswith(SERVICE_WRITABLE_ETC):
        # Under the unit, /etc is read-only but for the directories it names (ReadWritePaths=).
        remedy += f" (from a shell: the service may write only {', '.join(SERVICE_WRITABLE_ETC)})"
    return Finding(
        "enforce-write-failed",
        E,
        f"writing {action.target} {what}: {cause}",
        remedy + ("; the previous file is unchanged" if kept else ""),
        (f"{action.target}: {exc}",),
    )


class Enforcer:
    def __init__(self, system: System, config: Config, *, dry_run: bool = False) -> None:
        self.system = system
        self.root: Root = system.root
        self.config = config
        self.dry_run = dry_run
        self.changes: list[Change] = []
        self.findings: list[Finding] = []
        self.changed_paths: set[str] = set()

    def path(self, shown: str) -> HostPath:
        return self.root.join(shown)

    def record(self, action: Action, status: str, detail: str = "", diff: str = "") -> None:
        self.changes.append(Change(action, status, detail, diff))
        if status in ("changed", "failed"):
            # A failed repair is a warning: journalctl -p warning must show it.
            level = log.INFO if status == "changed" else log.WARNING
            log.emit(level, f"enforce: {action.kind} {action.target}: {status}{': ' + detail if detail else ''}")

    # --- files ---------------------------------------------------------------------------

    def write_file(self, action: Action) -> None:
        assert action.content is not None
        path = self.path(action.target)
        new = action.content.encode()
        try:
            files.check_target(path)
            old = _read(path)
        except OSError as exc:
            self.record(action, "failed", str(exc))
            self.findings.append(_write_failed(action, exc, True))
            return
        if old == new:
            self.record(action, "unchanged")
            return
        diff = _diff((old or b"").decode(errors="replace"), action.content, action.target)
        if self.dry_run:
            self.record(action, "would-change", "create" if old is None else "rewrite", diff)
            return
        detail = "created" if old is None else "rewritten"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if old is not None and not files.is_generated(path):
                copy = files.backup(path, self.root.var_lib / "kfdguard/backups", action.target)
                detail += f"; the previous file, not written by kfdguard, is saved as {self.root.display(copy)}"
            self.system.write_file(path, new, 0o644)
        except OSError as exc:
            self.record(action, "failed", str(exc))
            self.findings.append(_write_failed(action, exc, old is not None))
            return
        self.changed_paths.add(action.target)
        self.record(action, "changed", detail, diff)

    def remove_file(self, action: Action) -> None:
        path = self.path(action.target)
        if _read(path) is None:
            self.record(action, "unchanged")
        elif not files.is_generated(path):
            self.record(action, "skipped", "not written by kfdguard: left alone")
        elif self.dry_run:
            self.record(action, "would-change", "remove")
        else:
            try:
                self.system.remove_file(path)
            except OSError as exc:
                self.record(action, "failed", str(exc))
                self.findings.append(_write_failed(action, exc, True))
                return
            self.changed_paths.add(action.target)
            self.record(action, "changed", "removed")

    def comment_out(self, action: Action) -> None:
        shown = action.target
        path = self.path(shown)
        # /etc/modules-load.d/modules.conf is a symlink to ../modules on Debian:
        # edit the file it names, as long as that stays inside /etc.
        real = os.path.realpath(path)
        etc = os.path.realpath(self.root.etc)
        if not real.startswith(etc + os.sep):
            self.record(action, "skipped", f"{shown} resolves outside /etc: left alone")
            return
        from kfdguard.host.paths import HostPath

        target = HostPath(real)
        data = _read(target)
        if data is None:
            self.record(action, "skipped", "the file is gone")
            return
        text = data.decode(errors="replace")
        lines = text.split("\n")
        marked = []
        for number in action.lines:
            index = number - 1
            while 0 <= index < len(lines) and not lines[index].lstrip().startswith("#"):
                original = lines[index]
                lines[index] = f"# kfdguard disabled: {original}"
                marked.append(number)
                if not continues(original):
                    break
                index += 1  # a continued line: disable the whole directive
        if not marked:
            self.record(action, "unchanged", "already disabled")
            return
        note = (
            f"# kfdguard disabled line(s) {', '.join(map(str, action.lines))} below: {action.detail.split(': ', 1)[-1]}"
        )
        new = note + "\n" + "\n".join(lines)
        diff = _diff(text, new, self.root.display(target))
        if self.dry_run:
            self.record(action, "would-change", action.detail, diff)
            return
        try:
            copy = files.backup(target, self.root.var_lib / "kfdguard/backups", self.root.display(target))
            self.system.write_file(target, new.encode(), os.stat(target).st_mode & 0o777)
        except OSError as exc:
            self.record(action, "failed", str(exc))
            self.findings.append(_write_failed(action, exc, True))
            return
        self.changed_paths.add(self.root.display(target))
        self.record(action, "changed", f"{action.detail}; backup: {self.root.display(copy)}", diff)

    # --- udev, modules, nodes, users -----------------------------------------------------------

    def udev_reload(self, action: Action) -> None:
        if not any(p.startswith(UDEV_DIR) for p in self.changed_paths) and not self.dry_run:
            self.record(action, "unchanged", "no rule changed")
            return
        if self.dry_run:
            status = (
                "would-change"
                if any(c.status == "would-change" and c.action.target.startswith(UDEV_DIR) for c in self.changes)
                else "unchanged"
            )
            self.record(action, status)
            return
        result = self.system.run(["udevadm", "control", "--reload"], timeout=self.config.timeouts.command)
        self.record(action, "changed" if result.ok else "failed", "" if result.ok else result.describe())

    def load_module(self, action: Action, *, reload: bool = False) -> None:
        if self.dry_run:
            self.record(action, "would-change", "modprobe -r amdgpu; modprobe amdgpu" if reload else "modprobe amdgpu")
            return
        timeout = self.config.timeouts.modprobe
        if reload:
            removed = self.system.run(["modprobe", "-r", action.target], timeout=timeout)
            if not removed.ok:
                self.record(action, "failed", removed.describe())
                self.findings.append(
                    Finding(
                        "module-load-failed",
                        W,
                        f"could not unload {action.target} to reload it",
                        "reboot to apply the options",
                        (removed.describe(),),
                    )
                )
                return
        result = self.system.run(["modprobe", action.target], timeout=timeout)
        if result.ok:
            self.record(action, "changed", "loaded")
            return
        self.record(action, "failed", result.describe())
        stderr = result.stderr.strip()
        if result.timed_out:
            finding = Finding(
                "module-load-timeout",
                E,
                f"modprobe {action.target} did not finish in {timeout:g} s and was killed",
                "look at the kernel log for what amdgpu was doing (sudo dmesg | tail); "
                "raise timeouts.modprobe if the machine is just slow",
                (result.describe(),),
            )
        elif any(s in stderr for s in SIGNATURE_ERRORS):
            finding = Finding(
                "module-signature-rejected",
                E,
                f"the kernel refused to load {action.target}: "
                f"{stderr.splitlines()[-1]} (Secure Boot: the module is not signed with a trusted "
                "key)",
                "enroll the DKMS signing key (sudo mokutil --import /var/lib/dkms/mok.pub, then reboot "
                "and confirm), or use the distribution's signed amdgpu",
                (result.describe(),),
            )
        else:
            last = stderr.splitlines()[-1] if stderr else result.describe()
            finding = Finding(
                "module-load-failed",
                E,
                f"loading {action.target} failed: {last}",
                "see the kernel log (sudo dmesg | tail -30) for the reason",
                (result.describe(),),
            )
        self.findings.append(finding)

    def fix_node(self, action: Action) -> None:
        from kfdguard.parsers.accounts import parse_group

        assert action.group is not None and action.mode is not None
        groups, _ = parse_group((_read(self.root.etc / "group") or b"").decode(errors="replace"))
        gid = next((g.gid for g in groups if g.name == action.group), None)
        if gid is None:
            self.record(action, "skipped", f"group {action.group} does not exist")
            return
        path = self.path(action.target)
        try:
            node = self.system.stat_node(path)
        except OSError as exc:
            self.record(action, "failed", str(exc))
            return
        if node is None:
            self.record(action, "skipped", "the node is gone")
            return
        if (node.uid, node.gid, node.mode) == (0, gid, action.mode):
            self.record(action, "unchanged")
            return
        if self.dry_run:
            self.record(action, "would-change", action.detail)
            return
        try:
            self.system.set_node_owner(path, 0, gid, action.mode)
            after = self.system.stat_node(path)
        except OSError as exc:
            self.record(action, "failed", str(exc))
            cause = exc.strerror or str(exc)
            self.findings.append(
                Finding(
                    "enforce-write-failed", E, f"could not change {action.target}: {cause}", "run as root", (str(exc),)
                )
            )
            return
        if after is None or (after.gid, after.mode) != (gid, action.mode):
            self.record(action, "failed", "the change did not stick (udev changed it back?)")
            return
        self.record(action, "changed", action.detail)

    def add_to_group(self, action: Action) -> None:
        assert action.group is not None
        if self.dry_run:
            self.record(action, "would-change", f"gpasswd -a {action.target} {action.group}")
            return
        result = self.system.add_to_group(action.target, action.group, self.config.timeouts.command)
        if result.ok:
            self.record(action, "changed", f"added to {action.group}; takes effect at the user's next login")
        else:
            self.record(action, "failed", result.describe())

    def regenerate(self, action: Action, facts: Facts) -> None:
        release = action.target
        contents = self.system.initramfs_files(release, self.config.timeouts.command)
        if contents is not None and not any("amdgpu.ko" in line for line in contents):
            self.record(action, "skipped", "amdgpu is not in the initramfs: modprobe.d applies as it is")
            return
        if not any(p.startswith((MODPROBE_D, *MODULES_FILES)) for p in self.changed_paths):
            self.record(action, "unchanged")
            return
        step = initramfs_step(_distro(facts), release)
        if step.argv is None:
            # No row for this distribution: a step for a person, never a sentence run as a program.
            self.record(action, "manual", step.text)
            return
        if self.dry_run:
            self.record(action, "would-change", step.text)
            return
        result = self.system.run(step.argv, timeout=INITRAMFS_TIMEOUT)
        self.record(action, "changed" if result.ok else "failed", result.describe())

    def run(self, actions: tuple[Action, ...], facts: Facts) -> None:
        for action in actions:
            if action.kind == "write-file":
                self.write_file(action)
            elif action.kind == "remove-file":
                self.remove_file(action)
            elif action.kind == "comment-out":
                self.comment_out(action)
            elif action.kind == "udev-reload":
                self.udev_reload(action)
            elif action.kind in ("load-module", "reload-module"):
                self.load_module(action, reload=action.kind == "reload-module")
            elif action.kind == "fix-node":
                self.fix_node(action)
            elif action.kind == "add-to-group":
                self.add_to_group(action)
            elif action.kind == "regenerate-initramfs":
                self.regenerate(action, facts)
            else:
                self.record(action, "skipped", f"unknown action kind {action.kind}")

    @property
    def loaded_a_module(self) -> bool:
        return any(c.status == "changed" and c.action.kind in ("load-module", "reload-module") for c in self.changes)

    @property
    def touched(self) -> bool:
        """Something was changed or tried: the machine needs a second look."""
        return any(c.status in ("changed", "failed") for c in self.changes)

    def note_initramfs(self, facts: Facts) -> None:
        """With module.initramfs: report, a changed modprobe.d that the initramfs still holds old is a finding."""
        config = self.config
        if config.module.initramfs != "report":
            return
        if not any(p.startswith((MODPROBE_D, *MODULES_FILES)) for p in self.changed_paths):
            return
        release = facts.kernel.release
        contents = self.system.initramfs_files(release, config.timeouts.command)
        if contents and any("amdgpu.ko" in line for line in contents):
            step = initramfs_step(_distro(facts), release)
            self.findings.append(
                Finding(
                    "initramfs-stale",
                    W,
                    "amdgpu is loaded from the initramfs, which still holds the old modprobe.d: the change takes "
                    "effect only after the initramfs is rebuilt",
                    f"{step.text} (or set module.initramfs: regenerate)"
                    if not step.manual
                    else f"{step.text}, then reboot",
                    (f"{BOOT_DIR}/initrd.img-{release} contains amdgpu.ko",),
                )
            )

    def wait_for_kfd(self) -> None:
        """After loading amdgpu, /dev/kfd appears once udev has run; wait a bounded time."""
        deadline = time.monotonic() + self.config.timeouts.device_wait
        while time.monotonic() < deadline:
            try:
                if self.system.stat_node(self.root.kfd) is not None:
                    return
            except OSError:
                return
            time.sleep(0.05)


def _distro(facts: Facts) -> Distribution:
    return detect(facts.os.id, facts.os.id_like)


__all__ = ["Change", "EnforceReport", "Enforcer"]
