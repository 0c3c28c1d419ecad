"""The assessment's checks, in the order a person would reason.

Each check reads the Context, adds findings, and may mark GPUs as blocked
with the reason; later checks do not repeat what an earlier one explained.
"""

from __future__ import annotations

import errno

from kfdguard.assess import remedies
from kfdguard.assess.context import Context, Gpu
from kfdguard.assess.explain import ANONYMOUS_GPU_EVENTS, Cause, gpu_cause, runtime_causes, signature_rejected
from kfdguard.facts import LogEvent, ModprobeDirective
from kfdguard.knowledge.params import BOGUS, KFD_PARAMS, taints
from kfdguard.parsers.modprobe import option_pairs, softdep_modules
from kfdguard.record import replace
from kfdguard.verdict import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741


def _kv(version: tuple[int, int] | None) -> str:
    return "unknown" if version is None else f"{version[0]}.{version[1]}"


def _where(d: ModprobeDirective) -> str:
    return f"{d.file}:{d.line}: {d.text}"


def check_config(ctx: Context) -> None:
    for error in ctx.config_errors:
        ctx.add(
            "config-invalid",
            W,
            f"configuration not used: {error}",
            "fix the file (kfdguard keeps using the last good configuration or the defaults until then)",
            [str(error)],
        )


def check_problems(ctx: Context) -> None:
    for problem in ctx.facts.problems:
        ctx.add(
            "unreadable",
            W,
            f"could not read {problem.path}: {problem.reason}",
            "check the file; kfdguard treats what it could not read as unknown",
            [str(problem)],
        )


def check_gpus_present(ctx: Context) -> None:
    if ctx.gpus:
        return
    others = [f"{g.slot} {g.ids} driver={g.driver or 'none'}" for g in ctx.facts.gpus]
    message = "no AMD GPU on the PCI bus" + (f" (other GPUs: {len(others)})" if others else "")
    ctx.add("no-amd-gpu", I, message, "", others or ["no display-class PCI device with vendor 1002"])


def check_kernel_config(ctx: Context) -> None:
    """CONFIG_HSA_AMD: without it there is no KFD at all."""
    if not ctx.gpus:
        return
    facts = ctx.facts
    hsa = facts.kernel.symbol("CONFIG_HSA_AMD")
    amdgpu = facts.amdgpu
    evidence: list[str] = []
    missing = False
    if hsa == "n":
        missing = True
        evidence.append(f"{facts.kernel.config_source}: # CONFIG_HSA_AMD is not set")
    elif hsa is None and amdgpu.loaded and ctx.merged and "sched_policy" not in amdgpu.params:
        # The KFD parameters are declared inside #ifdef CONFIG_HSA_AMD.
        missing = True
        evidence.append("/sys/module/amdgpu/parameters has no sched_policy (KFD parameters absent)")
    elif hsa is None and amdgpu.declared is not None and ctx.merged and "sched_policy" not in amdgpu.declared:
        missing = True
        evidence.append(f"{amdgpu.file} declares no KFD parameters (sched_policy absent)")
    if not missing:
        return
    ctx.add(
        "kfd-not-built",
        E,
        f"kernel {facts.kernel.release} was built without CONFIG_HSA_AMD: amdgpu has no KFD, there is no /dev/kfd",
        remedies.kernel_with_kfd(ctx.distro),
        evidence,
    )
    for gpu in ctx.gpus:
        gpu.blocked = gpu.blocked or "kernel built without KFD"


def _supporting_kernels(ctx: Context, needed: tuple[int, int]) -> list[str]:
    from kfdguard.probe.system_info import parse_release

    result = []
    for release in ctx.facts.installed_kernels:
        v = parse_release(release)
        if v and (v[0], v[1]) >= needed and release != ctx.facts.kernel.release:
            result.append(release)
    return result


def _newer_kernel_remedy(ctx: Context, needed: tuple[int, int] | None) -> str:
    installed = _supporting_kernels(ctx, needed) if needed else []
    if installed:
        return (
            f"boot the installed kernel {installed[-1]} (GRUB: Advanced options), "
            "or let kfdguard arrange it: sudo kfdguard fallback apply"
        )
    if needed is None:
        return "install a newer kernel from your distribution"
    return remedies.newer_kernel(ctx.distro, ctx.facts.os.version_id, needed)


