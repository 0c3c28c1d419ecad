"""Kernel (and boot-time userspace) messages about KFD and amdgpu, and what they mean.

Each rule matches the *body* of a message, after kernellog.py has removed the
timestamp, the journal's host/identifier prefix and the device prefix
(``kfd kfd: amdgpu:``, ``kfd kfd:``, ``amdgpu 0000:03:00.0: amdgpu:``,
``amdgpu:``), so one rule covers every kernel version's format. ``terms`` are
plain substrings of which every match contains at least one: together they
form the scanner's prefilter, and each rule tests its own before running its
regular expression, which keeps a whole boot's log cheap.

Rules were written from the kernel's format strings (drivers/gpu/drm/amd/
amdkfd/kfd_device.c, kfd_module.c, kfd_topology.c, kfd_crat.c, kfd_iommu.c,
kfd_device_queue_manager.c, amdgpu/amdgpu_mes.c, amdgpu_device.c,
amdgpu_drv.c; kernel/module/signing.c; systemd's modules-load.c and udev;
summarised in shared/knowledge/kfd-facts.md §6), not from sample logs.
"""

from __future__ import annotations

import re

from kfdguard.record import dataclass

SUCCESS, NEUTRAL, FAILURE, RUNTIME = "success", "neutral", "failure", "runtime"

SRC_DEVICE = "drivers/gpu/drm/amd/amdkfd/kfd_device.c"
SRC_MODULE = "drivers/gpu/drm/amd/amdkfd/kfd_module.c"
SRC_TOPOLOGY = "drivers/gpu/drm/amd/amdkfd/kfd_topology.c, kfd_crat.c"
SRC_IOMMU = "drivers/gpu/drm/amd/amdkfd/kfd_iommu.c (removed with IOMMUv2 in 6.6)"
SRC_DQM = "drivers/gpu/drm/amd/amdkfd/kfd_device_queue_manager.c"
SRC_MES = "drivers/gpu/drm/amd/amdgpu/amdgpu_mes.c, mes_v11_0.c"
SRC_AMDGPU = "drivers/gpu/drm/amd/amdgpu/amdgpu_device.c, amdgpu_drv.c, amdgpu_ucode.c"
SRC_FW = "drivers/base/firmware_loader/main.c"
SRC_DM = "drivers/gpu/drm/amd/display/amdgpu_dm/amdgpu_dm.c"
SRC_SIGN = "kernel/module/signing.c, security/lockdown/lockdown.c"
SRC_PARAMS = "kernel/params.c parse_args()"
SRC_MODLOAD = "systemd src/modules-load/modules-load.c"
SRC_UDEV = "systemd src/udev/udev-rules.c"


# Who may say a rule's message (issue 34): the kernel's prefix names the speaker of a line, a driver and its
# device (dev_printk's "iwlwifi 0000:03:00.0: ", "platform regulatory.0: ", "tee tee0: "), a module
# (pr_fmt's "amdgpu: ") or DRM ("[drm] ", "[drm:func [module]] "). The same words from another driver are
# not about an AMD GPU: "Direct firmware load for regulatory.db failed" is cfg80211's, not amdgpu's.
# kernellog.normalise reads the speaker; a rule lists the speakers whose lines it takes. A line without any
# prefix (a grep, a cut paste, an old kernel's unprefixed message) has no speaker and is taken unless the
# rule's `bare` pattern says what such a line must show to be the GPU's (a firmware file under amdgpu/).
AMD_SPEAKERS = ("amdgpu", "kfd", "amdkfd", "drm")
ANY_SPEAKER = ("*",)
# amdgpu and amdgpu-dkms's companions: its dkms.conf's BUILT_MODULE_NAME rows (amdgpu, amdttm, amdkcl, amd-sched)
# and what a 6.x install lists besides (amdxcp, amddrm_buddy, amddrm_ttm_helper). The kernel names a module by
# KBUILD_MODNAME, where "-" becomes "_".
DKMS_MODULES = ("amdgpu", "amdkfd", "amdttm", "amdkcl", "amdxcp", "amd_sched", "amddrm_buddy", "amddrm_ttm_helper")
NEVER = r"(?!)"  # a `bare` that no line matches: the rule needs its speaker


