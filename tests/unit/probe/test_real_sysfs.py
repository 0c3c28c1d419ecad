"""What probe and assess read from real machines' sysfs (tests/data/real-sysfs: LACT's and
ROCm k8s-device-plugin's captures, laid out by tests/realsysfs.py).

Every expected value was read by hand from the capture's file named beside it. Before
issue 34 item 5 the probe lost four of these GPUs without a word (RX 6900 XT: NUL-padded
``class``; RX 580, RX 9070 XT, Steam Deck: no ``device`` file), took every node of the MI210 and
MI300X captures (no ``gpu_id`` files) for a CPU node with a Problem each, gave the MI25's node no
gfx target (its kernel writes no ``gfx_target_version``) and read no memory bank.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.facts import Facts, PcieLink, TopologyNode
from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.probe.reader import Reader
from kfdguard.verdict import GpuStatus, Verdict
from tests.realsysfs import CAPTURES, machine

SYS_PCI = "/sys/bus/pci/devices"
TOPOLOGY = "/sys/class/kfd/kfd/topology"


def _read(name: str, dest: Path) -> tuple[Facts, Verdict]:
    facts = probe(machine(name, dest), log="never")
    return facts, assess(facts)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Facts, Verdict]]:
    names = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir())
    return {name: _read(name, tmp_path_factory.mktemp(name) / "m") for name in names}


def _gpu(verdict: Verdict) -> GpuStatus:
    (gpu,) = verdict.gpus
    return gpu


def _gpu_nodes(facts: Facts) -> tuple[TopologyNode, ...]:
    return facts.kfd.gpu_nodes


def test_every_capture_is_read(real: dict[str, tuple[Facts, Verdict]]) -> None:
    assert set(real) == {
        "lact-phoenix", "lact-strixpoint", "lact-vangogh", "lact-rx6900xt", "lact-rx9070xt", "lact-rx580",
        "lact-vega56", "k8s-mi25", "k8s-mi210-xgmi", "k8s-mi300x-cpx", "k8s-mi308x",
    }  # fmt: skip


def test_phoenix_apu(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-phoenix"]
    assert facts.problems == ()
    gpu = _gpu(verdict)
    # uevent: PCI_SLOT_NAME=0000:64:00.0, PCI_ID=1002:15BF, DRIVER=amdgpu (no driver link in the capture)
    assert (gpu.slot, gpu.ids, gpu.driver) == ("0000:64:00.0", "1002:15bf", "amdgpu")
    assert gpu.gfx == "gfx1103"  # nodes/1/properties: gfx_target_version 110003
    assert gpu.kfd_node == 1 and gpu.gpu_id == 35218  # nodes/1/gpu_id
    assert gpu.compute_units == 12  # simd_count 24 / simd_per_cu 2
    assert gpu.vram_total == 4294967296  # card1/device/mem_info_vram_total
    assert gpu.gtt_total == 31433977856  # card1/device/mem_info_gtt_total
    assert gpu.integrated is True
    assert gpu.link == PcieLink(16000, 16)  # current_link_speed "16.0 GT/s PCIe", current_link_width 16
    (node,) = _gpu_nodes(facts)
    # nodes/1/mem_banks/0/properties: heap_type 1, size_in_bytes 31433977856: the GTT total, not the
    # 4 GiB carve-out, which is why an APU's banks are never taken for its VRAM.
    assert node.local_memory == 31433977856 and node.gfx_by_id is None
    # Issue 38: what ROCm tells programs they may allocate is that bank, not the carve-out plus GTT (35.3 GiB).
    assert gpu.compute_memory == 31433977856
    assert gpu.ttm_limit is None  # the capture has no /sys/module


def test_strix_point_apu(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-strixpoint"]
    assert facts.problems == ()
    gpu = _gpu(verdict)
    assert (gpu.slot, gpu.ids) == ("0000:c1:00.0", "1002:150e")  # uevent PCI_SLOT_NAME; device 0x150e
    (pci,) = facts.gpus
    assert pci.pci_class == 0x038000  # card1/device/class: a display controller, not VGA
    assert gpu.gfx == "gfx1150"  # gfx_target_version 110500
    assert gpu.compute_units == 12  # simd_count 24 / simd_per_cu 2
    assert gpu.vram_total == 536870912  # mem_info_vram_total
    assert gpu.gtt_total == 16441004032  # mem_info_gtt_total
    assert gpu.integrated is True
    (node,) = _gpu_nodes(facts)
    assert node.local_memory == 16441004032  # mem_banks/0 size_in_bytes, again the GTT total
    assert gpu.compute_memory == 16441004032


def test_steam_deck_ids_from_uevent_and_no_vram_from_an_apus_bank(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-vangogh"]
    # card0/device has vendor, link and uevent only: class and device come from the uevent, and it is said.
    assert [str(p) for p in facts.problems] == [
        f"{SYS_PCI}/0000:04:00.0: no readable class/device (a partial copy of the directory?): taken from its uevent"
    ]
    gpu = _gpu(verdict)
    assert (gpu.slot, gpu.ids, gpu.driver) == ("0000:04:00.0", "1002:163f", "amdgpu")  # uevent
    assert gpu.gfx == "gfx1033"  # nodes/1/properties: gfx_target_version 100303
    assert gpu.compute_units == 8  # simd_count 16 / simd_per_cu 2
    assert gpu.integrated is True
    # No mem_info_vram_total, and the bank (8589934592) is what KFD may use, not the carve-out: unknown.
    assert gpu.vram_total is None and gpu.gtt_total is None
    assert [n.index for n in facts.kfd.topology] == [1]  # the capture has no node 0
    assert facts.kfd.topology[0].local_memory == 8589934592  # nodes/1/mem_banks/0 size_in_bytes
    assert gpu.compute_memory == 8589934592  # the bank: what ROCm offers, though the carve-out is unknown


def test_rx6900xt_nul_padded_files_are_read_and_said(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-rx6900xt"]
    gpu = _gpu(verdict)
    # Every file is 4096 bytes: its value, then NULs. The values before the NULs:
    assert (gpu.slot, gpu.ids, gpu.revision) == ("0000:0c:00.0", "1002:73bf", 0xC0)  # uevent PCI_ID; revision 0xc0
    assert gpu.gfx == "gfx1030"  # no KFD node in the capture: the ASIC of 1002:73bf
    assert gpu.vram_total == 17163091968  # mem_info_vram_total "17163091968\n" + 4084 NULs
    assert gpu.gtt_total == 16786171904  # mem_info_gtt_total
    assert gpu.link == gpu.link_max == PcieLink(16000, 16)  # "16.0 GT/s PCIe", 16
    assert gpu.compute_units is None and gpu.kfd_node is None
    (pci,) = facts.gpus
    assert (pci.subsystem_vendor, pci.subsystem_device, pci.boot_vga) == (0x1DA2, 0x440E, True)
    problems = {p.path.rsplit("/", 1)[-1]: p.reason for p in facts.problems}
    padded = {
        "class", "vendor", "uevent", "revision", "subsystem_vendor", "subsystem_device", "boot_vga",
        "mem_info_vram_total", "mem_info_gtt_total", "current_link_speed", "current_link_width",
        "max_link_speed", "max_link_width",
    }  # fmt: skip
    assert set(problems) == padded | {"0000:0c:00.0"}
    # class: "0x030000\n" is 9 bytes, 4087 NULs follow.
    assert problems["class"] == (
        "4087 NUL bytes after its 9-byte value, which the kernel never writes (a copy padded to its buffer?); "
        "the 9 bytes before them are read"
    )
    assert problems["0000:0c:00.0"].startswith("no readable device ")  # no device file: PCI_ID of the uevent


def test_rx9070xt_and_rx580_ids_from_uevent_gfx_from_id(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-rx9070xt"]
    gpu = _gpu(verdict)
    assert (gpu.slot, gpu.ids, gpu.driver) == ("0000:0f:00.0", "1002:7550", "amdgpu")  # uevent
    assert gpu.gfx == "gfx1201"  # 1002:7550 is Navi 48
    assert gpu.link == PcieLink(32000, 16)  # "32.0 GT/s PCIe", 16
    assert gpu.vram_total is None and gpu.gtt_total is None  # not in the capture
    assert len(facts.problems) == 1 and "class/device" in facts.problems[0].reason

    facts, verdict = real["lact-rx580"]
    gpu = _gpu(verdict)
    assert (gpu.slot, gpu.ids) == ("0000:09:00.0", "1002:67df")  # uevent PCI_SLOT_NAME, PCI_ID
    assert gpu.gfx == "gfx803"  # Polaris 10
    assert gpu.vram_total == 4294967296  # card0/device/mem_info_vram_total
    assert gpu.gtt_total == 8342712320  # card0/device/mem_info_gtt_total
    assert gpu.link is None and gpu.link_max == PcieLink(8000, 16)  # only max_link_* in card0/device


def test_vega56_complete_directory(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["lact-vega56"]
    assert facts.problems == ()
    gpu = _gpu(verdict)
    assert (gpu.slot, gpu.ids, gpu.revision) == ("0000:0b:00.0", "1002:687f", 0xC3)  # device 0x687f, revision 0xc3
    assert gpu.gfx == "gfx900"  # Vega 10, by id: no topology in the capture
    assert gpu.vram_total == 8573157376  # mem_info_vram_total
    assert gpu.gtt_total == 8342863872  # mem_info_gtt_total
    assert gpu.integrated is False
    assert gpu.compute_memory == 8573157376  # no topology in the capture: a card's VRAM
    assert gpu.ttm_limit is None  # a discrete card's GTT is not what compute is sized by


def test_mi25_node_without_gfx_target_version(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, verdict = real["k8s-mi25"]
    assert facts.problems == () and verdict.gpus == ()  # topology only: no PCI device in the capture
    (node,) = _gpu_nodes(facts)
    assert "gfx_target_version" not in node.properties and "domain" not in node.properties
    assert node.gpu_id == 13261  # nodes/1/gpu_id
    assert node.gfx_by_id == node.gfx == "gfx900"  # device_id 26720 = 0x6860, Vega 10
    assert node.compute_units == 64  # simd_count 256 / simd_per_cu 4
    assert node.slot == "0000:19:00.0"  # location_id 6400 = 0x1900, no domain line: 0
    assert node.local_memory == 17163091968  # mem_banks/0: heap_type 1, size_in_bytes 17163091968


def test_mi25_vram_from_its_bank_when_the_pci_device_has_no_total(tmp_path: Path) -> None:
    # The MI25's real topology with a PCI device directory this test makes for it (the capture has
    # none): ids of its node (device_id 0x6860), no mem_info_vram_total, as on a kernel without it.
    system = machine("k8s-mi25", tmp_path / "m")
    dev = Path(system.root.path) / "sys/devices/pci0000:00/0000:19:00.0"
    dev.mkdir()
    for name, value in {"class": "0x038000", "vendor": "0x1002", "device": "0x6860", "revision": "0x00"}.items():
        (dev / name).write_text(value + "\n")
    (Path(system.root.path) / f"{SYS_PCI.lstrip('/')}/0000:19:00.0").symlink_to(
        "../../../devices/pci0000:00/0000:19:00.0"
    )
    gpu = _gpu(assess(probe(system, log="never")))
    assert gpu.kfd_node == 1 and gpu.gfx == "gfx900" and gpu.integrated is False
    assert gpu.vram_total == 17163091968  # nodes/1/mem_banks/0 size_in_bytes
    assert gpu.compute_memory == 17163091968  # the same bank, what ROCr reports as its pool
    assert gpu.compute_units == 64


def test_mi210_nodes_without_gpu_id(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, _ = real["k8s-mi210-xgmi"]
    # nodes/N/properties only: one Problem for the whole topology, not one per node.
    assert [str(p) for p in facts.problems] == [
        f"{TOPOLOGY}/nodes: 10 of 10 node(s) without a readable gpu_id (a partial copy?): "
        "a node with SIMDs is taken as a GPU's"
    ]
    nodes = _gpu_nodes(facts)
    assert [n.index for n in nodes] == [2, 3, 4, 5, 6, 7, 8, 9]  # nodes 0 and 1: simd_count 0, CPUs
    assert {(n.gfx, n.compute_units, n.gpu_id, n.local_memory) for n in nodes} == {("gfx90a", 104, None, None)}
    # gfx_target_version 90010; simd_count 416 / simd_per_cu 4; no gpu_id, no mem_banks in the capture
    assert nodes[0].slot == "0000:63:00.0"  # nodes/2 location_id 25344 = 0x6300


def test_mi300x_cpx_partitions(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, _ = real["k8s-mi300x-cpx"]
    assert len(facts.problems) == 1 and facts.problems[0].reason.startswith("65 of 65 node(s) without")
    nodes = _gpu_nodes(facts)
    assert len(nodes) == 63  # nodes 2..64 have simd_count 152; 0 and 1 have cpu_cores_count 96, simd_count 0
    assert {(n.gfx, n.compute_units) for n in nodes} == {("gfx942", 38)}  # 90402; 152 / 4
    # location_id 1280..1287: the partitions' numbers in the low bits of the PCI function's id.
    assert [n.slot for n in nodes[:8]] == [f"0000:05:00.{k}" for k in range(8)]


def test_mi308x_memory_banks(real: dict[str, tuple[Facts, Verdict]]) -> None:
    facts, _ = real["k8s-mi308x"]
    assert facts.problems == ()
    nodes = _gpu_nodes(facts)
    assert len(nodes) == 32 and {(n.gfx, n.compute_units) for n in nodes} == {("gfx942", 20)}  # 90402; 80 / 4
    by_index = {n.index: n for n in nodes}
    assert by_index[2].gpu_id == 24248  # nodes/2/gpu_id
    assert by_index[2].local_memory == 51539607552  # nodes/2/mem_banks/0 size_in_bytes
    assert by_index[5].local_memory == 51522830336  # nodes/5/mem_banks/0 size_in_bytes


def test_cut_properties_file_leaves_out_its_last_line(tmp_path: Path) -> None:
    # Phoenix's real node 1, cut by this test in the middle of "gfx_target_version 110003", as a copy
    # cut short would be: the half value (1100) is not taken, and it is said. The lines after it
    # (vendor_id, device_id, location_id...) are gone with the cut, so the node no longer names its
    # PCI device and the GPU's target comes from its PCI id.
    system = machine("lact-phoenix", tmp_path / "m")
    props = Path(system.root.path) / f"{TOPOLOGY.lstrip('/')}/nodes/1/properties"
    text = props.read_bytes()
    props.write_bytes(text[: text.index(b"gfx_target_version 1100") + len(b"gfx_target_version 1100")])
    facts = probe(system, log="never")
    (node,) = facts.kfd.gpu_nodes
    assert "gfx_target_version" not in node.properties and node.prop("simd_count") == 24
    assert node.gfx is None
    assert [str(p) for p in facts.problems] == [
        f"{TOPOLOGY}/nodes/1/properties: line 19: 'gfx_target_version 1100' has no newline at its end "
        "(a cut copy?); left out"
    ]
    assert _gpu(assess(facts)).gfx == "gfx1103"  # 1002:15bf, Phoenix


def test_nul_then_text_is_cut_and_said(tmp_path: Path) -> None:
    (tmp_path / "attr").write_bytes(b"16\n\0garbage")
    reader = Reader(Root(tmp_path))
    assert reader.attribute_value(Root(tmp_path).path / "attr") == "16"
    assert [p.reason for p in reader.problems] == [
        "a NUL byte at offset 3, then more text, which the kernel never writes; the 3 bytes before it are read, "
        "the rest is left out"
    ]


def test_captures_are_copied_byte_for_byte(tmp_path: Path) -> None:
    # The layout keeps the capture's bytes: the RX 6900 XT's class is still 4096 bytes under /sys.
    system = machine("lact-rx6900xt", tmp_path / "m")
    laid = Path(system.root.path) / "sys/devices/pci0000:00/0000:0c:00.0/class"
    source = CAPTURES / "lact-rx6900xt/card0/device/class"
    assert laid.read_bytes() == source.read_bytes() and len(source.read_bytes()) == 4096
