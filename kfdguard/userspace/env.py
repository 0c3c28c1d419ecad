"""The environment variables the software inventory keeps (its records are in kfdguard/facts.py)."""

from __future__ import annotations

# The variables that decide what ROCm sees and runs, in the order a person checks them.
ENV_NAMES = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_ENABLE_SDMA",
    "HCC_AMDGPU_TARGET",
    "LD_LIBRARY_PATH",
    # ollama's backend choice (kfdguard/userspace/application_rules.py): envconfig/config.go
    "OLLAMA_VULKAN",
    "OLLAMA_IGPU_ENABLE",
    "OLLAMA_LLM_LIBRARY",
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
