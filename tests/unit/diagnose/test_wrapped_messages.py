"""A program's message that a terminal or a form wrapped still says what it says (issue 36's first example)."""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text
from kfdguard.verdict import Severity

TEMPLATE = """\
### ROCm Version
ROCm version: 6.3.2

### GPU
iGPU: AMD Radeon 780M

### Steps to reproduce
python run.py
{message}
 List of available TensileLibrary Files :
"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat"
Aborted (core dumped)
"""


@pytest.mark.parametrize(
    "message",
    [
        # wrapped after the path, and "arch:" without rocBLAS's blank before the colon
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: \nIllegal seek for GPU arch: gfx1103",
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch: gfx1103",
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for GPU arch : gfx1103",
    ],
    ids=["wrapped", "no-blank", "as-printed"],
)
def test_rocblas_without_code_for_the_gpu_is_found_however_the_line_was_broken(message: str) -> None:
    result = diagnose_text(TEMPLATE.format(message=message))
    (found,) = [f for f in result.findings if f.code == "userspace-target-unsupported"]
    assert found.severity is Severity.ERROR and "gfx1103" in found.message


def test_kfd_s_topology_line_wrapped_before_its_ids_is_joined() -> None:
    """A mail client broke "Topology: Add dGPU node" before "[0x73ff:0x1002]" (the shapes of
    tests/data/healthy-logs/646): a line that starts with "[" starts anew, but not one with ids in brackets."""
    text = (
        "Dec  6 10:00:05 workstation kernel: [    5.008090] [    T315] kfd kfd: amdgpu: Topology: Add dGPU node\n"
        "[0x73ff:0x1002]\n"
        "Dec  6 10:00:05 workstation kernel: [    5.008098] [    T315] kfd kfd: amdgpu: added device\n"
        "1002:73ff\n"
    )
    assert "kfd-ready" in {f.code for f in diagnose_text(text).findings}
    topology_only = text.replace("added device\n1002:73ff\n", "")
    assert [e.rule for e in read_text(topology_only).events] == ["kfd-topology-gpu"]


@pytest.mark.parametrize("padding", [0, 1, 400])  # the small paste's path and the long one's (kernellog.SMALL)
@pytest.mark.parametrize("chatter", ["Hi, rocminfo does not see my GPU.", "Any help appreciated!"])
def test_a_sentence_after_a_complete_kernel_line_keeps_the_line_read(padding: int, chatter: str) -> None:
    """The wrap joiner glues a short line to the kernel line above it; when the glued line reads as nothing
    (a complete message and the person's next sentence), the kernel line keeps its own reading. Found by
    tests/robustness/test_fuzz_diagnose.py's chatter property under the long campaign's budget."""
    pad = [f"[    1.{n:06d}] usb 1-1: new high-speed USB device number {n}" for n in range(padding)]
    line = "[Thu Jan 30 23:27:53 2025] Allocated 3969056 bytes on gart"
    alone = read_text("\n".join([*pad, line]))
    followed = read_text("\n".join([*pad, line, chatter]))
    assert [e.rule for e in alone.events] == [e.rule for e in followed.events] == ["kfd-progress"]
    assert "kernel-log" in followed.kinds
