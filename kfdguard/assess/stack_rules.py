"""Rules over what a text shows of the software around the GPU: which build of the framework runs, how a
variable was set, and what a rootless container makes of the host's groups.

Each rule reads a format a program prints or a shell accepts (PyTorch's version string and
torch.utils.collect_env, pip's resolver errors, fish's and POSIX shells' ``set``, Podman's
``--group-add keep-groups``), never a particular report's wording. These causes sit above the kernel:
KFD can be perfect and the program still never reaches the GPU.
"""

from __future__ import annotations

import re

from kfdguard.assess.access_rules import mode_allows_group
from kfdguard.assess.app_rules import ROOTLESS, amd_gpu_named, rootless_unmapped
from kfdguard.assess.claims import contains, line_number, lines_with, search_lines
from kfdguard.assess.reasoning import Reasoning
from kfdguard.assess.report_rules import fix_told
from kfdguard.knowledge import appformats
from kfdguard.verdict import Finding, Severity

E, W = Severity.ERROR, Severity.WARNING

# --- a framework built without ROCm ---------------------------------------------------------------------------

# PyTorch's version carries its build as a local version label (PEP 440): "2.6.0+cu124" (CUDA 12.4),
# "2.11.0+cpu", "2.4.1+rocm6.1". torch.__version__, collect_env's "PyTorch version:", pip list and
# "torch version =" all print it after the package's name.
TORCH_BUILD = re.compile(
    r"\b(?:py)?torch(?:vision|audio)?\b(?:\.__version__)?[^\n+]{0,40}?(?<![\w.])\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?"
    r"(?:\.dev\d+)?\+(?P<build>cu\d{2,3}|cpu|rocm[\d.]+)\b",
    re.I,
)
# torch.version.hip is None in every build without HIP; collect_env prints that as "ROCM used to build
# PyTorch: N/A" (torch/utils/collect_env.py), and a ROCm build's version there ("6.0.32830-d62f6a171").
# Its value may be joined to the expression by evidence/repl ("torch.version.hip -> None") or told in words
# ("torch.version.hip is None", "returns None").
_HIP_IS = r"\btorch\.version\.hip\b['\")]*\s*(?:[:=,]|->|\bis\b|\breturn(?:s|ed)\b)?\s*"
HIP_NONE = re.compile(_HIP_IS + r"None\b|\bROCM used to build PyTorch: N/A\b")
HIP_BUILT = re.compile(_HIP_IS + r"['\"]?\d|\bROCM used to build PyTorch: \d")
# pip's resolver (pip/_internal/index/package_finder.py): "Could not find a version that satisfies the
# requirement %s (from versions: %s)", then "No matching distribution found for %s".
PIP_NO_TORCH = re.compile(
    r"Could not find a version that satisfies the requirement (?P<req>(?:torch|torchvision|torchaudio)\b[^\s(]*)"
    r"(?: \(from versions: (?P<versions>[^)]*)\))?",
    re.I,
)


# Triton's NVIDIA backend compiling through NVIDIA's ptxas (third_party/nvidia/backend/compiler.py make_cubin:
# "Internal Triton PTX codegen error", "`ptxas` failed with error code", PTXASError): a CUDA Triton, where the ROCm
# torch brings its own (pytorch-triton-rocm), compiling for AMD GPUs through its AMD backend.
TRITON_PTXAS = re.compile(r"\bInternal Triton PTX codegen error\b|`ptxas` failed with error code|\bPTXASError\b", re.I)
# The loader not finding one of CUDA's own libraries (glibc's "%s: cannot open shared object file", TensorFlow's
# "Could not load dynamic library"): the program is a CUDA build ("tensorflow-gpu" from the package index asks for
# libcublas.so.9.0), which no ROCm installation provides.
CUDA_LIBRARY_NOT_LOADED = re.compile(
    r"\blib(?:cublas(?:Lt)?|cudart|cudnn|cufft|curand|cusparse|cusolver|nvrtc|nvinfer|cuda)\.so(?:\.[\d.]+)?\b"
    r"[^\n]{0,60}?(?:cannot open shared object file|not found)"
    r"|Could not load dynamic library '(?:lib)?(?:cublas|cudart|cudnn|cufft|curand|cusparse|cusolver|nvrtc)",
    re.I,
)
# What only a build without HIP prints. A CUDA build's lazy init without libcuda (aten/src/ATen/cuda/detail/
# CUDAHooks.cpp): "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a
# driver from ..."; a CPU build's torch.cuda._lazy_init: "Torch not compiled with CUDA enabled". A ROCm build says
# "No HIP GPUs are available" instead (appformats' torch-no-gpus): c10's device_count_ensure_non_zero says "No CUDA
# GPUs are available" in C++ that the ROCm build hipifies, so a text that shows the CUDA wording shows a CUDA build
# (ZLUDA runs such a build on purpose: _no_rocm_build_shown leaves a text that names it alone).
CUDA_ONLY = re.compile(
    r"\b(?:Found no NVIDIA driver|No NVIDIA driver found) on your system\b|\bTorch not compiled with CUDA enabled\b"
    r"|\bNo CUDA GPUs are available\b|" + TRITON_PTXAS.pattern,
    re.I,
)
# ONNX Runtime asked for its ROCm (or MIGraphX) execution provider in a build that has none
# (onnxruntime/python/onnxruntime_inference_collection.py: "Specified provider '{}' is not in available provider
# names.Available providers: '{}'"): the package installed is the CUDA or CPU build.
ORT_NO_ROCM_PROVIDER = re.compile(
    r"Specified provider '(?:ROCM|MIGraphX)ExecutionProvider' is not in available provider names", re.I
)
# The same told in words: an install that pulled CUDA builds of torch ("will install CUDA versions of torch",
# "it switches to CUDA instead of ROCm", "seems to be downloading nvidia stuff").
PROSE_CUDA_TORCH = re.compile(
    r"\b(?:install|pull|download|replac|switch|reinstall|default|grab|pick|fetch|bring|brought|took|chose|choos)\w*"
    r"\b[^.\n]{0,40}?\b(?:cuda|nvidia)[\s-]+(?:versions?|builds?|wheels?|packages?|stuff|variants?|torch|pytorch)\b"
    # "it grabs Torch CUDA, Triton, etc.": the package before its flavour
    r"|\b(?:grab|install|pull|download|fetch)\w*\s+(?:the\s+)?(?:py)?torch[\s-]+cuda\b"
    # "it assumes CUDA by default", "CUDA torch instead of ROCm torch", "cuda instead of rocm"
    r"|\bassum\w*\s+(?:cuda|nvidia)\b|\bcuda\b[^.\n]{0,30}?\binstead\s+of\b[^.\n]{0,20}?\b(?:rocm|amd|hip)\b",
    re.I,
)
# A program's CUDA requirements file installed on an AMD machine whose ROCm file the text names as well
# ("-r requirements-cuda.txt" changed to "-r requirements-rocm.txt"): the requirements pinned the CUDA build of torch.
REQUIREMENTS_CUDA = re.compile(r"\brequirements[-_]cuda\w*\.txt\b", re.I)
# uv's resolver failing (its "No solution found when resolving dependencies"), pip's "ResolutionImpossible": where
# the text installs torch from a ROCm wheel index, the ROCm build was not installed and what was there stays.
RESOLVER_FAILED = re.compile(r"\bNo solution found when resolving dependencies\b|\bResolutionImpossible\b")
ROCM_INDEX = re.compile(r"/whl/(?:nightly/|test/)?rocm[\d.]+", re.I)


def _torch_builds(r: Reasoning) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """The PyTorch builds the text shows, each with where it appears: (position, build, line) for a version
    string, (position, line) for a HIP version of None (a build without ROCm)."""
    text = r.obs.text
    builds: list[tuple[int, str, str]] = []
    for cue in ("+cu", "+cpu", "+rocm"):
        for line in lines_with(r.obs, cue):
            m = TORCH_BUILD.search(line)
            if m and "from versions:" not in line:  # pip's list of what an index has, not what is installed
                builds.append((text.find(line), m["build"].lower(), line.strip()))
    hipless = [
        (text.find(line), line.strip())
        for cue in ("torch.version.hip", "rocm used to build pytorch")
        for line in lines_with(r.obs, cue)
        if HIP_NONE.search(line)
    ]
    for cue in ("torch.version.hip", "rocm used to build pytorch"):
        for line in lines_with(r.obs, cue):
            if HIP_BUILT.search(line):
                builds.append((text.find(line), "rocm", line.strip()))
    return sorted(builds), sorted(hipless)


