"""Rules over what userspace printed (knowledge/appformats.py): the runtime, its libraries, applications,
container runtimes, DKMS and the management tools, each read for the cause it names.

A program's message is evidence about one floor of the stack, and the rules keep it there: "no code
object for gfxNNNN" is the software build; "no devices found" is a symptom whose cause lies lower; a
container runtime that cannot find /dev/kfd speaks about its host; rocm-smi speaks about amdgpu, not
KFD. These rules read a paste's observations only; a machine has no such messages.
"""

from __future__ import annotations

import re

from kfdguard import knowledge
from kfdguard.assess import remedies
from kfdguard.assess.claims import contains, lines_with, search_lines
from kfdguard.assess.reasoning import Reasoning
from kfdguard.assess.report_rules import (
    amd_device_listed,
    dkms_not_built,
    kfd_told_absent_in_container,
    override_told_needed,
)
from kfdguard.assess.versions import (
    carried_in,
    had_a_gap,
    predates_support,
    releases_text,
    rocm_versions_shown,
    wheel_without_code,
)
from kfdguard.evidence.model import Observations, SeenMessage, Source
from kfdguard.knowledge import appformats, engines, rocm, torchwheels
from kfdguard.knowledge.asics import ASICS
from kfdguard.knowledge.model import Asic
from kfdguard.userspace.assess import visible_count
from kfdguard.verdict import Finding, Severity

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.assess.claims import Searchable

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741

# Prose that says a tool works as root (or with sudo) and not as the user: the user lacks the group
# that owns /dev/kfd or the render node (the cause the ROCm install guides' group step addresses).
ROOT_ONLY = re.compile(
    # "run" after a person or in the passive ("I run it as root", "the container is run as root") tells how it ran,
    # which fails as well, not that root succeeds
    r"(?:\b(?:works?|working|(?<!\bi )(?<!\bwe )(?<!\byou )(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )"
    r"(?<!\bbeen )runs?|running|can do it|succeeds?|fine)\b(?:\s+\w+){0,3}\s+"
    r"(?:as|with|under)\s+[*_`]{0,2}(?:root|sudo)\b"
    r"|\bonly (?:as|with|under) (?:root|sudo)\b|\bas [*_`]{0,2}root[*_`]{0,2},? (?:it )?works\b"
    r"|\bwith [*_`]{0,2}sudo[*_`]{0,2},? (?:it )?works\b"
    r"|\bnot (?:work\w*|run\w*) (?:outside|without) (?:the |a |my )?(?:root|sudo)\b|\boutside (?:the )?root account\b"
    # "has to run commands as `sudo` for GPU access", "needed to use sudo"
    r"|\b(?:has|have|had|needs?|needed) to "
    r"(?:(?:run|use|start|launch|execute)\b(?:\s+\S+){0,3}?\s+(?:as|with|under|via)\s+|use\s+)[*_`]{0,2}(?:root|sudo)\b"
    # a condition: "only works when using sudo", "it only runs if I use sudo", "works when run as root"
    r"|\b(?:works?|runs?|succeeds?)\b(?:\s+\w+){0,2}?\s+(?:when|if|once)\s+(?:(?:i|we|you)\s+)?"
    r"(?:(?:use|using|used|run|running|ran|start\w*|launch\w*|execut\w*)\s+)?(?:(?:it|them|this|that)\s+)?"
    r"(?:(?:as|with|under|via)\s+)?[*_`]{0,2}(?:root|sudo)\b"
    # the privilege as the subject: "only sudo works for rocminfo", "only root can run it"
    r"|\bonly\s+[*_`]{0,2}(?:root|sudo)[*_`]{0,2}\s+(?:works|can)\b)"
    # not where the words go straight on to say it fails that way too ("running it as root does not work either");
    # "works with sudo but fails as my user" is the root-only sentence itself
    r"(?!,?\s+(?:(?:it|this|that)\s+)?(?:also\s+)?(?:does(?:n't| not)|did(?:n't| not)|won't|will not|fails?|failed)\b)",
    re.IGNORECASE,
)
# A ROCm runtime's own failure shown in the text (HIP's error names, ROCr's status, rocminfo's "hsa api call
# failure"): root-only told beside it is about the GPU stack, whatever program failed.
RUNTIME_FAILED = ("hipError", "HIP_ERROR_", "HSA_STATUS_ERROR", "hsa api call failure")
# Rootless containers: Distrobox and Toolbx run rootless Podman by default; "rootless" names it.
ROOTLESS = re.compile(r"\brootless\b|\bdistrobox\b|\btoolbx\b|\btoolbox enter\b", re.IGNORECASE)
# A group named as the owner of /dev/kfd in prose ("/dev/kfd owned by group `render`").
OWNER_GROUP = re.compile(r"/dev/kfd\b[^.\n]{0,40}?\bgroup\s+`?'?\"?(?P<group>render|video)\b", re.IGNORECASE)


# What a Linux host without KFD would show, and a host whose GPU is reached another way cannot: dropped
# where the text shows such a host (WSL, Docker Desktop, a Windows engine).
LINUX_HOST_CODES = ("device-node-missing", "module-not-loaded", "user-not-in-group", "kfd-not-built")
# Under WSL there is no KFD either: what the Linux-host rules read into its rocminfo says nothing of the cause.
WSL_MOOT_CODES = (*LINUX_HOST_CODES, "kernel-too-old", "kfd-no-gpu-node")


def _drop_linux_host_findings(r: Reasoning) -> None:
    r.findings[:] = [f for f in r.findings if f.code not in LINUX_HOST_CODES]


def _strong_foreign(r: Reasoning) -> str | None:
    """The WSL2 or Docker Desktop the text names (appformats.STRONG_FOREIGN), whose kernel is never the host's
    own: no amdgpu module loads there whatever is installed inside. "Windows 10" alone is not it (a dual boot)."""
    host = r.obs.foreign_host
    if host is None:
        return None
    m = appformats.STRONG_FOREIGN.search(host.what)
    return m.group(0) if m else None


def _gfx_of_text(r: Reasoning, messages: list[SeenMessage]) -> tuple[str | None, str | None]:
    """The GPU's gfx target and where the text shows it: the message itself, the runtime, lspci, prose."""
    for m in messages:
        if m.gfx:
            return m.gfx, str(m.source)
    runtime = [m for m in r.obs.saw("runtime-gpu") if m.gfx]
    if runtime:
        return runtime[0].gfx, str(runtime[0].source)
    if r.obs.agents:
        return r.obs.agents[0].gfx, str(r.obs.agents[0].source)
    for t in r.amd:
        if t.asic and t.asic.gfx:
            return t.asic.gfx, str(t.gpu.source)
    if r.obs.prose_gfx:
        gfx, source = r.obs.prose_gfx[0]
        return gfx, str(source)
    if r.obs.cpu_gpus:
        gfx, source = r.obs.cpu_gpus[0]
        return gfx, str(source)
    return None, None


def amd_gpu_named(r: Reasoning) -> bool:
    """Whether the text shows an AMD GPU at all (ids, agents, a runtime's device, a gfx target, a retail name)."""
    obs = r.obs
    return bool(
        r.amd
        or obs.agents
        or obs.prose_gfx
        or obs.smi_gpus
        or any(m.gfx for m in obs.messages)
        or obs.saw("runtime-gpu", "driver-table")
    )


def rule_nvidia_only(r: Reasoning) -> None:
    """An NVIDIA GPU named and no AMD GPU anywhere: ROCm's complaints come from having no AMD GPU at all."""
    obs = r.obs
    if r.machine is not None or not obs.nvidia or amd_gpu_named(r) or r.has("no-amd-gpu"):
        return
    if amd_device_listed(r):
        return  # an AMD device beside it, listed by lspci or logged by amdgpu, though its chip is not identified
    name, source = obs.nvidia[0]
    evidence = [f"{source}: {name}"]
    detected = obs.saw("amd-driver-only")
    if detected:
        evidence.append(
            f"{detected[0].source}: ollama says 'Radeon card detected' when the amdgpu module is loaded, "
            "with or without an AMD GPU"
        )
    r.findings.append(
        Finding(
            "no-amd-gpu",
            I,
            f"the text names an NVIDIA GPU ({name}) and no AMD GPU: ROCm has nothing to run on, so its errors "
            "here (no code object, no device, permissions) say nothing about an AMD setup",
            "use the CUDA build of the program; if an AMD GPU was removed, unload or blacklist amdgpu "
            "(sudo modprobe -r amdgpu) so programs stop looking for one",
            tuple(evidence),
        )
    )


def rule_rock_not_loaded(r: Reasoning) -> None:
    """rocminfo's "ROCk module is NOT loaded": amdgpu (which carries KFD) is not loaded, for an AMD GPU shown."""
    obs = r.obs
    state = obs.value("rock-module")
    if r.machine is not None or state != "NOT loaded" or not amd_gpu_named(r) or r.has("no-amd-gpu"):
        return
    if _strong_foreign(r) is not None:
        return  # WSL or Docker Desktop: no amdgpu module can load there (rule_host_without_kfd)
    if any(f.severity is E and f.code not in ("userspace-target-unsupported",) for f in r.findings):
        return  # a lower cause already explains why amdgpu or KFD is absent
    source = obs.first("rock-module")
    # rocminfo tests the module through libkmod (/sys/module/amdgpu), which fails for an amdgpu built into the
    # kernel, a libkmod that cannot read another module's entry, or a /sys without it; it then goes on and opens
    # /dev/kfd. An open that succeeds, or a GPU agent, shows KFD running: the module line is not the cause.
    opened = obs.first("kfd-opened")
    if opened is not None or obs.agents:
        shown = f"{opened.source}: Able to open /dev/kfd read-write" if opened else f"{obs.agents[0].source}: GPU agent"
        r.overruled.append(
            "module-not-loaded (rocminfo says the ROCk module is NOT loaded): overruled, its check of the module "
            f"failed while KFD works ({shown})"
        )
        return
    r.findings.append(
        Finding(
            "module-not-loaded",
            E,
            "rocminfo says the ROCk (KFD) module is not loaded: amdgpu, which carries KFD since Linux 4.20, is "
            "not loaded for this AMD GPU",
            "sudo modprobe amdgpu, then 'sudo dmesg | grep -Ei \"kfd|amdgpu\"' for why it did not load at boot "
            "(a blacklist in /etc/modprobe.d, nomodeset on the kernel command line, a module that does not "
            "match the kernel)",
            (f"{source.source}: ROCk module is NOT loaded",) if source else (),
        )
    )


def rule_host_without_kfd(r: Reasoning) -> None:
    """/dev/kfd missing on a host that cannot have one (Windows, WSL2, Docker Desktop, macOS)."""
    obs = r.obs
    if r.machine is not None:
        return
    missing = [m for m in obs.saw("container-device-missing") if m.value("path") == "/dev/kfd"]
    rocminfo = "No such file" in (obs.value("kfd-open-error") or "")
    listed = obs.kfd is not None and obs.kfd.mode is None
    # rocminfo's "ROCk module is NOT loaded" (its test of /sys/module/amdgpu) under WSL or Docker Desktop: the
    # Linux hosts' ROCm runs on a kernel that has no amdgpu to load (AMD's WSL releases do not make that test).
    # Not where AMD's WSL rocminfo ran ("WSL environment detected."; the line is then quoted from elsewhere), nor
    # where there is no AMD GPU at all (rule_no_amd_gpu_listed says so).
    unloaded = (
        obs.value("rock-module") == "NOT loaded"
        and _strong_foreign(r) is not None
        and not obs.saw("wsl-runtime")
        and not r.has("no-amd-gpu")
    )
    if not (missing or rocminfo or listed or unloaded):
        return
    if obs.foreign_host is None:
        if missing and not r.has("device-node-missing"):
            r.findings.append(
                Finding(
                    "device-node-missing",
                    E,
                    "the container runtime's host has no /dev/kfd, so it cannot pass it in: KFD is not "
                    "running on the host",
                    "on the host: 'ls -l /dev/kfd' and 'sudo dmesg | grep -Ei \"kfd|amdgpu\"' (is amdgpu loaded, "
                    "did KFD add the GPU?); 'kfdguard check' on the host names the cause",
                    (missing[0].text,),
                )
            )
        return
    evidence = [m.text for m in missing[:1]]
    if rocminfo:
        evidence.append(f"rocminfo: Unable to open /dev/kfd read-write: {obs.value('kfd-open-error')}")
    elif unloaded:
        evidence.append("rocminfo: ROCk module is NOT loaded")
    evidence.append(f"{obs.foreign_host}")
    r.findings.append(
        Finding(
            "host-without-kfd",
            E,
            "the host is Windows, WSL2, Docker Desktop or macOS, whose kernels have no amdgpu/KFD driver: "
            "there is no /dev/kfd to open or pass into a container, and nothing inside can create one",
            "run ROCm on a Linux host with amdgpu (bare metal or a VM with the GPU passed through); under WSL2 "
            "use AMD's WSL ROCm stack, which goes through /dev/dxg (docker run --device=/dev/dxg "
            "-v /usr/lib/wsl:/usr/lib/wsl), not /dev/kfd",
            tuple(evidence),
        )
    )
    # Advice for a Linux host (its modules, its node, its groups) does not apply to this one.
    _drop_linux_host_findings(r)


