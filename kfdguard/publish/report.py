"""Human and JSON renderings of a check: what ``kfdguard check`` prints."""

from __future__ import annotations

import textwrap

from kfdguard.assess.order import headline
from kfdguard.facts import Facts, PcieLink
from kfdguard.verdict import Finding, GpuStatus, Severity, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kfdguard.diagnose import TextDiagnosis
    from kfdguard.enforce import EnforceReport
    from kfdguard.fallback.apply import Outcome
    from kfdguard.verdict import Recommendation

MARK = {Severity.ERROR: "✗", Severity.WARNING: "!", Severity.INFO: "✓"}

# The version of the JSON contract in schema/kfdguard.schema.json (docs/JSON.md):
# MAJOR.MINOR; a minor step only adds, a major step may remove or change.
SCHEMA_VERSION = "1.6"


def layout(facts: Facts) -> str:
    if not facts.amdgpu.present:
        return "no amdgpu module for this kernel"
    if facts.amdkfd.present:
        return "separate amdkfd module (pre-4.20 layout)"
    if facts.amdgpu.builtin:
        return "KFD built into amdgpu (amdgpu built into the kernel)"
    return "KFD built into amdgpu"


def to_json(facts: Facts, verdict: Verdict, machine: str | None = None) -> dict[str, object]:
    kfd = facts.kfd
    node = kfd.node.stat
    return {
        "schema_version": SCHEMA_VERSION,
        "state": str(verdict.state),
        "ready": verdict.ready,
        "summary": verdict.summary,
        "exit_code": verdict.exit_code,
        "machine": {"root": facts.root, "simulated": facts.simulated, "name": machine},
        "kernel": {
            "release": facts.kernel.release,
            "config_hsa_amd": facts.kernel.symbol("CONFIG_HSA_AMD"),
            "kfd_layout": "amdkfd" if facts.amdkfd.present else "amdgpu",
            "amdgpu_loaded": facts.amdgpu.loaded,
            "os": facts.os.pretty_name,
        },
        "gpus": [
            {
                "slot": g.slot,
                "vendor_id": f"{g.vendor:04x}",
                "device_id": f"{g.device:04x}",
                "revision": None if g.revision is None else f"{g.revision:02x}",
                "name": g.name,
                "family": g.family,
                "gfx_target": g.gfx,
                "driver": g.driver,
                "kfd_node": g.kfd_node,
                "gpu_id": g.gpu_id,
                "render_node": g.render_node,
                "compute_ready": g.compute_ready,
                "reason": g.reason,
                **_resources_json(g),
            }
            for g in verdict.gpus
        ],
        "kfd": {
            "device": kfd.node.path,
            "present": node is not None,
            "mode": None if node is None else f"{node.mode:04o}",
            "owner": None if node is None else facts.accounts.user_name(node.uid),
            "group": None if node is None else facts.accounts.group_name(node.gid),
            "interface_version": None if kfd.version is None else f"{kfd.version[0]}.{kfd.version[1]}",
            "ioctl_error": kfd.version_error,
            "topology_nodes": len(kfd.topology),
            "gpu_nodes": len(kfd.gpu_nodes),
        },
        "log": {
            "read": facts.log.read,
            "source": facts.log.sources[0] if facts.log.sources else None,
            "lines": facts.log.lines,
            "events": [{"rule": e.rule, "class": e.klass, "code": e.code, "boot": e.boot} for e in facts.log.events],
            "unavailable": list(facts.log.unavailable),
        },
        "findings": [finding_json(f) for f in verdict.findings],
        **({"software": _software_json(facts)} if facts.software is not None else {}),
    }


def _software_json(facts: Facts) -> object:
    from kfdguard.userspace.report import software_json

    return software_json(facts)


def finding_json(f: Finding, origin: str = "machine") -> dict[str, object]:
    from kfdguard.evidence.attribution import attribute

    return {
        "code": f.code,
        "severity": str(f.severity),
        "message": f.message,
        "remedy": f.remedy,
        "evidence": list(f.evidence),
        # Who said each evidence line, in the same order (issue 34): origin is "machine" for a check, "text"
        # for a pasted diagnosis, and decides what a line that names no speaker is.
        "sources": [attribute(e, origin=origin) for e in f.evidence],
        "gpu": f.gpu,
        # The lower-floor finding that stops this GPU first; null when this one is not blocked.
        "blocked_by": f.blocked_by,
    }


