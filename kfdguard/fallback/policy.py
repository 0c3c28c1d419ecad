"""Pure decisions of the kernel-fallback policy.

The rules that must always hold (each has a hypothesis test):
- never recommend a kernel that is not installed or not bootable;
- never loop: a kernel that failed after a fallback is not chosen again until
  the set of installed kernels changes, and at most one automatic attempt is
  made per boot;
- never touch the boot loader unless the policy says so (oneshot, pin), and
  never reboot;
- a running kernel that runs compute but is unstable (live GPU health: it reset
  repeatedly) is a recommendation only, acted on only with ``fallback.unstable: act``.

"Good" is "compute came up and stayed healthy": each kernel's record keeps its
last HEALTH_BOOTS boots on which compute came up, each with the resets, ring
timeouts and hangs the resident service saw during it (kfdguard/health/store.py).
"""

from __future__ import annotations

from kfdguard import knowledge
from kfdguard.facts import HEALTH_BOOTS, BootHealth, Facts, History, InstalledKernel, KernelRecord
from kfdguard.knowledge.model import Asic
from kfdguard.record import replace
from kfdguard.verdict import KernelChoice, Recommendation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.probe.bootspec import LoaderTarget

# Findings whose cause a different kernel can remove.
KERNEL_CAUSES = frozenset({"kernel-too-old", "kfd-not-built", "dkms-not-built", "module-signature-rejected"})
# fallback.unstable_resets' default (config.FallbackConfig): one reset can be one program's bad shader; a
# kernel (or its firmware) whose GPU resets three times in one boot is what users report as "resets under load".
UNSTABLE_RESETS = 3


def fingerprint(kernels: tuple[InstalledKernel, ...]) -> str:
    """Identifies the installed kernel set: a failed fallback is retried only after it changes."""
    return ",".join(sorted(k.release for k in kernels))


def capability(kernel: InstalledKernel, asic: Asic | None, running_hsa: str | None = None) -> tuple[bool | None, str]:
    hsa = running_hsa if running_hsa is not None else kernel.hsa_amd
    if hsa == "n":
        return False, "built without CONFIG_HSA_AMD"
    if not kernel.amdgpu:
        return False, "no amdgpu module installed for it"
    if asic is None:
        return None, "the GPU is not in kfdguard's tables"
    if asic.kfd_since is None:
        return False, f"KFD never supported {asic.family}"
    if kernel.version is not None and (kernel.version[0], kernel.version[1]) >= asic.kfd_since:
        return True, ""
    if kernel.dkms_amdgpu:
        return True, "amdgpu-dkms is built for it"
    need = f"{asic.kfd_since[0]}.{asic.kfd_since[1]}"
    return False, f"older than {need}, which {asic.gfx or asic.family} needs, and no amdgpu-dkms for it"


def _asics(facts: Facts) -> list[Asic | None]:
    return [knowledge.identify(g.device, g.revision)[0] for g in facts.amd_gpus]


def _failed_after_fallback(history: History, release: str, installed: str) -> bool:
    return any(a.target == release and a.result == "failed" and a.installed == installed for a in history.attempts)


def choices(facts: Facts, resets: int = UNSTABLE_RESETS) -> list[KernelChoice]:
    asics = _asics(facts)
    installed = fingerprint(facts.kernels)
    # What the resident service saw and no enforce pass has recorded yet counts already.
    history = fold_health(facts.history, facts.health.boots)
    result = []
    for kernel in facts.kernels:
        reasons: list[str] = []
        entry = facts.bootloader.entry_for(kernel.release)
        if entry is None:
            reasons.append(f"no {facts.bootloader.kind} entry boots it")
        elif entry.bad:
            reasons.append("its boot entry ran out of boot tries: it did not reach boot-complete.target")
        if kernel.initrd is None:
            reasons.append("no initramfs")
        if not kernel.modules:
            reasons.append("no /lib/modules tree")
        running_hsa = facts.kernel.symbol("CONFIG_HSA_AMD") if kernel.release == facts.kernel.release else None
        capable: bool | None = True
        for asic in asics:
            ok, why = capability(kernel, asic, running_hsa)
            if ok is False:
                capable = False
                reasons.append(why)
                break
            if ok is None:
                capable = None
                reasons.append(why)
        record = history.kernels.get(kernel.release, KernelRecord())
        troubled = [b for b in record.boots if b.troubled]
        result.append(
            KernelChoice(
                release=kernel.release,
                entry=entry.id if entry else None,
                bootable=entry is not None and kernel.initrd is not None and kernel.modules,
                capable=capable,
                reasons=tuple(reasons),
                last=record.last,
                failed_after_fallback=_failed_after_fallback(facts.history, kernel.release, installed),
                ok=record.ok,
                failed=record.failed,
                out_of_tries=entry is not None and entry.bad,
                healthy=len(record.boots) - len(troubled),
                troubled=len(troubled),
                unstable=sum(1 for b in troubled if b.unstable(resets)),
                trouble=describe(troubled[-1]) if troubled else "",
            )
        )
    return result


