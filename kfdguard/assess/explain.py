"""Causes established by kernel-log events, shared by the machine assessment
and the diagnosis of pasted text.

Each function takes the events for one GPU (or for the machine) and returns
the finding they establish, or None.
"""

from __future__ import annotations

from kfdguard.facts import LogEvent
from kfdguard.knowledge.model import Asic
from kfdguard.record import dataclass
from kfdguard.verdict import Severity

# Events about KFD's handling of one GPU that carry no PCI id (KFD's own "kfd kfd:"
# device prints them): they belong to the GPU KFD was probing, which only the
# order of the log tells.
ANONYMOUS_GPU_EVENTS = frozenset(
    {
        "kfd-iommu-disabled",
        "kfd-probe-failed",
        "kfd-asic-unsupported",
        "kfd-hawaii-experimental",
        "kfd-device-error",
        "kfd-not-supported-asic",
        "kfd-gc-ip-unsupported",
        "amdgpu-ip-init-failed",
        "amdgpu-smu-setup-failed",
        "amdgpu-psp-failed",
        "amdgpu-ip-unknown",
    }
)

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741

FIRMWARE_PACKAGE = {
    "debian": "firmware-amd-graphics (from non-free-firmware): sudo apt install firmware-amd-graphics",
    "ubuntu": "linux-firmware: sudo apt install --reinstall linux-firmware",
    "fedora": "amd-gpu-firmware: sudo dnf install amd-gpu-firmware",
    "arch": "linux-firmware: sudo pacman -S linux-firmware",
}


@dataclass(frozen=True)
class Cause:
    code: str
    severity: Severity
    message: str
    remedy: str
    evidence: tuple[str, ...]
    blocks: str | None  # short reason for the GPU status, None when it does not stop compute


def _lines(events: list[LogEvent], limit: int = 4) -> tuple[str, ...]:
    seen: dict[str, None] = {}  # in order, each once; a long log's thousands of events stop at the limit
    for e in events:
        seen.setdefault(e.text)
        if len(seen) == limit:
            break
    return tuple(seen)


@dataclass(frozen=True)
class _Seen:
    """What one GPU's cause functions look at: its label, its chip, its log lines and where it runs."""

    label: str
    asic: Asic | None
    events: list[LogEvent]
    kernel: str
    distro: str

    def having(self, *rules: str) -> list[LogEvent]:
        return [e for e in self.events if e.rule in rules]


def firmware_files(events: list[LogEvent]) -> list[str]:
    """The files the lines of a failed firmware load name: the loader's and amdgpu's own (firmware-load-failed),
    and Debian's loader log of every request, the quiet ones included (firmware-load-logged)."""
    named = {
        e.value("file") or e.value("file2") or e.value("file3") or e.value("dmfile") or ""
        for e in events
        if e.rule in ("firmware-load-failed", "firmware-load-logged")
    }
    return sorted(named - {""})


def refused_files(events: list[LogEvent]) -> list[str]:
    """Files amdgpu_dm says it could not load or validate ("amdgpu_dm: Can't load firmware"): it prints that
    only on the errors load_dmcu_fw() fails the GPU's init with, not on the missing file it goes on without,
    so such a file is needed whatever its request tolerates."""
    return sorted({f for e in events if e.rule == "firmware-load-failed" and (f := e.value("dmfile"))})


def optional_firmware(name: str) -> bool:
    """PSP trusted-application firmware (amdgpu/<chip>_ta.bin: HDCP, DTM, RAS, XGMI, secure display).

    psp_v10_0/psp_v11_0/psp_v12_0 init_microcode log "Failed to load firmware" at info level and go
    on without it; only some newer PSP versions fail the GPU's init on it, and then the log also shows
    the init failure (drivers/gpu/drm/amd/amdgpu/psp_v1x_0.c, amdgpu_psp.c psp_init_ta_microcode).
    """
    return name.endswith("_ta.bin")


