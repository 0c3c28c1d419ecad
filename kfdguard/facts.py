"""What probe found on a machine: plain, immutable records.

Nothing here interprets; assess does. A fact that could not be read is kept
as a ``Problem`` ("unreadable: why") rather than raised, so that a garbled
sysfs file becomes a finding instead of a crash.
"""

from __future__ import annotations

from kfdguard.access import NodeStat
from kfdguard.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True, slots=True)
class Problem:
    path: str  # as shown on the machine, e.g. "/sys/class/kfd/kfd/topology/nodes/1/properties"
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass(frozen=True, slots=True)
class OsFacts:
    id: str  # os-release ID ("debian", "ubuntu", "fedora"...), "" when unknown
    id_like: tuple[str, ...]
    version_id: str
    pretty_name: str

    def is_like(self, name: str) -> bool:
        return self.id == name or name in self.id_like


@dataclass(frozen=True, slots=True)
class KernelFacts:
    release: str  # uname -r
    version: tuple[int, int, int] | None  # parsed from release; None if it does not parse
    config: Mapping[str, str]  # CONFIG_* -> "y", "m", "n" (explicitly unset) or a value
    config_source: str | None  # where the config was read, None if nowhere
    cmdline: tuple[str, ...]
    boot_id: str = ""  # /proc/sys/kernel/random/boot_id, without dashes

    def symbol(self, name: str) -> str | None:
        """Value of a Kconfig symbol: "y"/"m"/"n"/value, or None if unknown."""
        return self.config.get(name)


@dataclass(frozen=True, slots=True)
class ModuleFacts:
    name: str
    builtin: bool  # listed in modules.builtin
    file: str | None  # module file for the running kernel, as shown on the machine
    from_dkms: bool  # the file lives under updates/ or extra/ (out-of-tree build)
    loaded: bool  # /sys/module/<name> exists and is live (or built in)
    params: Mapping[str, str]  # live values from /sys/module/<name>/parameters
    declared: tuple[str, ...] | None  # parameter names the module declares, None if unknown
    holders: tuple[str, ...]
    refcnt: int | None
    version: str | None  # /sys/module/<name>/version or modinfo "version"
    sysfs: str = ""  # /sys/module/<name> as shown on the machine

    def param_path(self, param: str) -> str:
        return f"{self.sysfs}/parameters/{param}"

    @property
    def present(self) -> bool:
        return self.builtin or self.file is not None or self.loaded


@dataclass(frozen=True, slots=True)
class PcieLink:
    """One PCIe link state, as the PCI core shows it (current_link_* or max_link_*)."""

    speed: int | None  # MT/s (8000 = "8.0 GT/s"); None when the kernel prints "Unknown"
    width: int | None  # lanes; None when the file is absent or unreadable


@dataclass(frozen=True, slots=True)
class GpuFacts:
    slot: str  # PCI address "0000:03:00.0"
    vendor: int
    device: int
    subsystem_vendor: int | None
    subsystem_device: int | None
    revision: int | None
    pci_class: int  # 0x030000 VGA, 0x038000 display, 0x030200 3D
    driver: str | None  # bound kernel driver
    boot_vga: bool
    card: str | None  # "card0"
    render_minor: int | None  # renderD<minor>
    # What peers (ollama, the ROCm k8s labeller, node_exporter) show beside the ids. None: the
    # file is absent (no amdgpu bound, an old kernel, not PCIe) or unreadable (then a Problem).
    vram_total: int | None = None  # bytes, amdgpu's mem_info_vram_total (the carve-out on an APU)
    gtt_total: int | None = None  # bytes, mem_info_gtt_total
    link: PcieLink | None = None  # current_link_speed / current_link_width
    link_max: PcieLink | None = None  # max_link_speed / max_link_width: what the device can do

    @property
    def is_amd(self) -> bool:
        return self.vendor == 0x1002

    @property
    def ids(self) -> str:
        return f"{self.vendor:04x}:{self.device:04x}"

    @property
    def render_node(self) -> str | None:
        return None if self.render_minor is None else f"renderD{self.render_minor}"


