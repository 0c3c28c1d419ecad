"""TheRock's kernel packs: the .kpack reader, split host libraries, and ``kfdguard targets`` on both.

Every archive here is written from the format's definition (ROCm/rocm-kpack
e348328, ``PackedKernelArchive.write`` with the "none" compressor), and that
writer is held byte for byte against an archive the project's own writer made
(tests/data/kpack). Split libraries are real shared objects from gcc with a
memory-only ``.hip_fatbin`` and a ``.rocm_kpack_ref`` section, as
``kpack_transform.py`` leaves them.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.cli import main
from kfdguard.userspace import kpack as K
from kfdguard.userspace.kpack import KpackError, parse_ref, read_kpack
from kfdguard.userspace.scan import scan_file, scan_path, scan_wheel
from tests.conftest import tool
from tests.paths import TESTS

ASSETS = TESTS / "data" / "kpack"


def kpack_bytes(group: str, family: str, arches: list[str], kernels: list[tuple[str, str, bytes]]) -> bytes:
    """An archive as ``PackedKernelArchive.write`` lays it out with the "none" compressor: the header
    ``<4sIQ``, zeros to 64, the kernels back to back, then the MessagePack table of contents, its offset
    patched into the header. ``kernels`` are (binary key, gfx, code) in the order they were added."""
    blob = b"".join(code for _, _, code in kernels)
    start = 64
    toc: dict[str, dict[str, dict[str, Any]]] = {}
    blobs = []
    offset = 0
    for ordinal, (key, gfx, code) in enumerate(kernels):
        toc.setdefault(key, {})[gfx] = {"type": "hsaco", "ordinal": ordinal, "original_size": len(code)}
        blobs.append({"offset": start + offset, "size": len(code)})
        offset += len(code)
    table = {
        "format_version": 1,
        "group_name": group,
        "gfx_arch_family": family,
        "gfx_arches": arches,
        "toc": toc,
        "compression_scheme": "none",
        "blobs": blobs,
    }
    toc_offset = start + len(blob)
    head = struct.pack("<4sIQ", b"KPAK", 1, toc_offset)
    packed: bytes = msgpack.packb(table, use_bin_type=True)
    return head + b"\0" * (start - len(head)) + blob + packed


# generate_test_data.py's generate_noop_archive, input for input.
NOOP_KERNELS = [
    ("lib/libtest.so#0", "gfx900", b"KERNEL1_GFX900_DATA" + b"\x00" * 100),
    ("lib/libtest.so#0", "gfx906", b"KERNEL2_GFX906_DATA" + b"\x00" * 200),
    ("bin/testapp#0", "gfx900", b"KERNEL3_APP_GFX900" + b"\xff" * 150),
]


def write_pack(path: Path, arches: list[str], kernels: list[tuple[str, str, bytes]], family: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(kpack_bytes("blas", family or arches[0], arches, kernels))
    return path


def read(path: Path) -> K.Kpack:
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_kpack(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def split_library(directory: Path, name: str, ref: object | None, *, fatbin: bool = True) -> Path:
    """A real shared library as kpack_transform leaves it: .hip_fatbin memory only (SHT_NOBITS), and the
    MessagePack reference in .rocm_kpack_ref (objcopy adds it, as elf/surgery.py adds a section)."""
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / f"{name}.c"
    nobits = '__asm__(".section .hip_fatbin,\\"a\\",@nobits\\n.zero 8192\\n.previous");\n' if fatbin else ""
    src.write_text(nobits + "int toy(void) { return 42; }\n")
    lib = directory / name
    subprocess.run([tool("gcc"), "-shared", "-fPIC", "-o", str(lib), str(src)], check=True, timeout=60)
    src.unlink()
    if ref is not None:
        blob = directory / f"{name}.ref"
        blob.write_bytes(ref if isinstance(ref, bytes) else msgpack.packb(ref, use_bin_type=True))
        subprocess.run([tool("objcopy"), "--add-section", f".rocm_kpack_ref={blob}", str(lib)], check=True, timeout=60)
        blob.unlink()
    return lib


# --- the format ---------------------------------------------------------------------------------------


def test_the_test_writer_is_the_format_byte_for_byte() -> None:
    assert (
        kpack_bytes("test", "gfx900X", ["gfx900", "gfx906"], NOOP_KERNELS) == (ASSETS / "test_noop.kpack").read_bytes()
    )


def test_the_projects_own_archives() -> None:
    noop = read(ASSETS / "test_noop.kpack")
    assert (noop.group, noop.family, noop.arches) == ("test", "gfx900X", ("gfx900", "gfx906"))
    assert noop.targets == ("gfx900", "gfx906")
    assert noop.targets_of("lib/libtest.so") == ("gfx900", "gfx906")
    assert noop.targets_of("bin/testapp") == ("gfx900",)
    assert noop.targets_of("lib/libother.so") == ()
    zstd = read(ASSETS / "test_zstd.kpack")
    assert (zstd.family, zstd.targets) == ("gfx110X", ("gfx1100", "gfx1101"))
    assert zstd.targets_of("bin/hiptest") == ("gfx1100",)


def test_only_what_the_loader_can_find_counts() -> None:
    """The loader finds an archive by gfx_arches, then the code in toc: a target needs both."""
    pack = kpack_bytes(
        "blas", "gfx110X", ["gfx1100", "gfx1101"], [("lib/a.so#0", "gfx1100", b"x"), ("lib/a.so#0", "gfx1151", b"y")]
    )
    archive = K.parse_toc(pack[struct.unpack_from("<Q", pack, 8)[0] :])
    assert archive.targets == ("gfx1100",)  # gfx1101 has no code; gfx1151's code is in no index


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"KPA", "shorter than a kpack header"),
        (b"ELF\0" + bytes(60), "not a kpack archive"),
        (struct.pack("<4sIQ", b"KPAK", 2, 16) + b"\x80", "format version 2"),
        (struct.pack("<4sIQ", b"KPAK", 1, 99), "outside the file"),
        (struct.pack("<4sIQ", b"KPAK", 1, 0) + b"\x80", "outside the file"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + b"\xc1", "not MessagePack"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + msgpack.packb([1, 2]), "not a map"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + msgpack.packb({"gfx_arches": "gfx1100"}), "not a list"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + msgpack.packb({"toc": []}), "toc: list, not a map"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + msgpack.packb({"format_version": 2}), "format_version 2"),
        (struct.pack("<4sIQ", b"KPAK", 1, 16) + msgpack.packb({1: 2}), "not MessagePack"),  # a key not a string
    ],
)
def test_a_broken_archive_says_why(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "x.kpack"
    path.write_bytes(data)
    with pytest.raises(KpackError, match=why):
        read(path)
    (result,) = scan_path(str(path)).files
    assert result.source == "kpack" and result.targets == () and why in (result.error or "")


def test_a_table_of_contents_past_the_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_pack(tmp_path / "x.kpack", ["gfx1100"], [("lib/a.so#0", "gfx1100", b"x")])
    monkeypatch.setattr(K, "TOC_LIMIT", 16)
    with pytest.raises(KpackError, match="at most 16"):
        read(path)


def test_trailing_bytes_after_the_table_are_ignored_as_the_runtime_ignores_them(tmp_path: Path) -> None:
    path = tmp_path / "x.kpack"
    path.write_bytes(kpack_bytes("blas", "gfx110X", ["gfx1100"], [("lib/a.so#0", "gfx1100", b"x")]) + b"\x00junk")
    assert read(path).targets == ("gfx1100",)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_any_table_of_contents_is_an_archive_or_a_kpack_error(table: bytes) -> None:
    try:
        archive = K.parse_toc(table)
    except KpackError:
        return
    assert all(isinstance(t, str) for t in archive.targets)


# --- the reference of a split library --------------------------------------------------------------------


def test_a_reference_needs_both_fields() -> None:
    ref = parse_ref(msgpack.packb({"kernel_name": "lib/librocblas.so", "kpack_search_paths": ["../.kpack/a.kpack"]}))
    assert ref == K.KpackRef("lib/librocblas.so", ("../.kpack/a.kpack",))
    broken: list[object] = [
        {"kernel_name": "x"},
        {"kpack_search_paths": ["a"]},
        {"kernel_name": "x", "kpack_search_paths": []},
        [],
    ]
    for bad in broken:
        with pytest.raises(KpackError):
            parse_ref(msgpack.packb(bad))


def therock_tree(top: Path, packs: dict[str, list[str]], search: str = ".kpack/blas_lib_@GFXARCH@.kpack") -> Path:
    """lib/librocblas.so split out, its code in lib/.kpack/blas_lib_<gfx>.kpack for each pack given
    (file gfx -> the architectures it indexes), as TheRock's per-family packages install them."""
    lib = split_library(
        top / "lib", "librocblas.so.5", {"kernel_name": "lib/librocblas.so.5", "kpack_search_paths": [search]}
    )
    for gfx, arches in packs.items():
        write_pack(top / "lib" / ".kpack" / f"blas_lib_{gfx}.kpack", arches,
                   [(f"lib/librocblas.so.5#{i}", a, b"code") for i, a in enumerate(arches)])  # fmt: skip
    return lib