def _atomics(s: _Seen) -> Cause | None:
    ev = s.having("kfd-pcie-atomics")
    if not ev:
        return None
    fw, need = ev[0].value("fw"), ev[0].value("need")
    detail = f" (MEC firmware {fw}, needs {need} to work without them)" if fw and need and need != "0" else ""
    return Cause(
        "pcie-atomics",
        E,
        f"KFD skipped {s.label}: the PCIe path does not pass AtomicOps{detail}",
        "put the card in a CPU-attached PCIe 3.0+ slot (chipset slots, risers, PCIe switches and old "
        "platforms may not pass atomics); newer GPUs with current firmware (linux-firmware) can do without",
        _lines(ev),
        "PCIe atomics",
    )


def _iommu(s: _Seen) -> Cause | None:
    if not s.having("kfd-iommu-disabled"):
        return None
    return Cause(
        "iommu-required",
        E,
        f"KFD could not initialise {s.label}: this APU needs the IOMMU (IOMMUv2) on this kernel and it is off",
        "enable the IOMMU in the firmware setup (often 'IOMMU' or 'AMD-Vi'), make sure amd_iommu=off is not "
        "on the kernel command line, or use Linux 6.6 or newer, where KFD no longer needs IOMMUv2",
        _lines(s.having("kfd-iommu-disabled", "kfd-device-not-added", "kfd-device-error")),
        "IOMMU off",
    )


def _unknown_device(s: _Seen) -> Cause | None:
    ev = s.having("kfd-did-missing", "kfd-probe-failed", "kfd-not-supported-asic", "kfd-gc-ip-unsupported")
    if not ev:
        return None
    asic = s.asic or _gc_asic(s.having("kfd-gc-ip-unsupported"))
    if asic is not None and asic.kfd_since is None:
        return _never(s.label, asic, ev)
    if asic is not None and _iommu_v2_gated(asic, s):
        return _iommu_v2_unreachable(s, asic, ev)
    since = ""
    if asic and asic.kfd_since and asic.gfx:
        since = f"; KFD supports {asic.gfx} from Linux {asic.kfd_since[0]}.{asic.kfd_since[1]}"
    return Cause(
        "kernel-too-old",
        E,
        f"kernel {s.kernel or '(unknown)'} does not know {s.label} (KFD refused it){since}",
        "boot a newer kernel (see 'kfdguard fallback status'), or install one from your distribution",
        _lines(ev),
        "kernel too old",
    )


def _gc_asic(events: list[LogEvent]) -> Asic | None:
    """The chip a "GC IP %06x not supported in kfd" line names, where one chip of the tables has that GC version."""
    from kfdguard.knowledge.logrules import decode_gc_ip

    version = decode_gc_ip(events[0].value("ip") or "") if events else None
    return _asic_of_gc(version) if version else None


def _asic_of_gc(version: str) -> Asic | None:
    """The chip of the tables whose GC IP version this is ("9.1.0"), with a gfx target."""
    from kfdguard import knowledge

    return next((a for a in knowledge.asics() if a.gc_ip == version and a.gfx), None)


# Kernels print KFD's refusal by GC IP version ("GC IP 090100 not supported in kfd") from 5.17 on, when the GPU table
# became a switch over IP versions: every such kernel knows the IOMMUv2 APUs (Raven from 4.19, Picasso from 5.0).
_GC_IP_FORM_SINCE = (5, 17)


def _iommu_v2_gated(asic: Asic, s: _Seen) -> bool:
    """Whether KFD refused an APU that its kernel knows only behind IOMMUv2 (kfd_device.c's Raven case sits inside
    #ifdef KFD_SUPPORT_IOMMU_V2, defined where IS_REACHABLE(CONFIG_AMD_IOMMU_V2), until 6.6 dropped IOMMUv2)."""
    if asic.iommu_v2_until is None or asic.kfd_since is None or asic.kfd_since >= _GC_IP_FORM_SINCE:
        return False
    if not s.having("kfd-gc-ip-unsupported"):
        return False
    running = kernel_series(s.kernel) if s.kernel else None
    return running is None or running < asic.iommu_v2_until


