"""Which gfx targets each ROCm release's rocBLAS carries code for, release by release.

Pure data, no I/O. ``ROCM_RELEASES`` holds one row per ROCm minor release: the
gfx targets rocBLAS builds by default (its CMake target list with the xnack
feature suffixes dropped: ``gfx90a:xnack+`` is gfx90a), and where that list was
read (repository, path, tag or branch, commit). rocBLAS is the library whose
Tensile files fail first ("Cannot read TensileLibrary.dat ... for GPU arch"),
so its list is the one that decides whether a prebuilt ROCm runs on a GPU.

Conventions:

* The table starts at ROCm 3.0. ROCm/rocBLAS has no tag for 3.2, 3.4, 3.6 or
  4.4, so those are unknown like any release missing from the table.
* A row covers every patch release of its minor: the lists of the patch tags
  that were read (4.3.0 and 4.3.1, 4.5.0 to 4.5.2, 5.4.0 to 5.4.4, 6.1.0 to
  6.1.2, 6.2.0 to 6.2.2) agree.
* Up to 6.2 each row is read at that release's ``rocm-X.Y.0`` tag of
  ROCm/rocBLAS (``rocm-3.0`` and ``rocm-3.1`` for the first two). Before 4.3
  the list is ``Tensile_ARCHITECTURE``'s "all" (3.0: ``AMDGPU_TARGETS``
  itself): gfx803, gfx900, gfx906 and gfx908 whichever compiler (hcc,
  hip-clang) builds it. From 4.3 on ``rocm_check_target_ids`` keeps the
  targets of the list that the compiler accepts; the rows name the whole list,
  as the compiler of that release is assumed (not read) to take every one.
* After 6.2 rocBLAS moved into ROCm/rocm-libraries, whose file keeps
  one ``TARGET_LIST_ROCM_X.Y`` per release and picks one by
  ``ROCM_PLATFORM_VERSION``; the 6.4, 7.0 and 7.1 rows come from that
  selection in the file of the rocBLAS 5.1 (ROCm 7.1) line, not from a
  release tag, so the earlier rows are marked ``uncertain`` (later edits of
  the old lists exist: the same file no longer lists gfx940/gfx941 for 5.7).
  The 7.2 row comes from a later develop commit (rocBLAS 5.5.0), whose
  selection keeps the 7.1 list for every release before 7.13; TheRock's
  releases (7.9 on) pass their own per-family GPU_TARGETS, so no row
  here speaks for them.
* PyTorch's ``+rocmX.Y`` wheels bundle the ROCm X.Y libraries, so rocBLAS's
  list of that release applies to them: UNCERTAIN, inferred, not read from
  PyTorch's build scripts, whose own kernels (``PYTORCH_ROCM_ARCH``) may
  cover fewer targets than rocBLAS.
* A release missing from the table is unknown (``carries`` answers None), and
  so is anything before the oldest row: ``first_rocm_with`` names the first
  release *of the table*.
"""

from __future__ import annotations

import re

from kfdguard.record import dataclass

__all__ = [
    "PUBLISHED_SOURCES",
    "ROCM_RELEASES",
    "RocmRelease",
    "carries",
    "first_rocm_with",
    "newest",
    "parse_rocm_version",
    "release",
    "releases_with",
    "rocm_prebuilt",
    "version_text",
]

RocmVersion = tuple[int, int]


@dataclass(frozen=True, slots=True)
class RocmRelease:
    """One ROCm minor release and the gfx targets its rocBLAS carries code for by default."""

    version: RocmVersion
    targets: frozenset[str]
    repository: str
    path: str
    ref: str  # the tag (or branch) read
    commit: str
    uncertain: bool  # the list was not read at the release's own tag
    note: str = ""
    # The day its X.Y.0 was published (ISO), where a primary source was read; "" where none was. A text dated before
    # it cannot show this release in use (assess/versions.py).
    published: str = ""


def _targets(cmake_list: str) -> frozenset[str]:
    """A CMake target list ("gfx906:xnack-;gfx90a:xnack+;...") as bare target names."""
    return frozenset(t.split(":", 1)[0] for t in cmake_list.split(";") if t)


