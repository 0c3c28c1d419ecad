"""The records of the software inventory (frozen, from kfdguard.record: no dataclasses import)."""

from __future__ import annotations

from kfdguard.facts import Problem
from kfdguard.record import dataclass

# The variables that decide what ROCm sees and runs, in the order a person checks them.
ENV_NAMES = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_ENABLE_SDMA",
    "HCC_AMDGPU_TARGET",
    "LD_LIBRARY_PATH",
)
# HSA_OVERRIDE_GFX_VERSION_<n>: the per-node override. libhsakmt (ROCm/ROCR-Runtime
# libhsakmt/src/topology.c, topology_sysfs_get_node_props) reads "HSA_OVERRIDE_GFX_VERSION_%d" with the
# KFD topology node number first and falls back to HSA_OVERRIDE_GFX_VERSION; CPU nodes (usually node 0)
# never read either, so the first GPU of a one-socket machine is _1.
PER_NODE_OVERRIDE = "HSA_OVERRIDE_GFX_VERSION_"


def wanted_env(name: str) -> bool:
    """Whether a variable is one the inventory keeps (ENV_NAMES and the per-node overrides)."""
    return name in ENV_NAMES or override_node(name) is not None


def override_node(name: str) -> int | None:
    """The node a per-node override names (``HSA_OVERRIDE_GFX_VERSION_1`` -> 1); None for any other name."""
    suffix = name.removeprefix(PER_NODE_OVERRIDE)
    # %d of a node id: decimal digits; a sign or a leading zero is never what snprintf writes.
    if suffix == name or not (suffix.isascii() and suffix.isdigit()) or (suffix != "0" and suffix[0] == "0"):
        return None
    return int(suffix) if len(suffix) <= 9 else None


@dataclass(frozen=True, slots=True)
class Component:
    """One library of a stack and the gfx targets it carries code for."""

    name: str  # "librocblas.so.0.1", "rocblas/library", "libggml-hip.so"
    path: str  # as shown on the machine
    targets: tuple[str, ...]  # target ids ("gfx90a:xnack-"), sorted
    source: str  # "bundles" (offload bundles) or "name" (Tensile file names)
    files: int = 1
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Stack:
    """An installed compute stack: a ROCm tree, distribution ROCm, or the ROCm bundled with a program."""

    kind: str  # rocm, distribution, ollama, pytorch, llama.cpp, path
    name: str  # "ROCm 6.2.4", "Debian rocBLAS 5.5.1+dfsg-7", "PyTorch 2.4.0+rocm6.1"
    path: str
    version: str | None
    components: tuple[Component, ...]
    lib_dir: str | None = None  # where its HIP runtime lives (for mixed-version checks)
    runtime: str | None = None  # the HIP runtime library found ("libamdhip64.so.6.2.60204")
    truncated: str | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted({t for c in self.components for t in c.targets}))

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class EnvSetting:
    name: str
    value: str
    origin: str  # "caller environment", "ollama.service (/etc/systemd/system/ollama.service)"
    unit: str | None = None  # the unit whose processes get it


@dataclass(frozen=True, slots=True)
class SoftwareFacts:
    stacks: tuple[Stack, ...] = ()
    env: tuple[EnvSetting, ...] = ()
    ld_paths: tuple[tuple[str, str], ...] = ()  # (directory, the file that lists it)
    tools: tuple[str, ...] = ()  # rocminfo, amd-smi, rocm-smi found
    problems: tuple[Problem, ...] = ()
    scanned: bool = True  # False: the inventory was not taken (the boot pass)
