"""Rules over formats and wordings that the fourth round of unseen reports (corpus files 132-153) showed the
earlier rule modules did not read: each written from the program that prints the text or from the cause told
in words, not from a report's wording.

- ``dkms status`` naming the amdgpu module only as *added*, *built* or *broken* (dell/dkms ``do_status``:
  ``module/version: added`` since dkms 3, ``module, version: added`` before; ``module/version, kernel, arch:
  built``): DKMS never installed it for any kernel, or not for the running one.
- HSA_OVERRIDE_GFX_VERSION set to something libhsakmt refuses (topology.c: ``sscanf(envvar, "%u.%u.%u%c",
  ...) != 3`` or a part out of range prints ``HSA_OVERRIDE_GFX_VERSION %s is invalid`` and topology fails, so
  no GPU is enumerated at all).
- The module loader's refusals quoted anywhere in a line (kernel/module: ``%s: disagrees about version of
  symbol %s``, ``%s: version magic '%s' should be '%s'``; kmod's modprobe ``could not insert '%s': Exec format
  error``, insmod's and module-init-tools' ``Invalid module format`` for ENOEXEC): a module built for another
  kernel.
- Causes told in prose: Secure Boot refusing the module, the out-of-tree driver not supporting or not building
  for a kernel, /dev/kfd absent inside a container.

Every rule here reads a paste's observations only (``rules.text_only`` skips them on a machine).
"""

from __future__ import annotations

import re

from kfdguard.assess.claims import contains, line_number, lines_with, search_lines
from kfdguard.assess.reasoning import Reasoning
from kfdguard.evidence.model import Observations
from kfdguard.knowledge import appformats
from kfdguard.knowledge.asics import ASICS
from kfdguard.verdict import Finding, Severity

E = Severity.ERROR
W = Severity.WARNING

# --- dkms status --------------------------------------------------------------------------------------------


def rule_dkms_status_unbuilt(r: Reasoning) -> None:
    """``dkms status`` shows the amdgpu module added and built for no kernel at all (dkms prints "added" only
    while no build exists): no ROCm amdgpu is loadable on any kernel, the running one included.

    "built" is not read as a failure: dkms 2 printed it beside a working module (a module that differs from the
    installed copy); a build or an installed module in the same output leaves the comparison of kernels to
    rule_dkms. One shown only later, after other lines, is the thread's next step: the "added" first is the
    failure, the build after it the fix ("dkms status" asked for, then run again after "dkms build ... -k").
    """
    obs = r.obs
    if r.has("dkms-not-built", "host-without-kfd", "no-amd-gpu"):
        return
    states = obs.saw("dkms-status-unbuilt")
    added = [m for m in states if m.value("state") != "built"]
    built = [m.source.line for m in [*states, *obs.saw("dkms-status")] if m not in added]
    if not added or (built and not _shown_later(obs.lines, added[0].source.line, min(built))):
        return  # a build shown with (or before) the "added": the comparison of kernels is rule_dkms's
    if any(t.has_node for t in r.amd):
        return  # KFD added the GPU: the kernel's own amdgpu runs it, and the unbuilt module is not needed
    release = obs.release
    dkms_not_built(
        r,
        "dkms status shows the amdgpu DKMS module added but built for no kernel: no ROCm amdgpu exists for the "
        "running kernel" + (f" {release}" if release else "") + " (the build failed or never ran)",
        f"{states[0].source}: {states[0].text}",
    )


def _shown_later(lines: list[str], first: int, then: int) -> bool:
    """Whether line ``then`` comes after line ``first`` (1-based) with a line between that is not a dkms status
    line ("name, version[, kernel, arch]: state"): another output, not the same one."""
    if then <= first:
        return False
    return any(not DKMS_STATUS_LINE.match(line) for line in lines[first : then - 1])


DKMS_STATUS_LINE = re.compile(r"^\s*[`>]*\s*[\w.+-]+[,/] ?[\w.+~-]+(?:, [\w.+~-]+){0,2}: \w+")


DKMS_REMEDY = (
    "sudo dkms autoinstall -k $(uname -r) and read /var/lib/dkms/amdgpu/*/build/make.log when it fails; "
    "if this amdgpu-dkms release does not support the kernel, boot a kernel it supports or install a "
    "release that does (or drop amdgpu-dkms and use the kernel's own amdgpu where it has KFD)"
)


def dkms_not_built(r: Reasoning, message: str, evidence: str, remedy: str = DKMS_REMEDY) -> None:
    """dkms-not-built, and what it makes moot: the in-tree amdgpu's words about KFD support describe the
    driver that runs instead, not the GPU (app_rules.rule_prose_dkms uses it too)."""
    r.findings.append(Finding("dkms-not-built", E, message, remedy, (evidence,)))
    r.findings[:] = [f for f in r.findings if f.code not in ("asic-not-supported", "kernel-too-old")]
    for t in r.amd:
        t.block("amdgpu-dkms not built for this kernel", "dkms-not-built")


# --- the out-of-tree driver told not to support or build for a kernel ---------------------------------------

# "Building the ROCK kernel module is not yet supported on kernels above 4.15", "build ROCk against a 5.3 kernel.
# This is not supported yet", "the kernel module currently does not build with kernel 4.4", "rock-dkms ... does
# not support kernel newer than 5.4", "failed building during the dkms step", "DKMS scripts ... do not properly
# build or install".
_DRIVER = (
    r"(?:rock|rocm|amdgpu)-dkms|\brock\b|\brock kernel module"
    r"|\b(?:the\s+)?(?:dkms|kernel|rock|rocm)(?:\s+kernel)?\s+(?:module|driver)"
)
# One sentence: no newline, and no full stop except inside a version number (6.17.0-6-generic).
_CLAUSE = r"(?:[^.\n]|\.(?=\d))"
PROSE_DKMS_KERNEL = re.compile(
    rf"\b(?:build\w*|compil\w*)\s+(?:the\s+)?(?:{_DRIVER})\b[^\n]{{0,60}}?\bnot\s+(?:yet\s+|currently\s+)?supported\b"
    rf"|(?:{_DRIVER})\b\s+(?:currently\s+|still\s+)?(?:does\s?n[o']?t|do not|won'?t|will not|cannot|can'?t)\s+"
    r"(?:build|compile)\s+(?:with|on|for|against|under)\b"
    rf"|(?:{_DRIVER})\b[`'\"]?[^.\n]{{0,30}}?\b(?:does\s?n[o']?t|do not|won'?t|will not)\s+support\s+(?:the\s+)?"
    r"(?:linux\s+)?kernels?\b"
    # "The ROCm 2.0 DKMS driver is not supported on kernel versions above 4.15", "rocm-dkms install says kernel
    # 4.18 not supported": a DKMS subject, then "not supported" and "kernel" in the same sentence.
    rf"|(?:{_DRIVER})\b{_CLAUSE}{{0,40}}?\bnot\s+(?:yet\s+)?supported\b{_CLAUSE}{{0,20}}?\bkernel"
    rf"|\bdkms\b{_CLAUSE}{{0,40}}?\bkernel\b{_CLAUSE}{{0,40}}?\bnot\s+supported\b"
    # "the DKMS driver, it's currently restricted to kernels up to 5.0", "rock-dkms only builds for kernels below 5.4"
    rf"|(?:{_DRIVER})\b{_CLAUSE}{{0,40}}?\b(?:restricted|limited|only\s+(?:works|builds|installs))\s+(?:to|on|for)\s+"
    r"(?:linux\s+)?kernels?\s+(?:up\s+to|below|before|older\s+than|<=?)"
    r"|\bfail(?:s|ed|ing)?\s+(?:building|to build|compiling|to compile)\b[^.\n]{0,40}?\bdkms\b"
    r"|\bdkms\b(?:\s+\w+){0,3}?\s+(?:do(?:es)? not|don'?t|doesn'?t|did not|didn'?t)\s+(?:\w+\s+)?"
    r"(?:build|install|compile)\b",
    re.I,
)


# DKMS named first and failing after it: "AMDGPU/ROCm DKMS fails on kernel 6.16", "dkms failed for running
# kernel", "the DKMS build fails with 6.13". It names no module, so it is read only in a text about amdgpu.
PROSE_DKMS_FAILS = re.compile(
    r"\bdkms\b(?:\s+(?:build|builds|module|modules|package|install|installation))?\s+(?:fails?|failed|failing)\s+"
    r"(?:on|for|with|against|under|to\s+(?:build|compile|install))\b",
    re.I,
)


