"""The service publishes the software inventory after READY: the Software property and GetStatus."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kfdguard.publish.client import call as py_call
from kfdguard.simulate.spec import spec_from_dict
from tests.paths import TESTS
from tests.servicekit import NAME, PATH, busctl, guardian

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root may own the name on a system-like bus (CI runs as root)"
)
MACHINES = TESTS / "data/userspace/machines"


def _status_with(address: str, key: str, timeout: float = 20) -> dict[str, Any]:
    """GetStatus once ``key`` is filled: the inventory is taken by the first check after READY, not before."""
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = py_call("GetStatus", address)[0]
    while not status[key] and time.monotonic() < deadline:
        time.sleep(0.1)
        status = py_call("GetStatus", address)[0]
    return status


@pytest.mark.parametrize("backend", ["fast", "next"])
def test_software_property_after_ready(backend: str) -> None:
    spec = spec_from_dict("780m-ollama", yaml.safe_load((MACHINES / "780m-ollama.yaml").read_text()))
    with guardian(spec, backend=backend, enforce=False) as g:
        status = _status_with(g.address, "Software")
        ((name, kind, path, targets, verdicts),) = status["Software"]
        assert (name, kind, path) == ("ollama (bundled ROCm)", "ollama", "/usr/lib/ollama")
        assert "gfx1100" in targets and "gfx1103" not in targets
        assert verdicts == ["0000:c4:00.0 gfx1103 override: no code for gfx1103 (nearest gfx1100)"]
        codes = [f[0] for f in status["Findings"]]
        assert "userspace-override-workaround" in codes and "userspace-target-unsupported" not in codes
        out = busctl("get-property", NAME, PATH, NAME, "Software", env=g.env()).stdout
        assert out.startswith("a(sssasas) 1 ") and "ollama (bundled ROCm)" in out
        # The application's own verdict (issue 37): no binary says this ollama's version, and its bundle has no
        # ggml backend directories: ollama before 0.12.4, whose discovery skipped a GPU with under 1 GiB of VRAM
        # (discover/amd_linux.go) whatever the override; the 780M's carve-out is 512 MiB.
        ((app, kind, slot, via, detail, remedy),) = status["Applications"]
        assert (app, kind, slot, via) == ("ollama (version unknown)", "ollama", "0000:c4:00.0", "CPU")
        assert detail == (
            "the rules of ollama before 0.12.4 (its binary does not say its version); "
            "ollama before 0.12.4 skips a GPU with less than 1 GiB of VRAM (512 MiB) as an iGPU; "
            "no Vulkan backend in its bundle"
        )
        assert remedy == "a UMA frame buffer of 1 GiB or more in the firmware setup, or ollama 0.30 or later"
        out = busctl("get-property", NAME, PATH, NAME, "Applications", env=g.env()).stdout
        assert out.startswith("a(ssssss) 1 ") and '"CPU"' in out


def _phoenix_ollama_vulkan(root: Path) -> None:
    from tests.unit.userspace.test_userspace_applications import ollama, unit
    from tests.unit.userspace.test_userspace_vulkan import install

    ollama(root, "0.32.15")
    install(root)
    unit(root, "OLLAMA_IGPU_ENABLE=1")


def _strix_halo_pip(root: Path) -> None:
    from tests.unit.userspace.test_userspace_kpack import pip_rocm

    pip_rocm(root, {"gfx1100": ["gfx1100"]})


def _phoenix_tarball(root: Path) -> None:
    from tests.unit.userspace.test_userspace_kpack import split_library, write_pack

    family = ["gfx1100", "gfx1101", "gfx1102", "gfx1103"]
    top = root / "opt/rocm-7.10.0"
    (top / ".info").mkdir(parents=True)
    (top / ".info/version").write_text("7.10.0\n")
    split_library(top / "lib", "librocblas.so.5", {"kernel_name": "lib/librocblas.so.5",
                                                    "kpack_search_paths": [".kpack/rocm-gfx110X.kpack"]})  # fmt: skip
    write_pack(top / "lib/.kpack/rocm-gfx110X.kpack", family,
               [(f"lib/librocblas.so.5#{i}", g, b"code") for i, g in enumerate(family)], family="gfx110X")  # fmt: skip


CASES = {
    # issue 37's three machines, each with the one application row the bus must carry
    "gfx1103-ollama-vulkan": (
        0x15BF,
        "6.8.0-45-generic",
        _phoenix_ollama_vulkan,
        ("ollama 0.32.15", "ollama", "Vulkan"),
    ),
    "gfx1151-pip-rocm": (0x1586, "6.14.0-29-generic", _strix_halo_pip, ("ROCm 7.9.0 (TheRock, pip)", "therock", "CPU")),
    "gfx1103-kpack-tarball": (0x15BF, "6.8.0-45-generic", _phoenix_tarball, ("ROCm 7.10.0", "rocm", "ROCm")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_applications_property_per_case(case: str) -> None:
    from kfdguard.simulate.builder import MachineBuilder

    device, release, prepare, (name, kind, via) = CASES[case]
    spec = MachineBuilder(case).ubuntu2404(release).with_gpu(device, revision=0xC1).build()
    with guardian(spec, enforce=False, prepare=prepare) as g:
        status = _status_with(g.address, "Applications")
        rows = [r for r in status["Applications"] if r[1] == kind]
        assert [(r[0], r[1], r[3]) for r in rows] == [(name, kind, via)], status["Applications"]
        if via == "CPU":
            assert rows[0][5] == 'pip install "rocm[device-gfx1151]" (rocm-sdk-device-gfx1151)'
        out = busctl("get-property", NAME, PATH, NAME, "Applications", env=g.env()).stdout
        assert out.startswith("a(ssssss) ") and f'"{via}"' in out