# The value of one entry of a Go map as slog prints it ("gfx1030:true"): the key is the target.
_MAP_VALUE = re.compile(r":(?:true|false)$")
# Two or more targets with no separator between them ("gfx1030gfx1100"); "gfx90a:xnack-" is one target.
_GLUED_TARGETS = re.compile(r"(?:gfx[0-9a-f]{3,4}){2,}")


def rule_no_code_object(r: Reasoning) -> None:
    """A program that has no code object for the GPU's target: the software build, not the GPU or the kernel."""
    obs = r.obs
    messages = obs.saw("no-code-object")
    if r.machine is not None or not messages or r.has("no-amd-gpu"):
        return
    gfx, where = _gfx_of_text(r, messages)
    carried = sorted({m.gfx for m in obs.saw("library-targets") if m.gfx})
    for m in messages:
        supported = m.value("supported")
        if supported:  # ollama's "[gfx1030 gfx1100]" or map[gfx1030:true ...], TensorFlow's "gfx1030, gfx900, ..."
            tokens = (_MAP_VALUE.sub("", t) for t in re.split(r"[\s,]+", supported))
            carried = sorted(set(carried) | {t for t in tokens if t})
    # The distinct texts: a paste repeats its lines, and a repeat is no more evidence (nor is it read
    # again on a long paste's fast path: evidence/text.py).
    evidence = list(dict.fromkeys(m.text for m in messages))[:2]
    if gfx and where:
        evidence.append(f"{where}: {gfx}")
    if carried:
        evidence.append(f"the library carries code for: {' '.join(carried)}")
    target = gfx or "this GPU's target"
    override = obs.value("gfx-override")
    workaround = "" if override else remedies.override_workaround(gfx)
    message = (
        f"the program has no GPU code for {target}: its build (or the ROCm libraries it bundles) was not "
        "compiled for it, so kernel launches fail; the GPU, the kernel and permissions are not the cause"
    )
    if override:
        message += f" (HSA_OVERRIDE_GFX_VERSION={override} is set where the text shows it)"
    glued = next((t for t in carried if gfx and gfx in t and _GLUED_TARGETS.fullmatch(t)), None)
    if glued:
        # The program's own list holds the target run together with another ("gfx1030gfx1100"): a separator
        # lost in its build, so it refuses a target it is meant to carry.
        message = (
            f"the program refuses {gfx}: its own list of supported targets reads '{glued}', two names run together "
            "(a separator lost in its build), so it leaves out a GPU it is meant to support; the GPU, the kernel "
            "and permissions are not the cause"
        )
    if not carried:
        r.unknown.append(
            "which gfx targets the installed ROCm libraries carry: paste 'ls /opt/rocm*/lib/rocblas/library | head' "
            "(or the program's bundled rocblas/library directory)"
        )
    r.findings[:] = [f for f in r.findings if f.code != "userspace-target-unsupported"]
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            E,
            message,
            f"use a build that includes {target} (PyTorch/ROCm wheels or images that list it, llama.cpp built "
            f"with -DAMDGPU_TARGETS={gfx or 'gfxNNNN'}, rocBLAS with its Tensile library for it){workaround}; "
            "'rocminfo | grep gfx' names the target",
            tuple(evidence[:4]),
        )
    )


# A text does not say how many GPUs the machine has: every index it names is taken to be one, so only what hides the
# GPUs on any machine is found (an index past what ROCr left, an index that is no index at all).
_ANY_COUNT = 64
_SAME_RUN = 3  # settings further apart than this many lines are taken as different commands


def _runs(env: list[tuple[str, str, Source]]) -> list[dict[str, tuple[str, Source]]]:
    """The settings of the text grouped by the run they belong to: each within _SAME_RUN lines of the one before;
    a variable set twice in a run keeps its last value."""
    runs: list[dict[str, tuple[str, Source]]] = []
    last = None
    for var, value, source in sorted(env, key=lambda e: e[2].line):
        if last is None or source.line - last > _SAME_RUN:
            runs.append({})
        runs[-1][var] = (value, source)
        last = source.line
    return runs


def _visibility_hides(r: Reasoning) -> list[str]:
    """The settings of one run that leave the program no GPU, as ROCr and HIP apply them: ROCR_VISIBLE_DEVICES first,
    then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES where HIP's own is unset) indexing what ROCr left; HIP ends its
    list at the first entry that is not an index of a GPU it has (userspace.assess.visible_count, from ROCm/clr
    rocclr/device/rocm/rocdevice.cpp). Empty where no run hides every GPU."""
    for run in _runs(r.obs.env):
        said = []
        left = _ANY_COUNT
        if "ROCR_VISIBLE_DEVICES" in run:
            value, source = run["ROCR_VISIBLE_DEVICES"]
            kept = visible_count("ROCR_VISIBLE_DEVICES", value, left)
            if kept is None:
                continue  # UUIDs: which GPUs they name, the text does not show
            left = kept
            said.append(f"{source}: ROCR_VISIBLE_DEVICES={value} leaves {left} GPU(s), numbered from 0")
        hip = "HIP_VISIBLE_DEVICES" if run.get("HIP_VISIBLE_DEVICES", ("", None))[0] else "CUDA_VISIBLE_DEVICES"
        if hip not in run:
            continue
        value, source = run[hip]
        if left and visible_count(hip, value, left) != 0:
            continue
        why = (
            "selects past them"
            if said
            else "is read by HIP as its own list (HIP_VISIBLE_DEVICES unset) and ends at its first entry, no GPU index"
            if hip == "CUDA_VISIBLE_DEVICES"
            else "ends at its first entry, no GPU index"
        )
        return [*said, f"{source}: {hip}={value} {why}"]
    return []


def _program_hides_gpus(r: Reasoning, symptoms: list[SeenMessage]) -> bool:
    """The runtime saw no GPU and the text says the program run hides them itself (a test or an example that sets
    the visibility variables to nothing): the settings are the program's own, so the text need not show them."""
    if r.has("env-visibility-hides-gpu") or any(f.severity is E for f in r.findings):
        return False
    told = search_lines(appformats.PROGRAM_HIDES_GPUS, r.obs, "gpu")
    if told is None:
        return False
    r.findings.append(
        Finding(
            "env-visibility-hides-gpu",
            E,
            "the program run hides the GPUs itself, as the text says: a script, test or example that sets "
            "CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES to nothing (or its framework's device "
            "list to none) before the runtime starts leaves it no GPU, whatever the GPU, the kernel and the groups "
            "allow",
            "remove (or comment out) the lines of the program that hide the GPUs, e.g. an os.environ setting of "
            'CUDA_VISIBLE_DEVICES to "" or "-1" near its top; it then sees the GPUs the runtime finds',
            (f"the text: {told.group(0)}", symptoms[0].text),
        )
    )
    return True


def rule_no_device(r: Reasoning) -> None:
    """The runtime saw no usable GPU: a symptom; here, what the environment hides. Settings that hide every GPU on
    any machine are the cause whether or not the text shows the runtime's message."""
    obs = r.obs
    if r.machine is not None:
        return
    symptoms = obs.saw("no-device")
    hidden = _visibility_hides(r)
    if hidden:
        r.findings.append(
            Finding(
                "env-visibility-hides-gpu",
                E,
                "the GPU-selecting variables leave the program no GPU: ROCr applies ROCR_VISIBLE_DEVICES first "
                "and renumbers what is left from 0, then HIP_VISIBLE_DEVICES (or, where it is unset, "
                "CUDA_VISIBLE_DEVICES, which HIP honours on AMD GPUs too) index into that and stop at the first "
                "entry that is no GPU's index",
                "set only one of them (ROCR_VISIBLE_DEVICES=1 alone, or HIP_VISIBLE_DEVICES=1 alone), or index "
                "HIP's variable from 0 after ROCr's filter; to hide only NVIDIA GPUs from CUDA, leave "
                "CUDA_VISIBLE_DEVICES unset for ROCm programs or set HIP_VISIBLE_DEVICES to the AMD GPUs' indices",
                (*hidden, *(s.text for s in symptoms[:1])),
            )
        )
        return
    if symptoms and _program_hides_gpus(r, symptoms):
        return
    if symptoms and not any(f.severity is E for f in r.findings):
        r.unknown.append(
            "why the runtime sees no GPU (a symptom, not a library problem): paste 'rocminfo', "
            "'ls -l /dev/kfd /dev/dri' and 'id', and any *_VISIBLE_DEVICES the program runs with"
        )


def _holds(obs: Observations, *words: str) -> bool:
    """Whether the text holds one of these words (each a piece of one line): a long paste through its index."""
    return any(contains(obs, word) for word in words)


def _holds_lower(obs: Observations, *words: str) -> bool:
    """Whether the text's lower case holds one of these words (each a piece of one line)."""
    return any(contains(obs, word, lower=True) for word in words)


def _denied_group(r: Reasoning) -> str:
    node = r.obs.kfd
    if node is not None and node.group and node.mode:
        return node.group
    m = search_lines(OWNER_GROUP, r.obs, "/dev/kfd")
    if m:
        return m["group"]
    owned = next((g for e in r.obs.saw("kfd-eacces") if (g := e.value("group"))), None)
    return owned or r.group


def _said_member(r: Reasoning) -> str | None:
    """The group the person says the user is already in ("in the video group already"), not a negation."""
    for line in lines_with(r.obs, " group"):
        m = appformats.PROSE_IN_GROUP.search(line)
        if m and not appformats.NOT_IN_GROUP.search(line) and "not " not in line[max(0, m.start() - 12) : m.start()]:
            return m["group"].lower()
    return None


def _node_does_not_grant(r: Reasoning, group: str, evidence: list[str]) -> None:
    """Root can open /dev/kfd, a user in the right-looking group cannot, and nothing shows the node: its mode or
    group does not grant that group (no udev rule: the kernel creates it root-only; or it belongs to render)."""
    r.findings.append(
        Finding(
            "device-permissions",
            E,
            f"root can use the GPU and the user, who the text says is in '{group}', cannot: /dev/kfd does not grant "
            f"'{group}' (without udev's rule the kernel creates it root:root 0600; a local rule may set another group)",
            "ls -l /dev/kfd /dev/dri/renderD*: if root:root 0600, add a udev rule, e.g. /etc/udev/rules.d/70-kfd.rules "
            'with KERNEL=="kfd", GROUP="render", MODE="0660", then sudo udevadm control --reload && sudo udevadm '
            "trigger --action=add --subsystem-match=kfd (the default rules set modes on add events only; ROCm's DKMS "
            "packages install such a rule, an upstream kernel has none); if it belongs to another group, "
            "sudo usermod -aG <that group> $USER and log in again",
            (*evidence[:3], f"the text: in the {group} group"),
        )
    )


def told_root_works(r: Reasoning) -> re.Match[str] | None:
    """The first line that tells root (or sudo) succeeding, not under a negation just before the telling ("I am
    not running it with sudo" says how it ran, not that root succeeds)."""
    for line in dict.fromkeys(lines_with(r.obs, "root") + lines_with(r.obs, "sudo")):
        for m in ROOT_ONLY.finditer(line):
            end = _SENTENCE_END.search(line, m.end())
            if end is not None and end.group(0) == "?":
                continue  # a request or a question ("could you run the following as root?")
            if not appformats.NEGATED.search(line[max(0, m.start() - 12) : m.start()]):
                return m
    return None


_SENTENCE_END = re.compile(r"[.!?]")


def _root_only(r: Reasoning) -> str | None:
    """Prose that says root (or sudo) can and the user cannot, about the GPU stack or the user's groups."""
    m = told_root_works(r)
    if m is None:
        return None
    # The stack named anywhere, or the GPU named in the very sentence ("has to use sudo for GPU access").
    gpu_said = "gpu" in m.string.lower()
    stack_named = (
        _holds(r.obs, "/dev/kfd", "rocminfo", "clinfo", *RUNTIME_FAILED)
        or bool(r.obs.saw("runtime-gpu"))
        or bool(r.obs.saw("no-device"))
    )
    if stack_named or gpu_said or _said_member(r):
        return f"the text: {m.group(0)}"
    return None