def _no_rocm_build_shown(r: Reasoning) -> list[str]:
    """The lines that show a PyTorch build without ROCm: its version label, a HIP version of None, or a message
    only such a build prints. A ROCm build shown later is the fix told beside the cause, which stays the cause."""
    builds, hipless = _torch_builds(r)
    shown = [(at, line) for at, build, line in builds if not build.startswith("rocm")] + hipless
    text = r.obs.text
    cues = ["nvidia driver", "not compiled with cuda", "ptx"]
    if not contains(r.obs, "zluda", lower=True):
        cues.append("no cuda gpus")
    searches = [(cue, CUDA_ONLY) for cue in cues]
    searches += [(cue, CUDA_LIBRARY_NOT_LOADED) for cue in ("libcu", "libnvrtc", "libnvinfer")]
    searches.append(("is not in available provider names", ORT_NO_ROCM_PROVIDER))
    for cue, pattern in searches:
        shown += [(text.find(line), line.strip()) for line in lines_with(r.obs, cue) if pattern.search(line)]
    return [line for _, line in sorted(shown)][:2]


def _clause_before(line: str, at: int) -> str:
    """The part of the line's sentence before ``at``: a negation in an earlier sentence is not this one's."""
    return re.split(r"[.;!?]\s", line[:at])[-1]


def _cuda_torch_told(r: Reasoning) -> str | None:
    """Prose that says an install brought CUDA builds of torch, in a text about torch; or a CUDA requirements file
    beside its ROCm counterpart."""
    if contains(r.obs, "torch", lower=True):
        for line in dict.fromkeys(lines_with(r.obs, "cuda") + lines_with(r.obs, "nvidia")):
            m = PROSE_CUDA_TORCH.search(line)
            # "the docs say to not pick CUDA builds": a negation in the clause before it
            if m and not _NEGATED.search(_clause_before(line, m.start()) + m.group(0)):
                return m.group(0)
    m = search_lines(REQUIREMENTS_CUDA, r.obs, "requirements")
    if m and search_lines(re.compile(r"requirements[-_]rocm", re.I), r.obs, "requirements"):
        return m.string.strip()[:160]
    return None


def _rocm_wheel_missing(r: Reasoning) -> str | None:
    """pip finding no ROCm build of torch at the version asked for, in an index of ROCm wheels."""
    for line in lines_with(r.obs, "satisfies the requirement"):
        m = PIP_NO_TORCH.search(line)
        if m and ("+rocm" in (m["versions"] or "").lower() or contains(r.obs, "/rocm", lower=True)):
            return line.strip()
    failed = search_lines(RESOLVER_FAILED, r.obs, "no solution found", "resolutionimpossible")
    if failed is not None and contains(r.obs, "torch", lower=True):
        index = search_lines(ROCM_INDEX, r.obs, "/whl/")
        if index is not None and index.string.find("torch") >= 0:
            return f"{index.string.strip()[:100]} ... {failed.group(0)}"
    return None


def _hip_switch_rebuilt(r: Reasoning) -> str | None:
    """A rebuild with the program's HIP switch on (GGML_HIP=ON ...), followed by a told success: the build before
    it had no HIP backend."""
    text = r.obs.text
    for cue in ("hip", "use_rocm"):
        for line in lines_with(r.obs, cue):
            m = appformats.HIP_SWITCH_REBUILT.search(line)
            if m is None:
                continue
            if _NEGATED.search(_clause_before(line, m.start())):
                continue  # "... is not used. Rebuilt with ...": only its own sentence counts
            end = text.find(line) + m.end()
            if appformats.GPU_WORKS_AFTER.search(text, end, end + 600):
                return m.group(0)
    return None


def _rocm_torch_reinstalled(r: Reasoning) -> str | None:
    """A forced reinstall of torch from PyTorch's ROCm index, followed by a told success, where the text shows no
    ROCm build of torch before it: the torch it replaced (an installer's default) had no HIP backend."""
    text = r.obs.text
    for line in lines_with(r.obs, "--force-reinstall"):
        m = appformats.ROCM_TORCH_REINSTALL.search(line)
        if m is None:
            continue
        at = text.find(line)
        if any(build.startswith("rocm") and where < at for where, build, _ in _torch_builds(r)[0]):
            return None  # a ROCm torch was there before: the reinstall changed its version, not its kind
        if appformats.GPU_WORKS_AFTER.search(text, at + len(line), at + len(line) + 600):
            return m.group(0)
    return None


# Each alternative of PROSE_NO_ROCM_BUILD holds one of these words (a cue as common as "hip" would read every "chip").
_NO_ROCM_BUILD_CUES = (
    "without", " support", "built with", "compiled with", "gpu offload", "cpu-only", "cpu only", " backend",
    "now install", "ignored", "cuda-only", "cuda only", "not enabled", "not built in", "not compiled in",
)  # fmt: skip


def _no_rocm_build_told(r: Reasoning) -> str | None:
    """A line that says the program was built or shipped without ROCm/HIP (not that one GPU lacks support)."""
    for cue in _NO_ROCM_BUILD_CUES:
        for line in lines_with(r.obs, cue):
            m = appformats.PROSE_NO_ROCM_BUILD.search(line)
            # "... not available for my RX 580", "... not enabled on gfx803": that GPU's support, told right after.
            tail = line[m.end() : m.end() + 30] if m else ""
            if m and not appformats.PROSE_GFX.search(tail) and not appformats.FOR_A_GPU.match(tail.lstrip(" ,")):
                return line.strip()
    return None


def _told_without_rocm(r: Reasoning) -> bool:
    """A build without ROCm that the text tells rather than prints: in words, or as a forced reinstall of torch from
    the ROCm index that made the GPU work. Adds the finding and says whether it did."""
    said = _no_rocm_build_told(r)
    reinstall = None if said else _rocm_torch_reinstalled(r)
    rebuilt = None if said or reinstall else _hip_switch_rebuilt(r)
    if said is None and reinstall is None and rebuilt is None:
        return False
    if said:
        message = (
            "the text says the program was built (or shipped) without ROCm/HIP support: it has no HIP backend and "
            "never looks for the AMD GPU, so it runs on the CPU whatever the GPU, KFD, /dev/kfd and "
            "HSA_OVERRIDE_GFX_VERSION are"
        )
    elif reinstall:
        message = (
            "the text fixes it by reinstalling torch from PyTorch's ROCm index: the torch installed before (an "
            "installer's default, a CUDA or CPU wheel) had no HIP backend and never looked for the AMD GPU"
        )
    else:
        message = (
            "the text fixes it by building the program with its HIP switch on: the build before had no HIP backend "
            "and never looked for the AMD GPU, so it ran on the CPU"
        )
    r.findings.append(
        Finding(
            "userspace-no-rocm-build",
            E,
            message,
            "use a build of the program with ROCm/HIP (llama.cpp: cmake -DGGML_HIP=ON with the ROCm device libraries "
            "and hipBLAS installed; PyTorch from its ROCm wheel index; an image or installer with a ROCm variant), "
            "then check that it lists the GPU (torch.version.hip, or llama.cpp's 'found N ROCm devices')",
            (f"the text: {(said or reinstall or rebuilt or '')[:160]}",),
        )
    )
    return True


