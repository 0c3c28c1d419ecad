"""The simulated KFD topology's memory banks are the ones a real kernel writes (issue 38).

A CPU node gets one system-memory bank of its RAM (kfd_crat.c: kfd_fill_mem_info_for_cpu(),
kfd_parse_subtype_mem() gives a node with CPU cores HSA_MEM_HEAP_TYPE_SYSTEM); a GPU node one
frame-buffer bank (kfd_create_vcrat_image_gpu()) of a card's VRAM, or on an APU what
amdgpu_amdkfd_get_local_mem_info() gives: the carve-out before 6.10, ttm_tt_pages_limit() after.
LACT's Phoenix capture (tests/data/real-sysfs/lact-phoenix) shows the layout: node 0 "heap_type 0,
size_in_bytes 62867955712" (MemTotal), node 1 "heap_type 1, size_in_bytes 31433977856" (half of it).
"""

from __future__ import annotations

from collections.abc import Callable

from kfdguard.assess import assess
from kfdguard.probe import probe
from kfdguard.simulate import hardware
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str | MachineSpec], SimulatedSystem]
NODES = "devices/virtual/kfd/kfd/topology/nodes"


def _bank(system: SimulatedSystem, node: int) -> dict[str, int]:
    path = system.root.sys / NODES / str(node) / "mem_banks/0/properties"
    text = path.read_text()
    assert text.endswith("\n")  # kfd_topology.c mem_show(): "%s %u\n" / "%s %llu\n" per key
    pairs = [line.split(" ") for line in text.splitlines()]
    assert [k for k, _ in pairs] == ["heap_type", "size_in_bytes", "flags", "width", "mem_clk_max"]
    return {k: int(v) for k, v in pairs}


def test_a_cards_node_has_its_vram_and_the_cpu_node_the_ram(fresh_machine: Make) -> None:
    spec = MachineBuilder("card").ubuntu2404().with_gpu(0x744C, revision=0xC8).with_ram(65536).build()
    system = fresh_machine(spec)
    cpu, gpu = _bank(system, 0), _bank(system, 1)
    assert (cpu["heap_type"], cpu["size_in_bytes"]) == (0, 64 << 30)  # HSA_MEM_HEAP_TYPE_SYSTEM, MemTotal
    assert (gpu["heap_type"], gpu["size_in_bytes"]) == (1, 24 << 30)  # FB_PUBLIC: the RX 7900 XTX's 24 GiB
    facts = probe(system)
    (node,) = facts.kfd.gpu_nodes
    assert node.local_memory == 24 << 30
    (verdict,) = assess(facts).gpus
    assert verdict.compute_memory == 24 << 30 == verdict.vram_total


def test_an_apus_node_has_the_ttm_limit_from_610(fresh_machine: Make) -> None:
    # Phoenix (780M) with 32 GiB on Debian 13's 6.12: the bank is ttm_tt_pages_limit(), half of RAM.
    spec = MachineBuilder("phoenix").with_kernel("6.12.48+deb13-amd64").with_gpu(0x15BF, revision=0xC1)
    system = fresh_machine(spec.with_ram(32768).build())
    cpu, gpu = _bank(system, 0), _bank(system, 1)
    assert (cpu["heap_type"], cpu["size_in_bytes"]) == (0, 32 << 30)
    assert (gpu["heap_type"], gpu["size_in_bytes"]) == (1, 16 << 30)
    facts = probe(system)
    (verdict,) = assess(facts).gpus
    assert verdict.integrated is True and verdict.vram_total == 512 << 20  # the carve-out stays amdgpu's VRAM
    assert verdict.compute_memory == 16 << 30 == verdict.gtt_total


def test_an_apus_node_had_its_carve_out_before_610(fresh_machine: Make) -> None:
    # Ubuntu 24.04's 6.8: amdgpu_amdkfd_get_local_mem_info() still gives an APU its visible VRAM,
    # which gmc_v11_0_mc_init() makes the whole carve-out: one FB_PUBLIC bank of 512 MiB.
    spec = MachineBuilder("phoenix").ubuntu2404().with_gpu(0x15BF, revision=0xC1).with_ram(32768).build()
    system = fresh_machine(spec)
    assert (_bank(system, 0)["heap_type"], _bank(system, 0)["size_in_bytes"]) == (0, 32 << 30)
    assert (_bank(system, 1)["heap_type"], _bank(system, 1)["size_in_bytes"]) == (1, 512 << 20)
    (verdict,) = assess(probe(system)).gpus
    assert verdict.compute_memory == 512 << 20


def test_from_615_an_apu_keeps_a_carve_out_that_gtt_does_not_exceed() -> None:
    # 759e764f7d58 (6.15): apu_prefer_gtt only when real_vram_size < gtt_size. 768 MiB of RAM:
    # GTT and TTM's limit are 384 MiB, less than Phoenix's 512 MiB carve-out.
    phoenix, small, large = 0x15BF, 768 << 20, 2 << 30
    assert hardware.gpu_mem_bank((6, 9), phoenix, small) == (hardware.HEAP_FB_PUBLIC, 512 << 20)
    assert hardware.gpu_mem_bank((6, 14), phoenix, small) == (hardware.HEAP_FB_PUBLIC, 384 << 20)
    assert hardware.gpu_mem_bank((6, 15), phoenix, small) == (hardware.HEAP_FB_PUBLIC, 512 << 20)
    assert hardware.gpu_mem_bank((6, 15), phoenix, large) == (hardware.HEAP_FB_PUBLIC, 1 << 30)