def _member_yet_denied(r: Reasoning, evidence: list[str]) -> bool:
    """In render (the group udev gives /dev/kfd today) and still denied, with nothing showing the node: the
    node's mode is the cause, not membership."""
    node = r.obs.kfd
    owner_shown = (node is not None and bool(node.group)) or search_lines(OWNER_GROUP, r.obs, "/dev/kfd")
    if owner_shown or _said_member(r) != "render":
        return False
    _node_does_not_grant(r, "render", evidence)
    return True


def _denial_shown(r: Reasoning) -> list[str]:
    """What shows the user denied the GPU's nodes: an application's EACCES, or root told to succeed where the user
    fails (not where the runtime lists the GPU for the user: what only root can do then lies elsewhere)."""
    obs = r.obs
    evidence: list[str] = [m.text for m in obs.saw("kfd-eacces")[:1]]
    if not evidence and obs.saw("eacces") and _holds(obs, "/dev/kfd", "/dev/dri/renderD"):
        evidence.append(obs.saw("eacces")[0].text)
    root_only = _root_only(r)
    if root_only and (evidence or not _gpu_listed_without_sudo(r)):
        evidence.append(root_only)
    return evidence


def rule_denied_by_groups(r: Reasoning) -> None:
    """EACCES on /dev/kfd or a render node, as applications print it, or 'works only as root'."""
    obs = r.obs
    if r.machine is not None or r.has("rootless-gid-unmapped", "no-amd-gpu", "host-without-kfd", "kfd-open-einval"):
        return
    rocminfo_denied = "Permission denied" in (obs.value("kfd-open-error") or "")
    rootless = search_lines(ROOTLESS, obs, "rootless", "distrobox", "toolb")
    if rootless and (rocminfo_denied or obs.saw("kfd-eacces")):
        rootless_unmapped(r, rootless, [m.text for m in obs.saw("kfd-eacces")[:1]])
        return
    if r.has("user-not-in-group", "device-permissions"):
        return
    evidence = _denial_shown(r)
    if rocminfo_denied or not evidence:
        return  # nothing denied, or rocminfo's own report, which rule_access read
    node = obs.kfd
    if node is not None and node.mode and node.mode[7:9] == "rw":
        return  # open to everyone: not a group problem
    group = _denied_group(r)
    user = obs.user.user if obs.user and obs.user.user else "the user"
    if obs.user is not None and group in obs.user.groups:
        return
    if _member_yet_denied(r, evidence):
        return
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"{user} cannot open the GPU's device nodes (EACCES) and root can: {user} is not in group "
            f"'{group}', which owns /dev/kfd and /dev/dri/renderD*",
            f"sudo usermod -aG {group} $USER (both render and video where both exist), then log out and back in; "
            "inside a container: --group-add with the host's group ids",
            tuple(evidence[:3]),
        )
    )


# A runtime's listing run under sudo ("sudo rocminfo", "sudo /opt/rocm/bin/clinfo"): it shows what root can open.
_LISTED_AS_ROOT = re.compile(r"\bsudo(?:\s+\S+){0,3}?\s+\S*(?:rocminfo|clinfo)\b")  # "sudo -u root clinfo"


def _gpu_listed_without_sudo(r: Reasoning) -> bool:
    """Whether a runtime listing shows a GPU (rocminfo's agents, clinfo's devices) and no listing ran under sudo:
    the runtime opened /dev/kfd as the user."""
    listed = bool(r.obs.agents) or any(m.gfx for m in r.obs.saw("runtime-gpu"))
    return listed and search_lines(_LISTED_AS_ROOT, r.obs, "sudo") is None


def _engine_defect_shown(r: Reasoning) -> tuple[str, str, engines.EngineDefect] | None:
    """(line, release, row) of a Docker release the text shows that passes --device nodes in as root:root."""
    for cue in ("docker", "-ce"):
        for line in lines_with(r.obs, cue):
            hit = engines.device_group_reset(line)
            if hit is not None:
                return line.strip(), *hit
    return None


def rule_engine_drops_device_group(r: Reasoning) -> None:
    """A Docker Engine release that passes --device nodes into the container as root:root (knowledge/engines.py),
    /dev/kfd passed, and root inside can where the image's user cannot: the nodes' group is the cause, not the
    user's groups, which the image sets right."""
    obs = r.obs
    if r.machine is not None or r.has(
        "device-permissions", "rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu", "kfd-open-einval"
    ):
        return
    shown = _engine_defect_shown(r)
    if shown is None:
        return
    if search_lines(appformats.KFD_PASSED, obs, "/dev/kfd") is None:
        return  # the devices were not passed with --device: the defect is not what the text shows
    denied = _root_only(r) or next((f"{m.source}: {m.text}" for m in obs.saw("kfd-eacces")), None)
    if denied is None:
        return
    line, release, row = shown
    r.findings.append(
        Finding(
            "device-permissions",
            E,
            f"{row.engine} {release} passes the devices given with --device into the container as root:root (a runc "
            f"defect of its releases {', '.join(map(engines.release_text, row.versions))}, fixed in "
            f"{row.fixed_in}): /dev/kfd and the render nodes lose the group they have on the host, so only root in "
            "the container can open them and the image's user, though in video or render, is denied",
            f"upgrade {row.engine} to {row.fixed_in} or newer; until then run the container as root, or chgrp "
            "/dev/kfd /dev/dri/renderD* inside it to the group its user is in",
            (f"the text: {line[:160]}", denied, f"{row.engine} defect: {row.sources[0]}"),
        )
    )


def rootless_unmapped(
    r: Reasoning, cue: re.Match[str] | None, evidence: list[str], *, keep_other_causes: bool = False
) -> None:
    """The finding for a rootless container whose user namespace leaves out the host's group of /dev/kfd
    (assess/stack_rules.py reaches it from Podman's keep-groups told as the fix, and from a runtime that sees no
    GPU in such a container). The group findings it replaces read the same denial; with ``keep_other_causes``
    they rest on evidence of their own (the host's accounts) and stay."""
    error = r.obs.value("kfd-open-error")
    shown = [f"rocminfo: Unable to open /dev/kfd read-write: {error}"] if error else []
    if not keep_other_causes:
        r.findings[:] = [f for f in r.findings if f.code not in ("user-not-in-group", "device-permissions")]
    r.findings.append(
        Finding(
            "rootless-gid-unmapped",
            E,
            "opening /dev/kfd is denied inside a rootless container: the user namespace does not map the host's "
            "group that owns it, so --group-add render inside adds the container's own group, not the host's",
            "on the host, keep the host's groups: podman run --group-add keep-groups (crun) or distrobox create "
            "--additional-flags '--group-add keep-groups'; or map the host's render/video gids (/etc/subgid); "
            "usermod inside the container does not help",
            (*shown, *evidence[:2], f"the text: {cue.group(0) if cue else 'rootless'}"),
        )
    )


def rule_group_missing(r: Reasoning) -> None:
    """usermod says the group does not exist: on this release udev gives the nodes to another group."""
    if r.machine is not None:
        return
    for m in r.obs.saw("group-missing"):
        group = m.value("group") or "?"
        other = "video" if group == "render" else "render"
        node = r.obs.kfd
        owner = node.group if node and node.group else other
        r.findings.append(
            Finding(
                "user-not-in-group",
                E,
                f"there is no '{group}' group on this system (on older releases such as Ubuntu 18.04 udev gives "
                f"the render nodes and /dev/kfd to '{owner}'); the user needs the group that does own them",
                f"'ls -l /dev/kfd /dev/dri' shows the owner; here most likely: sudo usermod -aG {owner} $USER, then "
                "log out and back in",
                (m.text,),
            )
        )
        return


def rule_kfd_absent_with_amdgpu(r: Reasoning) -> None:
    """amdgpu drives the GPU and there is no /dev/kfd: KFD is not in this kernel (or failed at load).

    KFD creates /dev/kfd when amdgpu loads, before it probes any GPU (kfd_init() -> kfd_chardev_init() in
    drivers/gpu/drm/amd/amdkfd/kfd_module.c, called from amdgpu_init()): with amdgpu loaded the node is
    missing only if CONFIG_HSA_AMD is off or kfd_init failed, which logs its reason.
    """
    obs = r.obs
    if r.machine is not None or r.has("kfd-not-built", "kfd-init-failed", "host-without-kfd", "device-node-missing"):
        return
    bound = obs.saw("amdgpu-bound", "amdgpu-loaded")
    if not bound:
        return
    absent = search_lines(appformats.KFD_ABSENT, obs, "kfd", "/dev/dri")
    listed = obs.kfd is not None and obs.kfd.mode is None
    if not (absent or listed):
        return
    r.findings.append(
        Finding(
            "kfd-not-built",
            E,
            "amdgpu drives the GPU but there is no /dev/kfd: KFD creates that node as soon as amdgpu loads, so "
            "this kernel was most likely built without CONFIG_HSA_AMD (or KFD failed at load, which the kernel "
            "log would say)",
            remedies.kernel_with_kfd(r.distro)
            + "; check with: grep CONFIG_HSA_AMD /boot/config-$(uname -r) (or zcat /proc/config.gz | grep HSA_AMD)",
            (bound[0].text, f"the text: {absent.group(0)}" if absent else "ls: /dev/kfd missing"),
        )
    )
    for t in r.amd:
        t.block("kernel built without KFD", "kfd-not-built")


# torch.cuda.is_available() answering True, joined by evidence/repl ("torch.cuda.is_available() -> True") or told
# ("torch.cuda.is_available() returns True"): the build's runtime found a usable GPU.
TORCH_AVAILABLE = re.compile(
    r"\bis_available\(\)\)?[`'\"]?\s*(?:->|:|=|\bis\b|\breturn(?:s|ed)\b|\bgives\b)\s*[`'\"]?True\b"
)
# A ROCm build of PyTorch: its version label or the HIP version it was built with.
TORCH_ROCM_BUILD = re.compile(
    r"\+rocm\d|\btorch\.version\.hip\b\S*\s*(?:->|[:=]|is|returns?)?\s*['\"]?\d|ROCM used to build PyTorch: \d"
)


def _torch_available(r: Reasoning) -> str | None:
    """PyTorch's ROCm build finding a GPU: is_available() True in a text that shows a ROCm build and names no NVIDIA
    GPU (a CUDA build's True is about an NVIDIA GPU)."""
    if r.obs.nvidia or search_lines(TORCH_ROCM_BUILD, r.obs, "+rocm", "torch.version.hip", "rocm used") is None:
        return None
    m = search_lines(TORCH_AVAILABLE, r.obs, "is_available()")
    if m is None or appformats.NEGATED.search(m.string[: m.start()]):
        return None
    return f"the text: {m.string.strip()[:160]}"


def _runtime_count_told(r: Reasoning) -> str | None:
    """A line that says HIP or rocminfo counts one or more GPUs, not in a question nor negated."""
    available = _torch_available(r)
    if available is not None:
        return available
    for line in dict.fromkeys(lines_with(r.obs, "hip") + lines_with(r.obs, "rocminfo")):
        m = appformats.RUNTIME_COUNT_TOLD.search(line)
        if m and not appformats.NEGATED.search(line[: m.end()]) and not appformats.yes_no_question(line, m.start()):
            return f"the text: {line.strip()[:160]}"
    return None


def _runtime_gpus(obs: Observations) -> list[tuple[str, str]]:
    """The GPUs a runtime enumerated (their targets, or names where no target is shown) and where."""
    seen: list[tuple[str, str]] = [(a.gfx, str(a.source)) for a in obs.agents if a.device is None]
    for m in obs.saw("runtime-gpu"):
        targets = [m.gfx] if m.gfx else (m.value("supported") or "").split()
        name = m.value("name")
        if not targets and name:
            # a device listed by its name (rccl-tests): its target where the name says it, else the name
            targets = [appformats.named_target(name) or name]
        elif not targets:
            targets = ["(not named)"]  # a device a runtime enumerated without its name (ROCm OpenCL's driver line)
        seen += [(gfx, str(m.source)) for gfx in targets]
    return seen