def rule_no_rocm_build(r: Reasoning) -> None:
    """The framework is a build without ROCm (a CUDA or CPU wheel): it never looks for the AMD GPU."""
    obs = r.obs
    if r.machine is not None or r.has("userspace-no-rocm-build", "no-amd-gpu", "host-without-kfd"):
        return
    if not (amd_gpu_named(r) or contains(obs, "rocm", lower=True) or contains(obs, "hipblas", lower=True)):
        return  # a CUDA build on an NVIDIA machine is the right build
    shown = _no_rocm_build_shown(r)
    told = None if shown else _cuda_torch_told(r)
    if told:
        shown = [told]
    pip = None if shown else _rocm_wheel_missing(r)
    if not (shown or pip) and _told_without_rocm(r):
        return
    said = _what_shows_it(shown, pip)
    if said is None:
        return
    message, remedy, evidence = said
    r.findings.append(Finding("userspace-no-rocm-build", E, message, remedy, evidence))


_ROCM_TORCH_REMEDY = (
    "install the ROCm build of torch (and torchvision/torchaudio) from PyTorch's ROCm wheel index for a "
    "version that index has (pip install --index-url <PyTorch's rocmX.Y index> torch==<a version it lists>), "
    'or an image built with it; check with python -c "import torch; print(torch.__version__, '
    'torch.version.hip)" (a ROCm build prints "+rocm..." and a HIP version)'
)


# Builds without ROCm whose own message names them: where every line shown is of one, its message and remedy.
_NAMED_BUILDS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        TRITON_PTXAS,
        "the Triton the program imports is a CUDA build: torch.compile's kernels went to its NVIDIA backend and "
        "NVIDIA's ptxas, which cannot target an AMD GPU (the ROCm PyTorch brings its own Triton, pytorch-triton-rocm); "
        "KFD, /dev/kfd and the groups are not the cause",
        "pip uninstall triton (every copy: pip list | grep -i triton), then reinstall the ROCm torch from PyTorch's "
        "ROCm wheel index, which installs its pytorch-triton-rocm",
    ),
    (
        ORT_NO_ROCM_PROVIDER,
        "the ONNX Runtime installed has no ROCm execution provider (the package index's onnxruntime is a CUDA or CPU "
        "build): the session falls back to another provider and never uses the AMD GPU; KFD, /dev/kfd and the "
        "groups are not the cause",
        "install an ONNX Runtime built with the ROCm (or MIGraphX) provider for the installed ROCm release (AMD's "
        "onnxruntime-rocm wheels, or a build from source with --use_rocm/--use_migraphx), then check "
        "onnxruntime.get_available_providers()",
    ),
)


def _what_shows_it(shown: list[str], pip: str | None) -> tuple[str, str, tuple[str, ...]] | None:
    """The finding's message, remedy and evidence: a CUDA Triton, ONNX Runtime without its ROCm provider, a torch
    without ROCm, or pip without the wheel."""
    evidence = tuple(f"the text: {line[:160]}" for line in shown)
    for pattern, message, remedy in _NAMED_BUILDS:
        if shown and all(pattern.search(line) for line in shown):
            return message, remedy, evidence
    if shown:
        return (
            "the framework the program runs (PyTorch, TensorFlow) is a build without ROCm (a CUDA or CPU wheel: "
            "torch.version.hip None, or CUDA's own libraries asked for): "
            "it has no HIP backend and never looks for the AMD GPU, so the program fails or runs on the CPU; KFD, "
            "/dev/kfd and the groups are not the cause",
            _ROCM_TORCH_REMEDY,
            evidence,
        )
    if pip is not None:
        return (
            "pip found no ROCm build of PyTorch at the version asked for in the ROCm index: the ROCm wheel was not "
            "installed, and an installer that goes on installs the default wheel, a CUDA build that never looks "
            "for an AMD GPU (the program then runs on the CPU)",
            _ROCM_TORCH_REMEDY,
            (f"pip: {pip[:160]}",),
        )
    return None


# --- an override set but never exported -----------------------------------------------------------------------

# "set VAR value" exports nothing: fish's set exports only with -x/--export (-U is universal, not exported;
# fish's builtin set), and a POSIX shell's set assigns positional parameters. fish's set may carry -U/-g/-l
# flags before the name and -x inside any of them ("-Ux", "-gx").
SET_OVERRIDE = re.compile(
    r"(?<![\w-])set\s+(?P<flags>(?:--?[A-Za-z-]+\s+)*)HSA_OVERRIDE_GFX_VERSION\s+['\"]?(?P<value>\d+\.\d+\.\d+)"
)


def _unexported_override(r: Reasoning) -> re.Match[str] | None:
    for line in lines_with(r.obs, "hsa_override_gfx_version"):
        m = SET_OVERRIDE.search(line)
        if m is None:
            continue
        flags = m["flags"].split()
        exported = any(f == "--export" or (not f.startswith("--") and "x" in f) for f in flags)
        if not exported:
            return m
    return None


def rule_override_unexported(r: Reasoning) -> None:
    """HSA_OVERRIDE_GFX_VERSION set with a shell's set and no export: the shell has it, no program it starts does."""
    obs = r.obs
    if r.machine is not None or obs.saw("override") or r.has("env-override-not-applied", "no-amd-gpu"):
        return
    m = _unexported_override(r)
    if m is None:
        return
    value = m["value"]
    r.findings.append(
        Finding(
            "env-override-not-applied",
            W,
            f"HSA_OVERRIDE_GFX_VERSION={value} is set with '{m.group(0).split(' HSA_')[0]}', which does not export it: "
            "the shell sees it (echo prints it) but the programs it starts get no such variable (env does not list "
            "it), so the runtime still treats the GPU as its own target",
            f"export it: in fish set -gx HSA_OVERRIDE_GFX_VERSION {value} (or set -Ux for every session); in bash "
            f"or zsh export HSA_OVERRIDE_GFX_VERSION={value}; check with env | grep HSA_OVERRIDE",
            (f"the text: {m.group(0)}",),
        )
    )


# --- rootless containers: the host's groups are not the container's -----------------------------------------

# Podman's "--group-add keep-groups" (crun) keeps the caller's supplementary groups; a line that offers it as
# the fix ("use keep-groups instead of --group-add render", "swap the group flags for keep-groups") says the
# named groups did not reach /dev/kfd.
KEEP_GROUPS_FIX = re.compile(
    r"keep-groups\b[^\n]*\b(?:instead of|rather than)\b|\b(?:instead of|rather than)\b[^\n]*keep-groups\b"
    r"|\b(?:swap|replace)\w*\b[^\n]*keep-groups\b"
    r"|\b(?:need|needs|must|have to|has to)\s+(?:to\s+)?use\b[^\n]*keep-groups"
    r"|keep-groups\b[^\n]*\bonly (?:form|way|option)\b",
    re.I,
)


def rule_keep_groups_told(r: Reasoning) -> None:
    """The text offers Podman's keep-groups as the fix for a GPU container: the named groups were the container's."""
    obs = r.obs
    if r.machine is not None or r.has("rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu"):
        return
    told = search_lines(KEEP_GROUPS_FIX, obs, "keep-groups")
    if told is None:
        return
    if not any(contains(obs, w, lower=True) for w in ("/dev/kfd", "render", "rocm", "gpu")):
        return  # keep-groups for some other device or file
    rootless_unmapped(r, told, [])


def rule_rootless_no_device(r: Reasoning) -> None:
    """A rootless container (Distrobox, Toolbx) given /dev/kfd whose runtime sees no GPU: the host's render gid
    is not mapped, so the open fails and HIP reports no device."""
    obs = r.obs
    if r.machine is not None or obs.foreign_host is not None or obs.agents or obs.saw("runtime-gpu"):
        return
    if r.has("rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu", "kfd-not-built", "device-node-missing"):
        return
    symptoms = obs.saw("no-device")
    if not symptoms or any(f.severity is E for f in r.findings):
        return  # no symptom, or a cause already found explains it
    rootless = search_lines(ROOTLESS, obs, "rootless", "distrobox", "toolb")
    passed = search_lines(appformats.KFD_PASSED, obs, "/dev/kfd")
    if rootless is None or passed is None:
        return
    rootless_unmapped(r, rootless, [symptoms[0].text, f"the text: {passed.group(0).strip()}"])


