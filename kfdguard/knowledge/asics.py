"""AMD GPU ASICs as KFD and ROCm see them, and the PCI ids that identify them.

Pure data, no I/O. ``ASICS`` holds one record per chip, ``PCI_ROWS`` ties PCI
device ids (and, where libdrm lists them, revisions) to those records, and
``SOURCES`` expands the short source keys used in every ``source`` field
(several keys are joined with ``"; "``).

Conventions:

* ``kfd_since`` is the first mainline release whose KFD drives the ASIC. Where
  only a bracket was found, the later plausible release is used, so that an
  error makes kfdguard hedge about a kernel that works rather than pass one
  that does not. ``kfd_since_uncertain`` is set whenever the release was
  inferred (commit or patch dates, neighbouring tables) instead of read.
* Up to Linux 5.4, KFD matched a static PCI-id table in ``kfd_device.c``: the
  ASIC being supported was not enough, the device id had to be listed too
  (``DID xxxx is missing in supported_devices``). From 5.5 the lookup is by
  chip type (the ``kfd_supported_devices[CHIP_*]`` table appears in drm-next
  patches of September 2019; inferred), later by GC IP version.
* ``rocm_prebuilt`` follows rocBLAS's default target list for ROCm 7.1 and
  later (``rocblas-7.1``). AMD's support matrix is narrower (gfx900, gfx906,
  gfx1010 and gfx1012 are built but not officially supported), and other
  libraries (MIOpen, hipBLASLt...) cover fewer targets. It is the newest
  release's answer, for callers that know no version; ``knowledge/rocm.py``
  answers per release (gfx1103 has code only from 7.1), and a test keeps the
  two in agreement.
* ``needs_pcie_atomics`` is the hard gfx8 dGPU rule. GFX10 and later dGPUs
  also need PCIe AtomicOps when their MEC firmware is older than a per-IP
  version (see the notes). It is False for APUs: their atomics do not cross
  PCIe (current code nominally asks Kaveri/Carrizo for them as well; what that
  does on those APUs was not verified).
* PCI rows come from libdrm's ``amdgpu.ids`` (with its revision ids). A few
  device ids that libdrm does not name but that matter (kernel KFD tables,
  Renoir-class APUs) come from the kernel tables or pci.ids, with revision
  ``None``. 0x7440 is deliberately absent: it is not a Navi31 id.
"""

from __future__ import annotations

from kfdguard.knowledge.model import Asic

__all__ = ["ASICS", "KFD_TABLES_READ", "PCI_ROWS", "SOURCES"]

SOURCES: dict[str, str] = {
    "libdrm-ids": (
        "libdrm data/amdgpu.ids (gitlab.freedesktop.org/mesa/drm), read from the mirror "
        "X11Libre/mirror.fdo.drm @ 06675b4fbede3c8547cf9de09444424672d06066 (late 2025); "
        "older rows cross-checked against Debian 12 libdrm-common 2.4.114"
    ),
    "pciids": (
        "PCI ID Repository pci.ids: pciutils/pciids @ 006181e2c5d5b9a3b57d252aa5b3d827971d41a9 "
        "and Debian pci.ids 0.0~2023.04.11-1"
    ),
    "pciids-data": (
        "Debian pci.ids 0.0~2026.10.24-1 (sid) as tools/knowledge read it "
        "(kfdguard/knowledge/data/ids-firmware.json.gz, pinned in tools/knowledge/pins.tsv)"
    ),
    "kfd-3.19": (
        "amdkfd first merged for Linux 3.19 (Dave Airlie merged amdkfd-v6 into drm-next, "
        "2014-11-20, cc5ac1ca79b4), as recorded in shared/knowledge/kfd-facts.md section 1"
    ),
    "kfd-4.19": (
        "drivers/gpu/drm/amd/amdkfd/kfd_device.c supported_devices table of a 4.19-based tree "
        "(kquote03/linux-ps4-4.19-latest @ 808c8e0dd7d5d134f2c9cb3e40913db74943e9f5; its PS4 "
        "patches alter the Hawaii entries, the other entries are mainline)"
    ),
    "kfd-5.4": (
        "drivers/gpu/drm/amd/amdkfd/kfd_device.c supported_devices table of Linux 5.4.247 "
        "(DFAUS-git/ps4-baikal-5.4.247-kernel @ 3c888b0696f4246dbc67d45eda1681f8c5fc389a; "
        "mainline entries plus PS4-only Liverpool/Gladius lines)"
    ),
    "kfd-5.15": (
        "drivers/gpu/drm/amd/amdkfd/kfd_device.c of Linux 5.15.99, CHIP_*-indexed "
        "kfd_supported_devices (DFAUS-git/ps4-linux-kernel-5.15.99-belize @ "
        "c154afca8b1d6430b9afde83618060719136f966)"
    ),
    "kfd-6.1": (
        "torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_device.c @ "
        "002c6ca75289a4ac4f6738213dd2d258704886e4 (6.1-era: GC 11.0.0-11.0.3, no 11.0.4)"
    ),
    "kfd-current": (
        "ROCm/amdgpu drivers/gpu/drm/amd/amdkfd/kfd_device.c @ "
        "006ab9293ad5866e030cac2526b1097d9f9635ee (2025): kgd2kfd_probe and "
        "kfd_device_info_init (gfx targets, PCIe atomics and MEC firmware rules)"
    ),
    "kfd-renoir-2019": (
        "amd-gfx, 2019-09-05, '[PATCH v2 02/10] drm/amdkfd: add renoir kfd device info (v2)' "
        "(Huang Rui): Renoir treated as a dGPU, needs_iommu_device = false"
    ),
    "kfd-navi12-2019": ("amd-gfx, 2019-09-24, '[PATCH] drm/amdkfd: Add NAVI12 support from kfd side' (Shaoyun Liu)"),
    "iommuv2-removal": (
        "commits 99c150199659 'drm/amdkfd: disable IOMMUv2 support for KV/CZ', 2b4adeb34f99 "
        "'... for Raven' and c99a2e7ae291 'drm/amdkfd: drop IOMMUv2 support' (Alex Deucher, "
        "2023-07-28); Felix Kuehling on the stable list: 'Support for IOMMUv2 was removed from "
        "amdgpu in Linux 6.6'"
    ),
    "drm-next-6.7": (
        "'[pull] amdgpu, amdkfd, radeon, UAPI drm-next-6.7' (tag amd-drm-next-6.7-2023-10-13): "
        "amdkfd 'GC 11.5 Support', incl. 'drm/amdkfd: add KFD support for GC 11.5.0'"
    ),
    "drm-next-6.9": (
        "'[pull] amdgpu, amdkfd, radeon drm-next-6.9' (tag amd-drm-next-6.9-2024-03-01) incl. "
        "f5f83441c4e7 'drm/amdkfd: add KFD support for GC 11.5.1' (patch posted 2024-02-15)"
    ),
    "drm-next-6.11": (
        "'[pull] amdgpu, radeon drm-next-6.11' (tag amd-drm-next-6.11-2024-07-03) incl. "
        "'drm/amdkfd: add KFD support for GC IP v11.5.2'; that patch's context already has "
        "GC 12.0.0/12.0.1 in kgd2kfd_probe"
    ),
    "rocblas-7.1": (
        "rocBLAS default GPU targets, TARGET_LIST_ROCM_7.1 in ROCm/rocm-libraries "
        "projects/rocblas/CMakeLists.txt @ 05ecf2875ac3720a9f32fa7f741809efdd644019: gfx900 "
        "gfx906 gfx908 gfx90a gfx942 gfx950 gfx1010 gfx1012 gfx1030 gfx1100 gfx1101 gfx1102 "
        "gfx1103 gfx1150 gfx1151 gfx1200 gfx1201 (gfx803 last in the 5.7 list)"
    ),
    "kfd-data": (
        "kfdguard/knowledge/generated.py and data/kernel-*.json.gz, generated by tools/knowledge from "
        "Debian's linux-source 5.10.223, 6.1.176, 6.12.117, 7.2.13, 7.3~rc7 (kfd_device.c kgd2kfd_probe, "
        "amdgpu_drv.c pciidlist) and the matching amdgpu.ko (modinfo); see docs/KNOWLEDGE.md"
    ),
    "kfd-facts": ("shared/knowledge/kfd-facts.md section 7 (KFD enablement commit dates; release column inferred)"),
    "rocm-issue-719": (
        "https://github.com/ROCm/legacy-rocm-build/issues/719 (kernel 4.20.13: 'DID 15d8 is "
        "missing in supported_devices'; shared/knowledge/dmesg-corpus/06)"
    ),
}


# The ASICs whose entry is in KFD's device table of a kernel older than the series Debian ships (the
# generator reads 5.10 on): source key -> (release, Asic.key of every entry). Read from the files
# SOURCES names; an entry there means that release's KFD drives the chip, so no ``kfd_since`` may
# be later (tests/unit/knowledge/test_knowledge_sources.py). 4.19 lists Raven's 0x15DD only,
# 5.4 Picasso's 0x15D8 as well; 5.15's CHIP_RAVEN covers both.
KFD_TABLES_READ: dict[str, tuple[tuple[int, int], frozenset[str]]] = {
    "kfd-4.19": ((4, 19), frozenset({
        "kaveri", "carrizo", "raven", "hawaii", "tonga", "fiji", "polaris10", "polaris11", "vega10",
    })),
    "kfd-5.4": ((5, 4), frozenset({
        "kaveri", "carrizo", "raven", "picasso", "hawaii", "tonga", "fiji", "polaris10", "polaris11",
        "polaris12", "vegam", "vega10", "vega12", "vega20", "arcturus", "navi10",
    })),
    "kfd-5.15": ((5, 15), frozenset({
        "kaveri", "carrizo", "raven", "picasso", "hawaii", "tonga", "fiji", "polaris10", "polaris11",
        "polaris12", "vegam", "vega10", "vega12", "vega20", "renoir", "arcturus", "aldebaran", "navi10",
        "navi12", "navi14", "navi21", "navi22", "vangogh", "navi23", "navi24", "rembrandt", "cyan_skillfish",
    })),
}  # fmt: skip