def check_kernel_support(ctx: Context) -> None:
    """Is the running kernel's KFD new enough for each ASIC (and does KFD support it at all)?"""
    version = ctx.version
    for gpu in ctx.gpus:
        if gpu.blocked or gpu.node is not None:
            continue
        asic = gpu.asic
        label = f"{gpu.name} ({gpu.facts.ids}, {asic.family if asic else 'unknown chip'})"
        if asic is None:
            continue
        if asic.kfd_since is None:
            ctx.add(
                "asic-not-supported",
                E,
                f"{label} is not supported by KFD in any kernel: it cannot run ROCm compute",
                "use another GPU for compute (OpenCL through Mesa's rusticl may still work for this card)",
                [f"{gpu.facts.slot}: {asic.family} ({asic.generation}) has no KFD support", f"sources: {asic.source}"],
                gpu.facts.slot,
            )
            gpu.blocked = "never supported by KFD"
            continue
        if version is not None and version < asic.kfd_since:
            hedge = " (first release inferred, may be off by one)" if asic.kfd_since_uncertain else ""
            remedy = _newer_kernel_remedy(ctx, asic.kfd_since)
            ctx.add(
                "kernel-too-old",
                E,
                f"kernel {ctx.facts.kernel.release} is too old for {label}: "
                f"KFD supports {asic.gfx} from Linux {_kv(asic.kfd_since)}{hedge}",
                remedy,
                [
                    f"running {ctx.facts.kernel.release}",
                    f"{asic.family}: KFD since {_kv(asic.kfd_since)}",
                    f"sources: {asic.source}",
                ],
                gpu.facts.slot,
            )
            gpu.blocked = f"kernel older than {_kv(asic.kfd_since)}"


def check_dkms(ctx: Context) -> None:
    release = ctx.facts.kernel.release
    for dkms in ctx.facts.dkms:
        if dkms.module != "amdgpu" or release in dkms.built_for or not dkms.built_for:
            continue
        working = [g for g in ctx.gpus if g.node is not None]
        severity = W if working else E
        failed = release in dkms.failed_for
        what = "failed to build" if failed else "is not built"
        evidence = [f"{dkms.path}: built for {', '.join(dkms.built_for)}"]
        if dkms.make_log:
            evidence.append(f"{dkms.make_log} ({'build for ' + release + ' failed' if failed else 'last build'})")
        consequence = (
            "the in-tree amdgpu is used instead" if working else "the in-tree amdgpu is used and cannot run the GPU"
        )
        ctx.add(
            "dkms-not-built",
            severity,
            f"amdgpu-dkms {dkms.version} {what} for the running kernel {release}: {consequence}",
            remedies.dkms_rebuild(dkms.module, dkms.version, release, dkms.make_log)
            + f" ({', '.join(dkms.built_for)}; sudo kfdguard fallback apply arranges that)",
            evidence,
        )
        for gpu in ctx.gpus:
            if gpu.node is None:
                gpu.blocked = gpu.blocked or "amdgpu-dkms missing for this kernel"


def events_for(ctx: Context, gpu: Gpu, candidates: int) -> list[LogEvent]:
    slot = gpu.facts.slot
    found = []
    for e in ctx.facts.log.events:
        if e.boot != 0 or e.klass not in ("failure",):
            continue
        ids = e.ids
        if (
            e.device == slot
            or e.value("slot") == slot
            or (ids is not None and ids[1] == gpu.facts.device)
            or (e.rule in ANONYMOUS_GPU_EVENTS and e.device in (None, "kfd") and candidates == 1)
            or (e.rule == "kfd-asic-unsupported" and gpu.asic and (e.value("asic") or "").lower() == gpu.asic.key)
        ):
            found.append(e)
    return found


def _apply(ctx: Context, cause: Cause, gpu: Gpu | None = None) -> None:
    ctx.add(cause.code, cause.severity, cause.message, cause.remedy, cause.evidence, gpu.facts.slot if gpu else None)
    if gpu is not None and cause.blocks:
        gpu.blocked = gpu.blocked or cause.blocks


