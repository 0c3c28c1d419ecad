"""The rule set over observations: what they establish, what is wrong, what stays unknown.

Every source goes through these rules: a pasted text (``evidence.text``) and a
live machine (``evidence.machine``, from the probe's Facts) yield the same
observation records. A rule reads only observations; when the kind it needs
is absent, it concludes nothing, and ``rule_unknown`` says which command would
show it. The rules run in the order a person reasons, from the hardware up.
"""

from __future__ import annotations

from kfdguard import knowledge
from kfdguard.assess import remedies
from kfdguard.assess.explain import (
    ANONYMOUS_GPU_EVENTS,
    firmware_files,
    gpu_cause,
    optional_firmware,
    refused_files,
    runtime_causes,
)
from kfdguard.assess.order import root_cause_first
from kfdguard.assess.reasoning import Identified, Reasoning, label
from kfdguard.evidence.model import Observations, SeenGpu
from kfdguard.facts import LogEvent
from kfdguard.knowledge.params import BOGUS
from kfdguard.parsers.modprobe import option_pairs, softdep_modules
from kfdguard.record import replace
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.assess.context import Context

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741
# A failure without a PCI id may also be one of these, which a paste often
# shows without the line that named the device.
ANONYMOUS_FAILURES = ANONYMOUS_GPU_EVENTS | {
    "amdgpu-fatal-init",
    "firmware-load-failed",
    "module-signature-rejected",
    "amdgpu-si-declined",
}
# Findings that already say why the (only) GPU has no KFD node.
_GPU_EXPLAINED = frozenset(
    {
        "kernel-too-old",
        "asic-not-supported",
        "iommu-required",
        "firmware-missing",
        "gpu-init-failed",
        "module-signature-rejected",
        "kfd-device-failed",
        "gpu-psp-init-failed",
    }
)


def events_for(gpu: SeenGpu, events: list[LogEvent]) -> list[LogEvent]:
    return [
        e
        for e in events
        if (e.ids and e.ids[1] == gpu.device)
        or (gpu.slot and e.device == gpu.slot)
        or (gpu.slot and e.value("slot") == gpu.slot)
    ]


# --- the rules --------------------------------------------------------------------------------------------


def _shown(obs: Observations) -> list[str]:
    """Facts a paste shows about nodes, groups, rocminfo and the kernel config, as sentences."""
    shown_list: list[str] = []
    for path, node in sorted(obs.nodes.items()):
        shown = f"{node.mode} {node.owner}:{node.group}" if node.mode else "does not exist"
        shown_list.append(f"{path}: {shown}")
    if obs.user is not None:
        shown_list.append(f"{obs.user.user or 'the user'} is in groups: {' '.join(obs.user.groups)}")
    for user, group, _ in obs.member_of:
        shown_list.append(f"rocminfo: {user} is a member of {group}")
    module = obs.value("rock-module")
    if module:
        shown_list.append(f"rocminfo: the ROCk (KFD) module is {module}")
    if obs.agents:
        shown_list.append(f"GPU agents: {', '.join(a.gfx for a in obs.agents)}")
    hsa = obs.kconfig.get("CONFIG_HSA_AMD")
    if hsa and hsa[0]:
        shown_list.append(f"CONFIG_HSA_AMD={hsa[0]}")
    return shown_list


def rule_established(r: Reasoning) -> None:
    obs = r.obs
    release = obs.first("kernel-release")
    if release:
        r.established.append(f"kernel {release.value} (from {release.source.what})")
    r.events = [e for e in obs.events if e.boot == 0]
    added = {e.ids[1] for e in r.events if e.rule == "kfd-added-device" and e.ids}
    r.added = added | {a.device for a in obs.agents if a.device is not None}
    by_slot = {g.facts.slot: g for g in r.machine.gpus} if r.machine is not None else {}
    agent_slots = {a.slot for a in obs.agents if a.slot}
    for gpu in obs.gpus:
        if gpu.vendor != 0x1002:
            continue
        asic, name = knowledge.identify(gpu.device, gpu.revision)
        mine = by_slot.get(gpu.slot or "")
        # A machine's topology names each GPU's slot; a paste's log lines only its PCI id.
        has_node = mine.node is not None if mine is not None else gpu.device in r.added or gpu.slot in agent_slots
        r.amd.append(Identified(gpu, asic, name, mine, has_node))
        what = asic.family if asic else "not in kfdguard's tables"
        if asic and asic.gfx:
            what = f"{asic.family}, {asic.gfx}"
        r.established.append(f"GPU {label(gpu, asic, name)}: {what}")
    r.established += _shown(obs)
    success = [e for e in r.events if e.klass == "success"]
    neutral = [e for e in r.events if e.rule in ("kfd-cpu-node", "kfd-crat-missing")]
    if neutral and not success and not obs.agents:
        r.established.append(
            "KFD initialised at module load (CPU node lines); these lines come before any GPU is probed and "
            "do not show whether a GPU was added"
        )


