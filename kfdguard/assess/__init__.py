"""assess: pure and deterministic. Facts + Config + knowledge -> Verdict.

No I/O, no clock, no environment: everything it needs is in the Facts. A thin
front end: the Facts become observations (``evidence.machine``) and go
through the one rule set (``assess.rules``) that pasted text goes through.
"""

from __future__ import annotations

from kfdguard.assess.checks import summary_ready
from kfdguard.assess.context import Context, Gpu
from kfdguard.assess.memory import check as check_memory
from kfdguard.assess.memory import ttm_limit
from kfdguard.assess.order import headline, root_cause_first
from kfdguard.assess.plan import plan
from kfdguard.assess.rules import run
from kfdguard.config import Config, ConfigError
from kfdguard.evidence.machine import observe
from kfdguard.facts import Facts
from kfdguard.fallback.policy import explain_choice, recommend, unstable_text
from kfdguard.fleet.cdi import check as check_cdi
from kfdguard.verdict import Finding, GpuStatus, Recommendation, Severity, State, Verdict


def assess(facts: Facts, config: Config | None = None, config_errors: tuple[ConfigError, ...] = ()) -> Verdict:
    ctx = Context(facts, config or Config(), config_errors)
    # The same rules as for a pasted text, over the machine's observations (and its context).
    run(observe(facts, ctx.distro), ctx)
    ctx.findings.extend(check_cdi(facts, facts.cdi))  # container specs that no longer match the nodes
    ctx.findings.extend(check_memory(ctx))  # memory.target on an APU (issue 38)
    kfd = facts.kfd
    # A device cgroup's EPERM says nothing about KFD; sysfs topology already showed it up.
    interface_ok = (kfd.version is not None and kfd.version[0] == 1) or ctx.has("kfd-ioctl-denied")
    kfd_open = kfd.node.stat is not None and ctx.group_access(kfd.node.stat).allowed
    ready_gpus = [g for g in ctx.gpus if g.node is not None and not g.blocked and interface_ok and kfd_open]
    if ready_gpus:
        summary_ready(ctx, ready_gpus)
    rec = _fallback(ctx)
    findings = root_cause_first(ctx.findings)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not ctx.gpus:
        state = State.NO_DEVICE
    elif not ready_gpus:
        state = State.UNAVAILABLE
    elif errors:
        state = State.DEGRADED
    else:
        state = State.READY
    ttm = ttm_limit(ctx.facts.memory)
    statuses = tuple(_status(g, g in ready_gpus, ttm) for g in ctx.gpus)
    summary = _summary(state, findings, ready_gpus)
    return Verdict(state, bool(ready_gpus), summary, findings, statuses, plan(ctx), rec)


def _fallback(ctx: Context) -> Recommendation:
    """The kernel-fallback recommendation, and a finding saying what to do with it."""
    fallback = ctx.config.fallback
    policy = fallback.policy
    rec = recommend(ctx.facts, {f.code for f in ctx.findings}, policy, fallback.unstable, fallback.unstable_resets)
    if ctx.facts.history.problem:
        ctx.add(
            "history-unusable",
            Severity.WARNING,
            ctx.facts.history.problem,
            "nothing to do: kfdguard keeps a backup and starts a new history",
            [ctx.facts.history.problem],
        )
    for problem in ctx.facts.health.problems:
        ctx.add(
            "health-record-unusable",
            Severity.WARNING,
            f"a live GPU health record cannot be used: {problem}",
            "nothing to do: the resident service rewrites its record at the next GPU event; this one is ignored",
            [problem],
        )
    if rec.unstable and policy != "off":
        _unstable(ctx, rec)
        return rec
    if not rec.needed or policy == "off" or rec.kernel is None:
        return rec
    if rec.already_default:
        remedy = f"reboot: the boot loader's default entry already starts {rec.kernel}"
    else:
        automatic = {
            "oneshot": " (fallback.policy oneshot: kfdguard arranges it by itself)",
            "pin": " (fallback.policy pin: kfdguard makes it the default)",
        }.get(policy, "")
        remedy = f"{rec.command}, or: sudo kfdguard fallback apply{automatic}"
    ctx.add(
        "fallback-available",
        Severity.WARNING,
        f"installed kernel {rec.kernel} can run compute on this GPU and the running {rec.running} cannot "
        f"({rec.reason})",
        remedy,
        [
            f"{c.release}: " + ("can run compute" if c.capable else "; ".join(c.reasons) or "unknown")
            for c in rec.choices
        ],
    )
    return rec