def check_log_causes(ctx: Context) -> None:
    """What the kernel said about each GPU that has no KFD node."""
    if not ctx.facts.log.events:
        return
    pending = [g for g in ctx.gpus if g.node is None and not g.blocked]
    for gpu in pending:
        label = f"{gpu.name} ({gpu.facts.slot}{', ' + gpu.asic.gfx if gpu.asic and gpu.asic.gfx else ''})"
        cause = gpu_cause(label, gpu.asic, events_for(ctx, gpu, len(pending)), ctx.facts.kernel.release, ctx.distro)
        if cause is not None and cause.code == "kernel-too-old":
            needed = gpu.asic.kfd_since if gpu.asic else None
            cause = replace(cause, remedy=_newer_kernel_remedy(ctx, needed))
        if cause is not None:
            _apply(ctx, cause, gpu)


def check_runtime(ctx: Context) -> None:
    labels: dict[str | None, str] = {g.facts.slot: f"{g.name} ({g.facts.slot})" for g in ctx.gpus}
    for cause in runtime_causes(list(ctx.facts.log.events), labels):
        gpu = next((g for g in ctx.gpus if g.facts.slot in cause.message), None)
        _apply(ctx, cause, gpu)


def check_log_misc(ctx: Context) -> None:
    log = ctx.facts.log
    seen_params = {f.message for f in ctx.findings if f.code == "module-param-unknown"}
    for e in log.by_rule("parse-args-ignored"):
        param = e.value("param") or "?"
        if any(f"'{param}'" in m for m in seen_params):
            continue
        ctx.add(
            "module-param-unknown",
            W,
            f"{e.value('module')} was given option '{param}', which it does not declare: the kernel ignored it",
            "find it in /etc/modprobe.d, the kernel command line (/proc/cmdline) or the initramfs, and delete it",
            [e.text],
        )
    for e in log.by_rule("udev-group-unknown"):
        group = e.value("group") or e.value("group2") or "?"
        ctx.add(
            "device-permissions",
            E if group == ctx.group else W,
            f"udev could not use group '{group}', so the nodes it should own stay root-only",
            f"create the group (sudo groupadd --system {group}) or, with systemd 258+, make it a system "
            "group; then: sudo udevadm trigger --action=add",
            [e.text],
        )
    mismatch = log.by_rule("kfd-ip-mismatch")
    if mismatch:
        ctx.add(
            "kfd-ip-mismatch",
            W,
            "KFD fell back to defaults for IP blocks it does not know: the kernel is "
            "older than this GPU and compute may misbehave",
            "use a newer kernel",
            [e.text for e in mismatch[:2]],
        )


def check_module_loaded(ctx: Context) -> None:
    if not ctx.gpus:
        return
    amdgpu = ctx.facts.amdgpu
    if amdgpu.loaded:
        return
    pending = [g for g in ctx.gpus if not g.blocked]
    if not pending:
        return
    release = ctx.facts.kernel.release
    rejected = ctx.facts.log.by_rule("module-signature-rejected")
    if rejected:
        _apply(ctx, signature_rejected(rejected))
        for gpu in pending:
            gpu.blocked = "module rejected (Secure Boot)"
        return
    if not amdgpu.present:
        ctx.add(
            "module-not-loaded",
            E,
            f"amdgpu is not installed for kernel {release}",
            remedies.load_module("amdgpu", ctx.distro, release),
            [f"no amdgpu module in /lib/modules/{release} (modules.dep, modules.builtin)"],
        )
    else:
        why = []
        blacklist = list(ctx.facts.modprobe.for_module("amdgpu", "blacklist"))
        why += [f"blacklisted at {_where(d)}" for d in blacklist]
        if "amdgpu" in ctx.facts.modprobe.cmdline_blacklist:
            why.append("modprobe.blacklist=amdgpu on the kernel command line")
        for arg in ctx.facts.kernel.cmdline:
            if arg in ("nomodeset", "amdgpu.modeset=0"):
                why.append(f"{arg} on the kernel command line keeps amdgpu from initialising")
        ctx.add(
            "module-not-loaded",
            E,
            "amdgpu is not loaded" + (f" ({why[0]})" if why else ""),
            remedies.load_module("amdgpu", ctx.distro, release) + ("; remove the blacklist first" if blacklist else ""),
            [f"no /sys/module/amdgpu; module file {amdgpu.file or 'built in'}", *why],
        )
    for gpu in pending:
        gpu.blocked = "amdgpu not loaded"


