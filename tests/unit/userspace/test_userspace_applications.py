"""A verdict per application (issue 37): which backend ollama, llama.cpp, PyTorch and ROCm take on each GPU,
on simulated machines with the files as each installs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kfdguard.cli import main
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.userspace.applications import binary_version
from tests.unit.userspace.test_userspace_kpack import pip_rocm, split_library, write_pack
from tests.unit.userspace.test_userspace_vulkan import install

OLLAMA_LIB = "usr/local/lib/ollama"


def ollama(
    root: Path, version: str | None, *, tensile: tuple[str, ...] = ("gfx1030", "gfx1100"), vulkan: bool = True
) -> None:
    """ollama's install script's layout: the binary, libggml-base at the top, a backend a directory."""
    (root / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    # The release build's linker flag as Go records it in the build information (go version -m shows it).
    flags = f'build\t-ldflags="-w -s -X=github.com/ollama/ollama/version.Version={version} -X=..."\n' if version else ""
    (root / "usr/local/bin/ollama").write_bytes(b"\x7fELF" + b"\0" * 4096 + b"\xff Go buildinf:" + flags.encode())
    lib = root / OLLAMA_LIB
    (lib / "rocm/rocblas/library").mkdir(parents=True)
    (lib / "libggml-base.so").write_bytes(b"")
    (lib / "rocm/libggml-hip.so").write_bytes(b"")
    (lib / "rocm/libamdhip64.so.6.3.60303").write_bytes(b"")
    for gfx in tensile:
        (lib / f"rocm/rocblas/library/TensileLibrary_lazy_{gfx}.dat").write_bytes(b"")
    if vulkan:
        (lib / "vulkan").mkdir()
        (lib / "vulkan/libggml-vulkan.so").write_bytes(b"")


def unit(root: Path, *env: str) -> None:
    drop = root / "etc/systemd/system/ollama.service.d"
    drop.mkdir(parents=True, exist_ok=True)
    (drop / "override.conf").write_text("[Service]\n" + "".join(f'Environment="{e}"\n' for e in env))


def check(fresh_machine: Any, capsys: pytest.CaptureFixture[str], builder: MachineBuilder, setup: Any) -> Any:
    from tests.unit.publish.test_schema import errors

    system = fresh_machine(builder.build())
    setup(system.root.path)
    main(["check", "--root", str(system.root.path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert errors("check", doc) == []
    return doc


def apps(doc: Any, kind: str) -> list[dict[str, Any]]:
    return [a for a in doc["software"]["applications"] if a["kind"] == kind]


def phoenix() -> MachineBuilder:
    return MachineBuilder("780m").ubuntu2404().with_gpu(0x15BF, revision=0xC1).with_user("alice", groups=["render"])


# --- ollama ---------------------------------------------------------------------------------------------


def test_the_version_comes_from_the_release_builds_linker_flag(tmp_path: Path) -> None:
    ollama(tmp_path, "0.30.1")
    assert binary_version(str(tmp_path / "usr/local/bin/ollama")) == "0.30.1"
    ollama(tmp_path / "source-build", None)
    assert binary_version(str(tmp_path / "source-build/usr/local/bin/ollama")) is None


def test_780m_with_ollama_0_32_is_dropped_as_an_integrated_gpu_until_allowed(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """ollama 0.30+ takes an integrated GPU on Vulkan only with OLLAMA_IGPU_ENABLE=1 (discover/runner.go)."""

    def setup(root: Path) -> None:
        ollama(root, "0.32.15")
        install(root)

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "ollama")
    assert (verdict["name"], verdict["via"]) == ("ollama 0.32.15", "CPU")
    assert "its bundled rocBLAS has no code for gfx1103" in verdict["detail"]
    assert "ollama drops an integrated GPU unless OLLAMA_IGPU_ENABLE=1 on Vulkan" in verdict["detail"]
    assert verdict["remedy"] == "systemctl edit ollama.service: [Service] Environment=OLLAMA_IGPU_ENABLE=1"
    assert verdict["files"] == ["/usr/local/bin/ollama", "/usr/local/lib/ollama"]

    def allowed(root: Path) -> None:
        setup(root)
        unit(root, "OLLAMA_IGPU_ENABLE=1")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), allowed), "ollama")
    assert verdict["via"] == "Vulkan" and verdict["detail"].startswith("RADV; its bundled rocBLAS has no code")


def test_780m_with_ollama_0_20_needs_the_experimental_switch(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def setup(root: Path) -> None:
        ollama(root, "0.20.0")
        install(root)

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "ollama")
    assert verdict["via"] == "CPU" and "off without OLLAMA_VULKAN=1" in verdict["detail"]
    assert verdict["remedy"].endswith("Environment=OLLAMA_VULKAN=1")

    def switched(root: Path) -> None:
        setup(root)
        unit(root, "OLLAMA_VULKAN=1")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), switched), "ollama")
    assert verdict["via"] == "Vulkan"  # no integrated-GPU filter before 0.30


def test_ollama_takes_rocm_where_its_rocblas_has_the_code(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    navi31 = MachineBuilder("navi31").ubuntu2404().with_gpu(0x744C).with_user("alice", groups=["render"])
    (verdict,) = apps(check(fresh_machine, capsys, navi31, lambda root: ollama(root, "0.32.15")), "ollama")
    assert (verdict["via"], verdict["detail"]) == ("ROCm", "code for gfx1100")


def test_the_override_makes_ollama_take_rocm_and_the_verdict_says_so(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def setup(root: Path) -> None:
        ollama(root, "0.32.15")
        unit(root, "HSA_OVERRIDE_GFX_VERSION=11.0.0", "OLLAMA_IGPU_ENABLE=1")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "ollama")
    assert verdict["via"] == "ROCm" and "nearest gfx1100" in verdict["detail"]


def test_ollama_without_vulkan_in_its_bundle_and_a_version_it_does_not_say(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def setup(root: Path) -> None:
        ollama(root, None, vulkan=False)
        install(root)

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "ollama")
    assert verdict["name"] == "ollama (version unknown)"
    assert verdict["detail"].startswith("the rules of ollama 0.32 (its binary does not say its version); ")
    assert verdict["via"] == "CPU" and "no Vulkan backend in its bundle" in verdict["detail"]


def test_ollama_before_0_12_4_skips_a_small_carve_out_as_an_igpu(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """discover/amd_linux.go at v0.12.3: under 1 GiB of VRAM is an iGPU, skipped whatever the override says."""

    def setup(root: Path) -> None:
        ollama(root, "0.9.6", vulkan=False)
        for ggml in Path(root / OLLAMA_LIB).rglob("libggml-*"):
            ggml.unlink()  # that era's bundle: ROCm libraries, no ggml backend directories
        unit(root, "HSA_OVERRIDE_GFX_VERSION=11.0.0")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "ollama")
    assert (verdict["name"], verdict["via"]) == ("ollama 0.9.6", "CPU")
    assert verdict["detail"].startswith("ollama before 0.12.4 skips a GPU with less than 1 GiB of VRAM (512 MiB)")
    assert verdict["remedy"] == "a UMA frame buffer of 1 GiB or more in the firmware setup, or ollama 0.30 or later"


# --- llama.cpp --------------------------------------------------------------------------------------------


def test_llama_cpp_with_only_its_vulkan_backend(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def setup(root: Path) -> None:
        install(root)
        (root / "usr/local/lib").mkdir(parents=True, exist_ok=True)
        (root / "usr/local/lib/libggml-vulkan.so").write_bytes(b"")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), setup), "llama.cpp")
    assert (verdict["name"], verdict["via"], verdict["detail"]) == (
        "llama.cpp (/usr/local/lib)",
        "Vulkan",
        "RADV; no HIP backend",
    )

    def no_radv(root: Path) -> None:
        setup(root)
        (root / "usr/share/vulkan/icd.d/radeon_icd.json").unlink()

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), no_radv), "llama.cpp")
    assert verdict["via"] == "CPU" and "mesa-vulkan-drivers" in verdict["remedy"]


# --- TheRock: pip ROCm, and a tarball with kernel packs ---------------------------------------------------


def strix_halo() -> MachineBuilder:
    return MachineBuilder("strix-halo").ubuntu2404("6.14.0-29-generic").with_gpu(0x1586, revision=0xC1)


def test_gfx1151_with_pip_rocm_lacking_its_device_package(
    fresh_machine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    (verdict,) = apps(
        check(fresh_machine, capsys, strix_halo(), lambda root: pip_rocm(root, {"gfx1100": ["gfx1100"]})), "therock"
    )
    assert (verdict["name"], verdict["via"]) == ("ROCm 7.9.0 (TheRock, pip)", "CPU")
    assert verdict["remedy"] == 'pip install "rocm[device-gfx1151]" (rocm-sdk-device-gfx1151)'
    (verdict,) = apps(
        check(fresh_machine, capsys, strix_halo(), lambda root: pip_rocm(root, {"gfx1151": ["gfx1151"]})), "therock"
    )
    assert verdict["via"] == "ROCm"


def test_a_kpack_tarball_that_carries_the_gpus_family(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A TheRock family tarball in /opt: librocblas split out, its code in the gfx110X family's pack."""
    family = ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]

    def tarball(root: Path) -> None:
        top = root / "opt/rocm-7.10.0"
        (top / ".info").mkdir(parents=True)
        (top / ".info/version").write_text("7.10.0\n")
        ref = {"kernel_name": "lib/librocblas.so.5", "kpack_search_paths": [".kpack/rocm-gfx110X.kpack"]}
        split_library(top / "lib", "librocblas.so.5", ref)
        kernels = [(f"lib/librocblas.so.5#{i}", gfx, b"code") for i, gfx in enumerate(family)]
        write_pack(top / "lib/.kpack/rocm-gfx110X.kpack", family, kernels, family="gfx110X")

    (verdict,) = apps(check(fresh_machine, capsys, phoenix(), tarball), "rocm")
    assert (verdict["name"], verdict["via"], verdict["detail"]) == ("ROCm 7.10.0", "ROCm", "code for gfx1103")
    assert verdict["files"] == ["/opt/rocm-7.10.0"]


