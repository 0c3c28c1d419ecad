"""KFD-related module parameters: types, valid values, and the bogus ones.

Validate against what the running module declares (``/sys/module/amdgpu/
parameters``, ``modinfo -F parm``) first; this table adds what the kernel
does with a value, which the declaration does not say. Sources: amdgpu_drv.c
and kfd_module.c (ROCm/amdgpu @ 031b3904, mainline docs), Debian 12's 6.1
amdgpu.ko measured with modinfo (shared/knowledge/kfd-facts.md §2). The ranges of
cwsr_enable, send_sigterm and hws_max_conc_proc and the integer syntax (kernel_int) were
read in Debian's linux-source 6.1.192 and 6.12.118 (amdgpu_drv.c, amdkfd/, kernel/params.c,
lib/kstrtox.c); tests/unit/knowledge/test_knowledge_params.py names the lines.
"""

from __future__ import annotations

from kfdguard.record import dataclass

SRC_DRV = "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c (ROCm/amdgpu @ 031b3904); kfd-facts.md §2"
SRC_KFD = "drivers/gpu/drm/amd/amdkfd/kfd_module.c kfd_init(); kfd-facts.md §2"
SRC_OLD = "drivers/gpu/drm/amd/amdkfd/kfd_module.c of 3.19 and 4.17-4.19; kfd-facts.md §2"


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: str  # int, uint, bool
    choices: tuple[int, ...] | None  # the only values the kernel accepts or uses
    minimum: int | None
    maximum: int | None
    # declared with module_param_unsafe (setting it taints the kernel): none of these is, in
    # the amdgpu_drv.c of 5.10, 6.1 and 6.12 (tests/unit/knowledge/test_knowledge_sources.py reads the sources).
    unsafe: bool
    runtime: bool  # 0644: can be changed through sysfs while loaded
    breaks_kfd: bool  # an invalid value makes kfd_init() fail: no /dev/kfd at all
    meaning: str
    source: str

    def check(self, value: str) -> str | None:
        """Why ``value`` is invalid, or None."""
        if self.kind == "bool":
            if value.upper() in ("Y", "N", "1", "0", "YES", "NO", "TRUE", "FALSE", "ON", "OFF", ""):
                return None
            return f"{value!r} is not a boolean (0/1, y/n)"
        number = kernel_int(value, signed=self.kind != "uint")
        if isinstance(number, str):
            return number
        if self.choices is not None and number not in self.choices:
            return f"{number} is not one of {', '.join(map(str, self.choices))}"
        if self.minimum is not None and number < self.minimum:
            return f"{number} is below the minimum {self.minimum}"
        if self.maximum is not None and number > self.maximum:
            return f"{number} is above the maximum {self.maximum}"
        return None


_DIGITS = "0123456789abcdef"


def kernel_int(text: str, *, signed: bool = True) -> int | str:
    """``text`` read as the kernel reads an int (uint) parameter, or why the kernel refuses it.

    kernel/params.c sets an int with kstrtoint(val, 0) and a uint with kstrtouint(val, 0);
    lib/kstrtox.c (6.1 and 6.12 alike): an optional "-" (signed only) or "+", then base 16
    after "0x" and a hex digit, base 8 after a leading "0" ("010" is 8), base 10 otherwise,
    at least one digit, one optional trailing newline, and the value must fit the C type.
    Python's int(text, 0) differs on each side ("010", "1_000", "0o7", " 7"), hence this.
    """
    s = text
    negative = signed and s.startswith("-")
    if negative or s.startswith("+"):  # kstrtoll takes the "-", kstrtoull a "+"
        s = s[1:]
    base = 10
    if s.startswith("0"):
        if s[1:2].lower() == "x" and s[2:3] and s[2:3].lower() in _DIGITS:
            base, s = 16, s[2:]
        else:
            base = 8
    s = s[:-1] if s.endswith("\n") else s
    if not s or any(c not in _DIGITS[:base] for c in s.lower()):
        return f"{text!r} is not an integer as the kernel reads one"
    number = -int(s, base) if negative else int(s, base)
    low, high = (-(2**31), 2**31 - 1) if signed else (0, 2**32 - 1)
    if not low <= number <= high:
        kind = "an int" if signed else "a uint"
        return f"{text!r} does not fit {kind} ({low}..{high}): the kernel refuses it"
    return number


def _p(name: str, kind: str, meaning: str, *, choices: tuple[int, ...] | None = None,
       lo: int | None = None, hi: int | None = None, unsafe: bool = False, runtime: bool = False,
       breaks_kfd: bool = False, source: str = SRC_DRV) -> Param:  # fmt: skip
    return Param(name, kind, choices, lo, hi, unsafe, runtime, breaks_kfd, meaning, source)