def rule_kfd_built(r: Reasoning) -> None:
    """CONFIG_HSA_AMD: without it there is no KFD at all."""
    if r.machine is not None and not r.machine.gpus:
        return
    config = r.obs.kconfig
    hsa, source = config.get("CONFIG_HSA_AMD", ("", None))
    evidence: list[str] = []
    if hsa == "n":
        evidence.append(f"{source.what if source else 'kernel config'}: # CONFIG_HSA_AMD is not set")
    elif not hsa and "CONFIG_DRM_AMDGPU" in config and len(config) > 20:
        # A whole config always shows a visible option, set or "is not set"; HSA_AMD depends on DRM_AMDGPU.
        evidence.append(f"{source.what if source else 'kernel config'}: CONFIG_HSA_AMD absent")
    elif not hsa and r.machine is not None:
        from kfdguard.assess.checks import kfd_params_absent

        evidence += kfd_params_absent(r.machine)
    if not evidence:
        return
    release = r.release or "(unknown)"
    r.findings.append(
        Finding(
            "kfd-not-built",
            E,
            f"kernel {release} was built without CONFIG_HSA_AMD: amdgpu has no KFD, there is no /dev/kfd",
            remedies.kernel_with_kfd(r.distro),
            tuple(evidence),
        )
    )
    for t in r.amd:
        t.block("kernel built without KFD", "kfd-not-built")


# Symbols amdgpu takes from another module of the same kernel: unknown, they mean that module is not
# installed, not that amdgpu was built for another kernel. amd_iommu_v2 (drivers/iommu/amd/iommu_v2.c,
# CONFIG_AMD_IOMMU_V2=m until 6.6) exports amd_iommu_bind_pasid, amd_iommu_free_device, ...; Ubuntu
# ships it in linux-modules-extra-<release>.
PROVIDED_BY = (("amd_iommu_", "amd_iommu_v2"),)


def _provider(symbols: list[str]) -> str | None:
    found = {module for s in symbols for prefix, module in PROVIDED_BY if s.startswith(prefix)}
    every = all(any(s.startswith(prefix) for prefix, _ in PROVIDED_BY) for s in symbols)
    return found.pop() if every and len(found) == 1 else None


def _dependency_missing(r: Reasoning, module: str, lines: list[LogEvent], loaded: bool) -> None:
    r.findings.append(
        Finding(
            "module-dependency-missing",
            W if loaded else E,
            f"{lines[0].driver} needs symbols from {module}, which is not installed for this kernel"
            + ("" if loaded else ": amdgpu did not load"),
            f"install the package with {module}.ko for the running kernel (Ubuntu: sudo apt install "
            "linux-modules-extra-$(uname -r)); then sudo modprobe amdgpu or reboot",
            tuple(e.text for e in lines[:3]),
        )
    )


def rule_module_mismatch(r: Reasoning) -> None:
    """The kernel refuses amdgpu for symbols it does not have: built for another kernel, or a dependency missing."""
    lines = [e for e in r.events if e.rule == "module-unknown-symbol" and e.driver in ("amdgpu", "amdkfd")]
    if not lines:
        return
    symbols = sorted({e.value("symbol") or e.value("symbol2") or "?" for e in lines})
    pending = [t for t in r.amd if not t.has_node]
    loaded = r.machine.facts.amdgpu.loaded if r.machine is not None else bool(r.amd) and not pending
    provider = _provider(symbols)
    shown = ", ".join(symbols[:3]) + (f" and {len(symbols) - 3} more" if len(symbols) > 3 else "")
    if provider is not None:
        _dependency_missing(r, provider, lines, loaded)
    else:
        _built_for_another_kernel(r, shown, lines, loaded)
    if not loaded:
        code = "module-dependency-missing" if provider else "module-symbol-mismatch"
        for t in pending:
            t.block("amdgpu cannot load", code)


def _built_for_another_kernel(r: Reasoning, shown: str, lines: list[LogEvent], loaded: bool) -> None:
    r.findings.append(
        Finding(
            "module-symbol-mismatch",
            W if loaded else E,
            f"the kernel refused an {lines[0].driver} module built for another kernel (unknown symbols: {shown})"
            + ("; an amdgpu that matches was loaded after it" if loaded else ": amdgpu did not load"),
            "an out-of-tree build (amdgpu-dkms) that does not match the running kernel: rebuild it for this "
            "kernel (sudo dkms autoinstall -k $(uname -r)) or remove amdgpu-dkms to use the kernel's own "
            "amdgpu; then regenerate the initramfs and reboot",
            tuple(e.text for e in lines[:3]),
        )
    )