def rule_prose_dkms_kernel(r: Reasoning) -> None:
    """The text says the out-of-tree amdgpu (rock-dkms, amdgpu-dkms, "the ROCK kernel module") does not support
    or does not build for a kernel, or that DKMS did not build or install it."""
    obs = r.obs
    if r.has("dkms-not-built", "host-without-kfd", "no-amd-gpu"):
        return
    told = search_lines(PROSE_DKMS_KERNEL, obs, "dkms", "rock", "kernel module")
    if told is None and contains(obs, "amdgpu", lower=True):
        told = search_lines(PROSE_DKMS_FAILS, obs, "dkms")
    shown = f"the text: {told.group(0)}" if told is not None else _downgrade_told(r)
    if shown is None:
        return
    dkms_not_built(
        r,
        "the text says the out-of-tree amdgpu (DKMS) module does not build or is not supported for the kernel in "
        "question: that kernel has no ROCm amdgpu, and its own amdgpu (with an older KFD, or none) runs instead",
        shown,
    )


# A kernel downgrade: "downgraded to 4.15", "went back to kernel 6.5", "rolled back to linux 6.8.0-45".
KERNEL_DOWNGRADE = re.compile(
    r"\b(?:downgrad\w*|went back|going back|roll\w* back)\s+(?:the\s+kernel\s+)?to\s+(?:(?:linux|kernel)\s+)?v?"
    r"(?P<release>[3-7]\.\d{1,2}(?:\.\d+)?(?:-[\w.]+)?)\b(?!\s*(?:rocm|of rocm))",
    re.I,
)


def _downgrade_told(r: Reasoning) -> str | None:
    """A kernel downgrade told as the fix, in a text about ROCm's DKMS driver (ROCm#753: "the supported kernels are
    4.13 - 4.15, so I downgraded to 4.15. Now it works"): the newer kernel had no ROCm amdgpu built for it."""
    if not contains(r.obs, "dkms", lower=True):
        return None
    told = fix_told(r, KERNEL_DOWNGRADE, ("downgrad", "went back", "going back", "back to"))
    if told is not None and re.search(r"kernel|linux", told[1], re.I):
        return f"the text: {told[1]} ({told[2]})"
    # "downgraded to 5.7" alone may be a ROCm release: the line must say it is the kernel, or the text must speak of
    # downgrading the kernel ("I recommend downgrading the kernel" ... "Yes, I had downgraded and that worked").
    if search_lines(KERNEL_DOWNGRADE_WORDS, r.obs, "downgrad") is None:
        return None
    for line in lines_with(r.obs, "downgrad"):
        if success_told(line):
            return f"the text: {line.strip()[:160]}"
    return None


KERNEL_DOWNGRADE_WORDS = re.compile(r"\bdowngrad\w*\s+(?:the\s+|my\s+|your\s+|to\s+an?\s+older\s+)?kernel\b", re.I)


# --- HSA_OVERRIDE_GFX_VERSION that libhsakmt refuses --------------------------------------------------------

# Not a value libhsakmt sees: a reference ($VAR, ${...}), a placeholder (<...>, x.y.z); and ollama's map, which
# prints an unset variable as "KEY:" followed by its next key.
_VALID = re.compile(r"(?P<major>\d+)\.(?P<minor>\d+)\.(?P<step>\d+)")
_MAP_KEY = re.compile(r"[A-Z][A-Z0-9_]*:")
_NOT_A_VALUE = re.compile(r"^(?:[$<{%]|x\.y\.z$|[a-z]\.[a-z]\.[a-z]$)", re.I)


def override_refused(value: str) -> bool:
    """Whether libhsakmt refuses this HSA_OVERRIDE_GFX_VERSION: not exactly major.minor.stepping in decimal
    (sscanf "%u.%u.%u%c" must fill three), or major > 63, minor or stepping > 255."""
    m = _VALID.fullmatch(value)
    if m is None:
        return True
    return int(m["major"]) > 63 or int(m["minor"]) > 255 or int(m["step"]) > 255


# An empty value as written: a shell or compose reference whose default is empty ("${NAME:-}", "${NAME-}": nothing
# when NAME is unset), or an assignment with nothing after "=" on its line (env files, compose lists, `env`).
_EMPTY_DEFAULT = re.compile(r"\$\{\w+:?-\}")
_BARE_EMPTY = re.compile(r"(?<![\w$])HSA_OVERRIDE_GFX_VERSION=[\"']?[\"']?\s*$")


