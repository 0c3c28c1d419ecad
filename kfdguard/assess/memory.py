"""memory.target on an APU: the module options that give compute programs that much memory (issue 38).

Pure: ``memory_options`` is arithmetic over the knowledge rows (kfdguard/knowledge/memory.py);
``check`` reads the Context for the target, the RAM and TTM's live limits, and says what cannot be
written, what must go on the kernel command line instead, and what the running kernel applied.
"""

from __future__ import annotations

from kfdguard.config import memory_target
from kfdguard.facts import MemoryFacts
from kfdguard.host.root import MODPROBE_CONF
from kfdguard.knowledge.memory import rule_for
from kfdguard.record import dataclass
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.assess.context import Context

GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    target_bytes: int
    pages: int  # target_bytes in pages of page_size, rounded down
    module: str  # the TTM module whose limits these are: ttm (in-tree) or amdttm (DKMS)
    options: tuple[tuple[str, str, str], ...]  # (module, parameter, value), in the order written
    cmdline: bool  # ttm is built in: only the kernel command line reaches it
    notes: tuple[str, ...]  # what the kernel does with them, said in the file and the finding
    refusal: str | None = None  # why nothing can be written

    def args(self) -> str:
        """The options as kernel command-line arguments (module.parameter=value)."""
        return " ".join(f"{m}.{n}={v}" for m, n, v in self.options)


def _gib(size: int) -> str:
    return f"{size / GIB:.1f} GiB"


def memory_options(
    target: str,
    ram_bytes: int,
    version: tuple[int, int] | None,
    *,
    dkms: bool,
    page_size: int = 4096,
    ttm_builtin: bool = False,
) -> MemoryPlan:
    """The options that make ``target`` the memory compute may use, on this kernel and driver."""
    parsed = memory_target(target)
    if isinstance(parsed, str):
        return MemoryPlan(0, 0, "ttm", (), cmdline=False, notes=(), refusal=parsed)
    kind, amount = parsed
    # A share is of MemTotal, the kernel's totalram: what TTM's own default halves.
    size = amount if kind == "bytes" else ram_bytes * amount // 100
    module = "amdttm" if dkms else "ttm"
    if size > ram_bytes:
        why = (
            f"memory.target {target} ({_gib(size)}) is more than the RAM the kernel manages ({_gib(ram_bytes)}); "
            "amdgpu caps an APU's GTT at the RAM, and a BIOS carve-out (UMA frame buffer) is not part of it"
        )
        return MemoryPlan(size, 0, module, (), cmdline=False, notes=(), refusal=why)
    pages = size // page_size
    options: list[tuple[str, str, str]] = [(module, "pages_limit", str(pages)), (module, "page_pool_size", str(pages))]
    notes = [f"{target} = {size} bytes = {pages} pages of {page_size} bytes (TTM counts pages)"]
    rule = rule_for(version, dkms)
    if dkms:
        notes.append("the DKMS amdgpu brings its own TTM module, amdttm: ttm.* options do not reach it")
    if rule is None:
        notes.append(
            "which option sizes GTT and KFD's limit on this kernel was not read (6.1, 6.12 and 7.2 were): "
            "the TTM limit is written; mem_info_gtt_total shows after boot what the kernel made of it"
        )
    else:
        if rule.gtt_follows_ttm:
            notes.append("amdgpu sizes GTT from the TTM limit")
        else:
            # 6.1: GTT is gttsize MiB (not deprecated there) or max(3 GiB, RAM/2).
            options.append(("amdgpu", "gttsize", str(size >> 20)))
            notes.append("this kernel sizes GTT from amdgpu.gttsize (MiB), not from the TTM limit")
        if not rule.kfd_follows_ttm:
            notes.append(
                "KFD on this kernel refuses GTT allocations beyond 3/8 of the memory free when amdgpu loads, "
                "whatever the options: ROCm gets more only on 6.12 or later (Vulkan and OpenGL use the GTT)"
            )
    cmdline = ttm_builtin and not dkms
    if cmdline:
        notes.append("ttm is built into this kernel: modprobe.d never reaches it, the kernel command line does")
    return MemoryPlan(size, pages, module, tuple(options), cmdline=cmdline, notes=tuple(notes))