def _wrap(text: str, indent: str, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ")


def render_findings(findings: tuple[Finding, ...], *, verbose: bool = False) -> list[str]:
    lines: list[str] = []
    for f in findings:
        after = f"  (matters only after {f.blocked_by} is fixed)" if f.blocked_by else ""
        lines.append(f"  {MARK[f.severity]} {f.severity:<7} {f.code}{after}")
        lines.append(_wrap(f.message, "      "))
        if f.remedy:
            lines.append(_wrap("fix: " + f.remedy, "      "))
        shown = f.evidence if verbose else f.evidence[:2]
        for item in shown:
            lines.append(_wrap("seen: " + item, "      "))
        if len(f.evidence) > len(shown):
            lines.append(f"      (+{len(f.evidence) - len(shown)} more with --verbose)")
    return lines


def to_text(
    facts: Facts, verdict: Verdict, machine: str | None = None, *, verbose: bool = False, command: str = "check"
) -> str:
    where = f"simulated machine {machine}" if machine else ("this machine" if facts.root == "/" else facts.root)
    lines = [f"kfdguard {command}: {where}", ""]
    lines.append(
        textwrap.fill(
            f"{verdict.state.upper()}: {verdict.summary}",
            width=100,
            initial_indent="  State    ",
            subsequent_indent="           ",
        )
    )
    release = facts.kernel.release or "unknown"
    osname = f" on {facts.os.pretty_name}" if facts.os.pretty_name else ""
    lines.append(f"  Kernel   {release}{osname}; {layout(facts)}")
    kfd = facts.kfd
    if kfd.node.stat is not None:
        node = kfd.node.stat
        owner = facts.accounts.user_name(node.uid)
        group = facts.accounts.group_name(node.gid)
        version = (
            f"interface {kfd.version[0]}.{kfd.version[1]}" if kfd.version else f"ioctl failed: {kfd.version_error}"
        )
        cpus = len(kfd.topology) - len(kfd.gpu_nodes)
        lines.append(
            f"  KFD      {kfd.node.path} {node.symbolic} {owner}:{group}, {version}, "
            f"topology {len(kfd.gpu_nodes)} GPU + {cpus} CPU node(s)"
        )
    else:
        lines.append(f"  KFD      {kfd.node.path} absent" + ("; /sys/class/kfd present" if kfd.sysfs else ""))
    log = facts.log
    if log.read:
        if log.sources:
            counted = sum(1 for e in log.events if e.klass != "neutral")
            lines.append(f"  Log      {log.sources[0]}: {log.lines} lines read, {counted} KFD/amdgpu event(s)")
        else:
            lines.append(f"  Log      unavailable ({'; '.join(log.unavailable) or 'no source configured'})")
    if verdict.gpus:
        lines.append("")
        lines.append("  GPUs")
        for g in verdict.gpus:
            state = "ready" if g.compute_ready else f"not ready: {g.reason}"
            lines.append(
                f"    {g.slot}  {g.ids}  {g.name}  {g.gfx or '-'}  {g.render_node or '-'}  "
                f"driver={g.driver or 'none'}  {state}"
            )
            link, top = g.link or PcieLink(None, None), g.link_max or PcieLink(None, None)
            described = resources_line(
                g.integrated,
                g.vram_total,
                g.gtt_total,
                g.compute_units,
                link.speed,
                link.width,
                top.speed,
                top.width,
                compute_memory=g.compute_memory,
                ttm_limit=g.ttm_limit,
            )
            if described:
                lines.append(f"      {described}")
    if facts.software is not None:
        from kfdguard.userspace.report import software_lines

        lines.extend(software_lines(facts))
    if verdict.findings:
        lines.append("")
        lines.append("  Findings")
        lines.extend(render_findings(verdict.findings, verbose=verbose))
    lines.append("")
    return "\n".join(lines)


def text_diagnosis_json(d: TextDiagnosis) -> dict[str, object]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kinds": list(d.kinds),
        "established": list(d.established),
        "findings": [finding_json(f, "text") for f in d.findings],
        "unknown": list(d.unknown),
        "overruled": list(d.overruled),
        "exit_code": d.exit_code,
    }