def check_kfd_up(ctx: Context) -> None:
    """amdgpu is loaded: did KFD come up, and does its device node answer?"""
    facts = ctx.facts
    kfd = facts.kfd
    if not ctx.gpus or ctx.has("kfd-not-built"):
        return
    module = facts.amdgpu if ctx.merged else facts.amdkfd
    if not kfd.sysfs and not kfd.node.stat:
        if not module.loaded:
            return
        evidence = [f"{module.name} is loaded", "no /sys/class/kfd/kfd and no /dev/kfd"]
        evidence += [e.text for e in facts.log.by_rule("kfd-sched-policy-invalid", "kfd-queues-invalid")][:2]
        cause = ""
        still_configured = False
        for name, param in KFD_PARAMS.items():
            value = module.params.get(name)
            if param.breaks_kfd and value is not None and param.check(value):
                cause = f": {name}={value} is invalid ({param.check(value)})"
                evidence.append(f"{module.param_path(name)} = {value}")
                configured = [
                    v
                    for d in facts.modprobe.for_module(module.name, "options")
                    for p, v in option_pairs(d)
                    if p == name
                ]
                configured += [v for p, v in facts.modprobe.cmdline_options.get(module.name, {}).items() if p == name]
                still_configured = still_configured or any(param.check(v) for v in configured[-1:])
        if cause and not still_configured:
            remedy = (
                "the configuration no longer sets the bad value: reboot to bring KFD up "
                "(amdgpu is not reloaded while it drives the display)"
            )
        else:
            remedy = "fix the module option (see module-param-invalid), then reboot or reload the module"
        ctx.add(
            "kfd-init-failed",
            E,
            f"KFD failed to initialise when {module.name} loaded{cause}; the display works, compute does not",
            remedy,
            evidence,
        )
        for gpu in ctx.gpus:
            gpu.blocked = gpu.blocked or "KFD failed to initialise"
        return
    if kfd.sysfs and kfd.node.stat is None:
        ctx.add(
            "device-node-missing",
            E,
            "KFD is up (/sys/class/kfd/kfd exists) but /dev/kfd does not exist"
            + (f": {kfd.node.error}" if kfd.node.error else ""),
            "in a container pass --device=/dev/kfd --device=/dev/dri; on a host check that udev and "
            "devtmpfs are running (ls -l /dev/kfd; udevadm trigger --action=add --subsystem-match=kfd)",
            ["/sys/class/kfd/kfd exists", f"{kfd.node.path}: missing"],
        )
        for gpu in ctx.gpus:
            gpu.blocked = gpu.blocked or "/dev/kfd missing"
        return
    if kfd.node.stat is not None and kfd.version is None and kfd.version_errno == errno.EPERM and kfd.topology:
        # Root got EPERM on open: a device cgroup, not KFD. Under systemd that is
        # DeviceAllow=char-kfd resolved before amdgpu registered "kfd" in
        # /proc/devices; KFD answered through sysfs, which is what compute needs.
        ctx.add(
            "kfd-ioctl-denied",
            I,
            "kfdguard may not open /dev/kfd (EPERM from a device cgroup); KFD's state was read from sysfs",
            "nothing to do for compute; 'sudo systemctl restart kfdguard' lets kfdguard read the interface version "
            "(its device allow-list is fixed when it starts, and amdgpu loaded after that)",
            [f"AMDKFD_IOC_GET_VERSION: {kfd.version_error}", f"/sys/class/kfd/kfd/topology: {len(kfd.topology)} nodes"],
        )
    elif kfd.node.stat is not None and kfd.version is None:
        ctx.add(
            "kfd-ioctl-failed",
            E,
            f"/dev/kfd does not answer the version ioctl: {kfd.version_error}",
            "check dmesg for KFD errors; inside a systemd service, DeviceAllow= is resolved at start "
            "(restart the service after amdgpu loads)",
            [f"AMDKFD_IOC_GET_VERSION: {kfd.version_error}"],
        )
    elif kfd.version is not None and kfd.version[0] != 1:
        ctx.add(
            "kfd-ioctl-failed",
            E,
            f"/dev/kfd reports interface version {kfd.version[0]}.{kfd.version[1]}; "
            "kfdguard knows major version 1 only",
            "update kfdguard",
            [f"version {kfd.version}"],
        )