def _events_of(t: Identified, failing: list[LogEvent], alone: bool) -> list[LogEvent]:
    mine = events_for(t.gpu, failing)
    taken = {id(e) for e in mine}  # identity: comparing records field by field is quadratic on a long log
    for e in failing:
        if id(e) in taken:
            continue
        named = (e.value("asic") or "").lower()
        anonymous = e.rule in ANONYMOUS_FAILURES and e.device in (None, "kfd")
        if (alone and anonymous) or (e.rule == "kfd-asic-unsupported" and t.asic and named == t.asic.key):
            # KFD's messages without a PCI id belong to the GPU it was probing.
            mine.append(e)
    return mine


def rule_log_causes(r: Reasoning) -> None:
    """Why KFD has no node for each GPU, from the log lines about it."""
    failing = [e for e in r.events if e.klass == "failure"]
    explained: set[int] = set()
    pending = [t for t in r.amd if not t.has_node and not t.stopped]
    for t in pending:
        mine = _events_of(t, failing, len(pending) == 1)
        cause = gpu_cause(t.label, t.asic, mine, r.release, r.distro)
        if cause is not None and cause.code == "kernel-too-old":
            cause = replace(cause, remedy=r.newer_kernel(t.asic.kfd_since if t.asic else None))
        if cause is not None:
            r.apply(cause, t)
            explained.update(id(e) for e in mine)
    if r.machine is not None or r.has(*_GPU_EXPLAINED):
        return
    # A paste often shows KFD's complaint without the line that named the GPU.
    leftover = [e for e in failing if id(e) not in explained and e.rule in ANONYMOUS_FAILURES]
    asic = None
    for e in leftover:
        named = (e.value("asic") or "").lower()
        asic = asic or (knowledge.asic(named) if named else None)
    cause = gpu_cause(label(None, asic, None), asic, leftover, r.release, r.distro) if leftover else None
    if cause is not None:
        r.add(cause)


def rule_same_id_skipped(r: Reasoning) -> None:
    """Several GPUs with one PCI id: KFD's old messages carry no slot, so count its lines per id.

    "added device 1002:67df" once and "skipped device 1002:67df, PCI rejects atomics" four times are
    five GPUs, one working; keyed by id alone they read as one working GPU.
    """
    if r.machine is not None:
        return
    added: dict[int, int] = {}
    skipped: dict[int, list[LogEvent]] = {}
    for e in r.events:
        # The rule first: a long log's other events (a ring timeout a thousand times) name no id to parse.
        if e.rule in ("kfd-added-device", "kfd-pcie-atomics") and e.device in (None, "kfd") and e.ids:
            if e.rule == "kfd-added-device":
                added[e.ids[1]] = added.get(e.ids[1], 0) + 1
            else:
                skipped.setdefault(e.ids[1], []).append(e)
    for device, lines in skipped.items():
        if not added.get(device) or r.has("pcie-atomics"):
            continue
        target = next((t for t in r.amd if t.gpu.device == device), None)
        name = target.label if target else f"1002:{device:04x}"
        listed = r.obs.smi_gpus or len([g for g in r.obs.gpus if g.vendor == 0x1002 and g.device == device])
        evidence = [e.text for e in lines[:2]]
        if listed > added[device]:
            evidence.append(f"the text lists {listed} GPUs; KFD added {added[device]}")
        r.findings.append(
            Finding(
                "pcie-atomics",
                E,
                f"KFD added {added[device]} GPU(s) with id {name} and skipped {len(lines)} with the same id: "
                "their PCIe path does not pass AtomicOps, so ROCm sees only the first",
                "put each card in a CPU-attached PCIe 3.0+ slot (chipset slots, risers, PCIe switches and old "
                "platforms may not pass atomics); 'sudo lspci -vvv | grep -i atomic' shows each port's support",
                tuple(evidence),
            )
        )


def rule_optional_firmware(r: Reasoning) -> None:
    """Optional firmware that failed to load (PSP trusted applications; files the kernel's own sources go
    on without, knowledge/fallbacks.py): worth knowing, not why compute fails."""
    from kfdguard.knowledge.fallbacks import goes_without

    if r.has("firmware-missing"):
        return
    failed = [e for e in r.events if e.rule in ("firmware-load-failed", "firmware-load-logged")]
    refused = refused_files(failed)
    names = [f for f in firmware_files(failed) if f not in refused]
    _fallen_back(r, failed, names)
    version = r.version
    psp = [f for f in names if optional_firmware(f)]
    read = {f: why for f in names if f not in psp and (why := goes_without(f, version)) is not None}
    dmub = [e for e in r.events if e.rule == "amdgpu-dmub-firmware-failed"]
    if not psp and not read and not dmub:
        return
    parts = (
        [f"{', '.join(psp)} (PSP trusted applications: content protection, display and RAS features)"] if psp else []
    )
    parts += [f"{f} ({why})" for f, why in read.items()]
    if dmub and not any(f.endswith("_dmcub.bin") for f in read):
        # amdgpu_dm's line names no file; the series read print it only where the failure is tolerated (5.10,
        # 6.1: dm_dmub_sw_init returns 0), tests/unit/knowledge/test_firmware_requests.py holds that.
        parts.append(
            f"for the display microcontroller, DMCUB (error {dmub[0].value('err')}; amdgpu_dm prints 'DMUB firmware "
            "loading failed' only where it goes on without the file)"
        )
    files = [*psp, *read]
    evidence = tuple(e.text for e in failed if any(f in e.text for f in files))[:2] + tuple(e.text for e in dmub)[:1]
    r.findings.append(
        Finding(
            "firmware-optional-missing",
            I,
            f"amdgpu could not load optional firmware {'; '.join(parts)}; the GPU works without it and KFD "
            "does not need it",
            "nothing to do for compute; installing current linux-firmware adds it",
            evidence,
        )
    )