def text_diagnosis_text(d: TextDiagnosis, source: str, *, verbose: bool = False) -> str:
    lines = [f"kfdguard diagnose: {source}", ""]
    kinds = ", ".join(d.kinds) if d.kinds else "nothing kfdguard recognises"
    lines.append(f"  Read     {kinds}")
    if d.established:
        lines.append("")
        lines.append("  What the text shows")
        lines.extend(_wrap(item, "    - ") for item in d.established)
    lines.append("")
    root = headline(d.findings)
    if root is not None and root.severity is Severity.ERROR:
        lines.append(_wrap(f"Root cause: {root.code}: {root.message}", "  "))
        lines.append("")
    if d.findings:
        lines.append("  Findings")
        lines.extend(render_findings(d.findings, verbose=verbose))
    else:
        lines.append("  Findings: none (nothing in the text points to a problem)")
    if d.unknown:
        lines.append("")
        lines.append("  What the text does not show")
        lines.extend(_wrap(item, "    - ") for item in d.unknown)
    if d.overruled and verbose:
        lines.append("")
        lines.append("  Overruled (a GPU's own evidence contradicts them)")
        lines.extend(_wrap(item, "    - ") for item in d.overruled)
    lines.append("")
    return "\n".join(lines)


CHANGE_MARK = {"changed": "+", "would-change": "+", "unchanged": "=", "failed": "!", "skipped": "-"}


def enforce_json(report: EnforceReport, before: Verdict, after: Verdict) -> dict[str, object]:
    return {
        "schema_version": SCHEMA_VERSION,
        "dry_run": report.dry_run,
        "changes": [
            {
                "kind": c.action.kind,
                "target": c.action.target,
                "status": c.status,
                "detail": c.detail or c.action.detail,
                "diff": c.diff,
            }
            for c in report.changes
        ],
        "findings": [finding_json(f) for f in report.findings],
        "state_before": str(before.state),
        "state": str(after.state),
        "ready": after.ready,
        "summary": after.summary,
        "remaining": [finding_json(f) for f in after.findings],
    }


def enforce_text(report: EnforceReport, before: Verdict, after: Verdict, where: str, *, verbose: bool = False) -> str:
    title = "enforce --dry-run" if report.dry_run else "enforce"
    lines = [f"kfdguard {title}: {where}", ""]
    if not report.changes:
        lines.append("  Plan     nothing to do")
    else:
        lines.append("  Plan" + (" (nothing is changed: --dry-run)" if report.dry_run else ""))
        for c in report.changes:
            status = c.status.replace("would-change", "would change")
            lines.append(f"    {CHANGE_MARK.get(c.status, '?')} {c.action.kind:<20} {c.action.target}  [{status}]")
            detail = c.detail or c.action.detail
            if detail:
                lines.append(_wrap(detail, "        "))
            if c.diff and (verbose or report.dry_run):
                lines.extend("        " + line for line in c.diff.rstrip("\n").split("\n"))
    if report.findings:
        lines.append("")
        lines.append("  Problems while enforcing")
        lines.extend(render_findings(report.findings, verbose=verbose))
    lines.append("")
    was = f" (was {before.state.upper()})" if before.state != after.state else ""
    label = "Would be" if report.dry_run else "State"
    state = after if not report.dry_run else before
    lines.append(
        textwrap.fill(
            f"{state.state.upper()}{was if not report.dry_run else ''}: {state.summary}",
            width=100,
            initial_indent=f"  {label:<8} ",
            subsequent_indent="           ",
        )
    )
    remaining = [f for f in after.findings if f.severity is not Severity.INFO]
    if remaining and not report.dry_run:
        lines.append("")
        lines.append("  Still to do by hand")
        lines.extend(render_findings(tuple(remaining), verbose=verbose))
    lines.append("")
    return "\n".join(lines)


def fallback_json(rec: Recommendation, facts: Facts, outcome: Outcome | None) -> dict[str, object]:
    loader = facts.bootloader
    return {
        "schema_version": SCHEMA_VERSION,
        "policy": rec.policy,
        "running": rec.running,
        "needed": rec.needed,
        # The running kernel runs compute but its GPU reset repeatedly on a recent boot (fallback.unstable).
        "unstable": rec.unstable,
        "act_on_unstable": rec.act_on_unstable,
        "recommended": rec.kernel,
        "entry": rec.entry,
        "loader_entry": rec.loader_entry,  # what bootctl is given for it (systemd-boot: version-dependent)
        "reason": rec.reason,
        "already_default": rec.already_default,
        "command": rec.command,
        "bootloader": {
            "kind": loader.kind,
            "default": loader.default_release,
            "next": loader.next_entry,
            "loader_info": loader.loader_info,
        },
        "kernels": [
            {
                "release": c.release,
                "bootable": c.bootable,
                "capable": c.capable,
                "reasons": list(c.reasons),
                "last": c.last,
                "failed_after_fallback": c.failed_after_fallback,
                "entry": c.entry,
                "ok": c.ok,
                "failed": c.failed,
                # Its recent boots with compute (live GPU health): stayed healthy, reset or hung, unstable.
                "health": {
                    "healthy": c.healthy,
                    "troubled": c.troubled,
                    "unstable": c.unstable,
                    "latest_trouble": c.trouble,
                },
            }
            for c in rec.choices
        ],
        "attempts": [
            {"from": a.source, "to": a.target, "mode": a.mode, "at": a.at, "result": a.result}
            for a in facts.history.attempts
        ],
        "result": None
        if outcome is None
        else {"ok": outcome.ok, "message": outcome.message, "commands": list(outcome.commands)},
    }


