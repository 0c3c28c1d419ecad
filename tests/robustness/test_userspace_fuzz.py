"""Hostile HIP files: whatever the bytes, the reader gives targets or a BundleError/FileScan error, nothing else.

Short in ``make test``; at least 10,000 examples each under HYPOTHESIS_PROFILE=fuzz.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.userspace import bundle as B
from kfdguard.userspace.bundle import BundleError, read_bundles
from kfdguard.userspace.scan import scan_file
from kfdguard.userspace.targets import parse_target
from tests.fuzzing import examples
from tests.unit.userspace.test_userspace_bundle import HOST, ccob, code_object, elf_with, plain, section

pytestmark = pytest.mark.fuzz

GOOD = section(
    plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx1030", code_object("c"))]),
    ccob(plain([(HOST, b""), ("hip-amdgcn-amd-amdhsa--gfx1100", code_object("d"))]), version=2, method="zlib"),
    ccob(plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", code_object("e"))]), version=3),
    ccob(plain([(HOST, b""), ("hipv4-amdgcn-amd-amdhsa--gfx1201", code_object("f"))]), version=1, method="zstd"),
    align=256,
)


def _check(data: bytes) -> None:
    try:
        bundles = read_bundles(data, 0, len(data))
    except BundleError as exc:
        assert str(exc)
        assert all(0x20 <= ord(c) < 0x7F for c in str(exc)), "error text carries what a terminal would obey"
        return
    for b in bundles:
        assert len(b.entries) <= B.MAX_ENTRIES
        for e in b.entries:
            assert e.id.isascii() and e.id.isprintable() and len(e.id) <= B.MAX_ID
            assert e.offset > 0
            total = b.uncompressed_size if b.compressed else b.size
            assert total is not None and e.offset + e.size <= total


magic_prefixed = st.tuples(st.sampled_from([B.MAGIC, B.CMAGIC, b""]), st.binary(max_size=600)).map(b"".join)


@settings(max_examples=examples(300))
@given(magic_prefixed)
def test_random_bytes(data: bytes) -> None:
    _check(data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(GOOD)
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["flip", "byte", "cut", "u64", "insert"]))
        pos = draw(st.integers(0, len(data) - 1)) if data else 0
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[pos:]
        elif kind == "u64" and len(data) >= pos + 8:
            value = draw(st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1, len(GOOD), 4096]))
            data[pos : pos + 8] = value.to_bytes(8, "little")
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


@settings(max_examples=examples(300))
@given(mutated())
def test_mutated_section(data: bytes) -> None:
    _check(data)


@pytest.fixture(scope="module")
def toy_elf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return elf_with(tmp_path_factory.mktemp("elf"), GOOD).read_bytes()


@settings(max_examples=examples(100, campaign=10_000), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_elf_file(toy_elf: bytes, data: st.DataObject) -> None:
    raw = bytearray(toy_elf)
    for _ in range(data.draw(st.integers(1, 6), label="mutations")):
        pos = data.draw(st.integers(0, len(raw) - 1), label="pos")
        if data.draw(st.booleans(), label="cut"):
            del raw[pos:]
            if not raw:
                break
        else:
            raw[pos] = data.draw(st.integers(0, 255), label="byte")
    fd, name = tempfile.mkstemp(suffix=".so")
    try:
        os.write(fd, bytes(raw))
        os.close(fd)
        result = scan_file(name, explicit=True)
        assert result is not None
        if result.error:
            assert result.targets == () and result.error.isprintable()
        else:
            # Whatever survived the mutation is a well-formed target id of an amdgcn entry.
            assert all(parse_target(t) is not None for t in result.targets)
    finally:
        Path(name).unlink()


def _header_fields(raw: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every ELF64 header field after e_ident and of every field of every section header."""
    fields = [(16, 2), (18, 2), (20, 4), (24, 8), (32, 8), (40, 8), (48, 4), (52, 2), (54, 2), (56, 2), (58, 2)]
    fields += [(60, 2), (62, 2)]
    shoff = int.from_bytes(raw[40:48], "little")
    shnum = int.from_bytes(raw[60:62], "little")
    widths = [4, 4, 8, 8, 8, 8, 4, 4, 8, 8]  # Elf64_Shdr
    for i in range(shnum):
        at = shoff + 64 * i
        for w in widths:
            fields.append((at, w))
            at += w
    return [(at, w) for at, w in fields if at + w <= len(raw)]


@settings(
    max_examples=examples(200, campaign=10_000),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_hostile_elf_header_values(toy_elf: bytes, data: st.DataObject) -> None:
    # Random bytes rarely land on a header; here each mutation writes an edge value (0, 1, a count past
    # the file, 2**63, all ones, SHN_XINDEX...) into one field of the ELF header or a section header:
    # whatever pyelftools makes of it, the scan answers with targets or an error, in bounded time.
    import time

    raw = bytearray(toy_elf)
    fields = _header_fields(toy_elf)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        at, width = data.draw(st.sampled_from(fields), label="field")
        top = (1 << (8 * width)) - 1
        value = data.draw(
            st.sampled_from([0, 1, 2, 0xFF00, 0xFFFF, len(raw), len(raw) - 1, top, top >> 1, 1 << (8 * width - 1)])
            | st.integers(0, top),
            label="value",
        )
        raw[at : at + width] = (value & top).to_bytes(width, "little")
    fd, name = tempfile.mkstemp(suffix=".so")
    try:
        os.write(fd, bytes(raw))
        os.close(fd)
        started = time.monotonic()
        result = scan_file(name, explicit=True)
        assert time.monotonic() - started < 2.0
        assert result is not None
        if result.error:
            assert result.targets == () and result.error.isprintable()
    finally:
        Path(name).unlink()
