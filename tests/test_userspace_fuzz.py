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
from tests.test_userspace_bundle import HOST, ccob, code_object, elf_with, plain, section

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
