"""What devices carry besides their ids (issue 17 item 5): VRAM and GTT totals, APU or discrete,
the PCIe link, compute units — from the sysfs parsers to probe, the simulator, assess and the outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.assess import assess
from kfdguard.config import Config
from kfdguard.facts import PcieLink, TopologyNode
from kfdguard.host.paths import HostPath
from kfdguard.host.root import Root
from kfdguard.parsers.pcie import SysfsValueError, parse_link_speed, parse_link_width, parse_memory_total
from kfdguard.probe import probe
from kfdguard.probe.devices import probe_gpus
from kfdguard.probe.reader import Reader
from kfdguard.publish.report import resources_line, to_json
from kfdguard.service.status import from_verdict
from kfdguard.simulate import bundled, hardware
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.system import SimulatedSystem
from tests.fuzzing import examples
from tests.paths import TESTS

DATA = TESTS / "data"
FORMATS: dict[str, Any] = json.loads((DATA / "sysfs-formats.json").read_text())
SOURCES = Path("/var/cache/kfdguard-testdata/devices-src")
# pci-sysfs.c before Linux 5.2 decoded the link itself; its switch printed only these
# (current_link_speed_show/max_link_speed_show of 4.x, quoted in kfdguard/simulate/hardware.py).
OLD_SPEEDS = {"2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "Unknown speed"}


# --- parsers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mts"),
    [
        ("8.0 GT/s PCIe\n", 8000),
        ("2.5 GT/s PCIe", 2500),
        ("64.0 GT/s PCIe", 64000),
        ("8 GT/s\n", 8000),
        ("2.5 GT/s", 2500),
        ("16 GT/s", 16000),
        ("Unknown\n", None),
        ("Unknown speed", None),
    ],
)
def test_both_kernel_formats_of_the_link_speed_are_read(text: str, mts: int | None) -> None:
    assert parse_link_speed(text) == mts


@pytest.mark.parametrize(
    "text", ["33 MHz PCI", "8.0 GT/s PCIe extra", "7.0 GT/s PCIe", "8,0 GT/s", "", "８ GT/s", "9" * 400 + " GT/s"]
)
def test_what_no_kernel_prints_as_a_speed_is_refused(text: str) -> None:
    with pytest.raises(SysfsValueError):
        parse_link_speed(text)


@pytest.mark.parametrize("text", ["-1", "33", "x16", "", "1e3", "١٦"])
def test_a_width_outside_pcie_is_refused(text: str) -> None:
    with pytest.raises(SysfsValueError):
        parse_link_width(text)


@pytest.mark.parametrize("text", ["-5", "0x100", "1.5", str(1 << 60), "", "12 MB"])
def test_a_memory_total_that_is_not_a_byte_count_is_refused(text: str) -> None:
    with pytest.raises(SysfsValueError):
        parse_memory_total(text)


def test_compute_units_are_simds_over_simds_per_cu() -> None:
    def node(**props: int) -> TopologyNode:
        return TopologyNode(1, 4660, "navi31", props)

    # What ROCr and the ROCm k8s labeller compute: simd_count / simd_per_cu.
    assert node(simd_count=192, simd_per_cu=2).compute_units == 96
    assert node(simd_count=192, simd_per_cu=0).compute_units is None
    assert node(simd_count=191, simd_per_cu=2).compute_units is None
    assert node(simd_count=2**62, simd_per_cu=1).compute_units is None
    assert node(cpu_cores_count=4, simd_count=32, simd_per_cu=4).apu_node
    assert not node(cpu_cores_count=0, simd_count=32, simd_per_cu=4).apu_node


# --- probe -----------------------------------------------------------------------------------


def _gpu_dir(root: Path, **files: str) -> None:
    dev = root / "sys/bus/pci/devices/0000:03:00.0"
    dev.mkdir(parents=True)
    for name, text in {"class": "0x030000", "vendor": "0x1002", "device": "0x744c", **files}.items():
        (dev / name).write_text(text + "\n")


def test_probe_reads_memory_and_link(tmp_path: Path) -> None:
    _gpu_dir(
        tmp_path,
        mem_info_vram_total="25753026560",
        mem_info_gtt_total="16777216000",
        current_link_speed="8.0 GT/s PCIe",
        current_link_width="4",
        max_link_speed="16.0 GT/s PCIe",
        max_link_width="16",
    )
    reader = Reader(Root(tmp_path))
    (gpu,) = probe_gpus(reader)
    assert (gpu.vram_total, gpu.gtt_total) == (25753026560, 16777216000)
    assert gpu.link == PcieLink(8000, 4) and gpu.link_max == PcieLink(16000, 16)
    assert reader.problems == []


def test_absent_files_are_unknown_not_problems(tmp_path: Path) -> None:
    _gpu_dir(tmp_path)
    reader = Reader(Root(tmp_path))
    (gpu,) = probe_gpus(reader)
    assert (gpu.vram_total, gpu.gtt_total, gpu.link, gpu.link_max) == (None, None, None, None)
    assert reader.problems == []


def test_hostile_values_become_problems_naming_the_file(tmp_path: Path) -> None:
    _gpu_dir(
        tmp_path,
        mem_info_vram_total="lots",
        mem_info_gtt_total="-1",
        current_link_speed="\x00\xff 9 GT/s",
        current_link_width="99",
        max_link_speed="Unknown",
        max_link_width="16",
    )
    reader = Reader(Root(tmp_path))
    (gpu,) = probe_gpus(reader)
    assert (gpu.vram_total, gpu.gtt_total) == (None, None)
    assert gpu.link == PcieLink(None, None) and gpu.link_max == PcieLink(None, 16)
    complained = {p.path.rsplit("/", 1)[1]: p.reason for p in reader.problems}
    assert set(complained) == {"mem_info_vram_total", "mem_info_gtt_total", "current_link_speed", "current_link_width"}
    assert all(reason.startswith("unreadable: ") for reason in complained.values())


# --- the simulator prints what real kernels print --------------------------------------------------


def _kernel_row(version: tuple[int, int]) -> dict[str, Any] | None:
    """The newest derived kernel series not newer than ``version``."""
    rows = [k for k in FORMATS["kernels"] if tuple(int(p) for p in k["series"].split(".")) <= version]
    return rows[-1] if rows else None


@pytest.mark.parametrize("name", bundled.names())
def test_simulated_resources_are_in_the_formats_of_the_claimed_kernel(name: str, tmp_path: Path) -> None:
    from kfdguard.simulate.kernel import kernel_version

    spec = bundled.load(name)
    root = bundled.render_bundled(name, tmp_path / name)
    version = kernel_version(spec.kernel.release)
    row = _kernel_row(version)
    checked = 0
    for gpu in spec.gpus:
        dev = root.sys / "bus/pci/devices" / gpu.slot
        for attr in ("current_link_speed", "max_link_speed"):
            path = dev / attr
            if not path.exists():
                continue
            text = path.read_text()
            assert text.endswith("\n") and text.count("\n") == 1, text
            if version >= hardware.NEW_SPEED_FORMAT:
                assert row is not None
                assert text[:-1] in [*row["speeds"], *row["unknown"]], (attr, text, row["series"])
            else:
                assert text[:-1] in OLD_SPEEDS, (attr, text)
            checked += 1
        for attr in ("current_link_width", "max_link_width", "mem_info_vram_total", "mem_info_gtt_total"):
            path = dev / attr
            if not path.exists():
                continue
            # The widths were "%u\\n" before 5.2 too; the memory files are written only for kernels read.
            assert row is not None or attr.endswith("_width"), f"{attr} written for {spec.kernel.release}"
            if row is not None:
                assert row["formats"][attr] in ("%u\\n", "%llu\\n")
            assert re.fullmatch(r"[0-9]+\n", path.read_text()), (attr, path.read_text())
    amd = [g for g in spec.gpus if g.vendor == 0x1002]
    assert checked == 2 * len(amd)


def test_the_derived_table_matches_the_kernel_sources() -> None:
    if not SOURCES.is_dir():
        pytest.skip(f"{SOURCES} holds no unpacked kernel sources (tools/devices/sysfs_formats.py says how)")
    from tools.devices.sysfs_formats import derive

    trees = sorted(SOURCES.glob("*/linux-source-*"))
    assert trees, SOURCES
    derived = {str(k["series"]): k for k in map(derive, trees)}
    for row in FORMATS["kernels"]:
        assert derived[row["series"]] == row


def test_gtt_follows_each_kernels_default_size() -> None:
    gib = 1 << 30
    # 5.10: min(max(3 GiB, VRAM), 3/4 RAM); 6.1: max(3 GiB, RAM/2); 6.12: RAM/2 (ttm's limit).
    assert hardware.gtt_bytes((5, 10), 32 * gib, 24 * gib) == 24 * gib
    assert hardware.gtt_bytes((5, 10), 8 * gib, 24 * gib) == 6 * gib
    assert hardware.gtt_bytes((6, 1), 4 * gib, 24 * gib) == 3 * gib
    assert hardware.gtt_bytes((6, 12), 4 * gib, 24 * gib) == 2 * gib


def test_a_card_in_a_narrow_slot_and_an_apu(tmp_path: Path) -> None:
    root = bundled.render_bundled("dgpu-plus-igpu-atomics", tmp_path / "m")
    facts = probe(SimulatedSystem(root))
    verdict = assess(facts, Config())
    by_slot = {g.slot: g for g in verdict.gpus}
    navi21, polaris, raphael = by_slot["0000:03:00.0"], by_slot["0000:0a:00.0"], by_slot["0000:12:00.0"]
    assert (navi21.integrated, navi21.compute_units, navi21.vram_total) == (False, 60, 16 << 30)
    assert polaris.link == PcieLink(8000, 4) and polaris.link_max == PcieLink(8000, 16)
    # KFD skipped the RX 580 (atomics): no node, so no compute units, but amdgpu still bound it.
    assert polaris.compute_units is None and polaris.vram_total == 8 << 30
    assert (raphael.integrated, raphael.compute_units) == (True, 2)
    # Ubuntu 24.04's 6.8 with 32 GiB: max(3 GiB, RAM/2).
    assert {g.gtt_total for g in verdict.gpus} == {16 << 30}


def test_a_kfd_apu_node_makes_the_gpu_integrated(tmp_path: Path) -> None:
    # Raven on 5.15: KFD still printed "Add APU node" for a node with CPU cores and SIMDs.
    spec = MachineBuilder("raven").ubuntu2204().with_gpu(0x15D8, slot="0000:04:00.0").build()
    from kfdguard.simulate.render import render

    facts = probe(SimulatedSystem(render(spec, tmp_path / "m")))
    (node,) = facts.kfd.gpu_nodes
    assert node.apu_node and node.compute_units == 8
    (gpu,) = assess(facts, Config()).gpus
    assert gpu.integrated is True


def test_an_old_kernel_shows_the_link_but_no_memory_files(tmp_path: Path) -> None:
    root = bundled.render_bundled("legacy-4.15-amdkfd", tmp_path / "m")
    facts = probe(SimulatedSystem(root))
    (gpu,) = facts.gpus
    assert (root.sys / "bus/pci/devices/0000:01:00.0/current_link_speed").read_text() == "8 GT/s\n"
    assert gpu.link == PcieLink(8000, 16) and gpu.vram_total is None


# --- outputs ---------------------------------------------------------------------------------


def test_check_json_bus_and_text_carry_them(tmp_path: Path) -> None:
    root = bundled.render_bundled("rx7900xtx-ubuntu2404", tmp_path / "m")
    facts = probe(SimulatedSystem(root))
    verdict = assess(facts, Config())
    gpus = to_json(facts, verdict)["gpus"]
    assert isinstance(gpus, list)
    (gpu,) = gpus
    assert {k: gpu[k] for k in ("integrated", "vram_total", "compute_units", "pcie_speed", "pcie_width")} == {
        "integrated": False,
        "vram_total": 24 << 30,
        "compute_units": 96,
        "pcie_speed": 16000,
        "pcie_width": 16,
    }
    (device,) = from_verdict(facts, verdict, "notify", 0).devices
    assert device["VramTotal"] == 24 << 30 and device["ComputeUnits"] == 96 and device["Integrated"] is False
    assert (device["PcieSpeed"], device["PcieWidth"], device["PcieMaxSpeed"], device["PcieMaxWidth"]) == (
        16000,
        16,
        16000,
        16,
    )


def test_unknown_values_are_left_out_of_the_bus_dictionary(tmp_path: Path) -> None:
    root = bundled.render_bundled("legacy-4.15-amdkfd", tmp_path / "m")
    facts = probe(SimulatedSystem(root))
    (device,) = from_verdict(facts, assess(facts, Config()), "notify", 0).devices
    # A variant cannot carry "unknown": no VRAM file on 4.15 here, no KFD node for the card.
    assert "VramTotal" not in device and "ComputeUnits" not in device
    assert device["PcieSpeed"] == 8000


def test_the_resources_line() -> None:
    assert (
        resources_line(False, 24 << 30, 16 << 30, 96, 8000, 4, 16000, 16)
        == "discrete · 24.0 GiB VRAM · 16.0 GiB GTT · 96 CUs · PCIe 8.0 GT/s x4 (can do 16.0 GT/s x16)"
    )
    assert resources_line(True, 512 << 20, None, 12, 16000, 16, 16000, 16) == (
        "integrated (APU) · 512.0 MiB carve-out · 12 CUs · PCIe 16.0 GT/s x16"
    )
    assert resources_line(None, None, None, None, None, None, None, None) == ""
    # Issue 38: an APU's memory for compute (its KFD bank) and TTM's limit; a card's VRAM is not said twice.
    assert resources_line(True, 4 << 30, 31433977856, 12, None, None, None, None, compute_memory=31433977856,
                          ttm_limit=31433977856) == (
        "integrated (APU) · 4.0 GiB carve-out · 29.3 GiB GTT · 29.3 GiB for compute · TTM limit 29.3 GiB · 12 CUs"
    )  # fmt: skip
    assert resources_line(False, 24 << 30, None, None, None, None, None, None, compute_memory=24 << 30) == (
        "discrete · 24.0 GiB VRAM"
    )


def test_check_and_status_text_show_the_hardware_line(tmp_path: Path) -> None:
    from kfdguard.publish.report import status_text, to_text

    root = bundled.render_bundled("dgpu-plus-igpu-atomics", tmp_path / "m")
    facts = probe(SimulatedSystem(root))
    verdict = assess(facts, Config())
    text = to_text(facts, verdict)
    assert "      discrete · 8.0 GiB VRAM · 16.0 GiB GTT · PCIe 8.0 GT/s x4 (can do 8.0 GT/s x16)\n" in text
    # The APU's TTM limit is the live ttm.pages_limit: TTM's default, half of the machine's 32 GiB.
    assert ("      integrated (APU) · 512.0 MiB carve-out · 16.0 GiB GTT · TTM limit 16.0 GiB · 2 CUs · "
            "PCIe 16.0 GT/s x16\n") in text  # fmt: skip
    status = from_verdict(facts, verdict, "notify", 0)
    devices = [dict(d) for d in status.devices]
    shown = status_text({"State": "degraded", "Summary": "s", "Devices": devices})
    assert "      discrete · 16.0 GiB VRAM · 16.0 GiB GTT · 60 CUs · PCIe 16.0 GT/s x16" in shown
    # A hostile or older service's dictionary: wrong types are not shown, True is not one lane.
    odd = status_text({"Devices": [{"Slot": "x", "VramTotal": "lots", "PcieWidth": True, "Integrated": 1}]})
    assert "lots" not in odd and "x1" not in odd and "discrete" not in odd


def _pci(root: Path, rel: str, vendor: str, pci_class: str, speed: str, width: str, top: str, top_width: str) -> None:
    dev = root / "sys/devices/pci0000:00" / rel
    dev.mkdir(parents=True)
    for name, text in {
        "vendor": vendor,
        "class": pci_class,
        "device": "0x744c",
        "current_link_speed": speed,
        "current_link_width": width,
        "max_link_speed": top,
        "max_link_width": top_width,
    }.items():
        (dev / name).write_text(text + "\n")


def test_an_rdna_cards_own_switch_is_skipped_for_the_slots_link(tmp_path: Path) -> None:
    # How an RX 7900 XTX sits: root port (AMD CPU, 1022) -> the card's upstream port (1002:1478)
    # -> its downstream port (1002:1479) -> the GPU. Its endpoint link is internal to the card;
    # the slot's link (here a x16 card in a PCIe 3.0 x8 slot) shows at the upstream port.
    _pci(tmp_path, "0000:00:01.1", "0x1022", "0x060400", "8.0 GT/s PCIe", "8", "8.0 GT/s PCIe", "16")
    _pci(tmp_path, "0000:00:01.1/0000:01:00.0", "0x1002", "0x060400", "8.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16")
    _pci(tmp_path, "0000:00:01.1/0000:01:00.0/0000:02:00.0", "0x1002", "0x060400", "16.0 GT/s PCIe", "16",
         "16.0 GT/s PCIe", "16")  # fmt: skip
    gpu_dir = "0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0"
    _pci(tmp_path, gpu_dir, "0x1002", "0x030000", "16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
    bus = tmp_path / "sys/bus/pci/devices"
    bus.mkdir(parents=True)
    (bus / "0000:03:00.0").symlink_to(f"../../../devices/pci0000:00/{gpu_dir}")
    reader = Reader(Root(tmp_path))
    (gpu,) = probe_gpus(reader)
    assert gpu.link == PcieLink(8000, 8) and gpu.link_max == PcieLink(16000, 16)
    assert reader.problems == []
    # A snapshot bundle keeps the bridges' files and the links to them: the replay reads the same.
    from kfdguard.snapshot.bundle import write_tree
    from kfdguard.snapshot.recorder import RecordingReader

    recorder = RecordingReader(Root(tmp_path))
    probe_gpus(recorder)
    write_tree(HostPath(tmp_path / "bundle"), recorder, None)
    (replayed,) = probe_gpus(Reader(Root(tmp_path / "bundle")))
    assert (replayed.link, replayed.link_max) == (gpu.link, gpu.link_max)


def test_a_card_without_a_switch_reads_its_own_link_and_a_link_out_of_the_root_is_not_read(tmp_path: Path) -> None:
    # A Polaris card straight on the root port; a slot link pointing out of the machine's root: a
    # root that is not the host's is read beneath it (issue 35.6), so that device is not this machine's.
    _pci(tmp_path, "0000:00:03.1", "0x1022", "0x060400", "8.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16")
    _pci(tmp_path, "0000:00:03.1/0000:0a:00.0", "0x1002", "0x030000", "8.0 GT/s PCIe", "4", "8.0 GT/s PCIe", "16")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    _pci(outside, "0000:0b:00.0", "0x1002", "0x030000", "2.5 GT/s PCIe", "1", "2.5 GT/s PCIe", "1")
    bus = tmp_path / "sys/bus/pci/devices"
    bus.mkdir(parents=True)
    (bus / "0000:0a:00.0").symlink_to("../../../devices/pci0000:00/0000:00:03.1/0000:0a:00.0")
    (bus / "0000:0b:00.0").symlink_to(outside / "sys/devices/pci0000:00/0000:0b:00.0")
    reader = Reader(Root(tmp_path))
    gpus = {g.slot: g for g in probe_gpus(reader)}
    assert gpus["0000:0a:00.0"].link == PcieLink(8000, 4)
    assert "0000:0b:00.0" not in gpus
    (problem,) = reader.problems  # one link, said once
    assert problem.path.startswith("/sys/bus/pci/devices/0000:0b:00.0/")
    assert problem.reason.startswith(
        "unreadable: link leaves the machine's root (/sys/bus/pci/devices/0000:0b:00.0 -> "
    )


# --- hostile text, at random ------------------------------------------------------------------


@settings(max_examples=examples(300))
@given(st.text(max_size=60) | st.sampled_from(["8.0 GT/s PCIe", "16 GT/s", "Unknown", "16", "25753026560"]))
def test_the_parsers_refuse_with_their_own_error_only(text: str) -> None:
    for parse in (parse_link_speed, parse_link_width, parse_memory_total):
        try:
            value = parse(text)
        except SysfsValueError:
            continue
        assert value is None or (isinstance(value, int) and value >= 0)


@settings(max_examples=examples(100))
@given(st.sampled_from([2500, 5000, 8000, 16000, 32000, 64000]), st.sampled_from([(5, 1), (5, 10), (6, 12)]))
def test_what_the_simulator_prints_parses_back(mts: int, version: tuple[int, int]) -> None:
    from kfdguard.parsers.pcie import format_speed

    assert parse_link_speed(hardware.speed_text(mts, version)) == mts
    assert parse_link_speed(format_speed(mts) + " PCIe") == mts
