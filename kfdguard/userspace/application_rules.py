"""Which backend each application takes on each AMD GPU, by its own rules: pure.

"My gfx is not supported — what do I do?" has an answer per application. The
inputs are the stack verdicts (userspace/assess.py: does the application's
ROCm build carry the GPU's code), each GPU's Vulkan verdict
(userspace/vulkan_rules.py) and the application's environment (its unit's
``Environment=``). The rules are the applications' own, with the source each
was read from:

**ollama** (ollama/ollama; every rule for Linux):

- The backends are the directories of its library directory with a
  ``*ggml-*`` file; ``OLLAMA_LLM_LIBRARY`` keeps the one it names
  (discover/runner.go, ``GPUDevices``).
- ROCm: a GPU whose gfx (after ``HSA_OVERRIDE_GFX_VERSION``) has no code in the
  bundled rocBLAS is dropped: from 0.30.0 by the names
  ``rocblas/library/TensileLibrary_lazy_<gfx>.dat`` (discover/amd.go,
  ``filterUnsupportedROCmDevices``); 0.12.4-0.29 by a deep initialisation that
  fails there (ml/device.go, ``GGML_CUDA_INIT``). kfdguard reads the same files.
- Vulkan: the ``vulkan`` backend exists from 0.12.11. Until 0.30.0 it is
  "experimental" and used only with ``OLLAMA_VULKAN`` true
  (envconfig ``Bool``: off by default); from 0.30.0 it is on unless
  ``OLLAMA_VULKAN`` is false (``BoolWithDefault``, an unparsable value is true).
- Integrated GPUs, from 0.30.0: dropped unless ``OLLAMA_IGPU_ENABLE`` is true
  (``filterIntegratedGPUs``); set false, none is taken. Without it, from 0.30.1
  a ROCm gfx1151 (Radeon 8060S) is taken by default
  (``defaultIntegratedROCmGFXTargets``, ollama 4c076813b). Before 0.30.0 no such filter.
- A version the binary does not say: the layout tells the era. Backend
  directories with ggml libraries are 0.12.4 or later (the newest rules known
  here are used); without them, the discovery of ollama before 0.12.4
  (discover/amd_linux.go at v0.12.3): the bundle's rocBLAS list unless
  ``HSA_OVERRIDE_GFX_VERSION`` is set, a GPU with under 1 GiB of VRAM skipped as
  an iGPU (``IGPUMemLimit``), no Vulkan. The verdict says which was assumed.

**llama.cpp**: the HIP backend (``libggml-hip.so``) runs where its offload
bundles have the GPU's code; else the Vulkan backend (``libggml-vulkan.so``,
``-DGGML_VULKAN=ON``) runs where Vulkan is ready; else the CPU.

**PyTorch**, **TheRock's ROCm** (pip) and a **ROCm tree** (/opt/rocm*, classic or
a TheRock tarball with kernel packs): ROCm only; where the stack has no code
for the GPU, the CPU.
"""

from __future__ import annotations

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kfdguard.facts import Application, EnvSetting, SoftwareFacts, Stack
    from kfdguard.userspace.rows import Row
    from kfdguard.userspace.vulkan_rules import VulkanGpu

RUNS = ("runs", "runs-generic", "override")
# ollama versions whose rules differ (see above).
RUNNERS_SINCE = (0, 12, 4)
OLD_ERA = (0, 12, 3)
IGPU_MEM_LIMIT = 1 << 30  # discover/gpu.go IGPUMemLimit before 0.12.4: "anything less than 1G must be iGPU"
VULKAN_SINCE = (0, 12, 11)
VULKAN_DEFAULT_SINCE = (0, 30, 0)
IGPU_GFX1151_SINCE = (0, 30, 1)
NEWEST_KNOWN = (0, 32, 15)
TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
FALSE = ("0", "f", "F", "FALSE", "false", "False")
DROP_IN = "systemctl edit ollama.service: [Service] Environment="


@dataclass(frozen=True, slots=True)
class GpuInfo:
    slot: str
    name: str
    gfx: str | None
    integrated: bool | None
    vram: int | None = None  # bytes: mem_info_vram_total (an APU's carve-out)


@dataclass(frozen=True, slots=True)
class AppVerdict:
    application: str  # its name ("ollama 0.30.1", "PyTorch 2.9.0+rocm7.0")
    kind: str
    slot: str
    via: str  # "ROCm", "Vulkan" or "CPU"
    detail: str
    remedy: str = ""
    cites: tuple[str, ...] = ()  # the files the verdict rests on
    # The part of the remedy that is an environment value of the application's systemd service
    # (ollama.service): what ``kfdguard remedy apply`` writes as a drop-in (kfdguard/userspace/dropin.py).
    environment: tuple[tuple[str, str], ...] = ()


def _version(text: str | None) -> tuple[int, int, int] | None:
    parts = (text or "").split("-", 1)[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:3]):
        return None
    nums = [int(p) for p in parts[:3]] + [0] * (3 - len(parts[:3]))
    return nums[0], nums[1], nums[2]