def test_a_split_library_carries_the_targets_of_its_installed_packs(tmp_path: Path) -> None:
    lib = therock_tree(tmp_path, {"gfx1100": ["gfx1100"], "gfx1151": ["gfx1151"]})
    result = scan_file(str(lib), explicit=True)
    assert result is not None
    assert (result.source, result.targets, result.error) == ("kpack", ("gfx1100", "gfx1151"), None)
    assert "blas_lib_gfx1100.kpack" in (result.note or "")


def test_a_split_library_without_its_device_package_has_no_targets_and_says_so(tmp_path: Path) -> None:
    """rocm-sdk-core without rocm-sdk-device-gfx1151: the library is there, its code is not."""
    lib = therock_tree(tmp_path, {})
    result = scan_file(str(lib), explicit=True)
    assert result is not None
    assert (result.targets, result.error) == ((), None)
    assert "none installed" in (result.note or "") and "@GFXARCH@" in (result.note or "")


def test_a_direct_search_path_and_an_absolute_one(tmp_path: Path) -> None:
    pack = write_pack(tmp_path / "packs" / "rocm-gfx1200.kpack", ["gfx1200"], [("lib/libx.so#0", "gfx1200", b"c")])
    lib = split_library(tmp_path / "lib", "libx.so", {"kernel_name": "lib/libx.so", "kpack_search_paths": [
        "../packs/rocm-gfx1200.kpack", str(pack), "../packs/missing.kpack"]})  # fmt: skip
    result = scan_file(str(lib), explicit=True)
    assert result is not None and result.targets == ("gfx1200",)