def _iommu_v2_unreachable(s: _Seen, asic: Asic, ev: list[LogEvent]) -> Cause:
    return Cause(
        "iommu-required",
        E,
        f"KFD refused {s.label} ({asic.family}, {asic.gfx}), which this kernel knows only through IOMMUv2: KFD was "
        "built without it (CONFIG_AMD_IOMMU_V2 off, or a module that a built-in amdgpu cannot reach), so the APU "
        "gets no KFD node until Linux 6.6",
        "build CONFIG_AMD_IOMMU_V2=y (or amdgpu as a module beside it), keep the IOMMU enabled, or use Linux 6.6 or "
        "newer, where KFD no longer needs IOMMUv2",
        _lines(ev),
        "IOMMUv2 unreachable",
    )


def _ip_unknown(s: _Seen) -> Cause | None:
    """IP discovery met an IP version this kernel has no driver for ("Failed to add gfx ip
    block(GC_HWIP:0xc0001)", amdgpu_discovery.c): the GPU is newer than the kernel (issue 36). The value is
    the IP version as the kernel packs it (decode_gc_ip); a GC version names the gfx target, and the
    knowledge tables the first release whose KFD has it."""
    ev = s.having("amdgpu-ip-unknown")
    if not ev:
        return None
    from kfdguard.knowledge.logrules import decode_gc_ip

    hwip = (ev[0].value("hwip") or "").removesuffix("_HWIP")
    version = decode_gc_ip(ev[0].value("ip") or "")
    asic = s.asic
    if asic is None and hwip == "GC" and version:
        asic = _asic_of_gc(version)
    what = f"{hwip or 'an'} IP {version}" if version else "an IP block"
    gfx = f" ({asic.gfx})" if hwip == "GC" and asic and asic.gfx else ""
    since = ""
    if asic and asic.kfd_since and asic.gfx:
        since = f"; KFD supports {asic.gfx} from Linux {asic.kfd_since[0]}.{asic.kfd_since[1]}"
    return Cause(
        "kernel-too-old",
        E,
        f"kernel {s.kernel or '(unknown)'} does not know {what}{gfx} of {s.label}: amdgpu could not add that "
        f"block, so the GPU never came up and KFD never saw it{since}",
        "boot a newer kernel (see 'kfdguard fallback status'), or install one from your distribution",
        _lines(s.having("amdgpu-ip-unknown", "amdgpu-fatal-init")),
        "kernel too old",
    )


def _unsupported(s: _Seen) -> Cause | None:
    ev = s.having("kfd-asic-unsupported", "kfd-hawaii-experimental")
    if not ev:
        return None
    if not s.having("kfd-hawaii-experimental"):
        return _never(s.label, s.asic, ev)
    return Cause(
        "asic-not-supported",
        E,
        f"KFD treats {s.label} (Hawaii) as experimental and skipped it",
        "load amdgpu with exp_hw_support=1 (and cik_support=1): options amdgpu exp_hw_support=1 cik_support=1; "
        "support is experimental",
        _lines(ev),
        "experimental ASIC",
    )


def _si_declined(s: _Seen) -> Cause | None:
    """amdgpu left the GPU to radeon (or was built without SI): a Southern Islands chip, which KFD never drove."""
    ev = s.having("amdgpu-si-declined")
    if not ev:
        return None
    asic = s.asic
    what = f"{s.label} ({asic.family}, {asic.generation})" if asic else f"{s.label}, a Southern Islands (GCN1) chip,"
    return Cause(
        "asic-not-supported",
        E,
        f"amdgpu did not take {what}: it leaves Southern Islands chips to radeon unless si_support=1 (or was built "
        "without them), and KFD has never supported Southern Islands under either driver, so no ROCm release can "
        "compute on this GPU",
        "use a backend that does not need ROCm (Vulkan: llama.cpp's or ollama's Vulkan build; OpenCL through "
        "Mesa's rusticl), or a GPU ROCm supports (GFX8 or newer)",
        _lines(ev),
        "never supported by KFD",
    )


def _device_failed(s: _Seen) -> Cause | None:
    ev = s.having("kfd-device-not-added", "kfd-device-error")
    if not ev:
        return None
    return Cause(
        "kfd-device-failed",
        E,
        f"KFD failed to initialise {s.label}",
        "the lines before 'NOT added due to errors' in the kernel log name the step; report them with the "
        "kernel version if they are not about memory or the IOMMU",
        _lines(ev),
        "KFD device init failed",
    )


