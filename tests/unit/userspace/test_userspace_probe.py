"""The software inventory of machine trees built here: three stacks, units, ld.so.conf; and hostile trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kfdguard.cli import main
from kfdguard.host.root import Root
from kfdguard.simulate import bundled
from kfdguard.userspace.probe import probe_software
from tests.unit.userspace.test_userspace_bundle import HOST, ccob, code_object, elf_with, plain, section


def hip_library(tmp: Path, targets: list[str], name: str) -> bytes:
    entries = [(HOST, b""), *((f"hipv4-amdgcn-amd-amdhsa--{t}", code_object(t)) for t in targets)]
    return elf_with(tmp, section(plain(entries), ccob(plain(entries), version=3)), name).read_bytes()


def put(root: Path, path: str, data: bytes | str = b"") -> Path:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        target.write_text(data)
    else:
        target.write_bytes(data)
    return target


def three_stacks(root: Path, work: Path) -> None:
    """ROCm 6.2.4 in /opt (AMD's layout), ollama with its bundled ROCm, PyTorch-ROCm in a venv."""
    put(root, "/opt/rocm-6.2.4/.info/version", "6.2.4-120\n")
    for t in ("gfx1030", "gfx1100", "gfx1101", "gfx942"):
        put(root, f"/opt/rocm-6.2.4/lib/rocblas/library/TensileLibrary_lazy_{t}.dat")
        put(root, f"/opt/rocm-6.2.4/lib/rocblas/library/TensileLibrary_Type_HH_Contraction_{t}.co")
    put(root, "/opt/rocm-6.2.4/lib/rocblas/library/TensileLibrary_fallback.dat")
    put(root, "/opt/rocm-6.2.4/lib/libamdhip64.so.6.2.60204")
    os.symlink("/opt/rocm-6.2.4", root / "opt/rocm")  # absolute, as AMD's packages make it
    put(root, "/opt/rocm-6.2.4/lib/librocblas.so.4.2", hip_library(work, ["gfx1030", "gfx1100", "gfx942"], "a.so"))

    put(root, "/usr/lib/ollama/libggml-hip.so", hip_library(work, ["gfx1030", "gfx1100", "gfx1101"], "b.so"))
    for t in ("gfx1030", "gfx1100", "gfx1101"):
        put(root, f"/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_{t}.dat")
    put(root, "/usr/lib/ollama/rocm/libamdhip64.so.6.3.60303")
    put(root, "/etc/systemd/system/ollama.service",
        "[Unit]\nDescription=Ollama\n[Service]\nExecStart=/usr/bin/ollama serve\n"
        'Environment="OLLAMA_HOST=0.0.0.0" "HSA_OVERRIDE_GFX_VERSION=11.0.0"\n')  # fmt: skip
    put(root, "/etc/systemd/system/ollama.service.d/override.conf",
        "[Service]\nEnvironmentFile=-/etc/default/ollama\nEnvironmentFile=-/etc/default/missing\n")  # fmt: skip
    put(root, "/etc/default/ollama", "# ollama\nexport HIP_VISIBLE_DEVICES='0'\n")

    venv = "/home/ada/venv"
    site = f"{venv}/lib/python3.11/site-packages"
    put(root, f"{site}/torch/version.py", "__version__ = '2.4.1+rocm6.1'\nhip = '6.1.40091'\n")
    put(root, f"{site}/torch/lib/libtorch_hip.so", hip_library(work, ["gfx1030", "gfx1100", "gfx90a"], "c.so"))
    for t in ("gfx1030", "gfx1100", "gfx90a"):
        put(root, f"{site}/torch/lib/rocblas/library/TensileLibrary_lazy_{t}.dat")
    put(root, "/etc/ld.so.conf.d/rocm.conf", "/opt/rocm-6.2.4/lib\n/usr/lib/ollama/rocm\n")


def test_three_stacks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    three_stacks(root, tmp_path)
    sw = probe_software(Root(root), {"HSA_ENABLE_SDMA": "0", "HOME": "/root"}, paths=["/home/ada/venv"])
    assert sw.problems == ()
    kinds = {s.kind: s for s in sw.stacks}
    assert set(kinds) == {"rocm", "ollama", "pytorch"}
    rocm = kinds["rocm"]
    assert (rocm.name, rocm.path, rocm.version, rocm.runtime) == (
        "ROCm 6.2.4-120", "/opt/rocm", "6.2.4-120", "libamdhip64.so.6.2.60204"
    )  # fmt: skip
    assert {c.name: c.targets for c in rocm.components} == {
        "librocblas.so.4.2": ("gfx1030", "gfx1100", "gfx942"),
        "rocblas/library": ("gfx1030", "gfx1100", "gfx1101", "gfx942"),
    }
    assert kinds["ollama"].targets == ("gfx1030", "gfx1100", "gfx1101")
    assert kinds["pytorch"].name == "PyTorch 2.4.1+rocm6.1"
    assert kinds["pytorch"].targets == ("gfx1030", "gfx1100", "gfx90a")
    env = {(e.name, e.value, e.origin) for e in sw.env}
    assert env == {
        ("HSA_ENABLE_SDMA", "0", "caller environment"),
        ("HSA_OVERRIDE_GFX_VERSION", "11.0.0", "ollama.service (/etc/systemd/system/ollama.service)"),
        ("HIP_VISIBLE_DEVICES", "0", "/etc/default/ollama (EnvironmentFile= of ollama.service)"),
    }
    assert ("/usr/lib/ollama/rocm", "/etc/ld.so.conf.d/rocm.conf") in sw.ld_paths


def test_no_software_and_another_root_ignores_caller_env(tmp_path: Path) -> None:
    sw = probe_software(Root(tmp_path))
    assert sw.stacks == () and sw.env == () and sw.problems == ()


@pytest.mark.parametrize("hostile", ["fifo", "loop", "garbage", "dir-loop"])
def test_hostile_trees_never_raise(tmp_path: Path, hostile: str) -> None:
    root = tmp_path / "root"
    lib = root / "opt/rocm-6.0.0/lib"
    lib.mkdir(parents=True)
    (lib / "rocblas/library").mkdir(parents=True)
    if hostile == "fifo":
        os.mkfifo(lib / "librocblas.so.4")
        (root / "etc/systemd/system").mkdir(parents=True)
        os.mkfifo(root / "etc/systemd/system/ollama.service")
    elif hostile == "loop":
        os.symlink("librocblas.so.5", lib / "librocblas.so.4")
        os.symlink("librocblas.so.4", lib / "librocblas.so.5")
        os.symlink("/opt/rocm-x", root / "opt/rocm")
        os.symlink("/opt/rocm", root / "opt/rocm-x")
    elif hostile == "garbage":
        (lib / "librocblas.so.4").write_bytes(b"\x7fELF" + os.urandom(4000))
        put(root, "/opt/rocm-6.0.0/.info/version", "\x1b[31m6.0\n")
        put(root, "/etc/systemd/system/ollama.service", '[Service]\nEnvironment="unclosed\nEnvironmentFile=relative\n')
    else:
        os.symlink(lib, lib / "rocblas/library/up")
    sw = probe_software(Root(root))
    (stack,) = [s for s in sw.stacks if s.kind == "rocm"]
    assert stack.version in ("6.0.0", None)  # the escape sequence is refused as a version
    for c in stack.components:
        assert c.targets == ()


def test_check_json_software_section_and_780m_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = bundled.render_bundled("780m-ubuntu2204-ga", tmp_path / "m").path
    three_stacks(Path(root), tmp_path)
    main(["check", "--root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    stacks = {s["kind"]: s for s in doc["software"]["stacks"]}
    assert set(stacks) == {"rocm", "ollama"}  # the venv is not a known place; `targets` takes it
    assert stacks["rocm"]["gpus"][0]["gfx"] == "gfx1103"
    assert stacks["rocm"]["gpus"][0]["status"] == "no-code"
    codes = {f["code"]: f for f in doc["findings"]}
    assert "gfx1103" in codes["userspace-target-unsupported"]["message"]
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in codes["userspace-target-unsupported"]["remedy"]
    wrong = codes["userspace-override-workaround"]
    assert "ollama.service (/etc/systemd/system/ollama.service)" in wrong["message"]


def test_ld_so_conf_through_the_rocm_link_finds_two_releases(tmp_path: Path) -> None:
    from kfdguard.userspace.assess import GpuTarget, assess_software

    root = tmp_path / "root"
    for version in ("5.7.1", "6.2.4"):
        put(root, f"/opt/rocm-{version}/.info/version", f"{version}\n")
        put(root, f"/opt/rocm-{version}/lib/libamdhip64.so.{version[0]}")
        put(root, f"/opt/rocm-{version}/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat")
    os.symlink("/opt/rocm-6.2.4", root / "opt/rocm")
    put(root, "/etc/ld.so.conf.d/10-rocm.conf", "/opt/rocm/lib  # AMD's package\n")
    put(root, "/etc/ld.so.conf.d/20-old.conf", "/opt/rocm-5.7.1/lib\n")
    sw = probe_software(Root(root))
    assert [d for d, _ in sw.ld_paths] == ["/opt/rocm-6.2.4/lib", "/opt/rocm-5.7.1/lib"]
    (mixed,) = [f for f in assess_software(sw, [GpuTarget("0000:03:00.0", "x", "gfx1100")]).findings
                if f.code == "userspace-rocm-mixed"]  # fmt: skip
    assert "/opt/rocm-6.2.4/lib (6.2.4), /opt/rocm-5.7.1/lib (5.7.1)" in mixed.message


def test_configured_units_and_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kfdguard.config import parse_config

    config, errs = parse_config("software:\n  units: [llama-server.service]\n  paths: [/srv/venv]\n", "c.yaml")
    assert errs == []
    assert config.software.units == ("llama-server.service",) and config.software.paths == ("/srv/venv",)
    _, errs = parse_config("software:\n  units: [ollama]\n", "c.yaml")
    assert [str(e) for e in errs] == ["c.yaml:2:11: software.units: 'ollama' is not a service unit name (NAME.service)"]
    root = bundled.render_bundled("rx7900xtx-ubuntu2404", tmp_path / "m").path
    three_stacks(Path(root), tmp_path)
    put(Path(root), "/etc/systemd/system/llama-server.service", "[Service]\nEnvironment=ROCR_VISIBLE_DEVICES=3\n")
    put(Path(root), "/etc/kfdguard/config.yaml",
        "software:\n  units: [ollama.service, llama-server.service]\n  paths: [/home/ada/venv]\n")  # fmt: skip
    main(["check", "--root", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert {s["kind"] for s in doc["software"]["stacks"]} == {"rocm", "ollama", "pytorch"}
    hidden = [f for f in doc["findings"] if f["code"] == "userspace-gpus-hidden"]
    assert len(hidden) == 1 and "llama-server.service" in hidden[0]["message"]


def test_per_node_overrides_are_read_from_units_and_the_caller(tmp_path: Path) -> None:
    root = tmp_path / "root"
    put(root, "/etc/systemd/system/ollama.service",
        "[Service]\nEnvironment=HSA_OVERRIDE_GFX_VERSION_1=11.0.0 HSA_OVERRIDE_GFX_VERSION_2=10.3.0\n"
        "Environment=HSA_OVERRIDE_GFX_VERSION_02=9.0.0 HSA_OVERRIDE_GFX_VERSION_X=1.2.3\n")  # fmt: skip
    caller = {"HSA_OVERRIDE_GFX_VERSION_0": "10.3.0", "HSA_OVERRIDE_GFX_VERSION_+1": "1.0.0", "PATH": "/bin"}
    sw = probe_software(Root(root), caller)
    # libhsakmt builds the name with "%d": a leading zero, a sign or letters are names it never reads.
    assert sorted((e.name, e.value, e.unit) for e in sw.env) == [
        ("HSA_OVERRIDE_GFX_VERSION_0", "10.3.0", None),
        ("HSA_OVERRIDE_GFX_VERSION_1", "11.0.0", "ollama.service"),
        ("HSA_OVERRIDE_GFX_VERSION_2", "10.3.0", "ollama.service"),
    ]