def check_gpu_nodes(ctx: Context) -> None:
    """Each GPU KFD should have: why is it missing from the topology?"""
    kfd = ctx.facts.kfd
    if not (kfd.sysfs or kfd.node.stat) or not ctx.gpus:
        return
    unexplained = []
    for gpu in ctx.gpus:
        if gpu.node is not None or gpu.blocked:
            continue
        asic = gpu.asic
        if gpu.facts.driver != "amdgpu":
            ctx.add(
                "gpu-init-failed",
                E,
                f"{gpu.name} ({gpu.facts.slot}) is not driven by amdgpu"
                + (f" (bound to {gpu.facts.driver})" if gpu.facts.driver else ": amdgpu did not initialise it"),
                "look at the kernel log for the cause: sudo dmesg | grep -i amdgpu (missing firmware is common: "
                "install linux-firmware / firmware-amd-graphics)",
                [f"{gpu.facts.slot}: driver {gpu.facts.driver or 'none'}"],
                gpu.facts.slot,
            )
            gpu.blocked = "amdgpu did not initialise it"
            continue
        if asic is not None and asic.needs_pcie_atomics:
            ctx.add(
                "pcie-atomics",
                E,
                f"{gpu.name} ({gpu.facts.slot}, {asic.gfx}) has no KFD node; this GPU needs PCIe atomics "
                "and the usual cause is a slot, riser or chipset path that does not pass them",
                "move the card to a CPU-attached PCIe 3.0+ slot (no riser/bridge without AtomicOps); "
                "dmesg shows 'PCI rejects atomics' when this is the cause",
                [f"{gpu.facts.slot}: driver amdgpu, no KFD topology node", f"{asic.family}: gfx8 needs PCIe AtomicOps"],
                gpu.facts.slot,
            )
            gpu.blocked = "PCIe atomics"
            continue
        unexplained.append(gpu)
    if not ctx.facts.kfd.gpu_nodes:
        names = ", ".join(g.name for g in ctx.gpus)
        ctx.add(
            "kfd-no-gpu-node",
            E,
            f"KFD is up but its topology has no GPU node (only the CPU): rocminfo shows no GPU agent for {names}",
            "see the other findings for the cause; 'sudo dmesg | grep -i kfd' shows KFD's own reason",
            [f"/sys/class/kfd/kfd/topology/nodes: {len(ctx.facts.kfd.topology)} node(s), none with gpu_id != 0"],
        )
    for gpu in unexplained:
        ctx.add(
            "kfd-no-gpu-node",
            E,
            f"{gpu.name} ({gpu.facts.slot}) is driven by amdgpu but has no KFD node",
            "check 'sudo dmesg | grep -i kfd' for the reason",
            [f"{gpu.facts.slot}: no topology node with location {gpu.facts.slot}"],
            gpu.facts.slot,
        )
        gpu.blocked = "no KFD node"