def rule_runtime_ready(r: Reasoning) -> None:
    """A runtime that enumerated a GPU (ggml, clinfo, ollama, rocminfo without Chip ID): KFD added it."""
    obs = r.obs
    if r.machine is not None:
        return
    ready = {f.evidence for f in r.findings if f.code == "kfd-ready"}
    if any(f.code == "kfd-ready" for f in r.findings):
        return
    seen = _runtime_gpus(obs)
    if not seen:
        told = _runtime_count_told(r)
        if told is not None:
            r.findings.append(
                Finding("kfd-ready", I, "the text says the ROCm runtime counts a GPU: KFD added it", "", (told,))
            )
            return
    done: set[str] = set()
    for gfx, where in seen:
        if gfx in done:
            continue
        done.add(gfx)
        evidence = (f"{where}: GPU agent {gfx}",)
        if evidence in ready:
            continue
        what = f"a GPU of target {gfx}" if gfx.startswith("gfx") else f"a GPU ({gfx})"
        r.findings.append(Finding("kfd-ready", I, f"the ROCm runtime lists {what}: KFD added it", "", evidence))


def rule_driver_tables(r: Reasoning) -> None:
    """rocm-smi and amd-smi read amdgpu's sysfs: the driver drives the GPUs; KFD is another question."""
    obs = r.obs
    if r.machine is not None:
        return
    count = obs.smi_gpus or len({m.text for m in obs.saw("driver-table")})
    tool = "rocm-smi" if obs.smi_gpus else "amd-smi"
    if not count:
        count, tool = _smi_device_lines(r), "rocm-smi"
    if not count:
        return
    r.findings.append(
        Finding(
            "gpu-driver-ready",
            I,
            f"{tool} lists {count} GPU(s): amdgpu drives them (this does not show whether KFD added them; "
            "rocminfo's GPU agents do)",
            "",
            (f"{tool}: {count} GPU row(s)",),
        )
    )
    if not obs.agents and "kernel-log" not in obs.kinds:
        r.unknown.append("whether KFD added the GPUs: paste 'rocminfo | grep -E \"Name:|Device Type\"'")


def _smi_device_lines(r: Reasoning) -> int:
    """How many GPUs rocm-smi's per-device lines name ("GPU[0]\t\t: Card Series: ...", rocm_smi.py printLog; its
    errors "ERROR: GPU[1]\t: ..."), the form of every option but the concise table: each index is a card amdgpu's
    sysfs lists. Read only where rocm-smi's banner shows that the lines are its own."""
    obs = r.obs
    if not contains(obs, appformats.ROCM_SMI_BANNER):
        return 0
    lines = lines_with(obs, "gpu[")
    return len({m["index"] for line in lines if (m := appformats.ROCM_SMI_DEVICE.match(line))})


def rule_dkms(r: Reasoning) -> None:
    """The out-of-tree amdgpu did not build for the running kernel (its own errors, or dkms status)."""
    obs = r.obs
    if r.machine is not None:
        return
    errors = obs.saw("dkms-build-error")
    if not errors and _holds_lower(obs, "amdgpu", "rock-dkms"):
        errors = obs.saw("dkms-build-skipped")  # dkms skips every module alike: the text must be about amdgpu
    statuses = obs.saw("dkms-status")
    release = obs.release
    built_for = sorted({m.value("release") or "" for m in statuses})
    missing_here = bool(statuses) and release is not None and release not in built_for
    if not errors and not missing_here:
        return
    evidence = [m.text for m in errors[:1]]
    if missing_here:
        evidence.append(f"dkms status: amdgpu installed for {', '.join(built_for)}; running: {release}")
    r.findings.append(
        Finding(
            "dkms-not-built",
            E,
            "the amdgpu DKMS module is not built for the running kernel"
            + (f" {release}" if release else "")
            + ": the kernel's own amdgpu (and its older KFD) is used instead, or none",
            "boot a kernel the module is built for, or install an amdgpu-dkms release that supports this kernel "
            "and run sudo dkms autoinstall -k $(uname -r); the build log is /var/lib/dkms/amdgpu/*/build/make.log",
            tuple(evidence[:3]),
        )
    )
    # What the fallback amdgpu says about KFD support describes that driver, not the GPU.
    r.findings[:] = [f for f in r.findings if f.code not in ("asic-not-supported", "kernel-too-old")]
    for t in r.amd:
        t.block("amdgpu-dkms not built for this kernel", "dkms-not-built")


__all__ = [
    "computes_as_root",
    "rule_blas_fails_on_uncarried_target",
    "rule_denied_by_groups",
    "rule_device_package_missing",
    "rule_dkms",
    "rule_driver_tables",
    "rule_engine_drops_device_group",
    "rule_foreign_host_kfd",
    "rule_group_missing",
    "rule_host_without_kfd",
    "rule_kfd_absent_with_amdgpu",
    "rule_no_code_object",
    "rule_no_device",
    "rule_nvidia_only",
    "rule_override_wrong",
    "rule_prose_incompatible_build",
    "rule_prose_kernel",
    "rule_prose_not_in_group",
    "rule_prose_unsupported",
    "rule_rock_not_loaded",
    "rule_rocm_release_without_code",
    "rule_runtime_ready",
    "rule_wsl_kfd_sought",
]


# --- causes that prose and settings name ---------------------------------------------------------------


def _asics_of(gfx: str) -> list[Asic]:
    return [a for a in ASICS if a.gfx == gfx]


def _real_targets(r: Reasoning, claimed: str | None) -> list[tuple[str, str]]:
    """The GPU's own gfx targets and where the text shows them, without the one an override claims.

    Under HSA_OVERRIDE_GFX_VERSION rocminfo and the libraries report the claimed target, so a GPU's own
    target comes from its ids, its retail name, or a runtime line that reads KFD's topology (ollama).
    """
    found: list[tuple[str, str]] = []
    for t in r.amd:
        if t.asic and t.asic.gfx:
            found.append((t.asic.gfx, str(t.gpu.source)))
    found += [(gfx, str(source)) for gfx, source in r.obs.prose_gfx]
    # A library's file list ("TensileLibrary_lazy_gfx1100.dat") names what the library carries, not the GPU.
    found += [(m.gfx, str(m.source)) for m in r.obs.messages if m.gfx and m.what != "library-targets"]
    found += [(a.gfx, str(a.source)) for a in r.obs.agents]
    if not found:  # a processor name only when nothing names the GPU itself (a discrete card may do the work)
        found = [(gfx, str(source)) for gfx, source in r.obs.cpu_gpus]
    seen: set[str] = set()
    result = []
    for gfx, where in found:
        if gfx != claimed and gfx not in seen:
            seen.add(gfx)
            result.append((gfx, where))
    return result


def _override_is_the_workaround(r: Reasoning, gfx: str) -> bool:
    """Whether the text shows that this program needs a neighbouring target's code: it has none for the GPU's own
    (a no-code-object message), or the text tells the override as what makes it run. Then a same-generation
    override is the known workaround, whatever ROCm's own libraries carry (an application bundles its own)."""
    return bool(r.obs.saw("no-code-object")) or override_told_needed(r) is not None or _wheel_lacks(r, gfx)


def _wheel_lacks(r: Reasoning, gfx: str) -> bool:
    """Whether rocBLAS failed inside a PyTorch wheel dated when no wheel carried ``gfx`` (knowledge/torchwheels.py)."""
    return any(wheel_without_code(r, gfx, m.value("path") or "") for m in r.obs.saw("tensile-unreadable"))


def _seen_by_runtime(r: Reasoning, targets: list[tuple[str, str]], claimed: str) -> list[tuple[str, str]]:
    """Of the targets, those the override reaches. When rocminfo listed its GPU agents by their own targets (run
    without the override: no agent reports the claimed one), a GPU only prose names (an issue form's forced
    choice, another machine of the thread) whose target the listing lacks is not one the runtime sees; a GPU its
    ids or a program's own line show stays."""
    listed = {a.gfx for a in r.obs.agents}
    if not listed or claimed in listed:
        return targets
    shown = {t.asic.gfx for t in r.amd if t.asic} | {m.gfx for m in r.obs.messages if m.gfx}
    return [(g, w) for g, w in targets if g in listed or g in shown]


def rule_override_wrong(r: Reasoning) -> None:
    """HSA_OVERRIDE_GFX_VERSION claiming a target of another GFX generation, or any other target for a GPU
    ROCm supports as it is: the runtime loads code built for another instruction set.

    The override replaces the target ROCr reports for every GPU (libhsakmt topology.c); a neighbour of the
    same generation (10.3.0 for gfx1031) is the known workaround, while code of another generation faults
    or hangs the GPU, and libhsakmt now refuses an override that differs from a supported GPU's own target
    (ROCm/rocm-systems pull 3461: "prevents kernel crashes, KFD interrupt handler overflows, and GPU resets").
    """
    obs = r.obs
    value = obs.value("gfx-override")
    if r.machine is not None or value is None:
        return
    claimed = appformats.override_target(value)
    claimed_major = appformats.gfx_major(claimed) if claimed else None
    if claimed is None or claimed_major is None:
        return
    shown = rocm_versions_shown(r)
    targets = _seen_by_runtime(r, _real_targets(r, claimed), claimed)
    # Another GPU of the override's own generation beside it: the override was set for that one, and reaches all.
    beside = next((g for g, _ in targets if appformats.gfx_major(g) == claimed_major), None)
    for gfx, where in targets:
        major = appformats.gfx_major(gfx)
        in_release = carried_in(gfx, shown)
        if in_release is None and predates_support(r, gfx):
            in_release = False  # dated before the first release with its code: the override was the workaround
        supported = any(a.rocm_prebuilt for a in _asics_of(gfx)) if in_release is None else in_release
        if major is None or (major == claimed_major and not supported):
            continue
        if major == claimed_major and _override_is_the_workaround(r, gfx):
            continue
        if major == claimed_major and had_a_gap(gfx):
            # A release before the one that added gfx's code needed this override: judged by the release shown.
            _override_of_a_former_gap(r, value, gfx, claimed, where, shown if in_release else [])
            return
        why = (
            f"a GFX{claimed_major} target on a GFX{major} GPU: another instruction set"
            if major != claimed_major
            else f"{gfx} is supported by ROCm as it is, so the override only swaps in another target's code"
        )
        source = obs.first("gfx-override")
        r.findings.append(
            Finding(
                "env-override-wrong",
                E,
                f"HSA_OVERRIDE_GFX_VERSION={value} makes the runtime treat the {gfx} GPU as {claimed} ({why}); "
                "its kernels then fault, hang the GPU or fall back to the CPU"
                + (f" (the override, set for the {beside} GPU beside it, applies to every GPU)" if beside else ""),
                _override_remedy(value, beside) + (f"; {gfx} needs no override" if supported else ""),
                (
                    f"{source.source}: HSA_OVERRIDE_GFX_VERSION={value}" if source else f"override {value}",
                    f"{where}: {gfx}",
                ),
            )
        )
        return


def _override_remedy(value: str, beside: str | None) -> str:
    """Unset the override; with a GPU beside that needs it, the per-GPU form for that one (libhsakmt reads
    HSA_OVERRIDE_GFX_VERSION_<node id> before the global variable, since ROCm 6.2)."""
    where = "(~/.bashrc, /etc/environment, the service's Environment=, the container's -e, the program's "
    if beside is None:
        return f"unset HSA_OVERRIDE_GFX_VERSION wherever it is set {where}launch script)"
    return (
        f"set the override for the {beside} GPU alone: HSA_OVERRIDE_GFX_VERSION_<node>={value} (ROCm 6.2 and later; "
        f"<node> is that GPU's KFD node, rocminfo's 'Node:'), and unset the global HSA_OVERRIDE_GFX_VERSION "
        f"wherever it is set {where}os.environ or launch script)"
    )


def _override_of_a_former_gap(
    r: Reasoning, value: str, gfx: str, claimed: str, where: str, shown: list[tuple[tuple[int, int], str]]
) -> None:
    """A same-generation override for a target rocBLAS added late (gfx1103 from ROCm 7.1): the documented
    workaround for the releases before, a leftover from then on. With the release shown and carrying the GPU's
    own code the override is unneeded (a warning: it runs another target's code); without a release, unknown."""
    first = rocm.first_rocm_with(gfx)
    since = f"ROCm {rocm.version_text(first)}" if first else "a later ROCm"
    if not shown:
        r.unknown.append(
            f"whether HSA_OVERRIDE_GFX_VERSION={value} is needed: rocBLAS carries {gfx} code from {since} on, and "
            "the text shows no ROCm release (before it the override is the known workaround)"
        )
        return
    source = r.obs.first("gfx-override")
    r.findings.append(
        Finding(
            "env-override-unneeded",
            W,
            f"HSA_OVERRIDE_GFX_VERSION={value} makes the runtime treat the {gfx} GPU as {claimed}, but the text shows "
            f"ROCm {releases_text(shown)}, whose rocBLAS carries {gfx} code (from {since} on): the override, the "
            f"workaround for earlier releases, now only swaps in {claimed}'s code",
            f"unset HSA_OVERRIDE_GFX_VERSION where it is set (~/.bashrc, /etc/environment, the service's "
            f"Environment=, the container's -e) and let {gfx} run its own code; keep it only for a program that "
            "bundles an older ROCm",
            (
                f"{source.source}: HSA_OVERRIDE_GFX_VERSION={value}" if source else f"override {value}",
                f"{where}: {gfx}",
                *(f"the text: {line}" for _, line in shown[:2]),
            ),
        )
    )