def test_packs_of_another_library_give_nothing(tmp_path: Path) -> None:
    lib = therock_tree(tmp_path, {"gfx1151": ["gfx1151"]})
    write_pack(
        lib.parent / ".kpack" / "blas_lib_gfx1151.kpack", ["gfx1151"], [("lib/libhipblaslt.so#0", "gfx1151", b"c")]
    )
    result = scan_file(str(lib), explicit=True)
    assert result is not None and result.targets == ()


def test_an_unreadable_pack_is_an_error_of_the_library(tmp_path: Path) -> None:
    lib = therock_tree(tmp_path, {})
    bad = lib.parent / ".kpack" / "blas_lib_gfx1151.kpack"
    bad.parent.mkdir()
    bad.write_bytes(b"KPAK\2\0\0\0" + bytes(8))
    result = scan_file(str(lib), explicit=True)
    assert result is not None and "format version 2" in (result.error or "")


def test_a_broken_reference_is_an_error_and_a_memory_only_fatbin_without_one_still_is(tmp_path: Path) -> None:
    broken = split_library(tmp_path, "libbroken.so", b"\xc1")
    result = scan_file(str(broken), explicit=True)
    assert result is not None and "not MessagePack" in (result.error or "")
    plain = split_library(tmp_path, "libplain.so", None)
    result = scan_file(str(plain), explicit=True)
    assert result is not None and "SHT_NOBITS" in (result.error or "")