def planned(ctx: Context) -> MemoryPlan | None:
    """The memory plan for this machine, or None when none applies (no target, no APU, RAM unknown)."""
    target = ctx.config.memory.target
    ram = ctx.facts.memory.ram_bytes
    if target is None or ram is None or not _apus(ctx):
        return None
    return memory_options(
        target,
        ram,
        ctx.version,
        dkms=ctx.facts.amdgpu.from_dkms,
        page_size=ctx.facts.memory.page_size,
        ttm_builtin=ctx.facts.memory.ttm_builtin,
    )


def _apus(ctx: Context) -> list[str]:
    return [g.facts.slot for g in ctx.gpus if g.asic is not None and g.asic.apu]


# The kernel change after which KFD gives an APU its TTM-sized GTT as compute memory instead of the carve-out.
APU_MEMORY_FROM_TTM = (
    "6.10, eb853413d02c 'drm/amdgpu: Let VRAM allocations go to GTT domain on small APUs' (6.9.9 has it "
    "backported; 6.15's 759e764f7d58 keeps the carve-out only when it is the larger)"
)


def _carve_out_only(ctx: Context) -> list[Finding]:
    """An APU whose KFD memory bank is just its carve-out while TTM would let it use more of the RAM: what ROCm
    programs see is the carve-out (the "512 MB on a 64 GB machine" reports), whatever the options say. Read
    from what the kernel shows (the bank, mem_info_vram_total, TTM's limit in force), not from a version
    table: the kernel that does this is the one running."""
    limit = ttm_limit(ctx.facts.memory)
    release = ctx.facts.kernel.release or "this kernel"
    out = []
    for g in ctx.gpus:
        bank = g.node.local_memory if g.node is not None else None
        vram = g.facts.vram_total
        if g.asic is None or not g.asic.apu or g.node is None or bank is None or vram is None or limit is None:
            continue
        if bank != vram or limit <= vram:
            continue
        out.append(
            Finding(
                "memory-apu-carve-out-only",
                # A warning when memory.target asks for more than this kernel can give; else what ROCm sees.
                Severity.WARNING if ctx.config.memory.target is not None else Severity.INFO,
                f"KFD gives {g.name} ({g.facts.slot}) only its {_gib(vram)} carve-out as compute memory on {release}, "
                f"though TTM would let its GTT take {_gib(limit)} of the RAM: ROCm programs see {_gib(vram)}",
                f"a kernel that sizes an APU's compute memory from TTM's limit ({APU_MEMORY_FROM_TTM}): 6.12 LTS or "
                "later; on this kernel only a larger UMA frame buffer in the firmware setup gives ROCm more",
                (
                    f"KFD node {g.node.index}'s memory bank: {bank} bytes",
                    f"mem_info_vram_total (the carve-out): {vram} bytes",
                    f"TTM's limit in force: {limit} bytes",
                ),
                g.facts.slot,
            )
        )
    return out


def check(ctx: Context) -> list[Finding]:
    """What the memory target needs said: nothing to do, refused, command line, or not applied; and an APU
    whose kernel hands KFD only the carve-out, target or not."""
    found = _carve_out_only(ctx)
    target = ctx.config.memory.target
    if target is None:
        return found
    return found + _check_target(ctx, target)


def _check_target(ctx: Context, target: str) -> list[Finding]:
    where = (f"config: memory.target {target}",)
    if not _apus(ctx):
        return [Finding("memory-target-not-apu", Severity.INFO,
                        "memory.target applies to APUs (their GPU uses the RAM); no AMD APU is present, "
                        "so no memory options are written", "", where)]  # fmt: skip
    if ctx.facts.memory.ram_bytes is None:
        return [Finding("memory-target-unknown-ram", Severity.WARNING,
                        "memory.target is set but the RAM size (/proc/meminfo MemTotal) could not be read: "
                        "no memory options are written", "", where)]  # fmt: skip
    plan = planned(ctx)
    assert plan is not None
    if plan.refusal is not None:
        return [Finding("memory-target-invalid", Severity.ERROR, plan.refusal,
                        "lower memory.target, or give a share of the RAM such as 75%", where)]  # fmt: skip
    findings: list[Finding] = []
    if plan.cmdline:
        findings.append(
            Finding(
                "memory-options-cmdline",
                Severity.WARNING,
                f"ttm is built into {ctx.facts.kernel.release or 'this kernel'}: the memory options take effect "
                "only on the kernel command line (kfdguard does not edit the boot loader for them)",
                f"add '{plan.args()}' to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, "
                f"then update-grub; grubby --update-kernel=ALL --args='{plan.args()}' on Fedora), then reboot",
                (*where, *plan.notes),
            )
        )
    findings.extend(_gttsize(ctx, plan))
    findings.extend(_verify(ctx, plan))
    return findings


