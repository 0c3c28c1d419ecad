"""The plan: the desired state kfdguard may bring about, from facts and config.

Pure, like the rest of assess. Each action states an end state ("this file
has this content", "this node is root:render 0660"); enforce compares it with
the machine and acts only on differences, which makes a second run a no-op.
"""

from __future__ import annotations

from kfdguard import __version__
from kfdguard.assess.context import Context
from kfdguard.assess.memory import planned as planned_memory
from kfdguard.facts import ModprobeDirective
from kfdguard.host.files import GENERATED
from kfdguard.host.root import MODPROBE_CONF, MODPROBE_D, MODULES_FILES, UDEV_RULE
from kfdguard.knowledge.params import BOGUS, KFD_PARAMS
from kfdguard.parsers.modprobe import option_pairs, softdep_modules
from kfdguard.verdict import Action

# Files kfdguard may repair when module.repair is on; package-owned files under
# /usr/lib and /lib are never edited (an /etc file of the same name overrides them).
REPAIRABLE = (MODPROBE_D, *MODULES_FILES)
RENDER_RULE_TEMPLATE = """\
# {generated} {version} from /etc/kfdguard/config.yaml (device.group, device.mode).
# Do not edit: kfdguard rewrites this file. Numbered after 50-udev-default.rules
# and 70-uaccess.rules so that its GROUP and MODE are the ones that stay.
#
# /dev/kfd: every ROCm program opens it read-write.
SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="{group}", MODE="{mode}"
# AMD GPUs' render nodes: ROCm silently skips a GPU whose node it cannot open.
SUBSYSTEM=="drm", KERNEL=="renderD*", ATTRS{{vendor}}=="0x1002", GROUP="{group}", MODE="{mode}"
"""


def modprobe_conf(ctx: Context) -> str | None:
    """kfdguard.conf for this kernel's layout, or None when nothing needs saying."""
    options = ctx.config.module.options
    refused = {
        f.evidence[0]
        for f in ctx.findings
        if f.code in ("module-param-unknown", "module-param-invalid")
        and f.evidence
        and f.evidence[0].startswith("config: ")
    }
    if refused:
        return None  # a config with a refused option changes nothing
    release = ctx.facts.kernel.release or "this kernel"
    lines = [
        f"# {GENERATED} {__version__} from /etc/kfdguard/config.yaml (module.options, memory.target).",
        "# Do not edit: kfdguard rewrites this file.",
    ]
    body: list[str] = []
    memory = _memory_lines(ctx)
    if memory:
        # amdgpu options from memory.target (6.1's gttsize) join the configured ones, which win.
        named = {k for k, _ in options}
        options = (*options, *((n, v) for m, n, v in memory[1] if m == "amdgpu" and n not in named))
    if ctx.merged:
        lines.append(f"# {release} has KFD built into amdgpu (Linux 4.20+): KFD options are amdgpu options.")
        if options:
            body.append("options amdgpu " + " ".join(f"{k}={v}" for k, v in options))
    else:
        lines.append(f"# {release} has KFD as the separate amdkfd module: load it before amdgpu.")
        body.append("softdep amdgpu pre: amdkfd")
        if options:
            body.append("options amdkfd " + " ".join(f"{k}={v}" for k, v in options))
    if memory:
        body.extend(memory[0])
    if not body:
        return None
    return "\n".join(lines + body) + "\n"


def _memory_lines(ctx: Context) -> tuple[list[str], tuple[tuple[str, str, str], ...]] | None:
    """memory.target's lines for the TTM module (comments, then options) and all its options; None: none.

    Nothing when the target is refused or when ttm is built in (only the kernel command line reaches
    it then: a finding says what to add).
    """
    plan = planned_memory(ctx)
    if plan is None or plan.refusal is not None or plan.cmdline:
        return None
    lines = [f"# memory.target {ctx.config.memory.target}: {note}." for note in plan.notes]
    ttm = [f"{n}={v}" for m, n, v in plan.options if m == plan.module]
    lines.append(f"options {plan.module} " + " ".join(ttm))
    return lines, plan.options


def udev_rule(ctx: Context) -> str:
    mode = f"{ctx.config.device.mode:04o}"
    return RENDER_RULE_TEMPLATE.format(generated=GENERATED, version=__version__, group=ctx.group, mode=mode)


def _contradiction(ctx: Context, d: ModprobeDirective, wanted: dict[str, str]) -> str:
    """Why a modprobe.d directive contradicts the running kernel or the config; empty when it does not."""
    if ctx.merged and (d.module == "amdkfd" or (d.kind == "softdep" and "amdkfd" in sum(softdep_modules(d), ()))):
        return "names amdkfd, which this kernel does not have"
    reason = ""
    if d.kind == "options" and d.module == ctx.kfd_module:
        for name, value in option_pairs(d):
            param = KFD_PARAMS.get(name)
            if name in BOGUS:
                reason = f"'{name}' is not a parameter"
            elif param is not None and param.breaks_kfd and param.check(value):
                reason = f"{name}={value} makes KFD fail to initialise"
            elif name in wanted and wanted[name] != value:
                reason = f"{name}={value} contradicts the configured {name}={wanted[name]}"
    return reason