def _empty_override(r: Reasoning) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION defined but empty where the text sets it. libhsakmt tests only that getenv returns a
    value (topology.c: if (envvar)), so "" reaches sscanf("%u.%u.%u%c"), which fills nothing: refused."""
    for m in r.obs.saw("override-setting"):
        quoted = m.value("quote") is not None
        raw = (m.value("quoted") if quoted else m.value("value")) or ""
        if (quoted and raw == "") or (not quoted and _EMPTY_DEFAULT.fullmatch(raw)):
            return f"{m.source}: {m.text}"
    for line in lines_with(r.obs, "hsa_override_gfx_version="):
        if _BARE_EMPTY.search(line):
            return f"the text: {line.strip()}"
    return None


def _refused_override(r: Reasoning) -> tuple[str, str] | None:
    obs = r.obs
    said = obs.saw("override-invalid")
    if said:
        return said[0].value("value") or "?", f"libhsakmt: {said[0].text}"
    empty = _empty_override(r)
    if empty is not None:
        return "", empty
    for m in obs.saw("override-setting"):
        quoted = m.value("quote") is not None
        raw = (m.value("quoted") if quoted else m.value("value")) or ""
        if not quoted and _MAP_KEY.match(raw):
            continue  # ollama's map: the variable is unset and the map goes on to its next key
        value = raw.strip().rstrip(".:")  # the end of a sentence, not of the value
        if value and not _NOT_A_VALUE.search(value) and override_refused(value):
            return value, f"{m.source}: {m.text}"
    return None


def rule_override_invalid(r: Reasoning) -> None:
    """HSA_OVERRIDE_GFX_VERSION set to a value libhsakmt refuses (gfx1102, 11, a script's error text): the
    topology fails to load and the runtime sees no GPU at all."""
    if r.has("env-override-wrong") or r.obs.foreign_host is not None:
        return  # on Windows and WSL the variable is not read by libhsakmt (other rules speak of it there)
    refused = _refused_override(r)
    if refused is None:
        return
    value, evidence = refused
    if value == "":
        r.findings.append(
            Finding(
                "env-override-wrong",
                E,
                "HSA_OVERRIDE_GFX_VERSION is defined but empty (an empty default such as ${HSA_OVERRIDE_GFX_VERSION:-} "
                'defines it as "" when it is unset): libhsakmt reads any defined value, refuses "" as a version, '
                "the topology fails to load and the runtime sees no GPU ('no ROCm-capable device')",
                "leave the variable out entirely where no override is wanted (drop the line, or use an env file that "
                "does not list it); set it only to a dotted version the software carries, such as 10.3.0",
                (evidence,),
            )
        )
        return
    r.findings.append(
        Finding(
            "env-override-wrong",
            E,
            f"HSA_OVERRIDE_GFX_VERSION is set to {value!r}, which is not a version libhsakmt accepts "
            "(major.minor.stepping in decimal, such as 10.3.0 for gfx1030): it refuses it ('HSA_OVERRIDE_GFX_VERSION "
            "... is invalid'), the topology fails to load and the runtime sees no GPU",
            "set it to the dotted decimal form of a target the software carries (gfx1030 is 10.3.0, gfx1100 is "
            "11.0.0, gfx90a is 9.0.10), or unset it where the GPU's own target is supported; where a script "
            "computes it, fix or bypass the detection",
            (evidence,),
        )
    )


# --- the module loader refusing a module built for another kernel ------------------------------------------

# Modules of the amdgpu DKMS package and of the in-tree driver.
AMD_MODULES = re.compile(
    r"^(?:amdgpu|amdkfd|amdkcl|amdttm|amdchash|amd_sched|amdxcp|amddrm_\w+|amd-sched)(?:\.ko\S*)?$"
)


def _refused_module(r: Reasoning) -> str | None:
    """The module loader's refusal (knowledge/appformats.py, kind module-refused) of an amdgpu-family module, or
    of a module_layout mismatch in a text about an amdgpu.ko someone built."""
    for m in r.obs.saw("module-refused"):
        name = (m.value("module") or "").rsplit("/", 1)[-1]
        if AMD_MODULES.match(name) or (
            m.value("symbol") == "module_layout" and contains(r.obs, "amdgpu.ko", lower=True)
        ):
            return f"{m.source}: {m.text}"
    return None


def rule_module_built_elsewhere(r: Reasoning) -> None:
    """The module loader refused an amdgpu module built against another kernel's headers (symbol versions,
    vermagic or ENOEXEC), quoted where the kernel-log reader did not see it."""
    if r.has("module-symbol-mismatch", "module-dependency-missing", "no-amd-gpu"):
        return
    refused = _refused_module(r)
    if refused is None:
        return
    r.findings.append(
        Finding(
            "module-symbol-mismatch",
            E,
            "the kernel refused an amdgpu module built for another kernel (its symbol versions or version magic "
            "do not match the running kernel): that module cannot load",
            "build the module against the running kernel's headers: install the packaged amdgpu-dkms, which DKMS "
            "rebuilds for each kernel (sudo dkms autoinstall -k $(uname -r)), or remove the foreign module and use "
            "the kernel's own amdgpu; then regenerate the initramfs and reboot",
            (refused,),
        )
    )
    for t in r.amd:
        if not t.has_node:
            t.block("amdgpu cannot load", "module-symbol-mismatch")


# --- Secure Boot told in words ------------------------------------------------------------------------------

PROSE_SECURE_BOOT = re.compile(
    r"\bsecure\s?boot\b[^.\n]{0,80}?\b(?:block\w*|prevent\w*|refus\w*|reject\w*|stop\w*|den(?:y|ies|ied)|"
    r"disallow\w*|won'?t let)\b[^.\n]{0,60}?\b(?:load\w*|modules?|drivers?|amdgpu|dkms)\b"
    r"|\bsecure\s?boot\b[^.\n]{0,40}?\bmust be disabled\b[^.\n]{0,60}?\b(?:load|module|driver|amdgpu)"
    # Disabling it made things work, in that sentence or the next ("I disabled secure boot. Everything works"),
    # and not "disabled it, still not working".
    r"|\b(?:disabl\w*|turn\w* off|switch\w* off)\s+(?:the\s+)?secure\s?boot\b[^\n]{0,80}?\b(?<!n't )(?<!not )"
    r"(?:fix\w*|work\w*|solv\w*|resolv\w*)\b"
    # The module told unsigned beside Secure Boot ("the driver is not signed so it is necessary to disable Secure
    # Boot"), or Secure Boot told to be disabled as a need.
    r"|\b(?:driver|module|amdgpu|dkms)\b[^.\n]{0,40}?\b(?:not\s+signed|unsigned)\b[^\n]{0,80}?\bsecure\s?boot\b"
    r"|\bsecure\s?boot\b[^.\n]{0,80}?\bunsigned\s+(?:\w+\s+)?(?:drivers?|modules?)\b"
    r"|\b(?:necessary|need(?:ed|s)?|had|have|has|must)\s+to\s+(?:be\s+)?disabl\w*\s+(?:the\s+)?secure\s?boot\b"
    # the cause named: "Problem was with secure boot option in UEFI BIOS"
    r"|\b(?:problem|issue|culprit|cause)\s+(?:was|is)\s+(?:with\s+|in\s+)?(?:the\s+)?secure\s?boot\b",
    re.I,
)


def rule_prose_secure_boot(r: Reasoning) -> None:
    """The text says Secure Boot kept the amdgpu (DKMS) module from loading: the kernel's lockdown refuses a
    module not signed with an enrolled key, as 'Key was rejected by service' says when it is shown."""
    obs = r.obs
    if r.has("module-signature-rejected", "no-amd-gpu", "host-without-kfd"):
        return
    told = search_lines(PROSE_SECURE_BOOT, obs, "secure")
    if told is None or not any(contains(obs, w, lower=True) for w in ("amdgpu", "dkms", "rocm", "kfd")):
        return  # not told, or Secure Boot and some other vendor's module
    r.findings.append(
        Finding(
            "module-signature-rejected",
            E,
            "the text says Secure Boot keeps the amdgpu module from loading: with Secure Boot on, the kernel loads "
            "only modules signed with an enrolled key, and an amdgpu-dkms build is signed with DKMS's own key",
            "enroll the DKMS signing key and confirm it in the MOK manager at the next boot: sudo mokutil --import "
            "/var/lib/dkms/mok.pub (or disable Secure Boot, or use the distribution's signed in-tree amdgpu)",
            (f"the text: {told.group(0)}",),
        )
    )
    for t in r.amd:
        t.block("module rejected (Secure Boot)", "module-signature-rejected")


# --- a GPU hang told in words ------------------------------------------------------------------------------

# "leaving the GPU in a hung state", "the GPU becomes unresponsive", "GPU hangs", "requires rocm-smi --gpureset to
# recover": the GPU itself stopped, not a program. A system, a desktop or a program that froze says nothing of it.
PROSE_GPU_HUNG = re.compile(
    # "each GPU hangs for about 10 seconds and boot continues": a stall that passes is not a hang
    r"\bgpu\b(?:[^.\n,;]){0,40}?\b(?:hung|hangs|hanged|unresponsive|stuck|locks?\s+up|locked\s+up)\b"
    r"(?!\s+for\s+(?:about\s+|~\s*|a\s+few\s+)?\d)"
    r"|\bgpu\s+hang\b|\bhung\s+gpu\b|\brocm-smi\b[^\n]{0,20}?--gpureset\b",
    re.I,
)


def rule_prose_gpu_hung(r: Reasoning) -> None:
    """The text says the GPU hung (not a program or the desktop) where no kernel line shows the hang itself."""
    obs = r.obs
    if r.machine is not None or r.has("gpu-hang", "no-amd-gpu", "host-without-kfd"):
        return
    cues = ("hung", "hang", "unresponsive", "stuck", "lock", "gpureset")
    for line in dict.fromkeys(line for cue in cues for line in lines_with(obs, cue)):
        m = PROSE_GPU_HUNG.search(line)
        if m is None or appformats.NEGATED.search(line) or appformats.yes_no_question(line, m.start()):
            continue
        r.findings.append(
            Finding(
                "gpu-hang",
                W,
                "the text says the GPU itself hung (stopped answering until a reset or a reboot): a GPU hang, whose "
                "kernel lines (ring timeouts, HWS or MES hangs, a GPU reset) the text does not show",
                "paste 'sudo dmesg | grep -Ei \"amdgpu|kfd\"' (or journalctl -k -b -1) from the time it hung: the ring "
                "timeout or scheduler hang names the block that stopped; then try the kernel and ROCm release of the "
                "fix, or amdgpu.cwsr_enable=0 for compute queues that hang on preemption",
                (f"the text: {line.strip()[:160]}",),
            )
        )
        return


def signature_rejected_beside_kfd(rejected: Finding) -> Finding:
    """A module refused for its signature where KFD runs all the same (rule_coherent): another amdgpu, the
    distribution's signed one or an earlier boot's, is the one KFD ran with; the rejected module never loads."""
    return Finding(
        "module-signature-rejected",
        W,
        "the kernel refused an unsigned or untrusted module (Secure Boot / lockdown), usually an amdgpu-dkms build, "
        "while KFD ran with another amdgpu (the distribution's signed one, or a boot before the refusal): the "
        "module that was installed to be used does not load",
        "enroll the DKMS signing key and reboot to confirm it in the MOK manager: sudo mokutil --import "
        "/var/lib/dkms/mok.pub (or disable Secure Boot); or keep the distribution's amdgpu and remove amdgpu-dkms",
        rejected.evidence,
        gpu=rejected.gpu,
    )


# --- /dev/kfd absent inside a container, told in words -----------------------------------------------------

KFD_NOT_PRESENT = re.compile(
    # "/dev/kfd and /dev/dri are not visible": the two nodes as one subject
    # ("the `kdf` device is not currently getting passed on the container": the letters swapped, as people type it)
    r"(?:/dev/)?(?:kfd\b|kdf\b(?=[`'\"]?\s+(?:device|node)))[`'\"]?(?:\s+(?:device|node|file)s?)?"
    r"(?:\s+(?:and|&)\s+[`'\"]?/dev/dri\S*)?"
    r"\s+(?:is\s+|are\s+|was\s+|were\s+|will\s+|would\s+|does\s+|do\s+|did\s+)?"
    r"(?:not|n't)\s+(?:be\s+|currently\s+|yet\s+)?(?:getting\s+|being\s+)?"
    r"(?:present|there|available|visible|exist\w*|created|passed|mounted|bound)\b"
    r"|\bno /dev/kfd\b|/dev/kfd\b[`'\"]?\s+(?:is\s+)?(?:missing|absent)\b"
    # "I think /dev/kfd is required to make private-dev work": what the sandbox or container lacks
    r"|/dev/kfd\b[`'\"]?\s+(?:is\s+|was\s+)?(?:required|needed|necessary)\b"
    # "I forgot to pass --device /dev/kfd to docker run": the node left out, told as the mistake
    r"|\bforg[oe]t\w*\s+(?:to\s+)?(?:pass|add|include|map|mount|expose|bind|forward)\w*\b[^.\n]{0,30}?/dev/kfd\b"
    # "the only thing missing is /dev/kfd", "missing the /dev/kfd device"
    r"|\bmissing\b[^.\n]{0,40}?/dev/kfd\b"
    # "/dev/kfd ... never passed into the container", "the host had /dev/kfd, but neither reached the container"
    r"|/dev/kfd\b[^.\n]{0,60}?\b(?:not|never|neither|n't)\b[^.\n]{0,20}?\b(?:reach\w*|pass\w*|forward\w*|expos\w*|"
    r"mapp\w*|mount\w*|bound|bind\w*|added)\b[^.\n]{0,12}?\b(?:(?:in|into|to|inside)\s+)?(?:the\s+|a\s+|my\s+)?"
    r"(?:containers?|pods?|sandbox)\b"
    # "kfd devices will work after you upgrade to 25.04": the platform's release at hand does not hand /dev/kfd over
    r"|(?:/dev/)?kfd(?:\s+(?:devices?|nodes?|passthrough))?\s+(?:will|would|should)\s+(?:only\s+)?work\s+"
    r"(?:after|once|from|when|with)\s+(?:you\s+)?(?:upgrad\w*|updat\w*|mov\w*)\b"
    r"(?![^.\n]{0,24}?\b(?:kernel|linux|driver|firmware|rocm|amdgpu)\b)[^.\n]{0,20}?\d",  # those are other causes
    re.I,
)
# The line that says the container lacks /dev/kfd also says the host has it ("not available in the container,
# while being present on the host"): a listing of the node elsewhere in the text is the host's.
HOST_WORD = re.compile(r"\b(?:on|in|from|of) the host\b|\bhost(?:'s)? (?:has|shows|side)\b", re.I)
CONTAINER_WORD = re.compile(
    r"\b(?:containers?|docker|podman|singularity|apptainer|lxc|lxd|toolbox|distrobox|kubernetes|k8s|pods?)\b"
    # sandboxes hand a program a /dev of their own too (firejail's private-dev, bubblewrap's --dev, Flatpak)
    r"|\b(?:sandbox\w*|firejail|bubblewrap|bwrap|bubblejail|flatpak|private-dev)\b"
    r"|--contain\b",
    re.I,
)


# The words one of KFD_NOT_PRESENT's alternatives holds: a line without any of them cannot say kfd is absent.
_ABSENT_CUES = ("not", "n't", "no /dev", "missing", "absent", "never", "neither", "work", "requir", "need", "forg")


def _kfd_told_absent(r: Reasoning) -> re.Match[str] | None:
    # A kernel log names kfd on many lines; only one with a negation or "missing" can say it is absent.
    for line in dict.fromkeys(lines_with(r.obs, "kfd") + lines_with(r.obs, "kdf")):
        lowered = line.lower()
        if any(w in lowered for w in _ABSENT_CUES):
            m = KFD_NOT_PRESENT.search(line)
            if m and not _EXAMPLES.search(line):
                return m
    return None


# A list of examples ("(CUDA-built torch on AMD host, missing /dev/kfd for ROCm, MPS on non-Apple, etc.)"): what
# could go wrong, not what did.
_EXAMPLES = re.compile(r"\betc\b|\be\.g\.|\bsuch as\b", re.I)


def kfd_told_absent_in_container(r: Reasoning) -> re.Match[str] | None:
    """Prose that says /dev/kfd is absent from (or never reached) a container, or was left out where the DRM nodes
    were handed over."""
    told = _kfd_told_absent(r)
    if told is not None and (CONTAINER_WORD.search(told.string) or r.obs.first("container")):
        return told
    # A platform's later release told to bring the kfd devices is an answer about its containers: the question
    # (another line) says which container.
    if told is not None and " work" in told.group(0).lower() and contains(r.obs, "container"):
        return told
    return search_lines(appformats.DRI_BUT_NOT_KFD, r.obs, appformats.DRI_CUE)


def _host_node(obs: Observations) -> tuple[str, ...]:
    node = obs.kfd
    return (f"{node.source}: the host's /dev/kfd is there ({node.mode})",) if node is not None else ()


def rule_prose_container_no_kfd(r: Reasoning) -> None:
    """The text says /dev/kfd is not present inside a container: the runtime did not pass it in (--device
    /dev/kfd, a bind under --contain), while the host can have it."""
    obs = r.obs
    if r.has("device-node-missing", "host-without-kfd", "kfd-not-built", "no-amd-gpu"):
        return
    told = kfd_told_absent_in_container(r)
    if told is None:
        return
    host_listing = obs.kfd is not None and obs.kfd.mode is not None
    if host_listing and not HOST_WORD.search(told.string):
        return  # the node is shown, and nothing says the listing is another machine's: it is there
    r.findings.append(
        Finding(
            "device-node-missing",
            E,
            "the text says /dev/kfd is not present inside the container: the container runtime did not pass the "
            "host's KFD node in, so ROCm there has no device to open",
            "pass it in: docker/podman run --device=/dev/kfd --device=/dev/dri; Singularity/Apptainer --rocm with "
            "--bind /dev/kfd where /dev is minimal (--contain, --containall); in Kubernetes, the AMD device plugin; "
            "check on the host that /dev/kfd exists first",
            (f"the text: {told.group(0)}", *(_host_node(obs) if host_listing else ())),
        )
    )


# The entry's own line telling that adding it was the fix: "adding --device=/dev/kfd ... fixed it", not a mere "works"
# ("I pass --device /dev/kfd and it works on the host" says it was there).
_ADDED_FIXED_IT = re.compile(
    r"\b(?:add(?:ed|ing)?|pass(?:ed|ing)?|includ(?:ed|ing))\b(?:(?!\b(?:not|never|already)\b|n't)[^\n]){0,80}?/dev/kfd\b"
    r"[^\n]{0,80}?\b(?:fixe[sd] (?:it|the (?:problem|issue))|solved it|resolved it|did the trick|made it work)\b",
    re.I,
)


def _kfd_entry_told(r: Reasoning) -> str | None:
    """The container definition the text shows without /dev/kfd: its entry commented out, or the entry shown as
    what, once added, made the program work (the lines just before it say so). Returns the line that shows it."""
    obs = r.obs
    lines = obs.lines
    for index, line in enumerate(lines):
        if "/dev/kfd" not in line:
            continue
        if appformats.KFD_ENTRY_COMMENTED.match(line):
            return line.strip()[:160]
        if not appformats.KFD_PASSED.search(line.strip("`")):
            continue
        # the telling may stand above an argument list of a node per line (bubblewrap's)
        if _ADDED_FIXED_IT.search(line):
            return line.strip()[:160]  # "adding --device=/dev/kfd to the run command fixed it"
        for before in lines[max(0, index - 8) : index]:
            m = appformats.DEVICE_ADDED_WORKS.search(before)
            if m and not re.search(r"\b(?:not|n't|never|still)\b", before[: m.end()], re.I):
                return f"{before.strip()[:120]} ... {line.strip()[:60]}"
    return None


def rule_kfd_entry_told(r: Reasoning) -> None:
    """A container definition whose /dev/kfd entry is commented out, or that the text says worked once /dev/kfd was
    added: the container had no /dev/kfd, whatever the host has. A host that has none to give (Docker Desktop, WSL)
    is rule_foreign_host_kfd's."""
    obs = r.obs
    if r.has("device-node-missing", "host-without-kfd", "kfd-not-built", "no-amd-gpu") or obs.foreign_host:
        return
    if "/dev/kfd" not in obs.text:
        return
    told = _kfd_entry_told(r)
    if told is None:
        return
    r.findings.append(
        Finding(
            "device-node-missing",
            E,
            "the container's definition leaves /dev/kfd out (its device entry commented out, or added only as the "
            "fix): the container had no KFD node, so ROCm there found no GPU; the host and its driver are not shown "
            "to be at fault",
            "pass it in: in compose, '- /dev/kfd:/dev/kfd' and '- /dev/dri:/dev/dri' under the service's devices "
            "(uncommented); docker/podman run --device=/dev/kfd --device=/dev/dri",
            (f"the text: {told}",),
        )
    )