# A rootful container told to work where the rootless one does not ("in docker without rootless mode, it works",
# "with rootful podman it works fine", "in a rootful docker there is no issue"): the devices and groups given are
# right, and what the rootless one lacks is the mapping of the host's group that owns /dev/kfd. A negation between
# the two ("rootful doesn't work either") is not this.
ROOTFUL_WORKS = re.compile(
    r"\b(?:rootful|(?:without|non-?|not in)\s*rootless)\b(?P<mid>[^.;\n]{0,60}?)"
    r"(?:\b(?:works?|worked|working|fine|succeeds?)\b|\bno\s+(?:issues?|problems?|errors?)\b)",
    re.I,
)


def rule_rootful_works(r: Reasoning) -> None:
    """The text tells a rootless container failing where a rootful one works, about the GPU: the host's render or
    video gid is not mapped into the rootless one. GPU agents shown elsewhere (the host's rocminfo) do not count
    against it, and findings about the host's accounts stand beside it, as separate causes the text shows."""
    obs = r.obs
    if r.machine is not None or obs.foreign_host is not None:
        return
    if r.has("rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu", "kfd-not-built"):
        return
    rootless = search_lines(ROOTLESS, obs, "rootless")
    if rootless is None:
        return
    told = next(
        (
            m
            for line in lines_with(obs, "root")
            for m in ROOTFUL_WORKS.finditer(line)
            if not re.search(r"\b(?:not|never|neither|nor)\b|n't\b", m["mid"], re.I)
        ),
        None,
    )
    if told is None or not any(contains(obs, w, lower=True) for w in ("/dev/kfd", "rocm", "gpu", "/dev/dri")):
        return
    rootless_unmapped(r, told, [f"the text: {rootless.string.strip()[:160]}"], keep_other_causes=True)


# --- a user added to the group as the fix, told in words ----------------------------------------------------

# "we need to add the ollama user to the render group", "I had to add my user to video": the fix, so the account
# was not in the group; "added myself to the render group" (done, not needed) is a membership and is not this.
ADD_TO_GROUP_FIX = re.compile(
    r"\b(?:need|needs|needed|have|had|has|must)\s+(?:to\s+)?add\s+(?:the\s+|my\s+|our\s+|your\s+|this\s+|that\s+)?"
    r"(?:[\w.-]+\s+)?(?:user\s+|account\s+)?to\s+(?:the\s+|both\s+)?[`'\"]?(?P<group>render|video)[`'\"]?"
    r"(?:\s+(?:and|&)\s+[`'\"]?(?:render|video)[`'\"]?)?\s+groups?\b",
    re.I,
)
# An account told to need the group, or left out of it by its installer: "the ollama user needs to be in the render
# group", "jellyfin must be a member of video", "amdgpu drivers require render group access", "the postinst doesn't
# add the ollama user to the video group", a request or title "Add fahclient to the render group." (the service
# accounts that installers create without supplementary groups). Beside a denial told, it was not a member.
ACCOUNT_NEEDS_GROUP = re.compile(
    r"\b(?:needs?|needed|has|have|had|must|should)\s+(?:to\s+)?(?:be\s+)?(?:(?:a\s+)?member\s+of|in|part\s+of|"
    r"added\s+to)\s+(?:the\s+|both\s+)?[`'\"]?(?P<need>render|video)[`'\"]?(?:\s+(?:and|&)\s+[`'\"]?(?:render|video)"
    r"[`'\"]?)?\s+groups?\b"
    r"|\brequires?\s+(?:the\s+)?[`'\"]?(?P<required>render|video)[`'\"]?\s+group\b"
    r"|\b(?:does|did)(?:n't|\s+not)\s+(?:add|put)\s+(?:\S+\s+){1,3}?(?:to|in|into)\s+(?:the\s+)?[`'\"]?"
    r"(?P<left_out>render|video)[`'\"]?\s+group\b"
    r"|(?:^|[.:!?]\s+)(?:please\s+)?add\s+(?:\S+\s+){1,3}?to\s+(?:the\s+)?[`'\"]?(?P<asked>render|video)[`'\"]?\s+group\b",
    re.I,
)
# A membership claimed in prose: PROSE_IN_GROUP not after a negation or a need ("must be a member of video").
_NOT_CLAIMED = re.compile(r"\b(?:not|need|needs|must|should|has to|have to|had to)\b|n't\b", re.I)
# What the missing membership did, somewhere in the text.
DENIAL_WORDS = ("permission", "denied", "eacces", "access the", "crash", "no gpu", "not detected")


# The command that adds an account to render or video (shadow's usermod -a -G / -aG / --append --groups, gpasswd -a,
# Debian's adduser USER GROUP), and a success told after it.
GROUP_ADD_CMD = re.compile(
    r"\b(?:usermod\s+(?:-a\s+-G|-aG|-Ga|--append\s+--groups|-G)\s*|gpasswd\s+-a\s+\S+\s+|adduser\s+\S+\s+)"
    r"(?P<groups>[\w,]*\b(?:render|video)\b[\w,]*)"
)
# The same told in words: "adding my user to the render and video groups (and logging out) fixed it", "I added
# myself to the render group and rebooted, now it works".
GROUP_ADD_TOLD = re.compile(
    r"\badd(?:ed|ing)?\s+(?:(?:myself|me|us|him|her|them)|(?:(?:my|the|our|your|this|that)\s+)?(?:[\w.$-]+\s+)?"
    r"(?:users?|accounts?))\s+to\s+(?:the\s+|both\s+)?[`'\"]?(?P<groups>(?:render|video)[`'\"]?"
    r"(?:\s*(?:and|&|/|,)\s*[`'\"]?(?:render|video))?)[`'\"]?\s+groups?\b",
    re.I,
)
GROUP_FIX_WORKED = re.compile(
    r"\b(?:it|that|this)\s+(?:really\s+|finally\s+|actually\s+|now\s+)?work(?:ed|s)\b|\bworks now\b"
    r"|\bnow it works\b|\bdid the trick\b|\b(?:fixed|solved|resolved) (?:it|the (?:problem|issue))\b",
    re.I,
)


def _group_add_then_works(r: Reasoning) -> tuple[str, str] | None:
    """A command adding the account to render/video, and the text telling a success within the lines after it."""
    text = r.obs.text
    for cue, pattern in (("usermod", GROUP_ADD_CMD), ("gpasswd", GROUP_ADD_CMD), ("adduser", GROUP_ADD_CMD),
                         ("add", GROUP_ADD_TOLD)):  # fmt: skip
        for line in lines_with(r.obs, cue):
            m = pattern.search(line)
            if m is None or (pattern is GROUP_ADD_TOLD and _NOT_CLAIMED.search(line[: m.start()])):
                continue  # "I don't need to add my user to the render group"
            end = text.find(line) + m.end()  # the success may follow on the same line
            if GROUP_FIX_WORKED.search(text, end, end + 800):
                group = "render" if "render" in m["groups"] else "video"
                return group, m.group(0)
    return None


def rule_prose_group_fix(r: Reasoning) -> None:
    """The text gives adding the account to render (or video) as the fix for the GPU failing: it was not a member."""
    obs = r.obs
    if r.machine is not None or r.has(
        "user-not-in-group", "device-permissions", "rootless-gid-unmapped", "host-without-kfd", "no-amd-gpu"
    ):
        return
    told = search_lines(ADD_TO_GROUP_FIX, obs, "to the", "to both") or search_lines(ACCOUNT_NEEDS_GROUP, obs, " group")
    if told is None or not any(contains(obs, w, lower=True) for w in DENIAL_WORDS):
        worked = _group_add_then_works(r)
        if worked is None:
            return
        _not_in_group_fixed(r, *worked)
        return
    group = next(g for g in told.groupdict().values() if g).lower()
    if obs.user is not None and group in obs.user.groups:
        return  # id shows the account in it already
    if _membership_claimed(r) == group:
        return  # the person says the account is in it: the need told is not what failed
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"the text gives adding the account to '{group}' as the fix (or says the account needs it): it was not in "
            "the group that owns /dev/kfd and /dev/dri/renderD*, so ROCm could not open them",
            f"sudo usermod -aG {group} <account> (render and video where both exist), then restart the service or log "
            "in again; for a service account, add the group where the account is created (its install script or "
            "unit's SupplementaryGroups=)",
            (f"the text: {told.group(0)}",),
        )
    )