def recommend(
    facts: Facts, codes: set[str], policy: str, unstable: str = "report", resets: int = UNSTABLE_RESETS
) -> Recommendation:
    """Which installed kernel to boot instead of the running one, if any.

    ``unstable`` and ``resets``: fallback.unstable and fallback.unstable_resets.
    """
    running = facts.kernel.release
    kinds = choices(facts, resets)
    mine = next((c for c in kinds if c.release == running), None)
    needed = bool(facts.amd_gpus) and ((mine is not None and mine.capable is False) or bool(codes & KERNEL_CAUSES))
    bootloader = facts.bootloader.kind
    if not needed and facts.amd_gpus and mine is not None and mine.unstable:
        return _away_from_unstable(facts, mine, kinds, policy, unstable == "act")
    if not needed:
        return Recommendation(
            policy, running, False, None, None, "the running kernel can run compute", False, tuple(kinds), bootloader
        )
    eligible = [
        c for c in _bootable_others(kinds, running) if c.capable is True or (c.capable is None and c.last == "ok")
    ]
    passed_over = [c.release for c in kinds if c.release != running and c.out_of_tries]
    if not eligible:
        why = "no other installed, bootable kernel can run compute on this GPU" + _passed_over(passed_over)
        return Recommendation(policy, running, True, None, None, why, False, tuple(kinds), bootloader)

    best = max(eligible, key=lambda c: rank(c, facts))
    reason = explain_choice(best) + _passed_over(passed_over)
    default = facts.bootloader.default_release
    return Recommendation(
        policy, running, True, best.release, best.entry, reason, default == best.release, tuple(kinds), bootloader,
        loader_entry=_loader_entry(facts, best),
    )  # fmt: skip


def _bootable_others(kinds: list[KernelChoice], running: str) -> list[KernelChoice]:
    """Kernels a fallback may go to, whatever the reason: not the running one, bootable, not one that
    failed after kfdguard arranged it (with the installed set unchanged), not out of boot tries."""
    return [
        c for c in kinds if c.release != running and c.bootable and not c.failed_after_fallback and not c.out_of_tries
    ]


def _loader_entry(facts: Facts, best: KernelChoice) -> str | None:
    """What bootctl is given for the recommended entry: systemd-boot's name for it depends on its version."""
    if facts.bootloader.kind == "systemd-boot" and best.entry is not None:
        return sdboot_target(facts, best.entry, persistent=False).value
    return None


def sdboot_target(facts: Facts, entry_id: str, *, persistent: bool) -> LoaderTarget:
    """The name to give bootctl for the entry ``entry_id`` (see bootspec.loader_target)."""
    # Only for systemd-boot: a GRUB machine's boot pass does not import bootspec.
    from kfdguard.probe.bootspec import LoaderTarget, loader_target

    loader = facts.bootloader
    names = [(e.id, e.path.rpartition("/")[2]) for e in loader.entries]
    entry = next((e for e in loader.entries if e.id == entry_id), None)
    if entry is None:
        return LoaderTarget(entry_id)
    return loader_target(entry.id, entry.path.rpartition("/")[2], loader.loader_info, names, persistent=persistent)


def _away_from_unstable(
    facts: Facts, mine: KernelChoice, kinds: list[KernelChoice], policy: str, act: bool
) -> Recommendation:
    """The running kernel runs compute but its GPU was unstable: a kernel that ran compute and was not."""
    running = mine.release
    state = f"the running {running} runs compute but is unstable: {unstable_text(mine)}" + (
        "" if act else " (fallback.unstable: report, so kfdguard only recommends)"
    )
    eligible = [
        c for c in _bootable_others(kinds, running) if c.capable is not False and c.last == "ok" and not c.unstable
    ]
    bootloader = facts.bootloader.kind
    if not eligible:
        why = f"{state}; no other installed, bootable kernel ran compute here without being unstable"
        return Recommendation(policy, running, False, None, None, why, False, tuple(kinds), bootloader, True, act)
    best = max(eligible, key=lambda c: rank(c, facts))
    default = facts.bootloader.default_release
    return Recommendation(policy, running, False, best.release, best.entry, f"{explain_choice(best)}; {state}",
                          default == best.release, tuple(kinds), bootloader, True, act,
                          loader_entry=_loader_entry(facts, best))  # fmt: skip


