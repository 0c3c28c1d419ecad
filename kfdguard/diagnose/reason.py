"""From what a paste shows to findings, with the knowledge and the log rules."""

from __future__ import annotations

import re

from kfdguard import knowledge
from kfdguard.assess.explain import ANONYMOUS_GPU_EVENTS, Cause, gpu_cause, runtime_causes
from kfdguard.diagnose.extract import PastedGpu, TextFacts
from kfdguard.facts import LogEvent
from kfdguard.knowledge.model import Asic
from kfdguard.knowledge.params import BOGUS
from kfdguard.parsers.modprobe import option_pairs, softdep_modules
from kfdguard.probe.system_info import parse_release
from kfdguard.verdict import Finding, Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741
# In pasted text a failure without a PCI id may also be one of these, which a
# paste often shows without the line that named the device.
_ANONYMOUS_FAILURES = ANONYMOUS_GPU_EVENTS | {"amdgpu-fatal-init", "firmware-load-failed", "module-signature-rejected"}

# Claims from popular advice that kfd-facts.md §9 shows to be wrong, and what is true.
WRONG_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"0x7440\b.{0,60}(?:navi ?31|7900)|(?:navi ?31|7900).{0,60}0x7440\b", re.I),
        "0x7440 is not a Navi31 id: consumer RX 7900 cards are 1002:744C, the Pro W7900/W7800 0x7448 and 0x745E",
    ),
    (
        re.compile(r"780m.{0,60}(?:0x)?14e4\b|(?:0x)?14e4\b.{0,60}780m", re.I),
        "the Radeon 780M is 1002:15BF (Phoenix; 0x1900/0x1901 on Hawk Point); 0x14E4 is Broadcom's PCI vendor id",
    ),
    (
        re.compile(
            r"(?:rdna ?3|gfx11|7900|7800|7600).{0,80}(?:kfd|compute|rocm|support)?.{0,40}"
            r"(?:since|from|arrived in|needs?|requires?|added in) (?:linux |kernel )?6\.2\b",
            re.I,
        ),
        "KFD support for GFX11 (GC 11.0.0/11.0.1/11.0.2: Navi31, Phoenix, Navi33) was committed in May 2022 for "
        "Linux 6.0; only GC 11.0.4 (Phoenix2) is 6.2-era",
    ),
    (
        re.compile(
            r"22\.04.{0,60}hwe.{0,80}(?:5\.15|can'?t|cannot|not).{0,40}(?:past|beyond|newer|higher|above)"
            r"|hwe.{0,40}22\.04.{0,60}(?:stuck|limited) (?:at|to) 5\.15",
            re.I,
        ),
        "Ubuntu 22.04's HWE kernel is not stuck at 5.15: the point releases moved it to 5.19, 6.2, 6.5 and, "
        "with 22.04.5, 6.8 (linux-generic-hwe-22.04)",
    ),
    (
        re.compile(r"rocm 7\.2\b.{0,60}(?:june|jun\.?) 2024|(?:june|jun\.?) 2024.{0,60}rocm 7\.2\b", re.I),
        "ROCm 7.2.0 was released on 21 January 2026; June 2024 was ROCm 6.1.2",
    ),
    (re.compile(r"\bCONFIG_KFD\b"), "there is no CONFIG_KFD: KFD's Kconfig option is CONFIG_HSA_AMD"),
    (
        re.compile(r"(?:sudo )?modprobe amdkfd\b"),
        "on Linux 4.20 and later there is no amdkfd module to load: KFD is part of amdgpu and "
        "'modprobe amdkfd' fails with 'Module amdkfd not found'",
    ),
)


def _label(gpu: PastedGpu | None, asic: Asic | None, name: str | None) -> str:
    if gpu is None:
        return "the GPU"
    ids = f"{gpu.vendor:04x}:{gpu.device:04x}"
    where = f", {gpu.slot}" if gpu.slot else ""
    fallback = f"AMD {asic.family}" if asic else "AMD GPU"
    return f"{name or gpu.name or fallback} ({ids}{where})"