def _membership_claimed(r: Reasoning) -> str | None:
    """The group the text says the account is in ("I am in the render group"), not a need or a negation."""
    for line in lines_with(r.obs, " group"):
        for m in appformats.PROSE_IN_GROUP.finditer(line):
            if not _NOT_CLAIMED.search(line[max(0, m.start() - 25) : m.start()]):
                return m["group"].lower()
    return None


def _not_in_group_fixed(r: Reasoning, group: str, command: str) -> None:
    """The account added to the group, and the text telling that this made it work: it was not a member."""
    if r.obs.user is not None and group in r.obs.user.groups:
        return  # id shows the account in it already: the success came from something else
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"the text adds the account to '{group}' and then tells that it works: the account was not in the group "
            "that owns /dev/kfd and /dev/dri/renderD*, so ROCm could not open them until then",
            f"sudo usermod -aG {group} <account> (render and video where both exist), then log in again or reboot "
            "(a running session keeps its old groups); 'id' lists the groups a new session has",
            (f"the text: {command}",),
        )
    )


# --- a ROCm library the loader does not find ------------------------------------------------------------------


def _rocm_library_not_loaded(r: Reasoning) -> tuple[str, re.Match[str]] | None:
    """The first line where the loader could not open a ROCm library, and that library's name on it."""
    for cue in appformats.LIBRARY_NOT_LOADED_CUES:
        for line in lines_with(r.obs, cue):
            lib = appformats.ROCM_LIBRARY.search(line) if appformats.LIBRARY_NOT_LOADED.search(line) else None
            if lib is not None:
                return line.strip(), lib
    return None


def _rocm_symbol_undefined(r: Reasoning) -> tuple[str, str] | None:
    """The first line where the loader found a ROCm API symbol missing, and the symbol."""
    for line in lines_with(r.obs, "undefined symbol"):
        m = appformats.ROCM_SYMBOL_UNDEFINED.search(line)
        if m is not None:
            return line.strip(), m["symbol"]
    return None


def _rocm_file_missing_for_cmake(r: Reasoning) -> tuple[str, str] | None:
    """CMake's imported target naming a ROCm library file that does not exist (the path may stand on the lines
    between "references the file" and CMake's verdict), and that file's name."""
    lines = r.obs.lines
    for line in lines_with(r.obs, appformats.CMAKE_FILE_MISSING):
        at = line_number(lines, line)
        for candidate in [*lines[max(0, at - 3) : max(0, at - 1)], line]:
            lib = appformats.ROCM_LIBRARY.search(candidate)
            if lib is not None:
                return candidate.strip(), lib.group(0)
    return None


def rule_library_missing(r: Reasoning) -> None:
    """A ROCm library the program loads is not found by the dynamic loader: another ROCm release than the program
    was built for, or ROCm's lib directory off the loader's path. Below the GPU and KFD, which it never reached."""
    if r.machine is not None or r.has("userspace-library-missing", "no-amd-gpu", "host-without-kfd"):
        return
    found = _rocm_library_not_loaded(r)
    if found is None:
        if not (_configure_library_missing(r) or _ollama_rocm_missing(r)):
            _rocm_build_mismatch(r)
        return
    line, lib = found
    name = lib.group(0)
    release = f" (its soname asks for ROCm {lib['major']}.x)" if lib["major"] and name.startswith("libamdhip64") else ""
    r.findings.append(
        Finding(
            "userspace-library-missing",
            E,
            f"the program cannot load {name}{release}: the dynamic loader does not find it, because the ROCm installed "
            "is another release than the program was built for, or ROCm's lib directory is not on the loader's path; "
            "the program never reaches the GPU, and KFD and permissions are not the cause",
            f"ls /opt/rocm*/lib/{name.split('.so')[0]}.so* shows which release is installed: install the ROCm release "
            "the program was built for (or a build of the program for the installed one); where the file is there, "
            "put its directory on the loader's path (a line in /etc/ld.so.conf.d/rocm.conf, then sudo ldconfig; "
            "LD_LIBRARY_PATH for one shell)",
            (f"the text: {line[:160]}",),
        )
    )


def _ollama_rocm_missing(r: Reasoning) -> bool:
    """ollama finding an AMD GPU and no ROCm libraries to drive it (its ROCm bundle not installed beside it, or, before
    ollama bundled one, no ROCm where it looked): adds the finding and says whether it did."""
    said = r.obs.saw("no-library")
    if not said or r.obs.saw("runtime-gpu"):
        return False  # none, or ollama went on to use a GPU with libraries it did find
    r.findings.append(
        Finding(
            "userspace-library-missing",
            E,
            "ollama found the AMD GPU but no ROCm libraries it can use, so it runs on the CPU: its ROCm bundle "
            "(lib/ollama/rocm, a separate archive for manual installs) is not installed beside it, or, for ollama "
            "before it bundled ROCm, no ROCm release it supports is where it looks; the GPU, KFD and permissions "
            "are not the cause",
            "install ollama with its ROCm bundle (the install script does it on a machine with an AMD GPU; a manual "
            "install extracts the -rocm archive over the same directory), or for old releases ROCm 6 in /opt/rocm",
            (f"{said[0].source}: {said[0].text}",),
        )
    )
    return True


def _configure_library_missing(r: Reasoning) -> bool:
    """A source build's ROCm configure step (TensorFlow, XLA) not finding a ROCm library: adds the finding and says
    whether it did."""
    m = search_lines(appformats.BAZEL_ROCM_LIBRARY_MISSING, r.obs, "cannot find rocm library")
    if m is None:
        return False
    r.findings.append(
        Finding(
            "userspace-library-missing",
            E,
            f"the build's ROCm configure step cannot find the ROCm library {m['lib']}: the ROCm it was pointed at is "
            "another release than the source expects (a library renamed or dropped, as hip_hcc became amdhip64), "
            "or the package that holds it is not installed; the GPU, KFD and permissions play no part",
            "build a source release made for the installed ROCm (or install the ROCm release it names), install the "
            "package that holds the library, and check ROCM_PATH points at that installation",
            (f"the text: {m.group(0)[:160]}",),
        )
    )
    return True


def _rocm_build_mismatch(r: Reasoning) -> None:
    """A ROCm API symbol the loader does not find, or a ROCm library file ROCm's own CMake files name and the
    installation lacks: the program (or the package's build files) and the installed ROCm are of other releases."""
    symbol = _rocm_symbol_undefined(r)
    cmake = None if symbol else _rocm_file_missing_for_cmake(r)
    if symbol is not None:
        line, name = symbol
        message = (
            f"the installed ROCm has no {name}, which the program was built against: the program (a wheel, a binary) "
            "was built for another ROCm release, and loading it fails before it reaches the GPU; KFD and permissions "
            "are not the cause"
        )
        remedy = "install the program's build for the installed ROCm release (or the ROCm release it was built for)"
    elif cmake is not None:
        line, name = cmake
        message = (
            f"ROCm's CMake files name {name}, which the installation does not have: the package's build files and "
            "its libraries are of different builds, so every CMake build of a HIP program fails; the GPU, KFD and "
            "permissions are not the cause"
        )
        remedy = (
            "install the ROCm release whose CMake files match its libraries (or, as a workaround, point the "
            "imported target at the library file the installation has: ls /opt/rocm/lib)"
        )
    else:
        return
    r.findings.append(Finding("userspace-library-missing", E, message, remedy, (f"the text: {line[:160]}",)))


