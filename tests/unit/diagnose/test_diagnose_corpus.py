"""The first ten real kernel logs of the corpus (shared/knowledge/dmesg-corpus, now in tests/data/real-reports) diagnosed to their root cause."""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Severity
from tests.paths import TESTS, TOP

CORPUS = TESTS / "data" / "real-reports"
SHARED = TOP.parent / "shared" / "knowledge" / "dmesg-corpus"
# The root cause each log's header names, as kfdguard codes. The header block (up to
# its "# ---" line) is removed before diagnosis. These ten were the project's first
# corpus; tests/unit/diagnose/test_real_reports_corpus.py checks the headers of the whole corpus.
EXPECTED = {
    "001-pcie-atomics-rx580-x58.txt": {"pcie-atomics"},
    "002-iommu-disabled-picasso-apu-journal.txt": {"iommu-required"},
    "003-pitcairn-not-supported-enomem.txt": {"asic-not-supported", "kfd-no-gpu-node"},
    "004-old-kernel-did-missing-picasso-quoted.txt": {"kernel-too-old", "kfd-ready"},
    "005-invalid-sched-policy-no-dev-kfd.txt": {"kfd-init-failed"},
    "006-dev-kfd-missing-in-container.txt": {"device-node-missing"},
    "007-missing-psp-firmware-navi3x-rhel92.txt": {"firmware-missing"},
    "008-mes-hang-strix-halo.txt": {"gpu-hang"},
    "009-success-navi21-kernel-5.11.txt": {"kfd-ready"},
    "010-cpu-node-only-boot-lines.txt": set(),
}


# Where each file came from in the shared knowledge corpus (its name there).
SHARED_NAME = {
    "001-pcie-atomics-rx580-x58.txt": "01_pcie_atomics_rx580_x58.log",
    "002-iommu-disabled-picasso-apu-journal.txt": "04_iommu_disabled_picasso_apu.log",
    "003-pitcairn-not-supported-enomem.txt": "05_unsupported_asic_pitcairn_enomem.log",
    "004-old-kernel-did-missing-picasso-quoted.txt": "06_old_kernel_did_missing_picasso.log",
    "005-invalid-sched-policy-no-dev-kfd.txt": "08_invalid_sched_policy_no_dev_kfd.log",
    "006-dev-kfd-missing-in-container.txt": "10_dev_kfd_missing_in_container.log",
    "007-missing-psp-firmware-navi3x-rhel92.txt": "13_missing_firmware_navi3x_rhel92.log",
    "008-mes-hang-strix-halo.txt": "15_mes_hang_strix_halo.log",
    "009-success-navi21-kernel-5.11.txt": "17_success_navi21_kernel_5_11.log",
    "010-cpu-node-only-boot-lines.txt": "19_cpu_node_only_boot_lines.log",
}
HEADER_END = "\n# ---\n"


def _log(name: str) -> str:
    path = CORPUS / name
    if not path.is_file():
        pytest.fail(f"{path} is missing (tests/data/real-reports holds the corpus)")
    text = path.read_text()
    assert text.startswith("# source:") and HEADER_END in text
    return text.split(HEADER_END, 1)[1]


def test_every_first_corpus_file_is_there() -> None:
    assert sorted(EXPECTED) == sorted(SHARED_NAME)
    assert all((CORPUS / name).is_file() for name in EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_root_cause(name: str) -> None:
    result = diagnose_text(_log(name))
    codes = {f.code for f in result.findings} - {"userspace-target-unsupported"}
    assert codes == EXPECTED[name]
    for finding in result.findings:
        assert finding.evidence, finding.code
        assert finding.severity is Severity.INFO or finding.remedy


def test_details_of_the_diagnoses() -> None:
    atomics = diagnose_text(_log("001-pcie-atomics-rx580-x58.txt"))
    assert "1002:67df" in atomics.findings[0].message and "gfx803" in atomics.established[0]
    picasso = diagnose_text(_log("004-old-kernel-did-missing-picasso-quoted.txt"))
    too_old = next(f for f in picasso.findings if f.code == "kernel-too-old")
    assert "1002:15d8" in too_old.message and "DID 15d8 is missing in supported_devices" in " ".join(too_old.evidence)
    ready = next(f for f in picasso.findings if f.code == "kfd-ready")
    assert "1002:67ef" in ready.message  # the RX 560 next to it was added
    container = diagnose_text(_log("006-dev-kfd-missing-in-container.txt"))
    assert "--device=/dev/kfd" in container.findings[0].remedy
    firmware = diagnose_text(_log("007-missing-psp-firmware-navi3x-rhel92.txt"))
    assert "amdgpu/psp_13_0_10_sos.bin" in firmware.findings[0].message
    mes = diagnose_text(_log("008-mes-hang-strix-halo.txt"))
    (hang,) = mes.findings
    assert "MES" in hang.message and "0000:c5:00.0" in hang.message
    cpu_only = diagnose_text(_log("010-cpu-node-only-boot-lines.txt"))
    assert any("do not show whether a GPU was added" in e for e in cpu_only.established)
    assert any("whether KFD added the GPU" in u for u in cpu_only.unknown)
    sched = diagnose_text(_log("005-invalid-sched-policy-no-dev-kfd.txt"))
    assert "/dev/kfd: does not exist" in sched.established and "CONFIG_HSA_AMD=y" in sched.established


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/knowledge beside this checkout")
def test_the_copies_match_the_shared_corpus() -> None:
    # The shared copies carry a one-line header; the text below it must be ours, byte for byte.
    for ours, theirs in SHARED_NAME.items():
        shared = SHARED / theirs
        assert shared.is_file(), f"{shared} is gone: the shared corpus changed, see {ours}"
        assert _log(ours) == shared.read_text().split("\n", 1)[1], f"{ours} differs from {shared}"