def _fallen_back(r: Reasoning, failed: list[LogEvent], names: list[str]) -> None:
    """A first-choice file amdgpu falls back from (knowledge/fallbacks.py): worth a line, no more. ``names``:
    the files of the ``failed`` lines (firmware_files)."""
    from kfdguard.knowledge.fallbacks import fallback_of

    for name in names:
        fallback = fallback_of(name, r.version)
        if fallback is None:
            continue
        also = fallback in names
        r.findings.append(
            Finding(
                "firmware-fallback",
                I,
                f"amdgpu asked for {name} first and "
                + (f"its fallback {fallback} failed too" if also else f"loaded {fallback} instead")
                + "; this alone does not stop the GPU",
                "" if also else "nothing to do; a newer linux-firmware package has the first choice too",
                tuple(e.text for e in failed if name in e.text)[:1]
                + tuple(e.text for e in r.events if e.rule == "amdgpu-firmware-fallback")[:1],
            )
        )


def rule_kernel_support(r: Reasoning) -> None:
    """The kernel release against each GPU's first KFD release (and GPUs KFD never supports)."""
    version = r.version
    if r.machine is None and r.has("kernel-too-old", "asic-not-supported"):
        return  # a paste's anonymous log cause already said it
    for t in r.amd:
        asic = t.asic
        if asic is None or t.has_node or t.stopped:
            continue
        family = f"{asic.family}, {asic.generation}"
        if asic.kfd_since is None:
            r.findings.append(
                Finding(
                    "asic-not-supported",
                    E,
                    f"{t.label} ({family}) is not supported by KFD in any kernel: it cannot run ROCm compute",
                    "use another GPU for compute (OpenCL through Mesa's rusticl may still work for this card)",
                    (f"{asic.family} ({asic.generation}) has no KFD support", f"sources: {asic.source}"),
                    t.gpu.slot,
                )
            )
            t.block("never supported by KFD", "asic-not-supported")
        elif version is not None and version < asic.kfd_since and not _computes_as_root(r):
            need = f"{asic.kfd_since[0]}.{asic.kfd_since[1]}"
            hedge = " (first release inferred, may be off by one)" if asic.kfd_since_uncertain else ""
            r.findings.append(
                Finding(
                    "kernel-too-old",
                    E,
                    f"kernel {r.release} is too old for {t.label} ({asic.family}): "
                    f"KFD supports {asic.gfx} from Linux {need}{hedge}",
                    r.newer_kernel(asic.kfd_since),
                    (f"kernel {r.release}", f"{asic.family}: KFD since {need}", f"sources: {asic.source}"),
                    t.gpu.slot,
                )
            )
            t.block(f"kernel older than {need}", "kernel-too-old")


def _computes_as_root(r: Reasoning) -> bool:
    """A text that says the program works as root shows KFD working on that kernel (ROCm's own driver, or a kernel
    newer than its release says): its release cannot make the GPU's KFD too old. Asked only where a GPU's KFD
    release is above the kernel's, and never of a machine, whose KFD answers for itself; app_rules is imported
    here, off the boot path."""
    if r.machine is not None:
        return False
    from kfdguard.assess.app_rules import computes_as_root

    return computes_as_root(r)


def rule_kfd_init_failed(r: Reasoning) -> None:
    """KFD refused to start (an invalid option): on a machine its sysfs says so, in a paste the log."""
    if r.machine is not None:
        from kfdguard.assess.checks import check_kfd_up

        check_kfd_up(r.machine)
        return
    rules = {e.rule for e in r.events}
    if not rules & {"kfd-sched-policy-invalid", "kfd-queues-invalid"}:
        return
    lines = tuple(e.text for e in r.events if e.rule in ("kfd-sched-policy-invalid", "kfd-queues-invalid"))
    option = "max_num_of_queues_per_device (1..4096)"
    if "kfd-sched-policy-invalid" in rules:
        option = "sched_policy (valid: 0, 1, 2)"
    r.findings.append(
        Finding(
            "kfd-init-failed",
            E,
            f"KFD failed to initialise because of an invalid amdgpu option {option}: there is no /dev/kfd "
            "and no topology, while the display still works",
            "find the option (grep -r sched_policy /etc/modprobe.d; cat /proc/cmdline), fix or delete it, "
            "regenerate the initramfs if amdgpu is in it, and reboot",
            lines[:2],
        )
    )
    for t in r.amd:
        t.block("KFD failed to initialise", "kfd-init-failed")