def check_permissions(ctx: Context) -> None:
    kfd = ctx.facts.kfd
    node = kfd.node.stat
    group = ctx.group
    mode = ctx.config.device.mode
    if ctx.group_gid is None and ctx.gpus:
        ctx.add(
            "device-permissions",
            E,
            f"the compute group '{group}' does not exist",
            f"sudo groupadd --system {group} (udev then assigns /dev/kfd to it), or set device.group in "
            "/etc/kfdguard/config.yaml to the group your distribution uses (render or video)",
            [f"/etc/group has no '{group}'"],
        )
    if node is not None and node.kind == "char":
        access = ctx.group_access(node)
        described = ctx.describe_node(kfd.node.path, node)
        expected = f"{mode:04o} root:{group}"
        if not access.allowed:
            ctx.add(
                "device-permissions",
                E,
                f"{described}: members of '{group}' cannot open it ({access.detail}); only root can compute",
                remedies.fix_kfd_node(group, mode),
                [described, f"configured: {expected}"],
            )
            for gpu in ctx.gpus:
                gpu.blocked = gpu.blocked or "/dev/kfd not accessible to the group"
        elif node.mode & 0o007 and not mode & 0o007:
            ctx.add(
                "device-permissions",
                W,
                f"{described}: every local user can open it, more than the configured {expected}",
                remedies.fix_kfd_node(group, mode),
                [described],
            )
    for gpu in ctx.gpus:
        if gpu.node is None or not gpu.render_node:
            continue
        dn = ctx.facts.render_nodes.get(gpu.render_node)
        path = dn.path if dn is not None else gpu.render_node
        if dn is None or dn.stat is None:
            ctx.add(
                "render-node-permissions",
                E,
                f"{path} for {gpu.name} does not exist",
                "check udev (udevadm trigger --action=add --subsystem-match=drm)",
                [f"{path}: missing"],
                gpu.facts.slot,
            )
            gpu.blocked = gpu.blocked or "render node missing"
            continue
        access = ctx.group_access(dn.stat)
        if not access.allowed:
            described = ctx.describe_node(path, dn.stat)
            ctx.add(
                "render-node-permissions",
                E,
                f"{described}: members of '{group}' cannot open it, so ROCm silently skips {gpu.name}",
                remedies.fix_render_node(group, mode),
                [described],
                gpu.facts.slot,
            )
            gpu.blocked = gpu.blocked or "render node not accessible to the group"


def check_users(ctx: Context) -> None:
    node = ctx.facts.kfd.node.stat
    if node is None or not ctx.gpus:
        return
    accounts = ctx.facts.accounts
    group = ctx.group
    for user in accounts.users:
        if user.uid < ctx.config.users.min_uid or user.uid >= 60000 or not user.can_log_in:
            continue
        gids = accounts.gids_of(user)
        from kfdguard.access import check_rw

        access = check_rw(node, user.uid, gids)
        members = accounts.group(group)
        # A member who still cannot open it is let down by the node's owner or mode,
        # which device-permissions reports; joining the group again would not help.
        if not access.allowed and not (ctx.group_gid is not None and ctx.group_gid in gids):
            ctx.add(
                "user-not-in-group",
                W,
                f"user {user.name} (uid {user.uid}) cannot open /dev/kfd: not in group '{group}'",
                remedies.add_to_group(user.name, group),
                [
                    f"{user.name}: groups {', '.join(sorted(accounts.group_name(g) for g in gids))}",
                    f"{group} members: {', '.join(members.members) if members and members.members else 'none'}",
                ],
            )