def rule_rocm_release_without_code(r: Reasoning) -> None:
    """The text shows a ROCm release whose rocBLAS carries no code for the GPU's target: older than the first
    release with it (an RX 7800 XT's gfx1101 beside ROCm 5.4), or after the target left the list (gfx803 beside
    ROCm 6.0). PyTorch's +rocmX.Y wheels bundle that release's libraries (inferred: their own kernels may cover
    fewer targets still). A same-generation override stands in for the missing code; rule_override_wrong
    judges it."""
    obs = r.obs
    if obs.foreign_host is not None:
        return  # Windows' HIP SDK ships other target lists than the Linux release of the same number
    if r.has("userspace-target-unsupported", "env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    shown = rocm_versions_shown(r)
    if not shown:
        return
    value = obs.value("gfx-override")
    claimed = appformats.override_target(value) if value else None
    for gfx, where in _real_targets(r, claimed):
        if carried_in(gfx, shown) is not False or not rocm.releases_with(gfx) or not _asics_of(gfx):
            continue  # carried, unknown, or carried by no release at all (other rules speak of those targets)
        if claimed and appformats.gfx_major(claimed) == appformats.gfx_major(gfx):
            continue
        r.findings.append(_release_without_code(gfx, where, shown))
        return


def rule_blas_fails_on_uncarried_target(r: Reasoning) -> None:
    """A BLAS call failing (HIPBLAS_STATUS_INTERNAL_ERROR ...) on a GPU whose target no rocBLAS release builds code
    for (gfx1031, gfx1032, ...), with no override standing in: the Tensile kernels are not there."""
    obs = r.obs
    if r.has("userspace-target-unsupported", "env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    failed = search_lines(appformats.BLAS_STATUS_FAILED, obs, "_status_")
    if failed is None:
        return
    value = obs.value("gfx-override")
    if value and appformats.override_target(value):
        return  # an override stands in for the missing code (rule_override_wrong judges it)
    for gfx, where in _real_targets(r, None):
        if rocm.releases_with(gfx) or not _asics_of(gfx):
            continue
        r.findings.append(
            Finding(
                "userspace-target-unsupported",
                W,
                f"a BLAS call failed ({failed.group(0)}) on {gfx}, for which no ROCm release's rocBLAS builds Tensile "
                "kernels (ROCm 3.0 to the newest known): the library has no kernel to run the call on this GPU; the "
                "kernel and permissions are not the cause",
                f"build rocBLAS (and hipBLASLt) with {gfx} among its targets{remedies.override_workaround(gfx)}",
                (f"the text: {failed.string.strip()[:160]}", f"{where}: {gfx}"),
            )
        )
        return


def _release_without_code(gfx: str, where: str, shown: list[tuple[tuple[int, int], str]]) -> Finding:
    newest_shown = max(v for v, _ in shown)
    later = [v for v in rocm.releases_with(gfx) if v > newest_shown]
    earlier = [v for v in rocm.releases_with(gfx) if v < newest_shown]
    if later:
        history = f"rocBLAS carries it from ROCm {rocm.version_text(later[0])} on"
        remedy = (
            f"install ROCm {rocm.version_text(later[0])} or later (for PyTorch, a +rocm wheel of that release or "
            f"later), or a build of the program that bundles {gfx} code"
        )
    else:  # the caller asks about targets some release carries
        history = f"rocBLAS carried it up to ROCm {rocm.version_text(earlier[-1])}"
        remedy = f"use ROCm {rocm.version_text(earlier[-1])} or a build of rocBLAS and the program for {gfx}"
    return Finding(
        "userspace-target-unsupported",
        W,
        f"the text shows ROCm {releases_text(shown)}, whose rocBLAS carries no code for {gfx} ({history}): "
        "programs built on that release have nothing to run on this GPU (they fail with 'invalid device "
        "function', a missing TensileLibrary, or a crash); the kernel and permissions are not the cause",
        remedy,
        (*(f"the text: {line}" for _, line in shown[:2]), f"{where}: {gfx}"),
    )


def rule_foreign_host_kfd(r: Reasoning) -> None:
    """/dev/kfd passed to (or told missing from) a container on a host that has none (Docker Desktop, WSL2, a
    Windows prompt), told in prose without the runtime's own error."""
    obs = r.obs
    if r.machine is not None or r.has("host-without-kfd", "no-amd-gpu"):
        return
    # The rarer cue first: each cue is one search of the whole text.
    passed = search_lines(appformats.KFD_PASSED, obs, "/dev/kfd") or kfd_told_absent_in_container(r)
    if passed is None:
        return
    host = search_lines(
        appformats.STRONG_FOREIGN,
        obs,
        "docker desktop",
        "docker-desktop",
        "desktop-linux",
        "wsl",
        "microsoft",
        "dxg",
        ":\\users\\",
    )
    if host is None:
        return
    _drop_linux_host_findings(r)
    r.findings.append(
        Finding(
            "host-without-kfd",
            E,
            f"the containers run through {host.group(0)}, whose engine has no amdgpu/KFD of its own: the /dev/kfd "
            "passed in cannot reach the GPU, and nothing inside the container can create it",
            "run the container with the native Docker or Podman engine of a Linux host with amdgpu (docker context "
            "use default, or stop Docker Desktop); under WSL2 use AMD's WSL ROCm stack through /dev/dxg",
            (f"the text: {host.group(0)}", f"the text: {passed.group(0).strip()}"),
        )
    )


def rule_prose_unsupported(r: Reasoning) -> None:
    """The text says the GPU is not supported, for a target ROCm's prebuilt libraries do not carry."""
    obs = r.obs
    if r.machine is not None or r.has("userspace-target-unsupported", "no-amd-gpu"):
        return
    if any(f.severity is E and f.code != "env-override-wrong" for f in r.findings):
        return  # a cause lower in the stack (or a message of the program's own) already explains it
    # (A wrong override speaks of a GPU ROCm supports; another GPU beside it may still have no code.)
    said = None
    for line in lines_with(obs, "support"):
        m = appformats.PROSE_UNSUPPORTED.search(line)
        if m and appformats.yes_no_question(line, m.start()):
            continue  # "Is my GPU not supported?": the person's doubt, not support denied
        low = line.lower()
        gpu_named = "gpu" in low or "gfx" in low or "card" in low or "radeon" in low or "rx" in low or "apu" in low
        if m and (gpu_named or appformats.PROSE_FAMILY.search(line)):
            said = m
            break
    told = said is not None  # support denied in words, not only a symptom
    if said is None:
        # "Ollama doesn't use gpu", "uses only the CPU": the same conclusion for a GPU without prebuilt code.
        said = search_lines(appformats.PROSE_CPU_ONLY, obs, "gpu", "cpu", "card")
    if said is None:
        return
    # Of several GPUs (an iGPU beside a discrete one), the one ROCm's libraries carry no code for.
    first, shown = _gfx_of_text(r, [])
    targets = _real_targets(r, None) or ([(first, shown or "the text")] if first else [])
    targets += appformats.codename_targets(obs.text)
    unsupported = [(g, w, era) for g, w in targets if g for era in [_era_without_code(r, g)] if era is not None]
    if not told:
        # A symptom alone ("rocminfo does not see my GPU") has other causes: with no release or date to say
        # which, the conditional "before ROCm 7.1" is no conclusion; only a told "not supported" carries it.
        unsupported = [u for u in unsupported if not u[2].startswith((NO_RELEASE_SHOWN, DROPPED_SINCE))]
    if not unsupported:
        return
    gfx, where, era = unsupported[0]
    override = obs.value("gfx-override")
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"the text says the GPU is not supported, and ROCm's prebuilt libraries carry no code for {gfx}{era}: "
            "the program's ROCm build has nothing to run on it; the kernel and permissions are not the cause"
            + (
                f" (HSA_OVERRIDE_GFX_VERSION={override} only helps where the program itself is started with it)"
                if override
                else ""
            ),
            f"use software built for {gfx}, or a build whose targets include it; the unsupported workaround is "
            f"HSA_OVERRIDE_GFX_VERSION set in the environment of the process that uses the GPU (for a service: "
            "systemctl edit, Environment=), not in a login shell's profile",
            (f"the text: {said.group(0)}", f"{where}: {gfx}"),
        )
    )


NO_RELEASE_SHOWN = " before ROCm "  # how _era_without_code's conditional answers begin
DROPPED_SINCE = " from ROCm "


def _era_without_code(r: Reasoning, gfx: str) -> str | None:
    """Whether rocBLAS of the ROCm the text is about carries no code for ``gfx``, and in which releases: "" where no
    release does (by the table), the releases or the date that decide it, or the condition where the text shows
    neither and the answer turned with a release (gfx1103: none before 7.1). None where it carries the code."""
    if not _asics_of(gfx):
        return ""  # a target no known GPU has: no prebuilt library carries it
    shown = rocm_versions_shown(r)
    carried = carried_in(gfx, shown)
    if carried is not None:
        return None if carried else f" in ROCm {releases_text(shown)}"
    if any(a.rocm_prebuilt for a in _asics_of(gfx)) and not had_a_gap(gfx):
        return None
    first = rocm.first_rocm_with(gfx)
    if first is None:
        return ""
    if not rocm.carries(gfx, rocm.newest().version):
        return _era_after_drop(gfx, shown)
    since = rocm.version_text(first)
    dated = predates_support(r, gfx)
    if dated is not None:
        date, _, row = dated
        return (
            f" in any ROCm the text can show: it is dated {date}, before ROCm {since} ({row.published}), the first "
            "whose rocBLAS carries it"
        )
    return (
        f"{NO_RELEASE_SHOWN}{since} (the text shows no release; from {since} on rocBLAS carries it, and on such a "
        "release this is not the cause)"
    )


def _era_after_drop(gfx: str, shown: list[tuple[rocm.RocmVersion, str]]) -> str | None:
    """For a target rocBLAS carried and then dropped (gfx803 up to 5.7): a release shown newer than the table's
    last carries none; one the table does not know otherwise (ROCm 3.2, which has no rocBLAS tag) leaves it
    unknown; with no release shown, the condition."""
    carried = rocm.releases_with(gfx)
    if shown:
        return "" if all(version > carried[-1] for version, _ in shown) else None
    after = next(row.version for row in rocm.ROCM_RELEASES if row.version > carried[-1])
    return (
        f"{DROPPED_SINCE}{rocm.version_text(after)} on (the text shows no release; rocBLAS carried it up to "
        f"{rocm.version_text(carried[-1])}, and on such a release this is not the cause)"
    )


def rule_prose_incompatible_build(r: Reasoning) -> None:
    """The text says a program's ROCm build (an engine, a backend) is not compatible, beside an AMD GPU it names: the
    build carries no code for that GPU's target, whatever ROCm's own libraries carry (an application bundles its
    own). A kernel's or a driver's incompatibility is another cause, left to the rules that read those."""
    obs = r.obs
    if r.machine is not None or r.has("userspace-target-unsupported", "userspace-no-rocm-build", "no-amd-gpu"):
        return
    if any(f.severity is E for f in r.findings):
        return  # a cause lower in the stack, or the program's own message, already explains it
    said = None
    for line in lines_with(obs, "compatible"):
        low = line.lower()
        if "kernel" in low or "driver" in low:
            continue
        said = appformats.ROCM_BUILD_INCOMPATIBLE.search(line)
        if said:
            break
    if said is None:
        return
    gfx, where = _gfx_of_text(r, [])
    if gfx is None and not (amd_gpu_named(r) or contains(obs, "radeon", lower=True)):
        return  # no AMD GPU in sight: nothing says whose target is missing
    target = gfx or "this GPU's target"
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"the text says the program's ROCm build is not compatible with this GPU ({target}): it carries no code "
            "for that target, so the program leaves the GPU out (or falls back to another backend); the kernel and "
            "permissions are not the cause",
            f"use a release of the program whose ROCm build lists {target} among its targets, or its Vulkan backend "
            "meanwhile; 'rocminfo | grep gfx' names the GPU's target",
            (f"the text: {said.group(0)}",) + ((f"{where}: {gfx}",) if gfx else ()),
        )
    )


