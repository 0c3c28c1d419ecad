"""Per GPU and per stack: will this software run here, and if not, exactly why and what to do. Pure.

Input: the software inventory (kfdguard.userspace.probe) and the machine's
AMD GPUs with their gfx targets; output: findings with evidence and
remedies, and a table of verdicts for the report. No I/O, no clock, no
environment: the caller's environment arrives as inventory records.
"""

from __future__ import annotations

from kfdguard.record import dataclass
from kfdguard.userspace.env import PER_NODE_OVERRIDE, override_node
from kfdguard.userspace.rows import Row
from kfdguard.userspace.targets import (
    GENERIC,
    family,
    feature_note,
    gfx_of_override,
    override_for,
    parse_target,
    runs_on,
)
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from kfdguard.facts import Component, EnvSetting, Facts, SoftwareFacts, Stack
    from kfdguard.userspace.application_rules import AppVerdict
    from kfdguard.userspace.vulkan_rules import VulkanGpu

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741
VISIBILITY = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
CALLER = "caller environment"
# How each kind of stack is rebuilt for another target (the build switch each project documents).
REBUILD = {
    "rocm": "a ROCm release whose rocBLAS lists {gfx} (its GPU support matrix), "
    "or rocBLAS built with -DGPU_TARGETS={gfx}",
    "distribution": "rocBLAS built with -DGPU_TARGETS={gfx} (Debian's and Ubuntu's own ROCm packages target more GPUs "
    "than AMD's)",
    "ollama": "an ollama release whose bundled ROCm lists {gfx}, or ollama built with AMDGPU_TARGETS={gfx}",
    "pytorch": "a PyTorch-ROCm wheel that includes {gfx}, or PyTorch built with PYTORCH_ROCM_ARCH={gfx}",
    "llama.cpp": "llama.cpp built with -DAMDGPU_TARGETS={gfx} (cmake -DGGML_HIP=ON)",
    # TheRock's per-target extras: rocm/setup.py's build_per_target_extras (device-<gfx>, rocm-sdk-device-<gfx>).
    "therock": 'TheRock\'s device package for {gfx}: pip install "rocm[device-{gfx}]" (rocm-sdk-device-{gfx}), '
    "where TheRock builds {gfx}",
}


@dataclass(frozen=True, slots=True)
class GpuTarget:
    slot: str
    name: str
    gfx: str | None
    node: int | None = None  # its KFD topology node: what HSA_OVERRIDE_GFX_VERSION_<n> names


@dataclass(frozen=True, slots=True)
class Match:
    status: str  # exact, generic, missing, unknown (the stack carries no target list)
    via: str | None = None  # the target whose code runs
    nearest: str | None = None  # for missing: the stack's closest target of the same generation
    note: str = ""  # a feature demand ("loads only where xnack off")


@dataclass(frozen=True, slots=True)
class SoftwareVerdict:
    findings: tuple[Finding, ...]
    rows: tuple[Row, ...]
    vulkan: tuple[VulkanGpu, ...] = ()
    applications: tuple[AppVerdict, ...] = ()


def gpu_targets(facts: Facts) -> tuple[GpuTarget, ...]:
    """The AMD GPUs and their gfx target: the KFD topology's, else the knowledge table's."""
    from kfdguard import knowledge

    nodes = {n.slot: n for n in facts.kfd.gpu_nodes}
    out = []
    for g in facts.amd_gpus:
        asic, name = knowledge.identify(g.device, g.revision)
        node = nodes.get(g.slot)
        gfx = (node.gfx if node is not None else None) or (asic.gfx if asic is not None else None)
        out.append(GpuTarget(g.slot, name or f"AMD GPU {g.ids}", gfx, node.index if node is not None else None))
    return tuple(out)


# gfx9's steppings are different chips (Vega 10, Vega 20, MI100, MI200...): only the APUs run
# Vega 10's code, the override kfd-facts.md and the seed's OVERRIDES table give them (9.0.0).
GFX9_NEIGHBOURS = {"gfx902": "gfx900", "gfx909": "gfx900", "gfx90c": "gfx900"}