def _unstable(ctx: Context, rec: Recommendation) -> None:
    """The running kernel runs compute but its GPU reset repeatedly: a warning, and what to boot instead."""
    mine = next(c for c in rec.choices if c.release == rec.running)
    if rec.kernel is None:
        remedy = (
            "see which program the kernel names, and whether newer firmware (firmware-amd-graphics, linux-firmware) "
            "or another kernel fixes it"
        )
    elif rec.act_on_unstable and rec.policy in ("oneshot", "pin"):
        remedy = f"nothing to do: fallback.unstable is act, so kfdguard arranges {rec.kernel} by itself"
    else:
        remedy = f"{rec.command or 'boot ' + rec.kernel}, or: sudo kfdguard fallback apply"
    best = next((c for c in rec.choices if c.release == rec.kernel), None)
    instead = (
        f"; installed kernel {best.release} ran compute here without being unstable: {explain_choice(best)}"
        if best is not None
        else "; no other installed, bootable kernel ran compute here without being unstable"
    )
    ctx.add(
        "kernel-unstable",
        Severity.WARNING,
        f"kernel {rec.running} runs compute, but {unstable_text(mine)}{instead}",
        remedy,
        [mine.trouble],
    )


def _status(gpu: Gpu, ready: bool, ttm: int | None) -> GpuStatus:
    f = gpu.facts
    # The node's own target, else the ASIC's by PCI id and revision: for a GPU without a node, and for
    # a node whose device_id the table does not know.
    gfx = (gpu.node.gfx if gpu.node is not None else None) or (gpu.asic.gfx if gpu.asic else None)
    integrated = _integrated(gpu)
    return GpuStatus(
        slot=f.slot,
        vendor=f.vendor,
        device=f.device,
        revision=f.revision,
        name=gpu.name,
        family=gpu.asic.family if gpu.asic else None,
        gfx=gfx,
        driver=f.driver,
        kfd_node=gpu.node.index if gpu.node else None,
        gpu_id=gpu.node.gpu_id if gpu.node else None,
        render_node=gpu.render_node,
        compute_ready=ready,
        reason="ready" if ready else (gpu.blocked or "not ready"),
        integrated=integrated,
        vram_total=_vram(gpu, integrated),
        gtt_total=f.gtt_total,
        link=f.link,
        link_max=f.link_max,
        compute_units=gpu.node.compute_units if gpu.node else None,
        compute_memory=_compute_memory(gpu, integrated),
        ttm_limit=ttm if integrated else None,
    )


def _compute_memory(gpu: Gpu, integrated: bool | None) -> int | None:
    """What ROCm tells programs they may allocate: the KFD node's memory banks (ROCr's GPU pool), else a
    discrete card's VRAM. Not an APU's carve-out plus GTT: which of them KFD hands out, and up to which limit,
    depends on the kernel (Strix Halo's banks show far less than GTT up to 6.15; docs/MEMORY.md)."""
    if gpu.node is not None and gpu.node.local_memory:
        return gpu.node.local_memory
    return gpu.facts.vram_total if integrated is False else None


def _vram(gpu: Gpu, integrated: bool | None) -> int | None:
    """amdgpu's mem_info_vram_total, else (a kernel or a copy without it) a discrete GPU's KFD memory
    banks. Not an APU's: its banks hold the memory KFD may allocate, not the carve-out (TopologyNode)."""
    if gpu.facts.vram_total is not None or gpu.node is None or integrated is not False:
        return gpu.facts.vram_total
    return gpu.node.local_memory


def _integrated(gpu: Gpu) -> bool | None:
    """APU or discrete. sysfs has no such flag: KFD says "APU" only for a node that has CPU
    cores too (ACPI CRAT APUs; modern APUs get a GPU-only node, see kfd-facts.md), so the
    knowledge table's ASIC (amdgpu's own AMD_IS_APU chips) decides otherwise. Not ollama's
    guess from a small VRAM total, which a 512 MiB dGPU or an APU with a large carve-out defeats."""
    if gpu.node is not None and gpu.node.apu_node:
        return True
    return gpu.asic.apu if gpu.asic is not None else None


def _summary(state: State, findings: tuple[Finding, ...], ready: list[Gpu]) -> str:
    # Root cause first: the error on the lowest floor of the stack, not the first in the list.
    root = headline(findings)
    first_error = root if root is not None and root.severity is Severity.ERROR else None
    if state is State.NO_DEVICE:
        return "no AMD GPU: nothing for KFD to do"
    if state is State.READY:
        ready_finding = next(f for f in findings if f.code == "kfd-ready")
        return ready_finding.message
    if state is State.DEGRADED:
        return f"{len(ready)} GPU(s) can compute, but: {first_error.message if first_error else 'see findings'}"
    return first_error.message if first_error else "compute is not available"