@dataclass(frozen=True, slots=True)
class LogRule:
    id: str
    klass: str  # success | neutral | failure | runtime
    code: str | None  # the finding this evidence supports
    terms: tuple[str, ...]  # literal substrings: every match contains at least one
    pattern: str  # regular expression over the message body (re.search)
    meaning: str
    source: str
    example: str  # a body the rule must match (tests generate every prefix form from it)
    speakers: tuple[str, ...] = AMD_SPEAKERS  # drivers/modules whose lines count; ANY_SPEAKER: whoever prints it
    bare: str = ""  # a line with no speaker counts only if its body also matches this ("" : always)

    def heard(self, speaker: str | None, body: str) -> bool:
        """Whether a line this speaker printed (None: no prefix said who) is evidence of this rule."""
        if speaker is None:
            return not self.bare or re.search(self.bare, body) is not None
        return self.speakers == ANY_SPEAKER or speaker in self.speakers


RULES: tuple[LogRule, ...] = (
    # --- module init (neutral: printed with or without a GPU) ---------------------------
    LogRule("amdgpu-modeset", NEUTRAL, None, ("kernel modesetting enabled",), r"amdgpu kernel modesetting enabled",
            "amdgpu started loading", SRC_AMDGPU, "[drm] amdgpu kernel modesetting enabled."),
    LogRule("amdgpu-init-device", NEUTRAL, None, ("initializing kernel modesetting",),
            r"initializing kernel modesetting \((?P<how>[\w ]+?) 0x(?P<vendor>[0-9A-Fa-f]{4}):0x(?P<device>[0-9A-Fa-f]{4})",
            "amdgpu starts on a GPU", SRC_AMDGPU,
            "initializing kernel modesetting (IP DISCOVERY 0x1002:0x744C 0x1DA2:0x471E 0xC8)."),
    LogRule("kfd-crat-missing", NEUTRAL, None, ("CRAT table not found", "Ignoring ACPI CRAT", "CRAT table disabled"), r"CRAT table not found|Ignoring ACPI CRAT on non-APU system|CRAT table disabled by module option",
            "no ACPI CRAT: KFD builds a virtual one", SRC_TOPOLOGY, "CRAT table not found"),
    LogRule("kfd-cpu-node", NEUTRAL, None, ("created for CPU", "Add CPU node"), r"Virtual CRAT table created for CPU|Topology: Add CPU node",
            "KFD initialised its CPU node at module load; not proof of a GPU", SRC_TOPOLOGY,
            "Topology: Add CPU node"),
    LogRule("kfd-old-module", NEUTRAL, None, ("Initialized module",), r"^Initialized module$",
            "the separate amdkfd.ko initialised (pre-4.20 layout)", SRC_MODULE, "Initialized module"),
    LogRule("kfd-progress", NEUTRAL, None, ("bytes on gart", "Total number of KFD nodes", "KFD node"), r"^Allocated (?P<bytes>\d+) bytes on gart$|^Total number of KFD nodes to be created|^KFD node (?P<node>\d+) partition",
            "KFD is setting up a GPU", SRC_DEVICE, "Allocated 3969056 bytes on gart"),
    LogRule("kfd-virtual-crat-gpu", NEUTRAL, None, ("created for GPU",), r"Virtual CRAT table created for GPU",
            "KFD is building a GPU's topology", SRC_TOPOLOGY, "Virtual CRAT table created for GPU"),
    LogRule("amdgpu-no-pcie-atomics", NEUTRAL, None, ("PCIE atomic ops is not supported",),
            r"PCIE atomic ops is not supported",
            "the PCIe path to the GPU lacks AtomicOps; KFD says itself when it needs them ('PCI rejects atomics')",
            SRC_AMDGPU, "PCIE atomic ops is not supported"),
    LogRule("amdgpu-firmware-fallback", NEUTRAL, None, ("try to fall back to",),
            r"try to fall back to (?P<fallback>\S+)",
            "amdgpu's first choice of a firmware file failed and it loads the older one (knowledge/fallbacks.py"
            "): 6.1 prints DRM_INFO with the path, 6.12 dev_info with the file", SRC_MES,
            "try to fall back to gc_11_0_0_mes.bin"),
    # --- success -------------------------------------------------------------------------------
    LogRule("kfd-topology-gpu", SUCCESS, "kfd-ready", ("Topology: Add",),
            r"Topology: Add (?P<kind>dGPU|APU|GPU) node \[0x(?P<device>[0-9a-fA-F]+):0x(?P<vendor>[0-9a-fA-F]+)\]",
            "KFD added a GPU node to its topology", SRC_TOPOLOGY, "Topology: Add dGPU node [0x744c:0x1002]"),
    LogRule("kfd-added-device", SUCCESS, "kfd-ready", ("added device",),
            r"^added device (?P<vendor>[0-9a-fA-F]+):(?P<device>[0-9a-fA-F]+)$",
            "KFD fully initialised the GPU", SRC_DEVICE, "added device 1002:744c"),
    # --- failures at init ----------------------------------------------------------------------
    LogRule("kfd-sched-policy-invalid", FAILURE, "kfd-init-failed", ("sched_policy has invalid value",),
            r"sched_policy has invalid value", "kfd_init() rejected the sched_policy option: no /dev/kfd",
            SRC_MODULE, "sched_policy has invalid value"),
    LogRule("kfd-init-disabled", FAILURE, "kfd-init-failed", ("KFD is disabled due to module initialization failure",),
            r"KFD is disabled due to module initialization failure",
            "kfd_init() failed (a bad option or an allocation): amdgpu runs without KFD", SRC_MODULE,
            "KFD is disabled due to module initialization failure"),
    LogRule("kfd-queues-invalid", FAILURE, "kfd-init-failed", ("max_num_of_queues_per_device must be",),
            r"max_num_of_queues_per_device must be between",
            "kfd_init() rejected max_num_of_queues_per_device: no /dev/kfd", SRC_MODULE,
            "max_num_of_queues_per_device must be between 1 to KFD_MAX_NUM_OF_QUEUES_PER_DEVICE"),
    LogRule("kfd-pcie-atomics", FAILURE, "pcie-atomics", ("rejects atomics",),
            r"skipped device (?P<vendor>[0-9a-fA-F]+):(?P<device>[0-9a-fA-F]+), PCI rejects atomics(?: (?P<fw>\d+)<(?P<need>\d+))?",
            "KFD skipped the GPU: no PCIe AtomicOps and MEC firmware too old to do without", SRC_DEVICE,
            "skipped device 1002:67df, PCI rejects atomics 730<0"),
    LogRule("kfd-gc-ip-unsupported", FAILURE, "kernel-too-old", ("not supported in kfd",),
            # %06x of IP_VERSION: major<<16 up to 6.1 (6 digits, "0b0001" = 11.0.1), major<<24 from
            # 6.12's IP_VERSION_FULL (7-8 digits, "b000100"); decode_gc_ip() reads both. From 6.12
            # it is dev_info, not dev_err, but it still means no KFD for the GPU.
            r"GC IP (?P<ip>[0-9a-fA-F]{6,8}) ?(?P<vf>\S*?) *not supported in kfd",
            "this kernel's KFD does not know the GPU's GC IP version", SRC_DEVICE,
            "GC IP 0b0001  not supported in kfd"),
    LogRule("kfd-asic-unsupported", FAILURE, "asic-not-supported", ("not supported in kfd",),
            r"^(?!GC IP)(?P<asic>[A-Za-z]\w*) +(?:\w+ +)?not supported in kfd",
            "KFD does not support this ASIC (by name)", SRC_DEVICE, "PITCAIRN  not supported in kfd"),
    LogRule("kfd-hawaii-experimental", FAILURE, "asic-not-supported", ("KFD support on Hawaii",),
            r"KFD support on Hawaii is experimental", "Hawaii needs amdgpu.exp_hw_support=1 for KFD",
            SRC_DEVICE, "KFD support on Hawaii is experimental. See modparam exp_hw_support"),
    # amdgpu_pci_probe() declines a Southern Islands chip (Tahiti, Pitcairn, Cape Verde, Oland, Hainan) unless
    # si_support=1: "SI support provided by radeon." (5.x-6.x; 7.x prints the generation through %s), "amdgpu is
    # built without SI support." (no CONFIG_DRM_AMDGPU_SI), "SI support disabled by module param" (7.x,
    # si_support=0 without radeon). KFD never supported SI under either driver, so each line names a GPU without
    # ROCm compute. The CIK twin is not this: Kaveri and Hawaii reach KFD once amdgpu takes them.
    LogRule("amdgpu-si-declined", FAILURE, "asic-not-supported", ("SI support",),
            r"(?<![\w-])SI support provided by radeon|built without SI support|(?<![\w-])SI support disabled by module param",
            "amdgpu left a Southern Islands (GCN1) GPU to radeon or cannot drive it: KFD never supported SI",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c amdgpu_pci_probe() (amdgpu_support_enabled() from 7.x)",
            "SI support provided by radeon."),
    LogRule("kfd-did-missing", FAILURE, "kernel-too-old", ("is missing in supported_devices",),
            r"DID (?P<device>[0-9a-fA-F]+) is missing in supported_devices",
            "the kernel's static KFD device table lacks this PCI id (kernels up to ~5.4)", SRC_DEVICE,
            "DID 15d8 is missing in supported_devices"),
    LogRule("kfd-probe-failed", FAILURE, "kernel-too-old", ("kgd2kfd_probe failed",), r"kgd2kfd_probe failed",
            "KFD's probe refused the GPU (follows a missing-id message)", SRC_DEVICE, "kgd2kfd_probe failed"),
    LogRule("kfd-not-supported-asic", FAILURE, "kernel-too-old", ("kfd not supported on this ASIC", "out of range"),
            r"kfd not supported on this ASIC|^asic_type \d+ out of range", "this kernel's KFD does not support the ASIC", SRC_DEVICE,
            "kfd not supported on this ASIC"),
    LogRule("kfd-device-not-added", FAILURE, "kfd-device-failed", ("NOT added due to errors",),
            r"device (?P<vendor>[0-9a-fA-F]+):(?P<device>[0-9a-fA-F]+) NOT added due to errors",
            "KFD failed to initialise the GPU (see the lines before it)", SRC_DEVICE,
            "device 1002:15d8 NOT added due to errors"),
    LogRule("kfd-device-error", FAILURE, "kfd-device-failed", ("Could not allocate", "Error initializing", "Error adding device to topology", "KFD num nodes", "Error starting queue manager", "Failed to resume IOMMU"),
            r"^(?:Could not allocate \d+ (?:bytes|gws)|Error initializing (?P<what>gtt sub-allocator|doorbell aperture|interrupts|queue manager|KFD node)$|Error adding device to topology|KFD num nodes cannot be 0|Error starting queue manager for device|Failed to resume IOMMU for device)",
            "a step of KFD's per-GPU initialisation failed", SRC_DEVICE, "Error initializing queue manager"),
    # kfd_iommu.c of 5.10 and 6.1 prints "ats %i, pri %i, pasid %i" without parentheses;
    # the parenthesised form is accepted too (older write-ups quote it).
    LogRule("kfd-iommu-disabled", FAILURE, "iommu-required", ("iommu info", "initializing iommuv2", "required iommu flags", "setting pasid limit"),
            r"error getting iommu info\. is the iommu enabled\?|Error initializing iommuv2|error required iommu flags ats ?\(?(?P<ats>\d+)\)?, pri ?\(?(?P<pri>\d+)\)?, pasid ?\(?(?P<pasid>\d+)\)?|error setting pasid limit",
            "an APU that KFD drives through IOMMUv2 found no usable IOMMU", SRC_IOMMU,
            "error getting iommu info. is the iommu enabled?"),
    LogRule("kfd-vcrat-error", FAILURE, "kfd-device-failed", ("VCRAT", "topology device", "sysfs topology", "topology in sysfs"),
            r"Error (?:creating|parsing) VCRAT|VCRAT not implemented for APU|No memory to allocate a topology device|Failed to update (?:GPU (?:\(ID: 0x[0-9a-fA-F]+\) )?to sysfs topology|topology in sysfs)",
            "KFD could not build its topology (virtual CRAT table, sysfs nodes) for a CPU or GPU", SRC_TOPOLOGY,
            "Error creating VCRAT for GPU (ID: 0x1a)"),
    LogRule("kfd-ip-mismatch", FAILURE, "kfd-ip-mismatch", ("is set due to mismatch",),
            r"(?:Default sdma queue per engine\(\d+\)|v9 event interrupt handler) is set due to mismatch",
            "KFD fell back to defaults for an IP version it does not know: the kernel is older than the GPU",
            SRC_DEVICE, "Default sdma queue per engine(8) is set due to mismatch of sdma ip block(6.0.0)."),
    # amdgpu_dm's own "Can't load firmware" (5.10/6.1) and "Can't validate firmware" are printed only on the
    # errors load_dmcu_fw() does not go on from (not the missing file's): its file (dmfile) is never optional.
    LogRule("firmware-load-failed", FAILURE, "firmware-missing", ("Direct firmware load for ", "to load firmware", "can't load firmware", "load psp firmware", "Can't load firmware", "Can't validate firmware"),
            r"Direct firmware load for (?P<file>\S+) failed with error -?(?P<err>\d+)|[Ff]ailed to load firmware \"?(?P<file2>amdgpu/[^\" ]+)|can't load firmware \"(?P<file3>[^\"]*)\"|Failed to load psp firmware|amdgpu_dm: Can't (?:load|validate) firmware \"(?P<dmfile>[^\"]*)\"",
            "a firmware file amdgpu needs is not installed", SRC_FW,
            "Direct firmware load for amdgpu/psp_13_0_10_sos.bin failed with error -2",
            # The firmware loader prints on the requesting device (dev_warn): amdgpu's own requests carry its
            # prefix and an amdgpu/ file. Wifi's regulatory.db, iwlwifi's microcode, amdtee's trusted apps are
            # other drivers' (issue 34); a line cut from its prefix is amdgpu's only if the file is.
            speakers=("amdgpu", "kfd", "amdkfd"), bare=r"amdgpu/|psp firmware"),
    # Debian's loader patch (firmware_class-log-every-success-and-failure) logs every failed request, the quiet
    # ones too (request_firmware_direct, firmware_request_nowarn): 5.10/6.1 with dev_err, 6.12 on with dev_info,
    # once per file name tried (plain, .zst, .xz). A quiet request's failure has no other loader line, so this
    # names the file; whether amdgpu needs it is the request's to say (assess/rules.rule_optional_firmware):
    # evidence for optional firmware only, never a failure of its own.
    # Cut from its device prefix the line reads as said by "firmware": only an amdgpu/ file is taken then.
    LogRule("firmware-load-logged", NEUTRAL, None, ("failed to load amdgpu/",),
            r"(?:firmware: )?failed to load (?P<file>amdgpu/\S+) \(-?(?P<err>\d+)\)",
            "the firmware loader could not load a file (Debian's log of every request, quiet ones included)", SRC_FW,
            "firmware: failed to load amdgpu/renoir_dmcub.bin (-2)",
            speakers=("amdgpu", "kfd", "amdkfd", "firmware")),
    # 5.10/6.1's dm_dmub_sw_init(): a failed DMCUB request is printed and the init goes on (return 0); from 6.12
    # the request fails dm's early_init instead and this line is gone (tests/unit/knowledge holds it to the data).
    LogRule("amdgpu-dmub-firmware-failed", NEUTRAL, None, ("DMUB firmware loading failed",),
            r"DMUB firmware loading failed: (?P<err>-?\d+)",
            "amdgpu_dm could not load the display microcontroller's (DMCUB) firmware and goes on without it",
            SRC_DM, "[drm:dm_dmub_sw_init [amdgpu]] *ERROR* DMUB firmware loading failed: -2"),
    LogRule("amdgpu-ip-init-failed", FAILURE, "gpu-init-failed", ("of IP block <",),
            r"(?:early_init|sw_init|hw_init|late_init|resume) of IP block <(?P<block>\w+)> failed (?P<err>-?\d+)",
            "amdgpu could not initialise one of the GPU's IP blocks", SRC_AMDGPU,
            "*ERROR* early_init of IP block <psp> failed -19"),
    LogRule("amdgpu-discovery-failed", FAILURE, "gpu-init-failed", ("discovery failed", "amdgpu_discovery_init failed"),
            r"discovery failed: (?P<err>-?\d+)|amdgpu_discovery_init failed",
            "amdgpu could not read the GPU's IP discovery table (6.1: 'amdgpu_discovery_init failed', 6.12: "
            "'discovery failed: %d'): a missing amdgpu/ip_discovery.bin, a damaged ROM, or a table newer than the kernel",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_discovery.c", "discovery failed: -22"),
    LogRule("amdgpu-ip-unknown", FAILURE, "kernel-too-old", ("ip block(",),
            r"Failed to add (?P<block>[\w /]+?) ip block\((?P<hwip>\w+):0x(?P<ip>[0-9a-fA-F]+)\)",
            "IP discovery found an IP version this kernel does not know: a GPU newer than the kernel",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_discovery.c", "Failed to add gfx ip block(GC_HWIP:0xb0001)"),
    LogRule("amdgpu-no-vbios", FAILURE, "gpu-init-failed", ("no vBIOS found",), r"no vBIOS found",
            "amdgpu found no video BIOS for the GPU (passthrough, a stripped ROM or a broken card)",
            SRC_AMDGPU, "no vBIOS found"),
    LogRule("amdgpu-psp-failed", FAILURE, "gpu-psp-init-failed",
            ("PSP create ring failed", "PSP load ", "PSP firmware loading failed", "PSP resume failed",
             "PSP tmr init failed"),
            r"PSP (?P<step>create ring|load \w+|tmr init|firmware loading|resume) failed",
            "the GPU's security processor (PSP) did not start: its ring or its bootloader stages failed at init or "
            "resume. A firmware file that is missing says so separately ('Direct firmware load'); without that "
            "line the PSP itself, the board (XGMI bridges, power), or a device left dirty by a VM is the cause",
            "drivers/gpu/drm/amd/amdgpu/amdgpu_psp.c psp_hw_start(), psp_hw_init(), psp_resume()",
            "*ERROR* PSP create ring failed!"),
    # pm/swsmu/amdgpu_smu.c smu_hw_init() and smu_resume(): dev_err("Failed to setup smc hw!") when
    # smu_smc_hw_setup() fails (the SMU rejected or did not answer enabling its features). Printed just before
    # "hw_init/resume of IP block <smu> failed", which a grep or a cut paste may leave out.
    LogRule("amdgpu-smu-setup-failed", FAILURE, "gpu-init-failed", ("Failed to setup smc hw",),
            r"Failed to setup smc hw",
            "the GPU's SMU (power management firmware) could not be started at init or resume: the GPU is unusable "
            "until it is", "drivers/gpu/drm/amd/pm/swsmu/amdgpu_smu.c smu_hw_init(), smu_resume()",
            "Failed to setup smc hw!"),
    LogRule("amdgpu-fatal-init", FAILURE, "gpu-init-failed", ("Fatal error during GPU init",), r"Fatal error during GPU init",
            "amdgpu gave up on the GPU", SRC_AMDGPU, "Fatal error during GPU init"),
    # drivers/base/dd.c: 6.1 pr_warn("%s: probe of %s failed with error %d"); 6.12 dev_err on the
    # device, "probe with driver %s failed with error %d".
    LogRule("amdgpu-probe-failed", FAILURE, "gpu-init-failed", ("probe of ", "probe with driver "),
            r"probe of (?P<slot>\S+) failed with error (?P<err>-?\d+)|probe with driver (?P<driver>\S+) failed with error (?P<err2>-?\d+)",
            "the driver core reports amdgpu's probe failure for the device", SRC_AMDGPU,
            "probe of 0000:03:00.0 failed with error -22"),
    LogRule("module-signature-rejected", FAILURE, "module-signature-rejected", ("unsigned module", "unavailable key", "PKCS#7 signature", "Key was rejected", "Required key not available"),
            r"Loading of unsigned module is rejected|Loading of module with unavailable key is rejected|unsigned module loading is restricted|PKCS#7 signature not signed with a trusted key|Key was rejected by service|Required key not available",
            "Secure Boot/lockdown refused an unsigned or untrusted module (often an unsigned DKMS amdgpu)",
            SRC_SIGN, "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
            speakers=ANY_SPEAKER),
    LogRule("module-unknown-symbol", FAILURE, "module-symbol-mismatch", ("Unknown symbol ", "disagrees about version of symbol "),
            r"Unknown symbol (?P<symbol>\w+) \(err (?P<err>-?\d+)\)|disagrees about version of symbol (?P<symbol2>\w+)",
            "the module was built for another kernel, or a module it depends on is not installed",
            "kernel/module/main.c (resolve_symbol_wait, check_version)", "Unknown symbol drm_sched_job_init (err -2)",
            # pr_warn("%s: Unknown symbol %s (err %d)", mod->name, ...): the module that failed speaks. Only
            # amdgpu's and its DKMS companions' failures are about the GPU (nvidia's are not).
            speakers=("kfd", *DKMS_MODULES)),
    # The id names the line (kernel/params.c parse_args() ignoring an undeclared option), the code the finding.
    LogRule("parse-args-ignored", FAILURE, "module-param-unknown", ("unknown parameter '",),
            r"^unknown parameter '(?P<param>[^']+)' ignored",
            "a module option the module does not declare was ignored", SRC_PARAMS,
            "amdgpu: unknown parameter 'enable_iommu' ignored",
            # parse_args() prints the module's name: without it the option is nobody's in particular.
            speakers=("amdgpu", "amdkfd"), bare=NEVER),
    LogRule("modules-load-missing", FAILURE, "softdep-missing-module", ("Failed to find module '",),
            r"Failed to find module '(?P<module>[^']+)'",
            "systemd-modules-load was asked for a module that does not exist", SRC_MODLOAD,
            "Failed to find module 'amdkfd'", speakers=ANY_SPEAKER),
    LogRule("udev-group-unknown", FAILURE, "device-permissions", ("Unknown group '", "Failed to resolve group '"),
            r"Unknown group '(?P<group>[^']+)', ignoring|Failed to resolve group '(?P<group2>[^']+)', ignoring",
            "udev could not apply a rule's group: device nodes keep root", SRC_UDEV,
            "/usr/lib/udev/rules.d/50-udev-default.rules:40 Unknown group 'render', ignoring"),
    # --- failures at run time ----------------------------------------------------------------------
    LogRule("kfd-hws-hang", RUNTIME, "gpu-hang", ("qcm fence wait", "The cp might be", "Failed to evict", "Failed to quiesce KFD", "HWS hang", "Failed to suspend process"),
            r"qcm fence wait loop timeout expired|The cp might be in an unrecoverable state|Failed to evict process queues|Failed to quiesce KFD|HWS hang|Failed to evict queue \d+|Failed to suspend process",
            "the hardware scheduler stopped answering: compute queues could not be preempted", SRC_DQM,
            "The cp might be in an unrecoverable state due to an unsuccessful queues preemption"),
    # 6.1 mes_v11_0.c: "MES failed to response msg=%d"; 6.12 mes_v11_0.c "MES failed to respond to
    # msg=%s", mes_v12_0.c "MES(%d) failed to respond to msg=%s".
    LogRule("mes-hang", RUNTIME, "gpu-hang", ("failed to respon", "hardware queue from MES", "MES might be in"),
            r"MES(?:\(\d+\))? failed to respon(?:d|se) (?:to )?msg=(?P<msg>\w+)|failed to remove hardware queue from MES|MES might be in unrecoverable state",
            "the MES firmware (RDNA3 and later) stopped answering", SRC_MES,
            "MES failed to respond to msg=REMOVE_QUEUE"),
    LogRule("gpu-ring-timeout", RUNTIME, "gpu-hang", ("timeout, signaled seq=", "] *ERROR* ring "),
            r"ring (?P<ring>\S+) timeout, signaled seq=|\*ERROR\* ring (?P<ring2>\S+) timeout",
            "a GPU ring stopped making progress", SRC_AMDGPU, "ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236"),
    # 6.x amdgpu_job.c amdgpu_job_timedout, after the ring's timeout line: "Starting %s ring reset", then "Ring %s
    # reset succeeded" or "Ring %s reset failed" (per-queue reset, where the ring supports it).
    LogRule("gpu-ring-reset", RUNTIME, "gpu-hang", (" ring reset", " reset succeeded", " reset failed"),
            r"Starting (?P<ring>\S+) ring reset$|^Ring (?P<ring2>\S+) reset (?P<result>succeeded|failed)$",
            "a GPU ring hung and amdgpu reset that ring (the job running on it was lost)", SRC_AMDGPU,
            "Starting gfx_0.0.0 ring reset"),
    LogRule("gpu-ring-soft-recovered", RUNTIME, "gpu-hang", ("timeout, but soft recovered",),
            r"ring (?P<ring>\S+) timeout, but soft recovered",
            "a ring hung and amdgpu killed the job without a full reset (the job's work was lost)", SRC_AMDGPU,
            "ring gfx_0.0.0 timeout, but soft recovered"),
    LogRule("gpu-vram-lost", RUNTIME, "gpu-hang", ("VRAM is lost due to GPU reset",), r"VRAM is lost due to GPU reset",
            "a GPU reset wiped VRAM: every running GPU program lost its data", SRC_AMDGPU,
            "VRAM is lost due to GPU reset!"),
    LogRule("gpu-reset", RUNTIME, "gpu-hang", ("GPU reset", "GPU recovery disabled"),
            r"GPU reset begin!|GPU reset\(\d+\) (?P<result>succeeded|failed)|GPU reset (?P<result2>succeeded|failed)|(?<!for )GPU recovery disabled|GPU reset end with ret = (?P<ret>-?\d+)|GPU reset retry is beyond the retry limit",
            "amdgpu reset the GPU; running compute jobs were lost", SRC_AMDGPU, "GPU reset begin!. Source:  3"),
    LogRule("gpu-lost", RUNTIME, "device-lost", ("device lost from bus", "GPU is lost", "GPU has been lost", "GPU lost"),
            r"device lost from bus!|GPU (?:is |has been )?lost",
            "the GPU dropped off the PCIe bus", SRC_AMDGPU, "device lost from bus!"),
)  # fmt: skip

BY_ID = {rule.id: rule for rule in RULES}


def decode_gc_ip(digits: str) -> str | None:
    """'0b0001' (6.1, major<<16) or 'b000100' (6.12, IP_VERSION_FULL, major<<24) -> '11.0.1'."""
    try:
        value = int(digits, 16)
    except ValueError:
        return None
    if len(digits) <= 6:
        return f"{value >> 16}.{(value >> 8) & 0xFF}.{value & 0xFF}"
    return f"{value >> 24}.{(value >> 16) & 0xFF}.{(value >> 8) & 0xFF}"
