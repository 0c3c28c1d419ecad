"""What simulated GPUs look like to the kernel.

This is the simulator's own hardware sheet, kept apart from the knowledge
tables that ``assess`` uses, so that a test cannot pass merely because the
simulator and the assessment read the same row. Values follow real cards
(CU counts from AMD's product pages, topology keys and encodings from
kfd-facts.md §5, the RX 7900 XTX properties from tinygrad's mock GPU).
"""

from __future__ import annotations

from kfdguard.record import dataclass


@dataclass(frozen=True)
class Chip:
    asic: str  # the name amdgpu prints ("NAVI31", "POLARIS10"); KFD's node name is its lower case
    gfx_target_version: int  # decimal MMmmss as KFD writes it
    compute_units: int
    simd_per_cu: int
    wave_front_size: int
    vram_mib: int
    apu: bool = False
    ip_discovery: bool = True  # amdgpu probes it through IP discovery (Vega20 and newer)
    gc_ip: int = 0  # GC IP as KFD prints it in "GC IP %06x not supported"
    firmware_prefix: str = ""  # e.g. "psp_13_0_0" for the firmware-missing case
    mec_fw: int = 0  # MEC firmware version as KFD compares it for atomics
    # The PCIe link the device can do (max_link_speed/width): MT/s and lanes, from AMD's
    # product pages (Navi33 is x8; the RX 580 PCIe 3.0 x16; RX 9070 PCIe 5.0 x16).
    # APUs: the iGPU is an endpoint on the SoC's internal fabric; the figures given
    # are what lspci shows on such machines (UNCERTAIN: not from a primary source).
    pcie: tuple[int, int] = (16000, 16)


# Linux 5.2 began printing the link speed with pci_speed_string() ("8.0 GT/s PCIe");
# earlier pci-sysfs.c had its own switch ("8 GT/s", "Unknown speed"). The new table is the
# same in the Debian sources of 5.10, 6.1, 6.12 and 7.2; the old switch (and the
# PCIE_SPEED2STR macro that briefly replaced it) printed the bare number.
NEW_SPEED_FORMAT = (5, 2)
# amdgpu's mem_info_vram_total / mem_info_gtt_total exist in all the sources read (5.10 and
# later, "%llu\n" bytes); older kernels get no such files here, since that was not checked.
MEM_INFO_SINCE = (5, 10)


def speed_text(mts: int, version: tuple[int, int]) -> str:
    """What current_link_speed / max_link_speed print for a speed on that kernel."""
    whole, tenth = mts // 1000, mts % 1000 // 100
    if version >= NEW_SPEED_FORMAT:
        return f"{whole}.{tenth} GT/s PCIe"
    return f"{whole}.{tenth} GT/s" if tenth else f"{whole} GT/s"


