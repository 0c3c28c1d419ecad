"""A program's message that a terminal or a form wrapped still says what it says (issue 36's first example)."""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
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
