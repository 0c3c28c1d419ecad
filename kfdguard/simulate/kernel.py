"""The simulated kernel: what loading amdgpu (or amdkfd) does to a machine.

Given the machine's description and its configuration files, loading the
module binds the GPUs it supports, creates DRM nodes, initialises KFD (or
fails to, for the reasons real kernels fail), builds the topology, applies
udev's rules to the new nodes and prints the messages the real kernel prints
in the format of the running kernel's version (kfd-facts.md §6).
"""

from __future__ import annotations

import os
import zlib

from kfdguard.access import AclEntry, NodeStat
from kfdguard.host.root import Root
from kfdguard.probe.system_info import parse_release
from kfdguard.record import dataclass
from kfdguard.simulate import hardware, state
from kfdguard.simulate import modprobe as modprobe_model
from kfdguard.simulate.modparams import AMDKFD_OLD, amdgpu_params, ttm_params
from kfdguard.simulate.spec import GpuSpec, KernelSpec, MachineSpec
from kfdguard.simulate.udev import policy_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath

KFD_MAJOR = 240
DRM_MAJOR = 226
# kfd_module.c: KFD_SCHED_POLICY_HWS .. KFD_SCHED_POLICY_NO_HWS
SCHED_POLICIES = range(3)
# kfd_init() accepts 1..KFD_MAX_NUM_OF_QUEUES_PER_DEVICE = 512 processes x 1024 queues
# (kfd_priv.h of 5.10, 6.1 and 6.12); 4096 is only the parameter's default.
MAX_QUEUES = 524288
INFO, WARNING, ERROR = 6, 4, 3


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str = ""
    stderr: str = ""


def kernel_version(release: str) -> tuple[int, int]:
    parsed = parse_release(release)
    return (parsed[0], parsed[1]) if parsed else (0, 0)


def kernel_config(kernel: KernelSpec) -> dict[str, str]:
    """The running kernel's Kconfig: distribution-like defaults plus the description's overrides."""
    version = kernel_version(kernel.release)
    merged = version >= (4, 20)
    config = {
        "CONFIG_MODULES": "y",
        "CONFIG_DRM": "m",
        "CONFIG_DRM_AMDGPU": "m",
        "CONFIG_DRM_AMDGPU_SI": "y",
        "CONFIG_DRM_AMDGPU_CIK": "y",
        "CONFIG_DRM_AMD_DC": "y",
        "CONFIG_HSA_AMD": "y" if merged else "m",
        "CONFIG_MODULE_SIG": "y",
        "CONFIG_LOCALVERSION": "",
    }
    if version >= (5, 14):
        config["CONFIG_HSA_AMD_SVM"] = "y"
    if version < (6, 7):
        config["CONFIG_AMD_IOMMU_V2"] = "y" if merged else "m"
    for key, value in kernel.config.items():
        config[key] = "n" if value is None else value
    return config


def is_merged(kernel: KernelSpec) -> bool:
    return kernel_version(kernel.release) >= (4, 20)