def _gttsize(ctx: Context, plan: MemoryPlan) -> list[Finding]:
    """amdgpu.gttsize set elsewhere on a kernel or driver whose KFD follows the TTM limit: both set."""
    rule = rule_for(ctx.version, ctx.facts.amdgpu.from_dkms)
    if rule is None or not rule.kfd_follows_ttm:
        return []
    places = [f"{d.file}:{d.line}: {d.text}" for d in ctx.facts.modprobe.for_module("amdgpu", "options")
              if d.file != MODPROBE_CONF and any(a.startswith("gttsize=") for a in d.args)]  # fmt: skip
    if "gttsize" in ctx.facts.modprobe.cmdline_options.get("amdgpu", {}):
        places.append(f"kernel command line: amdgpu.gttsize={ctx.facts.modprobe.cmdline_options['amdgpu']['gttsize']}")
    if not places:
        return []
    return [Finding("memory-gttsize-set", Severity.WARNING,
                    "amdgpu.gttsize is set beside the TTM limit: it sizes GTT on its own while KFD still stops at "
                    f"{plan.module}.pages_limit, so ROCm sees less than GTT shows (the kernel logs "
                    "'GTT size has been set as ... but TTM size has been set as ..., this is unusual')",
                    "remove amdgpu.gttsize; memory.target sets the TTM limit that sizes both",
                    tuple(places))]  # fmt: skip


def _written(ctx: Context, plan: MemoryPlan) -> bool:
    """kfdguard.conf already holds these options: the last boot could have applied them."""
    wanted = {(m, n, v) for m, n, v in plan.options if m == plan.module}
    held = {
        (d.module, *arg.partition("=")[::2])
        for d in ctx.facts.modprobe.directives
        if d.file == MODPROBE_CONF and d.kind == "options" and d.module == plan.module
        for arg in d.args
    }
    return bool(wanted) and wanted <= held


def _verify(ctx: Context, plan: MemoryPlan) -> list[Finding]:
    """After a boot with the options written: did the kernel apply them, and if not, why (issue 38)."""
    memory = ctx.facts.memory
    live = memory.ttm.get(plan.module, {}).get("pages_limit")
    on_cmdline = ctx.facts.modprobe.cmdline_options.get(plan.module, {}).get("pages_limit")
    if not (_written(ctx, plan) or on_cmdline == str(plan.pages)) or live is None or live == str(plan.pages):
        return []
    evidence = (f"{plan.module}.pages_limit in effect (its sysfs parameter): {live}",
                f"configured: {plan.module}.pages_limit={plan.pages}")  # fmt: skip
    other = "ttm" if plan.module == "amdttm" else "amdttm"
    if memory.ttm.get(other, {}).get("pages_limit") == str(plan.pages):
        cause = f"the value reached {other}, which this amdgpu does not use"
        remedy = f"set {plan.module}.pages_limit instead (kfdguard writes it), then reboot"
    elif on_cmdline is not None and on_cmdline != str(plan.pages):
        cause = f"the kernel command line sets {plan.module}.pages_limit={on_cmdline}, which wins over modprobe.d"
        remedy = f"remove {plan.module}.pages_limit from the kernel command line, then reboot"
    else:
        cause = (
            f"{plan.module} was loaded before the options were in place: from an initramfs built before "
            "kfdguard wrote them, or the machine was not rebooted since"
        )
        remedy = "rebuild the initramfs (module.initramfs: regenerate does it) and reboot"
    return [Finding("memory-limit-not-applied", Severity.WARNING,
                    f"the running kernel's TTM limit is {live} pages, not the configured {plan.pages}: {cause}",
                    remedy, evidence)]  # fmt: skip


def ttm_limit(memory: MemoryFacts) -> int | None:
    """Bytes TTM lets GPU buffers take of system memory, as the kernel applied it: the DKMS driver's amdttm when
    it is loaded (amdgpu-dkms uses its own copy), else the in-tree ttm. TTM writes its effective limit back into
    the parameter at init (ttm_tt_mgr_init: 0 becomes half of RAM), so the live value is the limit in force."""
    for module in ("amdttm", "ttm"):
        value = memory.ttm.get(module, {}).get("pages_limit", "")
        # At most 13 digits (2**40 has 13): int() refuses a longer digit string (Python's conversion limit).
        if value.isascii() and value.isdigit() and len(value) <= 13 and 0 < int(value) < 1 << 40:
            return int(value) * memory.page_size
    return None