@dataclass(frozen=True, slots=True)
class DeviceNode:
    path: str  # as shown on the machine
    stat: NodeStat | None  # None: does not exist
    error: str | None = None  # stat failed for another reason than ENOENT


MAX_COMPUTE_UNITS = 4096


@dataclass(frozen=True, slots=True)
class TopologyNode:
    index: int
    gpu_id: int | None  # None: no readable gpu_id file (copies of the topology often leave it out)
    name: str
    properties: Mapping[str, int]
    # Bytes in the node's frame-buffer memory banks (mem_banks/M: heap_type 1 public, 2 private);
    # None when no bank says. A dGPU's VRAM (k8s-device-plugin's MI25 capture: 17163091968). Not an
    # APU's carve-out: recent kernels give there the memory KFD may allocate (LACT's Phoenix capture:
    # 31433977856, its mem_info_gtt_total, while its mem_info_vram_total is 4294967296).
    local_memory: int | None = None
    # The gfx target of the node's device_id in the knowledge table, for a GPU node whose kernel
    # writes no gfx_target_version (older kernels: k8s-device-plugin's MI25 capture).
    gfx_by_id: str | None = None

    def prop(self, key: str) -> int:
        return self.properties.get(key, 0)

    @property
    def is_gpu(self) -> bool:
        # KFD writes gpu_id 0 for a CPU node. Without the file a node with SIMDs is a GPU's: KFD's
        # CPU nodes have simd_count 0 and its GPU nodes (an old CRAT APU node too) more.
        if self.gpu_id is not None:
            return self.gpu_id != 0
        return self.prop("simd_count") > 0

    @property
    def compute_units(self) -> int | None:
        """CUs as ROCr reports them (simd_count / simd_per_cu); None when the node does not say."""
        simds, per_cu = self.prop("simd_count"), self.prop("simd_per_cu")
        if simds <= 0 or per_cu <= 0 or simds % per_cu:
            return None
        # The largest GPU has a few hundred (MI300X: 304); more is not a reading to pass on.
        return simds // per_cu if simds // per_cu <= MAX_COMPUTE_UNITS else None

    @property
    def apu_node(self) -> bool:
        """KFD built one node with CPU cores and SIMDs: it printed "Topology: Add APU node"."""
        return self.is_gpu and self.prop("cpu_cores_count") > 0 and self.prop("simd_count") > 0

    @property
    def gfx_target_version(self) -> int:
        return self.prop("gfx_target_version")

    @property
    def gfx(self) -> str | None:
        """The node's gfx_target_version as a target name, else the one its device_id implies."""
        return gfx_name(self.gfx_target_version) or self.gfx_by_id

    @property
    def slot(self) -> str | None:
        """PCI address from location_id (bus << 8 | devfn) and domain."""
        if not self.is_gpu:
            return None
        loc = self.prop("location_id")
        bus, devfn = loc >> 8, loc & 0xFF
        return f"{self.prop('domain'):04x}:{bus:02x}:{devfn >> 3:02x}.{devfn & 7:x}"


def gfx_name(version: int) -> str | None:
    """Decode KFD's decimal gfx_target_version (MMmmss) to an LLVM target name.

    The stepping is written in hex in the name: 90010 -> gfx90a, 110000 -> gfx1100.
    """
    if version <= 0:
        return None
    major, minor, step = version // 10000, version // 100 % 100, version % 100
    if step > 15 or minor > 9:
        return None
    return f"gfx{major}{minor}{step:x}"


@dataclass(frozen=True, slots=True)
class KfdFacts:
    node: DeviceNode  # /dev/kfd
    sysfs: bool  # /sys/class/kfd/kfd exists
    topology: tuple[TopologyNode, ...]
    generation_id: int | None
    version: tuple[int, int] | None  # AMDKFD_IOC_GET_VERSION answer
    version_error: str | None  # why the ioctl could not be done
    version_errno: int | None = None  # its errno: EPERM is a device cgroup, not KFD

    @property
    def gpu_nodes(self) -> tuple[TopologyNode, ...]:
        return tuple(n for n in self.topology if n.is_gpu)