# "/dev/dri/kfd" as a path (not a longer name such as /dev/dri/kfd0, which no kernel makes either).
WRONG_KFD_PATH = re.compile(r"/dev/dri/kfd\b")


def rule_kfd_path_wrong(r: Reasoning) -> None:
    """A device mapping of /dev/dri/kfd: no kernel makes that node (KFD's is /dev/kfd, beside /dev/dri), so the
    container or sandbox given it gets no KFD node."""
    obs = r.obs
    if r.has("device-node-missing", "host-without-kfd", "kfd-not-built", "no-amd-gpu"):
        return
    told = search_lines(WRONG_KFD_PATH, obs, "/dev/dri/kfd")
    if told is None:
        return
    r.findings.append(
        Finding(
            "device-node-missing",
            E,
            "the text names /dev/dri/kfd, a node no kernel creates: KFD's node is /dev/kfd, beside /dev/dri, so a "
            "container or sandbox given /dev/dri/kfd gets no KFD node and ROCm and OpenCL there find no GPU",
            "pass /dev/kfd itself: docker/podman run --device=/dev/kfd --device=/dev/dri; in compose, '- /dev/kfd' "
            "under the service's devices",
            (f"the text: {told.string.strip()[:160]}",),
        )
    )


# --- a container started without /dev/kfd ------------------------------------------------------------------