def rule_ready(r: Reasoning) -> None:
    """What a paste shows KFD added; a machine's readiness is decided by assess from the node and ioctl."""
    if r.machine is not None:
        return
    success = [e for e in r.events if e.klass == "success"]
    for t in r.amd:
        if not t.has_node:
            continue
        gfx = f", {t.asic.gfx}" if t.asic and t.asic.gfx else ""
        evidence = tuple(e.text for e in success if e.ids and e.ids[1] == t.gpu.device)[:2]
        agents = [a for a in r.obs.agents if a.device == t.gpu.device]
        evidence += tuple(f"{a.source}: GPU agent {a.gfx}" for a in agents[:1])
        r.findings.append(Finding("kfd-ready", I, f"KFD added {t.label}{gfx}", "", evidence, t.gpu.slot))


def rule_gpu_nodes(r: Reasoning) -> None:
    """KFD is up: is each GPU in its topology? A machine's sysfs says; a paste's rocminfo agent list."""
    if r.machine is not None:
        from kfdguard.assess.checks import check_gpu_nodes

        check_gpu_nodes(r.machine)
        return
    listed = r.obs.first("rocminfo-agents")
    if listed is None or r.obs.agents:
        return
    if r.obs.first("rocminfo-done") is None:
        # A rocminfo cut before its "*** Done ***" (half of it pasted) may hold a GPU agent further down.
        r.unknown.append(
            "whether rocminfo lists a GPU agent: the pasted output stops before its last line ('*** Done ***'); "
            "paste all of 'rocminfo'"
        )
        return
    r.findings.append(
        Finding(
            "kfd-no-gpu-node",
            E,
            "rocminfo lists no GPU agent, only the CPU: KFD has no GPU node for any GPU "
            "(or ROCm skipped it because /dev/dri/renderD* cannot be opened)",
            "see the other findings for the cause; 'sudo dmesg | grep -i kfd' shows KFD's own reason, "
            "'ls -l /dev/dri' the render nodes' permissions",
            (f"{listed.source}: HSA Agents without a GPU agent",),
        )
    )


def rule_gpus_present(r: Reasoning) -> None:
    if r.machine is not None:
        from kfdguard.assess.checks import check_gpus_present

        check_gpus_present(r.machine)
        return
    others = [g for g in r.obs.gpus if g.vendor != 0x1002]
    if "lspci" in r.obs.kinds and not r.amd:
        evidence = [f"{g.source}: {g.vendor:04x}:{g.device:04x} {g.name or ''}".rstrip() for g in others]
        r.findings.append(
            Finding(
                "no-amd-gpu",
                I,
                "lspci shows no AMD GPU" + (f" (other GPUs: {len(others)})" if others else ""),
                "",
                tuple(evidence) or ("lspci: no display-class device with vendor 1002",),
            )
        )


def rule_runtime(r: Reasoning) -> None:
    labels: dict[str | None, str] = {t.gpu.slot: t.label for t in r.amd if t.gpu.slot}
    for cause in runtime_causes(list(r.obs.events), labels):
        target = next((t for t in r.amd if t.gpu.slot and t.gpu.slot in cause.message), None)
        r.apply(cause, target)


def _param_from_log(r: Reasoning, e: LogEvent) -> None:
    param = e.value("param") or "?"
    if any(f"'{param}'" in f.message for f in r.findings if f.code == "module-param-unknown"):
        return  # the configuration line that sets it was already named
    truth = f": {BOGUS[param].truth}" if param in BOGUS else ""
    r.findings.append(
        Finding(
            "module-param-unknown",
            W,
            f"{e.value('module')} was given option '{param}', which it does not declare: the kernel ignored it{truth}",
            "find it in /etc/modprobe.d, the kernel command line (/proc/cmdline) or the initramfs, and delete it",
            (e.text,),
        )
    )


def rule_log_misc(r: Reasoning) -> None:
    """Configuration mistakes the log shows: ignored options, a missing udev group, modules-load of amdkfd."""
    for e in r.events:
        if e.rule == "parse-args-ignored":
            _param_from_log(r, e)
        elif e.rule == "udev-group-unknown":
            group = e.value("group") or e.value("group2") or "?"
            r.findings.append(
                Finding(
                    "device-permissions",
                    E if group == r.group else W,
                    f"udev could not use group '{group}', so the nodes it should own stay root-only",
                    f"create the group (sudo groupadd --system {group}) or, with systemd 258+, make it a system "
                    "group; then: sudo udevadm trigger --action=add",
                    (e.text,),
                )
            )
        elif e.rule == "modules-load-missing" and e.value("module") == "amdkfd":
            if any(e.text in f.evidence for f in r.findings):
                continue  # the modules-load.d line was named with this log line as evidence
            r.findings.append(
                Finding(
                    "softdep-missing-module",
                    W,
                    "systemd-modules-load is told to load amdkfd, which does not exist on Linux 4.20+ "
                    "(KFD is in amdgpu)",
                    "delete amdkfd from /etc/modules and /etc/modules-load.d/*.conf",
                    (e.text,),
                )
            )
    mismatch = [e for e in r.events if e.rule == "kfd-ip-mismatch"]
    if mismatch:
        r.findings.append(
            Finding(
                "kfd-ip-mismatch",
                W,
                "KFD fell back to defaults for IP blocks it does not know: the kernel is "
                "older than this GPU and compute may misbehave",
                "use a newer kernel",
                tuple(e.text for e in mismatch[:2]),
            )
        )