def test_a_pack_inside_a_wheel_is_named_not_opened(tmp_path: Path) -> None:
    import zipfile

    wheel = tmp_path / "rocm_sdk_device_gfx1151-7.9.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("_rocm_sdk_device_gfx1151/lib/.kpack/blas_lib_gfx1151.kpack", b"KPAK")
    (result,) = scan_wheel(str(wheel)).files
    assert (result.source, result.targets) == ("name", ("gfx1151",))


# --- kfdguard targets ---------------------------------------------------------------------------------


def test_targets_lists_exactly_what_a_therock_tree_carries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.publish.test_schema import errors

    therock_tree(tmp_path / "rocm", {"gfx1100": ["gfx1100"], "gfx110X": ["gfx1101", "gfx1102"]})
    code = main(["targets", "--json", "--machine", "rx7900xtx-ubuntu2404", str(tmp_path / "rocm")])
    out = json.loads(capsys.readouterr().out)
    assert errors("targets", out) == []
    (path,) = out["paths"]
    files = {f["path"].rsplit("/", 1)[-1]: f for f in path["files"]}
    # gfx110X is no name the loader expands @GFXARCH@ to: the library's code is gfx1100's pack alone.
    assert files["librocblas.so.5"]["source"] == "kpack" and files["librocblas.so.5"]["targets"] == ["gfx1100"]
    assert files["blas_lib_gfx110X.kpack"]["targets"] == ["gfx1101", "gfx1102"]  # the pack itself, read directly
    assert path["targets"] == ["gfx1100", "gfx1101", "gfx1102"]
    assert [g["runs"] for g in path["gpus"]] == [True] and code == 0  # the 7900 XTX is gfx1100


def test_targets_on_a_split_library_without_its_packs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = therock_tree(tmp_path / "rocm", {})
    code = main(["targets", "--machine", "rx7900xtx-ubuntu2404", str(lib)])
    out = capsys.readouterr().out
    assert "targets: none" in out and "code in kernel packs, none installed (.kpack/blas_lib_@GFXARCH@.kpack)" in out
    assert code == 3  # no PATH carries GPU code


def test_targets_on_a_pack_file_text(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["targets", "--machine", "nvidia-only", str(ASSETS / "test_noop.kpack")])
    out = capsys.readouterr().out
    assert "targets: gfx900 gfx906" in out and "kernel pack test gfx900X" in out
    assert code == 0


# --- TheRock's pip ROCm in check's inventory ------------------------------------------------------------

SITE = "usr/local/lib/python3.12/site-packages"


def pip_rocm(root: Path, packs: dict[str, list[str]]) -> Path:
    """TheRock's pip ROCm as rocm, rocm-sdk-core and rocm-sdk-libraries install it: the core's HIP runtime,
    a split libhipblas.so.3 in the libraries package and the device wheels' packs overlaid into its lib/.kpack."""
    site = root / SITE
    for dist in ("rocm-7.9.0.dist-info", "rocm_sdk_core-7.9.0.dist-info", "rocm_sdk_libraries-7.9.0.dist-info"):
        (site / dist).mkdir(parents=True)
    (site / "_rocm_sdk_core" / "lib").mkdir(parents=True)
    (site / "_rocm_sdk_core" / "lib" / "libamdhip64.so.7.9.0").write_bytes(b"")
    lib = site / "_rocm_sdk_libraries" / "lib"
    ref = {"kernel_name": "lib/libhipblas.so.3", "kpack_search_paths": [".kpack/hipblas_lib_@GFXARCH@.kpack"]}
    split_library(lib, "libhipblas.so.3", ref)
    for gfx, arches in packs.items():
        kernels = [(f"lib/libhipblas.so.3#{i}", a, b"code") for i, a in enumerate(arches)]
        write_pack(lib / ".kpack" / f"hipblas_lib_{gfx}.kpack", arches, kernels)
    return site


