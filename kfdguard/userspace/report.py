"""The "Software" part of `kfdguard check`: text lines and the JSON object."""

from __future__ import annotations

from kfdguard.userspace.assess import assess_installed
from kfdguard.verdict import clean

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import Facts, SoftwareFacts, VulkanFacts
    from kfdguard.userspace.vulkan_rules import VulkanGpu

SHOWN_TARGETS = 16


def software_json(facts: Facts) -> dict[str, object] | None:
    software = facts.software
    if software is None:
        return None
    verdict = assess_installed(facts)
    rows = verdict.rows
    return {
        "stacks": [
            {
                "kind": s.kind,
                "name": s.name,
                "path": s.path,
                "version": s.version,
                "hip_runtime": s.runtime,
                "targets": list(s.targets),
                "truncated": s.truncated,
                "components": [
                    {
                        "name": c.name,
                        "path": c.path,
                        "targets": list(c.targets),
                        "source": c.source,
                        "files": c.files,
                        "error": c.error,
                    }
                    for c in s.components
                ],
                "gpus": [
                    {"slot": r.slot, "gfx": r.gfx, "status": r.status, "detail": r.detail}
                    for r in rows
                    if r.stack == s.name
                ],
            }
            for s in software.stacks
        ],
        "environment": [{"name": e.name, "value": e.value, "origin": e.origin, "unit": e.unit} for e in software.env],
        "library_paths": [{"directory": d, "file": f} for d, f in software.ld_paths],
        "tools": list(software.tools),
        "problems": [{"path": p.path, "reason": p.reason} for p in software.problems],
        **({"vulkan": _vulkan_json(software.vulkan, verdict.vulkan)} if software.vulkan.read else {}),
        "applications": [
            {"name": v.application, "kind": v.kind, "slot": v.slot, "via": v.via, "detail": v.detail,
             "remedy": v.remedy, "files": list(v.cites)}
            for v in verdict.applications
        ],
    }  # fmt: skip


def _vulkan_json(vulkan: VulkanFacts, gpus: tuple[VulkanGpu, ...]) -> dict[str, object]:
    return {
        "loader": vulkan.loader,
        "drivers": [
            {"manifest": i.manifest, "library_path": i.library_path, "library": i.library, "driver": i.driver,
             "api_version": i.api_version, "error": i.error}
            for i in vulkan.icds
        ],
        "gpus": [
            {"slot": g.slot, "ready": g.ready, "driver": g.driver, "detail": g.detail, "remedy": g.remedy,
             "users_denied": list(g.denied)}
            for g in gpus
        ],
    }  # fmt: skip


def _targets(targets: tuple[str, ...]) -> str:
    if not targets:
        return "no targets found"
    shown = " ".join(targets[:SHOWN_TARGETS])
    return shown + (f" (+{len(targets) - SHOWN_TARGETS})" if len(targets) > SHOWN_TARGETS else "")


def software_lines(facts: Facts) -> list[str]:
    software: SoftwareFacts | None = facts.software
    if software is None:
        return []
    verdict = assess_installed(facts)
    rows = verdict.rows
    lines = ["", "  Software"]
    if not software.stacks:
        lines.append("    no ROCm, ollama, PyTorch-ROCm or llama.cpp HIP stack found")
    for s in software.stacks:
        lines.append(f"    {s.name}  {s.path}")
        lines.append(f"      targets  {_targets(s.targets)}")
        lines.extend(f"      {c.path}: {c.error}" for c in s.components if c.error)
        lines.extend(f"      {r.slot} {r.gfx or '?'}: {r.status} ({r.detail})" for r in rows if r.stack == s.name)
    for e in software.env:
        lines.append(f"    env      {e.name}={e.value} ({e.origin})")
    if software.tools:
        lines.append(f"    tools    {' '.join(software.tools)}")
    for v in verdict.applications:
        fix = f"; {v.remedy}" if v.remedy and v.via == "CPU" else ""
        lines.append(f"    app      {v.application} on {v.slot}: {v.via} ({v.detail}{fix})")
    for g in verdict.vulkan:
        state = f"ready ({g.driver})" if g.ready else "not ready"
        lines.append(f"    Vulkan   {g.slot}: {state}: {g.detail}")
        if g.denied:
            lines.append(f"             cannot open its render node: {', '.join(g.denied)}")
    # File names and unit files are the machine's: no control character of theirs reaches the terminal.
    return [clean(line) for line in lines]