# A container started by a Docker-compatible engine: "docker run", "podman run", "nerdctl run", "docker container
# run", "docker create"; and a compose file's device list (its "devices:" key). Apptainer and Singularity bind the
# host's /dev themselves and are not these.
CONTAINER_RUN = re.compile(r"\b(?:docker|podman|nerdctl)\s+(?:container\s+)?(?:run|create)\b|^\s*devices:\s*$")
# Any way a text can hand /dev/kfd in, wider than appformats.KFD_PASSED: an inline compose list ('["/dev/kfd"]'),
# a bind of the whole /dev, a flag that names it anywhere on its line, or --privileged (every host device).
KFD_MAYBE_PASSED = re.compile(
    r"devices?\b[^\n]*/dev/kfd|['\"]/dev/kfd['\"]|(?<![\w/])/dev:/dev\b|--device\b[^\n]*?/dev/kfd"
    r"|(?<![\w-])--privileged\b|\bprivileged:\s*true\b",
    re.I,
)
# The DRM nodes handed to a container by a flag or a compose list item.
DRI_HANDED = re.compile(r"--device[= ]\s*[\"']?/dev/dri\b|^\s*-\s*[\"']?/dev/dri\b")
# Besides the messages of the no-device kind, the shell's answer to a look at the absent node.
NO_GPU_FOUND = re.compile(r"/dev/kfd['\"]?: No such file or directory", re.I)


def _container_run_without_kfd(r: Reasoning) -> str | None:
    """The container start the text shows (a run command or a compose device list), where nothing in the text
    hands /dev/kfd in."""
    obs = r.obs
    run = search_lines(CONTAINER_RUN, obs, "docker", "podman", "nerdctl", "devices:")
    if run is None and (obs.first("container") or search_lines(CONTAINER_WORD, obs, "docker", "podman", "container")):
        run = search_lines(DRI_HANDED, obs, "/dev/dri")  # "inside podman with --device /dev/dri only"
    if run is None or search_lines(KFD_MAYBE_PASSED, obs, "/dev", "privileged") is not None:
        return None
    if any(contains(obs, w, lower=True) for w in ("apptainer", "singularity", "kubernetes", "k8s", "toolbox")):
        return None  # those hand devices over otherwise (a bind of /dev, the device plugin)
    return run.string.strip()[:160]


def rule_container_run_without_kfd(r: Reasoning) -> None:
    """A container started without /dev/kfd (its run command or compose device list names none, and nothing else in
    the text hands it in), where the program inside finds no GPU: the container has no KFD node to open."""
    obs = r.obs
    if r.machine is not None or obs.foreign_host is not None or obs.agents or obs.saw("runtime-gpu", "no-code-object"):
        return
    if r.has("device-node-missing", "host-without-kfd", "kfd-not-built", "no-amd-gpu", "rootless-gid-unmapped"):
        return
    symptoms = obs.saw("no-device")
    symptom = symptoms[0].text if symptoms else None
    if symptom is None:
        found = search_lines(NO_GPU_FOUND, obs, "/dev/kfd")
        symptom = found.string.strip()[:160] if found else None
    if symptom is None:
        return
    run = _container_run_without_kfd(r)
    if run is None:
        return
    r.findings.append(
        Finding(
            "device-node-missing",
            E,
            "the container is started without /dev/kfd (its run command or device list hands over no KFD node, and "
            "nothing else in the text does), and the program inside finds no GPU: ROCm opens /dev/kfd first, so "
            "without it there is no GPU to find, whatever the host has",
            "pass both nodes in: docker/podman run --device=/dev/kfd --device=/dev/dri (in compose, '- /dev/kfd' "
            "and '- /dev/dri' under the service's devices), with --group-add video --group-add render where the "
            "image's user is not root",
            (f"the text: {run}", f"the text: {symptom}"),
        )
    )


# --- an AMD GPU listed beside an NVIDIA one -----------------------------------------------------------------

# lspci's display controller line of an AMD device, with or without -nn, named or not ("Vega [Radeon RX Vega]").
AMD_DISPLAY = re.compile(
    r"^\s*(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] (?:VGA compatible controller|Display controller|"
    r"3D controller)(?: \[03[0-9a-f]{2}\])?: (?:Advanced Micro Devices|AMD|ATI)\b",
    re.I,
)


def amd_device_listed(r: Reasoning) -> str | None:
    """An AMD display device that lspci lists or that amdgpu logs by its PCI slot, whether or not its chip is
    identified: the machine has an AMD GPU."""
    for line in lines_with(r.obs, " controller"):
        if AMD_DISPLAY.match(line):
            return f"lspci: {line.strip()}"
    for e in r.events:
        if e.driver == "amdgpu" and e.device and e.device != "kfd":
            return f"kernel log: {e.text}"
    return None


# --- amdgpu's init failure quoted outside a kernel log, and PCI BARs without space ----------------------------

# The kernel's own words quoted in prose, a title or a quote, where the log reader does not see a log line:
# drivers/base/dd.c "probe of %s failed with error %d" (6.12: "probe with driver %s failed with error %d") and
# amdgpu's "Fatal error during GPU init" (people insert the error: "Fatal error -12 during GPU init").
QUOTED_INIT_FAILURE = re.compile(
    r"\bamdgpu\b[^\n]{0,40}?(?:\bprobe (?:of \S+|with driver \S+) failed with error (?P<err>-?\d+)"
    r"|\bFatal error\b(?:\s+(?P<err2>-?\d+))?\s+during GPU init)",
    re.I,
)
# drivers/pci/setup-res.c: "BAR %d: no space for %pR", "BAR %d: failed to assign %pR" (6.x: "BAR %d %pR: can't
# assign; no space"): the firmware left the device no room for a memory window.
BAR_NO_SPACE = re.compile(r"\bBAR \d+(?::| \[[^\]]*\]:)\s*(?:no space for|can't assign; no space|failed to assign)")


def rule_quoted_init_failure(r: Reasoning) -> None:
    """amdgpu's probe failure or "Fatal error during GPU init" quoted where no kernel log shows it; with error
    -12 (ENOMEM) or the PCI core's "no space" for a BAR, the firmware did not map the GPU's memory windows."""
    obs = r.obs
    # A cause the kernel log already established for the failure (a GPU newer than the kernel's amdgpu:
    # "Failed to add gfx ip block", then "Fatal error during GPU init") says more than the quote.
    if r.has(
        "gpu-init-failed", "firmware-missing", "gpu-psp-init-failed", "no-amd-gpu", "host-without-kfd",
        "kernel-too-old", "asic-not-supported",
    ):  # fmt: skip
        return
    told = search_lines(QUOTED_INIT_FAILURE, obs, "probe of", "probe with", "fatal error")
    if told is None:
        return
    err = told["err"] or told["err2"]
    bar = search_lines(BAR_NO_SPACE, obs, "no space", "failed to assign")
    space = err == "-12" or bar is not None
    r.findings.append(
        Finding(
            "gpu-init-failed",
            E,
            "the text shows amdgpu failing to initialise the GPU"
            + (f" (error {err})" if err else "")
            + (
                ": ENOMEM at probe, where the PCI core could not give the GPU its memory windows (BARs), which the "
                "firmware's resource settings decide"
                if space
                else ": the GPU never reaches KFD"
            ),
            "in the firmware setup enable Above 4G Decoding and Re-Size BAR support and disable CSM (on servers also "
            "check SR-IOV and MMIO settings); 'sudo dmesg | grep -E \"BAR|amdgpu\"' shows whether a BAR found no space"
            if space
            else "read the whole boot's 'sudo dmesg | grep -Ei \"amdgpu|kfd\"' for the line before the failure",
            tuple(x for x in (f"the text: {told.group(0)}", f"the text: {bar.group(0)}" if bar else None) if x),
        )
    )