def neighbours(gfx: str, other: str) -> bool:
    """Whether code for ``other`` is the usual stand-in for ``gfx`` (same major.minor; in gfx9 only the APUs)."""
    if gfx.startswith("gfx9") and len(gfx) == 6:
        return GFX9_NEIGHBOURS.get(gfx) == other
    # From gfx10 on, a generic family (LLVM's table) is a set of chips close enough to share code;
    # gfx1150 and gfx1152 users run gfx1100's with HSA_OVERRIDE_GFX_VERSION=11.0.0.
    for members in GENERIC.values():
        if gfx in members and other in members:
            return True
    return family(gfx) == family(other)


def _nearest(gfx: str, processors: Sequence[str]) -> str | None:
    """The closest target of the same major.minor: stepping 0 (the base chip) first, then the nearest stepping."""
    same = [p for p in processors if not p.endswith("generic") and p != gfx and neighbours(gfx, p)]
    if not same:
        return None
    step = int(gfx[-1], 16)
    return min(same, key=lambda p: (int(p[-1], 16) != 0, abs(int(p[-1], 16) - step), p))


def match(gfx: str, targets: Sequence[str]) -> Match:
    parsed = [t for t in (parse_target(x) for x in targets) if t is not None]
    if not parsed:
        return Match("unknown")
    exact = [t for t in parsed if t.processor == gfx]
    if exact:
        # Code without feature demands first: it loads whatever the xnack/sramecc mode.
        best = min(exact, key=lambda t: len(t.features))
        return Match("exact", str(best), note=feature_note(best) if all(t.features for t in exact) else "")
    generic = [t for t in parsed if t.generic and runs_on(t, gfx)]
    if generic:
        return Match("generic", str(generic[0]))
    return Match("missing", nearest=_nearest(gfx, sorted({t.processor for t in parsed})))


def _stack_match(stack: Stack, gfx: str) -> tuple[Match, list[Component]]:
    """The stack's verdict: the worst of its components that carry a target list; those lacking the target."""
    judged = [(c, match(gfx, c.targets)) for c in stack.components if c.targets and c.error is None]
    if not judged:
        return Match("unknown"), []
    lacking = [c for c, m in judged if m.status == "missing"]
    if lacking:
        processors = sorted({t.split(":")[0] for c in lacking for t in c.targets})
        return Match("missing", nearest=_nearest(gfx, processors)), lacking
    generic = [m for _, m in judged if m.status == "generic"]
    return (generic[0] if generic else judged[0][1]), []


def _contexts(software: SoftwareFacts, stack: Stack) -> list[tuple[str, dict[str, EnvSetting]]]:
    """The environments the stack runs in: the caller's, and the units that run it."""
    by_origin: dict[str, dict[str, EnvSetting]] = {}
    # ollama runs its bundled ROCm when it has one: its unit's variables do not reach the other stacks.
    bundled = any(st.kind == "ollama" for st in software.stacks)
    for s in software.env:
        if s.unit is not None and s.unit.startswith("ollama") and stack.kind != "ollama" and bundled:
            continue
        key = s.unit or CALLER
        by_origin.setdefault(key, {})[s.name] = s  # later lines win, as in systemd
    return list(by_origin.items())


def _evidence(stack: Stack, components: Sequence[Component]) -> list[str]:
    out = []
    for c in components or stack.components:
        shown = ", ".join(c.targets[:24]) + (f" (+{len(c.targets) - 24})" if len(c.targets) > 24 else "")
        how = {"name": f"{c.files} file names", "kpack": "kernel packs"}.get(c.source, "offload bundles")
        out.append(f"{c.path}: {shown or 'no targets'} ({how})")
    return out