def _modprobe_paste(r: Reasoning) -> None:
    version = r.version
    merged = version is None or version >= (4, 20)
    where = "on Linux 4.20 and later" if version is None else f"on kernel {r.release}"
    for d in r.obs.modprobe:
        names_kfd = d.module == "amdkfd" or (d.kind == "softdep" and "amdkfd" in sum(softdep_modules(d), ()))
        if names_kfd and merged:
            r.findings.append(
                Finding(
                    "softdep-missing-module",
                    W,
                    f"'{d.text}' names amdkfd, which does not exist {where} "
                    "(KFD is built into amdgpu): the line does nothing useful",
                    "delete the line",
                    (d.text,),
                )
            )
        if d.kind != "options" or d.module not in ("amdkfd", "amdgpu"):
            continue
        for name, _value in option_pairs(d):
            if name in BOGUS:
                r.findings.append(
                    Finding(
                        "module-param-unknown",
                        W,
                        f"'{name}' is not a parameter of amdkfd or amdgpu in any version: {BOGUS[name].truth}",
                        "delete it",
                        (d.text,),
                    )
                )


def rule_modprobe(r: Reasoning) -> None:
    """modprobe.d lines that name amdkfd or options that do not exist."""
    if r.machine is None:
        _modprobe_paste(r)
        return
    from kfdguard.assess.checks import check_configured_params, check_modprobe_conf

    # On a machine the files, the kernel command line and the module's own declarations are known.
    check_modprobe_conf(r.machine)
    check_configured_params(r.machine)


def rule_claims(r: Reasoning) -> None:
    """Popular wrong advice the paste repeats (a machine has no prose: the boot pass skips compiling these)."""
    if not r.obs.lines:
        return
    from kfdguard.assess.claims import CUES, WRONG_ADVICE, search_lines

    for (pattern, truth), cues in zip(WRONG_ADVICE, CUES, strict=True):
        # Every claim's match lies within one line that holds one of its cues (claims.CUES).
        m = search_lines(pattern, r.obs, *cues)
        if m:
            r.findings.append(
                Finding(
                    "wrong-advice",
                    W,
                    f"the text repeats a popular claim that is wrong: {truth}",
                    "do not act on that advice",
                    (m.group(0)[:160],),
                )
            )


def _carried_by_releases_shown(r: Reasoning, targets: set[str]) -> set[str]:
    """Of these targets, those whose code the ROCm releases a text shows carry (assess/versions). Imported here, for
    texts only: the versions module compiles the message formats, which the boot pass does without (text_only says
    why)."""
    from kfdguard.assess.versions import carried_in, rocm_versions_shown

    shown = rocm_versions_shown(r)
    return {gfx for gfx in targets if shown and carried_in(gfx, shown)}


def rule_userspace(r: Reasoning) -> None:
    software = r.machine.facts.software if r.machine is not None else None
    if r.machine is not None and software is not None:
        # What is installed, read from its files (kfdguard/userspace/assess.py), replaces the static list below.
        from kfdguard.userspace.assess import assess_installed

        r.findings.extend(assess_installed(r.machine.facts).findings)
        return
    targets = {t.asic.gfx for t in r.amd if t.asic is not None and t.asic.gfx and not t.asic.rocm_prebuilt}
    carried = _carried_by_releases_shown(r, targets) if r.machine is None and targets else set()
    seen = set()
    for t in r.amd:
        asic = t.asic
        if asic is None or asic.rocm_prebuilt or asic.gfx is None or asic.kfd_since is None:
            continue
        if (asic.gfx, t.gpu.slot) in seen or asic.gfx in carried:
            continue  # the ROCm release the text shows carries the target (gfx803 in ROCm 2.x), whatever today's
        seen.add((asic.gfx, t.gpu.slot))
        workaround = remedies.override_workaround(asic.gfx)
        r.findings.append(
            Finding(
                "userspace-target-unsupported",
                W,
                f"ROCm's prebuilt libraries have no code for {asic.gfx} ({t.label}): PyTorch-ROCm, rocBLAS and "
                "similar fail with 'invalid device function' or 'no kernel image'",
                f"use software built for {asic.gfx} (e.g. llama.cpp with -DAMDGPU_TARGETS={asic.gfx}, or "
                f"distribution packages that include it){workaround}",
                (f"{t.gpu.source}: {asic.gfx}", f"sources: {asic.source}"),
                t.gpu.slot,
                blocked_by=t.blocked_code,
            )
        )