# fmt: off
ASICS: tuple[Asic, ...] = (
    # --- Southern Islands (GCN1): KFD never supported any of them. -------------------
    Asic(
        key="tahiti", family="Tahiti", generation="GCN1", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="HD 7900 / R9 280, FirePro W8000/W9000 (LLVM gfx600). No KFD entry in any kernel"
        " read; current amdgpu logs 'TAHITI  not supported in kfd'. amdgpu drives SI only with"
        " si_support=1; radeon is the usual default.",
    ),
    Asic(
        key="pitcairn", family="Pitcairn", generation="GCN1", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="HD 7800 / R7 370 / R9 270 (LLVM gfx601). Never supported by KFD ('PITCAIRN  not"
        " supported in kfd').",
    ),
    Asic(
        key="verde", family="Cape Verde", generation="GCN1", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="HD 7700 / R7 250X and many mobile parts (LLVM gfx601). Never supported by KFD.",
    ),
    Asic(
        key="oland", family="Oland", generation="GCN1", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="R7 240/250/340/350, Radeon 520 and mobile Mars/Opal (LLVM gfx602). Never"
        " supported by KFD.",
    ),
    Asic(
        key="hainan", family="Hainan", generation="GCN1", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="Mobile Sun/Jet parts, R5 M2xx/M3xx (LLVM gfx602; no display engine). Never"
        " supported by KFD.",
    ),
    # --- Sea Islands (GCN2). Kaveri was KFD's first ASIC; Hawaii is experimental. ----
    Asic(
        key="kaveri", family="Kaveri", generation="GCN2", gc_ip=None, gfx="gfx700", apu=True,
        kfd_since=(3, 19), kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=(6, 6),
        source="kfd-3.19; kfd-5.4; kfd-current; iommuv2-removal; rocblas-7.1",
        note="A8/A10 APUs. KFD started with Kaveri (3.19, through radeon). On amdgpu it needs"
        " CONFIG_DRM_AMDGPU_CIK and amdgpu.cik_support=1. Before 6.6 KFD reached it through"
        " IOMMUv2: CONFIG_AMD_IOMMU_V2 and an enabled IOMMU were required ('error getting iommu"
        " info. is the iommu enabled?'); 6.6 moved KV/CZ to the dGPU path. Up to 5.4 the device"
        " id had to be in KFD's table (0x1304-0x131D listed). No current ROCm targets gfx700.",
    ),
    Asic(
        key="hawaii", family="Hawaii", generation="GCN2", gc_ip=None, gfx="gfx701", apu=False,
        kfd_since=(4, 17), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15; rocblas-7.1",
        note="R9 290/390, FirePro W8100/W9100. Arrived with the dGPU support series (release"
        " inferred, UNCERTAIN). Current kernels treat it as experimental: KFD skips it unless"
        " amdgpu.exp_hw_support=1 ('KFD support on Hawaii is experimental'; the 5.15 table"
        " had no such gate, so the gate is from ~5.16 on, UNCERTAIN). Needs"
        " amdgpu.cik_support=1. The only CIK/VI dGPU for which KFD does not demand PCIe atomics.",
    ),
    Asic(
        key="bonaire", family="Bonaire", generation="GCN2", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="HD 7790 / R7 260X/360, FirePro W5100 (LLVM gfx704). KFD never had a Bonaire entry.",
    ),
    Asic(
        key="kabini", family="Kabini/Temash", generation="GCN2", gc_ip=None, gfx=None, apu=True,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="Low-power APUs (HD 8180-8400, LLVM gfx703). KFD never had a Kabini entry.",
    ),
    Asic(
        key="mullins", family="Mullins/Beema", generation="GCN2", gc_ip=None, gfx=None, apu=True,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="Low-power APUs (R2-R6 graphics, LLVM gfx703). KFD never had a Mullins entry.",
    ),
    # --- Volcanic Islands (GCN3) and Polaris (GCN4): gfx8. ---------------------------
    # Every gfx8 dGPU needs PCIe AtomicOps from the CPU root port through every switch;
    # without them KFD logs 'skipped device 1002:xxxx, PCI rejects atomics'.
    Asic(
        key="carrizo", family="Carrizo", generation="GCN3", gc_ip=None, gfx="gfx801", apu=True,
        kfd_since=(4, 2), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=(6, 6),
        source="kfd-5.4; kfd-current; iommuv2-removal; rocblas-7.1",
        note="A-series 'Carrizo'/'Bristol Ridge' APUs. KFD's gfx8 interface came with amdgpu's"
        " first release (4.2); the exact release of Carrizo enablement was not verified. Before"
        " 6.6 it needed IOMMUv2 like Kaveri; 6.6 moved it to the dGPU path. Table ids up to"
        " 5.4: 0x9870, 0x9874-0x9877.",
    ),
    Asic(
        key="stoney", family="Stoney", generation="GCN3", gc_ip=None, gfx=None, apu=True,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="Low-power APUs, R2-R5 graphics (LLVM gfx810). Absent from the 5.4 PCI table, the"
        " 5.15 CHIP table and current kgd2kfd_probe: never supported by KFD.",
    ),
    Asic(
        key="topaz", family="Topaz/Iceland", generation="GCN3", gc_ip=None, gfx=None, apu=False,
        kfd_since=None, kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; kfd-5.4; kfd-5.15",
        note="Mobile R5/R7 M2xx-M4xx, Radeon 530 (no display engine). Never supported by KFD.",
    ),
    Asic(
        key="tonga", family="Tonga", generation="GCN3", gc_ip=None, gfx="gfx802", apu=False,
        kfd_since=(4, 17), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="R9 285/380/380X, FirePro W7100/S7150. dGPU KFD support arrived around 4.17"
        " (inferred). No CWSR on Tonga; Tonga VFs get no KFD. Not built by any current ROCm"
        " library.",
    ),
    Asic(
        key="fiji", family="Fiji", generation="GCN3", gc_ip=None, gfx="gfx803", apu=False,
        kfd_since=(4, 17), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="R9 Fury/Nano, Radeon Pro Duo, FirePro S9300. gfx803 left rocBLAS's default"
        " targets in ROCm 6.0 (last in the 5.7 list).",
    ),
    Asic(
        key="polaris10", family="Polaris10 (Ellesmere)", generation="GCN4", gc_ip=None,
        gfx="gfx803", apu=False,
        kfd_since=(4, 17), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="RX 470/480/570/580/590 (0x67DF), RX 580 2048SP / 590 GME (0x6FDF), WX 5100/7100."
        " 0x6FDF is in the 4.19 and 5.4 tables but was seen missing from an older (~4.18) tree,"
        " so the oldest kernels may log 'DID 6fdf is missing in supported_devices' (UNCERTAIN)."
        " A classic failure is an RX 580 on a PCIe 2.0 platform: 'PCI rejects atomics'. gfx803"
        " left rocBLAS's default targets in ROCm 6.0.",
    ),
    Asic(
        key="polaris11", family="Polaris11 (Baffin)", generation="GCN4", gc_ip=None,
        gfx="gfx803", apu=False,
        kfd_since=(4, 17), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="RX 460/560/560X and Radeon 550 (0x67EF), RX 550/560 (0x67FF), WX 4100. gfx803 left"
        " rocBLAS's default targets in ROCm 6.0.",
    ),
    Asic(
        key="polaris12", family="Polaris12 (Lexa)", generation="GCN4", gc_ip=None,
        gfx="gfx803", apu=False,
        kfd_since=(4, 20), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="RX 540/550/640, Radeon 540X/550X, WX 2100/3100/3200. Absent from the 4.19 table,"
        " present in 5.4; 4.20 inferred (UNCERTAIN).",
    ),
    Asic(
        key="vegam", family="VegaM (Polaris22)", generation="GCN4", gc_ip=None, gfx="gfx803",
        apu=False,
        kfd_since=(4, 20), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=True, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="RX Vega M GH/GL on Intel Kaby Lake-G packages: a discrete Polaris-class GPU on"
        " PCIe, so gfx8 atomics rules apply. Absent from the 4.19 table, present in 5.4; 4.20"
        " inferred (UNCERTAIN).",
    ),
    # --- GCN5 (Vega): gfx9. dGPUs need no PCIe atomics; Raven-class APUs used IOMMUv2. -
    Asic(
        key="vega10", family="Vega10", generation="GCN5", gc_ip="9.0.1", gfx="gfx900",
        apu=False,
        kfd_since=(4, 18), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="RX Vega 56/64, Vega FE, MI25, WX 8200/9100, V340. In the 4.19 table; 4.18"
        " inferred. rocBLAS still builds gfx900 for ROCm 7.1 although AMD's support matrix no"
        " longer lists Vega 10.",
    ),
    Asic(
        key="raven", family="Raven Ridge", generation="GCN5", gc_ip="9.1.0", gfx="gfx902",
        apu=True,
        kfd_since=(4, 19), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=(6, 6),
        source="kfd-4.19; kfd-6.1; kfd-current; iommuv2-removal; rocblas-7.1",
        note="Ryzen 2000G/2000U, embedded V1000 (0x15DD). In the 4.19 table (release inferred)."
        " Before 6.6 KFD needed IOMMUv2 here: with the IOMMU off it logs 'error getting iommu"
        " info. is the iommu enabled?', 'Error initializing iommuv2' and drops the APU; 6.6"
        " moved Raven to the dGPU path and removed IOMMUv2.",
    ),
    Asic(
        key="picasso", family="Picasso/Raven2", generation="GCN5", gc_ip="9.1.0", gfx="gfx902",
        apu=True,
        kfd_since=(5, 0), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=(6, 6),
        source="rocm-issue-719; kfd-5.4; kfd-6.1; kfd-current; iommuv2-removal; rocblas-7.1",
        note="0x15D8: Picasso (Ryzen 3000G/3000U, GC 9.1.0) and Raven2/Dali/Pollock (GC 9.2.2,"
        " other revisions); KFD handles both as Raven (gfx902). Kernel 4.20.13 lacked 0x15D8 in"
        " its static table ('DID 15d8 is missing in supported_devices'); 5.4 has it; 5.0"
        " inferred. IOMMUv2 was required before 6.6, as for Raven.",
    ),
    Asic(
        key="renoir", family="Renoir/Cezanne/Lucienne", generation="GCN5", gc_ip="9.3.0",
        gfx="gfx90c", apu=True,
        kfd_since=(5, 5), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-renoir-2019; kfd-5.4; kfd-5.15; kfd-current; rocblas-7.1; pciids",
        note="Ryzen 4000/5000 APUs: Renoir 0x1636, Lucienne 0x164C, Cezanne 0x1638, Barcelo"
        " 0x15E7, all GC 9.3.0 (libdrm names none of them). Not in the 5.4 table; KFD patches"
        " posted Sept 2019, so 5.5 (inferred). KFD always drove Renoir through the dGPU (GPUVM)"
        " path, never IOMMUv2. Early kernels reported gfx_target_version 90002 (gfx902); a 2021"
        " patch switched it to 90012 (release UNCERTAIN). No ROCm library targets gfx90c.",
    ),
    Asic(
        key="vega12", family="Vega12", generation="GCN5", gc_ip="9.2.1", gfx="gfx904",
        apu=False,
        kfd_since=(5, 4), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.4; kfd-4.19; kfd-data; pciids; rocblas-7.1",
        note="Radeon Pro Vega 16/20 and Vega Pro mobile parts (0x69A0-0x69A3, 0x69AF; CHIP_VEGA12)."
        " 5.4's supported_devices lists exactly those five ids (vega12_device_info); 4.19's has no"
        " Vega12, so the first release is in 4.20-5.4 (UNCERTAIN; 5.4, the later end, is used)."
        " Every kernel read from 5.10 on drives it (GC 9.2.1 -> gfx_target_version 90004 from"
        " 6.1). No ROCm library ships gfx904 code objects.",
    ),
    Asic(
        key="vega20", family="Vega20", generation="GCN5", gc_ip="9.4.0", gfx="gfx906",
        apu=False,
        kfd_since=(4, 20), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-4.19; kfd-5.4; kfd-current; rocblas-7.1",
        note="Instinct MI50/MI60, Radeon VII, Radeon Pro VII / Vega II. Absent from the 4.19"
        " table, present in 5.4; 4.20 inferred. rocBLAS 7.1 still builds gfx906:xnack-; AMD"
        " lists gfx906 as deprecated.",
    ),
    # --- CDNA (Instinct). ------------------------------------------------------------
    Asic(
        key="arcturus", family="Arcturus", generation="CDNA1", gc_ip="9.4.1", gfx="gfx908",
        apu=False,
        kfd_since=(5, 4), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.4; kfd-current; rocblas-7.1",
        note="Instinct MI100. In the 5.4 table (read); an earlier release is unlikely because"
        " amdgpu itself gained Arcturus in that cycle (inferred).",
    ),
    Asic(
        key="aldebaran", family="Aldebaran", generation="CDNA2", gc_ip="9.4.2", gfx="gfx90a",
        apu=False,
        kfd_since=(5, 14), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.15; kfd-current; rocblas-7.1",
        note="Instinct MI210/MI250/MI250X. In the 5.15 CHIP table; 5.14 inferred. rocBLAS"
        " builds gfx90a with xnack+ and xnack-.",
    ),
    Asic(
        key="mi300", family="MI300 (Aqua Vanjaram)", generation="CDNA3", gc_ip="9.4.3",
        gfx="gfx942", apu=False,
        kfd_since=(6, 5), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; rocblas-7.1; libdrm-ids; pciids",
        note="MI300A (0x74A0, an APU although apu=False here), MI300X, MI308X, MI325X and their"
        " VFs. KFD reports GC 9.4.3 and 9.4.4 as gfx942 (gfx_target_version 90402); one GPU can"
        " show up as several KFD nodes (XCD partitions, num_xcc). Release inferred from the"
        " 2023 enablement (UNCERTAIN).",
    ),
    Asic(
        key="mi350", family="MI350", generation="CDNA4", gc_ip="9.5.0", gfx="gfx950",
        apu=False,
        kfd_since=(6, 15), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-current; rocblas-7.1; libdrm-ids",
        note="Instinct MI350X/MI355X and VFs. KFD maps GC 9.5.0 to gfx950; the first release"
        " was not verified (UNCERTAIN).",
    ),
    # --- RDNA1 (Navi1x): gfx10.1. ----------------------------------------------------
    # gfx10+ dGPUs need PCIe atomics only with old MEC firmware: KFD skips them with
    # 'PCI rejects atomics <mec><<min>' (minimum 145 on gfx10.1, 92 on gfx10.3).
    Asic(
        key="navi10", family="Navi10", generation="RDNA1", gc_ip="10.1.10", gfx="gfx1010",
        apu=False,
        kfd_since=(5, 4), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.4; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 5600/5700 (0x731F), Pro W5700. In the 5.4 table (read; 5.3 possible), which"
        " lists only 0x7310/0x7312/0x7318/0x731A/0x731F. 5.4 did not ask for PCIe atomics; by"
        " 5.15 KFD wants them unless the MEC firmware is >= 145. rocBLAS builds gfx1010 but AMD"
        " does not list RDNA1 as supported.",
    ),
    Asic(
        key="navi14", family="Navi14", generation="RDNA1", gc_ip="10.1.1", gfx="gfx1012",
        apu=False,
        kfd_since=(5, 5), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.4; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 5300/5500 (0x7340), Pro W5500. Not in the 5.4 table although amdgpu drove"
        " it; 5.5 inferred. Atomics needed only with MEC firmware < 145.",
    ),
    Asic(
        key="navi12", family="Navi12", generation="RDNA1", gc_ip="10.1.2", gfx="gfx1011",
        apu=False,
        kfd_since=(5, 5), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-navi12-2019; kfd-5.15; kfd-current; rocblas-7.1",
        note="Radeon Pro 5600M, Pro V520/V540 (cloud). KFD patch posted 2019-09-24; 5.5"
        " inferred. gfx1011 is not among rocBLAS's targets.",
    ),
    # --- RDNA2: gfx10.3. -------------------------------------------------------------
    Asic(
        key="cyan_skillfish", family="Cyan Skillfish", generation="RDNA1", gc_ip="10.1.3",
        gfx="gfx1013", apu=True,
        kfd_since=(5, 15), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.15; kfd-data; pciids",
        note="The APU of AMD's BC-250 board and PS5-derived parts (0x13DB, 0x13F9-0x13FC, 0x13FE,"
        " 0x143F; CHIP_CYAN_SKILLFISH, AMD_IS_APU). 5.15.99's kfd_supported_devices has"
        " [CHIP_CYAN_SKILLFISH] (gfx_target_version 100103); 5.10's KFD does not, so the first"
        " release is in 5.11-5.15 (UNCERTAIN; 5.15 used). GC 10.1.3/10.1.4 -> 100103 from 6.1 on."
        " No ROCm library ships gfx1013 code objects.",
    ),
    Asic(
        key="navi21", family="Navi21 (Sienna Cichlid)", generation="RDNA2", gc_ip="10.3.0",
        gfx="gfx1030", apu=False,
        kfd_since=(5, 9), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 6800/6800 XT/6900 XT/6950 XT, Pro W6800, V620. KFD enablement committed"
        " 2020-07-01. Atomics needed only with MEC firmware < 92.",
    ),
    Asic(
        key="navi22", family="Navi22 (Navy Flounder)", generation="RDNA2", gc_ip="10.3.2",
        gfx="gfx1031", apu=False,
        kfd_since=(5, 10), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 6700/6700 XT/6750 XT, RX 6800M. KFD enablement committed 2020-07-15 (5.9 or"
        " 5.10; the later one is used). No prebuilt gfx1031 code; people run ROCm with"
        " HSA_OVERRIDE_GFX_VERSION=10.3.0, which AMD does not support.",
    ),
    Asic(
        key="navi23", family="Navi23 (Dimgrey Cavefish)", generation="RDNA2", gc_ip="10.3.4",
        gfx="gfx1032", apu=False,
        kfd_since=(5, 11), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 6600/6600 XT/6650 XT, Pro W6600. KFD enablement committed 2020-10-12. No"
        " prebuilt gfx1032 code.",
    ),
    Asic(
        key="navi24", family="Navi24 (Beige Goby)", generation="RDNA2", gc_ip="10.3.5",
        gfx="gfx1034", apu=False,
        kfd_since=(5, 14), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-5.15; kfd-current; rocblas-7.1",
        note="RX 6300/6400/6500 XT, Pro W6300/W6400. In the 5.15 CHIP table; 5.14 inferred. No"
        " prebuilt gfx1034 code.",
    ),
    Asic(
        key="vangogh", family="Van Gogh", generation="RDNA2", gc_ip="10.3.1", gfx="gfx1033",
        apu=True,
        kfd_since=(5, 11), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-5.15; kfd-current; rocblas-7.1; libdrm-ids; pciids",
        note="Steam Deck LCD APU (0x163F, 'AMD Custom GPU 0405'). 0x1435 ('Sephiroth', Steam"
        " Deck OLED per pci.ids) is listed under Van Gogh on the assumption that it reports the"
        " same GC 10.3.1 (UNCERTAIN). In the 5.15 CHIP table; 5.11 inferred (UNCERTAIN).",
    ),
    Asic(
        key="rembrandt", family="Rembrandt (Yellow Carp)", generation="RDNA2", gc_ip="10.3.3",
        gfx="gfx1035", apu=True,
        kfd_since=(5, 14), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-5.15; kfd-current; rocblas-7.1",
        note="Radeon 660M/680M in Ryzen 6000 APUs (0x1681). KFD enablement committed"
        " 2021-06-04.",
    ),
    Asic(
        key="raphael", family="Raphael", generation="RDNA2", gc_ip="10.3.6", gfx="gfx1036",
        apu=True,
        kfd_since=(5, 19), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-6.1; kfd-current; rocblas-7.1; pciids",
        note="2-CU iGPU of Ryzen 7000 desktop CPUs (0x164E; libdrm names it '610M'). Granite"
        " Ridge (Ryzen 9000, 0x13C0) is listed here on the assumption that it reports the same"
        " GC 10.3.6 (UNCERTAIN). KFD for GC 10.3.6/10.3.7 committed 2022-06-03 (5.19, backported"
        " to 5.18.y per kfd-facts).",
    ),
    Asic(
        key="mendocino", family="Mendocino", generation="RDNA2", gc_ip="10.3.7", gfx="gfx1036",
        apu=True,
        kfd_since=(5, 19), kfd_since_uncertain=True, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-6.1; kfd-current; rocblas-7.1",
        note="Radeon 610M in Ryzen/Athlon 7020 APUs (0x1506). Same enablement as Raphael.",
    ),
    # --- RDNA3: gfx11. -----------------------------------------------------------------
    # Recent kernels ask gfx11 dGPUs for PCIe atomics unless the MEC firmware is RS64 >= 509
    # (6.1 had no such check), so an old linux-firmware can make a non-atomics slot fail.
    Asic(
        key="navi31", family="Navi31", generation="RDNA3", gc_ip="11.0.0", gfx="gfx1100",
        apu=False,
        kfd_since=(6, 0), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-6.1; kfd-current; rocblas-7.1",
        note="RX 7900 XTX/XT/GRE, RX 7900M (0x744C), Pro W7900/W7800 (0x7448, 0x7449, 0x744A,"
        " 0x744B, 0x745E). 0x7440 is not a Navi31 id. GFX11 KFD was committed in May 2022 for"
        " 6.0; later 6.x kernels and firmware fixed MES/CWSR problems, but that is not the KFD"
        " enablement.",
    ),
    Asic(
        key="navi32", family="Navi32", generation="RDNA3", gc_ip="11.0.3", gfx="gfx1101",
        apu=False,
        kfd_since=(6, 1), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-6.1; kfd-current; rocblas-7.1; pciids",
        note="RX 7700/7700 XT/7800 XT, RX 7800M (0x747E), Pro W7700, V710. KFD reports"
        " gfx_target_version 110001 (hardware GC 11.0.3, compiler target gfx1101). GC 11.0.3 is"
        " in a 6.1-era tree that predates 11.0.4 (6.2); 6.1 inferred.",
    ),
    Asic(
        key="navi33", family="Navi33", generation="RDNA3", gc_ip="11.0.2", gfx="gfx1102",
        apu=False,
        kfd_since=(6, 0), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-6.1; kfd-current; rocblas-7.1; pciids",
        note="RX 7600/7600 XT/7650 GRE and mobile 7600M/7700S (0x7480, 0x7483), RX 7400/7300,"
        " Pro W7400/W7500/W7600; 0x7481 is the Steam Machine GPU (Navi 33 per pci.ids).",
    ),
    Asic(
        key="phoenix", family="Phoenix/Hawk Point", generation="RDNA3", gc_ip="11.0.1",
        gfx="gfx1103", apu=True,
        kfd_since=(6, 0), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-facts; kfd-6.1; kfd-current; rocblas-7.1; pciids",
        note="Radeon 740M/760M/780M in Ryzen 7040 (0x15BF) and the Hawk Point refresh 0x1900"
        " ('HawkPoint1' in pci.ids, mapped to the Phoenix1 die by inference). The 780M is not"
        " 0x14E4 (that is Broadcom's vendor id). gfx1103 entered rocBLAS's default targets with"
        " ROCm 7.1.",
    ),
    Asic(
        key="phoenix2", family="Phoenix2/Hawk Point", generation="RDNA3", gc_ip="11.0.4",
        gfx="gfx1103", apu=True,
        kfd_since=(6, 1), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="kfd-data; kfd-facts; kfd-current; rocblas-7.1; pciids",
        note="Radeon 740M (0x15C8) and the Hawk Point refresh 0x1901 ('HawkPoint2' in pci.ids,"
        " mapped here by inference). KFD for GC 11.0.4 committed 2022-11-29; Debian 12's 6.1.y"
        " kfd_device.c maps it to gfx1103 (a stable backport: 6.1.0 itself may lack it), so on"
        " 6.1.y a Phoenix2 without KFD is a firmware or configuration problem, not the kernel.",
    ),
    # --- RDNA3.5 APUs: gfx11.5. ----------------------------------------------------------
    Asic(
        key="strix", family="Strix Point", generation="RDNA3.5", gc_ip="11.5.0",
        gfx="gfx1150", apu=True,
        kfd_since=(6, 7), kfd_since_uncertain=False, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="drm-next-6.7; kfd-current; rocblas-7.1",
        note="Radeon 880M/890M (0x150E). KFD support for GC 11.5.0 was in the amdgpu pull for"
        " 6.7.",
    ),
    Asic(
        key="strix_halo", family="Strix Halo", generation="RDNA3.5", gc_ip="11.5.1",
        gfx="gfx1151", apu=True,
        kfd_since=(6, 9), kfd_since_uncertain=False, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="drm-next-6.9; kfd-current; rocblas-7.1",
        note="Radeon 8040S/8050S/8060S (0x1586). KFD support for GC 11.5.1 was in the amdgpu"
        " pull for 6.9; MES hangs are a known runtime failure on it.",
    ),
    Asic(
        key="krackan", family="Krackan Point", generation="RDNA3.5", gc_ip="11.5.2",
        gfx="gfx1152", apu=True,
        kfd_since=(6, 11), kfd_since_uncertain=False, rocm_prebuilt=False,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="drm-next-6.11; kfd-current; rocblas-7.1",
        note="Radeon 840M/860M (0x1114). KFD support for GC 11.5.2 was in the amdgpu pull for"
        " 6.11. 0x1902 ('Krackan2' in pci.ids, 820M/840M) is left out: its GC version (11.5.3?)"
        " was not verified. No prebuilt gfx1152 code in rocBLAS 7.1.",
    ),
    # --- RDNA4: gfx12. PCIe atomics needed unless the MEC firmware is >= 2090. -----------
    Asic(
        key="navi44", family="Navi44", generation="RDNA4", gc_ip="12.0.0", gfx="gfx1200",
        apu=False,
        kfd_since=(6, 11), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="drm-next-6.11; kfd-current; rocblas-7.1; pciids",
        note="RX 9060/9060 XT (0x7590). GC 12.0.x was already in kgd2kfd_probe when the 6.11"
        " pull was prepared (June 2024); 6.11 inferred (UNCERTAIN).",
    ),
    Asic(
        key="navi48", family="Navi48", generation="RDNA4", gc_ip="12.0.1", gfx="gfx1201",
        apu=False,
        kfd_since=(6, 11), kfd_since_uncertain=True, rocm_prebuilt=True,
        needs_pcie_atomics=False, iommu_v2_until=None,
        source="drm-next-6.11; kfd-current; rocblas-7.1; pciids",
        note="RX 9070/9070 XT/9070 GRE (0x7550), Radeon AI PRO R9700/R9600D (0x7551). Same"
        " enablement as Navi44 (6.11 inferred, UNCERTAIN).",
    ),
)
# fmt: on


# (device, revision or None for any, marketing name, Asic.key, source key). Plain
# literal tuples: Python loads them as one constant, so importing the table
# costs nothing on the boot path; PciId records are built on first lookup.
PCI_ROWS: tuple[tuple[int, int | None, str, str, str], ...] = (
    # --- Southern Islands: never KFD, listed so that kfdguard can say so.
    (0x6780, 0x00, "AMD FirePro W9000", "tahiti", "libdrm-ids"),
    (0x6784, 0x00, "ATI FirePro V (FireGL V) Graphics Adapter", "tahiti", "libdrm-ids"),
    (0x6788, 0x00, "ATI FirePro V (FireGL V) Graphics Adapter", "tahiti", "libdrm-ids"),
    (0x678A, 0x00, "AMD FirePro W8000", "tahiti", "libdrm-ids"),
    (0x6798, 0x00, "AMD Radeon R9 200 / HD 7900 Series", "tahiti", "libdrm-ids"),
    (0x6799, 0x00, "AMD Radeon HD 7900 Series", "tahiti", "libdrm-ids"),
    (0x679A, 0x00, "AMD Radeon HD 7900 Series", "tahiti", "libdrm-ids"),
    (0x679B, 0x00, "AMD Radeon HD 7900 Series", "tahiti", "libdrm-ids"),
    (0x679E, 0x00, "AMD Radeon HD 7800 Series", "tahiti", "libdrm-ids"),
    (0x6800, 0x00, "AMD Radeon HD 7970M", "pitcairn", "libdrm-ids"),
    (0x6801, 0x00, "AMD Radeon HD 8970M", "pitcairn", "libdrm-ids"),
    (0x6806, 0x00, "AMD Radeon R9 M290X", "pitcairn", "libdrm-ids"),
    (0x6808, 0x00, "ATI FirePro V (FireGL V) Graphics Adapter", "pitcairn", "libdrm-ids"),
    (0x6809, 0x00, "ATI FirePro W5000", "pitcairn", "libdrm-ids"),
    (0x6810, 0x00, "AMD Radeon R9 200 Series", "pitcairn", "libdrm-ids"),
    (0x6810, 0x81, "AMD Radeon R9 370 Series", "pitcairn", "libdrm-ids"),
    (0x6811, 0x00, "AMD Radeon R9 200 Series", "pitcairn", "libdrm-ids"),
    (0x6811, 0x81, "AMD Radeon R7 370 Series", "pitcairn", "libdrm-ids"),
    (0x6818, 0x00, "AMD Radeon HD 7800 Series", "pitcairn", "libdrm-ids"),
    (0x6819, 0x00, "AMD Radeon HD 7800 Series", "pitcairn", "libdrm-ids"),
    (0x6820, 0x00, "AMD Radeon R9 M275X", "verde", "libdrm-ids"),
    (0x6820, 0x81, "AMD Radeon R9 M375", "verde", "libdrm-ids"),
    (0x6820, 0x83, "AMD Radeon R9 M375X", "verde", "libdrm-ids"),
    (0x6821, 0x00, "AMD Radeon R9 M200X Series", "verde", "libdrm-ids"),
    (0x6821, 0x83, "AMD Radeon R9 M370X", "verde", "libdrm-ids"),
    (0x6821, 0x87, "AMD Radeon R7 M380", "verde", "libdrm-ids"),
    (0x6822, 0x00, "AMD Radeon E8860", "verde", "libdrm-ids"),
    (0x6823, 0x00, "AMD Radeon R9 M200X Series", "verde", "libdrm-ids"),
    (0x6825, 0x00, "AMD Radeon HD 7800M Series", "verde", "libdrm-ids"),
    (0x6826, 0x00, "AMD Radeon HD 7700M Series", "verde", "libdrm-ids"),
    (0x6827, 0x00, "AMD Radeon HD 7800M Series", "verde", "libdrm-ids"),
    (0x6828, 0x00, "AMD FirePro W600", "verde", "libdrm-ids"),
    (0x682B, 0x00, "AMD Radeon HD 8800M Series", "verde", "libdrm-ids"),
    (0x682B, 0x87, "AMD Radeon R9 M360", "verde", "libdrm-ids"),
    (0x682C, 0x00, "AMD FirePro W4100", "verde", "libdrm-ids"),
    (0x682D, 0x00, "AMD Radeon HD 7700M Series", "verde", "libdrm-ids"),
    (0x682F, 0x00, "AMD Radeon HD 7700M Series", "verde", "libdrm-ids"),
    (0x6835, 0x00, "AMD Radeon R7 Series / HD 9000 Series", "verde", "libdrm-ids"),
    (0x6837, 0x00, "AMD Radeon HD 7700 Series", "verde", "libdrm-ids"),
    (0x683D, 0x00, "AMD Radeon HD 7700 Series", "verde", "libdrm-ids"),
    (0x683F, 0x00, "AMD Radeon HD 7700 Series", "verde", "libdrm-ids"),
    (0x6600, 0x00, "AMD Radeon HD 8600 / 8700M", "oland", "libdrm-ids"),
    (0x6600, 0x81, "AMD Radeon R7 M370", "oland", "libdrm-ids"),
    (0x6601, 0x00, "AMD Radeon HD 8500M / 8700M", "oland", "libdrm-ids"),
    (0x6604, 0x00, "AMD Radeon R7 M265 Series", "oland", "libdrm-ids"),
    (0x6604, 0x81, "AMD Radeon R7 M350", "oland", "libdrm-ids"),
    (0x6605, 0x00, "AMD Radeon R7 M260 Series", "oland", "libdrm-ids"),
    (0x6605, 0x81, "AMD Radeon R7 M340", "oland", "libdrm-ids"),
    (0x6606, 0x00, "AMD Radeon HD 8790M", "oland", "libdrm-ids"),
    (0x6607, 0x00, "AMD Radeon R5 M240", "oland", "libdrm-ids"),
    (0x6608, 0x00, "AMD FirePro W2100", "oland", "libdrm-ids"),
    (0x6610, 0x00, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6610, 0x81, "AMD Radeon R7 350", "oland", "libdrm-ids"),
    (0x6610, 0x83, "AMD Radeon R5 340", "oland", "libdrm-ids"),
    (0x6610, 0x87, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6611, 0x00, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6611, 0x87, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6613, 0x00, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6617, 0x00, "AMD Radeon R7 240 Series", "oland", "libdrm-ids"),
    (0x6617, 0x87, "AMD Radeon R7 200 Series", "oland", "libdrm-ids"),
    (0x6617, 0xC7, "AMD Radeon R7 240 Series", "oland", "libdrm-ids"),
    (0x6660, 0x00, "AMD Radeon HD 8600M Series", "hainan", "libdrm-ids"),
    (0x6660, 0x81, "AMD Radeon R5 M335", "hainan", "libdrm-ids"),
    (0x6660, 0x83, "AMD Radeon R5 M330", "hainan", "libdrm-ids"),
    (0x6663, 0x00, "AMD Radeon HD 8500M Series", "hainan", "libdrm-ids"),
    (0x6663, 0x83, "AMD Radeon R5 M320", "hainan", "libdrm-ids"),
    (0x6664, 0x00, "AMD Radeon R5 M200 Series", "hainan", "libdrm-ids"),
    (0x6665, 0x00, "AMD Radeon R5 M230 Series", "hainan", "libdrm-ids"),
    (0x6665, 0x83, "AMD Radeon R5 M320", "hainan", "libdrm-ids"),
    (0x6665, 0xC3, "AMD Radeon R5 M435", "hainan", "libdrm-ids"),
    (0x6667, 0x00, "AMD Radeon R5 M200 Series", "hainan", "libdrm-ids"),
    (0x666F, 0x00, "AMD Radeon HD 8500M", "hainan", "libdrm-ids"),
    # --- Sea Islands. None-revision rows: ids named only by kernel KFD tables/pci.ids.
    (0x1309, 0x00, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130A, 0x00, "AMD Radeon R6 Graphics", "kaveri", "libdrm-ids"),
    (0x130B, 0x00, "AMD Radeon R4 Graphics", "kaveri", "libdrm-ids"),
    (0x130C, 0x00, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130D, 0x00, "AMD Radeon R6 Graphics", "kaveri", "libdrm-ids"),
    (0x130E, 0x00, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x130F, 0x00, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130F, 0xD4, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130F, 0xD5, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130F, 0xD6, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x130F, 0xD7, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x1313, 0x00, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x1313, 0xD4, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x1313, 0xD5, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x1313, 0xD6, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x1315, 0x00, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1315, 0xD4, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1315, 0xD5, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1315, 0xD6, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1315, 0xD7, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1316, 0x00, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x1318, 0x00, "AMD Radeon R5 Graphics", "kaveri", "libdrm-ids"),
    (0x131B, 0x00, "AMD Radeon R4 Graphics", "kaveri", "libdrm-ids"),
    (0x131C, 0x00, "AMD Radeon R7 Graphics", "kaveri", "libdrm-ids"),
    (0x131D, 0x00, "AMD Radeon R6 Graphics", "kaveri", "libdrm-ids"),
    (0x1304, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1305, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1306, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1307, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1310, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1311, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1312, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x1317, None, "Kaveri [kernel KFD table]", "kaveri", "kfd-5.4"),
    (0x67A0, 0x00, "AMD Radeon FirePro W9100", "hawaii", "libdrm-ids"),
    (0x67A1, 0x00, "AMD Radeon FirePro W8100", "hawaii", "libdrm-ids"),
    (0x67B0, 0x00, "AMD Radeon R9 200 Series", "hawaii", "libdrm-ids"),
    (0x67B0, 0x80, "AMD Radeon R9 390 Series", "hawaii", "libdrm-ids"),
    (0x67B1, 0x00, "AMD Radeon R9 200 Series", "hawaii", "libdrm-ids"),
    (0x67B1, 0x80, "AMD Radeon R9 390 Series", "hawaii", "libdrm-ids"),
    (0x67B9, 0x00, "AMD Radeon R9 200 Series", "hawaii", "libdrm-ids"),
    (0x67A2, None, "Hawaii GL", "hawaii", "kfd-5.4"),
    (0x67A8, None, "Hawaii", "hawaii", "kfd-5.4"),
    (0x67A9, None, "Hawaii", "hawaii", "kfd-5.4"),
    (0x67AA, None, "Hawaii", "hawaii", "kfd-5.4"),
    (0x67B8, None, "Radeon R9 290X Engineering Sample", "hawaii", "kfd-5.4"),
    (0x67BA, None, "Hawaii [kernel KFD table]", "hawaii", "kfd-5.4"),
    (0x67BE, None, "Hawaii LE", "hawaii", "kfd-5.4"),
    (0x6640, 0x00, "AMD Radeon HD 8950", "bonaire", "libdrm-ids"),
    (0x6640, 0x80, "AMD Radeon R9 M380", "bonaire", "libdrm-ids"),
    (0x6646, 0x00, "AMD Radeon R9 M280X", "bonaire", "libdrm-ids"),
    (0x6646, 0x80, "AMD Radeon R9 M470X", "bonaire", "libdrm-ids"),
    (0x6647, 0x00, "AMD Radeon R9 M200X Series", "bonaire", "libdrm-ids"),
    (0x6647, 0x80, "AMD Radeon R9 M380", "bonaire", "libdrm-ids"),
    (0x6649, 0x00, "AMD FirePro W5100", "bonaire", "libdrm-ids"),
    (0x6658, 0x00, "AMD Radeon R7 200 Series", "bonaire", "libdrm-ids"),
    (0x665C, 0x00, "AMD Radeon HD 7700 Series", "bonaire", "libdrm-ids"),
    (0x665D, 0x00, "AMD Radeon R7 200 Series", "bonaire", "libdrm-ids"),
    (0x665F, 0x81, "AMD Radeon R7 360 Series", "bonaire", "libdrm-ids"),
    (0x9830, 0x00, "AMD Radeon HD 8400 / R3 Series", "kabini", "libdrm-ids"),
    (0x9831, 0x00, "AMD Radeon HD 8400E", "kabini", "libdrm-ids"),
    (0x9832, 0x00, "AMD Radeon HD 8330", "kabini", "libdrm-ids"),
    (0x9833, 0x00, "AMD Radeon HD 8330E", "kabini", "libdrm-ids"),
    (0x9834, 0x00, "AMD Radeon HD 8210", "kabini", "libdrm-ids"),
    (0x9835, 0x00, "AMD Radeon HD 8210E", "kabini", "libdrm-ids"),
    (0x9836, 0x00, "AMD Radeon HD 8200 / R3 Series", "kabini", "libdrm-ids"),
    (0x9837, 0x00, "AMD Radeon HD 8280E", "kabini", "libdrm-ids"),
    (0x9838, 0x00, "AMD Radeon HD 8200 / R3 series", "kabini", "libdrm-ids"),
    (0x9839, 0x00, "AMD Radeon HD 8180", "kabini", "libdrm-ids"),
    (0x983D, 0x00, "AMD Radeon HD 8250", "kabini", "libdrm-ids"),
    (0x9850, 0x00, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9850, 0x03, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9850, 0x40, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9850, 0x45, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x00, "AMD Radeon R4 Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x01, "AMD Radeon R5E Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x05, "AMD Radeon R5 Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x06, "AMD Radeon R5E Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x40, "AMD Radeon R4 Graphics", "mullins", "libdrm-ids"),
    (0x9851, 0x45, "AMD Radeon R5 Graphics", "mullins", "libdrm-ids"),
    (0x9852, 0x00, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9852, 0x40, "AMD Radeon E1 Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x00, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x01, "AMD Radeon R4E Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x03, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x05, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x06, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x07, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x08, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9853, 0x40, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x00, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x01, "AMD Radeon R3E Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x02, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x05, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x06, "AMD Radeon R4 Graphics", "mullins", "libdrm-ids"),
    (0x9854, 0x07, "AMD Radeon R3 Graphics", "mullins", "libdrm-ids"),
    (0x9855, 0x02, "AMD Radeon R6 Graphics", "mullins", "libdrm-ids"),
    (0x9855, 0x05, "AMD Radeon R4 Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x00, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x01, "AMD Radeon R2E Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x02, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x05, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x06, "AMD Radeon R2 Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x07, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x08, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    (0x9856, 0x13, "AMD Radeon R1E Graphics", "mullins", "libdrm-ids"),
    # --- Volcanic Islands and Polaris (gfx8).
    (0x9874, 0x81, "AMD Radeon R6 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0x84, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0x85, "AMD Radeon R6 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0x87, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0x88, "AMD Radeon R7E Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0x89, "AMD Radeon R6E Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC4, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC5, "AMD Radeon R6 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC6, "AMD Radeon R6 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC7, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC8, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xC9, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xCA, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xCB, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xCC, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xCD, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xCE, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE1, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE2, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE3, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE4, "AMD Radeon R7 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE5, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9874, 0xE6, "AMD Radeon R5 Graphics", "carrizo", "libdrm-ids"),
    (0x9870, None, "Carrizo [kernel KFD table]", "carrizo", "kfd-5.4"),
    (0x9875, None, "Carrizo [kernel KFD table]", "carrizo", "kfd-5.4"),
    (0x9876, None, "Carrizo [kernel KFD table]", "carrizo", "kfd-5.4"),
    (0x9877, None, "Carrizo [kernel KFD table]", "carrizo", "kfd-5.4"),
    (0x98E4, 0x80, "AMD Radeon R5E Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0x81, "AMD Radeon R4E Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0x83, "AMD Radeon R2E Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0x84, "AMD Radeon R2E Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0x86, "AMD Radeon R1E Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC0, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC1, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC2, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC4, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC6, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC8, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xC9, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xCA, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xD0, "AMD Radeon R2 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xD1, "AMD Radeon R2 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xD2, "AMD Radeon R2 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xD4, "AMD Radeon R2 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xD9, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xDA, "AMD Radeon R5 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xDB, "AMD Radeon R3 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xE1, "AMD Radeon R3 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xE2, "AMD Radeon R3 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xE9, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xEA, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x98E4, 0xEB, "AMD Radeon R4 Graphics", "stoney", "libdrm-ids"),
    (0x6900, 0x00, "AMD Radeon R7 M260", "topaz", "libdrm-ids"),
    (0x6900, 0x81, "AMD Radeon R7 M360", "topaz", "libdrm-ids"),
    (0x6900, 0x83, "AMD Radeon R7 M340", "topaz", "libdrm-ids"),
    (0x6900, 0xC1, "AMD Radeon R5 M465 Series", "topaz", "libdrm-ids"),
    (0x6900, 0xC3, "AMD Radeon R5 M445 Series", "topaz", "libdrm-ids"),
    (0x6900, 0xD1, "AMD Radeon 530 Series", "topaz", "libdrm-ids"),
    (0x6900, 0xD3, "AMD Radeon 530 Series", "topaz", "libdrm-ids"),
    (0x6901, 0x00, "AMD Radeon R5 M255", "topaz", "libdrm-ids"),
    (0x6902, 0x00, "AMD Radeon Series", "topaz", "libdrm-ids"),
    (0x6907, 0x00, "AMD Radeon R5 M255", "topaz", "libdrm-ids"),
    (0x6907, 0x87, "AMD Radeon R5 M315", "topaz", "libdrm-ids"),
    (0x6920, 0x00, "AMD Radeon R9 M395X", "tonga", "libdrm-ids"),
    (0x6920, 0x01, "AMD Radeon R9 M390X", "tonga", "libdrm-ids"),
    (0x6921, 0x00, "AMD Radeon R9 M390X", "tonga", "libdrm-ids"),
    (0x6929, 0x00, "AMD FirePro S7150", "tonga", "libdrm-ids"),
    (0x6929, 0x01, "AMD FirePro S7100X", "tonga", "libdrm-ids"),
    (0x692B, 0x00, "AMD FirePro W7100", "tonga", "libdrm-ids"),
    (0x6938, 0x00, "AMD Radeon R9 200 Series", "tonga", "libdrm-ids"),
    (0x6938, 0xF0, "AMD Radeon R9 200 Series", "tonga", "libdrm-ids"),
    (0x6938, 0xF1, "AMD Radeon R9 380 Series", "tonga", "libdrm-ids"),
    (0x6939, 0x00, "AMD Radeon R9 200 Series", "tonga", "libdrm-ids"),
    (0x6939, 0xF0, "AMD Radeon R9 200 Series", "tonga", "libdrm-ids"),
    (0x6939, 0xF1, "AMD Radeon R9 380 Series", "tonga", "libdrm-ids"),
    (0x6928, None, "Tonga [kernel KFD table]", "tonga", "kfd-5.4"),
    (0x692F, None, "FirePro S7150V (Tonga VF)", "tonga", "kfd-4.19"),
    (0x6930, None, "Radeon R9 380 4GB", "tonga", "pciids"),
    (0x7300, 0xC1, "AMD FirePro S9300 x2", "fiji", "libdrm-ids"),
    (0x7300, 0xC8, "AMD Radeon R9 Fury Series", "fiji", "libdrm-ids"),
    (0x7300, 0xC9, "AMD Radeon Pro Duo", "fiji", "libdrm-ids"),
    (0x7300, 0xCA, "AMD Radeon R9 Fury Series", "fiji", "libdrm-ids"),
    (0x7300, 0xCB, "AMD Radeon R9 Fury Series", "fiji", "libdrm-ids"),
    (0x730F, None, "Fiji VF [kernel KFD table]", "fiji", "kfd-5.4"),
    (0x67C0, 0x00, "AMD Radeon Pro WX 7100 Graphics", "polaris10", "libdrm-ids"),
    (0x67C0, 0x80, "AMD Radeon E9550", "polaris10", "libdrm-ids"),
    (0x67C2, 0x01, "AMD Radeon Pro V7350x2", "polaris10", "libdrm-ids"),
    (0x67C2, 0x02, "AMD Radeon Pro V7300X", "polaris10", "libdrm-ids"),
    (0x67C4, 0x00, "AMD Radeon Pro WX 7100 Graphics", "polaris10", "libdrm-ids"),
    (0x67C4, 0x80, "AMD Radeon E9560 / E9565 Graphics", "polaris10", "libdrm-ids"),
    (0x67C7, 0x00, "AMD Radeon Pro WX 5100 Graphics", "polaris10", "libdrm-ids"),
    (0x67C7, 0x80, "AMD Radeon E9390 Graphics", "polaris10", "libdrm-ids"),
    (0x67D0, 0x01, "AMD Radeon Pro V7350x2", "polaris10", "libdrm-ids"),
    (0x67D0, 0x02, "AMD Radeon Pro V7300X", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC0, "AMD Radeon Pro 580X", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC1, "AMD Radeon RX 580 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC2, "AMD Radeon RX 570 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC3, "AMD Radeon RX 580 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC4, "AMD Radeon RX 480 Graphics", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC5, "AMD Radeon RX 470 Graphics", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC6, "AMD Radeon RX 570 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xC7, "AMD Radeon RX 480 Graphics", "polaris10", "libdrm-ids"),
    (0x67DF, 0xCF, "AMD Radeon RX 470 Graphics", "polaris10", "libdrm-ids"),
    (0x67DF, 0xD7, "AMD Radeon RX 470 Graphics", "polaris10", "libdrm-ids"),
    (0x67DF, 0xE0, "AMD Radeon RX 470 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xE1, "AMD Radeon RX 590 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xE3, "AMD Radeon RX Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xE7, "AMD Radeon RX 580 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xEB, "AMD Radeon Pro 580X", "polaris10", "libdrm-ids"),
    (0x67DF, 0xEF, "AMD Radeon RX 570 Series", "polaris10", "libdrm-ids"),
    (0x67DF, 0xF7, "AMD Radeon RX P30PH", "polaris10", "libdrm-ids"),
    (0x67DF, 0xFF, "AMD Radeon RX 470 Series", "polaris10", "libdrm-ids"),
    (0x6FDF, 0xE7, "AMD Radeon RX 590 GME", "polaris10", "libdrm-ids"),
    (0x6FDF, 0xEF, "AMD Radeon RX 580 2048SP", "polaris10", "libdrm-ids"),
    (0x67C1, None, "Polaris10 [kernel KFD table]", "polaris10", "kfd-5.4"),
    (0x67C8, None, "Polaris10 [kernel KFD table]", "polaris10", "kfd-5.4"),
    (0x67C9, None, "Polaris10 [kernel KFD table]", "polaris10", "kfd-5.4"),
    (0x67CA, None, "Ellesmere [Polaris10]", "polaris10", "kfd-5.4"),
    (0x67CC, None, "Ellesmere [Polaris10]", "polaris10", "kfd-5.4"),
    (0x67CF, None, "Ellesmere [Polaris10]", "polaris10", "kfd-5.4"),
    (0x67E0, 0x00, "AMD Radeon Pro WX Series", "polaris11", "libdrm-ids"),
    (0x67E3, 0x00, "AMD Radeon Pro WX 4100", "polaris11", "libdrm-ids"),
    (0x67E8, 0x00, "AMD Radeon Pro WX Series", "polaris11", "libdrm-ids"),
    (0x67E8, 0x01, "AMD Radeon Pro WX Series", "polaris11", "libdrm-ids"),
    (0x67E8, 0x80, "AMD Radeon E9260 Graphics", "polaris11", "libdrm-ids"),
    (0x67EB, 0x00, "AMD Radeon Pro V5300X", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC0, "AMD Radeon RX Graphics", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC1, "AMD Radeon RX 460 Graphics", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC2, "AMD Radeon Pro Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC3, "AMD Radeon RX Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC5, "AMD Radeon RX 460 Graphics", "polaris11", "libdrm-ids"),
    (0x67EF, 0xC7, "AMD Radeon RX Graphics", "polaris11", "libdrm-ids"),
    (0x67EF, 0xCF, "AMD Radeon RX 460 Graphics", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE0, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE1, "AMD Radeon RX Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE2, "AMD Radeon RX 560X", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE3, "AMD Radeon RX Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE5, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xE7, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xEF, "AMD Radeon 550 Series", "polaris11", "libdrm-ids"),
    (0x67EF, 0xFF, "AMD Radeon RX 460 Graphics", "polaris11", "libdrm-ids"),
    (0x67FF, 0xC0, "AMD Radeon Pro 465", "polaris11", "libdrm-ids"),
    (0x67FF, 0xC1, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67FF, 0xCF, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67FF, 0xEF, "AMD Radeon RX 560 Series", "polaris11", "libdrm-ids"),
    (0x67FF, 0xFF, "AMD Radeon RX 550 Series", "polaris11", "libdrm-ids"),
    (0x67E1, None, "Baffin [Polaris11]", "polaris11", "kfd-5.4"),
    (0x67E7, None, "Polaris11 [kernel KFD table]", "polaris11", "kfd-5.4"),
    (0x67E9, None, "Baffin [Polaris11]", "polaris11", "kfd-5.4"),
    (0x6980, 0x00, "AMD Radeon Pro WX 3100", "polaris12", "libdrm-ids"),
    (0x6981, 0x00, "AMD Radeon Pro WX 3200 Series", "polaris12", "libdrm-ids"),
    (0x6981, 0x01, "AMD Radeon Pro WX 3200 Series", "polaris12", "libdrm-ids"),
    (0x6981, 0x10, "AMD Radeon Pro WX 3200 Series", "polaris12", "libdrm-ids"),
    (0x6985, 0x00, "AMD Radeon Pro WX 3100", "polaris12", "libdrm-ids"),
    (0x6986, 0x00, "AMD Radeon Pro WX 2100", "polaris12", "libdrm-ids"),
    (0x6987, 0x80, "AMD Embedded Radeon E9171", "polaris12", "libdrm-ids"),
    (0x6987, 0xC0, "AMD Radeon 550X Series", "polaris12", "libdrm-ids"),
    (0x6987, 0xC1, "AMD Radeon RX 640", "polaris12", "libdrm-ids"),
    (0x6987, 0xC3, "AMD Radeon 540X Series", "polaris12", "libdrm-ids"),
    (0x6987, 0xC7, "AMD Radeon 540", "polaris12", "libdrm-ids"),
    (0x6995, 0x00, "AMD Radeon Pro WX 2100", "polaris12", "libdrm-ids"),
    (0x6997, 0x00, "AMD Radeon Pro WX 2100", "polaris12", "libdrm-ids"),
    (0x699F, 0x81, "AMD Embedded Radeon E9170 Series", "polaris12", "libdrm-ids"),
    (0x699F, 0xC0, "AMD Radeon 500 Series", "polaris12", "libdrm-ids"),
    (0x699F, 0xC1, "AMD Radeon 540 Series", "polaris12", "libdrm-ids"),
    (0x699F, 0xC3, "AMD Radeon 500 Series", "polaris12", "libdrm-ids"),
    (0x699F, 0xC7, "AMD Radeon RX 550 / 550 Series", "polaris12", "libdrm-ids"),
    (0x699F, 0xC9, "AMD Radeon 540", "polaris12", "libdrm-ids"),
    (0x694C, 0xC0, "AMD Radeon RX Vega M GH Graphics", "vegam", "libdrm-ids"),
    (0x694E, 0xC0, "AMD Radeon RX Vega M GL Graphics", "vegam", "libdrm-ids"),
    (0x694F, None, "Radeon Pro WX Vega M GL", "vegam", "kfd-5.4"),
    # --- Vega (gfx9). libdrm names no Renoir-class id; those come from pci.ids.
    (0x6860, 0x00, "AMD Radeon Instinct MI25", "vega10", "libdrm-ids"),
    (0x6860, 0x01, "AMD Radeon Instinct MI25", "vega10", "libdrm-ids"),
    (0x6860, 0x02, "AMD Radeon Instinct MI25", "vega10", "libdrm-ids"),
    (0x6860, 0x03, "AMD Radeon Pro V340", "vega10", "libdrm-ids"),
    (0x6860, 0x04, "AMD Radeon Instinct MI25x2", "vega10", "libdrm-ids"),
    (0x6860, 0x07, "AMD Radeon Pro V320", "vega10", "libdrm-ids"),
    (0x6861, 0x00, "AMD Radeon Pro WX 9100", "vega10", "libdrm-ids"),
    (0x6862, 0x00, "AMD Radeon Pro SSG", "vega10", "libdrm-ids"),
    (0x6863, 0x00, "AMD Radeon Vega Frontier Edition", "vega10", "libdrm-ids"),
    (0x6864, 0x03, "AMD Radeon Pro V340", "vega10", "libdrm-ids"),
    (0x6864, 0x04, "AMD Radeon Instinct MI25x2", "vega10", "libdrm-ids"),
    (0x6864, 0x05, "AMD Radeon Pro V340", "vega10", "libdrm-ids"),
    (0x6868, 0x00, "AMD Radeon Pro WX 8200", "vega10", "libdrm-ids"),
    (0x686C, 0x00, "AMD Radeon Instinct MI25 MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x01, "AMD Radeon Instinct MI25 MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x02, "AMD Radeon Instinct MI25 MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x03, "AMD Radeon Pro V340 MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x04, "AMD Radeon Instinct MI25x2 MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x05, "AMD Radeon Pro V340L MxGPU", "vega10", "libdrm-ids"),
    (0x686C, 0x06, "AMD Radeon Instinct MI25 MxGPU", "vega10", "libdrm-ids"),
    (0x687F, 0x01, "AMD Radeon RX Vega", "vega10", "libdrm-ids"),
    (0x687F, 0xC0, "AMD Radeon RX Vega", "vega10", "libdrm-ids"),
    (0x687F, 0xC1, "AMD Radeon RX Vega", "vega10", "libdrm-ids"),
    (0x687F, 0xC3, "AMD Radeon RX Vega", "vega10", "libdrm-ids"),
    (0x687F, 0xC7, "AMD Radeon RX Vega", "vega10", "libdrm-ids"),
    (0x6867, None, "Radeon Pro Vega 56", "vega10", "kfd-5.4"),
    (0x6869, None, "Radeon Pro Vega 48", "vega10", "kfd-5.4"),
    (0x686A, None, "Vega 10 LEA", "vega10", "kfd-5.4"),
    (0x686B, None, "Radeon Pro Vega 64X", "vega10", "kfd-5.4"),
    (0x686D, None, "Vega 10 GLXTA", "vega10", "kfd-5.4"),
    (0x686E, None, "Vega 10 GLXLA", "vega10", "kfd-5.4"),
    (0x686F, None, "Vega10 [kernel KFD table]", "vega10", "kfd-5.4"),
    (0x15DD, 0x81, "AMD Ryzen Embedded V1807B with Radeon Vega Gfx", "raven", "libdrm-ids"),
    (0x15DD, 0x82, "AMD Ryzen Embedded V1756B with Radeon Vega Gfx", "raven", "libdrm-ids"),
    (0x15DD, 0x83, "AMD Ryzen Embedded V1605B with Radeon Vega Gfx", "raven", "libdrm-ids"),
    (0x15DD, 0x84, "AMD Radeon Vega 6 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0x85, "AMD Ryzen Embedded V1202B with Radeon Vega Gfx", "raven", "libdrm-ids"),
    (0x15DD, 0x86, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0x88, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC1, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC2, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC3, "AMD Radeon Vega 3 / 10 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC4, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC5, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC6, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC8, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xC9, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xCA, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xCB, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xCC, "AMD Radeon Vega 6 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xCE, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xCF, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD0, "AMD Radeon Vega 10 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD1, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD3, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD5, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD6, "AMD Radeon Vega 11 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD7, "AMD Radeon Vega 8 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD8, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xD9, "AMD Radeon Vega 6 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xE1, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15DD, 0xE2, "AMD Radeon Vega 3 Graphics", "raven", "libdrm-ids"),
    (0x15D8, 0x00, "AMD Radeon RX Vega 8 Graphics WS", "picasso", "libdrm-ids"),
    (0x15D8, 0x91, "AMD Ryzen Embedded R1606G with Radeon Vega Gfx", "picasso", "libdrm-ids"),
    (0x15D8, 0x92, "AMD Ryzen Embedded R1505G with Radeon Vega Gfx", "picasso", "libdrm-ids"),
    (0x15D8, 0x93, "AMD Radeon Vega 1 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xA1, "AMD Radeon Vega 10 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xA2, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xA3, "AMD Radeon Vega 6 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xA4, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xB1, "AMD Radeon Vega 10 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xB2, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xB3, "AMD Radeon Vega 6 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xB4, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC1, "AMD Radeon Vega 10 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC2, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC3, "AMD Radeon Vega 6 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC4, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC5, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC8, "AMD Radeon Vega 11 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xC9, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xCA, "AMD Radeon Vega 11 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xCB, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xCC, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xCE, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xCF, "AMD Ryzen Embedded R1305G with Radeon Vega Gfx", "picasso", "libdrm-ids"),
    (0x15D8, 0xD1, "AMD Radeon Vega 10 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xD2, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xD3, "AMD Radeon Vega 6 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xD4, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xD8, "AMD Radeon Vega 11 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xD9, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDA, "AMD Radeon Vega 11 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDB, "AMD Radeon Vega 8 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDC, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDD, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDE, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xDF, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xE3, "AMD Radeon Vega 3 Graphics", "picasso", "libdrm-ids"),
    (0x15D8, 0xE4, "AMD Ryzen Embedded R1102G with Radeon Vega Gfx", "picasso", "libdrm-ids"),
    (0x1636, None, "Renoir", "renoir", "pciids"),
    (0x1638, None, "Cezanne", "renoir", "pciids"),
    (0x164C, None, "Lucienne", "renoir", "pciids"),
    (0x15E7, None, "Barcelo", "renoir", "pciids"),
    (0x66A1, 0x02, "AMD Instinct MI60 / MI50", "vega20", "libdrm-ids"),
    (0x66A1, 0x06, "AMD Radeon Pro VII", "vega20", "libdrm-ids"),
    (0x66AF, 0xC1, "AMD Radeon VII", "vega20", "libdrm-ids"),
    (0x66A0, None, "Radeon Instinct (Vega 20)", "vega20", "kfd-5.4"),
    (0x66A2, None, "Vega 20", "vega20", "kfd-5.4"),
    (0x66A3, None, "Radeon Pro Vega II/Radeon Pro Vega II Duo", "vega20", "kfd-5.4"),
    (0x66A4, None, "Vega20 [kernel KFD table]", "vega20", "kfd-5.4"),
    (0x66A7, None, "Radeon Pro Vega 20", "vega20", "kfd-5.4"),
    # --- CDNA.
    (0x738C, 0x01, "AMD Instinct MI100", "arcturus", "libdrm-ids"),
    (0x7388, None, "Arcturus GL-XL", "arcturus", "kfd-5.4"),
    (0x738E, None, "Instinct MI100", "arcturus", "kfd-5.4"),
    (0x7390, None, "Arcturus VF [kernel KFD table]", "arcturus", "kfd-5.4"),
    (0x7408, 0x00, "AMD Instinct MI250X", "aldebaran", "libdrm-ids"),
    (0x740C, 0x01, "AMD Instinct MI250X / MI250", "aldebaran", "libdrm-ids"),
    (0x740F, 0x02, "AMD Instinct MI210", "aldebaran", "libdrm-ids"),
    (0x74A0, 0x00, "AMD Instinct MI300A", "mi300", "libdrm-ids"),
    (0x74A1, 0x00, "AMD Instinct MI300X", "mi300", "libdrm-ids"),
    (0x74A2, 0x00, "AMD Instinct MI308X", "mi300", "libdrm-ids"),
    (0x74A5, 0x00, "AMD Instinct MI325X", "mi300", "libdrm-ids"),
    (0x74A8, 0x00, "AMD Instinct MI308X HF", "mi300", "libdrm-ids"),
    (0x74A9, 0x00, "AMD Instinct MI300X HF", "mi300", "libdrm-ids"),
    (0x74B5, 0x00, "AMD Instinct MI300X VF", "mi300", "libdrm-ids"),
    (0x74B6, 0x00, "AMD Instinct MI308X", "mi300", "libdrm-ids"),
    # pci.ids names 0x74B9 "Aqua Vanjaram [Instinct MI325X VF]" (libdrm does not list it): the SR-IOV
    # function of the MI325X, 0x74A5 above. Its family alone cannot say so (MI350 ids are Aqua Vanjaram too).
    (0x74B9, None, "Instinct MI325X VF", "mi300", "pciids-data"),
    (0x74BD, 0x00, "AMD Instinct MI300X HF", "mi300", "libdrm-ids"),
    (0x75A0, 0x00, "AMD Instinct MI350X", "mi350", "libdrm-ids"),
    (0x75A3, 0x00, "AMD Instinct MI355X", "mi350", "libdrm-ids"),
    (0x75B0, 0x00, "AMD Instinct MI350X VF", "mi350", "libdrm-ids"),
    (0x75B3, 0x00, "AMD Instinct MI355X VF", "mi350", "libdrm-ids"),
    # --- RDNA1.
    (0x7312, 0x00, "AMD Radeon Pro W5700", "navi10", "libdrm-ids"),
    (0x731E, 0xC6, "AMD Radeon RX 5700XTB", "navi10", "libdrm-ids"),
    (0x731E, 0xC7, "AMD Radeon RX 5700B", "navi10", "libdrm-ids"),
    (0x731F, 0xC0, "AMD Radeon RX 5700 XT 50th Anniversary", "navi10", "libdrm-ids"),
    (0x731F, 0xC1, "AMD Radeon RX 5700 XT", "navi10", "libdrm-ids"),
    (0x731F, 0xC2, "AMD Radeon RX 5600M", "navi10", "libdrm-ids"),
    (0x731F, 0xC3, "AMD Radeon RX 5700M", "navi10", "libdrm-ids"),
    (0x731F, 0xC4, "AMD Radeon RX 5700", "navi10", "libdrm-ids"),
    (0x731F, 0xC5, "AMD Radeon RX 5700 XT", "navi10", "libdrm-ids"),
    (0x731F, 0xCA, "AMD Radeon RX 5600 XT", "navi10", "libdrm-ids"),
    (0x731F, 0xCB, "AMD Radeon RX 5600 OEM", "navi10", "libdrm-ids"),
    (0x7310, None, "Radeon Pro W5700X", "navi10", "kfd-5.4"),
    (0x7318, None, "Navi10 [kernel KFD table]", "navi10", "kfd-5.4"),
    (0x7319, None, "Radeon Pro 5700 XT", "navi10", "pciids"),
    (0x731A, None, "Navi10 [kernel KFD table]", "navi10", "kfd-5.4"),
    (0x731B, None, "Radeon Pro 5700", "navi10", "pciids"),
    (0x7340, 0xC1, "AMD Radeon RX 5500M", "navi14", "libdrm-ids"),
    (0x7340, 0xC3, "AMD Radeon RX 5300M", "navi14", "libdrm-ids"),
    (0x7340, 0xC5, "AMD Radeon RX 5500 XT", "navi14", "libdrm-ids"),
    (0x7340, 0xC7, "AMD Radeon RX 5500", "navi14", "libdrm-ids"),
    (0x7340, 0xC9, "AMD Radeon RX 5500XTB", "navi14", "libdrm-ids"),
    (0x7340, 0xCF, "AMD Radeon RX 5300", "navi14", "libdrm-ids"),
    (0x7341, 0x00, "AMD Radeon Pro W5500", "navi14", "libdrm-ids"),
    (0x7347, 0x00, "AMD Radeon Pro W5500M", "navi14", "libdrm-ids"),
    (0x734F, None, "Radeon Pro W5300M", "navi14", "pciids"),
    (0x7360, 0x41, "AMD Radeon Pro 5600M", "navi12", "libdrm-ids"),
    (0x7360, 0xC3, "AMD Radeon Pro V520", "navi12", "libdrm-ids"),
    (0x7362, 0xC1, "AMD Radeon Pro V540", "navi12", "libdrm-ids"),
    (0x7362, 0xC3, "AMD Radeon Pro V520", "navi12", "libdrm-ids"),
    # --- RDNA2. 0x1435 (Steam Deck OLED), 0x13C0 (Granite Ridge): mapped by inference.
    (0x73A1, 0x00, "AMD Radeon Pro V620", "navi21", "libdrm-ids"),
    (0x73A3, 0x00, "AMD Radeon Pro W6800", "navi21", "libdrm-ids"),
    (0x73A5, 0xC0, "AMD Radeon RX 6950 XT", "navi21", "libdrm-ids"),
    (0x73AE, 0x00, "AMD Radeon Pro V620 MxGPU", "navi21", "libdrm-ids"),
    (0x73AF, 0xC0, "AMD Radeon RX 6900 XT", "navi21", "libdrm-ids"),
    (0x73BF, 0xC0, "AMD Radeon RX 6900 XT", "navi21", "libdrm-ids"),
    (0x73BF, 0xC1, "AMD Radeon RX 6800 XT", "navi21", "libdrm-ids"),
    (0x73BF, 0xC3, "AMD Radeon RX 6800", "navi21", "libdrm-ids"),
    (0x73A2, None, "Radeon Pro W6900X", "navi21", "pciids"),
    (0x73AB, None, "Radeon Pro W6800X/Radeon Pro W6800X Duo", "navi21", "pciids"),
    (0x73DF, 0xC0, "AMD Radeon RX 6750 XT", "navi22", "libdrm-ids"),
    (0x73DF, 0xC1, "AMD Radeon RX 6700 XT", "navi22", "libdrm-ids"),
    (0x73DF, 0xC2, "AMD Radeon RX 6800M", "navi22", "libdrm-ids"),
    (0x73DF, 0xC3, "AMD Radeon RX 6800M", "navi22", "libdrm-ids"),
    (0x73DF, 0xC5, "AMD Radeon RX 6700 XT", "navi22", "libdrm-ids"),
    (0x73DF, 0xCF, "AMD Radeon RX 6700M", "navi22", "libdrm-ids"),
    (0x73DF, 0xD5, "AMD Radeon RX 6750 GRE 12GB", "navi22", "libdrm-ids"),
    (0x73DF, 0xD7, "AMD TDC-235", "navi22", "libdrm-ids"),
    (0x73DF, 0xDF, "AMD Radeon RX 6700", "navi22", "libdrm-ids"),
    (0x73DF, 0xE5, "AMD Radeon RX 6750 GRE 12GB", "navi22", "libdrm-ids"),
    (0x73DF, 0xFF, "AMD Radeon RX 6700", "navi22", "libdrm-ids"),
    (0x73E0, 0x00, "AMD Radeon RX 6600M", "navi23", "libdrm-ids"),
    (0x73E1, 0x00, "AMD Radeon Pro W6600M", "navi23", "libdrm-ids"),
    (0x73E3, 0x00, "AMD Radeon Pro W6600", "navi23", "libdrm-ids"),
    (0x73EF, 0xC0, "AMD Radeon RX 6800S", "navi23", "libdrm-ids"),
    (0x73EF, 0xC1, "AMD Radeon RX 6650 XT", "navi23", "libdrm-ids"),
    (0x73EF, 0xC2, "AMD Radeon RX 6700S", "navi23", "libdrm-ids"),
    (0x73EF, 0xC3, "AMD Radeon RX 6650M", "navi23", "libdrm-ids"),
    (0x73EF, 0xC4, "AMD Radeon RX 6650M XT", "navi23", "libdrm-ids"),
    (0x73FF, 0xC1, "AMD Radeon RX 6600 XT", "navi23", "libdrm-ids"),
    (0x73FF, 0xC3, "AMD Radeon RX 6600M", "navi23", "libdrm-ids"),
    (0x73FF, 0xC7, "AMD Radeon RX 6600", "navi23", "libdrm-ids"),
    (0x73FF, 0xCB, "AMD Radeon RX 6600S", "navi23", "libdrm-ids"),
    (0x73FF, 0xCF, "AMD Radeon RX 6600 LE", "navi23", "libdrm-ids"),
    (0x73FF, 0xDF, "AMD Radeon RX 6750 GRE 10GB", "navi23", "libdrm-ids"),
    (0x7421, 0x00, "AMD Radeon Pro W6500M", "navi24", "libdrm-ids"),
    (0x7422, 0x00, "AMD Radeon Pro W6400", "navi24", "libdrm-ids"),
    (0x7423, 0x00, "AMD Radeon Pro W6300M", "navi24", "libdrm-ids"),
    (0x7423, 0x01, "AMD Radeon Pro W6300", "navi24", "libdrm-ids"),
    (0x7424, 0x00, "AMD Radeon RX 6300", "navi24", "libdrm-ids"),
    (0x743F, 0xC1, "AMD Radeon RX 6500 XT", "navi24", "libdrm-ids"),
    (0x743F, 0xC3, "AMD Radeon RX 6500M", "navi24", "libdrm-ids"),
    (0x743F, 0xC7, "AMD Radeon RX 6400", "navi24", "libdrm-ids"),
    (0x743F, 0xC8, "AMD Radeon RX 6500M", "navi24", "libdrm-ids"),
    (0x743F, 0xCC, "AMD Radeon 6550S", "navi24", "libdrm-ids"),
    (0x743F, 0xCE, "AMD Radeon RX 6450M", "navi24", "libdrm-ids"),
    (0x743F, 0xCF, "AMD Radeon RX 6300M", "navi24", "libdrm-ids"),
    (0x743F, 0xD3, "AMD Radeon RX 6550M", "navi24", "libdrm-ids"),
    (0x743F, 0xD7, "AMD Radeon RX 6400", "navi24", "libdrm-ids"),
    (0x163F, 0xAE, "AMD Custom GPU 0405", "vangogh", "libdrm-ids"),
    (0x163F, 0xE1, "AMD Custom GPU 0405", "vangogh", "libdrm-ids"),
    (0x1435, 0xAE, "AMD Custom GPU 0932", "vangogh", "libdrm-ids"),
    (0x1681, 0x06, "AMD Radeon 680M", "rembrandt", "libdrm-ids"),
    (0x1681, 0x07, "AMD Radeon 660M", "rembrandt", "libdrm-ids"),
    (0x1681, 0x0A, "AMD Radeon 680M", "rembrandt", "libdrm-ids"),
    (0x1681, 0x0B, "AMD Radeon 660M", "rembrandt", "libdrm-ids"),
    (0x1681, 0xC7, "AMD Radeon 680M", "rembrandt", "libdrm-ids"),
    (0x1681, 0xC8, "AMD Radeon 680M", "rembrandt", "libdrm-ids"),
    (0x1681, 0xC9, "AMD Radeon 660M", "rembrandt", "libdrm-ids"),
    (0x164E, 0xD8, "AMD Radeon 610M", "raphael", "libdrm-ids"),
    (0x164E, 0xD9, "AMD Radeon 610M", "raphael", "libdrm-ids"),
    (0x164E, 0xDA, "AMD Radeon 610M", "raphael", "libdrm-ids"),
    (0x164E, 0xDB, "AMD Radeon 610M", "raphael", "libdrm-ids"),
    (0x164E, 0xDC, "AMD Radeon 610M", "raphael", "libdrm-ids"),
    (0x13C0, None, "Granite Ridge [Radeon Graphics]", "raphael", "pciids"),
    (0x1506, 0xC1, "AMD Radeon 610M", "mendocino", "libdrm-ids"),
    (0x1506, 0xC2, "AMD Radeon 610M", "mendocino", "libdrm-ids"),
    (0x1506, 0xC3, "AMD Radeon 610M", "mendocino", "libdrm-ids"),
    (0x1506, 0xC4, "AMD Radeon 610M", "mendocino", "libdrm-ids"),
    # --- RDNA3. No 0x7440 (not a Navi31 id). 0x1900/0x1901 (Hawk Point): inferred.
    (0x7448, 0x00, "AMD Radeon Pro W7900", "navi31", "libdrm-ids"),
    (0x7449, 0x00, "AMD Radeon Pro W7800 48GB", "navi31", "libdrm-ids"),
    (0x744A, 0x00, "AMD Radeon Pro W7900 Dual Slot", "navi31", "libdrm-ids"),
    (0x744B, 0x00, "AMD Radeon Pro W7900D", "navi31", "libdrm-ids"),
    (0x744C, 0xC8, "AMD Radeon RX 7900 XTX", "navi31", "libdrm-ids"),
    (0x744C, 0xCC, "AMD Radeon RX 7900 XT", "navi31", "libdrm-ids"),
    (0x744C, 0xCE, "AMD Radeon RX 7900 GRE", "navi31", "libdrm-ids"),
    (0x744C, 0xCF, "AMD Radeon RX 7900M", "navi31", "libdrm-ids"),
    (0x745E, 0xCC, "AMD Radeon Pro W7800", "navi31", "libdrm-ids"),
    (0x7460, 0x00, "AMD Radeon Pro V710", "navi32", "libdrm-ids"),
    (0x7461, 0x00, "AMD Radeon Pro V710 MxGPU", "navi32", "libdrm-ids"),
    (0x7470, 0x00, "AMD Radeon Pro W7700", "navi32", "libdrm-ids"),
    (0x747E, 0xC8, "AMD Radeon RX 7800 XT", "navi32", "libdrm-ids"),
    (0x747E, 0xD8, "AMD Radeon RX 7800M", "navi32", "libdrm-ids"),
    (0x747E, 0xDB, "AMD Radeon RX 7700", "navi32", "libdrm-ids"),
    (0x747E, 0xFF, "AMD Radeon RX 7700 XT", "navi32", "libdrm-ids"),
    (0x7480, 0x00, "AMD Radeon Pro W7600", "navi33", "libdrm-ids"),
    (0x7480, 0xC0, "AMD Radeon RX 7600 XT", "navi33", "libdrm-ids"),
    (0x7480, 0xC1, "AMD Radeon RX 7700S", "navi33", "libdrm-ids"),
    (0x7480, 0xC2, "AMD Radeon RX 7650 GRE", "navi33", "libdrm-ids"),
    (0x7480, 0xC3, "AMD Radeon RX 7600S", "navi33", "libdrm-ids"),
    (0x7480, 0xC7, "AMD Radeon RX 7600M XT", "navi33", "libdrm-ids"),
    (0x7480, 0xCF, "AMD Radeon RX 7600", "navi33", "libdrm-ids"),
    (0x7481, 0xC7, "AMD Steam Machine", "navi33", "libdrm-ids"),
    (0x7483, 0xCF, "AMD Radeon RX 7600M", "navi33", "libdrm-ids"),
    (0x7489, 0x00, "AMD Radeon Pro W7500", "navi33", "libdrm-ids"),
    (0x7499, 0x00, "AMD Radeon Pro W7400", "navi33", "libdrm-ids"),
    (0x7499, 0xC0, "AMD Radeon RX 7400", "navi33", "libdrm-ids"),
    (0x7499, 0xC1, "AMD Radeon RX 7300", "navi33", "libdrm-ids"),
    (0x73F0, None, "Radeon RX 7600M XT", "navi33", "pciids"),
    (0x749F, None, "Radeon RX 7500", "navi33", "pciids"),
    (0x15BF, 0x00, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x01, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x02, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x03, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x05, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x06, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x07, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0x08, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC1, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC3, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC4, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC5, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC6, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC7, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC8, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xC9, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCA, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCB, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCC, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCD, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCE, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xCF, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD0, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD1, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD3, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD4, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD5, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD6, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD7, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD8, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xD9, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDA, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDB, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDC, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDD, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDE, "AMD Radeon 740M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xDF, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x15BF, 0xF0, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x01, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x02, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x03, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x04, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x05, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x06, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0x07, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB0, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB1, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB3, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB4, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB5, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB6, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB7, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB8, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xB9, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xBA, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xBB, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC0, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC1, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC3, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC4, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC5, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC6, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC7, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC8, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xC9, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCA, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCB, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCC, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCD, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCE, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xCF, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD0, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD1, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD3, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD4, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD5, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD6, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD7, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD8, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xD9, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDA, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDB, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDC, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDD, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDE, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xDF, "AMD Radeon 760M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xF0, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xF1, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x1900, 0xF2, "AMD Radeon 780M Graphics", "phoenix", "libdrm-ids"),
    (0x15C8, 0xC1, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC2, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC3, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC4, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC5, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC6, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC7, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xC8, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD1, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD2, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD3, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD4, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD5, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD6, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD7, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x15C8, 0xD8, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC1, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC2, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC3, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC6, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC7, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC8, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xC9, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xCA, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD1, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD2, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD3, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD4, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD5, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD6, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD7, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    (0x1901, 0xD8, "AMD Radeon 740M Graphics", "phoenix2", "libdrm-ids"),
    # --- RDNA3.5. 0x1902 (Krackan2) left out until its GC version is known.
    (0x150E, 0xC1, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xC4, "AMD Radeon 880M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xC5, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xC6, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xC7, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xD1, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xD2, "AMD Radeon 880M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xD3, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xE1, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xE3, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xE4, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xF1, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x150E, 0xF3, "AMD Radeon 890M Graphics", "strix", "libdrm-ids"),
    (0x1586, 0xC1, "AMD Radeon 8060S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xC2, "AMD Radeon 8050S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xC3, "AMD Radeon 8060S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xC4, "AMD Radeon 8050S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xC6, "AMD Radeon 8060S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xD1, "AMD Radeon 8060S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xD2, "AMD Radeon 8050S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xD4, "AMD Radeon 8050S Graphics", "strix_halo", "libdrm-ids"),
    (0x1586, 0xD5, "AMD Radeon 8040S Graphics", "strix_halo", "libdrm-ids"),
    (0x1114, 0xC2, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xC3, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xD2, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xD3, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xE2, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xE4, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xE5, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xE9, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xEA, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xED, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xEE, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xF2, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xF3, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xF9, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xFA, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xFC, "AMD Radeon 860M Graphics", "krackan", "libdrm-ids"),
    (0x1114, 0xFD, "AMD Radeon 840M Graphics", "krackan", "libdrm-ids"),
    # --- RDNA4.
    (0x7590, 0xC0, "AMD Radeon RX 9060 XT", "navi44", "libdrm-ids"),
    (0x7590, 0xC1, "AMD Radeon RX 9060 XT LP", "navi44", "libdrm-ids"),
    (0x7590, 0xC7, "AMD Radeon RX 9060", "navi44", "libdrm-ids"),
    (0x7550, 0xC0, "AMD Radeon RX 9070 XT", "navi48", "libdrm-ids"),
    (0x7550, 0xC2, "AMD Radeon RX 9070 GRE", "navi48", "libdrm-ids"),
    (0x7550, 0xC3, "AMD Radeon RX 9070", "navi48", "libdrm-ids"),
    (0x7551, 0xC0, "AMD Radeon AI PRO R9700", "navi48", "libdrm-ids"),
    (0x7551, 0xC8, "AMD Radeon AI PRO R9600D", "navi48", "libdrm-ids"),
)
