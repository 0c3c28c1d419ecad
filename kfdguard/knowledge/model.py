"""Record types for kfdguard's knowledge tables.

Every entry carries ``source``: where the fact comes from (kernel source file
and commit or release, libdrm ``data/amdgpu.ids``, ROCm documentation URL...).
Entries that are inferred rather than read from a source say so with
``uncertain=True`` so that findings built on them can hedge.
"""

from __future__ import annotations

from kfdguard.record import dataclass

KernelVersion = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Asic:
    """One GPU chip (ASIC) as KFD and ROCm see it."""

    key: str  # stable lower-case id, e.g. "navi31"
    family: str  # e.g. "Navi31"
    generation: str  # e.g. "GCN3", "GCN5", "RDNA2", "RDNA3", "CDNA2"
    gc_ip: str | None  # GC IP version "11.0.0"; None before IP discovery
    gfx: str | None  # LLVM target, e.g. "gfx1100"; None when KFD never ran it
    apu: bool
    # First mainline release whose KFD adds this ASIC; None = never supported.
    kfd_since: KernelVersion | None
    kfd_since_uncertain: bool
    # Whether ROCm's prebuilt libraries (rocBLAS/hipBLASLt/MIOpen...) ship
    # code objects for this gfx target in the ROCm release named in source.
    rocm_prebuilt: bool
    # gfx8 dGPUs cannot run compute without PCIe AtomicOps.
    needs_pcie_atomics: bool
    # APUs whose KFD went through IOMMUv2 on kernels before this release
    # (the IOMMU had to be on); None when not applicable.
    iommu_v2_until: KernelVersion | None
    source: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class PciId:
    """One row of libdrm's amdgpu.ids (device, revision, name) tied to an ASIC."""

    device: int  # PCI device id, vendor is always 0x1002
    revision: int | None  # None = any revision
    name: str  # marketing name
    asic: str  # Asic.key
    source: str
