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


CHIPS: dict[int, Chip] = {
    # RDNA3
    0x744C: Chip("NAVI31", 110000, 96, 2, 32, 24576, gc_ip=0x0B0000, firmware_prefix="psp_13_0_0", mec_fw=2140),
    0x7480: Chip("NAVI33", 110002, 32, 2, 32, 8192, gc_ip=0x0B0002, firmware_prefix="psp_13_0_7", mec_fw=2140),
    0x15BF: Chip("PHOENIX", 110003, 12, 2, 32, 512, apu=True, gc_ip=0x0B0001, firmware_prefix="psp_13_0_4"),
    # RDNA2
    0x73BF: Chip("NAVI21", 100300, 60, 2, 32, 16384, gc_ip=0x0A0300, firmware_prefix="sienna_cichlid", mec_fw=118),
    0x73DF: Chip("NAVI22", 100301, 40, 2, 32, 12288, gc_ip=0x0A0302, firmware_prefix="navy_flounder", mec_fw=118),
    0x164E: Chip("RAPHAEL", 100306, 2, 2, 32, 512, apu=True, gc_ip=0x0A0306, firmware_prefix="psp_13_0_5"),
    # RDNA4
    0x7550: Chip("NAVI48", 120001, 64, 2, 32, 16384, gc_ip=0x0C0001, firmware_prefix="psp_14_0_3", mec_fw=2500),
    # GCN
    0x67DF: Chip("POLARIS10", 80003, 36, 4, 64, 8192, ip_discovery=False, firmware_prefix="polaris10", mec_fw=730),
    0x6810: Chip("PITCAIRN", 0, 20, 4, 64, 2048, ip_discovery=False, firmware_prefix="pitcairn"),
    0x15D8: Chip("RAVEN", 90002, 8, 4, 64, 512, apu=True, ip_discovery=False, firmware_prefix="picasso"),
}


def chip(device: int) -> Chip:
    try:
        return CHIPS[device]
    except KeyError:
        raise KeyError(f"the simulator has no hardware sheet for device {device:#06x}") from None


def gpu_properties(
    device: int, *, location_id: int, domain: int, render_minor: int, unique_id: int
) -> list[tuple[str, int]]:
    """A GPU node's ``properties`` in the kernel's key order."""
    c = chip(device)
    simds = c.compute_units * c.simd_per_cu
    arrays = max(1, c.compute_units // 8)
    return [
        ("cpu_cores_count", 0),
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