# --- the targets ROCm's device enumerators list -------------------------------------------------------------

# Programs that print the runtime's GPU targets one to a line: ROCm's rocm_agent_enumerator ("gfx000" for the
# CPU first), LLVM's amdgpu-arch and offload-arch (clang/tools/amdgpu-arch: each HSA agent's name, or on
# Windows each HIP device's gcnArchName).
ENUMERATORS = ("amdgpu-arch", "offload-arch", "rocm_agent_enumerator")
LISTED_TARGET = re.compile(r"^[\s>]*(?P<gfx>gfx[0-9][0-9a-f]{2,3})(?::[a-z]+[+-])*\s*$")


def _enumerated(r: Reasoning) -> tuple[str, list[str]] | None:
    """The enumerator the text runs and the GPU targets it printed, in order (gfx000, the CPU, left out)."""
    obs = r.obs
    tool = next((t for t in ENUMERATORS if contains(obs, t, lower=True)), None)
    if tool is None:
        return None
    listed = [m["gfx"].lower() for line in lines_with(obs, "gfx") if (m := LISTED_TARGET.match(line))]
    targets = [g for g in dict.fromkeys(listed) if g != "gfx000"]
    return (tool, targets) if targets else None


def rule_enumerated_target_unsupported(r: Reasoning) -> None:
    """A device enumerator lists a GPU target ROCm's prebuilt libraries carry no code for (an iGPU's gfx1036
    beside a supported card, a gfx902 APU): programs that use that device, the first one by default, fail."""
    if r.has("userspace-target-unsupported", "no-amd-gpu"):
        return
    enumerated = _enumerated(r)
    if enumerated is None:
        return
    tool, targets = enumerated
    known = {g: [a for a in ASICS if a.gfx == g] for g in targets}
    unsupported = [g for g, asics in known.items() if asics and not any(a.rocm_prebuilt for a in asics)]
    if not unsupported:
        return
    gfx = unsupported[0]
    # A GPU the libraries do carry, listed beside it or named elsewhere (an enumerator may list only the first).
    named = [g for g, _ in r.obs.prose_gfx] + [t.asic.gfx for t in r.amd if t.asic and t.asic.gfx]
    carried = [g for g in dict.fromkeys([*targets, *named]) if any(a.rocm_prebuilt for a in ASICS if a.gfx == g)]
    remedy = (
        f"make the program use the {carried[0]} GPU: hide the other (ROCR_VISIBLE_DEVICES on Linux, "
        "HIP_VISIBLE_DEVICES with the index of the GPU to keep) or disable the integrated GPU in the firmware setup"
        if carried
        else f"use software built for {gfx}, or a build whose targets include it"
    )
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"{tool} lists the GPU targets the runtime enumerates ({', '.join(targets)}), and ROCm's prebuilt "
            f"libraries carry no code for {gfx}: a program that uses that GPU (the first listed is device 0) has "
            "nothing to run on it, whatever the kernel and permissions",
            remedy,
            (f"{tool}: {gfx}",),
        )
    )


# --- the integrated GPU picked instead of the discrete one, told in words ------------------------------------

# "HIP using your integrated graphics rather than your discrete graphics", "it picks the iGPU first", "ROCm
# selected the onboard GPU": HIP's device 0 is the first GPU agent, often an APU's iGPU.
PROSE_IGPU_USED = re.compile(
    r"\b(?:using|uses|used|picks?|picked|picking|selects?|selected|selecting|chooses?|chose|defaults?\s+to)\s+"
    r"(?:the\s+|your\s+|my\s+|an?\s+)?(?:integrated|on-?board|internal)\s+(?:graphics|gpu|apu)\b"
    r"|\b(?:using|uses|used|picks?|picked|selects?|selected|chooses?|chose)\s+(?:the\s+|your\s+|my\s+|an?\s+)?igpu\b",
    re.I,
)


# The iGPU disabled, told as the fix: "the solution was to disable the igpu (of the 7800X3D cpu)", "disabling the
# integrated graphics in the BIOS fixed it": the program had picked it.
IGPU_DISABLED = re.compile(
    r"\b(?:disabl\w*|turn\w*\s+off|switch\w*\s+off)\s+(?:the\s+|my\s+|your\s+)?"
    r"(?:igpu|integrated\s+(?:graphics|gpu)|on-?board\s+(?:graphics|gpu)|internal\s+gpu)\b",
    re.I,
)
_SOLUTION = re.compile(r"\b(?:solution|fix|workaround)\s+(?:was|is)\b", re.I)


def _igpu_disabled_told(r: Reasoning) -> re.Match[str] | None:
    for line in lines_with(r.obs, "disabl") + lines_with(r.obs, " off"):
        m = IGPU_DISABLED.search(line)
        if m is None or _NOT_FIXED.search(line):
            continue
        if appformats.TOLD_SUCCESS.search(line) or _SOLUTION.search(line):
            return m
    return None


_FOR_DISPLAY = re.compile(
    r"^\s*(?:\w+\s+){0,2}?for\s+(?:the\s+|my\s+)?(?:display|desktop|monitors?|screens?|output|video|gaming)\b", re.I
)


def rule_igpu_used(r: Reasoning) -> None:
    """The text says the program runs on the integrated GPU rather than the discrete one: HIP numbers the GPU
    agents in order and an APU's iGPU (gfx902, gfx90c, gfx1036: no prebuilt code) often comes first."""
    obs = r.obs
    if r.has("userspace-target-unsupported", "no-amd-gpu", "host-without-kfd"):
        return
    told = search_lines(PROSE_IGPU_USED, obs, "integrated", "board", "internal", "igpu")
    if told is not None and _NEGATED.search(told.string[max(0, told.start() - 16) : told.start()]):
        told = None  # advice ("make sure you are not using the integrated GPU")
    told = told or _igpu_disabled_told(r)
    if told is None:
        return
    if _FOR_DISPLAY.search(told.string[told.end() : told.end() + 40]):
        return  # the iGPU drives the screens ("using the integrated graphics for the desktop"): a setup, not a fault
    if not IGPU_DISABLED.search(told.group(0)) and success_told(told.string[told.end() : told.end() + 40]):
        return  # "the :rocm tag using the iGPU works a lot better": the iGPU chosen on purpose, and computing
    named = [g for g, _ in obs.prose_gfx] + [t.asic.gfx for t in r.amd if t.asic and t.asic.gfx]
    bare = [g for g in dict.fromkeys(named) if not any(a.rocm_prebuilt for a in ASICS if a.gfx == g)]
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            (
                "the text says disabling the integrated GPU fixed it"
                if IGPU_DISABLED.search(told.group(0))
                else "the text says the program uses the integrated GPU instead of the discrete one"
            )
            + ": HIP's device 0 is the "
            "first GPU agent, an APU's iGPU whose target ROCm's prebuilt libraries carry no code for"
            + (f" (beside it, {', '.join(bare)} has none either)" if bare else ""),
            "make the program use the discrete GPU: HIP_VISIBLE_DEVICES (or ROCR_VISIBLE_DEVICES) with its index "
            "among the GPU agents, or disable the integrated GPU in the firmware setup",
            (f"the text: {told.group(0)}",),
        )
    )


# --- an override that made the program work ------------------------------------------------------------------

# A negation on a telling's line ("it never worked", "didn't fix it") undoes it.
_NEGATED = appformats.NEGATED


def override_target(value: str) -> str | None:
    """The gfx target an HSA_OVERRIDE_GFX_VERSION value makes the runtime report: major, minor, then the stepping
    in hex (libhsakmt: 9.0.10 is gfx90a, 10.3.0 gfx1030, 11.0.0 gfx1100)."""
    m = _VALID.fullmatch(value)
    if m is None or override_refused(value):
        return None
    return f"gfx{int(m['major'])}{int(m['minor'])}{int(m['step']):x}"


def override_told_needed(r: Reasoning) -> str | None:
    """The text's own word that the override is what makes the program run: it was needed ("had to set",
    "without the override ... drops"), or the line that sets it (or the next) tells a success."""
    text = r.obs.text
    for line in lines_with(r.obs, "override"):
        if appformats.OVERRIDE_REMOVED.search(line):
            continue  # the override taken away: rule_override_removed's
        if appformats.OVERRIDE_NEEDED.search(line) or appformats.WITHOUT_OVERRIDE.search(line):
            return line.strip()
    for line in lines_with(r.obs, "hsa_override_gfx_version"):
        if appformats.OVERRIDE_REMOVED.search(line):
            continue
        at = text.find(line)
        end = text.find("\n", at + len(line) + 1)
        window = text[at : end if end != -1 else len(text)]
        m = appformats.OVERRIDE_WORKS.search(window, window.find("HSA_OVERRIDE_GFX_VERSION") + 1)
        if m:
            return window.strip()[:160]
    return None


