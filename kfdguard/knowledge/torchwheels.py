"""Which gfx targets the rocBLAS bundled in PyTorch's ``+rocm`` wheels has library files for, by the wheels' date.

PyTorch's Linux wheels carry their own copy of rocBLAS under ``site-packages/torch/lib/rocblas/library``. From
pytorch/builder commit 0b51144f (2023-01-12, "Refactor PyTorch wheel and libtorch build scripts for ROCm") the
wheel build script ``manywheel/build_rocm.sh`` copies only the library files whose names match the wheel's
``PYTORCH_ROCM_ARCH`` (``ARCH_SPECIFIC_FILES=$(ls $ROCBLAS_LIB_SRC | grep -E $ARCH)``) and those that name no
target; before it, the whole library directory of the ROCm release built against was copied
(``/opt/rocm/lib/rocblas/library/*``). ``manywheel/build_docker.sh`` set ``PYTORCH_ROCM_ARCH``: every value it
ever had (pytorch/builder's history, read in full) names only gfx803, gfx900, gfx906, gfx908, gfx90a, gfx942,
gfx1030 and gfx1100; gfx1100 from 3237101a (2023-05-23, ROCm 5.5 wheels), gfx942 for ROCm 6.0 and later from
b9d2b93c (2023-12-22). The scripts left pytorch/builder for pytorch/pytorch's ``.ci/docker/manywheel`` in July
2024 (68d5a486, 2024-07-25; a later copy of the script for ``.ci/docker`` was seen with the same list, its commit
not read), and what changed after is not read.

So a wheel a text can show, where the text is dated up to that day, has rocBLAS files for a target only if the
target is in one of those lists or in the whole library of a release wheels were built against before the filter
(ROCm 5.3 and earlier: knowledge/rocm.py's rows up to 5.3). For any other target rocBLAS finds no file of its own
and fails ("Cannot read .../torch/lib/rocblas/library/TensileLibrary.dat"), whatever ROCm's own rocBLAS of the
same release carries: the RX 7600 XT's gfx1102, built by rocBLAS since ROCm 5.4, is not in a wheel of that time.
"""

from __future__ import annotations

from kfdguard.knowledge import rocm
from kfdguard.record import dataclass

__all__ = ["WHEEL_ERAS", "WheelEra", "bundled_rocblas_lacks", "wheel_path"]


@dataclass(frozen=True, slots=True)
class WheelEra:
    """The PyTorch wheels built up to ``until`` and every target whose rocBLAS files any of them can carry."""

    until: str  # ISO date: the last day the scripts read were what built the wheels
    targets: frozenset[str]
    repository: str
    paths: tuple[str, ...]
    commits: tuple[str, ...]  # the commits the lists and the copy rule were read at
    note: str


_BUILDER_LISTS = frozenset({"gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"})
_WHOLE_LIBRARY = frozenset(t for row in rocm.ROCM_RELEASES if row.version <= (5, 3) for t in row.targets)
_COPY_RULE = "0b51144fe5971f0a16b2a22f16ffd34657a37e49"  # 2023-01-12: only PYTORCH_ROCM_ARCH's rocBLAS files copied
_GFX1100_ADDED = "3237101a0a709aec3111e7d00718e63114fd9f6c"  # 2023-05-23: gfx1100 added (ROCm 5.5 wheels)
_GFX942_ADDED = "b9d2b93c08bd256c42f7b1900a07bd958b3ab8ee"  # 2023-12-22: gfx942 for ROCm 6.0 and later
_LAST_CHANGE = "68d5a486258b1a5a4ce1bc14227d2b9a32d0a3b7"  # 2024-07-25: the scripts' last change there
_SCRIPTS = ("manywheel/build_docker.sh", "manywheel/build_rocm.sh")
_NOTE = "the PYTORCH_ROCM_ARCH lists of pytorch/builder's history up to {day}, and the whole rocBLAS library of ROCm "
_NOTE += "5.3 and earlier (copied before 0b51144f)"

# One era a day before each list grew: a text dated within an era can show only wheels built by then.
WHEEL_ERAS: tuple[WheelEra, ...] = (
    WheelEra(
        "2023-05-22",
        (_BUILDER_LISTS - {"gfx1100", "gfx942"}) | _WHOLE_LIBRARY,
        "pytorch/builder",
        _SCRIPTS,
        (_COPY_RULE, _GFX1100_ADDED),
        _NOTE.format(day="3237101a, which added gfx1100"),
    ),
    WheelEra(
        "2023-12-21",
        (_BUILDER_LISTS - {"gfx942"}) | _WHOLE_LIBRARY,
        "pytorch/builder",
        _SCRIPTS,
        (_COPY_RULE, _GFX1100_ADDED, _GFX942_ADDED),
        _NOTE.format(day="b9d2b93c, which added gfx942"),
    ),
    WheelEra(
        "2024-07-25",
        _BUILDER_LISTS | _WHOLE_LIBRARY,
        "pytorch/builder",
        _SCRIPTS,
        (_COPY_RULE, _GFX1100_ADDED, _GFX942_ADDED, _LAST_CHANGE),
        _NOTE.format(day="their move to pytorch/pytorch (68d5a486)"),
    ),
)


def wheel_path(path: str) -> bool:
    """Whether a library path is inside an installed PyTorch wheel (``.../site-packages/torch/lib/...``)."""
    low = path.replace("\\", "/").lower()
    return "/torch/lib/" in low and ("site-packages/" in low or "dist-packages/" in low)


def bundled_rocblas_lacks(gfx: str, dated: str) -> WheelEra | None:
    """The era whose wheels, all of them, have no rocBLAS files for ``gfx``, for a text dated ``dated`` (ISO); None
    where a wheel of that time may carry them or the date is past what was read."""
    for era in WHEEL_ERAS:
        if dated <= era.until:
            return None if gfx in era.targets else era
    return None
