"""Vulkan readiness: the loader's driver manifests as Debian 13 installs them, each GPU's verdict, hostile
manifests, the snapshot record, and the advice for a GPU ROCm has no code for."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kfdguard.cli import main
from kfdguard.facts import VulkanFacts
from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.probe.reader import Reader
from kfdguard.record import replace
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.userspace.probe import probe_software
from kfdguard.userspace.record import software_from_record, software_record
from kfdguard.userspace.vulkan import MAX_MANIFESTS, probe_vulkan
from kfdguard.userspace.vulkan_rules import vulkan_gpus
from tests.paths import TESTS, TOP

DATA = TESTS / "data" / "vulkan" / "trixie"
MULTIARCH = "usr/lib/x86_64-linux-gnu"
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")


def install(root: Path, *, radv: bool = True, lavapipe: bool = True, loader: bool = True, libs: bool = True) -> None:
    """Debian 13's mesa-vulkan-drivers and libvulkan1, as far as the probe looks: the manifests as the package
    has them, the libraries as (empty) files where the package puts them."""
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True, exist_ok=True)
    (root / MULTIARCH).mkdir(parents=True, exist_ok=True)
    for wanted, name, lib in (
        (radv, "radeon_icd.json", "libvulkan_radeon.so"),
        (lavapipe, "lvp_icd.json", "libvulkan_lvp.so"),
    ):
        if wanted:
            (icd / name).write_bytes((DATA / name).read_bytes())
            if libs:
                (root / MULTIARCH / lib).write_bytes(b"")
    if loader:
        (root / MULTIARCH / "libvulkan.so.1").write_bytes(b"")


def machine(fresh_machine: Any, builder: MachineBuilder, **kinds: bool) -> Any:
    system = fresh_machine(builder.build())
    install(system.root.path, **kinds)
    return system


def facts_of(system: Any) -> Any:
    facts = probe(system, log="never")
    return replace(facts, software=probe_software(system.root, None))


def navi31() -> MachineBuilder:
    return MachineBuilder("navi31").ubuntu2404().with_gpu(0x744C).with_user("alice", groups=["render"])


# --- the probe ----------------------------------------------------------------------------------------


def test_debians_manifests_name_radv_and_lavapipe(fresh_machine: Any) -> None:
    system = machine(fresh_machine, navi31())
    vulkan = probe_software(system.root, None).vulkan
    assert vulkan.read and vulkan.loader == "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"
    by_driver = {i.driver: i for i in vulkan.icds}
    radv = by_driver["RADV"]
    assert radv.manifest == "/usr/share/vulkan/icd.d/radeon_icd.json" and radv.library_path == "libvulkan_radeon.so"
    assert (radv.library, radv.api_version, radv.error) == (
        "/usr/lib/x86_64-linux-gnu/libvulkan_radeon.so",
        "1.4.305",
        None,
    )
    assert by_driver["lavapipe"].library == "/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"


def test_relative_and_absolute_library_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc/vulkan/icd.d").mkdir(parents=True)
    (root / "opt/amdvlk/lib").mkdir(parents=True)
    (root / "opt/amdvlk/lib/amdvlk64.so").write_bytes(b"")
    manifest = {"file_format_version": "1.0.0", "ICD": {"library_path": "../../../opt/amdvlk/lib/amdvlk64.so"}}
    (root / "etc/vulkan/icd.d/amd_icd64.json").write_text(json.dumps(manifest))
    absolute = {"ICD": {"library_path": "/opt/amdvlk/lib/amdvlk64.so", "api_version": "1.3.280"}}
    (root / "etc/vulkan/icd.d/amd_abs.json").write_text(json.dumps(absolute))
    r = Root(root)
    vulkan = probe_vulkan(r, Reader(r), LIB_DIRS)
    assert [(i.driver, i.library) for i in vulkan.icds] == [("AMDVLK", "/opt/amdvlk/lib/amdvlk64.so")] * 2
    assert vulkan.loader is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not JSON"),
        ("[" * 20000 + "]" * 20000, "not JSON"),
        ("[]", 'no "ICD" object'),
        ('{"ICD": []}', 'no "ICD" object'),
        ('{"ICD": {"api_version": "1.3"}}', 'no "library_path" string'),
        ('{"ICD": {"library_path": "lib\\u0000x.so"}}', 'no "library_path" string'),
        ('{"ICD": {"library_path": 7}}', 'no "library_path" string'),
    ],
)
def test_a_broken_manifest_is_kept_with_why(tmp_path: Path, text: str, why: str) -> None:
    root = tmp_path / "root"
    (root / "usr/share/vulkan/icd.d").mkdir(parents=True)
    (root / "usr/share/vulkan/icd.d/bad.json").write_text(text)
    r = Root(root)
    (icd,) = probe_vulkan(r, Reader(r), LIB_DIRS).icds
    assert (icd.library, icd.driver) == (None, "?") and why in (icd.error or "")


def test_manifests_are_bounded(tmp_path: Path) -> None:
    root = tmp_path / "root"
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    for n in range(MAX_MANIFESTS + 40):
        (icd / f"m{n:03}.json").write_text('{"ICD": {"library_path": "libvulkan_radeon.so"}}')
    (icd / "huge.json").write_text('{"ICD": {"library_path": "x.so"}, "pad": "' + "x" * (1 << 20) + '"}')
    r = Root(root)
    assert len(probe_vulkan(r, Reader(r), LIB_DIRS).icds) == MAX_MANIFESTS


# --- the verdict of each GPU --------------------------------------------------------------------------


def verdict(facts: Any, gfx: str | None = "gfx1100") -> Any:
    (gpu,) = vulkan_gpus(facts, {g.slot: gfx for g in facts.amd_gpus})
    return gpu


def test_radv_with_the_loader_and_an_amdgpu_card_is_ready(fresh_machine: Any) -> None:
    gpu = verdict(facts_of(machine(fresh_machine, navi31().with_user("bob", groups=[]))))
    assert (gpu.ready, gpu.driver, gpu.remedy) == (True, "RADV", "")
    assert "radeon_icd.json → /usr/lib/x86_64-linux-gnu/libvulkan_radeon.so" in gpu.detail
    assert gpu.denied == ("bob",)  # not in render: the render node is crw-rw---- root:render


@pytest.mark.parametrize(
    ("kinds", "why", "remedy"),
    [
        (
            {"radv": False},
            "no Vulkan driver for AMD GPUs is installed (lavapipe is, but it runs on the CPU)",
            "mesa-vulkan-drivers",
        ),
        ({"radv": False, "lavapipe": False}, "no Vulkan driver for AMD GPUs is installed", "mesa-vulkan-drivers"),
        ({"libs": False}, "radeon_icd.json names libvulkan_radeon.so, which is not installed", "mesa-vulkan-drivers"),
        ({"loader": False}, "is installed but not libvulkan.so.1", "libvulkan1"),
    ],
)
def test_what_is_missing_is_named(fresh_machine: Any, kinds: dict[str, bool], why: str, remedy: str) -> None:
    gpu = verdict(facts_of(machine(fresh_machine, navi31(), **kinds)))
    assert not gpu.ready and why in gpu.detail and remedy in gpu.remedy


def test_radv_needs_amdgpu_and_graphics(fresh_machine: Any) -> None:
    facts = facts_of(machine(fresh_machine, navi31()))
    on_radeon = replace(facts, gpus=tuple(replace(g, driver="radeon") for g in facts.gpus))
    gpu = verdict(on_radeon)
    assert not gpu.ready and gpu.detail == "the radeon driver drives it; RADV needs amdgpu"
    assert "amdgpu.si_support=1 radeon.si_support=0" in gpu.remedy
    mi210 = verdict(facts, "gfx90a")
    assert not mi210.ready and mi210.detail == "gfx90a has no graphics pipeline: no Vulkan driver runs it"
    assert mi210.remedy == ""
    no_node = verdict(replace(facts, gpus=tuple(replace(g, render_minor=None) for g in facts.gpus)))
    assert not no_node.ready and no_node.detail == "its render node is missing"


def test_nothing_is_said_when_the_drivers_were_not_read(fresh_machine: Any) -> None:
    facts = facts_of(machine(fresh_machine, navi31()))
    unread = replace(facts, software=replace(facts.software, vulkan=VulkanFacts()))
    assert vulkan_gpus(unread, {}) == ()


# --- check: the verdict beside the stacks, and the advice --------------------------------------------


def check(system: Any, capsys: pytest.CaptureFixture[str]) -> Any:
    main(["check", "--root", str(system.root.path), "--json"])
    return json.loads(capsys.readouterr().out)


def phoenix_with_ollama() -> MachineBuilder:
    """The 780M (gfx1103) with ollama's bundled ROCm, whose rocBLAS has no gfx1103 (as in 780m-ollama)."""
    builder = MachineBuilder("780m").ubuntu2404().with_gpu(0x15BF, revision=0xC1).with_user("alice", groups=["render"])
    for gfx in ("gfx1030", "gfx1100", "gfx1101", "gfx1102"):
        builder = builder.with_file(f"/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_{gfx}.dat", "")
    return builder.with_file("/usr/lib/ollama/rocm/libamdhip64.so.6.3.60303", "")