class SimKernel:
    def __init__(self, root: Root, spec: MachineSpec) -> None:
        self.root = root
        self.spec = spec
        self.kernel = spec.kernel
        self.version = kernel_version(self.kernel.release)
        self.config = kernel_config(self.kernel)
        self.merged = is_merged(self.kernel)
        self.values = state.read_state(root)
        self.devices = state.read_devices(root)
        self.kmsg: list[str] = []
        self.journal: list[str] = []
        self.uevents: list[str] = []

    # --- bookkeeping -------------------------------------------------------------

    def save(self) -> None:
        state.write_state(self.root, self.values)
        state.write_devices(self.root, self.devices)
        if self.kmsg:
            path = os.path.join(state.sim_dir(self.root), "kmsg")
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in self.kmsg))
            # A service following the log hears the records as the journal would hand them on.
            state.send_kmsg(self.root, self.kmsg)
            self.kmsg = []
        if self.journal:
            with open(os.path.join(state.sim_dir(self.root), "journal"), "a", encoding="utf-8") as handle:
                handle.write("".join(line + "\n" for line in self.journal))
            self.journal = []
        if self.uevents:
            # After the state is written, so a listener that re-reads the machine sees the change.
            state.send_uevents(self.root, self.uevents)
            self.uevents = []

    def advance(self, usec: int) -> None:
        self.values["clock_us"] = str(int(self.values.get("clock_us", "0")) + usec)

    def printk(self, text: str, level: int = INFO) -> None:
        self.advance(137)
        seq = int(self.values.get("kmsg_seq", "0"))
        self.values["kmsg_seq"] = str(seq + 1)
        self.kmsg.append(f"{level},{seq},{self.values['clock_us']},-;{text}")

    def log_userspace(self, ident: str, message: str) -> None:
        """A message a boot-time program (udevd, modules-load) sends to the journal."""
        self.advance(211)
        self.journal.append(f"{self.values['clock_us']}\t{ident}\t{message}")

    def modules_load(self) -> None:
        """systemd-modules-load at boot: every listed module is loaded, or fails loudly."""
        for module in modprobe_model.modules_to_load(self.root.path):
            name = _normalise(module)
            if self.module_file(name) is None and not self.loaded(name):
                self.log_userspace("systemd-modules-load", f"Failed to find module '{module}'")
            elif name in ("amdgpu", "amdkfd"):
                self.modprobe(name, [])

    def write(self, rel: str, text: str) -> None:
        path = self.root.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def link(self, rel: str, target: str) -> None:
        path = self.root.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        path.symlink_to(target)

    # --- message prefixes by kernel version -----------------------------------------

    @property
    def pr(self) -> str:
        # pr_fmt("amdgpu: ") once KFD lived inside amdgpu. The standalone amdkfd.ko had no pr_fmt:
        # a real 4.15.0-36 boot prints "Creating topology SYSFS entries" bare (ROCm/ROCm#593).
        return "amdgpu: " if self.merged else ""

    @property
    def kfd_dev(self) -> str:
        # dev_fmt("amdgpu: ") joined the dev_* messages around 5.12 (5.11 logs lack it).
        return "kfd kfd: amdgpu: " if self.version >= (5, 12) else "kfd kfd: "

    def gpu_dev(self, gpu: GpuSpec) -> str:
        return f"amdgpu {gpu.slot}: amdgpu: " if self.version >= (5, 0) else f"amdgpu {gpu.slot}: "

    # --- module options -----------------------------------------------------------------

    def kmod_config(self) -> modprobe_model.KmodConfig:
        """modprobe.d and the kernel command line, read by the simulator's own kmod model (simulate/modprobe.py),
        not by kfdguard's parser: the two are held against real kmod by
        tests/unit/simulate/test_simulate_modprobe.py."""
        return modprobe_model.read_config(self.root.path, (self.root.proc / "cmdline").read_text())

    def options_for(self, module: str, extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return modprobe_model.options_for(self.kmod_config(), module) + list(extra)

    def install_command(self, module: str) -> str | None:
        return modprobe_model.install_command(self.kmod_config(), module)

    # --- modules ---------------------------------------------------------------------------

    def _dep_line(self, module: str) -> tuple[str, list[str]] | None:
        """``module``'s line of modules.dep: its file and the files it needs; None without one."""
        dep = self.root.lib_modules / self.kernel.release / "modules.dep"
        try:
            lines = dep.read_text().splitlines()
        except FileNotFoundError:
            return None
        for line in lines:
            path, _, deps = line.partition(":")
            if _module_name(path) == module:
                return path, deps.split()
        return None

    def module_file(self, module: str) -> str | None:
        line = self._dep_line(module)
        return None if line is None else line[0]

    def loaded(self, module: str) -> bool:
        return (self.root.sys / "module" / module / "initstate").is_file()

    def modprobe(self, module: str, extra: list[tuple[str, str]], *, ignore_install: bool = False) -> Outcome:
        module = _normalise(module)
        if not ignore_install:
            command = self.install_command(module)
            if command is not None:
                return self._run_install(module, command)
        if self.loaded(module):
            return Outcome(0)
        if self.module_file(module) is None:
            return Outcome(
                1,
                stderr=f"modprobe: FATAL: Module {module} not found in directory /lib/modules/{self.kernel.release}\n",
            )
        if module == "amdgpu":
            self.load_amdgpu(extra)
        elif module == "amdkfd":
            self.load_amdkfd(extra)
        elif module in ("ttm", "amdttm") and ttm_params(self.version, module) is not None:
            self.load_ttm(module, extra)
        else:
            self._register_module(module, (), refcnt=0)
        self.save()
        return Outcome(0)

    def _run_install(self, module: str, command: str) -> Outcome:
        # Install commands run through /bin/sh; the simulator follows the two
        # forms people write: a chain of modprobe calls, or /bin/false/true.
        rc = 0
        stderr = ""
        for part in command.replace("&&", ";").split(";"):
            words = part.split()
            if not words:
                continue
            prog = words[0].rsplit("/", 1)[-1]
            if prog == "false":
                return Outcome(1, stderr=stderr)
            if prog == "true":
                continue
            if prog == "modprobe":
                args = [w for w in words[1:] if not w.startswith("$")]
                ignore = "--ignore-install" in args or "-i" in args
                names = [w for w in args if not w.startswith("-")]
                if names:
                    result = self.modprobe(names[0], [], ignore_install=ignore)
                    rc = rc or result.returncode
                    stderr += result.stderr
        if rc:
            stderr += f"modprobe: ERROR: Error running install command '{command}' for module {module}: retcode {rc}\n"
            return Outcome(1, stderr=stderr)
        return Outcome(0, stderr=stderr)

    def _register_module(self, module: str, params: tuple[tuple[str, str], ...], refcnt: int) -> None:
        base = f"sys/module/{module}"
        self.write(f"{base}/initstate", "live\n")
        self.write(f"{base}/refcnt", f"{refcnt}\n")
        (self.root.sys / "module" / module / "holders").mkdir(parents=True, exist_ok=True)
        for name, value in params:
            self.write(f"{base}/parameters/{name}", value + "\n")
        if self.kernel.amdgpu == "dkms" and module == "amdgpu" and self.spec.dkms:
            self.write(f"{base}/version", self.spec.dkms.version.split("-")[0] + "\n")
        modules = (self.root.proc / "modules").read_text() if (self.root.proc / "modules").exists() else ""
        size = {"amdgpu": 9650176, "amdkfd": 249856}.get(module, 16384)
        modules += f"{module} {size} {refcnt} - Live 0x0000000000000000\n"
        self.write("proc/modules", modules)

    def _set_holders(self, module: str, holders: list[str]) -> None:
        """A module's users as /sys/module/<m>/holders, refcnt and /proc/modules' "used by" column show them
        (each module linked against it holds one reference: ref_module())."""
        directory = self.root.sys / "module" / module / "holders"
        directory.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(directory):
            if name not in holders:
                os.rmdir(directory / name)
        for name in holders:
            (directory / name).mkdir(exist_ok=True)
        self.write(f"sys/module/{module}/refcnt", f"{len(holders)}\n")
        lines = (self.root.proc / "modules").read_text().splitlines() if (self.root.proc / "modules").exists() else []
        used = "".join(f"{h}," for h in holders) or "-"
        for i, line in enumerate(lines):
            fields = line.split(" ")
            if fields[0] == module and len(fields) == 6:
                lines[i] = " ".join([*fields[:2], str(len(holders)), used, *fields[4:]])
        self.write("proc/modules", "".join(line + "\n" for line in lines))

    # --- TTM, the memory manager amdgpu sizes GTT and an APU's KFD bank from (issue 38) -------------------

    def _dep_names(self, module: str) -> list[str] | None:
        """The modules modules.dep says ``module`` needs (what modprobe loads first), or None without it."""
        line = self._dep_line(module)
        return None if line is None else [_module_name(d) for d in line[1]]

    def _builtin(self, module: str) -> bool:
        try:
            text = (self.root.lib_modules / self.kernel.release / "modules.builtin").read_text()
        except FileNotFoundError:
            return False
        return any(_normalise(line.rsplit("/", 1)[-1].split(".ko", 1)[0]) == module for line in text.splitlines())

    def ttm_module(self) -> str | None:
        """The TTM module amdgpu uses: amdttm where modules.dep makes amdgpu depend on it (the DKMS driver,
        whose TTM calls are renamed to amdttm's), else ttm, loadable or built in; None without amdgpu."""
        deps = self._dep_names("amdgpu")
        if deps is not None and "amdttm" in deps:
            return "amdttm"
        if (deps is not None and "ttm" in deps) or self._builtin("ttm"):
            return "ttm"
        return None

    def load_ttm(self, module: str, extra: list[tuple[str, str]]) -> None:
        """modprobe of the TTM module, before amdgpu as modules.dep orders it: its options from modprobe.d and
        the kernel command line (``options ttm pages_limit=...``) become its parameters. They stay 0 when
        unset until the first device initialises (ttm_global_init())."""
        declared = ttm_params(self.version, module)
        if declared is None or self.loaded(module):
            return
        params = self._params(declared, module, extra)
        self._register_module(module, tuple(params.items()), refcnt=0)

    def builtin_ttm(self, cmdline: str) -> None:
        """A built-in ttm (CONFIG_DRM_TTM=y) has its parameters from boot, set by the kernel command line
        alone (kernel/params.c parse_args() of "ttm.<name>=<value>"; modprobe.d never reaches it)."""
        declared = ttm_params(self.version, "ttm")
        if declared is None or not self._builtin("ttm"):
            return
        values = {name: default for name, _, default in declared}
        for word, value in modprobe_model.kernel_params(cmdline):
            prefix, dot, name = word.partition(".")
            name = _normalise(name)  # parameq(): "-" and "_" are the same in a parameter's name
            if dot and _normalise(prefix) == "ttm" and name in values:
                values[name] = value
        for name, value in values.items():
            self.write(f"sys/module/ttm/parameters/{name}", value + "\n")

    def ttm_global_init(self) -> int:
        """ttm_device_init() -> ttm_global_init() when amdgpu initialises a device (the first one does the
        work): ttm_tt_mgr_init() and ttm_pool_mgr_init() put half the RAM in place of a pages_limit or
        page_pool_size of 0, and the parameters show it from then on. Returns ttm_tt_pages_limit() in bytes
        of the TTM module amdgpu uses (half the RAM where the simulator does not model its parameters)."""
        ram = self.spec.ram_mib << 20
        module = self.ttm_module()
        pdir = self.root.sys / "module" / (module or "ttm") / "parameters"
        if module is None or ttm_params(self.version, module) is None or not pdir.is_dir():
            return hardware.ttm_limit_bytes(ram)
        defaults = {
            "pages_limit": hardware.ttm_default_pages(ram),
            "dma32_pages_limit": hardware.ttm_dma32_default_pages(ram),
            "page_pool_size": hardware.ttm_default_pages(ram),
        }
        for name, default in defaults.items():
            path = pdir / name
            if path.is_file() and _int(path.read_text().strip()) == 0:
                path.write_text(f"{default}\n", encoding="utf-8")
        try:
            pages = _int((pdir / "pages_limit").read_text().strip())
        except FileNotFoundError:
            pages = None
        # A value the kernel would refuse (kstrtoul() fails and so does the module's load) is not modelled.
        return hardware.ttm_limit_bytes(ram, pages if pages is not None and pages > 0 else 0)

    def _params(
        self, declared: tuple[tuple[str, str, str], ...], module: str, extra: list[tuple[str, str]]
    ) -> dict[str, str]:
        values = {name: default for name, _, default in declared}
        types = {name: kind for name, kind, _ in declared}
        for name, value in self.options_for(module, extra):
            if name not in values:
                self.printk(f"{module}: unknown parameter '{name}' ignored", WARNING)
                continue
            if types[name] == "bool":
                values[name] = "Y" if value.lower() in ("1", "y", "yes", "true", "on", "") else "N"
            else:
                values[name] = value
        return values

    def load_amdkfd(self, extra: list[tuple[str, str]]) -> bool:
        """The pre-4.20 standalone module: returns whether KFD initialised."""
        if self.loaded("amdkfd"):
            return self.values.get("kfd_live") == "1"
        params = self._params(AMDKFD_OLD, "amdkfd", extra)
        self._register_module("amdkfd", tuple(params.items()), refcnt=0)
        ok = self.kfd_init(params)
        if ok:
            self.printk("kfd kfd: Initialized module")
        return ok

    def load_amdgpu(self, extra: list[tuple[str, str]]) -> None:
        ttm = self.ttm_module()
        if ttm is not None and not self._builtin(ttm):
            self.load_ttm(ttm, [])  # a dependency: modprobe loads it first, with its own options
        hsa = self.config.get("CONFIG_HSA_AMD", "n")
        declared = amdgpu_params(self.version, hsa == "y", self.merged)
        params = self._params(declared, "amdgpu", extra)
        if self.version < (6, 12):
            # amdgpu_init()'s DRM_INFO of 5.10 and 6.1; 6.12's amdgpu_drv.c no longer prints it.
            self.printk("[drm] amdgpu kernel modesetting enabled.")
        if self.kernel.amdgpu == "dkms" and self.spec.dkms:
            self.printk(f"[drm] amdgpu version: {self.spec.dkms.version.split('-')[0]}")
        bound = [g for g in self.spec.gpus if g.vendor == 0x1002 and g.outcome != "unbound"]
        refcnt = sum(1 for g in bound if g.boot_vga and g.outcome not in ("firmware", "init-failed"))
        self._register_module("amdgpu", tuple(params.items()), refcnt=refcnt)
        if ttm is not None and self.loaded(ttm):
            held = self.root.sys / "module" / ttm / "holders"
            self._set_holders(ttm, sorted({*(os.listdir(held) if held.is_dir() else ()), "amdgpu"}))
        kfd_ok = False
        if self.merged and hsa == "y":
            kfd_ok = self.kfd_init(params)
        elif not self.merged and self.module_file("amdkfd") is not None:
            # amdgpu_amdkfd_init() symbol_request()s kgd2kfd_init, which loads amdkfd.
            kfd_ok = self.load_amdkfd([])
            holders = self.root.sys / "module/amdkfd/holders"
            holders.mkdir(parents=True, exist_ok=True)
            (holders / "amdgpu").mkdir(exist_ok=True)
        for gpu in sorted(bound, key=lambda g: g.slot):
            self.probe_gpu(gpu, kfd_ok)
        self.values["amdgpu_loaded"] = "1"

    def kfd_init(self, params: dict[str, str]) -> bool:
        policy = _int(params.get("sched_policy", "0"))
        queues = _int(params.get("max_num_of_queues_per_device", str(MAX_QUEUES)))
        if policy not in SCHED_POLICIES:
            self.printk(f"{self.pr}sched_policy has invalid value", ERROR)
            return False
        if queues is None or not 1 <= queues <= MAX_QUEUES:
            self.printk(
                f"{self.pr}max_num_of_queues_per_device must be between 1 to KFD_MAX_NUM_OF_QUEUES_PER_DEVICE",
                ERROR,
            )
            return False
        self.write("sys/devices/virtual/kfd/kfd/dev", f"{KFD_MAJOR}:0\n")
        self.write("sys/devices/virtual/kfd/kfd/uevent", f"MAJOR={KFD_MAJOR}\nMINOR=0\nDEVNAME=kfd\n")
        self.link("sys/class/kfd/kfd", "../../devices/virtual/kfd/kfd")
        if self.merged:
            if any(name == "ignore_crat" for name, _kind, _default in amdgpu_params(self.version, True, True)):
                # kfd_crat.c prints it where the module still has ignore_crat (6.1); 6.12's does not.
                self.printk(f"{self.pr}CRAT table not found")
            self.printk(f"{self.pr}Virtual CRAT table created for CPU")
            self.printk(f"{self.pr}Topology: Add CPU node")
        # The standalone amdkfd.ko's topology lines depend on the firmware's ACPI CRAT and are not
        # attested for a machine without one: it prints none rather than invented ones.
        topo = "sys/devices/virtual/kfd/kfd/topology"
        self.write(
            f"{topo}/system_properties",
            "platform_oem 2314885531408816194\nplatform_id 35542066745154\nplatform_rev 1\n",
        )
        # kfd_crat.c: kfd_fill_mem_info_for_cpu() gives the CPU node one bank of its NUMA node's managed
        # pages, all of MemTotal on a one-node machine, and kfd_parse_subtype_mem() a node with CPU cores
        # HSA_MEM_HEAP_TYPE_SYSTEM (LACT's Phoenix capture: heap_type 0, size_in_bytes its MemTotal).
        ram = (hardware.HEAP_SYSTEM, self.spec.ram_mib << 20)
        self._write_node(0, 0, "", hardware.cpu_properties(self.spec.cpu_cores), ram)
        self.write(f"{topo}/generation_id", "1\n")
        self.values["kfd_live"] = "1"
        self.values["kfd_nodes"] = "1"
        self.add_node("/dev/kfd", "kfd", "kfd", KFD_MAJOR, 0)
        return True

    def _write_node(
        self, index: int, gpu_id: int, name: str, props: list[tuple[str, int]], bank: tuple[int, int]
    ) -> None:
        base = f"sys/devices/virtual/kfd/kfd/topology/nodes/{index}"
        self.write(f"{base}/gpu_id", f"{gpu_id}\n")
        self.write(f"{base}/name", f"{name}\n")
        self.write(f"{base}/properties", "".join(f"{k} {v}\n" for k, v in props))
        # kfd_topology.c mem_show(): heap_type, size_in_bytes, flags, width, mem_clk_max, one "%s %u\n"
        # ("%s %llu\n" for the size) each. width and mem_clk_max (DMI's for a CPU node, amdgpu's VRAM
        # width and memory clock for a GPU node) are one plausible pair for every node, not modelled.
        heap_type, size = bank
        self.write(
            f"{base}/mem_banks/0/properties",
            f"heap_type {heap_type}\nsize_in_bytes {size}\nflags 0\nwidth 64\nmem_clk_max 1600\n",
        )

    def probe_gpu(self, gpu: GpuSpec, kfd_ok: bool) -> None:
        chip = hardware.chip(gpu.device)
        dev = self.gpu_dev(gpu)
        sub_ids = f"0x{gpu.subsystem[0]:04X}:0x{gpu.subsystem[1]:04X}"
        ids = f"0x{gpu.vendor:04X}:0x{gpu.device:04X} {sub_ids} 0x{gpu.revision:02X}"
        how = "IP DISCOVERY" if chip.ip_discovery else chip.asic
        # amdgpu_device.c: DRM_INFO ("[drm] ", no device) in 5.10-6.12; dev_info in 7.2.
        where = dev if self.version >= (7, 2) else "[drm] "
        self.printk(f"{where}initializing kernel modesetting ({how} {ids}).")
        if gpu.outcome == "firmware":
            fw = _firmware_name(self.version, chip.firmware_prefix)
            self.printk(f"amdgpu {gpu.slot}: Direct firmware load for {fw} failed with error -2", WARNING)
            self.printk(
                "[drm:amdgpu_device_ip_early_init [amdgpu]] *ERROR* early_init of IP block <psp> failed -19", ERROR
            )
            self.printk(f"{dev}Fatal error during GPU init", ERROR)
            self._probe_failed(gpu, -19)
            return
        if gpu.outcome == "init-failed":
            self.printk(f"{dev}Fatal error during GPU init", ERROR)
            self._probe_failed(gpu, -22)
            return
        # amdgpu_ttm_init() -> ttm_device_init(): TTM's limits are fixed before GTT is sized from them.
        ttm_limit = self.ttm_global_init()
        card = self._bind(gpu, "amdgpu")
        self._mem_info(gpu, ttm_limit)
        if kfd_ok:
            self._kfd_outcome(gpu, chip, card, ttm_limit)
        self._initialized(gpu, card)

    def _kfd_outcome(self, gpu: GpuSpec, chip: hardware.Chip, card: int, ttm_limit: int) -> None:
        lower = f"{gpu.vendor:x}:{gpu.device:x}"
        outcome = gpu.outcome
        if outcome == "added":
            self.printk(f"{self.kfd_dev}Allocated 3969056 bytes on gart")
            self.printk(f"{self.pr}Virtual CRAT table created for GPU")
            kind = "APU" if chip.apu and self.version < (6, 0) else "dGPU"
            self.printk(f"{self.pr}Topology: Add {kind} node [0x{gpu.device:x}:0x{gpu.vendor:x}]")
            self.printk(f"{self.kfd_dev}added device {lower}")
            index = int(self.values.get("kfd_nodes", "1"))
            domain, bus, devfn = _slot_parts(gpu.slot)
            props = hardware.gpu_properties(
                gpu.device,
                location_id=bus << 8 | devfn,
                domain=domain,
                render_minor=128 + card,
                unique_id=zlib.crc32(gpu.slot.encode()) * 2654435761 % 2**64,
                # kfd_topology.c prints "APU node" exactly when the node has CPU cores and SIMDs.
                cpu_cores=self.spec.cpu_cores if kind == "APU" else 0,
            )
            gpu_id = zlib.crc32(gpu.slot.encode()) & 0xFFFF or 1
            ram_bytes = self.spec.ram_mib << 20
            if kind == "APU":
                # A node with CPU cores and SIMDs is the firmware's ACPI CRAT node that kfd_assign_gpu()
                # gave the GPU: its banks are the CRAT's memory entries, which kfd_parse_subtype_mem()
                # makes HSA_MEM_HEAP_TYPE_SYSTEM once the node has CPU cores. Taken as the RAM, parsed
                # after the CPU cores (UNCERTAIN: the entries and their order are the firmware's).
                bank = (hardware.HEAP_SYSTEM, ram_bytes)
            else:
                bank = hardware.gpu_mem_bank(self.version, gpu.device, ram_bytes, ttm_limit)
            self._write_node(index, gpu_id, chip.asic.lower(), props, bank)
            self.values["kfd_nodes"] = str(index + 1)
            generation = int(self.values.get("kfd_generation", "1")) + 1
            self.values["kfd_generation"] = str(generation)
            self.write("sys/devices/virtual/kfd/kfd/topology/generation_id", f"{generation}\n")
        elif outcome == "atomics":
            detail = f" {chip.mec_fw}<0" if self.version >= (5, 13) else ""
            self.printk(f"{self.kfd_dev}skipped device {lower}, PCI rejects atomics{detail}")
        elif outcome == "not-supported":
            self._not_supported(chip)
        elif outcome == "asic-not-in-kfd":
            # amdgpu_amdkfd_device_probe()'s default case: the ASIC type is not in amdgpu's switch;
            # Ubuntu's 4.15.0-10 and 4.15.0-36 print it for a POLARIS10 (tests/data/kernel-lines-4.15.txt).
            self.printk(f"{self.gpu_dev(gpu)}kfd not supported on this ASIC")
        elif outcome == "missing-did":
            self.printk(f"{self.kfd_dev}DID {gpu.device:04x} is missing in supported_devices", WARNING)
            self.printk(f"{self.kfd_dev}kgd2kfd_probe failed", ERROR)
        elif outcome == "iommu":
            self.printk(f"{self.kfd_dev}error getting iommu info. is the iommu enabled?", ERROR)
            self.printk(f"{self.kfd_dev}Error initializing iommuv2", ERROR)
            self.printk(f"{self.kfd_dev}device {lower} NOT added due to errors", ERROR)

    def _not_supported(self, chip: hardware.Chip) -> None:
        if chip.ip_discovery and self.version >= (5, 17):
            gc = chip.gc_ip
            if self.version >= (6, 12):
                # IP_VERSION_FULL: major<<24 (amdgpu.h of 6.12; 6.1 has major<<16).
                gc = (gc >> 16) << 24 | ((gc >> 8) & 0xFF) << 16 | (gc & 0xFF) << 8
            self.printk(f"{self.kfd_dev}GC IP {gc:06x}  not supported in kfd")
        else:
            self.printk(f"{self.kfd_dev}{chip.asic}  not supported in kfd")

    def _probe_failed(self, gpu: GpuSpec, err: int) -> None:
        # drivers/base/dd.c: 6.1 pr_warn("%s: probe of %s failed with error %d"); 6.12 dev_err on
        # the device, "probe with driver %s failed with error %d".
        if self.version >= (6, 12):
            self.printk(f"amdgpu {gpu.slot}: probe with driver amdgpu failed with error {err}", ERROR)
        else:
            self.printk(f"amdgpu: probe of {gpu.slot} failed with error {err}", WARNING)

    def _bind(self, gpu: GpuSpec, driver: str) -> int:
        card = int(self.values.get("drm_cards", "0"))
        self.values["drm_cards"] = str(card + 1)
        devpath = f"sys/devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
        self.link(f"{devpath}/driver", f"../../../bus/pci/drivers/{driver}")
        (self.root.sys / "bus/pci/drivers" / driver).mkdir(parents=True, exist_ok=True)
        for name, minor in ((f"card{card}", card), (f"renderD{128 + card}", 128 + card)):
            self.write(f"{devpath}/drm/{name}/dev", f"{DRM_MAJOR}:{minor}\n")
            self.write(f"{devpath}/drm/{name}/uevent", f"MAJOR={DRM_MAJOR}\nMINOR={minor}\nDEVNAME=dri/{name}\n")
            self.link(f"sys/class/drm/{name}", f"../../devices/pci{gpu.slot[:4]}:00/{gpu.slot}/drm/{name}")
            self.add_node(f"/dev/dri/{name}", "drm", name, DRM_MAJOR, minor, f"0x{gpu.vendor:04x}")
        return card

    def _pci_links(self) -> None:
        """The PCI core's link attributes of each AMD GPU, in this kernel's format (pci-sysfs.c)."""
        for gpu in self.spec.gpus:
            if gpu.vendor != 0x1002:
                continue
            devpath = f"sys/devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
            top = hardware.chip(gpu.device).pcie
            speed, width = gpu.link or top
            for prefix, (s, w) in (("max_link", top), ("current_link", (speed, width))):
                self.write(f"{devpath}/{prefix}_speed", hardware.speed_text(s, self.version) + "\n")
                self.write(f"{devpath}/{prefix}_width", f"{w}\n")

    def _mem_info(self, gpu: GpuSpec, ttm_limit: int) -> None:
        """amdgpu's memory totals (amdgpu_vram_mgr.c, amdgpu_gtt_mgr.c: "%llu\\n" bytes)."""
        if self.version < hardware.MEM_INFO_SINCE:
            return
        chip = hardware.chip(gpu.device)
        vram = chip.vram_mib << 20
        gtt = hardware.gtt_bytes(self.version, self.spec.ram_mib << 20, vram, ttm_limit)
        devpath = f"sys/devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
        self.write(f"{devpath}/mem_info_vram_total", f"{vram}\n")
        self.write(f"{devpath}/mem_info_gtt_total", f"{gtt}\n")

    def _initialized(self, gpu: GpuSpec, card: int) -> None:
        # drm_dev_register() comes after amdgpu's device init, so KFD's lines for the device are
        # printed before this one (real logs of 4.15 and 6.x alike).
        self.printk(f"[drm] Initialized amdgpu {_kms(self.version)} 20150101 for {gpu.slot} on minor {card}")

    def bind_foreign(self, gpu: GpuSpec) -> None:
        if gpu.driver:
            self._bind(gpu, gpu.driver)

    # --- device nodes and udev ---------------------------------------------------------

    def _gid(self, group: str) -> int | None:
        try:
            text = (self.root.etc / "group").read_text()
        except FileNotFoundError:
            return None
        for line in text.splitlines():
            fields = line.split(":")
            if len(fields) == 4 and fields[0] == group and fields[2].isdigit():
                return int(fields[2])
        return None

    def _uid(self, user: str) -> int | None:
        try:
            text = (self.root.etc / "passwd").read_text()
        except FileNotFoundError:
            return None
        for line in text.splitlines():
            fields = line.split(":")
            if len(fields) == 7 and fields[0] == user and fields[2].isdigit():
                return int(fields[2])
        return None

    def add_node(self, path: str, subsystem: str, kernel: str, major: int, minor: int, vendor: str = "") -> None:
        if self.values.get("fault:udev") == "no-nodes":
            # A /dev that is not devtmpfs (a container, a broken initramfs) and no udevd
            # creating nodes: the device is registered in sysfs, its node never appears.
            return
        self.devices[path] = self._apply_udev(subsystem, kernel, major, minor, vendor)
        self.values[f"subsystem:{path}"] = f"{subsystem} {kernel} {vendor}".rstrip()
        self.uevents.append(f"add {subsystem} {kernel}")

    def _apply_udev(self, subsystem: str, kernel: str, major: int, minor: int, vendor: str = "") -> NodeStat:
        policy = policy_for(self.root, subsystem, kernel, attrs={"vendor": vendor} if vendor else None)
        # udevd ignores an unknown group or user and keeps root (kfd-facts.md §3).
        gid = self._gid(policy.group)
        uid = self._uid(policy.owner)
        if gid is None and policy.group != "root":
            rule = "/usr/lib/udev/rules.d/50-udev-default.rules:4"
            self.log_userspace("systemd-udevd", f"{rule} Unknown group '{policy.group}', ignoring")
        acl: tuple[AclEntry, ...] = ()
        if policy.uaccess:
            sessions = [u for u in self.spec.users if u.session]
            entries = [AclEntry("user", u.uid, 6) for u in sessions]
            if entries:
                acl = (*entries, AclEntry("group_obj", None, (policy.mode >> 3) & 7), AclEntry("mask", None, 6))
        mode = policy.mode
        if acl:
            mode = (mode & ~0o070) | 0o060
        return NodeStat("char", major, minor, uid or 0, gid or 0, mode, acl)

    def udev_trigger_add(self) -> None:
        """``udevadm trigger --action=add``: re-apply the rules to every node."""
        for path, node in list(self.devices.items()):
            subsystem, kernel, vendor = ([*self.values.get(f"subsystem:{path}", "").split(" "), "", ""])[:3]
            if subsystem:
                self.devices[path] = self._apply_udev(subsystem, kernel, node.major, node.minor, vendor)
                self.uevents.append(f"add {subsystem} {kernel}")
        self.save()

    def udev_trigger_change(self) -> None:
        """``udevadm trigger`` without an action: "change" events, which the default rules ignore for permissions."""
        for path in self.devices:
            subsystem, kernel = ([*self.values.get(f"subsystem:{path}", "").split(" "), ""])[:2]
            if subsystem:
                self.uevents.append(f"change {subsystem} {kernel}")
        self.save()

    # --- booting ------------------------------------------------------------------------------

    def boot(self, cmdline: str, *, first: bool = False) -> None:
        """What the kernel, systemd-modules-load and udev's coldplug do at boot."""
        self.values["clock_us"] = "0"
        self.printk(f"Linux version {self.kernel.release} (buildd@simulated) #1 SMP PREEMPT_DYNAMIC", 5)
        self.printk(f"Command line: {cmdline}")
        self.advance(3_400_000)
        self.builtin_ttm(cmdline)
        self._pci_links()
        for gpu in self.spec.gpus:
            if gpu.vendor != 0x1002:
                self.bind_foreign(gpu)
        self.modules_load()
        autoload = self.spec.amdgpu_loaded
        if autoload is None:
            autoload = any(g.vendor == 0x1002 and g.outcome != "unbound" for g in self.spec.gpus)
        # Coldplug loads amdgpu through its PCI modalias, which a blacklist line
        # (or modprobe.blacklist= on the command line) stops; an explicit modprobe would not.
        if autoload and not self.loaded("amdgpu") and not self._blacklisted("amdgpu", cmdline):
            self.modprobe("amdgpu", [])
        if first:
            for line in self.spec.log:
                self.printk(line)
        self.advance(4_000_000)
        self.save()

    def _blacklisted(self, module: str, cmdline: str) -> bool:
        return module in modprobe_model.read_config(self.root.path, cmdline).blacklist

    def reboot(self) -> None:
        """Power-cycle: runtime state goes, files stay, and the machine boots again from them."""
        import shutil
        import uuid

        sim = state.sim_dir(self.root)
        previous = os.path.join(sim, "previous")
        shutil.rmtree(previous, ignore_errors=True)
        os.makedirs(previous)
        for name in ("kmsg", "journal"):
            source = os.path.join(sim, name)
            if os.path.exists(source):
                os.replace(source, os.path.join(previous, name))
        open(os.path.join(sim, "kmsg"), "w").close()
        for rel in ("sys/module", "sys/class/drm", "sys/devices/virtual/kfd"):
            shutil.rmtree(self.root.path / rel, ignore_errors=True)
            (self.root.path / rel).mkdir(parents=True, exist_ok=True)
        link = self.root.sys / "class/kfd/kfd"
        if link.is_symlink():
            link.unlink()
        for gpu in self.spec.gpus:
            devdir = self.root.sys / f"devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
            shutil.rmtree(devdir / "drm", ignore_errors=True)
            if (devdir / "driver").is_symlink():
                (devdir / "driver").unlink()
            _remove_driver_attributes(devdir)
        self.write("proc/modules", "")
        self.write("proc/sys/kernel/random/boot_id", f"{uuid.uuid4()}\n")
        self._switch_kernel(self.boot_target())
        self.devices = {}
        self.values = {"clock_us": "0", "kmsg_seq": "0", "boots": str(int(self.values.get("boots", "1")) + 1)}
        self.boot((self.root.proc / "cmdline").read_text().strip())

    def boot_target(self) -> str:
        """The kernel the boot loader starts: a one-shot entry (consumed, as GRUB's save_env and
        systemd-boot do), else the default. Decided by the simulator's own boot model
        (simulate/bootloader.py) over the menu it rendered, not by kfdguard's probe."""
        from kfdguard.simulate import bootloader
        from kfdguard.simulate.menu import grub_menu, sdboot_entries

        chosen: str | None = None
        if self.spec.bootloader == "grub":
            env_path = self.root.boot / "grub/grubenv"
            try:
                env = bootloader.parse_env(env_path.read_bytes())
            except OSError:
                env = {}
            chosen, after = bootloader.grub_next(grub_menu(self.spec), env, self.spec.grub_default)
            if after != env:
                env_path.write_bytes(bootloader.render_env(after))
        elif self.spec.bootloader == "systemd-boot":
            efivars = self.root.sys / "firmware/efi/efivars"
            oneshot = efivars / f"LoaderEntryOneShot-{LOADER_GUID}"
            once = bootloader.efi_string(_read_bytes(oneshot))
            oneshot.unlink(missing_ok=True)
            default = bootloader.efi_string(_read_bytes(efivars / f"LoaderEntryDefault-{LOADER_GUID}"))
            conf = _read_bytes(self.root.efi / "loader/loader.conf") or b""
            conf_default = next((line.split(None, 1)[1].strip() for line in conf.decode(errors="replace").splitlines()
                                 if line.startswith("default") and len(line.split(None, 1)) == 2), None)  # fmt: skip
            releases, order = sdboot_entries(self.spec)
            directory = self.root.efi / "loader/entries"
            files = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
            found = [bootloader.sdboot_entry(f, releases[stem]) for stem in order for f in files
                     if bootloader.sdboot_entry(f, "").stem == stem]  # fmt: skip
            version = self.spec.sdboot_version or bootloader.SDBOOT_DEFAULT_VERSION
            entry = bootloader.sdboot_next(found, version, once, default, conf_default)
            if entry is not None:
                renamed = entry.after_boot()
                if renamed is not None:  # boot counting: systemd-boot renames the entry it starts
                    (directory / entry.file).rename(directory / renamed)
                chosen = entry.release
        return chosen or self.kernel.release

    def _switch_kernel(self, release: str) -> None:
        from kfdguard.record import replace

        if release == self.kernel.release:
            return
        kernels = {k.release: k for k in (self.spec.kernel, *self.spec.other_kernels)}
        if release not in kernels:
            return
        old = self.kernel.release
        gpus = tuple(
            replace(
                g,
                outcome=g.outcome_on(release, old),
                outcomes=tuple((r, o) for r, o in (*g.outcomes, (old, g.outcome)) if r != release),
            )
            for g in self.spec.gpus
        )
        others = tuple(k for r, k in kernels.items() if r != release)
        self.spec = replace(self.spec, kernel=kernels[release], other_kernels=others, gpus=gpus)
        self.kernel = self.spec.kernel
        self.version = kernel_version(release)
        self.config = kernel_config(self.kernel)
        self.merged = is_merged(self.kernel)
        from kfdguard.simulate.spec import spec_json

        with open(os.path.join(state.sim_dir(self.root), "spec.json"), "w", encoding="utf-8") as handle:
            handle.write(spec_json(self.spec))
        self.write("proc/sys/kernel/osrelease", release + "\n")
        cmdline = (self.root.proc / "cmdline").read_text().replace(old, release)
        self.write("proc/cmdline", cmdline)

    # --- unloading --------------------------------------------------------------------------

    def unload(self, module: str) -> Outcome:
        module = _normalise(module)
        if not self.loaded(module):
            return Outcome(1, stderr=f"modprobe: FATAL: Module {module} is not in kernel.\n")
        holders = os.listdir(self.root.sys / "module" / module / "holders")
        refcnt = int((self.root.sys / "module" / module / "refcnt").read_text().strip() or "0")
        if holders or refcnt:
            return Outcome(1, stderr=f"modprobe: FATAL: Module {module} is in use.\n")
        import shutil

        shutil.rmtree(self.root.sys / "module" / module)
        lines = [line for line in (self.root.proc / "modules").read_text().splitlines() if line.split()[0] != module]
        self.write("proc/modules", "".join(line + "\n" for line in lines))
        if module in ("amdgpu", "amdkfd") and (module == "amdkfd" or self.merged):
            self._remove_kfd()
        if module == "amdgpu":
            self._unbind_amd()
            self._release_dependency(module)
        self.save()
        return Outcome(0)

    def _release_dependency(self, module: str) -> None:
        """``modprobe -r`` also removes the dependencies the module leaves unused (kmod: "If the modules it
        depends on are also unused, modprobe will try to remove them too"): the TTM module, whose options
        then apply afresh at the next load."""
        for dep in ("ttm", "amdttm"):
            held = self.root.sys / "module" / dep / "holders"
            if not self.loaded(dep) or not (held / module).is_dir():
                continue
            others = sorted(set(os.listdir(held)) - {module})
            self._set_holders(dep, others)
            if not others:
                self.unload(dep)

    def _remove_kfd(self) -> None:
        import shutil

        shutil.rmtree(self.root.sys / "devices/virtual/kfd", ignore_errors=True)
        link = self.root.sys / "class/kfd/kfd"
        if link.is_symlink():
            link.unlink()
        if self.devices.pop("/dev/kfd", None) is not None:
            self.uevents.append("remove kfd kfd")
        for key in ("kfd_live", "kfd_nodes", "kfd_generation"):
            self.values.pop(key, None)

    def _unbind_amd(self) -> None:
        import shutil

        for gpu in self.spec.gpus:
            if gpu.vendor != 0x1002:
                continue
            devdir = self.root.sys / f"devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
            drm = devdir / "drm"
            for name in os.listdir(drm) if drm.is_dir() else []:
                if self.devices.pop(f"/dev/dri/{name}", None) is not None:
                    self.uevents.append(f"remove drm {name}")
                link = self.root.sys / "class/drm" / name
                if link.is_symlink():
                    link.unlink()
            shutil.rmtree(drm, ignore_errors=True)
            if (devdir / "driver").is_symlink():
                (devdir / "driver").unlink()
            _remove_driver_attributes(devdir)
        self.values.pop("amdgpu_loaded", None)
        # DRM minors are handed out again from the lowest free one.
        self.values["drm_cards"] = str(sum(1 for p in self.devices if p.startswith("/dev/dri/card")))


def _remove_driver_attributes(devdir: HostPath) -> None:
    # amdgpu's own attributes of the PCI device go with the driver.
    for name in ("mem_info_vram_total", "mem_info_gtt_total"):
        (devdir / name).unlink(missing_ok=True)


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


# The Boot Loader Interface's vendor GUID (systemd's docs/BOOT_LOADER_INTERFACE.md).
LOADER_GUID = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"


def _read_bytes(path: HostPath) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 16)
    except OSError:
        return None