def _repairs(ctx: Context) -> list[Action]:
    """Lines in other files that contradict the running kernel or the config."""
    facts = ctx.facts
    by_file: dict[str, list[tuple[int, str]]] = {}
    wanted = dict(ctx.config.module.options)
    for d in facts.modprobe.directives:
        reason = "" if d.file == MODPROBE_CONF else _contradiction(ctx, d, wanted)
        if reason:
            by_file.setdefault(d.file, []).append((d.line, reason))
    for entry in facts.modprobe.modules_load:
        if ctx.merged and entry.module == "amdkfd":
            by_file.setdefault(entry.file, []).append(
                (entry.line, "asks to load amdkfd, which this kernel does not have")
            )
    actions = []
    for file, items in sorted(by_file.items()):
        if not file.startswith(REPAIRABLE):
            continue
        lines = tuple(sorted({line for line, _ in items}))
        reasons = "; ".join(sorted({reason for _, reason in items}))
        actions.append(
            Action("comment-out", file, f"disable line(s) {', '.join(map(str, lines))}: {reasons}", lines=lines)
        )
    return actions


def _module_files(ctx: Context) -> list[Action]:
    """kfdguard.conf for the kernel's layout, and the repairs of other files when allowed."""
    facts = ctx.facts
    actions: list[Action] = []
    conf = modprobe_conf(ctx)
    if conf is not None:
        actions.append(Action("write-file", MODPROBE_CONF, "kfdguard's module options and order", content=conf))
    elif MODPROBE_CONF in facts.modprobe.files and not any(
        f.code in ("module-param-unknown", "module-param-invalid") for f in ctx.findings
    ):
        actions.append(Action("remove-file", MODPROBE_CONF, "no module options are configured any more"))
    if ctx.config.module.repair:
        actions.extend(_repairs(ctx))
    return actions


def _udev(ctx: Context) -> list[Action]:
    if not ctx.config.device.udev_rule or ctx.group_gid is None:
        return []
    return [
        Action("write-file", UDEV_RULE, "keep /dev/kfd and render-node permissions across coldplug",
               content=udev_rule(ctx)),
        Action("udev-reload", "udev", "make udev read the rule"),
    ]  # fmt: skip


def _module(ctx: Context) -> list[Action]:
    """Load amdgpu when a GPU waits for it; reload it only when nothing uses it."""
    facts, config = ctx.facts, ctx.config
    blacklisted = bool(facts.modprobe.for_module("amdgpu", "blacklist")) or "amdgpu" in facts.modprobe.cmdline_blacklist
    needs_load = any(g.blocked == "amdgpu not loaded" for g in ctx.gpus)
    if needs_load and config.module.load and facts.amdgpu.present and not blacklisted:
        return [Action("load-module", "amdgpu", "an AMD GPU is present and amdgpu is not loaded")]
    if config.module.reload and facts.amdgpu.loaded and ctx.has("module-param-mismatch"):
        busy = facts.amdgpu.holders or (facts.amdgpu.refcnt or 0) > 0 or any(g.facts.boot_vga for g in ctx.gpus)
        if not busy:
            return [Action("reload-module", "amdgpu", "apply changed read-only options (no display, no users)")]
    return []


def _access(ctx: Context) -> list[Action]:
    """Node owner and mode, and the configured group members."""
    facts, config, gid = ctx.facts, ctx.config, ctx.group_gid
    if gid is None:
        return []
    actions = []
    mode = config.device.mode
    nodes = [(facts.kfd.node.path, facts.kfd.node.stat)]
    nodes += [(n.path, n.stat) for name, n in sorted(facts.render_nodes.items())]
    for path, node in nodes:
        if node is not None and node.kind == "char" and (node.uid, node.gid, node.mode) != (0, gid, mode):
            detail = f"{node.symbolic} -> root:{ctx.group} {mode:04o}"
            actions.append(Action("fix-node", path, detail, group=ctx.group, mode=mode))
    group = facts.accounts.group(ctx.group)
    for name in config.users.add_to_group:
        user = facts.accounts.user(name)
        if user is not None and group is not None and name not in group.members and user.gid != group.gid:
            actions.append(Action("add-to-group", name, "configured in users.add_to_group", group=ctx.group))
    return actions


def plan(ctx: Context) -> tuple[Action, ...]:
    """The desired states, in the order enforce carries them out."""
    if not ctx.gpus and not ctx.facts.amdgpu.present:
        return ()
    actions = _module_files(ctx)
    if not ctx.gpus:
        return tuple(actions)
    actions += _udev(ctx) + _module(ctx) + _access(ctx)
    if ctx.config.module.initramfs == "regenerate" and any(
        a.target.startswith(MODPROBE_D) or a.kind == "comment-out" for a in actions
    ):
        why = "modprobe.d changed; applies only if amdgpu is in the initramfs"
        actions.append(Action("regenerate-initramfs", ctx.facts.kernel.release, why))
    return tuple(actions)
