"""Whether each AMD GPU is ready for Vulkan compute (llama.cpp's and ollama's Vulkan backends): pure.

A GPU is Vulkan-ready when a Vulkan program on the machine would get it:

- the loader (``libvulkan.so.1``) is installed;
- a driver for AMD GPUs is installed, its manifest's library found: RADV
  (Mesa) or AMDVLK; lavapipe runs on the CPU and counts for no GPU;
- the amdgpu kernel driver drives the GPU: RADV opens the render node and
  refuses a device whose DRM driver is not "amdgpu" (Mesa
  src/amd/vulkan/radv_physical_device.c, ``radv_physical_device_try_create``:
  ``strcmp(version->name, "amdgpu")`` → VK_ERROR_INCOMPATIBLE_DRIVER;
  ``create_drm_physical_device`` takes PCI devices of vendor 0x1002 with a
  render node only), so a GCN 1/2 card on the radeon driver has no RADV;
- the GPU can do graphics: RADV supports "all GCN and RDNA GPUs that are
  supported by the Linux kernel (and capable of graphics)"
  (docs.mesa3d.org/drivers/radv.html); CDNA accelerators (gfx908, gfx90a,
  gfx94x, gfx950) have no graphics and no Vulkan driver;
- the render node exists; who of the machine's login users cannot open it
  is said beside the verdict (a service's user needs the same).

This module decides only; kfdguard/userspace/vulkan.py reads.
"""

from __future__ import annotations

from kfdguard.access import check_rw
from kfdguard.host.root import DRI_DIR
from kfdguard.record import dataclass, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import Facts, GpuFacts, VulkanFacts

AMD_DRIVERS = ("RADV", "AMDVLK")
# CDNA: the gfx9 accelerators without a graphics pipeline (LLVM AMDGPUUsage; Mesa's RADV does not run them).
COMPUTE_ONLY = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
INSTALL_RADV = "install Mesa's RADV: mesa-vulkan-drivers (Debian, Ubuntu, Fedora), vulkan-radeon (Arch)"
INSTALL_LOADER = (
    "install the Vulkan loader: libvulkan1 (Debian, Ubuntu), vulkan-loader (Fedora), vulkan-icd-loader (Arch)"
)


@dataclass(frozen=True, slots=True)
class VulkanGpu:
    slot: str
    name: str
    ready: bool
    driver: str | None  # "RADV" or "AMDVLK" when ready
    detail: str  # why it is ready or not, with the files that say so
    remedy: str = ""  # what makes it ready ("" when ready or when nothing can)
    denied: tuple[str, ...] = ()  # login users who cannot open its render node


def _drivers(vulkan: VulkanFacts) -> tuple[list[str], list[str]]:
    """(usable AMD drivers as "RADV (manifest → library)", manifests of one whose library is missing)."""
    usable, broken = [], []
    for icd in vulkan.icds:
        if icd.driver not in AMD_DRIVERS:
            continue
        if icd.library is not None:
            usable.append(f"{icd.driver} ({icd.manifest} → {icd.library})")
        else:
            broken.append(f"{icd.manifest} names {icd.library_path}, which is not installed")
    return usable, broken


def _denied(facts: Facts, gpu: GpuFacts, min_uid: int) -> tuple[str, ...]:
    node = facts.render_nodes.get(gpu.render_node or "")
    if node is None or node.stat is None:
        return ()
    accounts = facts.accounts
    return tuple(
        u.name
        for u in accounts.users
        if min_uid <= u.uid < 60000 and u.can_log_in and not check_rw(node.stat, u.uid, accounts.gids_of(u)).allowed
    )


def _not_ready(gpu: GpuFacts, name: str, gfx: str | None, facts: Facts) -> VulkanGpu | None:
    """What about the GPU itself rules Vulkan out, before the drivers are looked at."""
    if gpu.driver != "amdgpu":
        bound = f"the {gpu.driver} driver" if gpu.driver else "no kernel driver"
        remedy = (
            "let amdgpu drive it (amdgpu.si_support=1 radeon.si_support=0, or the cik_support pair, on the kernel "
            "command line)"
            if gpu.driver == "radeon"
            else "load amdgpu (see the kernel findings)"
        )
        return VulkanGpu(gpu.slot, name, False, None, f"{bound} drives it; RADV needs amdgpu", remedy)
    if gfx in COMPUTE_ONLY:
        return VulkanGpu(gpu.slot, name, False, None, f"{gfx} has no graphics pipeline: no Vulkan driver runs it")
    node = facts.render_nodes.get(gpu.render_node or "")
    if gpu.render_node is None or node is None or node.stat is None:
        where = f"{DRI_DIR}/{gpu.render_node}" if gpu.render_node else "its render node"
        return VulkanGpu(gpu.slot, name, False, None, f"{where} is missing", "see the device-node findings")
    return None


def vulkan_gpus(facts: Facts, gfx_of: dict[str, str | None], min_uid: int = 1000) -> tuple[VulkanGpu, ...]:
    """The Vulkan verdict of each AMD GPU; none when the Vulkan drivers were not looked at."""
    from kfdguard import knowledge

    software = facts.software
    if software is None or not software.vulkan.read:
        return ()
    vulkan = software.vulkan
    usable, broken = _drivers(vulkan)
    out = []
    for gpu in facts.amd_gpus:
        name = knowledge.identify(gpu.device, gpu.revision)[1] or f"AMD GPU {gpu.ids}"
        verdict = _not_ready(gpu, name, gfx_of.get(gpu.slot), facts)
        if verdict is None:
            verdict = _with_drivers(gpu, name, vulkan, usable, broken)
        out.append(verdict if not verdict.ready else _with_users(verdict, _denied(facts, gpu, min_uid)))
    return tuple(out)


def _with_drivers(gpu: GpuFacts, name: str, vulkan: VulkanFacts, usable: list[str], broken: list[str]) -> VulkanGpu:
    if not usable:
        lavapipe = any(i.driver == "lavapipe" and i.library for i in vulkan.icds)
        why = "; ".join(broken) if broken else "no Vulkan driver for AMD GPUs is installed"
        if lavapipe:
            why += " (lavapipe is, but it runs on the CPU)"
        return VulkanGpu(gpu.slot, name, False, None, why, INSTALL_RADV)
    if vulkan.loader is None:
        why = f"{usable[0]} is installed but not libvulkan.so.1"
        return VulkanGpu(gpu.slot, name, False, None, why, INSTALL_LOADER)
    driver = usable[0].split(" ", 1)[0]
    return VulkanGpu(gpu.slot, name, True, driver, f"{usable[0]}, loader {vulkan.loader}")


def _with_users(verdict: VulkanGpu, denied: tuple[str, ...]) -> VulkanGpu:
    return replace(verdict, denied=denied) if denied else verdict
