"""`kfdguard targets`: files, directories, wheels; the GPUs of a machine; exit codes; --json."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from kfdguard.cli import main
from tests.unit.userspace.test_userspace_bundle import HOST, ccob, code_object, elf_with, plain, section


def hip(tmp: Path, targets: list[str], name: str = "libtoy.so") -> Path:
    entries = [(HOST, b""), *((f"hipv4-amdgcn-amd-amdhsa--{t}", code_object(t)) for t in targets)]
    return elf_with(tmp, section(ccob(plain(entries), version=2, method="zlib")), name)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["targets", *argv])
    return code, capsys.readouterr().out


def test_library_runs_on_the_7900_not_on_the_780m(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = hip(tmp_path, ["gfx1030", "gfx1100"])
    code, out = run(capsys, "--machine", "rx7900xtx-ubuntu2404", str(lib))
    assert code == 0
    assert "targets: gfx1030 gfx1100" in out and "AMD Radeon RX 7900 XTX: runs (code for gfx1100)" in out
    code, out = run(capsys, "--machine", "780m-ubuntu2204-ga", str(lib))
    assert code == 1
    assert "cannot run (no code for gfx1103 (nearest gfx1100))" in out


def test_json_wheel_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = hip(tmp_path, ["gfx11-generic", "gfx90a:xnack-"])
    wheel = tmp_path / "torch-2.4.1+rocm6.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(lib, "torch/lib/libtorch_hip.so")
        z.writestr("torch/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat", b"")
        z.writestr("torch/__init__.py", "")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "libggml-hip.so").write_bytes(lib.read_bytes())
    (tree / "notes.txt").write_text("gfx1200\n")
    code, out = run(capsys, "--machine", "780m-ubuntu2204-ga", "--json", str(wheel), str(tree))
    doc = json.loads(out)
    assert code == 0 and doc["exit_code"] == 0
    assert doc["gpus"] == [{"slot": "0000:c4:00.0", "name": "AMD Radeon 780M Graphics", "gfx": "gfx1103"}]
    whl, directory = doc["paths"]
    assert whl["kind"] == "wheel" and whl["targets"] == ["gfx1030", "gfx11-generic", "gfx90a:xnack-"]
    assert {f["path"].split("!")[1] for f in whl["files"]} == {
        "torch/lib/libtorch_hip.so",
        "torch/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat",
    }
    assert whl["gpus"][0]["runs"] is True and whl["gpus"][0]["detail"] == "code for gfx11-generic"
    assert directory["targets"] == ["gfx11-generic", "gfx90a:xnack-"]
    assert [f["compressed_bundles"] for f in directory["files"]] == [1]


def test_exit_codes_for_unreadable_and_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "--machine", "nvidia-only", str(tmp_path / "missing.so"))
    assert code == 2 and "error: No such file or directory" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run(capsys, "--machine", "nvidia-only", str(empty))
    assert code == 3 and "none (no GPU code found)" in out
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    code, out = run(capsys, "--machine", "nvidia-only", str(bad))
    assert code == 2 and "unreadable zip" in out
    lib = hip(tmp_path, ["gfx1100"])
    code, out = run(capsys, "--machine", "nvidia-only", str(lib))
    assert code == 0 and "no AMD GPU on this machine" in out


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["targets", "--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out and "some AMD GPU here has no code in some PATH" in out


def test_control_characters_in_file_names_do_not_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = tmp_path / "tree"
    lib = tree / "rocblas/library"
    lib.mkdir(parents=True)
    (lib / "TensileLibrary_lazy_gfx1100\x1b[2J.dat").write_bytes(b"")
    (lib / "TensileLibrary_lazy_gfx1030.dat").write_bytes(b"")
    code, out = run(capsys, "--machine", "rx7900xtx-ubuntu2404", str(tree))
    assert "\x1b" not in out and "gfx1030" in out
    assert code == 0