def _override(
    stack: Stack, gpu: GpuTarget, gfx: str, m: Match, setting: EnvSetting, processors: Sequence[str], var: str
) -> Finding:
    value = setting.value
    where = f"{setting.name}={value} in the {setting.origin}"
    evidence = [where, f"{gpu.slot}: {gfx}", *_evidence(stack, ())]
    wanted = gfx_of_override(value)
    if wanted is None:
        return Finding(
            "userspace-override-invalid",
            E,
            f"{where} is not major.minor.stepping: ROCm ignores or rejects it",
            f"remove it, or set it to {override_for(gfx)} (the GPU's own target)",
            tuple(evidence),
            gpu.slot,
        )
    if wanted == gfx and m.status not in ("exact", "generic"):
        return Finding(
            "userspace-override-unneeded",
            W,
            f"{where} names the GPU's own target, so it changes nothing, and {stack.name} has no code for {gfx} "
            f"({gpu.name})",
            _missing_remedy(stack, gfx, m, var),
            tuple(evidence),
            gpu.slot,
        )
    # Another instruction set is wrong whatever the stack carries: ROCm reports the GPU as that target
    # and loads its code, even when the stack has the GPU's own.
    if wanted != gfx and not neighbours(gfx, wanted):
        return Finding(
            "userspace-override-wrong",
            E,
            f"{where} makes ROCm load code built for {wanted} on {gfx} ({gpu.name}), another "
            "instruction set: kernels fail to load ('invalid device function') or fault the GPU",
            (
                f"remove {setting.name}={value} from the {setting.origin}"
                if m.status in ("exact", "generic")
                else _missing_remedy(stack, gfx, m, var)
                + f"; and remove {setting.name}={value} from the {setting.origin}"
            ),
            tuple(evidence),
            gpu.slot,
        )
    if m.status in ("exact", "generic"):
        own = "names the GPU's own target" if wanted == gfx else f"makes {stack.name} run code built for {wanted}"
        return Finding(
            "userspace-override-unneeded",
            W,
            f"{where} {own}, but {stack.name} has code for {gfx} ({gpu.name}): the override is not needed",
            f"remove {setting.name} from the {setting.origin}",
            tuple(evidence),
            gpu.slot,
        )
    if wanted not in processors:
        return Finding(
            "userspace-override-wrong",
            E,
            f"{where} makes ROCm look for code built for {wanted}, which {stack.name} has none of either",
            _missing_remedy(stack, gfx, m, var),
            tuple(evidence),
            gpu.slot,
        )
    return Finding(
        "userspace-override-workaround",
        W,
        f"{stack.name} has no code for {gfx} ({gpu.name}); {where} makes it run code built for {wanted}: "
        "the unsupported workaround AMD warns about (it may crash or compute wrong results)",
        _missing_remedy(stack, gfx, m, var),
        tuple(evidence),
        gpu.slot,
    )


def _missing_remedy(stack: Stack, gfx: str, m: Match, var: str = "HSA_OVERRIDE_GFX_VERSION") -> str:
    remedy = "use " + REBUILD.get(stack.kind, "a build of it for {gfx}").format(gfx=gfx)
    if m.nearest:
        remedy += (
            f"; the unsupported workaround is {var}={override_for(m.nearest)} in the program's "
            f"environment (runs code built for {m.nearest}; it may crash or compute wrongly)"
        )
    return remedy


def visible_count(name: str, value: str, count: int) -> int | None:
    """How many of ``count`` GPUs a visibility variable leaves; None when that cannot be told (UUIDs).

    ROCr filters whenever ROCR_VISIBLE_DEVICES is set, empty included (ROCR-Runtime flag.h:
    filter_visible_gpus_ = IsEnvVarSet). HIP (rocclr device/rocm/rocdevice.cpp) reads
    HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when that is empty, filters only a non-empty
    list, and stops at the first entry that is not an index of a GPU it has ("anything to the
    right of invalid deviceId has to be discarded")."""
    rocr = name == "ROCR_VISIBLE_DEVICES"
    if value.strip() == "":
        return 0 if rocr else count
    indices = set()
    for item in value.split(","):
        text = item.strip()
        if text.startswith("GPU-"):
            return None
        valid = text.isascii() and text.isdigit() and len(text) <= 6 and str(int(text)) == text and int(text) < count
        if not valid:
            if rocr:
                continue  # ROCr's handling of a bad entry is not established here: count the good ones
            break
        indices.add(int(text))
    return len(indices)


def _hides(name: str, value: str, count: int) -> bool:
    """Whether a visibility variable leaves none of ``count`` GPUs."""
    return visible_count(name, value, count) == 0


