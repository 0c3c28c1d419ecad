"""Fuzzing the PE section reader: any bytes give sections or a PeError, in bounded reads.

Valid images round-trip their sections; mutated ones (bytes overwritten,
header fields set to chosen extremes, truncation) never raise anything but
PeError and never read more than the headers plus three sections of at most
4 MiB, whatever the headers claim.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.probe import pe
from tests.fuzzing import examples
from tests.pe_files import pe_image

pytestmark = pytest.mark.fuzz

WANTED = (".osrel", ".uname", ".cmdline")
# pefile's header reads are pages within a budget; then at most one read per wanted section.
BOUND = pe.HEADER_BUDGET + len(WANTED) * pe.SECTION_LIMIT
MAX_READS = pe.HEADER_BUDGET // pe.PAGE + len(WANTED)
texts = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=200)
names = st.sampled_from([b".osrel", b".uname", b".cmdline", b".linux", b".text", b".sbat", b".osrelx", b""])


def run(data: bytes) -> tuple[dict[str, str] | None, list[int]]:
    reads: list[int] = []

    def read(offset: int, size: int) -> bytes:
        assert offset >= 0 and 0 <= size <= pe.SECTION_LIMIT
        reads.append(size)
        return data[offset : offset + size]

    try:
        return pe.sections(read, len(data), WANTED), reads
    except pe.PeError as exc:
        assert str(exc)
        return None, reads


@settings(max_examples=examples(300), deadline=None)
@given(osrel=texts, uname=texts, cmdline=texts, extra=st.lists(st.tuples(names, st.binary(max_size=64)), max_size=4))
def test_valid_images_round_trip(osrel: str, uname: str, cmdline: str, extra: list[tuple[bytes, bytes]]) -> None:
    ours = [(b".osrel", osrel.encode()), (b".uname", uname.encode()), (b".cmdline", cmdline.encode())]
    image = pe_image([*ours, *extra])
    found, reads = run(image)
    assert found == {".osrel": osrel, ".uname": uname, ".cmdline": cmdline}
    assert sum(reads) <= BOUND


FIELDS = {  # offset in the image (PE header at 64, 5 sections): struct format
    0x3C: "<I",  # e_lfanew
    64 + 6: "<H",  # NumberOfSections
    64 + 20: "<H",  # SizeOfOptionalHeader
    **{64 + 24 + 240 + 40 * i + 8: "<I" for i in range(5)},  # VirtualSize
    **{64 + 24 + 240 + 40 * i + 20: "<I" for i in range(5)},  # PointerToRawData
}
extremes = st.sampled_from([0, 1, 39, 40, 96, 97, 0x7FFF, 0xFFFF, 4 << 20, (4 << 20) + 1, 0x7FFFFFFF, 0xFFFFFFFF])


@settings(max_examples=examples(500), deadline=None)
@given(
    fields=st.lists(st.tuples(st.sampled_from(sorted(FIELDS)), st.one_of(extremes, st.integers(0, 0xFFFFFFFF)))),
    flips=st.lists(st.tuples(st.integers(0, 2047), st.integers(0, 255)), max_size=8),
    cut=st.one_of(st.none(), st.integers(0, 2048)),
)
def test_mutated_images_fail_cleanly_and_read_little(
    fields: list[tuple[int, int]], flips: list[tuple[int, int]], cut: int | None
) -> None:
    image = bytearray(
        pe_image(
            [
                (b".text", b"\xc3" * 8),
                (b".osrel", b"ID=x\n"),
                (b".uname", b"6.1"),
                (b".cmdline", b"ro"),
                (b".linux", b"k" * 600),
            ]
        )
    )
    for at, value in fields:
        fmt = FIELDS[at]
        struct.pack_into(fmt, image, at, value & (0xFFFF if fmt == "<H" else 0xFFFFFFFF))
    for at, byte in flips:
        if at < len(image):
            image[at] = byte
    data = bytes(image if cut is None else image[:cut])
    found, reads = run(data)
    assert sum(reads) <= BOUND and len(reads) <= MAX_READS
    if found is not None:
        assert set(found) <= set(WANTED) and all("\0" not in v for v in found.values())


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_fail_cleanly(data: bytes) -> None:
    found, reads = run(data)
    assert sum(reads) <= BOUND
    assert found is None or set(found) <= set(WANTED)


# Whole ESPs of hostile files: the probe lists what systemd would and complains about the rest.
file_names = st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=24).filter(
    lambda n: n not in (".", "..")
)
contents = st.one_of(
    st.binary(max_size=512),
    st.text(max_size=300).map(str.encode),
    st.builds(lambda o, u: pe_image([(b".osrel", o.encode()), (b".uname", u.encode())]), texts, texts),
)


@settings(max_examples=examples(100, campaign=2000), deadline=None)
@given(
    type1=st.lists(st.tuples(file_names.map(lambda n: n + ".conf"), contents), max_size=5),
    type2=st.lists(st.tuples(file_names.map(lambda n: n + ".efi"), contents), max_size=5),
    conf=st.one_of(st.none(), st.binary(max_size=200)),
)
def test_hostile_esps_never_raise(
    type1: list[tuple[str, bytes]], type2: list[tuple[str, bytes]], conf: bytes | None
) -> None:
    import tempfile
    from pathlib import Path

    from kfdguard.host.root import Root
    from kfdguard.probe import bootspec
    from kfdguard.probe.boot import probe_bootloader
    from kfdguard.probe.reader import Reader

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for sub, files in (("efi/loader/entries", type1), ("efi/EFI/Linux", type2)):
            (root / sub).mkdir(parents=True, exist_ok=True)
            for name, data in files:
                try:
                    (root / sub / name).write_bytes(data)
                except OSError:  # a name too long for the filesystem
                    continue
        if conf is not None:
            (root / "efi/loader/loader.conf").write_bytes(conf)
        reader = Reader(Root(root))
        loader = probe_bootloader(reader)
        ids = [e.id for e in loader.entries]
        assert all(bootspec.name_valid(i) for i in ids)
        assert loader.kind in ("systemd-boot", "none")
        _ = loader.default_entry, loader.oneshot_entry, loader.default_release
        for problem in reader.problems:
            assert problem.reason