def rule_prose_not_in_group(r: Reasoning) -> None:
    """The text says the user is not in the group that owns /dev/kfd."""
    obs = r.obs
    if r.machine is not None or r.has(
        "user-not-in-group", "device-permissions", "rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu"
    ):
        return
    m = None
    for line in lines_with(obs, " group"):
        low = line.lower()  # "groups=" of id(1) holds the cue too: test the words before the expression
        if ("render" in low or "video" in low) and "not" in low:
            m = appformats.NOT_IN_GROUP.search(line)
            if m:
                break
    if m is None:
        # "this actually worked (I just forgot to add the groups)": the membership told as what was missing
        m = search_lines(appformats.FORGOT_GROUPS, obs, "forgot", "forget")
        if m is None or appformats.NEGATED.search(m.string[: m.start()]) or not amd_gpu_named(r):
            return
    group = (m["group"] or "render").lower()
    if obs.user is not None and group in obs.user.groups:
        return
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"the user is not in group '{group}', which owns /dev/kfd and /dev/dri/renderD*: opening them fails "
            "with EACCES, so ROCm programs find no GPU",
            f"sudo usermod -aG {group} $USER (render and video where both exist), then log out and back in; for "
            "accounts created by provisioning, add the groups where the account is created",
            (f"the text: {m.group(0)}",),
        )
    )


def computes_as_root(r: Reasoning) -> bool:
    """Whether the text says the program works as root ("works with sudo"): KFD then works on that kernel, so its
    release cannot be what keeps the GPU from compute (ROCm 1.x-2.x brought their own KFD to 4.x kernels)."""
    return told_root_works(r) is not None


def rule_prose_kernel(r: Reasoning) -> None:
    """The kernel (from uname or a log, else the one kernel version prose names) older than the first KFD for
    a GPU the text names only by retail name or gfx target (GPUs with PCI ids: rule_kernel_support)."""
    if r.machine is not None or r.amd or r.has("kernel-too-old", "asic-not-supported", "dkms-not-built"):
        return  # GPUs with ids are rule_kernel_support's; with DKMS not built, the kernel's own amdgpu is moot
    if computes_as_root(r):
        return  # KFD works on that kernel as root (ROCm's own driver): its release is not the cause
    version = r.version
    said = "the kernel the text names" if version is None else f"the running kernel ({r.release})"
    if version is None:
        version = _kernel_of_the_failure(r)
        if version is None:
            return  # none, or several kernels named: which one runs, the text does not say
    for asic, where in _prose_asics(r):
        # A chip named by code name: its own first KFD, where its target is shared by older chips.
        if asic.kfd_since is not None and version < asic.kfd_since:
            _kernel_too_old_for(r, said, version, asic.kfd_since, asic.gfx or asic.family, where)
            return
    for gfx, where in _real_targets(r, None):
        since = [a.kfd_since for a in _asics_of(gfx) if a.kfd_since is not None]
        if not since or version >= min(since):
            continue
        _kernel_too_old_for(r, said, version, min(since), gfx, where)
        return


def _kernel_too_old_for(
    r: Reasoning, said: str, version: tuple[int, int], need: tuple[int, int], gpu: str, where: str
) -> None:
    r.findings.append(
        Finding(
            "kernel-too-old",
            E,
            f"{said}, {version[0]}.{version[1]}, is older than the first KFD for {gpu} "
            f"(Linux {need[0]}.{need[1]}): that kernel's amdgpu does not run this GPU for compute",
            r.newer_kernel(need),
            (f"{said}: {version[0]}.{version[1]}", f"{where}: {gpu}"),
        )
    )


def _prose_asics(r: Reasoning) -> list[tuple[Asic, str]]:
    """The chips prose names by code name, as knowledge.asic gives them (corrected by the kernel tables)."""
    return [(asic, str(source)) for key, source in r.obs.prose_asics if (asic := knowledge.asic(key)) is not None]


def _kernel_of_the_failure(r: Reasoning) -> tuple[int, int] | None:
    """The one kernel version prose names ("kernel 6.8", "6.8 kernel", "Linux 6.8"), or, of several, the one
    left when those on lines that tell a success ("finally tried Linux 5.3 and it's working": after the fix)
    are set aside."""
    # "kernel 6.8" and "6.8 kernel" hold "kernel " (journald's "kernel:" does not), "Linux 6.8" "linux ".
    lines = lines_with(r.obs, "kernel ") + lines_with(r.obs, "linux ")
    named: dict[tuple[int, int], bool] = {}  # version -> named on a line without a success
    for line in dict.fromkeys(lines):  # a long paste repeats its prose lines
        failing = not (appformats.TOLD_SUCCESS.search(line) and not appformats.NEGATED.search(line))
        for m in appformats.PROSE_KERNEL.finditer(line):
            if appformats.VERSION_OF_ANOTHER.search(line[: m.start()]):
                continue
            a, b = (m["a"] or m["b"]).split(".")
            named[int(a), int(b)] = named.get((int(a), int(b)), False) or failing
    if len(named) == 1:
        return next(iter(named))
    before = [v for v, failing in named.items() if failing]
    return before[0] if len(before) == 1 else None


# --- causes told around the pasted lines: settings, hosts, builds and GPUs in a person's own words -------


def _said_override(r: Reasoning) -> str | None:
    """A line where the person (not the program) shows HSA_OVERRIDE_GFX_VERSION set: a unit's Environment=, an
    export, a docker -e. ollama's own lines (its config map, its check) say what the program got instead."""
    for line in lines_with(r.obs, "hsa_override_gfx_version"):
        if "=" in line and "server config" not in line and "source=" not in line and "msg=" not in line:
            return line.strip()[:160]
    return None


def rule_override_not_applied(r: Reasoning) -> None:
    """HSA_OVERRIDE_GFX_VERSION set where the person says, and absent from the program that logged.

    ollama checks a GPU's target against its libraries only when HSA_OVERRIDE_GFX_VERSION is empty in its own
    environment (discover/amd_linux.go: 'if gfxOverride == ""'; otherwise it logs 'skipping rocm gfx
    compatibility check'), so its "not supported" line proves the override did not reach it; its 'server
    config' map shows the same. A variable in a login shell's profile never reaches a systemd service.
    """
    obs = r.obs
    if r.machine is not None or obs.saw("override"):
        return  # ollama honoured an override
    if r.has("env-override-wrong", "no-amd-gpu"):
        return
    said = _said_override(r) if obs.value("gfx-override") is not None else None
    if said is None and obs.saw("override-unset"):
        # "setting the override with systemctl edit ... does not take place": no value shown, but the server's
        # own config map shows the variable empty, which is the point.
        told = search_lines(appformats.PROSE_OVERRIDE_SET, obs, "override")
        said = told.group(0) if told else None
    if said is None:
        return
    if search_lines(appformats.WITHOUT_OVERRIDE, obs, "without"):
        return  # "without the override, ollama drops it": the failure shown is the run before the fix
    ollama = [m for m in obs.saw("no-code-object") if m.format.startswith("ollama-")] + obs.saw("override-unset")
    evidence = [f"the text: {said}"]
    if ollama:
        evidence.append(ollama[0].text)
        why = (
            "ollama checks the GPU's target only when HSA_OVERRIDE_GFX_VERSION is empty in its own environment, "
            "and it did: the override never reached the server that logged"
        )
    else:
        profile = next((p for p in (".bashrc", ".profile", ".zshrc", "/etc/environment") if _holds_lower(obs, p)), None)
        service = _holds_lower(obs, "journalctl -u", "systemctl", ".service")
        if profile is None or not service or profile == "/etc/environment":
            return
        evidence.append(f"the text: the variable is set in {profile}, and the program runs as a systemd service")
        why = f"a systemd service does not read {profile} (a login shell's profile), so the service never had it"
    r.findings.append(
        Finding(
            "env-override-not-applied",
            W,
            f"HSA_OVERRIDE_GFX_VERSION is set where the text shows it, but not in the program's environment: {why}",
            "set it where the process that uses the GPU starts: for the ollama service 'sudo systemctl edit ollama' "
            '([Service] Environment="HSA_OVERRIDE_GFX_VERSION=x.y.z"), then sudo systemctl restart ollama (an '
            "'ollama serve' typed in a terminal reads neither the unit nor another user's profile); by hand, "
            "HSA_OVERRIDE_GFX_VERSION=x.y.z ollama serve; in a container, -e HSA_OVERRIDE_GFX_VERSION=x.y.z",
            tuple(evidence),
        )
    )


def _wsl(r: Reasoning) -> str | None:
    """Where the text shows ROCm running under WSL: rocminfo's WSL line, a WSL build's source path, the prose."""
    obs = r.obs
    seen = obs.saw("wsl-runtime")
    if seen:
        return seen[0].text
    if _holds_lower(obs, "sources/wsl/"):
        return "the text: a ROCm WSL build's source path (sources/wsl/)"
    if obs.foreign_host is not None and "wsl" in str(obs.foreign_host).lower():
        return str(obs.foreign_host)
    return None


WSL_INIT_FAILED = ("rocminfo-hsa-init-failed", "rocdxg-no-wddm-adapter")


def rule_wsl_runtime(r: Reasoning) -> None:
    """ROCm under WSL failing: there is no KFD there, only AMD's WSL releases on the GPUs of their list."""
    obs = r.obs
    if r.machine is not None or r.has("no-amd-gpu"):
        return
    refused = obs.saw("runtime-unsupported-gpu")
    failed = obs.first("hsa-failure")
    # ROCm 7's rocminfo ("hsa_init Failed, ...") and librocdxg ("No WDDM adapters found") say the same failure
    # in their own words.
    init_failed = [m for m in obs.saw("no-device") if m.format in WSL_INIT_FAILED]
    failure = failed.value if failed is not None else init_failed[0].text if init_failed else None
    # The runtime's refusal, or the GPU told unsupported under WSL in words (beside a failure, or a hang told).
    told = None if refused else _gpu_denied_under_wsl(r)
    if not refused and failure is None and told is None:
        return
    where = _wsl(r)
    if where is None:
        return
    if (refused or told) and not r.has("userspace-target-unsupported"):
        r.findings[:] = [f for f in r.findings if f.code not in WSL_MOOT_CODES]
        gfx, shown = _gfx_of_text(r, [])
        gpu = gfx or "this GPU"
        said = refused[0].text if refused else f"the text: {told}"
        how = "('ROCR: unsupported GPU')" if refused else "(the text says so)"
        r.findings.append(
            Finding(
                "userspace-target-unsupported",
                E,
                f"ROCm's WSL runtime does not support {gpu} {how}: under WSL ROCm runs only on the GPUs "
                "of AMD's WSL compatibility list for that release; groups, permissions and drivers inside WSL "
                "cannot change it",
                "look up AMD's ROCm-on-WSL compatibility matrix for a release (and Windows driver) that lists this "
                "GPU; otherwise run ROCm on a Linux host (bare metal, or a VM with the GPU passed through)",
                tuple(x for x in (said, where, f"{shown}: {gfx}" if gfx else None) if x),
            )
        )
    unsupported = bool(refused or told)
    # Without the runtime's failure (rocminfo lists the GPU, programs hang) the missing KFD explains nothing.
    if (failure is None and not refused) or r.has("host-without-kfd"):
        return
    _drop_linux_host_findings(r)
    r.findings.append(
        Finding(
            "host-without-kfd",
            W if unsupported else E,
            "ROCm runs under WSL, where there is no KFD and no /dev/kfd: ROCr reaches the GPU through the Windows "
            "driver (/dev/dxg) only in the ROCm releases AMD builds for WSL, with a matching Adrenalin driver; an "
            "HSA_STATUS_ERROR_OUT_OF_RESOURCES there means that path found no GPU it can use",
            "install the ROCm release AMD's WSL compatibility matrix lists for this GPU and Windows driver "
            "(amdgpu-install --usecase=wsl,rocm --no-dkms), not a release for Linux hosts; from ROCm 7.2 the WSL path "
            "is ROCDXG: librocdxg installed in the distribution and HSA_ENABLE_DXG_DETECTION=1 in the program's "
            "environment; advice about amdgpu, /dev/kfd or the render group does not apply under WSL",
            tuple(x for x in (where, failure) if x),
        )
    )