def strix_halo_check(fresh_machine: Any, capsys: pytest.CaptureFixture[str], packs: dict[str, list[str]]) -> Any:
    from kfdguard.simulate.builder import MachineBuilder

    spec = (
        MachineBuilder("strix-halo-pip-rocm")
        .ubuntu2404("6.14.0-29-generic")
        .with_gpu(0x1586, revision=0xC1)
        .with_user("alice", groups=["render"])
        .build()
    )
    system = fresh_machine(spec)
    pip_rocm(system.root.path, packs)
    main(["check", "--root", str(system.root.path), "--json"])
    return json.loads(capsys.readouterr().out)


def test_pip_rocm_without_the_gpus_device_package(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """gfx1151 with TheRock's pip ROCm whose only device package is gfx1100's: no code, and the package to add."""
    doc = strix_halo_check(fresh_machine, capsys, {"gfx1100": ["gfx1100"]})
    (stack,) = doc["software"]["stacks"]
    assert (stack["kind"], stack["name"], stack["version"]) == ("therock", "ROCm 7.9.0 (TheRock, pip)", "7.9.0")
    assert stack["hip_runtime"] == "libamdhip64.so.7.9.0"
    assert stack["targets"] == ["gfx1100"]
    ((gpu),) = stack["gpus"]
    assert (gpu["gfx"], gpu["status"]) == ("gfx1151", "no-code")
    (finding,) = [f for f in doc["findings"] if f["code"] == "userspace-target-unsupported"]
    assert "ROCm 7.9.0 (TheRock, pip)" in finding["message"] and "gfx1151" in finding["message"]
    assert 'pip install "rocm[device-gfx1151]" (rocm-sdk-device-gfx1151)' in finding["remedy"]
    assert any("kernel packs" in e for e in finding["evidence"])


def test_pip_rocm_with_the_gpus_device_package(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    doc = strix_halo_check(fresh_machine, capsys, {"gfx1100": ["gfx1100"], "gfx1151": ["gfx1151"]})
    (stack,) = doc["software"]["stacks"]
    assert stack["targets"] == ["gfx1100", "gfx1151"]
    assert [g["status"] for g in stack["gpus"]] == ["runs"]
    assert not [f for f in doc["findings"] if f["code"] == "userspace-target-unsupported"]


def test_a_gfxarch_pattern_reads_a_bounded_number_of_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory of many names next to a library (hostile, or only big) is read up to K.MAX_DIRECTORY names."""
    packs = tmp_path / ".kpack"
    packs.mkdir()
    for i in range(50):
        (packs / f"junk-{i:03}").write_bytes(b"")
    (packs / "blas_lib_gfx1100.kpack").write_bytes(b"")
    binary = str(tmp_path / "librocblas.so")
    assert K.candidates(binary, ".kpack/blas_lib_@GFXARCH@.kpack") == [str(packs / "blas_lib_gfx1100.kpack")]
    consumed = []
    real_scandir = os.scandir

    class Counting:
        """os.scandir's iterator, counting the entries taken from it."""

        def __init__(self, path: str) -> None:
            self.inner = real_scandir(path)

        def __enter__(self) -> Counting:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self) -> Counting:
            return self

        def __next__(self) -> os.DirEntry[str]:
            entry = next(self.inner)
            consumed.append(entry.name)
            return entry

    monkeypatch.setattr(K, "MAX_DIRECTORY", 10)
    monkeypatch.setattr(os, "scandir", Counting)  # the one os module kpack.py uses too
    found = K.candidates(binary, ".kpack/blas_lib_@GFXARCH@.kpack")
    assert len(consumed) == 10 and len(found) <= 1  # ten names read of 51