_ROCBLAS = "ROCm/rocBLAS"
_LIBS = "ROCm/rocm-libraries"
_LIBS_COMMIT = "05ecf2875ac3720a9f32fa7f741809efdd644019"
# A later develop commit of the same file, the rocBLAS 5.5.0 line, which keeps one more list (7.13).
_LIBS_DEVELOP_COMMIT = "fc9c779cc2293978d7fa814b92e29050d057c0d7"
_LIBS_NOTE = (
    "projects/rocblas/CMakeLists.txt of the rocBLAS 5.1.0 (ROCm 7.1) line picks TARGET_LIST_ROCM_{list} "
    "for ROCM_PLATFORM_VERSION {range}"
)
_V30 = "gfx803;gfx900;gfx906;gfx908"
_V30_NOTE = "Tensile_ARCHITECTURE 'all' expands to this list; install.sh builds with {compiler} by default"
_V41 = "gfx803;gfx900;gfx906:xnack-;gfx908:xnack-"
_V41_NOTE = (
    "ALL_TARGETS: gfx906:xnack-/gfx908:xnack- where hipcc takes target IDs, bare names otherwise (the same targets)"
)
_V43_NOTE = (
    "rocm_check_target_ids keeps the targets the compiler accepts (rocm-cmake's rocm-4.3.0 tag has "
    "ROCMCheckTargetIds.cmake; the ROCm compiler's answer was not read); without it the fallback list has no gfx90a"
)
_V50 = "gfx803;gfx900;gfx906:xnack-;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-;gfx1010;gfx1011;gfx1012;gfx1030"
_V52 = "gfx803;gfx900;gfx906:xnack-;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-;gfx1010;gfx1012;gfx1030"
_V55 = _V52 + ";gfx1100;gfx1101;gfx1102"
_V60 = (
    "gfx900;gfx906:xnack-;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-;gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;"
    "gfx1100;gfx1101;gfx1102"
)
_L63 = (
    "gfx900;gfx906:xnack-;gfx908:xnack-;gfx90a;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx1151;"
    "gfx1200;gfx1201"
)