# ROCm's lib directory put on the dynamic loader's path: in LD_LIBRARY_PATH, or in a file of /etc/ld.so.conf.d
# (with ldconfig), as the commands and prose write it ("/opt/rocm/lib", "/opt/rocm-6.2.0/lib", "/opt/rocm/lib64").
# A component's own lib directory counts too ("/opt/rocm/rocblas/lib", ROCm 4.x's layout).
_ROCM_LIB = r"/opt/rocm[-\d.]*(?:/\w+)?/lib(?:64)?\b"
LIBRARY_PATH_SET = re.compile(
    rf"LD_LIBRARY_PATH\s*=\s*[\"']?[^\s\"']*?{_ROCM_LIB}"
    rf"|{_ROCM_LIB}[^\n]{{0,60}}?(?:ld\.so\.conf|ldconfig)"
    rf"|(?:ld\.so\.conf|ldconfig)[^\n]{{0,60}}?{_ROCM_LIB}",
    re.I,
)


def rule_library_path_told(r: Reasoning) -> None:
    """ROCm's lib directory put on the loader's path, and the text says that fixed it: the program had loaded
    another copy of a ROCm library, or none (ROCm#1165: TensorFlow created the GPU device, then segfaulted at its
    first use, until LD_LIBRARY_PATH=/opt/rocm/lib). The same cause as a library the loader does not find, told
    by its cure."""
    if r.machine is not None or r.has("userspace-library-missing", "no-amd-gpu", "host-without-kfd"):
        return
    told = fix_told(r, LIBRARY_PATH_SET, ("/opt/rocm",), after=4, before=3)
    if told is None:
        return
    _set, line, success = told
    r.findings.append(
        Finding(
            "userspace-library-missing",
            W,
            "the text says putting ROCm's lib directory on the loader's path fixed it: the program had not found "
            "ROCm's libraries there (it loaded another copy, or none), so it failed above the GPU and KFD",
            "make it lasting for every program: a line with the directory in /etc/ld.so.conf.d/rocm.conf, then "
            "sudo ldconfig (LD_LIBRARY_PATH only reaches the shells and services that set it)",
            (f"the text: {line}", f"the text: {success}"),
        )
    )


# OpenCL's ICD loader found no platform: clinfo's "clGetPlatformIDs(-1001)", the code's name, and clinfo's own
# count (Khronos' OpenCL-ICD-Loader and ocl-icd return CL_PLATFORM_NOT_FOUND_KHR, -1001, when no vendor loaded).
OPENCL_NO_PLATFORM = re.compile(
    r"clGetPlatformIDs\s*\(\s*-1001\s*\)|\bCL_PLATFORM_NOT_FOUND_KHR\b|^\s*Number of platforms\s+0\s*$", re.M
)


# clinfo's count of platforms above zero: an OpenCL runtime is installed and registered.
PLATFORM_FOUND = re.compile(r"^\s*Number of platforms:?\s+[1-9]", re.M)
# Root told apart from the user ("unless I run it as root", "works with sudo"): access is then in question.
AS_ROOT = re.compile(r"\b(?:as|with|under|using)\s+(?:root|sudo)\b", re.I)


def _kfd_open_to_user(r: Reasoning) -> str | None:
    """Where the text shows /dev/kfd open to the user who runs the program: readable and writable by others, or
    the user in its group. None where it does not show that."""
    node, user = r.obs.kfd, r.obs.user
    if node is None or node.mode is None:
        return None
    if node.mode[7:9] == "rw":
        return f"{node.source}: /dev/kfd is {node.mode}"
    if user is not None and node.group in user.groups and mode_allows_group(node.mode):
        return f"{user.source}: the user is in {node.group}, which owns /dev/kfd ({node.mode})"
    return None


def _access_not_the_cause(r: Reasoning) -> str | None:
    """Where the text shows that the GPU's device nodes are not what fails: /dev/kfd open to the user, a GPU agent
    rocminfo listed (the runtime opened /dev/kfd), or the same OpenCL failure printed again under sudo."""
    shown = _kfd_open_to_user(r)
    if shown is not None:
        return shown
    if r.obs.agents:
        agent = r.obs.agents[0]
        return f"{agent.source}: rocminfo lists a GPU agent ({agent.gfx}): the runtime opened /dev/kfd"
    lines = r.obs.lines
    for line in lines_with(r.obs, "sudo"):
        if "clinfo" not in line:
            continue
        at = line_number(lines, line)
        after = next((x for x in lines[at : at + 2] if x.strip()), "") if at else ""
        if OPENCL_NO_PLATFORM.search(after):
            return f"the text: {line.strip()[:80]} -> {after.strip()}"
    return None


def _opencl_no_platform(r: Reasoning) -> tuple[str, int] | None:
    """The first line where OpenCL's ICD loader found no platform, and its line number."""
    said = search_lines(OPENCL_NO_PLATFORM, r.obs, "-1001", "platform_not_found", "number of platforms")
    if said is not None:
        return said.group(0).strip(), line_number(r.obs.lines, said.string)
    formats = r.obs.saw("opencl-no-platform")  # ffmpeg's, John the Ripper's, darktable's wording
    return (formats[0].text, formats[0].source.line) if formats else None


def rule_opencl_no_platform(r: Reasoning) -> None:
    """OpenCL's ICD loader finds no platform: no vendor library loaded. Where /dev/kfd is shown open to the user
    (ROCm#1303: a stale OCL_ICD_VENDORS in .bashrc, so clinfo failed as the user and worked as root), access is not
    the cause; where nothing shows access failing either, the likeliest cause is the runtime or the loader not
    installed (ROCm 6.3 stopped shipping libOpenCL.so; Jellyfin 10.8 left the runtime to the user). A runtime that
    lists the GPU before the failure speaks of another program; one after it is the fix."""
    if r.machine is not None or r.has(
        "userspace-library-missing", "user-not-in-group", "device-permissions", "no-amd-gpu", "host-without-kfd",
        "device-node-missing", "rootless-gid-unmapped", "kfd-not-built", "module-not-loaded", "kfd-no-gpu-node",
        "mac-policy-denies",
    ):  # fmt: skip
        return
    said = _opencl_no_platform(r)
    if said is None:
        return
    text, at = said
    if any(m.source.line < at for m in r.obs.saw("runtime-gpu")):
        return
    access = _access_not_the_cause(r)
    if access is None and (
        search_lines(PLATFORM_FOUND, r.obs, "number of platforms") or search_lines(AS_ROOT, r.obs, " root", " sudo")
    ):
        return  # a platform found under sudo, or root told apart: the runtime is there, and access may be what fails
    if access is not None:
        message = (
            "OpenCL's ICD loader found no platform (-1001) although /dev/kfd is open to the user: no vendor library "
            "loaded, because no .icd file names one where the loader looks, OCL_ICD_VENDORS points elsewhere, or the "
            "library it names does not load; the GPU and KFD are not the cause"
        )
    else:
        message = (
            "OpenCL's ICD loader found no platform (-1001): no OpenCL runtime is installed and registered "
            "(/etc/OpenCL/vendors/amdocl64*.icd), or the program loads no libOpenCL.so (ROCm 6.3 and later ship the "
            "loader separately) or one that does not see ROCm's; nothing in the text shows the GPU or /dev/kfd "
            "failing (ROCm's OpenCL also leaves its platform out when it can open no GPU: 'ls -l /dev/kfd' and 'id' "
            "tell)"
        )
    r.findings.append(
        Finding(
            "userspace-library-missing",
            W,
            message,
            "install ROCm's OpenCL runtime (rocm-opencl-runtime, or the distribution's rocm-opencl-icd) and an ICD "
            "loader (ocl-icd-libopencl1 / ocl-icd); ls /etc/OpenCL/vendors (ROCm's amdocl64*.icd belongs there); "
            "compare 'env | grep -E \"OCL_ICD|LD_LIBRARY\"' as the user and as root, and unset what points elsewhere",
            (f"the text: {text[:160]}",) + ((access,) if access else ()),
        )
    )


# --- a mandatory access control policy that denies the device nodes ----------------------------------------