def test_a_gpu_rocm_cannot_run_gets_vulkan_as_the_way(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.publish.test_schema import errors

    doc = check(machine(fresh_machine, phoenix_with_ollama()), capsys)
    assert errors("check", doc) == []
    (gpu,) = doc["software"]["vulkan"]["gpus"]
    assert (gpu["ready"], gpu["driver"], gpu["users_denied"]) == (True, "RADV", [])
    (finding,) = [f for f in doc["findings"] if f["code"] == "userspace-vulkan-ready"]
    assert "no installed ROCm stack runs gfx1103" in finding["message"] and "Vulkan does (RADV)" in finding["message"]
    assert "-DGGML_VULKAN=ON" in finding["remedy"]


def test_without_radv_the_advice_is_the_package(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    doc = check(machine(fresh_machine, phoenix_with_ollama(), radv=False), capsys)
    (finding,) = [f for f in doc["findings"] if f["code"] == "userspace-vulkan-not-ready"]
    assert "Vulkan cannot either" in finding["message"] and "mesa-vulkan-drivers" in finding["remedy"]


def test_a_gpu_rocm_runs_gets_no_vulkan_advice(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    builder = navi31().with_file("/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1100.dat", "")
    doc = check(machine(fresh_machine, builder.with_file("/usr/lib/ollama/rocm/libamdhip64.so.6.3.60303", "")), capsys)
    assert doc["software"]["vulkan"]["gpus"][0]["ready"] is True
    assert not [f for f in doc["findings"] if f["code"].startswith("userspace-vulkan")]


def test_check_text_says_it(fresh_machine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    system = machine(fresh_machine, navi31())
    main(["check", "--root", str(system.root.path)])
    out = capsys.readouterr().out
    assert "Vulkan   0000:03:00.0: ready (RADV): RADV (/usr/share/vulkan/icd.d/radeon_icd.json" in out


# --- the snapshot record ---------------------------------------------------------------------------------


def test_the_record_keeps_the_vulkan_drivers(fresh_machine: Any) -> None:
    software = probe_software(machine(fresh_machine, navi31()).root, None)
    back = software_from_record(json.loads(json.dumps(software_record(software))))
    assert back.vulkan == software.vulkan and back.vulkan.read
    old = software_record(software)
    del old["vulkan"]
    assert software_from_record(old).vulkan == VulkanFacts()  # a record from before: not read, not "none"
    bad = software_record(software)
    bad["vulkan"]["icds"] = [{"manifest": 1}]  # type: ignore[index]
    with pytest.raises(ValueError, match=r"vulkan.icds\[0\].manifest"):
        software_from_record(bad)


# --- Debian's real packages ------------------------------------------------------------------------------


FETCH = TOP / "tools/testdata/fetch-rocm-debs"
CACHE = Path(os.environ.get("KFDGUARD_TESTDATA", "/var/cache/kfdguard-testdata"))


@pytest.fixture(scope="module")
def vulkan_debs() -> list[Path]:
    env = {**os.environ, "KFDGUARD_ROCM_PACKAGES": "mesa-vulkan-drivers libvulkan1"}
    try:
        run = subprocess.run(
            [str(FETCH), str(CACHE)], check=False, capture_output=True, text=True, timeout=900, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the Debian archive did not answer within 15 minutes (tools/testdata/fetch-rocm-debs)")
    if run.returncode != 0:
        pytest.skip(f"Debian's Vulkan packages could not be fetched: {run.stderr.strip()[-300:]}")
    return [Path(line) for line in run.stdout.split()]


def test_debians_real_packages_make_a_gpu_vulkan_ready(
    fresh_machine: Any, vulkan_debs: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    system = fresh_machine(navi31().build())
    for deb in vulkan_debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(system.root.path)], check=True, timeout=300)
    for name in ("radeon_icd.json", "lvp_icd.json"):  # the copies in the tree are still the package's
        assert (system.root.path / "usr/share/vulkan/icd.d" / name).read_bytes() == (DATA / name).read_bytes()
    doc = check(system, capsys)
    vulkan = doc["software"]["vulkan"]
    assert vulkan["loader"] == "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"
    assert {d["driver"] for d in vulkan["drivers"] if d["library"]} >= {"RADV", "lavapipe"}
    assert [(g["ready"], g["driver"]) for g in vulkan["gpus"]] == [(True, "RADV")]
