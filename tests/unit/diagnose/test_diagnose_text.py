"""Diagnosis of mixed text as people paste it into bug reports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.diagnose import EXIT_NOTHING, diagnose_text
from kfdguard.evidence.text import read_text
from tests.fuzzing import examples

BUG_REPORT = """\
Hi, rocminfo does not see my GPU. Following a guide I added `softdep amdgpu pre: amdkfd` and

    options amdkfd enable_iommu=1 max_num_of_devices=2

to /etc/modprobe.d/amdgpu.conf (the guide says RDNA3 compute needs kernel 6.2, so I'm on 6.5).

$ uname -r
6.5.0-35-generic
$ lspci -nn | grep VGA
0b:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)
$ ls -l /dev/kfd
crw-rw---- 1 root render 235, 0 Jan 30 10:12 /dev/kfd
$ id
uid=1000(igor) gid=1000(igor) groups=1000(igor),4(adm),24(cdrom),27(sudo),44(video)
$ rocminfo
ROCk module version 6.3.6 is loaded
Unable to open /dev/kfd read-write: Permission denied
igor is not member of "render" group, the default DRM access group. Users must be a member of the "render" group or another DRM access group in order for ROCm applications to run successfully.

> Jan 30 10:11:02 box kernel: amdgpu: unknown parameter 'enable_iommu' ignored
> Jan 30 10:11:03 box kernel: kfd kfd: amdgpu: added device 1002:744c
"""


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def test_a_mixed_bug_report() -> None:
    result = diagnose_text(BUG_REPORT)
    assert set(result.kinds) >= {"uname", "lspci", "ls", "id", "rocminfo", "kernel-log", "modprobe"}
    assert "kernel 6.5.0-35-generic (from uname)" in result.established
    assert any("AMD Radeon RX 7900 XTX (1002:744c, 0000:0b:00.0): Navi31, gfx1100" in e for e in result.established)
    found = {f.code: f for f in result.findings}
    assert set(found) >= {
        "user-not-in-group",
        "softdep-missing-module",
        "module-param-unknown",
        "wrong-advice",
        "kfd-ready",
    }
    assert "sudo usermod -aG render igor" in found["user-not-in-group"].remedy
    assert "kernel-too-old" not in found  # 6.5 is new enough for Navi31
    wrong = [f.message for f in result.findings if f.code == "wrong-advice"]
    assert any("Linux 6.0" in m for m in wrong)
    assert result.exit_code == 2


def test_kernel_too_old_from_uname_and_lspci() -> None:
    text = "uname -r\n5.15.0-125-generic\nc4:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Phoenix1 [1002:15bf] (rev c1)\n"
    result = diagnose_text(text)
    (finding,) = [f for f in result.findings if f.code == "kernel-too-old"]
    assert "gfx1103" in finding.message and "6.0" in finding.message


def test_kernel_config_diff() -> None:
    # A diff in a bug report is the proposed fix: its "-" side is how the reporter's kernel was built
    # (issue 16; tests/data/real-reports/040 enables HSA_AMD in a Talos kernel that lacked it).
    assert "kfd-not-built" in codes("-# CONFIG_HSA_AMD is not set\n+CONFIG_HSA_AMD=y\n")
    assert "kfd-not-built" not in codes("-CONFIG_HSA_AMD=y\n+# CONFIG_HSA_AMD is not set\n")


def test_wrong_device_id_claims() -> None:
    messages = [f.message for f in diagnose_text("The RX 7900 XTX is 0x7440 (Navi31). The 780M is 0x14e4.").findings]
    assert any("744C" in m for m in messages) and any("15BF" in m for m in messages)
    assert "wrong-advice" in codes("Ubuntu 22.04 HWE can't go past 5.15, so no luck")
    assert "wrong-advice" in codes("ROCm 7.2 was released in June 2024")
    assert "wrong-advice" in codes("make sure CONFIG_KFD=y is set")


def test_nothing_recognisable() -> None:
    result = diagnose_text("my computer is slow, please help")
    assert result.findings == () and result.established == ()
    assert result.exit_code == EXIT_NOTHING
    assert any("uname -r" in u for u in result.unknown)


@pytest.mark.fuzz
@settings(max_examples=examples(500))
@given(st.text(max_size=1000))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    result = diagnose_text(text)
    assert result.exit_code in (0, 1, 2, 4)


fragments = st.sampled_from([*BUG_REPORT.splitlines(), "[    3.5] kfd kfd: amdgpu: PITCAIRN  not supported in kfd", "CONFIG_HSA_AMD=", "> > >", "uid=", "crw", "1002:", "\x00", "\r"])  # fmt: skip


@pytest.mark.fuzz
@settings(max_examples=examples(300))
@given(st.lists(fragments, max_size=30).map("\n".join))
def test_never_raises_on_shuffled_reports(text: str) -> None:
    diagnose_text(text)


def test_cli_reads_stdin_and_prints_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kfdguard", "diagnose", "--json", "-"],
        input=BUG_REPORT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    data = json.loads(result.stdout)
    assert result.returncode == 2
    assert "user-not-in-group" in [f["code"] for f in data["findings"]]
    assert set(data) == {"schema_version", "kinds", "established", "findings", "unknown", "overruled", "exit_code"}


def test_cli_missing_file_is_usage_error() -> None:
    result = subprocess.run([sys.executable, "-m", "kfdguard", "diagnose", "/nonexistent/paste.txt"],
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 64 and "No such file" in result.stderr


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("fails", [False, True])
def test_the_cycle_collector_is_back_as_it_was_after_a_diagnosis(
    monkeypatch: pytest.MonkeyPatch, enabled: bool, fails: bool
) -> None:
    """diagnose_text pauses the cycle collector while it reads (a long paste's lists are walked by every
    collection, for nothing); after it, the collector is on exactly when it was before, even on an error."""
    import gc

    import kfdguard.diagnose as diagnose

    seen: list[bool] = []

    def reading(text: str) -> object:
        seen.append(gc.isenabled())
        if fails:
            raise RuntimeError("a reader failed")
        return read_text(text)

    monkeypatch.setattr(diagnose, "read_text", reading)
    (gc.enable if enabled else gc.disable)()
    try:
        if fails:
            with pytest.raises(RuntimeError):
                diagnose.diagnose_text("uid=1000(ann) gid=1000(ann) groups=1000(ann)")
        else:
            diagnose.diagnose_text("uid=1000(ann) gid=1000(ann) groups=1000(ann)")
        assert seen == [False]
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
