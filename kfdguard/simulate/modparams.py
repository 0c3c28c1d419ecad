"""The parameters simulated amdgpu/amdkfd modules declare, by kernel version.

Base list: ``modinfo -F parm amdgpu`` of Debian 12's 6.1.0-57 (83 parameters,
kfd-facts.md §2.1), adjusted per kernel as that section describes.
"""

from __future__ import annotations

# (name, modinfo type, default value as sysfs shows it)
AMDGPU_61: tuple[tuple[str, str, str], ...] = (
    ("vramlimit", "int", "0"), ("vis_vramlimit", "int", "0"), ("gartsize", "uint", "4294967295"),
    ("gttsize", "int", "-1"), ("moverate", "int", "-1"), ("audio", "int", "-1"),
    ("disp_priority", "int", "0"), ("hw_i2c", "int", "0"), ("pcie_gen2", "int", "-1"),
    ("msi", "int", "-1"), ("lockup_timeout", "charp", ""), ("dpm", "int", "-1"),
    ("fw_load_type", "int", "-1"), ("aspm", "int", "-1"), ("runpm", "int", "-1"),
    ("ip_block_mask", "uint", "4294967295"), ("bapm", "int", "-1"), ("deep_color", "int", "0"),
    ("vm_size", "int", "-1"), ("vm_fragment_size", "int", "-1"), ("vm_block_size", "int", "-1"),
    ("vm_fault_stop", "int", "0"), ("vm_debug", "int", "0"), ("vm_update_mode", "int", "-1"),
    ("exp_hw_support", "int", "0"), ("dc", "int", "-1"), ("sched_jobs", "int", "32"),
    ("sched_hw_submission", "int", "2"), ("ppfeaturemask", "hexint", "0xfff7bfff"),
    ("forcelongtraining", "uint", "0"), ("pcie_gen_cap", "uint", "0"), ("pcie_lane_cap", "uint", "0"),
    ("cg_mask", "ullong", "18446744073709551615"), ("pg_mask", "uint", "4294967295"),
    ("sdma_phase_quantum", "uint", "32"), ("disable_cu", "charp", ""), ("virtual_display", "charp", ""),
    ("job_hang_limit", "int", "0"), ("lbpw", "int", "-1"), ("compute_multipipe", "int", "-1"),
    ("gpu_recovery", "int", "-1"), ("emu_mode", "int", "0"), ("ras_enable", "int", "-1"),
    ("ras_mask", "uint", "4294967295"), ("timeout_fatal_disable", "bool", "N"),
    ("timeout_period", "uint", "0"), ("si_support", "int", "0"), ("cik_support", "int", "0"),
    ("smu_memory_pool_size", "uint", "0"), ("async_gfx_ring", "int", "1"), ("mcbp", "int", "0"),
    ("discovery", "int", "-1"), ("mes", "int", "0"), ("mes_kiq", "int", "0"), ("noretry", "int", "-1"),
    ("force_asic_type", "int", "-1"), ("use_xgmi_p2p", "int", "1"),
    # KFD parameters: only with CONFIG_HSA_AMD (declared inside #ifdef CONFIG_HSA_AMD).
    ("sched_policy", "int", "0"), ("hws_max_conc_proc", "int", "-1"), ("cwsr_enable", "int", "1"),
    ("max_num_of_queues_per_device", "int", "4096"), ("send_sigterm", "int", "0"),
    ("debug_largebar", "int", "0"), ("ignore_crat", "int", "0"), ("halt_if_hws_hang", "int", "0"),
    ("hws_gws_support", "bool", "N"), ("queue_preemption_timeout_ms", "int", "9000"),
    ("debug_evictions", "bool", "N"), ("no_system_mem_limit", "bool", "N"),
    ("no_queue_eviction_on_vm_fault", "int", "0"),
    ("dcfeaturemask", "uint", "2"), ("dcdebugmask", "uint", "0"), ("visualconfirm", "uint", "0"),
    ("abmlevel", "uint", "0"), ("backlight", "bint", "-1"), ("tmz", "int", "-1"),
    ("freesync_video", "uint", "0"), ("reset_method", "int", "-1"), ("bad_page_threshold", "int", "-1"),
    ("num_kcq", "int", "-1"), ("vcnfw_log", "int", "0"), ("sg_display", "int", "-1"),
    ("smu_pptable_id", "int", "-1"),
)  # fmt: skip

KFD_PARAMS = frozenset({
    "sched_policy", "hws_max_conc_proc", "cwsr_enable", "max_num_of_queues_per_device",
    "send_sigterm", "debug_largebar", "ignore_crat", "halt_if_hws_hang", "hws_gws_support",
    "queue_preemption_timeout_ms", "debug_evictions", "no_system_mem_limit",
    "no_queue_eviction_on_vm_fault", "debug_mask", "pcie_p2p",
})  # fmt: skip

# The old standalone amdkfd.ko (4.17-4.19 kfd_module.c).
AMDKFD_OLD: tuple[tuple[str, str, str], ...] = (
    ("sched_policy", "int", "0"), ("hws_max_conc_proc", "int", "8"), ("cwsr_enable", "int", "1"),
    ("max_num_of_queues_per_device", "int", "4096"), ("send_sigterm", "int", "0"),
    ("debug_largebar", "int", "0"), ("ignore_crat", "int", "0"), ("noretry", "int", "0"),
    ("halt_if_hws_hang", "int", "0"),
)  # fmt: skip


def amdgpu_params(version: tuple[int, int], hsa_amd: bool, merged: bool) -> tuple[tuple[str, str, str], ...]:
    params = list(AMDGPU_61)
    if version >= (6, 7):
        # debug_mask replaced debug_largebar; pcie_p2p and mtype_local arrived after 6.1.
        params = [p for p in params if p[0] not in ("debug_largebar", "ignore_crat")]
        params += [("debug_mask", "uint", "0"), ("pcie_p2p", "bool", "Y"), ("mtype_local", "int", "0")]
    if not (hsa_amd and merged):
        params = [p for p in params if p[0] not in KFD_PARAMS]
    if not merged:
        params = [p for p in params if p[0] != "noretry"]
    return tuple(params)


# TTM's parameters, in-tree ttm.ko and the DKMS driver's amdttm.ko alike (ROCm/amdgpu builds the same
# drivers/gpu/drm/ttm as amdttm): ttm_tt.c module_param_named(pages_limit, ...) and (dma32_pages_limit, ...),
# ttm_pool.c module_param(page_pool_size, ...), each ulong 0644 and 0 until ttm_global_init() computes it.
# Read in Debian's 6.1 and 6.12 sources (kfdguard/knowledge/memory.py names the lines) and ROCm/amdgpu's copy;
# older kernels' ttm was not read, so the simulator gives it no parameters and passes it no options.
TTM: tuple[tuple[str, str, str], ...] = (
    ("pages_limit", "ulong", "0"), ("dma32_pages_limit", "ulong", "0"), ("page_pool_size", "ulong", "0"),
)  # fmt: skip
TTM_PARAMS_SINCE = (6, 1)


def ttm_params(version: tuple[int, int], module: str) -> tuple[tuple[str, str, str], ...] | None:
    """The parameters the TTM module declares, or None where the simulator does not model them (in-tree ttm
    before 6.1). amdttm comes with the DKMS driver's own source whatever the kernel."""
    return TTM if module == "amdttm" or version >= TTM_PARAMS_SINCE else None