def rank(c: KernelChoice, facts: Facts) -> tuple[bool, bool, int, bool, tuple[int, int, int], str]:
    """Order of preference among eligible kernels, best last (pure).

    The last known good first; among those, one that was not unstable on any of
    its recent boots; then the one whose boots ran compute and stayed healthy
    most often, net of those on which compute did not come up; then one whose
    last boot did not fail; then the newest. Kernels whose boot entry ran out
    of tries never get here (they did not boot far enough to be trusted,
    whatever kfdguard saw).
    """
    kernel = next(k for k in facts.kernels if k.release == c.release)
    good = c.last == "ok"
    return (good, c.unstable == 0, c.ok - c.troubled - c.failed if good else 0, c.last != "failed",
            kernel.version or (0, 0, 0), c.release)  # fmt: skip


def explain_choice(c: KernelChoice) -> str:
    """Why this kernel is the one to boot, from its history and its health."""
    if c.last == "ok":
        boots = c.ok + c.failed
        seen = (
            f"it ran compute on {c.ok} of its {boots} boots kfdguard saw, the last one included (last known good)"
            if boots > 1
            else "it ran compute before (last known good)"
        )
        return seen + _health(c)
    if c.last == "failed":
        return (
            "the newest kernel that can run compute on this GPU, though compute did not come up "
            f"on its last boot ({c.failed} of {c.ok + c.failed} boots failed)"
        )
    return "the newest kernel that can run compute on this GPU (kfdguard has not seen it boot yet)"


def _health(c: KernelChoice) -> str:
    """What live health said of its recent boots with compute ("" when kfdguard watched none)."""
    watched = c.healthy + c.troubled
    boots = f"{watched} boots" if watched > 1 else "boot"
    if not watched:
        return ""
    if not c.troubled:
        return f", and the GPU stayed healthy (no reset or hang) through its last {boots} with compute"
    if c.unstable:
        return f", but it is unstable too: {unstable_text(c)}"
    return (
        f"; the GPU stayed healthy through {c.healthy} of its last {boots} with compute"
        f" (the latest trouble: {c.trouble})"
    )


def unstable_text(c: KernelChoice) -> str:
    watched = c.healthy + c.troubled
    return f"the GPU reset repeatedly on {c.unstable} of its last {watched} boots with compute (latest: {c.trouble})"


MEANING = {
    "reset-begin": "amdgpu reset the GPU (running GPU programs lost their work)",
    "reset-done": "a GPU reset succeeded",
    "reset-failed": "a GPU reset failed (the GPU stayed unusable)",
    "ring-timeout": "a GPU ring timed out (a job stopped making progress)",
    "ring-recovered": "a hung ring recovered without a full reset",
    "hang": "the GPU's scheduler firmware (HWS or MES) stopped answering",
    "wedged": "the kernel reported the GPU wedged",
}


def describe(boot: BootHealth) -> str:
    """One troubled boot, in words: the counts, when, and what the kernel's last line meant."""
    counts = [
        (boot.resets, "GPU reset"),
        (boot.reset_failures, "failed reset"),
        (boot.ring_timeouts, "ring timeout"),
        (boot.hangs, "scheduler hang"),
    ]
    text = ", ".join(f"{n} {what}{'s' if n > 1 else ''}" for n, what in counts if n) or "no trouble"
    if boot.last_at:
        text += f" in the boot of {boot.last_at[:10]}, the last at {boot.last_at[11:16]} UTC"
    # The cause only, never the kernel's line or the process it named: this text reaches the bus
    # (FallbackRecommendation, findings), which anyone may read, and those lines name other users'
    # programs and pids (issue 35; health/tracker.py). The boot's record keeps the kernel's words.
    meaning = MEANING.get(boot.last_event, "")
    if meaning:
        text += f": {meaning}"
    return text


def _passed_over(releases: list[str]) -> str:
    if not releases:
        return ""
    return f"; passed over {', '.join(releases)}: boot counting marked its entry bad"


