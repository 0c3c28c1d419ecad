"""The versioned rocBLAS target table (knowledge/rocm.py): every row cites where it was read, the rows are in
release order, and the queries answer from the row of the release asked about."""

from __future__ import annotations

import re

import pytest

from kfdguard.knowledge import rocm
from kfdguard.knowledge.asics import ASICS

_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def test_every_row_cites_repository_path_ref_and_commit() -> None:
    for row in rocm.ROCM_RELEASES:
        assert re.fullmatch(r"ROCm/[\w.-]+", row.repository), row
        assert row.path.endswith("CMakeLists.txt"), row
        assert row.ref, row
        assert _HEX40.match(row.commit), row
        # A row read at its own tag names that tag; any other row says it is inferred.
        if not row.uncertain:
            assert row.ref.startswith(f"rocm-{rocm.version_text(row.version)}") or row.version == (7, 1), row


def test_rows_are_in_release_order_without_duplicates() -> None:
    versions = [row.version for row in rocm.ROCM_RELEASES]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)


def test_the_releases_the_issue_asks_for_are_present() -> None:
    for wanted in ("5.4", "5.7", "6.0", "6.2", "6.3", "6.4", "7.0", "7.1", "7.2"):
        assert rocm.release(wanted) is not None, wanted


def test_targets_are_bare_gfx_names() -> None:
    for row in rocm.ROCM_RELEASES:
        assert row.targets
        assert all(re.fullmatch(r"gfx[0-9a-f]{3,4}", t) for t in row.targets), row.targets


@pytest.mark.parametrize(
    ("gfx", "version", "expected"),
    [
        ("gfx1103", "6.2", False),
        ("gfx1103", "7.0.2", False),
        ("gfx1103", "7.1", True),
        ("gfx1103", "rocm7.1.1", True),
        ("gfx1101", "5.4", False),
        ("gfx1101", "5.5", True),
        ("gfx1100", "5.3", False),
        ("gfx1100", "5.4", True),  # rocBLAS's rocm-5.4.0 list has gfx1100 and gfx1102
        ("gfx803", "5.7", True),
        ("gfx803", "6.0", False),
        ("gfx1151", "6.2", False),
        ("gfx1151", "6.3", True),
        ("gfx1150", "6.4", False),
        ("gfx1150", "7.0", True),
        ("gfx1103", "7.2.1", True),  # rocBLAS 5.5.0's selection keeps the 7.1 list before 7.13
        ("gfx1152", "7.2", False),
        ("gfx1250", "7.2", False),
        ("gfx1010", "3.10", False),  # rocBLAS's rocm-3.10.0 list: gfx803, gfx900, gfx906, gfx908
        ("gfx1010", "4.0", False),
        ("gfx1010", "4.3", True),  # the first list with gfx10 targets (rocm-4.3.0)
        ("gfx1030", "4.2", False),
        ("gfx1030", "4.5", True),
        ("gfx803", "3.3", True),
        ("gfx803", "rocm-3.0", True),
        ("gfx908", "3.0", True),
        ("gfx1030", "2.9", None),  # before the table: unknown, not "no code"
        ("gfx803", "3.2", None),  # no rocm-3.2 tag was read: unknown
        ("gfx1030", "9.9", None),
        ("gfx1030", "not a version", None),
    ],
)
def test_carries_answers_from_the_release_asked_about(gfx: str, version: str, expected: bool | None) -> None:
    assert rocm.carries(gfx, version) is expected


def test_first_release_with_a_target() -> None:
    assert rocm.first_rocm_with("gfx1103") == (7, 1)
    assert rocm.first_rocm_with("gfx1100") == (5, 4)
    assert rocm.first_rocm_with("gfx1201") == (6, 3)
    assert rocm.first_rocm_with("gfx1036") is None
    assert rocm.first_rocm_with("gfx1010") == (4, 3)
    assert rocm.first_rocm_with("gfx803") == (3, 0)
    assert rocm.releases_with("gfx803")[-1] == (5, 7)


def test_asic_rocm_prebuilt_is_the_newest_release_of_the_table() -> None:
    # Asic.rocm_prebuilt is what callers without a version read: it must be the newest row's answer.
    for asic in ASICS:
        if asic.gfx is not None:
            assert asic.rocm_prebuilt == rocm.rocm_prebuilt(asic.gfx), asic.key


@pytest.mark.parametrize(
    ("text", "expected"),
    [("6.2", (6, 2)), ("6.2.41133", (6, 2)), ("rocm-5.7.0", (5, 7)), ("ROCm 7.1", (7, 1)), ("62", None), ("", None)],
)
def test_parse_rocm_version(text: str, expected: tuple[int, int] | None) -> None:
    assert rocm.parse_rocm_version(text) == expected


def test_every_publication_date_is_a_date_with_its_source() -> None:
    import datetime

    for row in rocm.ROCM_RELEASES:
        if row.published:
            datetime.date.fromisoformat(row.published)
            assert row.version in rocm.PUBLISHED_SOURCES
    assert set(rocm.PUBLISHED_SOURCES) <= {row.version for row in rocm.ROCM_RELEASES if row.published}