def check_modprobe_conf(ctx: Context) -> None:
    """modprobe.d and modules-load.d lines that name modules or options that do not exist."""
    facts = ctx.facts
    if not ctx.gpus and not facts.amdgpu.present:
        return
    if ctx.merged:
        why = f"kernel {facts.kernel.release} has KFD built into amdgpu (Linux 4.20+): there is no amdkfd module"
        install_kfd = next(iter(facts.modprobe.for_module("amdkfd", "install")), None)
        for d in facts.modprobe.directives:
            names_kfd = d.module == "amdkfd" or (d.kind == "softdep" and "amdkfd" in sum(softdep_modules(d), ()))
            if not names_kfd:
                continue
            if d.kind == "softdep" and install_kfd:
                effect = (
                    f"with the 'install amdkfd' line at {install_kfd.file}:{install_kfd.line}, kmod runs that "
                    "command before every amdgpu load instead (checked with kmod's modprobe --show-depends)"
                )
                fix = "delete the line"
            elif d.kind == "softdep":
                effect = "kmod silently skips the missing soft dependency: the line does nothing"
                fix = "delete the line"
            elif d.kind == "install":
                effect = (
                    "any 'modprobe amdkfd' (and, through the softdep, every amdgpu load) runs this shell command, "
                    "whose 'modprobe amdkfd' fails with 'Module amdkfd not found'"
                )
                fix = "delete the line"
            elif d.kind == "options":
                real = [p for p, _ in option_pairs(d) if p in facts.amdgpu.params or p in KFD_PARAMS]
                effect = "the options apply to nothing"
                fix = "delete the line" + (
                    f"; to set {', '.join(real)}, write 'options amdgpu …' instead" if real else ""
                )
            else:
                effect = "it has no effect"
                fix = "delete the line"
            ctx.add(
                "softdep-missing-module",
                W,
                f"{_where(d)} names amdkfd, which does not exist: {effect}",
                f"{fix} ({d.file}:{d.line}); 'sudo kfdguard enforce' reports it, and comments it out when "
                "module.repair is true",
                [_where(d), why],
            )
        for entry in facts.modprobe.modules_load:
            if entry.module == "amdkfd":
                ctx.add(
                    "softdep-missing-module",
                    W,
                    f"{entry.file}:{entry.line} asks systemd-modules-load to load amdkfd, which does not exist: "
                    "every boot logs \"Failed to find module 'amdkfd'\"",
                    f"delete line {entry.line} of {entry.file}; amdgpu (with KFD inside) loads by itself",
                    [
                        f"{entry.file}:{entry.line}: amdkfd",
                        why,
                        *(e.text for e in facts.log.by_rule("modules-load-missing") if e.value("module") == "amdkfd"),
                    ],
                )
    for d in facts.modprobe.directives:
        if d.kind != "options" or d.module not in ("amdgpu", "amdkfd"):
            continue
        module = facts.amdgpu if d.module == "amdgpu" else facts.amdkfd
        for name, value in option_pairs(d):
            _check_param(ctx, d.module, module.declared, name, value, _where(d), f"{d.file}:{d.line}")
    for module_name, params in facts.modprobe.cmdline_options.items():
        if module_name not in ("amdgpu", "amdkfd"):
            continue
        module = facts.amdgpu if module_name == "amdgpu" else facts.amdkfd
        for name, value in params.items():
            where = f"kernel command line: {module_name}.{name}={value}"
            _check_param(ctx, module_name, module.declared, name, value, where, "the kernel command line")


def _check_param(
    ctx: Context, module: str, declared: tuple[str, ...] | None, name: str, value: str, evidence: str, where: str
) -> None:
    if module == "amdkfd" and ctx.merged:
        if name in BOGUS:
            ctx.add(
                "module-param-unknown",
                W,
                f"'{name}' is not a parameter of any amdkfd or amdgpu: {BOGUS[name].truth}",
                f"delete it from {where}",
                [evidence],
            )
        return
    if name in BOGUS or (declared is not None and name not in declared):
        truth = BOGUS[name].truth if name in BOGUS else f"{module} on this kernel does not declare it"
        ctx.add(
            "module-param-unknown",
            W,
            f"{module} option '{name}' is unknown: the kernel ignores it "
            f"('unknown parameter {name!r} ignored'); {truth}",
            f"delete it from {where}",
            [evidence],
        )
        return
    param = KFD_PARAMS.get(name)
    problem = param.check(value) if param else None
    if param and problem:
        severity = E if param.breaks_kfd else W
        effect = (
            "KFD fails to initialise and /dev/kfd never appears"
            if param.breaks_kfd
            else "the value is ignored or misused"
        )
        ctx.add(
            "module-param-invalid",
            severity,
            f"{module} option {name}={value} is invalid ({problem}): {effect}",
            f"fix or delete it in {where} ({param.meaning}), then reboot",
            [evidence],
        )


def check_configured_params(ctx: Context) -> None:
    """kfdguard's own module.options against the module and the live values."""
    options = ctx.config.module.options
    if not options:  # refused or not, with or without a GPU: kfdguard.conf must never carry a bad option
        return
    module = ctx.facts.amdgpu if ctx.merged else ctx.facts.amdkfd
    for name, value in options:
        if name in BOGUS or (module.declared is not None and name not in module.declared):
            truth = BOGUS[name].truth if name in BOGUS else f"{module.name} on this kernel does not declare it"
            ctx.add(
                "module-param-unknown",
                E,
                f"configured option {name} is refused: {truth}",
                f"remove module.options.{name} from /etc/kfdguard/config.yaml",
                [f"config: module.options.{name}={value}"],
            )
            continue
        param = KFD_PARAMS.get(name)
        problem = param.check(value) if param else None
        if param and problem:
            ctx.add(
                "module-param-invalid",
                E,
                f"configured option {name}={value} is refused: {problem}",
                f"fix module.options.{name} in /etc/kfdguard/config.yaml ({param.meaning})",
                [f"config: module.options.{name}={value}"],
            )
            continue
        if param and (param.unsafe or taints(name, ctx.version)):
            ctx.add(
                "module-param-taints",
                W,
                f"configured option {name} taints the kernel (module_param_unsafe)",
                "keep it only if you need it: bug reports from a tainted kernel are often refused",
                [f"config: module.options.{name}={value}"],
            )
        live = module.params.get(name)
        if module.loaded and live is not None and not _same(live, value):
            ctx.add(
                "module-param-mismatch",
                W,
                f"{module.name} runs with {name}={live}, configured {value}: "
                "takes effect after a reboot or module reload",
                "reboot (kfdguard never unloads amdgpu while it drives a display)",
                [f"{module.param_path(name)} = {live}", f"config: {name}={value}"],
            )


