"""kfdguard's knowledge against the data generated from Debian's kernel, module, libdrm and firmware packages.

Every test here reads kfdguard/knowledge/data (tools/knowledge/generate.py): the
regression tests of issue 22 check a fix against what the real sources say, not
against a value typed into the test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kfdguard import kernellog, knowledge
from kfdguard.knowledge import firmware, formats, params
from kfdguard.knowledge.asics import KFD_TABLES_READ, PCI_ROWS, SOURCES
from kfdguard.knowledge.chips import CHIP_TO_ASIC, FAMILY_TO_ASIC
from kfdguard.knowledge.generated import KERNELS
from kfdguard.knowledge.logrules import BY_ID, FAILURE, RUNTIME, decode_gc_ip
from kfdguard.knowledge.params import KFD_PARAMS
from tests.paths import TOP

SERIES = formats.series()


def _formats(series: str, text: str) -> list[list[Any]]:
    return [m for m in formats.kernel(series)["messages"] if text in m[3]]


def _rules(line: str) -> set[str]:
    return {e.rule for e in kernellog.match(line)}


def _gfx(version: int) -> str:
    """gfx_target_version (decimal MMmmss, stepping written in hex in the name) -> 'gfx90a'."""
    return f"gfx{version // 10000}{(version // 100) % 100}{version % 100:x}"


def test_the_generated_series_are_the_ones_the_issue_names() -> None:
    assert {"5.10", "6.1", "6.12"} <= set(SERIES)
    for series in SERIES:
        facts = formats.kernel(series)
        assert facts["provenance"]["source"]["package"] == f"linux-source-{series}"
        assert facts["upstream"].startswith(series + ".")
        assert len(facts["messages"]) > 1000 and len(facts["params"]) > 70


# --- issue 22: "GPU too new for this kernel" in 6.12's format -----------------------------------


def test_gc_ip_unsupported_matches_6_1_and_6_12_encodings() -> None:
    # The format is the same in both; the number is IP_VERSION(), whose encoding changed.
    for series, printed in (("6.1", "%06x" % ((11 << 16) | (5 << 8) | 0)), ("6.12", "%06x" % ((11 << 24) | (5 << 16)))):
        (fmt,) = _formats(series, "GC IP %06x %s not supported in kfd")
        line = "kfd kfd: amdgpu: " + fmt[3].replace("%06x", printed).replace("%s", "")
        events = [e for e in kernellog.match(line) if e.rule == "kfd-gc-ip-unsupported"]
        assert events, line
        assert decode_gc_ip(dict(events[0].values)["ip"]) == "11.5.0"
    assert len("%06x" % ((11 << 24) | (1 << 8))) == 7  # 'b000100': the digits the old rule refused


# --- issue 22: parameters -----------------------------------------------------------------------


@pytest.mark.parametrize("series", ["5.10", "6.1", "6.12"])
def test_no_kfd_parameter_taints_where_the_source_has_no_unsafe(series: str) -> None:
    unsafe = set(formats.kernel(series)["unsafe_params"])
    for name in ("sched_policy", "halt_if_hws_hang", "hws_gws_support", "no_queue_eviction_on_vm_fault",
                 "mtype_local", "debug_mask"):  # fmt: skip
        assert name not in unsafe
        assert not params.taints(name, tuple(int(p) for p in series.split(".")))  # type: ignore[arg-type]
    assert not any(p.unsafe for p in KFD_PARAMS.values())


def test_tainting_follows_the_kernel_that_declares_it_unsafe() -> None:
    newer = [s for s in SERIES if "sched_policy" in KERNELS[s]["unsafe"]]
    for series in newer:
        assert params.taints("sched_policy", tuple(int(p) for p in series.split(".")))  # type: ignore[arg-type]


def test_max_num_of_queues_per_device_range_is_kfd_init_s() -> None:
    for series in SERIES:
        limit = KERNELS[series]["limits"]["KFD_MAX_NUM_OF_QUEUES_PER_DEVICE"]
        param = KFD_PARAMS["max_num_of_queues_per_device"]
        assert param.maximum == limit
        assert param.check(str(limit)) is None and param.check("8192") is None
        assert param.check(str(limit + 1)) is not None and param.check("0") is not None


def test_parameters_carry_the_kernels_that_declare_them() -> None:
    assert "6.1" not in params.declared("debug_mask") and "6.12" in params.declared("debug_mask")
    assert "6.1" not in params.declared("mtype_local")
    assert "5.10" not in params.declared("no_queue_eviction_on_vm_fault")
    assert "6.1" in params.declared("no_queue_eviction_on_vm_fault")
    for gone in ("debug_largebar", "ignore_crat"):
        assert "6.1" in params.declared(gone) and "6.12" not in params.declared(gone)
    # CONFIG_HSA_AMD_P2P is unset in Debian's configs: no Debian module declares pcie_p2p.
    assert params.declared("pcie_p2p") == {}
    assert params.declared("hws_gws_support")["6.1"] == "bool"
    for name in ("exp_hw_support", "cik_support", "si_support", "mes", "gpu_recovery", "lockup_timeout",
                 "gttsize", "vm_fault_stop", "compute_multipipe"):  # fmt: skip
        assert "6.1" in params.declared(name), name


def test_every_kfd_param_in_the_table_exists_in_some_kernel_read() -> None:
    for name, param in KFD_PARAMS.items():
        kinds = set(params.declared(name).values())
        if name == "pcie_p2p":
            continue  # only with CONFIG_HSA_AMD_P2P, which no Debian config sets
        assert kinds, name
        expected = {"bool": {"bool"}, "int": {"int"}, "uint": {"uint"}}[param.kind]
        assert kinds <= expected, (name, kinds)


# --- issue 22: ASICs, gfx targets, first KFD kernel, PCI ids --------------------------------------


def test_phoenix2_is_driven_by_the_6_1_kfd() -> None:
    phoenix2 = knowledge.asic("phoenix2")
    assert phoenix2 is not None and phoenix2.gc_ip == "11.0.4"
    assert KERNELS["6.1"]["kfd"]["11.0.4"][0] == (110003,)
    assert knowledge.kfd_in_kernel(phoenix2, "6.1")
    assert phoenix2.kfd_since is not None and phoenix2.kfd_since <= (6, 1)


def test_first_kfd_release_is_not_later_than_a_kernel_read_that_drives_the_asic() -> None:
    for asic in knowledge.asics():
        first = knowledge.first_kfd_series(asic)
        if first is not None:
            assert asic.kfd_since is not None and asic.kfd_since <= first, asic.key


def test_first_kfd_release_is_not_later_than_an_older_kernel_table_read() -> None:
    # Issue 36: Vega12 said 5.10 while 5.4's supported_devices lists 0x69A0-0x69AF, Cyan Skillfish 6.1
    # while 5.15's kfd_supported_devices has CHIP_CYAN_SKILLFISH (asics.KFD_TABLES_READ, SOURCES).
    later = []
    for key, (release, listed) in KFD_TABLES_READ.items():
        assert key in SOURCES
        for name in listed:
            asic = knowledge.asic(name)
            assert asic is not None, name
            if asic.kfd_since is None or asic.kfd_since > release:
                later.append((name, asic.kfd_since, key))
    assert later == []


def test_a_kernel_read_at_or_after_kfd_since_drives_the_asic() -> None:
    for asic in knowledge.asics():
        if asic.kfd_since is None or not knowledge.kfd_labels(asic):
            continue
        for series in SERIES:
            version = tuple(int(p) for p in series.split("."))
            if version >= asic.kfd_since:
                assert knowledge.kfd_in_kernel(asic, series), (asic.key, series)


def test_gfx_targets_match_gfx_target_version_of_every_kernel() -> None:
    checked = 0
    for asic in knowledge.asics():
        if asic.gc_ip is None or asic.gfx is None:
            continue
        for series in SERIES:
            entry = KERNELS[series]["kfd"].get(asic.gc_ip)
            if entry and entry[0]:
                assert asic.gfx in {_gfx(v) for v in entry[0]}, (asic.key, series, entry)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize(("device", "key", "gfx"), [(0x69A0, "vega12", "gfx904"), (0x69AF, "vega12", "gfx904"),
                                                    (0x13FE, "cyan_skillfish", "gfx1013"), (0x143F, "cyan_skillfish", "gfx1013")])  # fmt: skip
def test_vega12_and_cyan_skillfish_are_known(device: int, key: str, gfx: str) -> None:
    chip, _name = knowledge.identify(device)
    assert chip is not None and chip.key == key and chip.gfx == gfx
    gc = KERNELS["6.12"]["kfd"][chip.gc_ip or ""]
    assert _gfx(gc[0][0]) == gfx


@pytest.mark.parametrize("series", ["5.10", "6.1", "6.12"])
def test_every_kfd_capable_id_of_amdgpu_s_table_is_identified(series: str) -> None:
    kfd = KERNELS[series]["kfd"]
    unknown = []
    for device, (chip, _flags) in KERNELS[series]["pci"].items():
        asic = knowledge.asic(CHIP_TO_ASIC.get(chip, ""))
        capable = chip in kfd or (asic is not None and asic.gc_ip in kfd)
        found, _ = knowledge.identify(device)
        if capable and (found is None or (found.key != CHIP_TO_ASIC[chip] and chip not in knowledge.kfd_labels(found))):
            unknown.append(f"{device:04x} {chip}")
    assert unknown == []


# --- GPUs newer than amdgpu's table that libdrm does not name: pci.ids's family -------------------


@pytest.mark.parametrize(("device", "key"), [(0x7487, "navi33"), (0x748B, "navi33"), (0x73CE, "navi22"),
                                             (0x74B9, "mi300")])  # fmt: skip
def test_ids_only_pci_ids_names_are_identified(device: int, key: str) -> None:
    chip, name = knowledge.identify(device)
    assert chip is not None and chip.key == key
    assert name is not None and name in _newest_pci_ids()[device]


def _newest_pci_ids() -> dict[int, str]:
    ids = formats.ids_firmware()["ids"]
    newest = max((v for k, v in ids.items() if k.startswith("pci.ids")), key=lambda v: v["provenance"]["version"])
    return {row[0]: row[2] for row in newest["rows"]}


def _family_asics() -> dict[str, set[str | None]]:
    """pci.ids family -> the ASICs libdrm's rows or amdgpu's table give its ids (None: neither knows)."""
    from kfdguard.knowledge.generated import PCI_CHIPS
    from tools.knowledge.literal import pci_family

    libdrm = {row[0]: row[3] for row in PCI_ROWS}
    found: dict[str, set[str | None]] = {}
    for device, name in _newest_pci_ids().items():
        key = libdrm.get(device) or CHIP_TO_ASIC.get(PCI_CHIPS.get(device, ""))
        found.setdefault(pci_family(name), set()).add(key)
    return found


def test_each_mapped_family_names_one_discovered_asic_and_its_known_ids_agree() -> None:
    families = _family_asics()
    for family, key in FAMILY_TO_ASIC.items():
        assert family in families, f"{family!r} is in no pci.ids read"
        assert families[family] - {None} <= {key}, (family, families[family])
        asic = knowledge.asic(key)
        assert asic is not None and asic.gc_ip is not None, f"{key}: not an IP-discovery ASIC"
    # The check has teeth: pci.ids calls MI300 and MI350 ids "Aqua Vanjaram" alike, so that family
    # could not be mapped (0x74B9 has a row of its own in asics.PCI_ROWS).
    assert families["Aqua Vanjaram"] - {None} == {"mi300", "mi350"}


def test_generated_py_is_rendered_from_the_committed_data_and_the_hand_tables() -> None:
    """A change to chips.FAMILY_TO_ASIC (or another table the renderer reads) needs --rerender."""
    argv = [sys.executable, "tools/knowledge/generate.py", "--rerender", "--check", "--report", "docs/KNOWLEDGE.md"]
    result = subprocess.run(argv, cwd=TOP, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr


def test_libdrm_rows_agree_with_a_libdrm_version_read() -> None:
    libdrm = [
        {(r[0], r[1]): r[2] for r in v["rows"]}
        for k, v in formats.ids_firmware()["ids"].items()
        if k.startswith("libdrm")
    ]
    wrong = [
        (hex(d), r, n)
        for d, r, n, _a, src in PCI_ROWS
        if "libdrm" in src and not any(rows.get((d, r)) == n for rows in libdrm)
    ]
    assert wrong == []


# --- issue 22: firmware advice ------------------------------------------------------------------


@pytest.mark.parametrize("key", ["navi32", "phoenix2"])
def test_bookworm_firmware_lacks_what_6_1_declares_and_backports_has_it(key: str) -> None:
    asic = knowledge.asic(key)
    assert asic is not None
    gaps = firmware.missing("6.1", asic, "bookworm")
    assert any(f.startswith(f"amdgpu/gc_{asic.gc_ip.replace('.', '_')}_") for f in gaps)  # type: ignore[union-attr]
    assert firmware.missing("6.1", asic, "bookworm-backports") == []
    text = firmware.advice("6.1", asic)
    assert text is not None and "bookworm-backports" in text and "apt install -t bookworm-backports" in text


# Declared files no single ASIC owns: the IP discovery fallback, SI's shared MC and one board's SMC.
SHARED_FIRMWARE = {"amdgpu/ip_discovery.bin", "amdgpu/si58_mc.bin", "amdgpu/banks_k_2_smc.bin"}
# Files named by an IP block's version (psp_13_0_10_sos.bin...) belong to a card by its discovery table.
IP_NAMED = re.compile(r"^amdgpu/(?:psp|smu|sdma|dcn|vcn|vpe|umsch_mm|vce|gc|isp|mes|imu|jpeg)_\d")


@pytest.mark.parametrize("series", SERIES)
def test_every_code_named_firmware_file_belongs_to_an_asic(series: str) -> None:
    # Issue 36: Cyan Skillfish loads cyan_skillfish2_*.bin, which the "cyan_skillfish_" prefix missed
    # (likewise Cezanne's green_sardine_*, Picasso's and Raven2's picasso_*/raven2_*).
    owned = {f for asic in knowledge.asics() for f in firmware.declared(series, asic)}
    orphans = [
        f
        for f in formats.kernel(series)["firmware"]
        if f not in owned and f not in SHARED_FIRMWARE and not IP_NAMED.match(f)
    ]
    assert orphans == []


def test_cyan_skillfish_firmware_is_the_cyan_skillfish2_set() -> None:
    asic = knowledge.asic("cyan_skillfish")
    assert asic is not None
    declared = firmware.declared("6.1", asic)
    assert "amdgpu/cyan_skillfish2_mec.bin" in declared and "amdgpu/cyan_skillfish2_sdma.bin" in declared


def test_firmware_advice_is_silent_when_bookworm_has_everything() -> None:
    asic = knowledge.asic("navi21")
    assert asic is not None and firmware.declared("6.1", asic)
    assert firmware.advice("6.1", asic) is None


# --- issue 22: log rules against the real format strings ----------------------------------------

REAL = [
    ("6.1", "MES failed to response msg=", "mes-hang"),
    ("6.12", "MES(%d) failed to respond to msg=%s", "mes-hang"),
    ("6.1", "error required iommu flags ats %i, pri %i, pasid %i", "kfd-iommu-disabled"),
    ("6.12", "probe with driver %s failed with error %d", "amdgpu-probe-failed"),
    ("6.1", "probe of %s failed with error %d", "amdgpu-probe-failed"),
    ("6.1", "resume of IP block <%s> failed %d", "amdgpu-ip-init-failed"),
    ("6.12", "late_init of IP block <%s> failed %d", "amdgpu-ip-init-failed"),
    ("6.12", "Failed to add gfx ip block(GC_HWIP:0x%x)", "amdgpu-ip-unknown"),
    ("6.12", "discovery failed: %d", "amdgpu-discovery-failed"),
    ("6.1", "amdgpu_discovery_init failed", "amdgpu-discovery-failed"),
    ("6.1", "KFD support on Hawaii is experimental", "kfd-hawaii-experimental"),
    ("6.1", "Failed to add gfx ip block(GC_HWIP:0x%x)", "amdgpu-ip-unknown"),
    ("6.12", "PCIE atomic ops is not supported", "amdgpu-no-pcie-atomics"),
    ("6.12", "Error starting queue manager for device %x:%x", "kfd-device-error"),
    ("6.1", "Error creating VCRAT for GPU (ID: 0x%x)", "kfd-vcrat-error"),
    ("6.12", "VRAM is lost due to GPU reset!", "gpu-vram-lost"),
    ("6.12", "ring %s timeout, but soft recovered", "gpu-ring-soft-recovered"),
    ("6.12", 'can\'t load firmware "%s"', "firmware-load-failed"),
    ("6.1", "Failed to load psp firmware!", "firmware-load-failed"),
    ("6.12", "no vBIOS found", "amdgpu-no-vbios"),
]


@pytest.mark.parametrize(("series", "text", "rule"), REAL)
def test_rule_matches_the_real_format(series: str, text: str, rule: str) -> None:
    found = _formats(series, text)
    assert found, f"{text!r} is not a format of {series}"
    for message in found:
        assert rule in _rules(formats.sample_line(message)), (message, formats.sample_line(message))


@pytest.mark.parametrize("series", SERIES)
def test_every_covered_failure_format_matches_a_rule(series: str) -> None:
    missing = []
    for message in formats.kernel(series)["messages"]:
        covered = formats.covered_class(message)
        if covered is None:
            continue
        line = formats.sample_line(message)
        klasses = {BY_ID[r].klass for r in _rules(line)}
        if not klasses & set(covered[1]):
            missing.append(f"{covered[0]}: {message[3]!r} ({message[4]}:{message[5]}) -> {line!r}")
    assert missing == []


@pytest.mark.parametrize("series", SERIES)
def test_no_failure_rule_matches_an_informational_format(series: str) -> None:
    wrong = []
    for message in formats.kernel(series)["messages"]:
        if message[0] not in ("info", "notice") or formats.covered_class(message) is not None:
            continue
        line = formats.sample_line(message)
        hits = [r for r in _rules(line) if BY_ID[r].klass in (FAILURE, RUNTIME)]
        if hits:
            wrong.append(f"{message[3]!r} ({message[4]}:{message[5]}) -> {hits}")
    assert wrong == []


def test_sample_rendering_covers_the_conversions_used() -> None:
    assert formats.render("%d|%5d|%06x|%llx|%s|%pV|%ps|%%|%-4s|") == "0|    0|00001a|1a|x|x|amdgpu_func|%|x   |"
    left = [
        m[3] for s in SERIES for m in formats.kernel(s)["messages"] if "%" in formats.render(m[3].replace("%%", ""))
    ]
    assert left == []


def test_compute_parameters_are_described_from_the_modules() -> None:
    for name in params.COMPUTE_PARAMS:
        described = params.describe(name, (6, 12))
        assert described is not None, name
        kind, text, series = described
        assert kind in ("int", "uint", "bool", "string") and text and series in SERIES
    assert params.describe("gpu_recovery", (6, 1)) == (
        "int",
        formats.kernel("6.1")["params"]["gpu_recovery"][1],
        "6.1",
    )
    assert params.describe("enforce_isolation", (6, 12))[0] == "bool"  # type: ignore[index]
    assert params.describe("enable_iommu", (6, 1)) is None


def test_debian_12_firmware_remedy_names_backports_for_phoenix2() -> None:
    from kfdguard.assess.explain import gpu_cause

    asic = knowledge.asic("phoenix2")
    # gc_11_0_4_pfp.bin: one of the files bookworm lacks that amdgpu cannot do without (its _mes_2.bin, which
    # this test named before issue 34, is a first choice amdgpu falls back from: knowledge/firmware.py).
    (fmt,) = _formats("6.1", "Direct firmware load for %s failed with error %d")
    line = "amdgpu 0000:c4:00.0: " + fmt[3].replace("%s", "amdgpu/gc_11_0_4_pfp.bin").replace("%d", "-2")
    events = kernellog.match(line)
    cause = gpu_cause("Radeon 740M", asic, events, "6.1.0-27-amd64", "debian")
    assert cause is not None and cause.code == "firmware-missing"
    assert "apt install -t bookworm-backports firmware-amd-graphics" in cause.remedy
    other = gpu_cause("RX 6800", knowledge.asic("navi21"), events, "6.1.0-27-amd64", "debian")
    assert other is not None and "bookworm-backports" not in other.remedy


def test_damaged_data_gives_a_specific_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kernel-6.1.json.gz").write_bytes(b"not gzip")
    monkeypatch.setattr(formats, "DATA", tmp_path)
    monkeypatch.setattr(formats, "_cache", {})
    with pytest.raises(formats.KnowledgeDataError, match=r"kernel-6\.1\.json\.gz"):
        formats.kernel("6.1")
    with pytest.raises(formats.KnowledgeDataError, match=r"ids-firmware\.json\.gz"):
        formats.ids_firmware()
    # The assessment keeps its generic firmware advice instead of failing.
    from kfdguard.assess.explain import gpu_cause

    line = "amdgpu 0000:c4:00.0: Direct firmware load for amdgpu/gc_11_0_4_pfp.bin failed with error -2"
    cause = gpu_cause("Radeon 740M", knowledge.asic("phoenix2"), kernellog.match(line), "6.1.0-27-amd64", "debian")
    assert cause is not None and "apt install firmware-amd-graphics" in cause.remedy