def _kernel_choices(rec: Recommendation) -> list[str]:
    lines = []
    for c in rec.choices:
        mark = "*" if c.release == rec.kernel else " "
        state = "can run compute" if c.capable else ("unknown" if c.capable is None else "cannot run compute")
        extra = [] if c.bootable else ["not bootable"]
        if c.last:
            extra.append(f"last check: {c.last}")
        if c.failed_after_fallback:
            extra.append("failed after a fallback: not chosen again until the installed kernels change")
        if c.healthy + c.troubled:
            extra.append(f"stayed healthy on {c.healthy} of its last {c.healthy + c.troubled} boots with compute")
        if c.unstable:
            extra.append(f"unstable on {c.unstable} (latest trouble: {c.trouble})")
        lines.append(f"   {mark} {c.release:<24} {state}" + (f" ({'; '.join(c.reasons)})" if c.reasons else ""))
        if extra:
            lines.append(f"     {'':<24} {'; '.join(extra)}")
    return lines


def fallback_text(rec: Recommendation, facts: Facts, outcome: Outcome | None, machine: str | None) -> str:
    where = f"simulated machine {machine}" if machine else ("this machine" if facts.root == "/" else facts.root)
    loader = facts.bootloader
    lines = [f"kfdguard fallback: {where}", ""]
    lines.append(
        f"  Policy   {rec.policy}    boot loader: {loader.kind}"
        + (f", default boots {loader.default_release}" if loader.default_release else "")
        + (f", next boot: {loader.next_entry}" if loader.next_entry else "")
    )
    lines.append(
        f"  Running  {rec.running}: "
        + ("cannot run compute on this GPU" if rec.needed else "can run compute")
        + (", but the GPU resets repeatedly on it" if rec.unstable else "")
    )
    lines.append("")
    lines.append("  Installed kernels")
    lines += _kernel_choices(rec)
    lines.append("")
    if rec.kernel:
        lines.append(_wrap(f"Recommended {rec.kernel}: {rec.reason}.", "  "))
        if rec.already_default:
            lines.append("  It is already the boot loader's default: a normal reboot starts it.")
        elif rec.command:
            lines.append(f"  By hand: {rec.command}")
            lines.append("  Or:      sudo kfdguard fallback apply   (next boot only; --pin for every boot)")
    elif rec.needed or rec.unstable:
        lines.append(_wrap(f"Nothing to recommend: {rec.reason}.", "  "))
    else:
        lines.append("  Nothing to do: the running kernel can run compute.")
    if outcome is not None:
        lines.append("")
        lines.append(_wrap(("Done: " if outcome.ok else "Not done: ") + outcome.message, "  "))
        for command in outcome.commands:
            lines.append(f"    ran: {command}")
    recent = facts.history.attempts[-3:]
    if recent:
        lines.append("")
        lines.append("  Recent fallbacks")
        for a in recent:
            lines.append(f"    {a.at}  {a.source} -> {a.target} ({a.mode}): {a.result}")
    lines.append("")
    return "\n".join(lines)


def findings_from_bus(items: list[list[str]]) -> tuple[Finding, ...]:
    """Findings as the service sends them: (code, severity, message, remedy)."""
    out = []
    for code, severity, message, remedy in items:
        try:
            level = Severity(severity)
        except ValueError:
            level = Severity.WARNING  # a severity this client does not know yet
        out.append(Finding(code, level, message, remedy))
    return tuple(out)