def _same(live: str, wanted: str) -> bool:
    truthy = {"Y": "1", "N": "0"}
    a, b = truthy.get(live.upper(), live), truthy.get(wanted.upper(), wanted)
    try:
        return int(a, 0) == int(b, 0)
    except ValueError:
        return a == b


OVERRIDES = {
    "gfx1031": "10.3.0",
    "gfx1032": "10.3.0",
    "gfx1033": "10.3.0",
    "gfx1034": "10.3.0",
    "gfx1035": "10.3.0",
    "gfx1036": "10.3.0",
    "gfx90c": "9.0.0",
    "gfx902": "9.0.0",
    "gfx1150": "11.0.0",
    "gfx1152": "11.0.0",
}


def check_userspace(ctx: Context) -> None:
    if ctx.facts.software is not None:
        # What is installed, read from its files (kfdguard/userspace/assess.py), replaces the static list below.
        from kfdguard.userspace.assess import assess_software, gpu_targets

        ctx.findings.extend(assess_software(ctx.facts.software, gpu_targets(ctx.facts)).findings)
        return
    for gpu in ctx.gpus:
        asic = gpu.asic
        if asic is None or asic.rocm_prebuilt or asic.gfx is None or asic.kfd_since is None:
            continue
        override = OVERRIDES.get(asic.gfx)
        workaround = (
            f"; the unsupported workaround is HSA_OVERRIDE_GFX_VERSION={override} in the program's environment "
            "(runs code built for a neighbouring target; it may crash or compute wrongly)"
            if override
            else ""
        )
        ctx.add(
            "userspace-target-unsupported",
            W,
            f"ROCm's prebuilt libraries have no code for {asic.gfx} ({gpu.name}): PyTorch-ROCm, rocBLAS and "
            "similar fail with 'invalid device function' or 'no kernel image'",
            f"use software built for {asic.gfx} (e.g. llama.cpp with -DAMDGPU_TARGETS={asic.gfx}, or "
            f"distribution packages that include it){workaround}",
            [f"{gpu.facts.slot}: {asic.gfx}", f"sources: {asic.source}"],
            gpu.facts.slot,
        )


CHECKS = (
    check_config,
    check_problems,
    check_gpus_present,
    check_kernel_config,
    check_dkms,
    check_log_causes,
    check_kernel_support,
    check_module_loaded,
    check_kfd_up,
    check_gpu_nodes,
    check_permissions,
    check_users,
    check_modprobe_conf,
    check_configured_params,
    check_log_misc,
    check_runtime,
    check_userspace,
)


def summary_ready(ctx: Context, ready: list[Gpu]) -> None:
    parts = [
        f"{g.name} ({g.asic.gfx if g.asic and g.asic.gfx else g.node.gfx if g.node else '?'}, {g.facts.slot})"
        for g in ready
    ]
    version = ctx.facts.kfd.version
    ctx.add(
        "kfd-ready",
        I,
        f"{len(ready)} GPU{'s' if len(ready) != 1 else ''} can compute: {', '.join(parts)}",
        "",
        [
            f"KFD interface {version[0]}.{version[1]}" if version else "KFD interface unknown",
            *(f"topology node {g.node.index}: gpu_id {g.node.gpu_id}, {g.node.gfx}" for g in ready if g.node),
        ],
    )
