"""Observations of a live machine (or a rendered one), from the probe's Facts.

The probe reads; this only renames what it read into the records a paste
yields, with the machine path each came from as provenance, so that one
rule set reasons over both. Everything here is pure.
"""

from __future__ import annotations

from kfdguard.evidence.model import Observations, SeenAgent, SeenGpu, SeenNode, Source
from kfdguard.facts import DeviceNode, Facts


def _node(facts: Facts, node: DeviceNode) -> SeenNode | None:
    if node.stat is None:
        # stat failed for another reason than "does not exist": that is unknown, not missing.
        return None if node.error else SeenNode(node.path, None, None, None, Source(f"stat {node.path}"))
    accounts = facts.accounts
    mode = node.stat.symbolic.rstrip("+")
    owner, group = accounts.user_name(node.stat.uid), accounts.group_name(node.stat.gid)
    return SeenNode(node.path, mode, owner, group, Source(f"stat {node.path}"), bool(node.stat.acl))


def observe(facts: Facts, distribution: str | None = None) -> Observations:
    obs = Observations()
    kernel = facts.kernel
    if kernel.release:
        obs.kinds.add("uname")
        obs.add("kernel-release", kernel.release, Source("uname"))
    if distribution:
        obs.add("distribution", distribution, Source("os-release"))
    for gpu in facts.amd_gpus:
        obs.kinds.add("lspci")
        source = Source(f"PCI device {gpu.slot} (sysfs)")
        obs.gpus.append(SeenGpu(gpu.vendor, gpu.device, source, gpu.revision, gpu.slot))
    kfd = _node(facts, facts.kfd.node)
    if kfd is not None:
        obs.kinds.add("ls")
        obs.nodes[kfd.path] = obs.kfd = kfd
    for render in facts.render_nodes.values():
        seen = _node(facts, render)
        if seen is not None:
            obs.nodes[seen.path] = seen
    for node in facts.kfd.gpu_nodes:
        obs.kinds.add("topology")
        source = Source(f"KFD topology node {node.index} (sysfs)")
        obs.agents.append(SeenAgent(node.gfx or "gfx?", source, node.prop("device_id") or None, node.slot))
    config_source = Source(kernel.config_source or "kernel config")
    obs.kconfig = {symbol: (value, config_source) for symbol, value in kernel.config.items()}
    if kernel.config:
        obs.kinds.add("kconfig")
    obs.modprobe = list(facts.modprobe.directives)
    obs.events = list(facts.log.events)
    if facts.log.read:
        obs.kinds.add("kernel-log")
    return obs


__all__ = ["observe"]