def environment_visibility(env: Mapping[str, str], count: int) -> tuple[bool, str]:
    """Whether an environment leaves any of ``count`` AMD GPUs visible to ROCm, and why (pure).

    ROCr applies ROCR_VISIBLE_DEVICES to its agents first; HIP then indexes what is left with
    HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when that is unset (HIP honours both)."""
    if count == 0:
        return False, "this machine has no AMD GPU for ROCm to see"
    said = []
    left, narrowed = count, False
    hip = "HIP_VISIBLE_DEVICES" if env.get("HIP_VISIBLE_DEVICES", "") != "" else "CUDA_VISIBLE_DEVICES"
    for name in ("ROCR_VISIBLE_DEVICES", hip):
        if name not in env:
            continue
        value = env[name]
        if value == "" and name != "ROCR_VISIBLE_DEVICES":
            continue  # HIP reads an empty list as no list
        visible = visible_count(name, value, left)
        if visible is None:
            said.append(f"{name}={value!r} names GPUs by UUID, which only ROCm can match")
            continue
        if visible == 0:
            of = f"the {left} left by ROCR_VISIBLE_DEVICES" if narrowed else f"the {count} on this machine"
            return False, f"{name}={value!r} hides every AMD GPU ({of}): ROCm programs started here see no GPU"
        said.append(f"{name}={value!r} leaves {visible} of {left}")
        left, narrowed = visible, True
    if not said:
        return True, "no visibility variable is set: ROCm programs started here see every AMD GPU"
    return True, "; ".join(said)


def _environment(software: SoftwareFacts, gpus: Sequence[GpuTarget]) -> list[Finding]:
    findings = []
    for s in software.env:
        if s.name in VISIBILITY and gpus and _hides(s.name, s.value, len(gpus)):
            findings.append(
                Finding(
                    "userspace-gpus-hidden",
                    E,
                    f"{s.name}={s.value!r} in the {s.origin} hides every AMD GPU "
                    f"({len(gpus)} on this machine): ROCm programs there see no GPU",
                    f"remove {s.name} from the {s.origin}, or list devices 0 to {len(gpus) - 1}",
                    (f"{s.name}={s.value!r} ({s.origin})",),
                )
            )
        elif s.name == "HSA_ENABLE_SDMA" and s.value.strip() == "0":
            findings.append(
                Finding(
                    "userspace-sdma-disabled",
                    I,
                    f"HSA_ENABLE_SDMA=0 in the {s.origin}: ROCr copies memory with shader kernels "
                    "instead of the GPU's DMA (SDMA) engines. It is a debugging switch and a "
                    "workaround for copy hangs or corruption on some systems, not a speed-up: it "
                    "takes compute units away from the program",
                    f"remove it from the {s.origin} unless it works around a copy problem seen there",
                    (f"HSA_ENABLE_SDMA=0 ({s.origin})",),
                )
            )
        elif s.name == "HCC_AMDGPU_TARGET":
            findings.append(
                Finding(
                    "userspace-hcc-target",
                    I,
                    f"HCC_AMDGPU_TARGET={s.value} in the {s.origin} is read by build scripts only "
                    "(the retired HCC compiler and old PyTorch builds); it changes nothing for a "
                    "running program, which loads the code its files carry",
                    "",
                    (f"HCC_AMDGPU_TARGET={s.value} ({s.origin})",),
                )
            )
    return findings


def _override_of(ctx: dict[str, EnvSetting], gpu: GpuTarget) -> EnvSetting | None:
    """The override libhsakmt applies to the GPU in one environment: its node's own variable, else the global one."""
    own = ctx.get(f"{PER_NODE_OVERRIDE}{gpu.node}") if gpu.node is not None else None
    return own or ctx.get("HSA_OVERRIDE_GFX_VERSION")


def _override_var(gpu: GpuTarget, gpus: Sequence[GpuTarget]) -> str:
    """The variable a workaround for this GPU should set: the per-node one where GPUs of other targets would
    get the global override too."""
    others = {g.gfx for g in gpus if g.slot != gpu.slot}
    if gpu.node is not None and others - {gpu.gfx}:
        return f"{PER_NODE_OVERRIDE}{gpu.node}"
    return "HSA_OVERRIDE_GFX_VERSION"