def status_text(status: dict[str, object]) -> str:
    lines = ["kfdguard status (from the service)", ""]
    lines.append(
        textwrap.fill(
            f"{str(status.get('State', '?')).upper()}: {status.get('Summary', '')}",
            width=100,
            initial_indent="  State    ",
            subsequent_indent="           ",
        )
    )
    kfd = status.get("KfdVersion") or "not answering"
    lines.append(f"  Kernel   {status.get('KernelRelease', '?')}; KFD interface {kfd}")
    devices = status.get("Devices") or []
    assert isinstance(devices, list)
    if devices:
        lines.append("")
        lines.append("  GPUs")
        for d in devices:
            ready = "ready" if d.get("ComputeReady") else f"not ready: {d.get('Reason')}"
            ids = f"{d.get('VendorId', 0):04x}:{d.get('DeviceId', 0):04x}"
            lines.append(f"    {d.get('Slot')}  {ids}  {d.get('Name')}  {d.get('GfxTarget') or '-'}  {ready}")
            described = resources_line(
                *(_maybe(d, key, bool) for key in ("Integrated",)),
                *(_maybe(d, key, int) for key in RESOURCE_NUMBERS),
                compute_memory=_maybe(d, "ComputeMemory", int),
                ttm_limit=_maybe(d, "TtmLimit", int),
            )
            if described:
                lines.append(f"      {described}")
    findings = status.get("Findings") or []
    assert isinstance(findings, list)
    if findings:
        lines.append("")
        lines.append("  Findings")
        lines.extend(render_findings(findings_from_bus(findings)))
    rec = status.get("FallbackRecommendation") or {}
    assert isinstance(rec, dict)
    if rec.get("Kernel"):
        lines.append("")
        lines.append(f"  Fallback ({status.get('FallbackPolicy')}): boot {rec['Kernel']}: {rec.get('Reason')}")
    lines.append("")
    return "\n".join(lines)


# The Devices keys of the bus (kfdguard/service/status.py) in resources_line's order after Integrated.
RESOURCE_NUMBERS = ("VramTotal", "GttTotal", "ComputeUnits", "PcieSpeed", "PcieWidth", "PcieMaxSpeed", "PcieMaxWidth")


def _maybe(d: dict[str, object], key: str, kind: type) -> Any:
    value = d.get(key)
    # bool is an int too: a hostile dictionary must not turn True into one lane.
    return value if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)) else None


def _resources_json(g: GpuStatus) -> dict[str, object]:
    link, top = g.link or PcieLink(None, None), g.link_max or PcieLink(None, None)
    return {
        "integrated": g.integrated,
        "vram_total": g.vram_total,
        "gtt_total": g.gtt_total,
        "compute_memory": g.compute_memory,
        "ttm_limit": g.ttm_limit,
        "compute_units": g.compute_units,
        "pcie_speed": link.speed,
        "pcie_width": link.width,
        "pcie_max_speed": top.speed,
        "pcie_max_width": top.width,
    }


def resources_line(
    integrated: bool | None,
    vram: int | None,
    gtt: int | None,
    compute_units: int | None,
    speed: int | None,
    width: int | None,
    max_speed: int | None,
    max_width: int | None,
    *,
    compute_memory: int | None = None,
    ttm_limit: int | None = None,
) -> str:
    """ "discrete · 24.0 GiB VRAM · 16.0 GiB GTT · 96 CUs · PCIe 16.0 GT/s x16"; an APU's also what compute may
    allocate and TTM's limit, "29.3 GiB for compute · TTM limit 29.3 GiB" (issue 38); "" when nothing is known."""
    from kfdguard.parsers.pcie import format_bytes

    parts = [] if integrated is None else ["integrated (APU)" if integrated else "discrete"]
    if vram is not None:
        # An APU's VRAM is the firmware's carve-out of system memory, not memory of its own.
        parts.append(f"{format_bytes(vram)} {'carve-out' if integrated else 'VRAM'}")
    if gtt is not None:
        parts.append(f"{format_bytes(gtt)} GTT")
    if compute_memory is not None and compute_memory != vram:  # a card's VRAM says it already
        parts.append(f"{format_bytes(compute_memory)} for compute")
    if ttm_limit is not None:
        parts.append(f"TTM limit {format_bytes(ttm_limit)}")
    if compute_units is not None:
        parts.append(f"{compute_units} CUs")
    if speed is not None or width is not None:
        now = _link_text(speed, width)
        best = _link_text(max_speed, max_width)
        below = (speed or 0) < (max_speed or 0) or (width or 0) < (max_width or 0)
        parts.append(f"PCIe {now}" + (f" (can do {best})" if below else ""))
    return " · ".join(parts)


def _link_text(speed: int | None, width: int | None) -> str:
    from kfdguard.parsers.pcie import format_speed

    return (
        " ".join(
            p for p in (None if speed is None else format_speed(speed), None if width is None else f"x{width}") if p
        )
        or "unknown"
    )