# SELinux's denial as the kernel audits it (security/selinux/avc.c: "avc:  %s " "denied", the permissions in
# braces, then " for ", the task's "pid=%d comm=" and the object's "name=" or "path=", then "scontext=%s
# tcontext=%s tclass=%s"): journald and ausearch print it, dmesg too where auditd is not running. Fedora labels
# /dev/kfd hsa_device_t, so a denial names the node by its label even where the audit record holds no name.
SELINUX_KFD_DENIAL = re.compile(
    r"\bavc:\s+denied\s+\{(?P<perms>[^}]*)\}[^\n]*?(?:\bname=\"?kfd\b|\bpath=\"?/dev/kfd\b|:hsa_device_t:)"
)
SCONTEXT = re.compile(r"\bscontext=(\S+)")
# AppArmor's (security/apparmor/lib.c, audit.c): apparmor="DENIED" operation="open" ... profile="%s"
# name="/dev/kfd" ... requested_mask="wr" denied_mask="wr".
APPARMOR_KFD_DENIAL = re.compile(
    r"\bapparmor=\"DENIED\"[^\n]*?\bprofile=\"(?P<profile>[^\"]+)\"[^\n]*?\bname=\"/dev/(?:kfd|dri/renderD\d+)\"",
)
# The container domains of container-selinux (container_t, spc_t is unconfined) and the confined ones of
# Podman's and Docker's own labels.
CONTAINER_DOMAIN = re.compile(r":(?:container|svirt_lxc_net|svirt_sandbox_file|container_init)_t:")


def _mac_denial(r: Reasoning) -> tuple[str, re.Match[str]] | None:
    """The first denial of /dev/kfd (or a render node) by SELinux or AppArmor the text shows."""
    m = search_lines(SELINUX_KFD_DENIAL, r.obs, "avc:")
    if m is not None:
        return "selinux", m
    m = search_lines(APPARMOR_KFD_DENIAL, r.obs, 'apparmor="denied"')
    return ("apparmor", m) if m is not None else None


def rule_mac_denies_kfd(r: Reasoning) -> None:
    """SELinux or AppArmor denies the program /dev/kfd: the node's mode and the user's groups are not the cause,
    and no usermod or udev rule helps."""
    if r.machine is not None or r.has("mac-policy-denies", "host-without-kfd", "device-node-missing"):
        return
    found = _mac_denial(r)
    if found is None:
        return
    kind, m = found
    if kind == "selinux":
        source = SCONTEXT.search(m.string)  # the denied task's domain, later on the same line
        contained = bool(source and CONTAINER_DOMAIN.search(source.group(1))) or r.obs.first("container") is not None
        message = (
            f"SELinux denies the program {{{m['perms'].strip()}}} on /dev/kfd: its policy, not the node's mode or "
            "the user's groups, stops ROCm (which opens and maps the node)"
        )
        remedy = (
            "in a container: allow containers the device (sudo setsebool -P container_use_devices on, container-"
            "selinux's boolean), or run it with --security-opt label=disable; on the host: check the node's label "
            "(ls -Z /dev/kfd shows hsa_device_t, restorecon -v /dev/kfd restores it) and the denials (sudo ausearch "
            "-m avc -ts recent)"
            if contained
            else "check the node's label (ls -Z /dev/kfd: hsa_device_t; restorecon -v /dev/kfd restores it) and the "
            "denials (sudo ausearch -m avc -ts recent); in a container, sudo setsebool -P container_use_devices on "
            "or --security-opt label=disable"
        )
    else:
        message = (
            f"AppArmor's profile '{m['profile']}' denies the program a GPU device node: the confinement, not the "
            "node's mode or the user's groups, stops ROCm"
        )
        remedy = (
            "allow the node in that profile (/dev/kfd rw, and /dev/dri/renderD* rw) or run the program unconfined; "
            "for a snap, connect the interface that grants the GPU (snap connections <snap>); the denials are in "
            "the journal (journalctl -k | grep DENIED)"
        )
    r.findings.append(Finding("mac-policy-denies", E, message, remedy, (f"the text: {m.group(0)[:200]}",)))


# --- ROCr refusing a GPU because the kernel's KFD is older than it needs ---------------------------------------


def rule_kfd_interface_old(r: Reasoning) -> None:
    """ROCr said it disabled a GPU because the kernel's KFD interface is too old ('Incompatible kernel and
    userspace, <GPU> disabled. Upgrade amdgpu.'): the kernel driver is the cause, not the GPU or the build."""
    obs = r.obs
    if r.machine is not None or r.has("kernel-too-old", "host-without-kfd"):
        return
    seen = obs.saw("kfd-interface-old")
    if not seen:
        return
    gpu = seen[0].value("gpu") or "the GPU"
    r.findings.append(
        Finding(
            "kernel-too-old",
            E,
            f"ROCm's runtime disabled {gpu} because the running kernel's KFD is older than this ROCm release needs "
            "for it (ROCr turns a gfx906 off on a KFD interface before 1.4, which cannot report the board's SRAM ECC "
            "mode); the GPU is supported and KFD did add it",
            "boot a kernel whose amdgpu is new enough for this ROCm, or build this release's amdgpu-dkms for the "
            "running kernel (dkms status must say 'installed'); otherwise use a ROCm release older than 4.1 with "
            "this kernel",
            (seen[0].text,),
        )
    )
    # rocminfo without GPU agents is this refusal, not a missing KFD node.
    r.findings[:] = [f for f in r.findings if f.code != "kfd-no-gpu-node"]


# --- KFD's "added device" quoted in prose ------------------------------------------------------------------------

# kfd_device.c kgd2kfd_device_init(): dev_info(kfd_device, "added device %x:%x\n"), printed with KFD's device prefix
# ("kfd kfd: amdgpu: added device 1002:74b5" in 6.x, "kfd kfd: added device 1002:67df" before). A report quotes it
# inside a sentence or a list ("- `kfd kfd: added device 1002:74b5` (x8)"), where the log reader, which reads a line
# as a whole message, does not see it. Only the prefixed form: "added device" alone is too common a phrase.
QUOTED_KFD_ADDED = re.compile(
    r"(?P<before>[^\n]{0,60}?)\bkfd kfd: (?:amdgpu: )?added device (?P<vendor>[0-9a-f]{4}):(?P<device>[0-9a-f]{4})\b",
    re.I,
)
NEGATED = re.compile(r"\b(?:no|not|never|without|missing|instead of|lacks?)\b|n't\b", re.I)


def rule_quoted_kfd_added(r: Reasoning) -> None:
    """The text quotes KFD's 'added device' line for a GPU: KFD initialised it, whatever fails above."""
    obs = r.obs
    if r.machine is not None or r.has("kfd-ready", "host-without-kfd", "no-amd-gpu"):
        return
    told = search_lines(QUOTED_KFD_ADDED, obs, "kfd kfd: ")
    if told is None or NEGATED.search(told["before"]) or told["vendor"].lower() != "1002":
        return
    r.findings.append(
        Finding(
            "kfd-ready",
            Severity.INFO,
            f"the text quotes KFD adding the GPU 1002:{told['device'].lower()} ('added device'): amdgpu and KFD "
            "initialised it, so a failure after that lies in userspace, access or the program",
            "",
            (f"the text: {told.group(0)[len(told['before']) :]}",),
        )
    )


# --- a container without the GPUs' render nodes, told in words ---------------------------------------------------

# The runtime opens /dev/dri/renderD<drm_render_minor> of every GPU KFD lists (libhsakmt's fmm.c, to map the GPU's
# memory; "Failed to open /dev/dri/renderD129" when it cannot), so a container given /dev/kfd and only
# /dev/dri/card* sees no GPU. Prose names the
# nodes and says they are needed, missing or not passed: "the /dev/dri/render* devices are needed in addition to
# /dev/dri/card*", "renderD128 was not bound into the container", "without the render nodes".
RENDER_NODES_LEFT_OUT = re.compile(
    r"(?:/dev/dri/)?render(?:D\d+|D?\*|\s+nodes?)`?'?\"?(?:\s+(?:devices?|nodes?))?\s+(?:(?:are|is|were|was)\s+)?"
    r"(?:needed|required|missing|absent|not\s+(?:bound|passed|mounted|present|there|available|included|exposed))\b"
    r"|\b(?:without|missing|lacks?|no)\s+(?:the\s+)?`?(?:/dev/dri/)?render(?:D\d+|D?\*|\s+nodes?)",
    re.I,
)


