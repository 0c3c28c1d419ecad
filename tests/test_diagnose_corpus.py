"""Real kernel logs from public bug reports (shared/knowledge/dmesg-corpus) diagnosed to their root cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Severity

CORPUS = Path(__file__).resolve().parent / "data" / "dmesg-corpus"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "knowledge" / "dmesg-corpus"
# The root cause each log's header names, as kfdguard codes. The header line itself
# (a comment with the cause in prose) is removed before diagnosis.
EXPECTED = {
    "01_pcie_atomics_rx580_x58.log": {"pcie-atomics"},
    "04_iommu_disabled_picasso_apu.log": {"iommu-required"},
    "05_unsupported_asic_pitcairn_enomem.log": {"asic-not-supported", "kfd-no-gpu-node"},
    "06_old_kernel_did_missing_picasso.log": {"kernel-too-old", "kfd-ready"},
    "08_invalid_sched_policy_no_dev_kfd.log": {"kfd-init-failed"},
    "10_dev_kfd_missing_in_container.log": {"device-node-missing"},
    "13_missing_firmware_navi3x_rhel92.log": {"firmware-missing"},
    "15_mes_hang_strix_halo.log": {"gpu-hang"},
    "17_success_navi21_kernel_5_11.log": {"kfd-ready"},
    "19_cpu_node_only_boot_lines.log": set(),
}


def _log(name: str) -> str:
    path = CORPUS / name
    if not path.is_file():
        pytest.fail(f"{path} is missing (tests/data/dmesg-corpus holds the corpus)")
    text = path.read_text()
    assert text.startswith("# source:")
    return text.split("\n", 1)[1]


def test_every_corpus_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_root_cause(name: str) -> None:
    result = diagnose_text(_log(name))
    codes = {f.code for f in result.findings} - {"userspace-target-unsupported"}
    assert codes == EXPECTED[name]
    for finding in result.findings:
        assert finding.evidence, finding.code
        assert finding.severity is Severity.INFO or finding.remedy


def test_details_of_the_diagnoses() -> None:
    atomics = diagnose_text(_log("01_pcie_atomics_rx580_x58.log"))
    assert "1002:67df" in atomics.findings[0].message and "gfx803" in atomics.established[0]
    picasso = diagnose_text(_log("06_old_kernel_did_missing_picasso.log"))
    too_old = next(f for f in picasso.findings if f.code == "kernel-too-old")
    assert "1002:15d8" in too_old.message and "DID 15d8 is missing in supported_devices" in " ".join(too_old.evidence)
    ready = next(f for f in picasso.findings if f.code == "kfd-ready")
    assert "1002:67ef" in ready.message  # the RX 560 next to it was added
    container = diagnose_text(_log("10_dev_kfd_missing_in_container.log"))
    assert "--device=/dev/kfd" in container.findings[0].remedy
    firmware = diagnose_text(_log("13_missing_firmware_navi3x_rhel92.log"))
    assert "amdgpu/psp_13_0_10_sos.bin" in firmware.findings[0].message
    mes = diagnose_text(_log("15_mes_hang_strix_halo.log"))
    (hang,) = mes.findings
    assert "MES" in hang.message and "0000:c5:00.0" in hang.message
    cpu_only = diagnose_text(_log("19_cpu_node_only_boot_lines.log"))
    assert any("do not show whether a GPU was added" in e for e in cpu_only.established)
    assert any("whether KFD added the GPU" in u for u in cpu_only.unknown)
    sched = diagnose_text(_log("08_invalid_sched_policy_no_dev_kfd.log"))
    assert "/dev/kfd: does not exist" in sched.established and "CONFIG_HSA_AMD=y" in sched.established


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/knowledge beside this checkout")
def test_the_copies_match_the_shared_corpus() -> None:
    shared = {p.name: p.read_bytes() for p in SHARED.glob("*.log")}
    ours = {p.name: p.read_bytes() for p in CORPUS.glob("*.log")}
    assert ours == shared, "tests/data/dmesg-corpus is out of date: copy ../shared/knowledge/dmesg-corpus/*.log"