# Parameters of amdgpu (merged kernels, 4.20+) that concern compute.
KFD_PARAMS: dict[str, Param] = {p.name: p for p in (
    _p("sched_policy", "int", "0 = HWS, 1 = HWS without over-subscription, 2 = no HWS (debug)",
       choices=(0, 1, 2), breaks_kfd=True, source=SRC_KFD),
    # Any int (kfd_device.c of 6.1 and 6.12, kgd2kfd_device_init): a negative value means all
    # of KFD's VMIDs, 0 or more is capped at them (min((u32)hws_max_conc_proc, vmid_num_kfd)).
    _p("hws_max_conc_proc", "int", "processes the HWS runs at once (capped at KFD's VMIDs); "
       "negative = as many as KFD has VMIDs"),
    # kfd_device.c kfd_cwsr_init() of 6.1 and 6.12: "if (cwsr_enable && supports_cwsr)".
    _p("cwsr_enable", "int", "compute wave save/restore (mid-wave preemption): 0 off, any other value on"),
    # kfd_module.c: 1..KFD_MAX_NUM_OF_QUEUES_PER_DEVICE = 512 processes x 1024 queues (4096 is the default).
    _p("max_num_of_queues_per_device", "int", "queues per device", lo=1, hi=524288, breaks_kfd=True,
       source=SRC_KFD),
    # kfd_events.c of 6.1 and 6.12 (lookup_events_by_type_and_signal): "if (send_sigterm)".
    _p("send_sigterm", "int", "SIGTERM the HSA process on an unhandled exception: 0 no, any other value yes"),
    _p("halt_if_hws_hang", "int", "halt if an HWS hang is detected (debug)", choices=(0, 1),
       runtime=True),
    _p("hws_gws_support", "bool", "assume MEC2 firmware supports GWS barriers"),
    _p("queue_preemption_timeout_ms", "int", "queue preemption timeout", lo=1, runtime=True),
    _p("debug_evictions", "bool", "warn with a backtrace on evictions", runtime=True),
    _p("no_system_mem_limit", "bool", "disable the system memory limit", runtime=True),
    _p("no_queue_eviction_on_vm_fault", "int", "1 = do not evict queues on a VM fault",
       choices=(0, 1)),
    _p("noretry", "int", "retry faults: 0 on, 1 off, -1 auto", choices=(-1, 0, 1), runtime=True),
    _p("mtype_local", "int", "MTYPE for local memory (GFX 9.4.3+)", choices=(0, 1, 2)),
    _p("pcie_p2p", "bool", "PCIe peer-to-peer (needs large BAR)"),
    _p("debug_mask", "uint", "debug bits; 0x2 simulates large BAR"),
    _p("debug_largebar", "int", "simulate large BAR (replaced by debug_mask)", choices=(0, 1)),
    _p("ignore_crat", "int", "1 = ignore the ACPI CRAT table", choices=(0, 1)),
)}  # fmt: skip