@dataclass(frozen=True, slots=True)
class ModprobeDirective:
    file: str  # as shown on the machine
    line: int
    kind: str  # options, softdep, blacklist, install, remove, alias
    module: str  # normalised: dashes become underscores, as kmod compares names
    args: tuple[str, ...]
    text: str  # the directive as written (continuations joined)


@dataclass(frozen=True, slots=True)
class ModulesLoadEntry:
    file: str
    line: int
    module: str


@dataclass(frozen=True, slots=True)
class ModprobeFacts:
    directives: tuple[ModprobeDirective, ...]  # effective files only, in kmod's order
    files: tuple[str, ...]  # effective configuration files, in kmod's order
    shadowed: tuple[str, ...]  # files overridden by a same-named file earlier in the search path
    modules_load: tuple[ModulesLoadEntry, ...]  # /etc/modules and modules-load.d
    cmdline_options: Mapping[str, Mapping[str, str]]  # module -> param -> value from the kernel command line
    cmdline_blacklist: tuple[str, ...]

    def for_module(self, module: str, kind: str | None = None) -> tuple[ModprobeDirective, ...]:
        return tuple(d for d in self.directives if d.module == module and (kind is None or d.kind == kind))


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    gid: int
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class User:
    name: str
    uid: int
    gid: int
    home: str
    shell: str

    @property
    def can_log_in(self) -> bool:
        return not self.shell.endswith(("nologin", "false"))