def _bool(value: str | None, default: bool) -> bool:
    """envconfig.BoolWithDefault: unset or empty is the default; unparsable is true."""
    if not value:
        return default
    return value not in FALSE


def _ollama_env(env: Sequence[EnvSetting]) -> dict[str, str]:
    return {e.name: e.value for e in env if e.unit is not None and e.unit.startswith("ollama")}


class _Ollama:
    def __init__(self, app: Application, stack: Stack | None, rows: Sequence[Row], env: dict[str, str]) -> None:
        self.app = app
        self.stack = stack
        self.rows = rows
        self.env = env
        known = _version(app.version)
        # No version: the layout tells the era. Backend directories with ggml libraries are 0.12.4's
        # runners and later (the newest rules known here); without them, the ROCm libraries of the bundle
        # are read by the discovery of ollama before 0.12.4 (discover/amd_linux.go).
        self.era = "" if known else ("0.32" if app.backends else "before 0.12.4")
        self.version = known or (NEWEST_KNOWN if app.backends else OLD_ERA)
        wanted = env.get("OLLAMA_LLM_LIBRARY", "")
        self.backends = [b for b in app.backends if not wanted or b == wanted]
        if self.version < RUNNERS_SINCE and stack is not None:
            self.backends.append("rocm")  # the bundle's ROCm libraries, found by their file names then

    def has(self, prefix: str) -> bool:
        return any(b.startswith(prefix) if prefix == "rocm" else prefix in b for b in self.backends)

    def igpu(self, gpu: GpuInfo, library: str) -> str | None:
        """Why the integrated-GPU filter drops the GPU on this backend; None when it does not."""
        if self.version < RUNNERS_SINCE:
            if gpu.vram is not None and gpu.vram < IGPU_MEM_LIMIT:
                return (
                    f"ollama before 0.12.4 skips a GPU with less than 1 GiB of VRAM ({gpu.vram >> 20} MiB) as an iGPU"
                )
            return None
        if self.version < VULKAN_DEFAULT_SINCE or not gpu.integrated:
            return None
        setting = self.env.get("OLLAMA_IGPU_ENABLE", "")
        if setting:
            return None if _bool(setting, True) else f"OLLAMA_IGPU_ENABLE={setting} keeps integrated GPUs out"
        if library == "ROCm" and gpu.gfx == "gfx1151" and self.version >= IGPU_GFX1151_SINCE:
            return None
        return "ollama drops an integrated GPU unless OLLAMA_IGPU_ENABLE=1"

    def vulkan_off(self) -> str | None:
        setting = self.env.get("OLLAMA_VULKAN", "")
        if self.version < VULKAN_DEFAULT_SINCE:
            return (
                None if _bool(setting, False) else "its Vulkan backend is experimental and off without OLLAMA_VULKAN=1"
            )
        return f"OLLAMA_VULKAN={setting} turns its Vulkan backend off" if not _bool(setting, True) else None

    def verdict(self, gpu: GpuInfo, vk: VulkanGpu | None) -> AppVerdict:
        cites = self.app.files
        name = self.app.name
        # A version the binary does not say: which rules the layout chose comes first in every verdict.
        why: list[str] = [f"the rules of ollama {self.era} (its binary does not say its version)"] if self.era else []
        fixes = _Fixes()
        row = next(
            (r for r in self.rows if self.stack is not None and r.stack == self.stack.name and r.slot == gpu.slot), None
        )
        if not self.has("rocm"):
            why.append("no ROCm backend in its bundle")
        elif row is None or row.status not in RUNS:
            why.append(f"its bundled rocBLAS has no code for {gpu.gfx or 'the GPU'}")
        elif (dropped := self.igpu(gpu, "ROCm")) is not None:
            why.append(dropped)
            fixes.igpu(new_rules=self.version >= RUNNERS_SINCE)
        else:
            return AppVerdict(name, "ollama", gpu.slot, "ROCm", "; ".join([*why, row.detail]), "", cites)
        if self.version < VULKAN_SINCE or not self.has("vulkan"):
            why.append("no Vulkan backend in its bundle")
        elif vk is None or not vk.ready:
            why.append("Vulkan is not ready: " + (vk.detail if vk is not None else "the Vulkan drivers were not read"))
            if vk is not None and vk.remedy:
                fixes.text.append(vk.remedy)
        elif (off := self.vulkan_off()) is not None:
            why.append(off)
            fixes.service("OLLAMA_VULKAN", "1")
        elif (dropped := self.igpu(gpu, "Vulkan")) is not None:
            why.append(dropped + " on Vulkan")
            fixes.igpu(new_rules=True)
        else:
            return AppVerdict(name, "ollama", gpu.slot, "Vulkan", f"{vk.driver}; {'; '.join(why)}", "", cites)
        remedy = "; ".join(dict.fromkeys(fixes.text))
        return AppVerdict(name, "ollama", gpu.slot, "CPU", "; ".join(why), remedy, cites, tuple(fixes.env.items()))