def rule_coherent(r: Reasoning) -> None:
    """A GPU that KFD added reached KFD: no finding may say it never did (issue 34).

    Such a finding rests on evidence that is not the GPU's (a firmware line another driver printed, a
    knowledge table wrong about a release) or on a failure it got over; the GPU's own success wins. The
    finding is dropped and said with --verbose, so that the rule that lost is not lost from sight.
    """
    reached = [t for t in r.amd if t.has_node]
    if not reached:
        return
    every = all(t.has_node for t in r.amd)
    by_slot = {t.gpu.slot: t for t in reached if t.gpu.slot}
    kept: list[Finding] = []
    for f in r.findings:
        target = by_slot.get(f.gpu) if f.gpu else (reached[0] if every else None)
        if target is None or f.severity is not E or f.code not in _GPU_EXPLAINED:
            kept.append(f)
            continue
        r.overruled.append(f"{f.code} ({f.message}): overruled, KFD added {target.label}")
        if f.code == "module-signature-rejected":
            from kfdguard.assess.report_rules import signature_rejected_beside_kfd  # report_rules imports this module

            # the refusal stays true of the module refused (amdgpu-dkms), which is not the one KFD ran with
            kept.append(signature_rejected_beside_kfd(f))
    r.findings[:] = kept


def rule_unknown(r: Reasoning) -> None:
    """What a paste does not show, with the command that would (a machine shows all of it)."""
    obs = r.obs
    if r.machine is not None:
        return
    if not obs.release:
        r.unknown.append("the kernel version: paste the output of 'uname -r'")
    if not r.amd:
        r.unknown.append("which GPU this is: paste 'lspci -nn | grep -Ei \"vga|display|3d\"'")
    if "kernel-log" not in obs.kinds:
        r.unknown.append("what KFD said at boot: paste 'sudo dmesg | grep -Ei \"kfd|amdgpu\"'")
    elif not r.added and not any(f.severity is E for f in r.findings):
        r.unknown.append(
            "whether KFD added the GPU: the log shows no 'added device' line (paste the whole boot's "
            "'sudo dmesg | grep -Ei \"kfd|amdgpu\"')"
        )
    if obs.kfd is None and not obs.value("kfd-open-error"):
        r.unknown.append("the permissions of /dev/kfd: paste 'ls -l /dev/kfd /dev/dri'")
    if obs.user is None and not obs.member_of and not obs.not_member_of:
        r.unknown.append("your groups: paste the output of 'id'")


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    result = []
    for f in findings:
        if (f.code, f.message) not in seen:
            seen.add((f.code, f.message))
            result.append(f)
    return result


def text_only(name: str, module: str = "app_rules") -> Callable[[Reasoning], None]:
    """A rule of ``assess/app_rules.py`` (or ``assess/report_rules.py``, ``assess/stack_rules.py``): what
    userspace printed or people told, which only a text shows.

    Every one of them returns at once on a machine, and importing them compiles the message formats of
    ``knowledge/appformats.py`` (about a third of the enforce oneshot's CPU time, which the display
    manager waits for: benchmarks/bench_boot.py). So the module is imported when a text is reasoned
    about, not on the boot pass; the rule keeps its place in the one ordered list.
    """

    def rule(r: Reasoning) -> None:
        if r.machine is None:
            from kfdguard.assess import app_rules, report_rules, stack_rules  # app_rules imports report_rules anyway

            modules = {"report_rules": report_rules, "stack_rules": stack_rules}
            getattr(modules.get(module, app_rules), name)(r)

    rule.__name__ = name
    return rule


def _rules() -> tuple[Callable[[Reasoning], None], ...]:
    """Every rule in order, floor by floor: what a lower floor concludes comes first (assess/order.py)."""
    return (
        *_kernel_rules(),
        *_access_rules(),
        *_userspace_rules(),
        # what the text says of the whole, then the verdicts that weigh every finding
        rule_claims,
        rule_ready,
        text_only("rule_runtime_ready"),
        text_only("rule_quoted_kfd_added", "stack_rules"),
        text_only("rule_driver_tables"),
        rule_coherent,
        rule_unknown,
    )


def _kernel_rules() -> tuple[Callable[[Reasoning], None], ...]:
    """The machine, the kernel, its module and KFD."""
    from kfdguard.assess import checks

    return (
        rule_established,
        checks.machine_only(checks.check_config),
        checks.machine_only(checks.check_problems),
        rule_gpus_present,
        text_only("rule_nvidia_only"),
        text_only("rule_no_amd_gpu_listed"),
        rule_kfd_built,
        checks.machine_only(checks.check_dkms),
        rule_module_mismatch,
        text_only("rule_module_built_elsewhere", "report_rules"),
        rule_log_causes,
        rule_same_id_skipped,
        rule_optional_firmware,
        rule_kernel_support,
        text_only("rule_dkms"),
        text_only("rule_prose_dkms"),
        text_only("rule_dkms_status_unbuilt", "report_rules"),
        text_only("rule_prose_dkms_kernel", "report_rules"),
        text_only("rule_prose_secure_boot", "report_rules"),
        text_only("rule_prose_gpu_hung", "report_rules"),
        checks.machine_only(checks.check_module_loaded),
        rule_kfd_init_failed,
        rule_gpu_nodes,
    )