@dataclass(frozen=True, slots=True)
class Accounts:
    groups: tuple[Group, ...]
    users: tuple[User, ...]

    def group(self, name: str) -> Group | None:
        return next((g for g in self.groups if g.name == name), None)

    def group_by_gid(self, gid: int) -> Group | None:
        return next((g for g in self.groups if g.gid == gid), None)

    def user(self, name: str) -> User | None:
        return next((u for u in self.users if u.name == name), None)

    def user_by_uid(self, uid: int) -> User | None:
        return next((u for u in self.users if u.uid == uid), None)

    def gids_of(self, user: User) -> frozenset[int]:
        """Primary plus supplementary groups, as a fresh login would get them."""
        extra = {g.gid for g in self.groups if user.name in g.members}
        return frozenset({user.gid, *extra})

    def group_name(self, gid: int) -> str:
        group = self.group_by_gid(gid)
        return group.name if group else str(gid)

    def user_name(self, uid: int) -> str:
        user = self.user_by_uid(uid)
        return user.name if user else str(uid)


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A kernel-log line that a rule of knowledge/logrules.py recognised."""

    rule: str
    klass: str  # success, neutral, failure, runtime
    code: str | None
    device: str | None  # "kfd" or a PCI slot from the message prefix
    driver: str | None
    values: tuple[tuple[str, str], ...]  # the rule's named groups that matched
    text: str  # the original line, stripped
    line: int  # 1-based line number in its source
    boot: int = 0  # 0 this boot, -1 the one before...
    source: str = ""

    def value(self, name: str) -> str | None:
        for key, value in self.values:  # a loop, not next() over a generator: asked for every event of a long log
            if key == name:
                return value
        return None

    @property
    def ids(self) -> tuple[int, int] | None:
        """(vendor, device) named by the message, if any."""
        vendor, device = self.value("vendor"), self.value("device")
        try:
            return (int(vendor or "1002", 16), int(device, 16)) if device else None
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class KernelLog:
    read: bool  # False: not looked at (a healthy boot pass skips it)
    sources: tuple[str, ...] = ()  # what was read: "journal", "kmsg", a file
    lines: int = 0
    events: tuple[LogEvent, ...] = ()
    unavailable: tuple[str, ...] = ()  # sources that could not be read, and why
    # What the read's budget left out of the source read ("3 journal entries dropped by the read budget ..."):
    # a log that was cut proves no absence.
    limited: tuple[str, ...] = ()

    def by_rule(self, *rules: str, boot: int | None = 0) -> list[LogEvent]:
        return [e for e in self.events if e.rule in rules and (boot is None or e.boot == boot)]

    def by_code(self, code: str, boot: int | None = 0) -> list[LogEvent]:
        return [e for e in self.events if e.code == code and (boot is None or e.boot == boot)]


@dataclass(frozen=True, slots=True)
class DkmsModule:
    """One DKMS module version under /var/lib/dkms."""

    module: str
    version: str
    path: str  # /var/lib/dkms/<module>/<version> as shown on the machine
    built_for: tuple[str, ...]  # kernel releases with a built module
    failed_for: tuple[str, ...]  # kernel releases named by a failed build's make.log
    make_log: str | None  # path of the last build log, as shown on the machine


@dataclass(frozen=True, slots=True)
class InstalledKernel:
    release: str
    version: tuple[int, int, int] | None
    image: str  # /boot/vmlinuz-<release>, as shown
    initrd: str | None  # its initramfs, None when missing
    modules: bool  # /lib/modules/<release> exists
    hsa_amd: str | None  # CONFIG_HSA_AMD in its config: "y", "m", "n", None when unknown
    amdgpu: bool  # an amdgpu module is installed for it (in-tree or DKMS)
    dkms_amdgpu: bool  # that amdgpu was built by DKMS (updates/ or extra/)


@dataclass(frozen=True, slots=True)
class BootEntry:
    # What grub-reboot takes ("submenu>entry" inside GRUB submenus); systemd-boot: bootctl's id, without
    # counters (stable across boots; what bootctl is given for a counted entry: bootspec.loader_target).
    id: str
    title: str
    release: str | None  # the kernel it boots
    recovery: bool = False
    # systemd-boot (Boot Loader Specification) only; GRUB entries keep the defaults.
    kind: str = ""  # "type1" (loader/entries/*.conf) or "type2" (a unified kernel image in EFI/Linux)
    path: str = ""  # the entry's file, as shown: its name carries the counters, the id does not
    tries_left: int | None = None  # boot counting ("+LEFT-DONE" in the name); None when not counted
    tries_done: int | None = None
    version: str | None = None  # the entry's own version field (Type #2: from its .osrel)

    @property
    def bad(self) -> bool:
        """Boot counting ran out: systemd-boot sorts it last and does not pick it by itself."""
        return self.tries_left == 0


@dataclass(frozen=True, slots=True)
class BootloaderFacts:
    kind: str  # grub, systemd-boot, none
    config: str | None = None  # grub.cfg or the loader entries directory, as shown
    entries: tuple[BootEntry, ...] = ()
    default: str | None = None  # GRUB: grub.cfg's 'set default' ("0", "${saved_entry}"); systemd-boot: loader.conf
    saved_entry: str | None = None
    next_entry: str | None = None  # grubenv next_entry, or systemd-boot's LoaderEntryOneShot
    env: str | None = None  # grubenv, as shown
    # systemd-boot: the LoaderEntryDefault EFI variable (bootctl set-default), loader.conf's
    # timeout, and where $BOOT is when it is an XBOOTLDR partition apart from the ESP.
    efi_default: str | None = None
    timeout: str | None = None
    xbootldr: str | None = None
    last_booted: str | None = None  # LoaderEntryLastBooted, what loader.conf's "default @saved" picks
    loader_info: str | None = None  # LoaderInfo ("systemd-boot 252.39-1~deb12u2"): how it names counted entries

    def entry_for(self, release: str) -> BootEntry | None:
        """The entry that boots ``release``: the one named after it (stable across kernel
        updates, unlike the distribution's "newest kernel" entry), else any."""
        entries = [e for e in self.entries if e.release == release and not e.recovery]
        # An entry out of boot tries is the last choice (systemd-boot skips it by itself).
        entries.sort(key=lambda e: e.bad)
        return next((e for e in entries if release in e.id and not e.bad), entries[0] if entries else None)

    @property
    def default_release(self) -> str | None:
        """The kernel the next normal boot starts, when it can be told."""
        if self.kind == "grub":
            wanted = self.saved_entry if self.default and "saved_entry" in self.default else self.default
            if wanted is None or wanted.isdigit():
                index = int(wanted or 0)
                tops = [e for e in self.entries if ">" not in e.id]
                return tops[index].release if index < len(tops) else None
            match = next((e for e in self.entries if wanted in (e.id, e.title)), None)
            return match.release if match else None
        if self.kind == "systemd-boot":
            chosen = self.default_entry
            return chosen.release if chosen else None
        return None

    @property
    def default_entry(self) -> BootEntry | None:
        """systemd-boot's default: the first entry (in menu order, which ``entries`` keeps)
        matching LoaderEntryDefault, else loader.conf's ``default`` glob, else the first one."""

        configured = self.last_booted if self.default == "@saved" else self.default
        for pattern in (self.efi_default, configured):
            chosen = self._match(pattern)
            if chosen is not None:
                return chosen
        return self.entries[0] if self.entries else None

    @property
    def oneshot_entry(self) -> BootEntry | None:
        """The entry systemd-boot starts once for LoaderEntryOneShot, None if it names none."""
        return self._match(self.next_entry) if self.kind == "systemd-boot" else None

    def _match(self, pattern: str | None) -> BootEntry | None:
        # systemd-boot matches the variables and loader.conf alike: fnmatch, case-folded, in menu order,
        # against its own names of the entries: the file names, counters included, before systemd 258/259.
        from kfdguard.probe.bootspec import loader_keeps_counters, loader_name, select

        keeps = loader_keeps_counters(self.loader_info)
        names = [loader_name(e.id, e.path.rpartition("/")[2], keeps) for e in self.entries]
        chosen = select(names, pattern)
        return next((e for e, n in zip(self.entries, names, strict=True) if n == chosen), None) if chosen else None


@dataclass(frozen=True, slots=True)
class BootHealth:
    """Live GPU health over one boot (kfdguard/health), summed over its AMD GPUs.

    The resident service writes it to /var/lib/kfdguard/health/ as events come; the root
    enforce pass folds it into the history (fallback/policy.fold_health). Counts only grow
    within a boot: a service restarted mid-boot starts again from zero, and folding keeps
    the larger count of each.
    """

    boot_id: str
    release: str  # the kernel that ran that boot
    resets: int = 0  # GPU resets amdgpu began (or reported done without a begin kfdguard saw)
    reset_failures: int = 0
    ring_timeouts: int = 0
    hangs: int = 0  # HWS/MES stopped answering
    last_at: str = ""  # ISO time (UTC) of the last event counted
    last_event: str = ""  # its kind (kfdguard.health.model: reset-begin, ring-timeout, ...)
    last_line: str = ""  # what the kernel said then (bounded)
    last_process: str = ""  # the task the kernel named, where it named one

    @property
    def troubled(self) -> bool:
        return bool(self.resets or self.reset_failures or self.ring_timeouts or self.hangs)

    def unstable(self, resets: int) -> bool:
        """Reset repeatedly (``resets`` or more in the boot), or a reset that failed (the GPU stayed down)."""
        return self.resets >= resets or self.reset_failures > 0


@dataclass(frozen=True, slots=True)
class HealthFiles:
    """What the resident service left in /var/lib/kfdguard/health/: the recent boots' health."""

    boots: tuple[BootHealth, ...] = ()
    problems: tuple[str, ...] = ()  # files that could not be used, and why


# Boots with compute whose health each kernel's record keeps: old trouble ages out. The policy trims
# to it when it records a check (fallback/policy.py), probe when it reads a history (probe/boot.py).
HEALTH_BOOTS = 8


@dataclass(frozen=True, slots=True)
class KernelRecord:
    """What kfdguard saw on one kernel release, over boots."""

    ok: int = 0  # boots where compute was ready (at the last check of that boot)
    failed: int = 0  # boots where it was not
    last: str = ""  # "ok" or "failed"
    last_seen: str = ""  # ISO time of the last check
    gpus: tuple[str, ...] = ()
    boot_id: str = ""  # the boot the last check belonged to: later checks of it update, not add
    # The most recent boots on which compute came up (at most HEALTH_BOOTS, oldest first),
    # each with the GPU trouble the resident service saw during it: "came up and stayed healthy".
    boots: tuple[BootHealth, ...] = ()


@dataclass(frozen=True, slots=True)
class Attempt:
    """One fallback kfdguard arranged, recorded before the boot loader was touched."""

    source: str  # kernel it fell back from
    target: str  # kernel it arranged to boot
    entry: str
    mode: str  # oneshot or pin
    boot_id: str  # the boot during which it was arranged
    at: str
    installed: str  # fingerprint of the installed kernel set at that time
    result: str = "pending"  # pending, ok, failed, not-booted


@dataclass(frozen=True, slots=True)
class History:
    kernels: Mapping[str, KernelRecord] = field(default_factory=dict)
    attempts: tuple[Attempt, ...] = ()
    pinned_from: str | None = None  # the default entry before kfdguard pinned one
    problem: str | None = None  # why the file could not be used


# --- CDI specs (read by kfdguard.probe.cdi, checked by kfdguard.fleet.cdi) ---


@dataclass(frozen=True, slots=True)
class CdiNode:
    device: str  # the CDI device name ("0", "all"); "" for the spec's top-level containerEdits
    path: str  # in the container
    host_path: str  # on the host (hostPath, else path)
    major: int | None
    minor: int | None
    mode: int | None  # permission bits of fileMode
    gid: int | None


@dataclass(frozen=True, slots=True)
class CdiSpec:
    path: str  # as shown on the machine
    kind: str
    version: str
    nodes: tuple[CdiNode, ...]
    problem: str | None = None  # why it could not be used


# --- the software inventory (taken by kfdguard.userspace.probe) ---


@dataclass(frozen=True, slots=True)
class Component:
    """One library of a stack and the gfx targets it carries code for."""

    name: str  # "librocblas.so.0.1", "rocblas/library", "libggml-hip.so"
    path: str  # as shown on the machine
    targets: tuple[str, ...]  # target ids ("gfx90a:xnack-"), sorted
    source: str  # "bundles" (offload bundles), "name" (Tensile file names) or "kpack" (TheRock's kernel packs)
    files: int = 1
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Stack:
    """An installed compute stack: a ROCm tree, distribution ROCm, or the ROCm bundled with a program."""

    kind: str  # rocm, distribution, ollama, pytorch, llama.cpp, path
    name: str  # "ROCm 6.2.4", "Debian rocBLAS 5.5.1+dfsg-7", "PyTorch 2.4.0+rocm6.1"
    path: str
    version: str | None
    components: tuple[Component, ...]
    lib_dir: str | None = None  # where its HIP runtime lives (for mixed-version checks)
    runtime: str | None = None  # the HIP runtime library found ("libamdhip64.so.6.2.60204")
    truncated: str | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted({t for c in self.components for t in c.targets}))

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class EnvSetting:
    name: str
    value: str
    origin: str  # "caller environment", "ollama.service (/etc/systemd/system/ollama.service)"
    unit: str | None = None  # the unit whose processes get it