# What makes a support denial speak of a GPU, not of a release ("ROCm 7.1 is not supported on WSL").
_GPU_WORD = re.compile(r"\b(?:gpus?|cards?|gfx\d+|rx\s?\d{3,4}|radeon|\d{4}\s?(?:xtx|xt|gre))\b", re.I)


def _gpu_denied_under_wsl(r: Reasoning) -> str | None:
    """A line that says a GPU is not supported under WSL (AMD's answer to an HSA failure there), not a question."""
    for line in lines_with(r.obs, "wsl"):
        m = appformats.PROSE_UNSUPPORTED.search(line)
        if m is None or appformats.yes_no_question(line, m.start()) or not _GPU_WORD.search(line[: m.start()]):
            continue
        return line.strip()[:160]
    return None


def rule_wsl_gpu_unlisted(r: Reasoning) -> None:
    """Under WSL, the runtime up but no GPU agent, or prose that the GPU is not seen: the GPU (for the installed
    release) is not on AMD's ROCm-on-WSL list. A failing runtime (an HSA error) is rule_wsl_runtime's instead."""
    obs = r.obs
    if r.machine is not None or obs.agents or obs.first("hsa-failure") is not None:
        return
    if r.has("userspace-target-unsupported", "host-without-kfd", "no-amd-gpu"):
        return
    where = _wsl(r)
    if where is None:
        return
    # rocminfo ran and listed agents, none a GPU (agents above returned): the same evidence rule_gpu_nodes reads,
    # which a paste cut before the agents' "Device Type:" line still gives
    cpu_only = obs.first("rocminfo-agents") is not None or (_holds(obs, "HSA Agents") and _holds(obs, "Device Type:"))
    said = (
        None
        if cpu_only
        else search_lines(appformats.PROSE_NO_GPU_SEEN, obs, "work", "get", "cpu", "detect", "fail")
        or search_lines(appformats.PROSE_NOT_ON_LIST, obs, " list", "matrix", "table")
    )
    if not cpu_only and said is None:
        return
    gfx, shown = _gfx_of_text(r, [])
    r.findings[:] = [f for f in r.findings if f.code not in WSL_MOOT_CODES]
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"ROCm under WSL sees no GPU it supports{f' ({gfx})' if gfx else ''}: the WSL runtime reaches the GPU "
            "through the Windows driver and runs only on the GPUs of AMD's ROCm-on-WSL compatibility matrix for the "
            "installed release and Adrenalin driver; the WSL kernel, amdgpu, groups and HSA_OVERRIDE_GFX_VERSION play "
            "no part",
            "look the GPU up in AMD's ROCm-on-WSL compatibility matrix: install a listed release with its Windows "
            "driver, or run ROCm on a Linux host (bare metal, or a VM with the GPU passed through)",
            tuple(
                x
                for x in (
                    where,
                    "rocminfo: no GPU agent" if cpu_only else f"the text: {said.group(0) if said else ''}",
                    f"{shown}: {gfx}" if gfx else None,
                )
                if x
            ),
        )
    )


def rule_wsl_kfd_sought(r: Reasoning) -> None:
    """Under WSL, the text says a program looks for KFD where WSL has only /dev/dxg ("ollama's detection uses the
    kfd device, which is replaced with dxg inside WSL"): that program cannot find the GPU there."""
    obs = r.obs
    if r.machine is not None or r.has(
        "host-without-kfd", "no-amd-gpu", "userspace-no-rocm-build", "userspace-target-unsupported"
    ):
        return
    # The runtime listing a GPU agent shows the WSL path working: no /dev/kfd there is expected, not a failure.
    where = None if obs.agents else _wsl(r)
    if where is None:
        return
    said = search_lines(appformats.PROSE_KFD_FOR_DXG, obs, "dxg")
    told = f"the text: {said.group(0)[:160]}" if said is not None else _ollama_finds_no_amd_gpu(r)
    if told is None:
        return
    _drop_linux_host_findings(r)
    r.findings.append(
        Finding(
            "host-without-kfd",
            E,
            "under WSL there is no KFD and no /dev/kfd: AMD's WSL runtime reaches the GPU through the Windows driver "
            "(/dev/dxg), so a program that finds AMD GPUs through /dev/kfd or KFD's topology in sysfs finds none "
            "there, although rocminfo and ROCm's own samples work",
            "use a build of the program that goes through the WSL runtime (from ROCm 7.2, ROCDXG: librocdxg and "
            "HSA_ENABLE_DXG_DETECTION=1 in its environment) or run it on a Linux host with amdgpu; groups, "
            "permissions and amdgpu advice do not apply under WSL",
            (where, told),
        )
    )


_AMD_WORD = re.compile(r"\b(?:AMD|Radeon|ROCm)\b", re.I)


def _ollama_finds_no_amd_gpu(r: Reasoning) -> str | None:
    """ollama's discovery ending with no GPU on a machine with an AMD one and no NVIDIA one: on Linux ollama finds
    AMD GPUs through KFD's topology in sysfs (discover/amd_linux.go reads /sys/class/kfd/kfd/topology/nodes), which
    WSL does not have."""
    said = [m for m in r.obs.saw("no-device") if m.format == "ollama-no-gpus"]
    if not said or r.obs.nvidia or not (amd_gpu_named(r) or search_lines(_AMD_WORD, r.obs, "amd", "radeon", "rocm")):
        return None
    return f"{said[0].source}: {said[0].text}"


def rule_device_package_missing(r: Reasoning) -> None:
    """TheRock's multi-arch wheels without the GPU's device package, as the text tells it: the generic package has
    no kernels of any GPU, so every launch fails (HIP's hipErrorInvalidImage) whatever the GPU and driver."""
    obs = r.obs
    if r.machine is not None or r.has("userspace-target-unsupported", "no-amd-gpu", "userspace-no-rocm-build"):
        return
    told = search_lines(appformats.DEVICE_PACKAGE_MISSING, obs, "device")
    if told is None:
        return
    gfx, shown = _gfx_of_text(r, [])
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            E,
            f"the installed ROCm wheels have no code for {gfx or 'this GPU'}: TheRock's multi-arch packages carry "
            "each GPU's kernels in a separate device package (amd-torch-device-gfxNNNN, rocm-sdk-device-gfxNNNN), "
            "and without the one for this GPU's target every kernel launch fails",
            f'install the device packages of the GPU\'s target: pip install "torch[device-{gfx or "gfxNNNN"}]" (and '
            "the same extra for torchvision) from the release's index, the way its install instructions list them",
            tuple(x for x in (f"the text: {told.group(0)[:160]}", f"{shown}: {gfx}" if gfx else None) if x),
        )
    )


def rule_no_amd_gpu_listed(r: Reasoning) -> None:
    """No AMD GPU: an lspci listing whose display controllers are all another vendor's (a VM's virtual adapter,
    an Intel or NVIDIA GPU), or prose that says the machine has none."""
    obs = r.obs
    if r.machine is not None or amd_gpu_named(r) or r.has("no-amd-gpu"):
        return
    text = obs.text
    names = [m["name"] for line in lines_with(obs, " controller") if (m := appformats.PCI_DISPLAY.match(line))]
    evidence: list[str] = []
    amd_listed = any("AMD" in n or "ATI" in n or "Advanced Micro" in n or "Radeon" in n for n in names)
    if names and not amd_listed and not _holds_lower(obs, "[1002:"):
        evidence.append(f"lspci: display controllers {'; '.join(dict.fromkeys(names))}")
        virtual = next((n for n in names if appformats.VIRTUAL_DISPLAY.search(n)), None)
        if virtual and appformats.PASSTHROUGH.search(text):
            return  # a guest given a GPU by passthrough: the listing shown is the VM's own adapter, not all
        what = (
            f"this is a virtual machine ({virtual}) with no GPU passed in"
            if virtual
            else "none of its display controllers is AMD's"
        )
        remedy = (
            "pass the AMD GPU through to the VM (vfio-pci / PCI passthrough in the hypervisor), or run ROCm on the "
            "host that has it; then 'lspci -nn | grep -Ei \"vga|display|3d\"' in the guest lists it"
            if virtual
            else "run ROCm on a machine with a supported AMD GPU; 'lspci -nn | grep -Ei \"vga|display|3d\"' lists them"
        )
    else:
        said = search_lines(appformats.PROSE_NO_AMD, obs, "amd", "radeon")
        if said is None:
            return
        evidence.append(f"the text: {said.group(0)}")
        what = "the text says the machine has no AMD GPU"
        remedy = "nothing to fix for ROCm itself; its GPU errors are expected without an AMD GPU"
    r.findings.append(
        Finding(
            "no-amd-gpu",
            I,
            f"no AMD GPU: {what}, so ROCm has nothing to run on and its errors here (ROCk module not loaded, "
            "no devices, out of resources) say nothing about an AMD setup",
            remedy,
            tuple(evidence),
        )
    )


def _dkms_told(source: Searchable) -> str | None:
    """Where the text says the out-of-tree driver does not build: the package by name, the driver in words,
    ROCm working only with --no-dkms, or dpkg failing to configure a -dkms package."""
    said = search_lines(appformats.PROSE_DKMS, source, "dkms")
    if said:
        return f"the text: {said.group(0)}"
    if contains(source, "build", lower=True) or contains(source, "compil", lower=True):
        fails = search_lines(appformats.PROSE_BUILD_FAILS, source, "build", "compil")
        if fails:
            return f"the text: {fails.group(0)}"
    if contains(source, "--no-dkms", lower=True):
        works = search_lines(appformats.NO_DKMS_WORKS, source, "--no-dkms")
        if works:
            return f"the text: {works.group(0)} (ROCm works without the DKMS module)"
    if contains(source, "errors were encountered while processing", lower=True):
        package = appformats.DPKG_DKMS.search(source.text)
        if package:
            return f"dpkg: errors were encountered while processing {package['package']}"
    return None


def rule_prose_dkms(r: Reasoning) -> None:
    """The text says amdgpu-dkms (rock-dkms) fails to build or install, or dpkg could not configure it."""
    obs = r.obs
    if r.machine is not None or r.has("dkms-not-built", "host-without-kfd", "no-amd-gpu"):
        return
    if not _holds_lower(obs, "dkms", "rock ", "rock-", "base driver"):
        return  # prose about building ROCm's own userspace from source is not the kernel module
    shown = _dkms_told(obs)
    if shown is None:
        return
    dkms_not_built(
        r,
        "the text says the amdgpu DKMS module fails to build or install: for the kernel it failed on there is no "
        "ROCm amdgpu (the kernel's own amdgpu, or none, runs instead); a kernel update is the usual trigger",
        shown,
        "boot the previous kernel (the boot menu keeps it) until an amdgpu-dkms release supports the new one, "
        "or install that release and run sudo dkms autoinstall -k <kernel>; 'dkms status' and "
        "/var/lib/dkms/amdgpu/*/build/make.log show what failed",
    )


def _old_gpus_named(obs: Observations) -> list[tuple[str, int]]:
    """(name as the finding tells it, PCI device id) for the GPUs of the GCN 1-2 era the text names: by a retail
    name (Radeon R7 360, HD 7970) or by the chip name pci.ids gives them (Sun XT, Tahiti)."""
    lines = "\n".join(dict.fromkeys(line for cue in appformats.OLD_RADEON_CUES for line in lines_with(obs, cue)))
    found = [
        (token if token.startswith("FirePro") else f"Radeon {token}", device)
        for token, device in appformats.old_radeon_devices(lines.lower())
    ]
    lines = "\n".join(dict.fromkeys(line for cue in appformats.chip_cues() for line in lines_with(obs, cue)))
    return found + appformats.chip_devices(lines)


def rule_prose_old_radeon(r: Reasoning) -> None:
    """A GPU named only by its retail or chip name (Radeon R7 360, HD 7970, Sun XT) whose chip KFD has never
    supported."""
    obs = r.obs
    if r.machine is not None or amd_gpu_named(r) or r.has("asic-not-supported", "no-amd-gpu", "host-without-kfd"):
        return  # a GPU the text identifies otherwise (ids, agents, a target) is the other rules'
    from kfdguard.knowledge import identify

    for named, device in _old_gpus_named(obs):
        asic, _name = identify(device)
        if asic is None or asic.kfd_since is not None:
            continue
        r.findings.append(
            Finding(
                "asic-not-supported",
                E,
                f"the {named} is a {asic.family} chip ({asic.generation}), which KFD has never supported: no "
                "ROCm release, and no program built on ROCm (ollama, PyTorch, llama.cpp's HIP build), can compute on "
                "it; the program falls back to the CPU",
                "use a backend that does not need ROCm (Vulkan: llama.cpp's or ollama's Vulkan build; OpenCL "
                "through Mesa's rusticl), or a GPU ROCm supports",
                (
                    f"the text: {named}",
                    f"pci.ids: {named.removeprefix('Radeon ')} is device 1002:{device:04x} ({asic.family})",
                ),
            )
        )
        return