class _Fixes:
    """An ollama verdict's remedies: the text, and which of them are values of ollama.service's environment."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.env: dict[str, str] = {}

    def service(self, name: str, value: str) -> None:
        self.text.append(f"{DROP_IN}{name}={value}")
        self.env[name] = value

    def igpu(self, *, new_rules: bool) -> None:
        """An integrated GPU the filter drops: the setting from 0.12.4's runners on, the frame buffer before."""
        if new_rules:
            self.service("OLLAMA_IGPU_ENABLE", "1")
        else:
            self.text.append("a UMA frame buffer of 1 GiB or more in the firmware setup, or ollama 0.30 or later")


def _llama_cpp(
    app: Application, gpu: GpuInfo, rows: Sequence[Row], stacks: Sequence[Stack], vk: VulkanGpu | None
) -> AppVerdict:
    why = []
    if "hip" in app.backends:
        # The stack of this directory's libggml-hip.so: /usr/lib's is not /usr/lib/x86_64-linux-gnu's.
        hip = next((s for s in stacks if s.kind == "llama.cpp" and s.path.rsplit("/", 1)[0] == app.path), None)
        row = next((r for r in rows if hip is not None and r.stack == hip.name and r.slot == gpu.slot), None)
        if row is not None and row.status in RUNS:
            return AppVerdict(app.name, "llama.cpp", gpu.slot, "ROCm", row.detail, "", app.files)
        why.append(f"libggml-hip.so has no code for {gpu.gfx or 'the GPU'}")
    if "vulkan" in app.backends:
        if vk is not None and vk.ready:
            return AppVerdict(
                app.name,
                "llama.cpp",
                gpu.slot,
                "Vulkan",
                f"{vk.driver}; {'; '.join(why) or 'no HIP backend'}",
                "",
                app.files,
            )
        why.append("Vulkan is not ready: " + (vk.detail if vk is not None else "the Vulkan drivers were not read"))
        return AppVerdict(app.name, "llama.cpp", gpu.slot, "CPU", "; ".join(why), vk.remedy if vk else "", app.files)
    remedy = "build llama.cpp with -DGGML_VULKAN=ON" + (
        "" if vk is not None and vk.ready else " (and make Vulkan ready)"
    )
    return AppVerdict(app.name, "llama.cpp", gpu.slot, "CPU", "; ".join(why), remedy, app.files)


def _rocm_only(stack: Stack, gpu: GpuInfo, rows: Sequence[Row], remedy: str) -> AppVerdict:
    row = next((r for r in rows if r.stack == stack.name and r.slot == gpu.slot), None)
    cites = (stack.path,)
    if row is not None and row.status in RUNS:
        return AppVerdict(stack.name, stack.kind, gpu.slot, "ROCm", row.detail, "", cites)
    detail = row.detail if row is not None else "the GPU's gfx target is unknown"
    return AppVerdict(stack.name, stack.kind, gpu.slot, "CPU", detail, remedy, cites)


def application_verdicts(
    software: SoftwareFacts, gpus: Sequence[GpuInfo], rows: Sequence[Row], vulkan: Sequence[VulkanGpu]
) -> tuple[AppVerdict, ...]:
    vk = {v.slot: v for v in vulkan}
    env = _ollama_env(software.env)
    out = []
    for app in software.applications:
        stack = next((s for s in software.stacks if s.kind == app.kind and s.path == app.path), None)
        for gpu in gpus:
            if app.kind == "ollama":
                out.append(_Ollama(app, stack, rows, env).verdict(gpu, vk.get(gpu.slot)))
            elif app.kind == "llama.cpp":
                out.append(_llama_cpp(app, gpu, rows, software.stacks, vk.get(gpu.slot)))
    for stack in software.stacks:
        for gpu in gpus:
            if stack.kind == "pytorch":
                gfx = gpu.gfx or "the GPU"
                # TheRock multi-arch wheels: torch[device-<gfx>] installs amd-torch-device-<gfx> (RELEASES.md)
                fix = (
                    f'pip install "torch[device-{gfx}]" (amd-torch-device-{gfx}, TheRock\'s multi-arch PyTorch), '
                    f"or a PyTorch-ROCm wheel built for {gfx}"
                )
                out.append(_rocm_only(stack, gpu, rows, fix))
            elif stack.kind == "rocm":
                gfx = gpu.gfx or "the GPU"
                out.append(
                    _rocm_only(stack, gpu, rows, f"a ROCm release (or TheRock family tarball) with {gfx}'s code")
                )
            elif stack.kind == "therock":
                gfx = gpu.gfx or "the GPU"
                out.append(_rocm_only(stack, gpu, rows, f'pip install "rocm[device-{gfx}]" (rocm-sdk-device-{gfx})'))
    return tuple(out)