def _module_name(path: str) -> str:
    """The module a modules.dep path names: kernel/drivers/gpu/drm/ttm/ttm.ko.xz -> ttm."""
    return _normalise(path.rsplit("/", 1)[-1].split(".ko", 1)[0])


def _normalise(module: str) -> str:
    # kmod compares module names with dashes turned into underscores.
    return module.replace("-", "_")


def _slot_parts(slot: str) -> tuple[int, int, int]:
    domain, bus, devfn = slot.split(":")
    dev, fn = devfn.split(".")
    return int(domain, 16), int(bus, 16), int(dev, 16) << 3 | int(fn, 16)


# KMS versions of series whose source the generator cannot read, as their own boots print them:
# 4.15: "[drm] Initialized amdgpu 3.23.0 20150101" on Ubuntu's 4.15.0-10 and 4.15.0-36 (in-tree
# amdgpu; tests/data/kernel-lines-4.15.txt names the reports).
ATTESTED_KMS = {(4, 15): "3.23.0"}


def _kms(version: tuple[int, int]) -> str:
    """amdgpu's KMS version (KMS_DRIVER_* of amdgpu_drv.c): read for the series the knowledge
    generator read (6.1: 3.49.0), attested by real boots for 4.15; 3.57.0 (Ubuntu 24.04's 6.8)
    otherwise, not checked."""
    from kfdguard.knowledge.generated import KERNELS

    kernel = KERNELS.get(f"{version[0]}.{version[1]}")
    if kernel:
        return str(kernel["kms"])
    return ATTESTED_KMS.get(version, "3.57.0")


def _firmware_name(version: tuple[int, int], prefix: str) -> str:
    """A firmware file the simulated kernel's amdgpu.ko really declares for this chip.

    PSP firmware is <psp>_sos.bin on dGPUs but _toc.bin/_ta.bin on APUs (psp_13_0_4 has no
    _sos), and pre-PSP chips have none: take the first declared file of the prefix, _sos first,
    from the nearest kernel series read.
    """
    from kfdguard.knowledge.formats import kernel, series

    read = sorted(
        series(), key=lambda s: abs(int(s.split(".")[0]) * 100 + int(s.split(".")[1]) - version[0] * 100 - version[1])
    )
    declared = [f for f in kernel(read[0])["firmware"] if f.startswith(f"amdgpu/{prefix}_")]
    for suffix in ("_sos.bin", "_toc.bin", "_ta.bin"):
        if f"amdgpu/{prefix}{suffix}" in declared:
            return f"amdgpu/{prefix}{suffix}"
    return declared[0] if declared else f"amdgpu/{prefix}_sos.bin"
