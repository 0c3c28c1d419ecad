"""probe: read a machine through its Root and System into immutable Facts.

It only reads, and it never raises on odd machine content: what cannot be
read becomes a ``Problem`` in the facts.
"""

from __future__ import annotations

from kfdguard.facts import DeviceNode, Facts, KernelLog, Problem
from kfdguard.probe.boot import probe_bootloader, probe_health, probe_history, probe_kernels
from kfdguard.probe.cdi import probe_specs as probe_cdi_specs
from kfdguard.probe.config_files import probe_accounts, probe_modprobe
from kfdguard.probe.devices import probe_gpus, probe_kfd, probe_node
from kfdguard.probe.kernel_log import probe_kernel_log
from kfdguard.probe.reader import Reader
from kfdguard.probe.system_info import (
    probe_dkms,
    probe_installed_kernels,
    probe_kernel,
    probe_memory,
    probe_modules,
    probe_os,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.system import System


def probe(
    system: System,
    *,
    log: str = "always",
    log_sources: tuple[str, ...] = ("journal", "kmsg"),
    previous_boots: int = 0,
    reader: Reader | None = None,
) -> Facts:
    """Read the machine.

    ``log`` decides whether the kernel log is read: "always", "never", or
    "needed" (only when some AMD GPU is not computing: a healthy boot pass
    then costs no journal access at all). ``reader`` stands in for the plain
    one: ``kfdguard.snapshot`` passes a Reader that records what it reads.
    """
    root = system.root
    reader = reader or Reader(root)
    kernel = probe_kernel(reader)
    modules = probe_modules(reader, system, kernel.release, ("amdgpu", "amdkfd"))
    gpus = probe_gpus(reader)
    render_nodes: dict[str, DeviceNode] = {}
    for gpu in gpus:
        if gpu.is_amd and gpu.render_node:
            render_nodes[gpu.render_node] = probe_node(reader, system, root.dev / "dri" / gpu.render_node)
    kfd = probe_kfd(reader, system)
    modules_amd = modules["amdgpu"]
    amd = [g for g in gpus if g.is_amd]
    nodes = {n.slot for n in kfd.gpu_nodes}
    missing_node = any(g.slot not in nodes for g in amd)
    needed = bool(amd) and (kfd.node.stat is None or not modules_amd.loaded or missing_node or bool(reader.problems))
    dkms = probe_dkms(reader)
    kernel_log = KernelLog(read=False)
    if log == "always" or (log == "needed" and needed):
        kernel_log = probe_kernel_log(reader, system, log_sources, previous_boots)
        if not kernel_log.sources:
            # No source could be read (journald absent and /dev/kmsg closed, say): a diagnosis
            # without the kernel's own account must say so rather than look complete.
            why = "; ".join(kernel_log.unavailable) or "log.sources names no source"
            reader.problems.append(Problem("the kernel log", why))
        if kernel_log.limited:
            # Said as a problem, so that a finding names it: what the budget left out is unknown, not absent.
            reader.problems.append(Problem(f"the kernel log ({kernel_log.sources[0]})", "; ".join(kernel_log.limited)))
    return Facts(
        root=str(root.path),
        simulated=system.provenance == "simulated",  # recorded for the report, never decided on
        os=probe_os(reader),
        kernel=kernel,
        amdgpu=modules["amdgpu"],
        amdkfd=modules["amdkfd"],
        gpus=tuple(gpus),
        render_nodes=render_nodes,
        kfd=kfd,
        modprobe=probe_modprobe(reader, kernel.cmdline),
        accounts=probe_accounts(reader),
        dkms=dkms,
        installed_kernels=probe_installed_kernels(reader),
        log=kernel_log,
        kernels=probe_kernels(reader, dkms),
        bootloader=probe_bootloader(reader),
        history=probe_history(reader),
        health=probe_health(reader),
        cdi=probe_cdi_specs(reader),
        memory=probe_memory(reader, kernel.release),
        problems=tuple(reader.problems),
    )