@dataclass(frozen=True, slots=True)
class Application:
    """An installed application that picks its own GPU backend (kfdguard/userspace/applications.py)."""

    kind: str  # "ollama", "llama.cpp"
    name: str  # "ollama 0.30.1", "llama.cpp (/usr/local/lib)"
    version: str | None
    path: str  # its library directory (or its binary), as shown
    backends: tuple[str, ...]  # ollama: its backend directories ("rocm", "vulkan"); llama.cpp: "hip", "vulkan"
    files: tuple[str, ...]  # what was read, as shown: each verdict cites them


@dataclass(frozen=True, slots=True)
class VulkanIcd:
    """A Vulkan driver manifest (an ICD JSON file in the loader's search path) and the library it names."""

    manifest: str  # as shown on the machine
    library_path: str  # as the manifest writes it ("libvulkan_radeon.so", an absolute or relative path)
    library: str | None  # the library found, as shown; None when it is not there
    driver: str  # "RADV", "AMDVLK", "lavapipe", or the library's file name for another driver
    api_version: str | None
    error: str | None = None  # the manifest could not be read or is not one


@dataclass(frozen=True, slots=True)
class VulkanFacts:
    """What a Vulkan program finds on the machine: the loader library and the installed drivers."""

    read: bool = False  # False: not looked at (the boot pass, a record written before kfdguard read it)
    loader: str | None = None  # libvulkan.so.1, as shown; None when no library directory has it
    icds: tuple[VulkanIcd, ...] = ()