def rule_override_worked(r: Reasoning) -> None:
    """HSA_OVERRIDE_GFX_VERSION set, and the text says it then worked: the program's build has no code for the
    GPU's own target, which the override replaces with a neighbouring target's code (the README's "unsupported
    workaround"). Read from the GPU's own target as the text names it, not from what the override reports."""
    obs = r.obs
    if r.has("userspace-target-unsupported", "env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    set_at = obs.first("gfx-override")
    claimed = override_target(set_at.value) if set_at else None
    if set_at is None or claimed is None:
        return
    worked = None
    for line in dict.fromkeys(line for cue in appformats.FIXED_CUES for line in lines_with(obs, cue)):
        m = appformats.PROSE_FIXED.search(line)
        # On the setting's own line or below it: a fix told before the override was set speaks of something else.
        if m and not _NEGATED.search(line) and line_number(obs.lines, line) >= set_at.source.line:
            worked = m
            break
    # Or the override told as needed ("had to set", "without the override ... drops it"), or a success right after it.
    told = worked.group(0) if worked is not None else override_told_needed(r)
    if told is None:
        return
    named = [(g, str(w)) for g, w in obs.prose_gfx] + [(t.asic.gfx, str(t.gpu.source)) for t in r.amd if t.asic]
    named += _targets_beside_settings(r)
    own = next(((g, w) for g, w in named if g and g != claimed), None)
    if own is None:
        return
    gfx, where = own
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"the text says HSA_OVERRIDE_GFX_VERSION={set_at.value} made it work: the program's build carries no code "
            f"for {gfx}, so the override has it run the code built for {claimed} instead (unsupported: it may crash "
            "or compute wrongly)",
            f"keep the override in the environment of the process that uses the GPU, or use a build whose targets "
            f"include {gfx}",
            (
                f"{set_at.source}: HSA_OVERRIDE_GFX_VERSION={set_at.value}",
                f"the text: {told[:160]}",
                f"{where}: {gfx}",
            ),
        )
    )


# A build's own target list, as make, cmake and the frameworks take it: "GPU_TARGETS=gfx1030", "-DAMDGPU_TARGETS=
# gfx1100;gfx1030", "PYTORCH_ROCM_ARCH=gfx90a", "--offload-arch=gfx1031".
BUILD_TARGETS = re.compile(
    r"\b(?:AMDGPU_TARGETS|GPU_TARGETS|GPU_ARCHS?|(?:CMAKE_)?HIP_ARCHITECTURES|PYTORCH_ROCM_ARCH)\s*=\s*[\"']?"
    r"(?P<targets>gfx[0-9a-f]{3,4}(?:[;, ]gfx[0-9a-f]{3,4})*)|--offload-arch[= ](?P<arch>gfx[0-9a-f]{3,4})",
    re.I,
)
_BUILD_CUES = ("targets", "arch")
_NOT_FIXED = re.compile(r"\b(?:not|never|no longer|nothing)\b|n't\b", re.I)


def success_told(line: str) -> bool:
    """Whether the line tells a success (appformats.TOLD_SUCCESS) with no negation on it ("still not working",
    "nothing worked")."""
    return appformats.TOLD_SUCCESS.search(line) is not None and _NOT_FIXED.search(line) is None


def fix_told(
    r: Reasoning, pattern: re.Pattern[str], cues: tuple[str, ...], *, after: int = 2, before: int = 0
) -> tuple[re.Match[str], str, str] | None:
    """A setting, command or build told as the fix: the first line (of those holding a cue) where ``pattern``
    matches and a success is told on it (after the match or before it), on the ``after`` lines below it, or in a
    lead-in of the ``before`` lines above that ends in a colon ("Fixed with these commands:"); a negation ends the
    search of that line. Returns the match, its line and the success as told."""
    lines = r.obs.lines
    for line in dict.fromkeys(line for cue in cues for line in lines_with(r.obs, cue)):
        found = pattern.search(line)
        if found is None:
            continue
        at = line_number(lines, line)
        leads = [ahead for ahead in lines[max(at - 1 - before, 0) : max(at - 1, 0)] if ahead.rstrip().endswith(":")]
        same = [line[found.end() :], line[: found.start()]]  # "works fine after I changed it to 10.3.0"
        # the lines below, blank ones not counted (a thread puts an empty line before each reply)
        below = [ahead for ahead in lines[at : at + 2 * after + 2] if ahead.strip()][:after] if at else []
        for told in [*same, *below, *leads]:
            if _NOT_FIXED.search(told):
                break
            if appformats.TOLD_SUCCESS.search(told):
                return found, line.strip()[:160], told.strip()[:160]
    return None


# The GPU's target given to a build, told in words: "fixed the issue by providing architecture target of the gpu in
# the compilation", "solved by setting the right GPU_TARGETS when building".
TARGET_GIVEN_TO_BUILD = re.compile(
    r"\b(?:provid|specif|set|add|pass|giv|includ|us)\w*\s+(?:the\s+|my\s+|a\s+)?(?:correct\s+|right\s+|proper\s+)?"
    r"(?:gpu'?s?\s+|card'?s?\s+)?(?:architecture\s+target|target\s+architecture|arch(?:itecture)?\s+targets?|"
    r"gpu\s+(?:architecture|target)|offload[- ]arch|(?:amdgpu|gpu)[_ ]targets?)\b",
    re.I,
)


def _build_told_fixed(r: Reasoning) -> tuple[str, str, str] | None:
    """A build for named targets told as the fix, or the GPU's target given to the build told in words. Returns
    (targets, the flag's line, the success as told)."""
    told = fix_told(r, BUILD_TARGETS, _BUILD_CUES)
    if told is not None:
        flag, line, success = told
        return (flag["targets"] or flag["arch"]).replace(";", ", ").replace(",,", ","), line, success
    for line in lines_with(r.obs, "arch") + lines_with(r.obs, "target"):
        low = line.lower()
        if "compil" not in low and "build" not in low and "make" not in low:
            continue
        given = TARGET_GIVEN_TO_BUILD.search(line)
        if given and success_told(line):
            return "the GPU's target", line.strip()[:160], given.group(0)
    return None