def _events_for(gpu: PastedGpu, events: list[LogEvent]) -> list[LogEvent]:
    found = []
    for e in events:
        ids = e.ids
        if (
            (ids and ids[1] == gpu.device)
            or (gpu.slot and e.device == gpu.slot)
            or (gpu.slot and e.value("slot") == gpu.slot)
        ):
            found.append(e)
    return found


def _distro(release: str | None) -> str:
    if not release:
        return "unknown"
    if release.endswith("-generic") or "-lowlatency" in release:
        return "ubuntu"
    if release.endswith(("-amd64", "-arm64")):
        return "debian"
    if ".fc" in release or ".el" in release:
        return "fedora"
    if "arch" in release:
        return "arch"
    return "unknown"


def _finding(cause: Cause, gpu: str | None = None) -> Finding:
    return Finding(cause.code, cause.severity, cause.message, cause.remedy, cause.evidence, gpu)


def reason(facts: TextFacts) -> tuple[list[str], list[Finding], list[str]]:
    established: list[str] = []
    findings: list[Finding] = []
    unknown: list[str] = []
    events = [e for e in facts.events if e.boot == 0]
    release = facts.release
    version = parse_release(release) if release else None
    distro = _distro(release)

    # --- what the text shows --------------------------------------------------------------
    if release:
        established.append(f"kernel {release} (from {facts.release_from})")
    identified: list[tuple[PastedGpu, Asic | None, str | None]] = []
    for gpu in facts.gpus:
        asic, name = knowledge.identify(gpu.device, gpu.revision) if gpu.vendor == 0x1002 else (None, None)
        identified.append((gpu, asic, name))
        if gpu.vendor == 0x1002:
            what = (
                f"{asic.family}, {asic.gfx}"
                if asic and asic.gfx
                else (asic.family if asic else "not in kfdguard's tables")
            )
            established.append(f"GPU {_label(gpu, asic, name)}: {what}")
    for path, node in sorted(facts.nodes.items()):
        established.append(f"{path}: " + (f"{node.mode} {node.owner}:{node.group}" if node.mode else "does not exist"))
    if facts.groups is not None:
        established.append(f"{facts.user or 'the user'} is in groups: {' '.join(facts.groups)}")
    for user, group in facts.member_of:
        established.append(f"rocminfo: {user} is a member of {group}")
    if facts.rocm_module:
        established.append(f"rocminfo: the ROCk (KFD) module is {facts.rocm_module}")
    if facts.agents:
        established.append(f"rocminfo lists GPU agents: {', '.join(facts.agents)}")
    if facts.kconfig.get("CONFIG_HSA_AMD"):
        established.append(f"CONFIG_HSA_AMD={facts.kconfig['CONFIG_HSA_AMD']}")
    success = [e for e in events if e.klass == "success"]
    neutral = [e for e in events if e.rule in ("kfd-cpu-node", "kfd-crat-missing")]
    if neutral and not success:
        established.append(
            "KFD initialised at module load (CPU node lines); these lines come before any GPU is probed and "
            "do not show whether a GPU was added"
        )

    # --- causes per GPU from the log --------------------------------------------------------------
    failing = [e for e in events if e.klass == "failure"]
    explained_events: set[int] = set()
    amd = [t for t in identified if t[0].vendor == 0x1002]
    added = {e.ids[1] for e in events if e.rule == "kfd-added-device" and e.ids}
    for gpu, asic, name in amd:
        mine = _events_for(gpu, failing)
        if gpu.device in added:
            continue
        others = [t for t in amd if t[0].device not in added]
        if len(others) == 1:
            # KFD's messages without a PCI id belong to the GPU it was probing.
            mine += [e for e in failing if e.rule in _ANONYMOUS_FAILURES and e not in mine]
        cause = gpu_cause(_label(gpu, asic, name), asic, mine, release or "", distro)
        if cause is not None:
            findings.append(_finding(cause, gpu.slot))
            explained_events.update(id(e) for e in mine)
    leftover = [e for e in failing if id(e) not in explained_events and e.rule in _ANONYMOUS_FAILURES]
    if leftover and not any(
        f.code
        in (
            "kernel-too-old",
            "asic-not-supported",
            "iommu-required",
            "firmware-missing",
            "gpu-init-failed",
            "module-signature-rejected",
            "kfd-device-failed",
        )
        for f in findings
    ):
        asic = None
        for e in leftover:
            named = (e.value("asic") or "").lower()
            asic = asic or (knowledge.asic(named) if named else None)
        cause = gpu_cause(_label(None, asic, None), asic, leftover, release or "", distro)
        if cause is not None:
            findings.append(_finding(cause))
    by_rule = {e.rule for e in events}
    if by_rule & {"kfd-sched-policy-invalid", "kfd-queues-invalid"}:
        lines = tuple(e.text for e in events if e.rule in ("kfd-sched-policy-invalid", "kfd-queues-invalid"))
        option = (
            "sched_policy (valid: 0, 1, 2)"
            if "kfd-sched-policy-invalid" in by_rule
            else "max_num_of_queues_per_device (1..4096)"
        )
        findings.append(
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
    if success:
        for gpu, asic, name in amd:
            if gpu.device in added:
                gfx = f", {asic.gfx}" if asic and asic.gfx else ""
                findings.append(
                    Finding(
                        "kfd-ready",
                        I,
                        f"KFD added {_label(gpu, asic, name)}{gfx}",
                        "",
                        tuple(e.text for e in success if e.ids and e.ids[1] == gpu.device)[:2],
                        gpu.slot,
                    )
                )
    labels: dict[str | None, str] = {g.slot: _label(g, a, n) for g, a, n in amd if g.slot}
    findings.extend(_finding(c) for c in runtime_causes(list(facts.events), labels))
    for e in events:
        if e.rule == "parse-args-ignored":
            param = e.value("param") or "?"
            truth = BOGUS[param].truth if param in BOGUS else "the module does not declare it"
            findings.append(
                Finding(
                    "module-param-unknown",
                    W,
                    f"{e.value('module')} ignored option '{param}': {truth}",
                    "delete it from /etc/modprobe.d or the kernel command line",
                    (e.text,),
                )
            )
        if e.rule == "modules-load-missing" and e.value("module") == "amdkfd":
            findings.append(
                Finding(
                    "softdep-missing-module",
                    W,
                    "systemd-modules-load is told to load amdkfd, which does not exist on Linux 4.20+ "
                    "(KFD is in amdgpu)",
                    "delete amdkfd from /etc/modules and /etc/modules-load.d/*.conf",
                    (e.text,),
                )
            )

    # --- kernel version against the GPUs -------------------------------------------------------------
    explained = {f.code for f in findings}
    if version is not None:
        for gpu, asic, name in amd:
            if asic is None or gpu.device in added or explained & {"kernel-too-old", "asic-not-supported"}:
                continue
            if asic.kfd_since is None:
                findings.append(
                    Finding(
                        "asic-not-supported",
                        E,
                        f"KFD does not support {_label(gpu, asic, name)} ({asic.family}) in any kernel",
                        "use another GPU for compute",
                        (f"{asic.family}: no KFD support",),
                        gpu.slot,
                    )
                )
            elif (version[0], version[1]) < asic.kfd_since:
                need = f"{asic.kfd_since[0]}.{asic.kfd_since[1]}"
                findings.append(
                    Finding(
                        "kernel-too-old",
                        E,
                        f"kernel {release} is too old for {_label(gpu, asic, name)}: "
                        f"KFD supports {asic.gfx} from Linux {need}",
                        f"boot or install a kernel {need} or newer",
                        (f"kernel {release}", f"{asic.family}: KFD since {need}"),
                        gpu.slot,
                    )
                )
    hsa = facts.kconfig.get("CONFIG_HSA_AMD")
    if hsa == "n" or ("CONFIG_DRM_AMDGPU" in facts.kconfig and hsa is None and len(facts.kconfig) > 20):
        findings.append(
            Finding(
                "kfd-not-built",
                E,
                "the kernel config has no CONFIG_HSA_AMD: amdgpu is built without KFD",
                "use a kernel built with CONFIG_HSA_AMD=y (every major distribution's is)",
                ("# CONFIG_HSA_AMD is not set" if hsa == "n" else "CONFIG_HSA_AMD absent",),
            )
        )

    # --- /dev/kfd and the user -------------------------------------------------------------------------
    _access(facts, findings, established, unknown)

    # --- configuration lines and claims -------------------------------------------------------------
    merged = version is None or (version[0], version[1]) >= (4, 20)
    where = "on Linux 4.20 and later" if version is None else f"on kernel {release}"
    for d in facts.modprobe:
        names_kfd = d.module == "amdkfd" or (d.kind == "softdep" and "amdkfd" in sum(softdep_modules(d), ()))
        if names_kfd and merged:
            findings.append(
                Finding(
                    "softdep-missing-module",
                    W,
                    f"'{d.text}' names amdkfd, which does not exist {where} "
                    "(KFD is built into amdgpu): the line does nothing useful",
                    "delete the line",
                    (d.text,),
                )
            )
        if d.kind == "options" and d.module in ("amdkfd", "amdgpu"):
            for name, _value in option_pairs(d):
                if name in BOGUS:
                    findings.append(
                        Finding(
                            "module-param-unknown",
                            W,
                            f"'{name}' is not a parameter of amdkfd or amdgpu in any version: {BOGUS[name].truth}",
                            "delete it",
                            (d.text,),
                        )
                    )
    text = "\n".join(facts.lines)
    for pattern, truth in WRONG_ADVICE:
        m = pattern.search(text)
        if m:
            findings.append(
                Finding(
                    "wrong-advice",
                    W,
                    f"the text repeats a popular claim that is wrong: {truth}",
                    "do not act on that advice",
                    (m.group(0)[:160],),
                )
            )

    # --- user space ---------------------------------------------------------------------------------------
    seen_targets = set()
    for gpu, asic, name in amd:
        target = asic.gfx if asic else None
        if asic and target and asic.kfd_since is not None and not asic.rocm_prebuilt and target not in seen_targets:
            seen_targets.add(target)
            findings.append(
                Finding(
                    "userspace-target-unsupported",
                    W,
                    f"ROCm's prebuilt libraries have no code for {target} ({_label(gpu, asic, name)})",
                    f"use software built for {target}; HSA_OVERRIDE_GFX_VERSION is an unsupported workaround",
                    (target,),
                    gpu.slot,
                )
            )

    # --- what the text does not show ---------------------------------------------------------------------
    if not release:
        unknown.append("the kernel version: paste the output of 'uname -r'")
    if not amd:
        unknown.append("which GPU this is: paste 'lspci -nn | grep -Ei \"vga|display|3d\"'")
    if "kernel-log" not in facts.kinds:
        unknown.append("what KFD said at boot: paste 'sudo dmesg | grep -Ei \"kfd|amdgpu\"'")
    elif not success and not any(f.severity is E for f in findings):
        unknown.append(
            "whether KFD added the GPU: the log shows no 'added device' line (paste the whole boot's "
            "'sudo dmesg | grep -Ei \"kfd|amdgpu\"')"
        )
    if "/dev/kfd" not in facts.nodes and not facts.open_error:
        unknown.append("the permissions of /dev/kfd: paste 'ls -l /dev/kfd /dev/dri'")
    if facts.groups is None and not facts.member_of and not facts.not_member_of:
        unknown.append("your groups: paste the output of 'id'")
    findings.sort(key=lambda f: f.key())
    return established, _dedupe(findings), unknown


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    result = []
    for f in findings:
        key = (f.code, f.message)
        if key not in seen:
            seen.add(key)
            result.append(f)
    return result


def _mode_allows_group(mode: str) -> bool:
    return len(mode) >= 7 and mode[4] == "r" and mode[5] == "w"


def _access(facts: TextFacts, findings: list[Finding], established: list[str], unknown: list[str]) -> None:
    node = facts.nodes.get("/dev/kfd")
    error = facts.open_error or ""
    kfd_failed = any(f.code == "kfd-init-failed" for f in findings)
    if "No such file" in error or (node is not None and node.mode is None):
        if facts.container or facts.no_user_name:
            findings.append(
                Finding(
                    "device-node-missing",
                    E,
                    "/dev/kfd does not exist inside the container: it was not passed in",
                    "start the container with --device=/dev/kfd --device=/dev/dri (docker/podman), or "
                    "--bind /dev/kfd,/dev/dri with apptainer --containall; add --group-add video --group-add render",
                    tuple(
                        x
                        for x in (
                            f"rocminfo: Unable to open /dev/kfd read-write: {error}" if error else "",
                            "the prompt or tools show a container",
                        )
                        if x
                    ),
                )
            )
        elif not kfd_failed:
            findings.append(
                Finding(
                    "device-node-missing",
                    E,
                    "/dev/kfd does not exist",
                    "see the kernel log for why KFD did not start (sudo dmesg | grep -Ei 'kfd|amdgpu'); "
                    "'kfdguard check' on the machine names the cause",
                    (f"Unable to open /dev/kfd read-write: {error}" if error else "ls: /dev/kfd missing",),
                )
            )
    if "Cannot allocate memory" in error:
        findings.append(
            Finding(
                "kfd-no-gpu-node",
                E,
                "rocminfo gets 'Cannot allocate memory' from /dev/kfd: what ROCm reports when KFD has no usable GPU",
                "the kernel log shows why KFD has no GPU (see the other findings)",
                (f"Unable to open /dev/kfd read-write: {error}",),
            )
        )
    group = node.group if node and node.group else "render"
    if "Permission denied" in error or (facts.not_member_of and not error):
        not_member = facts.not_member_of or (
            [(facts.user or "the user", group)] if facts.groups is not None and group not in facts.groups else []
        )
        if not_member:
            user, grp = not_member[0]
            findings.append(
                Finding(
                    "user-not-in-group",
                    E,
                    f"{user} is not in group '{grp}', which /dev/kfd needs",
                    f"sudo usermod -aG {grp} {user}, then log out and back in",
                    (f'rocminfo: {user} is not member of "{grp}" group',)
                    if facts.not_member_of
                    else (f"groups: {' '.join(facts.groups or [])}",),
                )
            )
        elif "Permission denied" in error:
            findings.append(
                Finding(
                    "device-permissions",
                    E,
                    "opening /dev/kfd is denied (Permission denied)",
                    "check 'ls -l /dev/kfd' and 'id'; 'sudo kfdguard enforce' fixes the node's mode",
                    (f"Unable to open /dev/kfd read-write: {error}",),
                )
            )
    if node is not None and node.mode is not None:
        if not _mode_allows_group(node.mode) and node.mode[7:9] != "rw":
            findings.append(
                Finding(
                    "device-permissions",
                    E,
                    f"/dev/kfd is {node.mode} {node.owner}:{node.group}: only its owner can open it",
                    'sudo kfdguard enforce, or a udev rule SUBSYSTEM=="kfd", GROUP="render", MODE="0660"',
                    (f"{node.mode} {node.owner}:{node.group}",),
                )
            )
        elif facts.groups is not None and node.group not in facts.groups and node.mode[7:9] != "rw":
            findings.append(
                Finding(
                    "user-not-in-group",
                    E,
                    f"{facts.user or 'the user'} is not in group '{node.group}' that owns /dev/kfd",
                    f"sudo usermod -aG {node.group} {facts.user or '$USER'}, then log in again",
                    (f"/dev/kfd {node.mode} {node.owner}:{node.group}", f"groups: {' '.join(facts.groups)}"),
                )
            )