@dataclass(frozen=True, slots=True)
class SoftwareFacts:
    stacks: tuple[Stack, ...] = ()
    env: tuple[EnvSetting, ...] = ()
    ld_paths: tuple[tuple[str, str], ...] = ()  # (directory, the file that lists it)
    tools: tuple[str, ...] = ()  # rocminfo, amd-smi, rocm-smi found
    problems: tuple[Problem, ...] = ()
    scanned: bool = True  # False: the inventory was not taken (the boot pass)
    vulkan: VulkanFacts = VulkanFacts()
    applications: tuple[Application, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """What sizes an APU's compute memory (issue 38): the RAM and TTM's limits as the kernel applied them."""

    ram_bytes: int | None = None  # /proc/meminfo MemTotal: the kernel's totalram, what TTM halves by default
    page_size: int = 4096  # the unit of ttm.pages_limit and page_pool_size
    # Live /sys/module/<ttm|amdttm>/parameters values (pages_limit, page_pool_size) by module; a
    # module that is not loaded is absent.
    ttm: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    ttm_builtin: bool = False  # ttm.ko in modules.builtin: modprobe.d never reaches it, the command line does


@dataclass(frozen=True, slots=True)
class Facts:
    """One probe pass over a machine."""

    root: str  # the Root this came from ("/" on a real machine)
    simulated: bool
    os: OsFacts
    kernel: KernelFacts
    amdgpu: ModuleFacts
    amdkfd: ModuleFacts
    gpus: tuple[GpuFacts, ...]
    render_nodes: Mapping[str, DeviceNode]  # "renderD128" -> node
    kfd: KfdFacts
    modprobe: ModprobeFacts
    accounts: Accounts
    dkms: tuple[DkmsModule, ...] = ()
    installed_kernels: tuple[str, ...] = ()  # releases with a kernel image in /boot
    log: KernelLog = KernelLog(read=False)
    kernels: tuple[InstalledKernel, ...] = ()
    bootloader: BootloaderFacts = BootloaderFacts("none")
    history: History = History()
    health: HealthFiles = HealthFiles()  # the resident service's per-boot GPU health (not in History yet)
    cdi: tuple[CdiSpec, ...] = ()  # AMD CDI specs in /etc/cdi and /var/run/cdi (kfdguard.probe.cdi)
    problems: tuple[Problem, ...] = field(default=())
    # The software inventory (kfdguard.userspace.probe): taken by `kfdguard check`, None on the boot pass.
    software: SoftwareFacts | None = None
    memory: MemoryFacts = MemoryFacts()

    @property
    def amd_gpus(self) -> tuple[GpuFacts, ...]:
        return tuple(g for g in self.gpus if g.is_amd)