def rule_container_render_nodes_missing(r: Reasoning) -> None:
    """The text says a container lacks (or needs) the GPUs' /dev/dri/renderD* nodes: ROCm there sees no GPU."""
    from kfdguard.assess.report_rules import CONTAINER_WORD

    obs = r.obs
    if r.machine is not None or r.has("device-node-missing", "host-without-kfd", "kfd-not-built", "no-amd-gpu"):
        return
    told = search_lines(RENDER_NODES_LEFT_OUT, obs, "render")
    if told is None or not (obs.first("container") or CONTAINER_WORD.search(obs.text)):
        _privileged_fixed(r)
        return
    r.findings.append(
        Finding(
            "device-node-missing",
            E,
            "the text says the container lacks the GPUs' render nodes (/dev/dri/renderD*): ROCm opens the render "
            "node of every GPU besides /dev/kfd, so with /dev/kfd and /dev/dri/card* alone it finds no GPU",
            "pass the render nodes in as well: docker/podman run --device=/dev/kfd --device=/dev/dri (the whole "
            "directory); Singularity/Apptainer --rocm (with --contain, a release that binds /dev/dri/renderD*, or "
            "--bind /dev/dri); check on the host that /dev/dri/renderD* exist",
            (f"the text: {told.group(0)}",),
        )
    )


# --privileged told as what made a container work that was given /dev/kfd: a privileged container gets every device
# node of the host, so the one the container lacked is the GPUs' render nodes (/dev/dri/renderD*), which ROCm opens
# besides /dev/kfd (ROCm-docker's documented command passes --device=/dev/dri for this). Not where /dev/dri was passed
# in the run before the fix, where SELinux or AppArmor is named (--privileged also drops their labels), or in a
# rootless container (--privileged passes nothing the user cannot open).
PRIVILEGED = re.compile(r"(?<![\w-])(?:--privileged\b|privileged\s+(?:mode|containers?|docker)\b)", re.I)
PRIVILEGED_WORKS = re.compile(
    r"\bworks?\b|\bworked\b|\bworking\b|\bfixe[sd]\b|\bsolve[sd]\b|\b(?:gets?|got|makes?|made)\s+it\s+(?:to\s+)?work\b"
    r"|\bdid the trick\b",
    re.I,
)
_NEGATED = re.compile(r"\b(?:not|never|no longer|nothing|neither)\b|n't\b", re.I)
DRI_PASSED = re.compile(
    r"--device[= ]\s*[\"']?/dev/dri\b|(?:(?<![\w-])-v|--volume)[= ]\s*/dev/dri\b|^\s*-\s*[\"']?/dev/dri\b"
)
MAC_WORDS = ("selinux", "avc:", "apparmor", "label=disable", "label:disable")


def _privileged_success(lines: list[str], at: int, found: re.Match[str]) -> str | None:
    """The success told of --privileged on its line (after it, then before it) or on the four lines below."""
    line = lines[at]
    for told in [line[found.end() :], line[: found.start()], *lines[at + 1 : at + 5]]:
        works = PRIVILEGED_WORKS.search(told)
        if _NEGATED.search(told[: works.start()] if works else told):
            return None
        if works:
            return told.strip()[:160]
    return None


def _privileged_fixed(r: Reasoning) -> None:
    obs = r.obs
    if r.has("user-not-in-group", "device-permissions", "rootless-gid-unmapped") or not contains(obs, "privileged"):
        return
    if any(contains(obs, w, lower=True) for w in MAC_WORDS) or search_lines(ROOTLESS, obs, "rootless", "distrobox"):
        return
    if search_lines(appformats.KFD_PASSED, obs, "/dev/kfd") is None:
        return  # /dev/kfd not passed as a device: what --privileged gave may be /dev/kfd itself
    lines = obs.lines
    for at, line in enumerate(lines):
        found = PRIVILEGED.search(line) if "privileged" in line.lower() else None
        success = _privileged_success(lines, at, found) if found else None
        if found is None or success is None:
            continue
        if any(DRI_PASSED.search(x) and not PRIVILEGED.search(x) for x in lines[:at]):
            return  # the run that failed had the render nodes: --privileged gave it something else
        r.findings.append(
            Finding(
                "device-node-missing",
                E,
                "the text tells --privileged as what made the container work, which was given /dev/kfd as a device: "
                "a privileged container gets every device node of the host, so what it lacked is the GPUs' render "
                "nodes (/dev/dri/renderD*), which ROCm opens besides /dev/kfd",
                "pass the render nodes instead of --privileged: docker/podman run --device=/dev/kfd --device=/dev/dri "
                "(or each /dev/dri/renderD* the host has) with --group-add video --group-add render",
                (f"the text: {line.strip()[:160]}", f"the text: {success}"),
            )
        )
        return


# --- KFD locked after a GPU left, told in words ------------------------------------------------------------------

# kfd_chardev.c kfd_open(): while kfd_is_locked() (raised when a GPU is removed, unbound or reset and not
# recovered) every open returns -EINVAL, for every user and GPU. Prose says it as EINVAL/"Invalid argument" on a
# line about kfd, or as /dev/kfd "locked"/"blocked" beside a GPU that left (hot-unplug, vfio, unbind).
# "cat: /dev/kfd: Invalid argument" is read(2) on an open that succeeded, the sign that access works, and not this.
KFD_EINVAL_TOLD = re.compile(
    r"^(?!\s*cat:)(?:(?!cat /dev/kfd).)*?(?:\bkfd\b[^\n]{0,80}?(?:invalid argument|\beinval\b)"
    r"|(?:invalid argument|\beinval\b)[^\n]{0,80}?\bkfd\b)",
    re.I,
)
KFD_LOCKED_TOLD = re.compile(
    r"/dev/kfd\b[`'\"]?\s+(?:is|was|gets?|got|becomes?|became|stays?)\s+(?:\w+\s+)?(?:locked|blocked)\b"
    r"|\b(?:locked|blocked)\s+/dev/kfd\b",
    re.I,
)
GPU_LEFT = re.compile(
    r"\b(?:hot[- ]?unplug\w*|unplug\w*|disconnect\w*|vfio(?:-pci)?|unbind\w*|unbound|passthrough|pass(?:ed|ing)? "
    r"(?:it |the (?:e?gpu|card) )?(?:through|to (?:a |the )?vm))\b",
    re.I,
)


def rule_prose_kfd_locked(r: Reasoning) -> None:
    """The text says opening /dev/kfd fails with EINVAL, or that /dev/kfd is locked after a GPU left: KFD refuses
    every open until amdgpu is reloaded; permissions are not the cause."""
    obs = r.obs
    if r.machine is not None or r.has("kfd-open-einval", "host-without-kfd", "no-amd-gpu", "kfd-not-built"):
        return
    told = search_lines(KFD_EINVAL_TOLD, obs, "invalid argument", "einval")
    evidence: tuple[str, ...]
    if told is None:
        locked = search_lines(KFD_LOCKED_TOLD, obs, "locked", "blocked")
        left = search_lines(GPU_LEFT, obs, "plug", "vfio", "unbind", "unbound", "connect", "pass")
        if locked is None or left is None:
            return
        evidence = (f"the text: {locked.group(0)}", f"the text: {left.group(0)}")
    else:
        evidence = (f"the text: {told.group(0).strip()[-120:]}",)
    # the permission findings a locked KFD produces through its symptoms are not the cause
    r.findings[:] = [f for f in r.findings if f.code not in ("device-permissions", "user-not-in-group")]
    r.findings.append(
        Finding(
            "kfd-open-einval",
            E,
            "the text says /dev/kfd refuses opens with EINVAL (or is locked) after a GPU left the system: KFD locks "
            "itself when a GPU is removed, unbound or handed to vfio-pci and stays so for every GPU and user",
            "reload amdgpu (sudo modprobe -r amdgpu && sudo modprobe amdgpu, which drops every GPU's display) or "
            "reboot; to pass a GPU to a VM without this, bind it to vfio-pci at boot instead of unbinding it from "
            "amdgpu at run time; do not change permissions",
            evidence,
        )
    )
