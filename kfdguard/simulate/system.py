"""SimulatedSystem: the System layer answered by a simulated machine."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable

from kfdguard.access import NodeStat
from kfdguard.host.root import Root
from kfdguard.host.runner import Runner, RunResult
from kfdguard.host.system import (
    KfdIoctlError,
    LogLines,
    LogUnavailable,
    ReadBudget,
    System,
    journal_line,
    kernel_records,
)
from kfdguard.simulate import state
from kfdguard.simulate.spec import DkmsSpec, GpuSpec, KernelSpec, MachineSpec, OsSpec, UdevSpec, UserSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kfdguard.host.paths import HostPath
    from kfdguard.simulate.kernel import SimKernel

# Commands that only read and may run for real against the simulated tree.
PASS_THROUGH = frozenset({"modinfo", "depmod"})


def _kernel(d: dict[str, object]) -> KernelSpec:
    return KernelSpec(**{**d, "kfd_interface": tuple(d["kfd_interface"])})  # type: ignore[arg-type]


def spec_from_json(text: str) -> MachineSpec:
    d = json.loads(text)
    return MachineSpec(
        name=d["name"],
        description=d["description"],
        os=OsSpec(**{**d["os"], "id_like": tuple(d["os"]["id_like"])}),
        kernel=_kernel(d["kernel"]),
        other_kernels=tuple(_kernel(k) for k in d["other_kernels"]),
        gpus=tuple(
            GpuSpec(
                **{
                    **g,
                    "subsystem": tuple(g["subsystem"]),
                    "outcomes": tuple(tuple(o) for o in g["outcomes"]),
                    "link": None if g.get("link") is None else tuple(g["link"]),
                }
            )
            for g in d["gpus"]
        ),
        amdgpu_loaded=d["amdgpu_loaded"],
        udev=UdevSpec(**d["udev"]),
        users=tuple(UserSpec(**{**u, "groups": tuple(u["groups"])}) for u in d["users"]),
        groups=d["groups"],
        files=d["files"],
        cmdline=d["cmdline"],
        log=tuple(d["log"]),
        dkms=None
        if d["dkms"] is None
        else DkmsSpec(**{**d["dkms"], "built": tuple(d["dkms"]["built"]), "failed": tuple(d["dkms"]["failed"])}),
        cpu_cores=d["cpu_cores"],
        ram_mib=d.get("ram_mib", 32768),
        journal=d["journal"],
        previous_log=tuple(d["previous_log"]),
        bootloader=d["bootloader"],
        grub_default=d["grub_default"],
        boot_fs=d["boot_fs"],
        history=tuple((str(h[0]), str(h[1])) for h in d["history"]),
        sdboot_version=d.get("sdboot_version"),
        boot_tries=d.get("boot_tries", 0),
    )


def load_spec(root: Root) -> MachineSpec:
    with open(os.path.join(state.sim_dir(root), "spec.json"), encoding="utf-8") as handle:
        return spec_from_json(handle.read())


class SimulatedSystem(System):
    provenance = "simulated"

    def __init__(self, root: Root, runner: Runner | None = None) -> None:
        if not state.is_simulated(root):
            raise ValueError(f"{root.path} is not a simulated machine (no {state.SIM_DIR}/)")
        self.root = root
        self.runner = runner or Runner()

    def _machine_path(self, path: HostPath) -> str:
        return self.root.display(path)

    def stat_node(self, path: HostPath) -> NodeStat | None:
        return state.read_devices(self.root).get(self._machine_path(path))

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        node = self.stat_node(path)
        if node is None:
            raise KfdIoctlError("open", errno.ENOENT, "No such file or directory")
        values = state.read_state(self.root)
        if values.get("fault:kfd-open") == "eperm":
            # What a device cgroup answers: the service's DeviceAllow= was resolved before "kfd" existed.
            raise KfdIoctlError("open", errno.EPERM, "Operation not permitted")
        if values.get("kfd_live") != "1":
            raise KfdIoctlError("open", errno.ENODEV, "No such device")
        return load_spec(self.root).kernel.kfd_interface

    def read_kmsg(self) -> list[str]:
        # The simulated kernel's records, kept as the real reader keeps /dev/kmsg's: the kernel's, in budget.
        return kernel_records(state.read_kmsg(self.root))

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        spec = load_spec(self.root)
        if not spec.journal:
            raise LogUnavailable("no journal on this machine (journald is not running)")
        # One budget for the whole read, as RealSystem's. Provenance needs no test here: the simulated
        # journal holds only what the simulated kernel, udevd and modules-load wrote.
        budget = ReadBudget()
        result: list[tuple[int, list[str]]] = [(0, _journal_lines(state.sim_dir(self.root), budget))]
        if boots >= 1:
            previous = self._previous_boot(budget)
            if previous or spec.previous_log:
                result.append((-1, previous or _within(spec.previous_log, budget)))
        return result

    def _previous_boot(self, budget: ReadBudget) -> list[str]:
        """The boot before a simulated reboot, as journal lines."""
        directory = os.path.join(state.sim_dir(self.root), "previous")
        if not os.path.exists(os.path.join(directory, "kmsg")):
            return []
        return _journal_lines(directory, budget)

    def reboot(self) -> None:
        """Simulate a reboot (tests and the demo): the machine boots again from its files."""
        self._record(("reboot",))
        self.kernel().reboot()

    def kernel(self) -> SimKernel:
        # The simulated kernel's physics load only when something acts on the machine:
        # probing a simulated machine costs what probing a real one does.
        from kfdguard.simulate.kernel import SimKernel

        return SimKernel(self.root, load_spec(self.root))

    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        from kfdguard.record import replace

        nodes = state.read_devices(self.root)
        shown = self._machine_path(path)
        node = nodes.get(shown)
        if node is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", shown)
        if node.kind != "char":
            raise OSError(errno.EINVAL, f"{shown} is not a character device")
        # chmod(2) on a file with an ACL sets the mask from the group bits.
        acl = tuple(replace(e, perms=(mode >> 3) & 7) if e.tag == "mask" else e for e in node.acl)
        nodes[shown] = replace(node, uid=uid, gid=gid, mode=mode, acl=acl)
        state.write_devices(self.root, nodes)
        self._record(("chown+chmod", shown, f"{uid}:{gid}", f"{mode:04o}"))

    def add_to_group(self, user: str, group: str, timeout: float) -> RunResult:
        """What gpasswd -a does, on the simulated /etc/group."""
        from kfdguard.host.files import atomic_write

        args = ("gpasswd", "-a", user, group)
        self._record(args)
        path = self.root.etc / "group"
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            fields = line.split(":")
            if len(fields) == 4 and fields[0] == group:
                members = [m for m in fields[3].split(",") if m]
                if user not in members:
                    members.append(user)
                lines[i] = ":".join([*fields[:3], ",".join(members)])
                atomic_write(path, ("\n".join(lines) + "\n").encode(), 0o644)
                return RunResult(args, 0, stdout=f"Adding user {user} to group {group}\n")
        return RunResult(args, 3, stderr=f"gpasswd: group '{group}' does not exist in /etc/group\n")

    def initramfs_files(self, release: str, timeout: float) -> list[str] | None:
        image = self.root.boot / f"initrd.img-{release}"
        try:
            return image.read_text().splitlines()[1:]
        except (OSError, UnicodeDecodeError):
            return None

    def _record(self, argv: Sequence[str]) -> None:
        with open(os.path.join(state.sim_dir(self.root), "commands.log"), "a", encoding="utf-8") as handle:
            handle.write(" ".join(argv) + "\n")

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        args = tuple(argv)
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._record(args)
        prog = args[0].rsplit("/", 1)[-1]
        fault = state.read_state(self.root).get(f"fault:{prog}")
        if fault == "hang":
            # Really block, so that the runner's timeout and kill path are what
            # the test exercises.
            return self.runner.run(["sleep", "3600"], timeout=timeout)
        if fault is not None and fault.startswith("fail:"):
            return RunResult(args, 1, stderr=fault[5:].replace("\\n", "\n"))
        if prog in PASS_THROUGH:
            return self.runner.run(args, timeout=timeout)
        handlers: dict[str, Callable[[], RunResult]] = {
            "modprobe": lambda: self._modprobe(args),
            "udevadm": lambda: self._udevadm(args),
            "findmnt": lambda: RunResult(args, 0, stdout=load_spec(self.root).boot_fs + "\n"),
            "bootctl": lambda: self._bootctl(args),
        }
        for grub in ("grub-reboot", "grub-set-default", "grub-editenv"):
            handlers[grub] = lambda: self._grub(args, timeout)
        for tool in ("update-initramfs", "dracut", "mkinitcpio"):
            handlers[tool] = lambda: RunResult(args, 0, stdout="simulated: initramfs regenerated\n")
        if prog in handlers:
            return handlers[prog]()
        return RunResult(args, None, error=f"{prog} is not available on a simulated machine")

    def _grub(self, args: tuple[str, ...], timeout: float) -> RunResult:
        # The real GRUB tools, pointed at the simulated /boot: only arguments that
        # stay inside the machine are allowed, so a test can never touch the host's.
        inside = str(self.root.path)
        paths = [a.split("=", 1)[-1] for a in args[1:] if a.startswith(("/", "--boot-directory="))]
        if not paths or not all(p == inside or p.startswith(inside + "/") for p in paths):
            return RunResult(args, 2, stderr=f"{args[0]}: refused on a simulated machine: no path inside it\n")
        return self.runner.run(args, timeout=timeout)

    def _bootctl(self, args: tuple[str, ...]) -> RunResult:
        # Real bootctl writes EFI variables: set-oneshot LoaderEntryOneShot, set-default LoaderEntryDefault
        # (loader.conf stays the administrator's); an empty id removes the variable.
        variables = {"set-oneshot": "LoaderEntryOneShot", "set-default": "LoaderEntryDefault"}
        verb = args[1] if len(args) > 1 else ""
        if verb not in variables:
            return RunResult(args, 1, stderr=f"bootctl: simulated bootctl does not know '{verb}'\n")
        from kfdguard.host.files import atomic_write
        from kfdguard.simulate.bootloader import efi_value
        from kfdguard.simulate.kernel import LOADER_GUID

        value = args[2] if len(args) > 2 else ""
        var = self.root.sys / f"firmware/efi/efivars/{variables[verb]}-{LOADER_GUID}"
        if value:
            var.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(var, efi_value(value), 0o644)
        elif var.exists():
            var.unlink()
        return RunResult(args, 0)

    def _modprobe(self, args: tuple[str, ...]) -> RunResult:
        remove = False
        words: list[str] = []
        for word in args[1:]:
            if word in ("-r", "--remove"):
                remove = True
            elif word in ("-q", "--quiet", "-v", "--verbose", "-b", "--use-blacklist"):
                continue
            elif word.startswith("-"):
                return RunResult(args, 1, stderr=f"modprobe: simulated modprobe does not take {word}\n")
            else:
                words.append(word)
        if not words:
            return RunResult(args, 1, stderr="modprobe: FATAL: Module name required\n")
        kernel = self.kernel()
        if remove:
            outcome = kernel.unload(words[0])
        else:
            extra = [(w.partition("=")[0], w.partition("=")[2]) for w in words[1:]]
            outcome = kernel.modprobe(words[0], extra)
        return RunResult(args, outcome.returncode, outcome.stdout, outcome.stderr)

    def _udevadm(self, args: tuple[str, ...]) -> RunResult:
        sub = args[1] if len(args) > 1 else ""
        if sub in ("control", "settle"):
            return RunResult(args, 0)
        if sub == "trigger":
            # Without --action=add only "change" events go out, and the default
            # rules skip permissions on them (kfd-facts.md §3).
            if any(a in ("--action=add", "-cadd") for a in args) or (
                "--action" in args and args[args.index("--action") + 1 : args.index("--action") + 2] == ("add",)
            ):
                self.kernel().udev_trigger_add()
            else:
                self.kernel().udev_trigger_change()
            return RunResult(args, 0)
        return RunResult(args, 1, stderr=f"udevadm: simulated udevadm does not know '{sub}'\n")


def _within(lines: Iterable[str], budget: ReadBudget) -> LogLines:
    kept = LogLines()
    for line in lines:
        taken = budget.take(line, kept)
        if taken is not None:
            kept.append(taken)
    return kept


def _journal_lines(directory: str, budget: ReadBudget) -> LogLines:
    """A simulated boot's kmsg records and journal lines, merged in time order as journal lines.

    Like journald reading /dev/kmsg, records that do not parse are left out: the
    simulated buffers are machine content that tests may spoil on purpose.
    """
    entries: list[tuple[int, str, str]] = []
    for name in ("kmsg", "journal"):
        for line in state.read_log(os.path.join(directory, name)):
            if name == "kmsg":  # "pri,seq,usec,flags;text"
                head, _, message = line.partition(";")
                usec, ident = [*head.split(","), "", ""][2], "kernel"
            else:  # "usec\tidentifier\tmessage"
                usec, _, rest = line.partition("\t")
                ident, tab, message = rest.partition("\t")
                if not tab:
                    continue
            if usec.isascii() and usec.isdigit():
                entries.append((int(usec), ident, message))
    entries.sort(key=lambda e: e[0])
    kept = LogLines()
    for at, who, text in entries:
        taken = budget.take(text, kept)
        if taken is not None:
            kept.append(journal_line(at, who, taken))
    return kept