def _unused_node_overrides(software: SoftwareFacts, gpus: Sequence[GpuTarget]) -> list[Finding]:
    """Per-node overrides naming a node that is no GPU: libhsakmt never reads them (CPU nodes skip the override)."""
    nodes = {g.node: g for g in gpus if g.node is not None}
    if not nodes:
        return []  # without the KFD topology the nodes are not known: nothing to say
    findings = []
    shown = ", ".join(f"node {n} {g.gfx or '?'} ({g.name})" for n, g in sorted(nodes.items()))
    for s in software.env:
        node = override_node(s.name)
        if node is None or node in nodes:
            continue
        fix = " or ".join(f"{PER_NODE_OVERRIDE}{n}" for n in sorted(nodes))
        findings.append(
            Finding(
                "userspace-override-node",
                W,
                f"{s.name}={s.value} in the {s.origin} names KFD node {node}, which is no GPU here "
                f"(the GPUs are {shown}): ROCm never applies it. The number is the KFD topology node "
                "(rocminfo's 'Node:'), where CPUs come first, not the GPU's index in a program",
                f"rename it to {fix} (the GPU it is meant for) in the {s.origin}, or remove it",
                (f"{s.name}={s.value} ({s.origin})", f"GPU nodes: {shown}"),
            )
        )
    return findings


def _mixed(software: SoftwareFacts) -> list[Finding]:
    """Two ROCm releases on one library search path (ld.so.conf, or an LD_LIBRARY_PATH)."""

    def version(stack: Stack) -> str | None:
        return stack.version or stack.runtime

    by_dir = {s.lib_dir: s for s in software.stacks if s.lib_dir and version(s)}
    paths: list[tuple[str, list[str]]] = []
    if software.ld_paths:
        paths.append(("ld.so.conf", [d for d, _ in software.ld_paths]))
    for s in software.env:
        if s.name == "LD_LIBRARY_PATH":
            paths.append((f"LD_LIBRARY_PATH of the {s.origin}", [p.rstrip("/") for p in s.value.split(":") if p]))
    findings = []
    for where, dirs in paths:
        stacks = [by_dir[d] for d in dict.fromkeys(dirs) if d in by_dir]
        versions = {version(s) for s in stacks}
        if len(versions) > 1:
            listed = ", ".join(f"{s.lib_dir} ({version(s)})" for s in stacks)
            findings.append(
                Finding(
                    "userspace-rocm-mixed",
                    W,
                    f"{where} holds {len(versions)} ROCm releases: {listed}. Programs load each "
                    "library from the first directory that has it, so HIP, rocBLAS and their "
                    "Tensile files can come from different releases and fail to load or crash",
                    f"keep one ROCm release on the search path ({where})",
                    (f"{where}: {listed}",),
                )
            )
    return findings


def assess_installed(facts: Facts) -> SoftwareVerdict:
    """What the facts' inventory can run on each AMD GPU, through ROCm and through Vulkan, and which backend
    each application takes."""
    from kfdguard import knowledge
    from kfdguard.userspace.application_rules import GpuInfo, application_verdicts
    from kfdguard.userspace.vulkan_rules import vulkan_gpus

    assert facts.software is not None
    gpus = gpu_targets(facts)
    vulkan = vulkan_gpus(facts, {g.slot: g.gfx for g in gpus})
    verdict = assess_software(facts.software, gpus)
    by_slot = {g.slot: (knowledge.identify(g.device, g.revision)[0], g.vram_total) for g in facts.amd_gpus}
    info = []
    for g in gpus:
        asic, vram = by_slot.get(g.slot, (None, None))
        info.append(GpuInfo(g.slot, g.name, g.gfx, asic.apu if asic is not None else None, vram))
    apps = application_verdicts(facts.software, info, verdict.rows, vulkan)
    findings = (*verdict.findings, *_vulkan_alternatives(verdict.rows, vulkan, gpus))
    return SoftwareVerdict(findings, verdict.rows, vulkan, apps)