def gtt_bytes(version: tuple[int, int], ram_bytes: int, vram_bytes: int, ttm_limit: int | None = None) -> int:
    """amdgpu_ttm_init()'s default GTT size (amdgpu.gttsize unset) on that kernel.

    5.10: min(max(3 GiB, VRAM), 3/4 of RAM); 6.1: max(3 GiB, RAM/2); 6.12 and 7.2:
    ttm_tt_pages_limit() << PAGE_SHIFT (all from amdgpu_ttm.c of those sources). ``ttm_limit`` is that
    limit in bytes as the TTM module amdgpu uses applied it (its pages_limit option, else half the RAM:
    ttm_limit_bytes()). amdgpu.gttsize is not modelled, nor the cap of an APU's GTT at the RAM.
    """
    default = 3072 << 20
    if version < (6, 1):
        return min(max(default, vram_bytes), ram_bytes * 3 // 4)
    if version < (6, 12):
        return max(default, ram_bytes // 2)
    return ttm_limit_bytes(ram_bytes) if ttm_limit is None else ttm_limit


# KFD memory banks (nodes/N/mem_banks/M/properties). Heap types: HSA_MEM_HEAP_TYPE_* of
# include/uapi/linux/kfd_sysfs.h (kfd_topology.h before it): SYSTEM 0, FB_PUBLIC 1, FB_PRIVATE 2.
HEAP_SYSTEM, HEAP_FB_PUBLIC, HEAP_FB_PRIVATE = 0, 1, 2
# amdgpu_amdkfd_get_local_mem_info() (amdgpu_amdkfd.c) gives an APU ttm_tt_pages_limit() << PAGE_SHIFT
# instead of its visible VRAM from 6.10 (eb853413d02c "drm/amdkfd: Let VRAM allocations go to GTT domain
# on small APUs"; also in 6.9.9, which the simulator's major.minor cannot tell apart); from 6.15 only when
# apu_prefer_gtt, which amdgpu_ttm_init() sets when real_vram_size < gtt_size (759e764f7d58 "drm/amdkfd:
# use GTT for VRAM on APUs only if GTT is larger").
APU_BANK_IS_TTM_LIMIT = (6, 10)
APU_BANK_IF_GTT_LARGER = (6, 15)


PAGE_SHIFT = 12  # every x86-64 kernel


def ttm_default_pages(ram_bytes: int) -> int:
    """What ttm_device.c's ttm_global_init() computes when the first TTM device initialises: half of
    si_meminfo()'s totalram pages (``num_pages = (totalram * mem_unit) >> PAGE_SHIFT; num_pages /= 2``),
    which ttm_tt_mgr_init() makes pages_limit and ttm_pool_mgr_init() page_pool_size where they are 0.
    (ROCm's DKMS copy takes 3/4 instead on a GFX 9.4.3 APU, CPU family 0x19 model 0x90, MI300A: not a
    chip the simulator has.)"""
    return (ram_bytes >> PAGE_SHIFT) // 2


def ttm_dma32_default_pages(ram_bytes: int) -> int:
    """ttm_global_init()'s default dma32_pages_limit: the low RAM (all of it on x86-64, no highmem),
    at most 2 GiB (``min(num_dma32, 2UL << (30 - PAGE_SHIFT))``)."""
    return min(ram_bytes >> PAGE_SHIFT, 2 << (30 - PAGE_SHIFT))


def ttm_limit_bytes(ram_bytes: int, pages_limit: int = 0) -> int:
    """ttm_tt_pages_limit() in bytes: the pages_limit option of the TTM module amdgpu uses, or with it 0
    (unset) half of si_meminfo()'s totalram pages, which ttm_tt_mgr_init() puts in its place (LACT's
    Phoenix capture: 31433977856 in the GPU node's bank beside 62867955712 in the CPU node's)."""
    return (pages_limit or ttm_default_pages(ram_bytes)) << PAGE_SHIFT


def gpu_mem_bank(
    version: tuple[int, int], device: int, ram_bytes: int, ttm_limit: int | None = None
) -> tuple[int, int]:
    """(heap_type, size_in_bytes) of a GPU node's one memory bank, as KFD builds it from the GPU's
    virtual CRAT (kfd_crat.c: kfd_create_vcrat_image_gpu() -> kfd_fill_gpu_memory_affinity(), parsed
    by kfd_parse_subtype_mem(): a node without CPU cores keeps the visibility type as its heap type).

    KFD reports FB_PUBLIC with local_mem_size_public when no VRAM is private (all of it visible:
    a large BAR, or an APU, whose carve-out gmc_v*_0_mc_init() makes visible entirely), else one
    FB_PRIVATE bank of public plus private. The simulator's cards are taken to have a large BAR
    (it has no BAR size to go by); a small-BAR card has heap_type 2 and the same size. ``ttm_limit``
    is ttm_tt_pages_limit() in bytes as applied (ttm_limit_bytes() of the RAM when not given).
    """
    c = chip(device)
    vram = c.vram_mib << 20
    limit = ttm_limit_bytes(ram_bytes) if ttm_limit is None else ttm_limit
    prefer_gtt = version < APU_BANK_IF_GTT_LARGER or vram < gtt_bytes(version, ram_bytes, vram, limit)
    if c.apu and version >= APU_BANK_IS_TTM_LIMIT and prefer_gtt:
        return HEAP_FB_PUBLIC, limit
    return HEAP_FB_PUBLIC, vram


CHIPS: dict[int, Chip] = {
    # RDNA3
    0x744C: Chip("NAVI31", 110000, 96, 2, 32, 24576, gc_ip=0x0B0000, firmware_prefix="psp_13_0_0", mec_fw=2140),
    0x7480: Chip(
        "NAVI33", 110002, 32, 2, 32, 8192, gc_ip=0x0B0002, firmware_prefix="psp_13_0_7", mec_fw=2140, pcie=(16000, 8)
    ),
    # Strix Halo (Radeon 8060S, 40 CUs on AMD's product page); 512 MiB is the smallest UMA carve-out.
    0x1586: Chip("GFX1151", 110501, 40, 2, 32, 512, apu=True, gc_ip=0x0B0501),
    0x15BF: Chip("PHOENIX", 110003, 12, 2, 32, 512, apu=True, gc_ip=0x0B0001, firmware_prefix="psp_13_0_4"),
    # RDNA2
    0x73BF: Chip("NAVI21", 100300, 60, 2, 32, 16384, gc_ip=0x0A0300, firmware_prefix="sienna_cichlid", mec_fw=118),
    0x73DF: Chip("NAVI22", 100301, 40, 2, 32, 12288, gc_ip=0x0A0302, firmware_prefix="navy_flounder", mec_fw=118),
    0x164E: Chip("RAPHAEL", 100306, 2, 2, 32, 512, apu=True, gc_ip=0x0A0306, firmware_prefix="psp_13_0_5"),
    # RDNA4
    0x7550: Chip(
        "NAVI48", 120001, 64, 2, 32, 16384, gc_ip=0x0C0001, firmware_prefix="psp_14_0_3", mec_fw=2500, pcie=(32000, 16)
    ),
    # GCN
    0x67DF: Chip(
        "POLARIS10",
        80003,
        36,
        4,
        64,
        8192,
        ip_discovery=False,
        firmware_prefix="polaris10",
        mec_fw=730,
        pcie=(8000, 16),
    ),
    0x6810: Chip("PITCAIRN", 0, 20, 4, 64, 2048, ip_discovery=False, firmware_prefix="pitcairn", pcie=(8000, 16)),
    0x15D8: Chip(
        "RAVEN", 90002, 8, 4, 64, 512, apu=True, ip_discovery=False, firmware_prefix="picasso", pcie=(8000, 16)
    ),
}


def chip(device: int) -> Chip:
    try:
        return CHIPS[device]
    except KeyError:
        raise KeyError(f"the simulator has no hardware sheet for device {device:#06x}") from None


def gpu_properties(
    device: int, *, location_id: int, domain: int, render_minor: int, unique_id: int, cpu_cores: int = 0
) -> list[tuple[str, int]]:
    """A GPU node's ``properties`` in the kernel's key order."""
    c = chip(device)
    simds = c.compute_units * c.simd_per_cu
    arrays = max(1, c.compute_units // 8)
    return [
        ("cpu_cores_count", cpu_cores),
        ("simd_count", simds),
        ("mem_banks_count", 1),
        ("caches_count", 2 * c.compute_units + 14),
        ("io_links_count", 1),
        ("p2p_links_count", 0),
        ("cpu_core_id_base", 0),
        ("simd_id_base", 2147487744 + 64 * (render_minor - 128)),
        ("max_waves_per_simd", 16 if c.wave_front_size == 32 else 10),
        ("lds_size_in_kb", 64),
        ("gds_size_in_kb", 0),
        ("num_gws", 64),
        ("wave_front_size", c.wave_front_size),
        ("array_count", arrays),
        ("simd_arrays_per_engine", 2),
        ("cu_per_simd_array", c.compute_units // arrays),
        ("simd_per_cu", c.simd_per_cu),
        ("max_slots_scratch_cu", 32),
        ("gfx_target_version", c.gfx_target_version),
        ("vendor_id", 0x1002),
        ("device_id", device),
        ("location_id", location_id),
        ("domain", domain),
        ("drm_render_minor", render_minor),
        ("hive_id", 0),
        ("num_sdma_engines", 2),
        ("num_sdma_xgmi_engines", 0),
        ("num_sdma_queues_per_engine", 6),
        ("num_cp_queues", 8),
        ("max_engine_clk_fcompute", 2482),
        ("local_mem_size", 0 if c.apu else c.vram_mib << 20),
        ("fw_version", c.mec_fw),
        ("capability", 671588992),
        ("debug_prop", 1495),
        ("sdma_fw_version", 20),
        ("unique_id", unique_id),
        ("num_xcc", 1),
        ("max_engine_clk_ccompute", 2400),
    ]


def cpu_properties(cores: int) -> list[tuple[str, int]]:
    """The CPU node KFD builds from a virtual CRAT table (measured on 6.1: 30 keys)."""
    keys = [
        "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count", "io_links_count",
        "p2p_links_count", "cpu_core_id_base", "simd_id_base", "max_waves_per_simd",
        "lds_size_in_kb", "gds_size_in_kb", "num_gws", "wave_front_size", "array_count",
        "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu", "max_slots_scratch_cu",
        "gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
        "drm_render_minor", "hive_id", "num_sdma_engines", "num_sdma_xgmi_engines",
        "num_sdma_queues_per_engine", "num_cp_queues", "max_engine_clk_ccompute",
    ]  # fmt: skip
    values = dict.fromkeys(keys, 0)
    values["cpu_cores_count"] = cores
    values["mem_banks_count"] = 1
    values["max_engine_clk_ccompute"] = 3700
    return list(values.items())