def rule_build_target_worked(r: Reasoning) -> None:
    """A program or library rebuilt for named GPU targets, and the text says that fixed it: the build it replaced
    carried no code for the target the runtime reports for this GPU (koboldcpp#936: built for gfx1031 by detection,
    run as gfx1030 under the program's own override). The same cause as a missing target, told by its cure."""
    if r.has("userspace-target-unsupported", "env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    told = _build_told_fixed(r)
    if told is None:
        return
    targets, flag, success = told
    r.findings.append(
        Finding(
            "userspace-target-unsupported",
            W,
            f"the text says building for {targets} fixed it: the build before carried no code for the target the "
            'runtime reports for this GPU, so its kernels had nothing to run (HIP\'s "no kernel image" or a '
            "library's error)",
            f"keep building with the GPU's target ({targets}); where HSA_OVERRIDE_GFX_VERSION is set, the target to "
            "build for is the one the override reports, not the GPU's own",
            (f"the text: {flag}", f"the text: {success}"),
        )
    )


def override_told_removed(r: Reasoning) -> tuple[str, str] | None:
    """The text's word that taking HSA_OVERRIDE_GFX_VERSION away made the program work: a line that removes (unsets,
    deletes) it, and a success told on that line after it or within the next three lines, with no negation there.
    Returns the removal's line and the success as told."""
    lines = r.obs.lines
    for line in lines_with(r.obs, "hsa_override_gfx_version"):
        removed = appformats.OVERRIDE_REMOVED.search(line)
        if removed is None:
            continue
        at = line_number(lines, line)
        after = [line[removed.end() :], *lines[at : at + 3]] if at else [line[removed.end() :]]
        for told in after:
            m = appformats.TOLD_SUCCESS.search(told)
            if m and not _NEGATED.search(told):
                return line.strip()[:160], told.strip()[:160]
            if _NEGATED.search(told):
                break  # "but it still doesn't work": what follows does not undo it
        # A numbered step of an answer, and a later reply that names that step as what worked ("step 2 was the
        # solution"): the reply refers back to the removal, however far below it.
        step = _STEP.match(line)
        if step is None:
            continue
        for told in lines[at:]:
            named = re.search(rf"\bstep\s*{step['n']}\b", told, re.I)
            if named and appformats.TOLD_SUCCESS.search(told) and not _NEGATED.search(told):
                return line.strip()[:160], told.strip()[:160]
    return None


_STEP = re.compile(r"^\s*(?:step\s*)?(?P<n>\d{1,2})\s*[.,):-]\s", re.I)


# The override's value told as wrong ("Wrong HSA_OVERRIDE_GFX_VERSION in start.sh", "the HSA_OVERRIDE_GFX_VERSION
# ... is wrong"), and a change of its value told as the fix ("changed the value to 10.3.0", "changed
# HSA_OVERRIDE_GFX_VERSION to 10.3.0").
OVERRIDE_TOLD_WRONG = re.compile(
    r"(?<!not )\b(?:wrong|incorrect|bad)\s+(?:value\s+(?:of|for)\s+)?[`'\"]?HSA_OVERRIDE_GFX_VERSION"
    r"|HSA_OVERRIDE_GFX_VERSION\b[^.\n]{0,40}?\b(?:is|was)\s+(?:wrong|incorrect)\b",
    re.I,
)
OVERRIDE_CHANGED = re.compile(
    r"\bchang\w*\s+(?:the\s+(?:value|override)|it|[`'\"]?HSA_OVERRIDE_GFX_VERSION[`'\"]?)\s+(?:to|into)\s+[`'\"]?"
    r"(?:HSA_OVERRIDE_GFX_VERSION=)?(?P<value>\d{1,2}\.\d\.\d{1,2})",
    re.I,
)


def rule_override_told_wrong(r: Reasoning) -> None:
    """The text says the override's value was wrong, or that changing it to another value fixed it: the value set
    (by a script, a container file, the person's environment) made the runtime treat the GPU as a target whose
    code it cannot run. The value itself need not be shown."""
    if r.has("env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    wrong = search_lines(OVERRIDE_TOLD_WRONG, r.obs, "hsa_override_gfx_version")
    changed = None if wrong else fix_told(r, OVERRIDE_CHANGED, ("chang",))
    if wrong is not None:
        told, value = wrong.string.strip()[:160], None
    elif changed is not None:
        told, value = changed[1], changed[0]["value"]
    else:
        return
    r.findings.append(
        Finding(
            "env-override-wrong",
            E,
            "the text says the HSA_OVERRIDE_GFX_VERSION that was set had the wrong value"
            + (f" and that {value} works" if value else "")
            + ": the runtime took the GPU for a target whose code it cannot run, which crashes the program (or the "
            "whole desktop, when the GPU hangs)",
            "set the value of a target the GPU can run (the same generation: 10.3.0 for RDNA2, 11.0.0 for RDNA3), "
            "or none where the program's build carries the GPU's own target; fix it where it is set (the script, "
            "the container's environment, ~/.bashrc)",
            (f"the text: {told}",),
        )
    )


def rule_override_removed(r: Reasoning) -> None:
    """Removing HSA_OVERRIDE_GFX_VERSION told as what made the program work: the override was the fault (a value
    left from an older build's workaround, set system-wide), whatever the GPU's support; its value need not be
    shown."""
    if r.has("env-override-wrong", "no-amd-gpu", "host-without-kfd"):
        return
    told = override_told_removed(r)
    if told is None:
        return
    removed, success = told
    named = [(g, str(w)) for g, w in r.obs.prose_gfx] + [(t.asic.gfx, str(t.gpu.source)) for t in r.amd if t.asic]
    gpu = f"the {named[0][0]} GPU" if named else "the GPU"
    # What the override stood in for (a target without code) is not the fault the text tells.
    r.findings[:] = [f for f in r.findings if f.code != "userspace-target-unsupported"]
    r.findings.append(
        Finding(
            "env-override-wrong",
            E,
            f"the text says taking HSA_OVERRIDE_GFX_VERSION away made it work: the override made the runtime treat "
            f"{gpu} as another target (a leftover of an older workaround, set where every program inherits it), and "
            "the program's own code for the GPU went unused",
            "unset HSA_OVERRIDE_GFX_VERSION wherever it is set (the system's environment variables on Windows, "
            "~/.bashrc, /etc/environment, the service's Environment=, the container's -e)",
            (f"the text: {removed}", f"the text: {success}", *(f"{w}: {g}" for g, w in named[:1])),
        )
    )


def _targets_beside_settings(r: Reasoning) -> list[tuple[str, str]]:
    """A GPU target named alone in a line that also sets a variable ("Until gfx1151 support is enabled use export
    HSA_OVERRIDE_GFX_VERSION=11.0.0"), which the evidence layer's prose reading leaves out for its "="; build
    flags that list targets (AMDGPU_TARGETS=, PYTORCH_ROCM_ARCH=) name what is built, not the GPU."""
    found = []
    for line in lines_with(r.obs, "gfx"):
        low = line.lower()
        if "=" not in low or "targets" in low or "arch" in low:
            continue
        targets = appformats.PROSE_GFX.findall(low)
        if len(targets) == 1:
            found.append((targets[0], "the text"))
    return found


# --- a container given the video group only, where the nodes belong to render -------------------------------

# docker/podman run's --group-add (a name resolved in the image's /etc/group, or a numeric gid), read in the
# command that starts the container, or in words that say video is all it adds ("only adds --group-add video"):
# a line that advises "add --group-add render" is the fix, not what the container had.
GROUP_ADD = re.compile(r"--group-add(?:=|\s+)[\"']?(?P<group>[^\s\"']+)")
RUN_COMMAND = re.compile(r"\b(?:docker|podman|nerdctl)\b[^\n]*?\s(?:run|create)\s")
ONLY_VIDEO = re.compile(r"\b(?:only|just)\b[^.\n]{0,40}?--group-add(?:=|\s+)[\"']?video\b", re.I)


def _groups_added(r: Reasoning) -> set[str]:
    """The groups the container is started with: its run commands' --group-add, else words that say video only."""
    lines = lines_with(r.obs, "--group-add")
    commands = [line for line in lines if RUN_COMMAND.search(line)]
    if commands:
        return {
            m["group"].lower().rstrip(".,;:")  # the end of a sentence, not of the group
            for line in commands
            for m in GROUP_ADD.finditer(line)
        }
    return {"video"} if any(ONLY_VIDEO.search(line) for line in lines) else set()


def _render_owned(r: Reasoning) -> str | None:
    """Where the text shows /dev/kfd or a render node owned by group render: ls -l, or words."""
    obs = r.obs
    for path, node in obs.nodes.items():
        if node.group == "render" and (path.endswith("/kfd") or "/renderD" in path):
            return f"{node.source}: {path} group render"
    for pattern, cue in ((appformats.NODE_GROUP_PROSE, "/dev/k"), (appformats.RENDER_NODE_GROUP_PROSE, "/dev/dri/")):
        m = search_lines(pattern, obs, cue)
        if m and (m["owner"] or m["group"] or "").lower() == "render":
            return f"the text: {m.group(0)}"
    return None


def rule_container_without_render_group(r: Reasoning) -> None:
    """A container started with --group-add naming video but not render, where /dev/kfd or the render node
    belongs to group render: its user is in video only, so opening the node fails and HIP sees no GPU."""
    if r.has(
        "user-not-in-group",
        "device-permissions",
        "rootless-gid-unmapped",
        "host-without-kfd",
        "no-amd-gpu",
        "device-node-missing",
    ):
        return
    added = _groups_added(r)
    if "video" not in added or "render" in added or "keep-groups" in added:
        return
    if any(not g.isalpha() for g in added):
        return  # a numeric gid, or one a command computes ($(getent ...)), may be render's
    owned = _render_owned(r)
    if owned is None:
        return
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            "the container is started with --group-add video but not render, while the GPU's nodes belong to group "
            "render: the container's user is in video only, cannot open them, and HIP enumerates no GPU",
            "add the host's render group: docker/podman run --group-add $(getent group render | cut -d: -f3) (the "
            "numeric gid; a name is looked up in the image's own /etc/group), beside --group-add video; with rootless "
            "podman, --group-add keep-groups",
            (f"the text: {sorted(added)}", owned),
        )
    )


__all__ = [
    "amd_device_listed",
    "fix_told",
    "kfd_told_absent_in_container",
    "override_refused",
    "override_target",
    "override_told_needed",
    "override_told_removed",
    "rule_build_target_worked",
    "rule_container_run_without_kfd",
    "rule_container_without_render_group",
    "rule_dkms_status_unbuilt",
    "rule_enumerated_target_unsupported",
    "rule_igpu_used",
    "rule_kfd_entry_told",
    "rule_module_built_elsewhere",
    "rule_override_invalid",
    "rule_override_removed",
    "rule_override_told_wrong",
    "rule_override_worked",
    "rule_prose_container_no_kfd",
    "rule_prose_dkms_kernel",
    "rule_prose_secure_boot",
    "rule_quoted_init_failure",
]