def _vulkan_alternatives(rows: Sequence[Row], vulkan: Sequence[VulkanGpu], gpus: Sequence[GpuTarget]) -> list[Finding]:
    """For a GPU no installed ROCm stack has code for: whether Vulkan is the way, and what it takes."""
    out = []
    names = {g.slot: g for g in gpus}
    for vk in vulkan:
        mine = [r for r in rows if r.slot == vk.slot]
        if not mine or any(r.status in ("runs", "runs-generic") for r in mine):
            continue
        gfx = names[vk.slot].gfx if vk.slot in names else None
        where = f"{gfx or '?'} ({vk.name})"
        if vk.ready:
            who = f"; {', '.join(vk.denied)} cannot open its render node" if vk.denied else ""
            out.append(
                Finding(
                    "userspace-vulkan-ready",
                    I,
                    f"no installed ROCm stack runs {where}, but Vulkan does ({vk.driver}){who}: llama.cpp's "
                    "Vulkan backend and ollama's run on it",
                    "build llama.cpp with -DGGML_VULKAN=ON, or use ollama's Vulkan backend "
                    "(docs/USERSPACE.md, 'Vulkan')",
                    (vk.detail,),
                    vk.slot,
                )
            )
        elif vk.remedy:
            out.append(
                Finding(
                    "userspace-vulkan-not-ready",
                    I,
                    f"no installed ROCm stack runs {where}, and Vulkan cannot either: {vk.detail}",
                    vk.remedy + "; then llama.cpp's and ollama's Vulkan backends run on it",
                    (vk.detail,),
                    vk.slot,
                )
            )
    return out


def assess_software(software: SoftwareFacts, gpus: Sequence[GpuTarget]) -> SoftwareVerdict:
    findings: list[Finding] = [
        *_environment(software, gpus),
        *_unused_node_overrides(software, gpus),
        *_mixed(software),
    ]
    rows: list[Row] = []
    covered: list[str] = []
    for stack in software.stacks:
        processors = sorted({t.split(":")[0] for c in stack.components for t in c.targets})
        for gpu in gpus:
            if gpu.gfx is None:
                rows.append(Row(stack.name, gpu.slot, None, "unknown", "the GPU's gfx target is unknown"))
                continue
            m, lacking = _stack_match(stack, gpu.gfx)
            var = _override_var(gpu, gpus)
            overrides = [o for o in (_override_of(ctx, gpu) for _, ctx in _contexts(software, stack)) if o is not None]
            for setting in overrides:
                findings.append(_override(stack, gpu, gpu.gfx, m, setting, processors, var))
            if m.status == "unknown":
                rows.append(Row(stack.name, gpu.slot, gpu.gfx, "unknown", "no target list could be read"))
            elif m.status == "missing":
                detail = "no code for " + gpu.gfx + (f" (nearest {m.nearest})" if m.nearest else "")
                rows.append(Row(stack.name, gpu.slot, gpu.gfx, "override" if overrides else "no-code", detail))
                if not overrides:
                    names = ", ".join(c.name for c in lacking)
                    findings.append(
                        Finding(
                            "userspace-target-unsupported",
                            W,
                            f"{stack.name} ({stack.path}) has no code for {gpu.gfx} ({gpu.name}) "
                            f"in {names}: programs using it fail with 'invalid device function' "
                            "or 'no kernel image'",
                            _missing_remedy(stack, gpu.gfx, m, var),
                            tuple(_evidence(stack, lacking)),
                            gpu.slot,
                        )
                    )
            else:
                how = "runs" if m.status == "exact" else "runs-generic"
                detail = f"code for {m.via}" + (f"; {m.note}" if m.note else "")
                rows.append(Row(stack.name, gpu.slot, gpu.gfx, how, detail))
                covered.append(f"{stack.name} ({gpu.gfx})")
    if covered:
        findings.append(
            Finding(
                "userspace-targets-covered",
                I,
                "code for the GPU is installed: " + ", ".join(dict.fromkeys(covered)),
                "",
                tuple(f"{s.name}: {s.path}" for s in software.stacks),
            )
        )
    return SoftwareVerdict(tuple(findings), tuple(rows))