def _access_rules() -> tuple[Callable[[Reasoning], None], ...]:
    """Who may open the nodes: hosts, containers, groups."""
    from kfdguard.assess.access_rules import rule_access

    return (
        rule_access,
        text_only("rule_prose_kfd_locked", "stack_rules"),
        text_only("rule_rock_not_loaded"),
        text_only("rule_host_without_kfd"),
        text_only("rule_wsl_runtime"),
        text_only("rule_wsl_gpu_unlisted"),
        text_only("rule_wsl_kfd_sought"),
        text_only("rule_foreign_host_kfd"),
        text_only("rule_prose_container_no_kfd", "report_rules"),
        text_only("rule_kfd_entry_told", "report_rules"),
        text_only("rule_kfd_path_wrong", "report_rules"),
        text_only("rule_container_run_without_kfd", "report_rules"),
        text_only("rule_container_render_nodes_missing", "stack_rules"),
        text_only("rule_quoted_init_failure", "report_rules"),
        text_only("rule_prose_kernel"),
        text_only("rule_prose_atomics"),
        text_only("rule_udev_rule_fix"),
        text_only("rule_prose_old_radeon"),
        text_only("rule_kfd_absent_with_amdgpu"),
        text_only("rule_group_missing"),
        text_only("rule_engine_drops_device_group"),
        text_only("rule_denied_by_groups"),
        text_only("rule_mac_denies_kfd", "stack_rules"),
        text_only("rule_keep_groups_told", "stack_rules"),
        text_only("rule_rootless_no_device", "stack_rules"),
        text_only("rule_prose_not_in_group"),
        text_only("rule_prose_group_fix", "stack_rules"),
        text_only("rule_tool_groups_missing"),
        text_only("rule_prose_node_group"),
        text_only("rule_container_without_render_group", "report_rules"),
        text_only("rule_rootful_works", "stack_rules"),
    )


def _userspace_rules() -> tuple[Callable[[Reasoning], None], ...]:
    """The runtime, the libraries and the programs' own settings."""
    return (
        rule_modprobe,
        rule_log_misc,
        rule_runtime,
        rule_userspace,
        text_only("rule_kfd_interface_old", "stack_rules"),
        text_only("rule_no_code_object"),
        text_only("rule_tensile_unreadable"),
        text_only("rule_override_removed", "report_rules"),
        text_only("rule_override_told_wrong", "report_rules"),
        text_only("rule_override_wrong"),
        text_only("rule_override_invalid", "report_rules"),
        text_only("rule_override_not_applied"),
        text_only("rule_override_unexported", "stack_rules"),
        text_only("rule_rocm_release_without_code"),
        text_only("rule_blas_fails_on_uncarried_target"),
        text_only("rule_prose_unsupported"),
        text_only("rule_device_package_missing"),
        text_only("rule_prose_incompatible_build"),
        text_only("rule_no_rocm_build", "stack_rules"),
        text_only("rule_library_missing", "stack_rules"),
        text_only("rule_library_path_told", "stack_rules"),
        text_only("rule_opencl_no_platform", "stack_rules"),
        text_only("rule_enumerated_target_unsupported", "report_rules"),
        text_only("rule_override_worked", "report_rules"),
        text_only("rule_build_target_worked", "report_rules"),
        text_only("rule_igpu_used", "report_rules"),
        text_only("rule_no_device"),
    )


def run(obs: Observations, machine: Context | None = None) -> Reasoning:
    """Every rule, in order; on a machine the findings land in its context too."""
    r = Reasoning(obs, machine)
    if machine is not None:
        r.findings = machine.findings  # one list: machine-only checks add to it through the context
    else:
        from kfdguard.assess.claims import index_lines

        # The rules' searches of a long paste share one index of its lines (and of their untimed forms),
        # for as long as they run.
        index_lines(obs.text, obs.lines, obs.distinct, obs.units, obs.unique or None)
    try:
        for rule in _rules():
            rule(r)
    finally:
        if machine is None:
            from kfdguard.assess.claims import forget_index

            forget_index(obs.text)
    return r


def reason(obs: Observations) -> tuple[list[str], tuple[Finding, ...], list[str], list[str]]:
    """Established facts, findings (root cause first), what stays unknown, and the findings overruled."""
    r = run(obs)
    return r.established, root_cause_first(_dedupe(r.findings)), r.unknown, r.overruled
