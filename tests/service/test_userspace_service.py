"""The service publishes the software inventory after READY: the Software property and GetStatus."""

from __future__ import annotations

import os
import time

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


@pytest.mark.parametrize("backend", ["fast", "next"])
def test_software_property_after_ready(backend: str) -> None:
    spec = spec_from_dict("780m-ollama", yaml.safe_load((MACHINES / "780m-ollama.yaml").read_text()))
    with guardian(spec, backend=backend, enforce=False) as g:
        deadline = time.monotonic() + 20
        status = py_call("GetStatus", g.address)[0]
        while not status["Software"] and time.monotonic() < deadline:
            time.sleep(0.1)
            status = py_call("GetStatus", g.address)[0]
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