# Parameters the separate amdkfd.ko declared before 4.20 and amdgpu took over.
OLD_AMDKFD = frozenset({
    "sched_policy", "hws_max_conc_proc", "cwsr_enable", "max_num_of_queues_per_device",
    "send_sigterm", "debug_largebar", "ignore_crat", "noretry", "halt_if_hws_hang",
    "max_num_of_processes", "max_num_of_queues_per_process",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class BogusParam:
    name: str
    truth: str


# Options from blog posts that no amdkfd or amdgpu version ever declared.
BOGUS: dict[str, BogusParam] = {b.name: b for b in (
    BogusParam("enable_iommu", "no amdkfd or amdgpu version declares it; the IOMMU is set on the "
               "kernel command line (amd_iommu=on, iommu=pt), and current kernels need none for KFD"),
    BogusParam("max_num_of_devices", "no amdkfd or amdgpu version declares it; to limit the GPUs a "
               "program sees, set ROCR_VISIBLE_DEVICES in its environment"),
)}  # fmt: skip


def lookup(name: str) -> Param | None:
    return KFD_PARAMS.get(name)


def declared(name: str) -> dict[str, str]:
    """The kernel series (of those the generator read) whose amdgpu.ko declares ``name``: {series: type}.

    From modinfo -F parmtype of Debian's real modules (knowledge/generated.py), so
    "absent in 6.1" or "gone in 6.12" is read, not remembered.
    """
    from kfdguard.knowledge.generated import KERNELS

    return {series: k["params"][name] for series, k in KERNELS.items() if name in k["params"]}


def kernels_with(name: str) -> tuple[str, ...]:
    return tuple(declared(name))


def taint_judgement(name: str, version: tuple[int, int] | None) -> tuple[bool | None, str]:
    """Is ``name`` declared module_param_unsafe (setting it taints the kernel) on that kernel, and why.

    Read per series from the sources (``unsafe`` of each series generated): plain module_param
    in 5.10, 6.1 and 6.12; sched_policy, halt_if_hws_hang, hws_gws_support,
    no_queue_eviction_on_vm_fault, mtype_local and debug_mask are _unsafe in 7.2. A kernel
    between two series read is judged by the older one only where the newer one agrees (the
    declaration held across them); where they differ, the release that changed it is not read
    and the answer is None: unknown for this kernel. A kernel newer than every series read is
    judged by the newest (no later source is known to differ); one older than every series read,
    or an unknown kernel, is unknown. The text names the series the answer rests on.
    """
    from kfdguard.knowledge.generated import KERNELS

    if version is None:
        return None, "the kernel release is unknown"
    read = sorted((tuple(int(p) for p in s.split(".")), s) for s in KERNELS)
    older = [s for v, s in read if v <= version]
    newer = [s for v, s in read if v > version]
    if not older:
        return None, f"no kernel series at or below {version[0]}.{version[1]} was read (oldest: {read[0][1]})"
    below = older[-1]
    unsafe = name in KERNELS[below]["unsafe"]
    if not newer or below == f"{version[0]}.{version[1]}":
        return unsafe, f"{_declaration(name, below)} in {below}"
    above = newer[0]
    if (name in KERNELS[above]["unsafe"]) != unsafe:
        return None, (
            f"{_declaration(name, below)} in {below}, {_declaration(name, above)} in {above}; "
            "the releases between were not read"
        )
    return unsafe, f"{_declaration(name, below)} in {below}, {_declaration(name, above)} in {above}"


def _declaration(name: str, series: str) -> str:
    from kfdguard.knowledge.generated import KERNELS

    if name in KERNELS[series]["unsafe"]:
        return "module_param_unsafe"
    return "plain module_param" if name in KERNELS[series]["params"] else "not declared"


def taints(name: str, version: tuple[int, int] | None) -> bool | None:
    """taint_judgement's answer alone: True, False, or None (unknown for this kernel)."""
    return taint_judgement(name, version)[0]


# amdgpu parameters outside KFD's #ifdef that decide whether compute works. Only why each
# matters is written here; types, descriptions and the kernels that declare them are read
# from modinfo of Debian's modules (describe()), because they change between releases
# (gpu_recovery=2 exists only in 6.1; enforce_isolation is bool in 6.12 and int in 7.2;
# mes and mes_kiq are gone in 7.2, uni_mes arrived after 6.1).
COMPUTE_PARAMS: dict[str, str] = {
    "exp_hw_support": "KFD skips Hawaii and amdgpu refuses AMD_EXP_HW_SUPPORT ids unless it is 1",
    "cik_support": "CIK chips (Kaveri, Hawaii) bind to amdgpu, hence get KFD, only with 1 (and CONFIG_DRM_AMDGPU_CIK)",
    "si_support": "SI chips bind to amdgpu only with 1; KFD never supports them anyway",
    "mes": "MES scheduling on gfx10.x/11 (RDNA3 always uses MES for KFD queues)",
    "uni_mes": "unified MES on gfx12 (RDNA4)",
    "mes_kiq": "MES KIQ on gfx11",
    "gpu_recovery": "0 disables GPU reset: a hung compute job keeps the GPU hung",
    "lockup_timeout": "ring timeouts; compute jobs get their own value (60000 ms in 6.1)",
    "gttsize": "size of system memory the GPU can map (KFD's system memory limit follows it)",
    "vm_fault_stop": "stop the GPU on a VM fault (debugging): compute hangs on the first fault",
    "enforce_isolation": "process isolation between graphics and compute jobs",
    "compute_multipipe": "spread compute queues across pipes",
}


def describe(name: str, version: tuple[int, int]) -> tuple[str, str, str] | None:
    """(type, description, series) of a parameter as the nearest kernel series read declares it.

    Loads the generated JSON (off the boot path). None when no series read declares it.
    """
    from kfdguard.knowledge.formats import kernel, series

    def distance(name_: str) -> int:
        major, minor = (int(p) for p in name_.split(".")[:2])
        return abs(major * 100 + minor - version[0] * 100 - version[1])

    for candidate in sorted(series(), key=distance):
        entry = kernel(candidate)["params"].get(name)
        if entry:
            return str(entry[0]), str(entry[1]), candidate
    return None
