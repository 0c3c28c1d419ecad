"""The rules that need what only a machine shows: its configuration, sysfs, DKMS trees, accounts.

They are part of the one rule list in ``assess.rules`` (wrapped by
``machine_only``, or called by the rule of the same cause when the source is a
machine). Each reads the Context, adds findings, and may mark GPUs as blocked
with the reason; later rules do not repeat what an earlier one explained.
"""

from __future__ import annotations

import errno

from kfdguard.assess import remedies
from kfdguard.assess.context import Context, Gpu
from kfdguard.assess.explain import Cause, signature_rejected
from kfdguard.facts import ModprobeDirective, ModuleFacts
from kfdguard.knowledge.params import BOGUS, KFD_PARAMS, Param, taint_judgement
from kfdguard.parsers.modprobe import option_pairs, softdep_modules
from kfdguard.verdict import Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.assess.reasoning import Reasoning

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


def kfd_params_absent(ctx: Context) -> list[str]:
    """Evidence that amdgpu has no KFD when the kernel config is not readable: its KFD parameters are absent."""
    amdgpu = ctx.facts.amdgpu
    if amdgpu.loaded and ctx.merged and "sched_policy" not in amdgpu.params:
        # The KFD parameters are declared inside #ifdef CONFIG_HSA_AMD.
        return ["/sys/module/amdgpu/parameters has no sched_policy (KFD parameters absent)"]
    if amdgpu.declared is not None and ctx.merged and "sched_policy" not in amdgpu.declared:
        return [f"{amdgpu.file} declares no KFD parameters (sched_policy absent)"]
    return []


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


def _apply(ctx: Context, cause: Cause, gpu: Gpu | None = None) -> None:
    ctx.add(cause.code, cause.severity, cause.message, cause.remedy, cause.evidence, gpu.facts.slot if gpu else None)
    if gpu is not None and cause.blocks:
        gpu.blocked = gpu.blocked or cause.blocks


def machine_only(check: Callable[[Context], None]) -> Callable[[Reasoning], None]:
    """A rule that needs what only a machine shows (its configuration, DKMS trees, sysfs, accounts)."""

    def rule(r: Reasoning) -> None:
        if r.machine is not None:
            check(r.machine)

    rule.__name__ = check.__name__
    return rule


def check_module_loaded(ctx: Context) -> None:
    if not ctx.gpus:
        return
    amdgpu = ctx.facts.amdgpu
    if amdgpu.loaded:
        return
    pending = [g for g in ctx.gpus if not g.blocked]
    if not pending:
        return
    rejected = ctx.facts.log.by_rule("module-signature-rejected")
    if rejected:
        _apply(ctx, signature_rejected(rejected))
        for gpu in pending:
            gpu.blocked = "module rejected (Secure Boot)"
        return
    _not_loaded(ctx)
    for gpu in pending:
        gpu.blocked = "amdgpu not loaded"


def _not_loaded(ctx: Context) -> None:
    """Why amdgpu is not loaded: not installed, blacklisted, or kept off by the kernel command line."""
    amdgpu = ctx.facts.amdgpu
    release = ctx.facts.kernel.release
    if not amdgpu.present:
        ctx.add(
            "module-not-loaded",
            E,
            f"amdgpu is not installed for kernel {release}",
            remedies.load_module("amdgpu", ctx.distro, release),
            [f"no amdgpu module in /lib/modules/{release} (modules.dep, modules.builtin)"],
        )
        return
    blacklist = list(ctx.facts.modprobe.for_module("amdgpu", "blacklist"))
    why = [f"blacklisted at {_where(d)}" for d in blacklist]
    if "amdgpu" in ctx.facts.modprobe.cmdline_blacklist:
        why.append("modprobe.blacklist=amdgpu on the kernel command line")
    why += [
        f"{arg} on the kernel command line keeps amdgpu from initialising"
        for arg in ctx.facts.kernel.cmdline
        if arg in ("nomodeset", "amdgpu.modeset=0")
    ]
    ctx.add(
        "module-not-loaded",
        E,
        "amdgpu is not loaded" + (f" ({why[0]})" if why else ""),
        remedies.load_module("amdgpu", ctx.distro, release) + ("; remove the blacklist first" if blacklist else ""),
        [f"no /sys/module/amdgpu; module file {amdgpu.file or 'built in'}", *why],
    )


def _kfd_init_failed(ctx: Context, module: ModuleFacts) -> None:
    """amdgpu (or amdkfd) is loaded and KFD is not there: it refused to start, usually over an option."""
    facts = ctx.facts
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
                v for d in facts.modprobe.for_module(module.name, "options") for p, v in option_pairs(d) if p == name
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