def rule_prose_node_group(r: Reasoning) -> None:
    """The text says /dev/kfd belongs to one group ("root:render") while the setup it describes uses the other."""
    obs = r.obs
    if r.machine is not None or r.has(
        "user-not-in-group", "device-permissions", "rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu"
    ):
        return
    if obs.kfd is not None and obs.kfd.group:
        return  # ls -l shows the node: rule_access reads it
    text = obs.text
    m = search_lines(appformats.NODE_GROUP_PROSE, obs, "/dev/k")  # kfd, and its "kdf" typo
    if m is None:
        return
    group = (m["owner"] or m["group"]).lower()
    other = "video" if group == "render" else "render"
    if obs.user is not None and group in obs.user.groups:
        return
    if any(g["group"].lower() == group for g in appformats.PROSE_IN_GROUP.finditer(text)):
        return  # the person says they are in it
    if other not in obs.lowered.replace(m.group(0).lower(), ""):
        return  # nothing says the user's setup is the other group's
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"the text says /dev/kfd belongs to group '{group}', while the setup it describes uses '{other}': a user "
            f"in '{other}' only cannot open it (EACCES, shown by ROCm as 'out of resources' or no GPU)",
            f"sudo usermod -aG {group} $USER (render and video where both exist), then log out and back in",
            (f"the text: {m.group(0)}",),
        )
    )


__all__ += [
    "rule_no_amd_gpu_listed",
    "rule_override_not_applied",
    "rule_prose_dkms",
    "rule_prose_node_group",
    "rule_prose_old_radeon",
    "rule_wsl_gpu_unlisted",
    "rule_wsl_runtime",
]


def rule_prose_atomics(r: Reasoning) -> None:
    """The text says the GPU's PCIe path lacks AtomicOps: a hypervisor that does not pass them, a Thunderbolt
    enclosure, a chipset slot. KFD skips such a GPU where it needs atomics ("PCI rejects atomics"), so
    ROCm sees only the CPU; the kernel's own line, where pasted, is read by the log rules instead."""
    obs = r.obs
    if r.machine is not None or r.has("pcie-atomics", "host-without-kfd"):
        return
    said = _atomics_told(r) if _holds_lower(obs, "atomic") else None
    refused = _atomic_op_refused(r) if said is None else None
    shown = said or refused
    if shown is None:
        return
    guest = appformats.PASSTHROUGH.search(obs.text)
    r.findings.append(
        Finding(
            "pcie-atomics",
            E,
            (
                "a PCIe port refused the GPU's AtomicOp request (AER's TLP header)"
                if refused
                else "the text says the GPU's PCIe path does not provide AtomicOps"
            )
            + (" (a GPU passed through to a virtual machine)" if guest else "")
            + (
                ": the path does not route the atomics the GPU's compute kernels use, so they hang or fail"
                if refused
                else ": KFD skips a GPU that needs them, so ROCm lists only the CPU"
            ),
            (
                "the hypervisor must expose AtomicOps to the guest (VMware does not; on QEMU/KVM put the GPU behind a "
                "pcie-root-port of a q35 machine), or run ROCm on the host"
                if guest
                else "put the card in a CPU-attached PCIe 3.0+ slot (Thunderbolt enclosures, chipset slots, risers and "
                "old platforms may not pass atomics); 'sudo lspci -vvv | grep -i atomic' shows each port's support"
            ),
            (f"the text: {shown.group(0)}",) + ((f"the text: {guest.group(0)}",) if guest else ()),
        )
    )
    # The no-GPU-node symptom is this; a VM's own adapter is not the machine's only GPU.
    r.findings[:] = [f for f in r.findings if f.code != "no-amd-gpu"]


def _atomics_told(r: Reasoning) -> re.Match[str] | None:
    """The first line that tells the PCIe path lacks atomics as a fact, not as a possibility (appformats.HEDGED in
    the sentence before it)."""
    for line in lines_with(r.obs, "atomic"):
        m = appformats.PROSE_ATOMICS.search(line)
        if m is None or _OTHER_ATOMICS.search(line[max(0, m.start() - 24) : m.end()]):
            continue  # OpenCL's SVM ("cross-device") atomics, an API feature, not the PCIe path's AtomicOps
        if not appformats.HEDGED.search(re.split(r"[.;!?](?:\s|$)", line[: m.start()])[-1]):
            return m
    return None


_OTHER_ATOMICS = re.compile(r"\b(?:cross-device|svm|fine-grain\w*|opencl)\b", re.I)


def _atomic_op_refused(r: Reasoning) -> re.Match[str] | None:
    """AER's TLP header of a request a port refused, where the request is an AtomicOp (appformats.AER_TLP_HEADER)."""
    for line in lines_with(r.obs, "tlp header"):
        m = appformats.AER_TLP_HEADER.search(line)
        if m and int(m["fmt_type"], 16) in appformats.ATOMIC_OP_FMT_TYPES:
            return m
    return None


def rule_udev_rule_fix(r: Reasoning) -> None:
    """A udev rule for the kfd node that the text says was what it took, or prose that says the rule is missing:
    without one (a self-built or upstream kernel, no ROCm package's rule) /dev/kfd keeps the kernel's root-only
    mode, so only root can use ROCm."""
    obs = r.obs
    if r.machine is not None or r.has(
        "device-permissions", "user-not-in-group", "rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu"
    ):
        return
    if not _holds_lower(obs, "udev", 'kfd"'):
        return  # neither a rule line (KERNEL=="kfd") nor words about udev: nothing to read
    rule = search_lines(appformats.KFD_UDEV_RULE, obs, "kfd")
    shown: tuple[str, ...] | None = None
    if rule is not None:
        fixed = search_lines(appformats.PROSE_FIXED, obs, *appformats.FIXED_CUES)
        if fixed is not None and not appformats.NEGATED.search(fixed.string):
            shown = (f"the text: {rule.group(0).strip()[:80]}", f"the text: {fixed.group(0)}")
    if shown is None:
        missing = search_lines(appformats.PROSE_NO_UDEV, obs, "udev")
        if missing is None:
            return
        shown = (f"the text: {missing.group(0)}",)
    r.findings.append(
        Finding(
            "device-permissions",
            E,
            "no udev rule gives /dev/kfd to a group: the kernel creates it root-only, so ROCm works for root alone "
            "(the text says the rule was what it took, or that it is missing)",
            'add /etc/udev/rules.d/70-kfd.rules with SUBSYSTEM=="kfd", KERNEL=="kfd", MODE="0660", GROUP="render" '
            '(GROUP="video" on systems without a render group), then sudo udevadm control --reload && sudo udevadm '
            "trigger --action=add /dev/kfd, and be a member of that group",
            shown,
        )
    )


def rule_tool_groups_missing(r: Reasoning) -> None:
    """amd-smi says its process lacks render/video (it compares os.getgroups() with the groups it needs). Beside
    a denied open that is the cause; alone it is a fact about the user, since root or a container that grants the
    nodes otherwise still works."""
    obs = r.obs
    told = obs.saw("groups-missing")
    if r.machine is not None or not told or r.has("user-not-in-group", "rootless-gid-unmapped", "host-without-kfd"):
        return
    groups = told[0].value("groups") or "render, video"
    denied = bool(obs.saw("kfd-eacces"))
    r.findings.append(
        Finding(
            "user-not-in-group",
            E if denied else W,
            f"the user is not in {groups}: amd-smi checks its own process's groups and says so"
            + ("" if denied else " (the GPUs may still work for root or in a container that grants the nodes)"),
            "sudo usermod -aG render,video $USER (the groups that exist), then log out and back in",
            (told[0].text,),
        )
    )


# Where ROCm's own rocBLAS keeps its Tensile files (/opt/rocm-6.2.0/lib/rocblas/library, older
# /opt/rocm/rocblas/library, Debian's /usr/lib/x86_64-linux-gnu/rocblas/<version>/library, Fedora's /usr/lib64/rocblas);
# any other absolute path is a program's own copy (ollama's /usr/lib/ollama/rocblas, a backend's lib directory).
_SYSTEM_ROCBLAS = re.compile(r"^(?:/opt/rocm[^/]*(?:/lib)?|/usr(?:/local)?/lib(?:64|/x86_64-linux-gnu)?)/rocblas/")


def _bundled_rocblas(path: str) -> bool:
    """Whether the path of a Tensile library is a program's own copy of rocBLAS, not the system ROCm's."""
    # A PyTorch wheel's copy is judged by the wheels' own eras (knowledge/torchwheels.py), not here.
    return path.startswith("/") and _SYSTEM_ROCBLAS.match(path) is None and not torchwheels.wheel_path(path)


def _bundled_copy_lacks(seen: str, path: str, gfx: str, where: str) -> Finding:
    return Finding(
        "userspace-target-unsupported",
        W,
        f"the program's own copy of rocBLAS ({path.rsplit('/', 1)[0]}) has no Tensile library for {gfx}, though "
        "ROCm's rocBLAS builds one: the program was packaged with library files for other targets only; the kernel "
        "and permissions are not the cause",
        f"use a build of the program whose bundled libraries include {gfx}, or point it at the system ROCm's rocBLAS "
        "(ROCBLAS_TENSILE_LIBPATH=/opt/rocm/lib/rocblas/library where that ROCm carries it)",
        (seen, f"{where}: {gfx}"),
    )


def rule_tensile_unreadable(r: Reasoning) -> None:
    """rocBLAS's older 'Cannot read .../TensileLibrary.dat: <error>' (no target named): for a GPU whose target ROCm
    builds no library for, the cause is the software build; for one it does build, the install is what to check."""
    obs = r.obs
    seen = obs.saw("tensile-unreadable")
    if r.machine is not None or not seen or r.has("userspace-target-unsupported", "no-amd-gpu", "host-without-kfd"):
        return
    override = obs.value("gfx-override")
    claimed = appformats.override_target(override) if override else None
    targets = [(g, w) for g, w in _real_targets(r, claimed) if g]
    unsupported = [(g, w) for g, w in targets if not any(a.rocm_prebuilt for a in _asics_of(g))]
    path = seen[0].value("path") or ""
    # A PyTorch wheel's own rocBLAS copy carries files for the wheel's targets only (knowledge/torchwheels.py).
    wheel = next(((g, w, found) for g, w in targets if (found := wheel_without_code(r, g, path))), None)
    if wheel is not None and not unsupported:
        lacking, shown, (date, line, era) = wheel
        r.findings.append(
            Finding(
                "userspace-target-unsupported",
                E,
                f"rocBLAS found no Tensile library for {lacking} in PyTorch's wheel: the wheel bundles its own rocBLAS "
                f"with library files only for the targets it was built for, and no wheel up to {era.until} carries "
                f"{lacking} (the text is dated {date}), though ROCm's own rocBLAS builds it; the kernel and "
                "permissions are not the cause",
                f"use a PyTorch build whose targets include {lacking} (a newer +rocm wheel, or the ROCm project's own "
                "PyTorch builds), or point the wheel at a system rocBLAS that carries it; the unsupported "
                "workaround is HSA_OVERRIDE_GFX_VERSION for a target of the same generation the wheel carries",
                (seen[0].text, f"{shown}: {lacking}", f"the text: {line}", f"{era.repository}: {', '.join(era.paths)}"),
            )
        )
        return
    if targets and not unsupported and _bundled_rocblas(path):
        r.findings.append(_bundled_copy_lacks(seen[0].text, path, *targets[0]))
        return
    if targets and not unsupported:
        r.unknown.append(
            f"why rocBLAS cannot read its Tensile library although ROCm builds one for {targets[0][0]}: paste "
            "'ls $(dirname PATH)' for the path it names and 'ldd' of the program (a library from another rocBLAS)"
        )
        return
    gfx, where = unsupported[0] if unsupported else (None, None)
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            E if gfx else W,
            "rocBLAS found no Tensile library it could read"
            + (f", and ROCm's prebuilt libraries carry none for {gfx}" if gfx else " (the GPU is not named)")
            + ": since ROCm 5.2 TensileLibrary.dat is only the fallback read when the GPU's own library is missing",
            f"use a rocBLAS built for {gfx or 'the GPU'} (or a program that bundles one); 'ls' of the library "
            "directory shows the targets it carries; 'rocminfo | grep gfx' names the GPU's",
            (seen[0].text,) + ((f"{where}: {gfx}",) if gfx and where else ()),
        )
    )