def kernel_series(release: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release, None when unknown."""
    from kfdguard.probe.system_info import parse_release

    version = parse_release(release) if release else None
    return (version[0], version[1]) if version else None


def does_without(name: str, version: tuple[int, int] | None) -> bool:
    """Optional firmware: a PSP trusted application (optional_firmware), or a file the kernel's own
    sources go on without (knowledge/fallbacks.py: an optional flag, a tolerated failure)."""
    from kfdguard.knowledge.fallbacks import goes_without

    return optional_firmware(name) or goes_without(name, version) is not None


def needed_firmware(files: list[str], version: tuple[int, int] | None = None) -> list[str]:
    """The failed files amdgpu cannot do without on that kernel (None: unknown): not optional, and no
    first choice it falls back from."""
    from kfdguard.knowledge.fallbacks import fallback_of

    return [f for f in files if not does_without(f, version) and fallback_of(f, version) is None]


def _firmware(s: _Seen) -> Cause | None:
    failed = firmware_files(s.events)
    fatal = s.having("amdgpu-ip-init-failed", "amdgpu-smu-setup-failed", "amdgpu-fatal-init")
    version = kernel_series(s.kernel)
    # Optional firmware alone does not stop the GPU (rule_optional_firmware says so); beside an init failure
    # it may be why. A first choice with a fallback never is: the fallback's failure has a line of its own.
    files = needed_firmware(failed, version) or ([f for f in failed if does_without(f, version)] if fatal else [])
    files += [f for f in refused_files(s.events) if f not in files]
    if not files:
        return None
    package = _debian_12_firmware(s) or FIRMWARE_PACKAGE.get(s.distro, "your distribution's linux-firmware package")
    return Cause(
        "firmware-missing",
        E,
        f"amdgpu could not load firmware for {s.label}: {', '.join(files)} missing, so the GPU never reached KFD",
        f"install current GPU firmware, {package}; then regenerate the initramfs and reboot "
        "(firmware newer than your distribution's may be needed for a GPU newer than it)",
        _lines(s.having("firmware-load-failed", "amdgpu-ip-init-failed", "amdgpu-fatal-init")),
        "firmware missing",
    )


def _debian_12_firmware(s: _Seen) -> str | None:
    """Debian 12's firmware-amd-graphics lacks files its 6.1 module declares for some GPUs (Navi32,
    Phoenix2): plain apt install does not help there, bookworm-backports' package does."""
    if s.distro != "debian" or s.asic is None or not s.kernel.startswith("6.1."):
        return None
    from kfdguard.knowledge.firmware import advice
    from kfdguard.knowledge.formats import KnowledgeDataError

    try:
        return advice("6.1", s.asic)
    except KnowledgeDataError:  # a damaged install: keep the generic advice
        return None


def _signature(s: _Seen) -> Cause | None:
    ev = s.having("module-signature-rejected")
    return signature_rejected(ev) if ev else None


def _psp(s: _Seen) -> Cause | None:
    ev = s.having("amdgpu-psp-failed")
    if not ev:
        return None
    steps = ", ".join(sorted({e.value("step") or "?" for e in ev}))
    return Cause(
        "gpu-psp-init-failed",
        E,
        f"the PSP (the GPU's security processor) of {s.label} failed to start ({steps}), so amdgpu could not "
        "bring the GPU up and KFD never saw it; no firmware file is reported missing",
        "power the machine off completely (a warm reboot or a VM can leave the PSP dirty); on multi-GPU boards "
        "check the XGMI/Infinity Fabric bridges and risers by booting without them; update the system "
        "firmware and linux-firmware; if it persists, report it with the whole kernel log",
        _lines(ev),
        "PSP init failed",
    )


def _init_failed(s: _Seen) -> Cause | None:
    # "Failed to setup smc hw!" is the SMU's own line for the same failure, kept where a paste cut the next one.
    ev = s.having("amdgpu-ip-init-failed", "amdgpu-smu-setup-failed", "amdgpu-fatal-init", "amdgpu-probe-failed")
    if not ev:
        return None
    return Cause(
        "gpu-init-failed",
        E,
        f"amdgpu failed to initialise {s.label}, so KFD never saw it",
        "a GPU newer than the kernel's amdgpu fails like this: use a newer kernel (or the matching "
        "amdgpu-dkms); otherwise report the kernel log",
        _lines(ev),
        "amdgpu init failed",
    )


