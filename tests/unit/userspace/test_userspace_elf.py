"""kfdguard's bounded ELF section reader (pyelftools' layouts, kfdguard's bounds) against pyelftools' own
section walk (iter_sections, name lookup) on real files, and its errors on hostile ones."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.userspace.elf import ElfError, hip_sections
from tests.fuzzing import examples
from tests.unit.userspace.test_userspace_bundle import TWO_TARGETS, elf_with, plain, section

REAL = [
    Path("/var/cache/kfdguard-testdata/roots/trixie-rocm/usr/lib/x86_64-linux-gnu/librocblas.so.0.1"),
    Path("/var/cache/kfdguard-testdata/roots/trixie-rocm/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"),
    Path("/usr/lib/x86_64-linux-gnu/libc.so.6"),
    Path("/usr/bin/python3"),
]


def oracle(path: Path) -> dict[str, tuple[int, int]]:
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        elf = ELFFile(f)
        return {
            s.name: (s["sh_offset"], s["sh_size"])
            for s in elf.iter_sections()
            if s.name in (".hip_fatbin", ".hipFatBinSegment")
        }


def ours(path: Path) -> dict[str, tuple[int, int]]:
    with open(path, "rb") as f:
        found = hip_sections(f, os.fstat(f.fileno()).st_size)
    return {
        n: (s.offset, s.size) for n, s in ((".hip_fatbin", found.fatbin), (".hipFatBinSegment", found.segment)) if s
    }


def test_agrees_with_pyelftools_on_built_and_real_files(tmp_path: Path) -> None:
    built = elf_with(tmp_path, section(plain(TWO_TARGETS)))
    assert ours(built) == oracle(built) and ".hip_fatbin" in ours(built)
    checked = 0
    for path in REAL:
        if path.is_file():
            assert ours(path) == oracle(path), path
            checked += 1
    assert checked >= 2  # libc and python3 are always there; the ROCm ones when the test data is cached


def test_real_rocblas_segment_magic() -> None:
    path = REAL[0]
    if not path.is_file():
        pytest.skip("Debian 13's rocBLAS is not in the test-data cache (tools/testdata/fetch-rocm-debs)")
    with open(path, "rb") as f:
        found = hip_sections(f, path.stat().st_size)
    assert found.machine == "EM_X86_64" and found.segment_magic  # the wrapper starts with "HIPF"


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({4: 3}, "ELF class 3"),
        ({0x3A: 10}, "section header size 10"),  # e_shentsize
        ({0x3C: 0xFF, 0x3D: 0x0F}, "section header table"),  # e_shnum 4095 past the end
        ({0x3E: 0xF0, 0x3F: 0x00}, "section-name table index 240"),
    ],
)
def test_malformed_headers(tmp_path: Path, patch: dict[int, int], message: str) -> None:
    data = bytearray(elf_with(tmp_path, section(plain(TWO_TARGETS))).read_bytes())
    for pos, value in patch.items():
        data[pos] = value
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ElfError, match=message), open(bad, "rb") as f:
        hip_sections(f, len(data))


def test_huge_string_table_refused(tmp_path: Path) -> None:
    lib = elf_with(tmp_path, section(plain(TWO_TARGETS)))
    data = bytearray(lib.read_bytes())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shstrndx = struct.unpack_from("<H", data, 0x3E)[0]
    struct.pack_into("<Q", data, shoff + shstrndx * 64 + 32, 1 << 40)  # its sh_size
    with pytest.raises(ElfError, match="section-name table"):
        from io import BytesIO

        hip_sections(BytesIO(bytes(data)), len(data))


@pytest.mark.parametrize("shoff", [2**63 + 5, 2**64 - 1, 1 << 40])
def test_extended_numbering_at_an_offset_past_the_file(tmp_path: Path, shoff: int) -> None:
    # e_shnum 0 sends the reader to section header 0 for the count; an offset of 2**63 or more
    # cannot even be sought, and raised ValueError out of scan_file (found comparing the old and
    # the refactored reader). It is the file's error now, like any header beyond the end.
    from kfdguard.userspace.scan import scan_file

    data = bytearray(elf_with(tmp_path, section(plain(TWO_TARGETS))).read_bytes())
    struct.pack_into("<Q", data, 0x28, shoff)  # e_shoff
    struct.pack_into("<H", data, 0x3C, 0)  # e_shnum: the count is in section header 0
    bad = tmp_path / "libovf.so"
    bad.write_bytes(bytes(data))
    with pytest.raises(ElfError, match="section header 0 beyond the end of the file"), open(bad, "rb") as f:
        hip_sections(f, len(data))
    scanned = scan_file(str(bad))
    assert scanned is not None
    assert scanned.error and "section header 0 beyond the end" in scanned.error and not scanned.targets


@pytest.mark.fuzz
@settings(max_examples=examples(200))
@given(st.binary(min_size=0, max_size=256).map(lambda b: b"\x7fELF" + b))
def test_random_headers_only_elf_errors(data: bytes) -> None:
    from io import BytesIO

    try:
        found = hip_sections(BytesIO(data), len(data))
    except ElfError as exc:
        assert str(exc).isprintable()
    else:
        for s in (found.fatbin, found.segment):
            assert s is None or s.offset + s.size <= len(data)