# Oldest first; tests/unit/knowledge/test_rocm_releases.py checks the order and that every row cites its source.
ROCM_RELEASES: tuple[RocmRelease, ...] = (
    RocmRelease((3, 0), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.0",
                "ca5535b4db200051f77e12d291e926707b87c9c5", False,
                "AMDGPU_TARGETS set in CMakeLists.txt; install.sh builds with hcc by default"),
    RocmRelease((3, 1), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.1",
                "cc494252609ff9278c1bebd62fab636d2fec08d8", False, _V30_NOTE.format(compiler="hcc")),
    RocmRelease((3, 3), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.3.0",
                "50d99ed0ec2aae07ef66b7fdea94f7fde6f1631e", False, _V30_NOTE.format(compiler="hcc")),
    RocmRelease((3, 5), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.5.0",
                "3ce299f834539f5db4ea7a50c59af59b40b3c600", False, _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((3, 7), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.7.0",
                "9d981389e77950a7954e3c5405f1137d3c1a645a", False, _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((3, 8), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.8.0",
                "8a770941a7b03b4a22622293b65ee3d48b6f6c3c", False, _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((3, 9), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.9.0",
                "91e553c8f89a07eb08cfeff4b99033e65b69e49f", False, _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((3, 10), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-3.10.0",
                "cc18d25f9ea133eca1a2976188f659bdc34a2253", False, _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((4, 0), _targets(_V30), _ROCBLAS, "CMakeLists.txt", "rocm-4.0.0",
                "cc18d25f9ea133eca1a2976188f659bdc34a2253", False,
                "the same commit as rocm-3.10.0; " + _V30_NOTE.format(compiler="hip-clang")),
    RocmRelease((4, 1), _targets(_V41), _ROCBLAS, "CMakeLists.txt", "rocm-4.1.0",
                "93c82939415887123afa7644baf429da374b10a2", False, _V41_NOTE),
    RocmRelease((4, 2), _targets(_V41), _ROCBLAS, "CMakeLists.txt", "rocm-4.2.0",
                "1d398335a4d6d74f9bf08e0b6099916e5775990e", False, _V41_NOTE),
    RocmRelease((4, 3), _targets(_V50), _ROCBLAS, "CMakeLists.txt", "rocm-4.3.0",
                "8328dcceed290a88078140ffba0a715156de3c2c", False,
                "the first list with gfx90a and gfx10 targets; " + _V43_NOTE),
    RocmRelease((4, 5), _targets(_V50), _ROCBLAS, "CMakeLists.txt", "rocm-4.5.0",
                "337552f09e399d06e1c17939370411a1206452b5", False, _V43_NOTE),
    RocmRelease((5, 0), _targets(_V50), _ROCBLAS, "CMakeLists.txt", "rocm-5.0.0",
                "60c5f03d099a072d65429e11332bd825783c81c3", False, "rocm_check_target_ids default list"),
    RocmRelease((5, 1), _targets(_V50), _ROCBLAS, "CMakeLists.txt", "rocm-5.1.0",
                "490c4140fc96cd1e0a04dca3fdab64420110585c", False),
    RocmRelease((5, 2), _targets(_V52), _ROCBLAS, "CMakeLists.txt", "rocm-5.2.0",
                "4a92c6f126491fdc92afb1c382e7987891c9b0d3", False, "gfx1011 left the list"),
    RocmRelease((5, 3), _targets(_V52), _ROCBLAS, "CMakeLists.txt", "rocm-5.3.0",
                "7294a708d91a68e6179d6d1bc74b254686ee8030", False),
    RocmRelease((5, 4), _targets(_V52 + ";gfx1100;gfx1102"), _ROCBLAS, "CMakeLists.txt", "rocm-5.4.0",
                "ef7a9bb9d4fe7eaa8cdcdacec588a0441fc9c39c", False,
                "first RDNA3 targets (Tensile logic for navi31/32/33 added in this release); no gfx1101 yet"),
    RocmRelease((5, 5), _targets(_V55), _ROCBLAS, "CMakeLists.txt", "rocm-5.5.0",
                "cdd561f000d4b0853d684e3274aca613343e6a64", False),
    RocmRelease((5, 6), _targets(_V55), _ROCBLAS, "CMakeLists.txt", "rocm-5.6.0",
                "4b0751ef2519f3ef1720b0607e3eeb25f7503496", False),
    RocmRelease((5, 7), _targets(_V55 + ";gfx940;gfx941;gfx942"), _ROCBLAS, "CMakeLists.txt", "rocm-5.7.0",
                "b80e422007644657bae5e5dc9d490a6b91baa853", False, "the last list with gfx803"),
    RocmRelease((6, 0), _targets(_V60), _ROCBLAS, "CMakeLists.txt", "rocm-6.0.0",
                "88df972629c981ecc705878e2f7094a7cff7c1e6", False, "TARGET_LIST_ROCM_6.0; gfx803 dropped"),
    RocmRelease((6, 1), _targets(_V60), _ROCBLAS, "CMakeLists.txt", "rocm-6.1.0",
                "cefa4a9b54aaf2d34e530c0d0dca521ef2c6bca6", False, "TARGET_LIST_ROCM_6.0"),
    RocmRelease((6, 2), _targets(_V60), _ROCBLAS, "CMakeLists.txt", "rocm-6.2.0",
                "54f305c18f0d509466557e106ac4b1d7e42c85a5", False, "TARGET_LIST_ROCM_6.0"),
    RocmRelease((6, 3), _targets(_V60.replace("gfx1102", "gfx1102;gfx1151;gfx1200;gfx1201")), _ROCBLAS,
                "CMakeLists.txt", "release-staging/rocm-rel-6.3", "c125a9b93f9533e7ded479d5862e03ab42781883", True,
                "TARGET_LIST_ROCM_6.3 of the 6.3 release branch (no rocm-6.3.0 tag in the copy read)"),
    RocmRelease((6, 4), _targets(_L63), _LIBS, "projects/rocblas/CMakeLists.txt", "rocBLAS 5.1.0 line",
                _LIBS_COMMIT, True, _LIBS_NOTE.format(list="6.3", range="6.3 to before 7.0")),
    RocmRelease((7, 0), _targets(_L63 + ";gfx950;gfx1150"), _LIBS, "projects/rocblas/CMakeLists.txt",
                "rocBLAS 5.1.0 line", _LIBS_COMMIT, True, _LIBS_NOTE.format(list="7.0", range="7.0 to before 7.1")),
    RocmRelease((7, 1), _targets(_L63 + ";gfx950;gfx1150;gfx1103"), _LIBS, "projects/rocblas/CMakeLists.txt",
                "rocBLAS 5.1.0 line", _LIBS_COMMIT, False,
                _LIBS_NOTE.format(list="7.1", range="7.1 and later") + "; the first list with gfx1103",
                "2025-10-30"),
    RocmRelease((7, 2), _targets(_L63 + ";gfx950;gfx1150;gfx1103"), _LIBS, "projects/rocblas/CMakeLists.txt",
                "develop, rocBLAS 5.5.0 line", _LIBS_DEVELOP_COMMIT, True,
                "projects/rocblas/CMakeLists.txt of the rocBLAS 5.5.0 line picks TARGET_LIST_ROCM_7.1 for "
                "ROCM_PLATFORM_VERSION 7.1 to before 7.13 (TARGET_LIST_ROCM_7.13 adds gfx1250); not read at the "
                "rocm-7.2.0 tag", "2026-01-21"),
)  # fmt: skip
# Where each ``published`` date was read: the GitHub release of the tag rocm-X.Y.0 in a ROCm repository.
PUBLISHED_SOURCES: dict[RocmVersion, str] = {
    (7, 1): "ROCm/rocminfo GitHub release rocm-7.1.0, published 2025-10-30 (rocm-ci)",
    (7, 2): "ROCm/rocminfo GitHub release rocm-7.2.0, published 2026-01-21 (srayasam-amd)",
}

_BY_VERSION: dict[RocmVersion, RocmRelease] = {row.version: row for row in ROCM_RELEASES}

# "6.2", "6.2.4", "rocm6.2", "ROCm 7.1.1", "rocm-5.7.0": a major of one digit, a minor, an optional patch.
_VERSION = re.compile(r"^(?:rocm[\s_-]*v?)?(?P<major>[1-9])\.(?P<minor>\d{1,2})(?:\.\d+)*$", re.I)


def parse_rocm_version(text: str) -> RocmVersion | None:
    """(major, minor) of a ROCm version as texts write it, or None where it is not one."""
    m = _VERSION.match(text.strip())
    return (int(m["major"]), int(m["minor"])) if m else None


def version_text(version: RocmVersion) -> str:
    return f"{version[0]}.{version[1]}"


def release(version: RocmVersion | str) -> RocmRelease | None:
    """The table's row for a ROCm release (any patch of it), or None where the release is unknown."""
    key = parse_rocm_version(version) if isinstance(version, str) else version
    return _BY_VERSION.get(key) if key is not None else None


def newest() -> RocmRelease:
    return ROCM_RELEASES[-1]


def carries(gfx: str, rocm_version: RocmVersion | str) -> bool | None:
    """Whether that ROCm release's rocBLAS carries code for ``gfx``; None when the release is unknown."""
    row = release(rocm_version)
    return None if row is None else gfx in row.targets


def releases_with(gfx: str) -> tuple[RocmVersion, ...]:
    """The releases of the table whose rocBLAS carries ``gfx``, oldest first."""
    return tuple(row.version for row in ROCM_RELEASES if gfx in row.targets)


def first_rocm_with(gfx: str) -> RocmVersion | None:
    """The first release of the table whose rocBLAS carries ``gfx``; None when none does."""
    found = releases_with(gfx)
    return found[0] if found else None


def rocm_prebuilt(gfx: str) -> bool:
    """Whether the newest release known carries ``gfx``: the answer for a caller that knows no version."""
    return gfx in newest().targets