def check_kfd_up(ctx: Context) -> None:
    """amdgpu is loaded: did KFD come up, and does its device node answer?"""
    facts = ctx.facts
    kfd = facts.kfd
    if not ctx.gpus or ctx.has("kfd-not-built"):
        return
    module = facts.amdgpu if ctx.merged else facts.amdkfd
    if not kfd.sysfs and not kfd.node.stat:
        if module.loaded:
            _kfd_init_failed(ctx, module)
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
    _kfd_interface(ctx)


def _kfd_interface(ctx: Context) -> None:
    """/dev/kfd exists: does it answer AMDKFD_IOC_GET_VERSION with a major version kfdguard knows?"""
    kfd = ctx.facts.kfd
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


def _amdkfd_line_effect(ctx: Context, d: ModprobeDirective, install_kfd: ModprobeDirective | None) -> tuple[str, str]:
    """What a modprobe.d line naming amdkfd does on a kernel without amdkfd, and how to fix it."""
    if d.kind == "softdep" and install_kfd:
        return (
            f"with the 'install amdkfd' line at {install_kfd.file}:{install_kfd.line}, kmod runs that "
            "command before every amdgpu load instead (checked with kmod's modprobe --show-depends)",
            "delete the line",
        )
    if d.kind == "options":
        real = [p for p, _ in option_pairs(d) if p in ctx.facts.amdgpu.params or p in KFD_PARAMS]
        fix = "delete the line" + (f"; to set {', '.join(real)}, write 'options amdgpu …' instead" if real else "")
        return "the options apply to nothing", fix
    effects = {
        "softdep": "kmod silently skips the missing soft dependency: the line does nothing",
        "install": "any 'modprobe amdkfd' (and, through the softdep, every amdgpu load) runs this shell command, "
        "whose 'modprobe amdkfd' fails with 'Module amdkfd not found'",
    }
    return effects.get(d.kind, "it has no effect"), "delete the line"


def _amdkfd_lines(ctx: Context) -> None:
    """On a kernel with KFD inside amdgpu, every line that names amdkfd does nothing, or worse."""
    facts = ctx.facts
    why = f"kernel {facts.kernel.release} has KFD built into amdgpu (Linux 4.20+): there is no amdkfd module"
    install_kfd = next(iter(facts.modprobe.for_module("amdkfd", "install")), None)
    for d in facts.modprobe.directives:
        names_kfd = d.module == "amdkfd" or (d.kind == "softdep" and "amdkfd" in sum(softdep_modules(d), ()))
        if not names_kfd:
            continue
        effect, fix = _amdkfd_line_effect(ctx, d, install_kfd)
        ctx.add(
            "softdep-missing-module",
            W,
            f"{_where(d)} names amdkfd, which does not exist: {effect}",
            f"{fix} ({d.file}:{d.line}); 'sudo kfdguard enforce' reports it, and comments it out when "
            "module.repair is true",
            [_where(d), why],
        )
    logged = [e.text for e in facts.log.by_rule("modules-load-missing") if e.value("module") == "amdkfd"]
    for entry in facts.modprobe.modules_load:
        if entry.module == "amdkfd":
            ctx.add(
                "softdep-missing-module",
                W,
                f"{entry.file}:{entry.line} asks systemd-modules-load to load amdkfd, which does not exist: "
                "every boot logs \"Failed to find module 'amdkfd'\"",
                f"delete line {entry.line} of {entry.file}; amdgpu (with KFD inside) loads by itself",
                [f"{entry.file}:{entry.line}: amdkfd", why, *logged],
            )


def check_modprobe_conf(ctx: Context) -> None:
    """modprobe.d and modules-load.d lines that name modules or options that do not exist."""
    facts = ctx.facts
    if not ctx.gpus and not facts.amdgpu.present:
        return
    if ctx.merged:
        _amdkfd_lines(ctx)
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


def _check_taint(ctx: Context, name: str, value: str, param: Param) -> None:
    """Whether a configured option taints the running kernel, as the series read declare it."""
    tainting, why = (True, "in every kernel read") if param.unsafe else taint_judgement(name, ctx.version)
    evidence = [f"config: module.options.{name}={value}"]
    if tainting:
        ctx.add(
            "module-param-taints",
            W,
            f"configured option {name} taints the kernel (module_param_unsafe: {why})",
            "keep it only if you need it: bug reports from a tainted kernel are often refused",
            evidence,
        )
    elif tainting is None:
        # Said, not guessed: between two series that declare it differently the release that
        # changed it was not read, and the older series' answer would be a guess.
        ctx.add(
            "module-param-taints",
            I,
            f"configured option {name} may taint kernel {_kv(ctx.version)}: unknown ({why})",
            f"a boot with it shows it: the kernel log says 'Setting dangerous option {name} - tainting "
            "kernel' and /proc/sys/kernel/tainted has bit 6 (64, TAINT_USER) set",
            evidence,
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
        if param:
            _check_taint(ctx, name, value, param)
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