def test_a_llama_cpp_directory_takes_only_its_own_hip_library() -> None:
    """/usr/lib's llama.cpp is not the one in /usr/lib/x86_64-linux-gnu, though one path starts the other."""
    from kfdguard.facts import Application, SoftwareFacts, Stack
    from kfdguard.userspace.application_rules import GpuInfo, application_verdicts
    from kfdguard.userspace.rows import Row

    multiarch = Stack("llama.cpp", "llama.cpp (libggml-hip.so)", "/usr/lib/x86_64-linux-gnu/libggml-hip.so", None, ())
    software = SoftwareFacts(
        stacks=(multiarch,),
        applications=(
            Application("llama.cpp", "llama.cpp (/usr/lib)", None, "/usr/lib", ("vulkan",), ("/usr/lib/libggml-vulkan.so",)),
            Application("llama.cpp", "llama.cpp (/usr/lib/x86_64-linux-gnu)", None, "/usr/lib/x86_64-linux-gnu", ("hip",),
                        ("/usr/lib/x86_64-linux-gnu/libggml-hip.so",)),
        ),
    )  # fmt: skip
    rows = [Row(multiarch.name, "0000:03:00.0", "gfx1100", "runs", "code for gfx1100")]
    gpu = GpuInfo("0000:03:00.0", "RX 7900 XTX", "gfx1100", False)
    usr_lib, multi = application_verdicts(software, [gpu], rows, [])
    assert (usr_lib.via, usr_lib.detail) == ("CPU", "Vulkan is not ready: the Vulkan drivers were not read")
    assert (multi.via, multi.detail) == ("ROCm", "code for gfx1100")