# Most specific first: the first that applies is the cause.
_GPU_CAUSES = (
    _atomics,
    _iommu,
    _unknown_device,
    _ip_unknown,
    _unsupported,
    _si_declined,
    _device_failed,
    _firmware,
    _signature,
    _psp,
    _init_failed,
)


def gpu_cause(label: str, asic: Asic | None, events: list[LogEvent], kernel: str, distro: str) -> Cause | None:
    """Why KFD has no node for this GPU, according to the log (most specific first)."""
    seen = _Seen(label, asic, events, kernel, distro)
    for cause_of in _GPU_CAUSES:
        cause = cause_of(seen)
        if cause is not None:
            return cause
    return None


def _never(label: str, asic: Asic | None, events: list[LogEvent]) -> Cause:
    family = f" ({asic.family}, {asic.generation})" if asic else ""
    return Cause(
        "asic-not-supported",
        E,
        f"KFD does not support {label}{family} in any kernel: no ROCm compute on this GPU",
        "use another GPU for compute; OpenCL through Mesa (rusticl) may still work on it",
        _lines(events),
        "never supported by KFD",
    )


def signature_rejected(events: list[LogEvent]) -> Cause:
    return Cause(
        "module-signature-rejected",
        E,
        "the kernel refused an unsigned or untrusted module (Secure Boot / lockdown): usually an amdgpu-dkms build",
        "enroll the DKMS signing key and reboot to confirm it in the MOK manager: "
        "sudo mokutil --import /var/lib/dkms/mok.pub; or use the distribution's signed in-tree amdgpu",
        _lines(events),
        "module rejected (Secure Boot)",
    )


def runtime_causes(events: list[LogEvent], label_of: dict[str | None, str]) -> list[Cause]:
    """GPU hangs and lost devices, one cause per boot and device."""
    causes = []
    groups: dict[tuple[int, str | None, str], list[LogEvent]] = {}
    runtime = [e for e in events if e.klass == "runtime" and e.code]
    slots = {e.device for e in runtime if e.device and e.device != "kfd"}
    # A message without a device prefix ("amdgpu: Failed to suspend process") belongs
    # to the only GPU that is hanging, when there is only one.
    only = next(iter(slots)) if len(slots) == 1 else None
    for e in runtime:
        device = e.device if e.device and e.device != "kfd" else only
        groups.setdefault((e.boot, device, e.code or ""), []).append(e)
    for (boot, device, code), group in sorted(groups.items(), key=lambda i: (-i[0][0], str(i[0][1]), i[0][2])):
        when = "in this boot" if boot == 0 else "in the previous boot" if boot == -1 else f"{-boot} boots ago"
        label = label_of.get(device, device or "the GPU")
        if code == "device-lost":
            causes.append(
                Cause(
                    "device-lost",
                    E if boot == 0 else W,
                    f"{label} dropped off the PCIe bus {when}",
                    "check power delivery and the PCIe link (riser, cable, slot); if it follows suspend, try "
                    "amdgpu.runpm=0; reboot to recover",
                    _lines(group),
                    "GPU lost" if boot == 0 else None,
                )
            )
            continue
        mes = any(e.rule == "mes-hang" for e in group)
        resets = sum(1 for e in group if e.rule == "gpu-reset" and "begin" in e.text)
        what = "the MES firmware stopped answering" if mes else "the GPU's scheduler hung"
        causes.append(
            Cause(
                "gpu-hang",
                W,
                f"{label}: {what} {when}"
                + (f" ({resets} GPU reset{'s' if resets != 1 else ''})" if resets else "")
                + "; compute jobs running then were lost",
                "update linux-firmware (MES and MEC firmware fix many hangs) and the kernel; if it recurs with one "
                "program, report it to ROCm with this log",
                _lines(group),
                None,
            )
        )
    return causes