def auto_action(rec: Recommendation, history: History, boot_id: str) -> tuple[str | None, str]:
    """What the service does on its own at boot: ("oneshot"|"pin"|None, why)."""
    if rec.policy not in ("oneshot", "pin"):
        return None, f"policy {rec.policy}: the boot loader is left alone"
    if not rec.needed and not (rec.unstable and rec.act_on_unstable):
        return None, rec.reason  # fallback.unstable report: an unstable kernel is only a recommendation
    if rec.kernel is None or rec.entry is None:
        return None, rec.reason
    if any(a.boot_id == boot_id for a in history.attempts):
        return None, "an automatic attempt was already made during this boot"
    if rec.policy == "oneshot" and rec.already_default:
        return None, f"{rec.kernel} is already the default entry: a normal reboot starts it"
    if rec.policy == "pin" and rec.already_default:
        return None, f"{rec.kernel} is already the default entry"
    return rec.policy, f"boot {rec.kernel}: {rec.reason}"


def settle_attempts(history: History, facts: Facts, ready: bool) -> History:
    """At each check: what became of the fallbacks arranged during earlier boots."""
    running = facts.kernel.release
    updated = []
    for a in history.attempts:
        if a.result == "pending" and a.boot_id != facts.kernel.boot_id:
            result = ("ok" if ready else "failed") if a.target == running else "not-booted"
            a = replace(a, result=result)  # noqa: PLW2901 - the settled copy replaces it
        updated.append(a)
    return replace(history, attempts=tuple(updated))


def _gpu_label(device: int, revision: int | None, ids: str) -> str:
    asic = knowledge.identify(device, revision)[0]
    return f"{ids} {asic.gfx if asic and asic.gfx else '?'}"


def record_check(history: History, facts: Facts, ready: bool, now: str) -> History:
    """Note whether compute came up on the running kernel."""
    history = settle_attempts(history, facts, ready)
    if not facts.amd_gpus:
        # Without an AMD GPU a check says nothing about what this kernel can compute.
        return replace(history, problem=None)
    kernels = dict(history.kernels)
    old = kernels.get(facts.kernel.release, KernelRecord())
    gpus = tuple(_gpu_label(g.device, g.revision, g.ids) for g in facts.amd_gpus)
    outcome = "ok" if ready else "failed"
    ok, failed = old.ok, old.failed
    boot = facts.kernel.boot_id
    if boot and boot == old.boot_id:
        # Another check in the same boot: that boot counts once, with its latest outcome.
        if old.last != outcome:
            ok += 1 if ready else -1
            failed += -1 if ready else 1
    else:
        ok += 1 if ready else 0
        failed += 0 if ready else 1
    # This boot joins the kernel's boots with compute (health comes later, from the resident service);
    # a later check of the same boot that finds compute down takes it out again.
    mine = next((b for b in old.boots if boot and b.boot_id == boot), None)
    boots = [b for b in old.boots if not boot or b.boot_id != boot]
    if ready and boot:
        boots.append(mine or BootHealth(boot, facts.kernel.release))
    kernels[facts.kernel.release] = KernelRecord(
        ok=max(ok, 0), failed=max(failed, 0), last=outcome, last_seen=now, gpus=gpus or old.gpus, boot_id=boot,
        boots=tuple(boots[-HEALTH_BOOTS:]),
    )  # fmt: skip
    return fold_health(replace(history, kernels=kernels, problem=None), facts.health.boots)


def fold_health(history: History, boots: tuple[BootHealth, ...]) -> History:
    """The resident service's per-boot health, laid into the records of the boots it belongs to.

    Only a boot the history already holds as one with compute takes it (compute that never came up
    cannot then have reset). Folding again is harmless: each count keeps the larger value, the last
    event the later one, so the same record folded twice, or a restarted service's smaller counts,
    change nothing.
    """
    kernels = dict(history.kernels)
    changed = False
    for boot in boots:
        record = kernels.get(boot.release)
        if record is None:
            continue
        merged = tuple(_merge(b, boot) if b.boot_id == boot.boot_id else b for b in record.boots)
        if merged != record.boots:
            kernels[boot.release] = replace(record, boots=merged)
            changed = True
    return replace(history, kernels=kernels) if changed else history


def _merge(old: BootHealth, new: BootHealth) -> BootHealth:
    latest = new if new.last_at >= old.last_at else old
    return replace(
        old,
        resets=max(old.resets, new.resets),
        reset_failures=max(old.reset_failures, new.reset_failures),
        ring_timeouts=max(old.ring_timeouts, new.ring_timeouts),
        hangs=max(old.hangs, new.hangs),
        last_at=latest.last_at,
        last_event=latest.last_event,
        last_line=latest.last_line,
        last_process=latest.last_process,
    )
