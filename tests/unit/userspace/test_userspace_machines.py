"""Simulated machines with software (tests/data/userspace/machines): kfdguard check --json, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kfdguard.cli import main
from kfdguard.simulate.render import render
from kfdguard.simulate.spec import spec_from_dict
from tests.paths import TESTS

MACHINES = TESTS / "data/userspace/machines"


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> dict[str, object]:
    spec = spec_from_dict(name, yaml.safe_load((MACHINES / f"{name}.yaml").read_text()))
    root = render(spec, tmp_path / name)
    main(["check", "--root", str(root.path), "--json"])
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def findings(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    return {str(f["code"]): f for f in doc["findings"]}  # type: ignore[attr-defined]


def test_rx7900xtx_with_debians_rocblas_is_covered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = check(tmp_path, capsys, "rx7900xtx-debian13-rocblas")
    assert doc["state"] == "ready"
    (stack,) = doc["software"]["stacks"]  # type: ignore[index]
    assert stack["name"] == "Debian rocBLAS 5.5.1+dfsg-7"
    assert stack["hip_runtime"] == "libamdhip64.so.5.7.31921"
    index = json.loads((MACHINES.parent / "trixie-rocm.json").read_text())
    library = "/usr/lib/x86_64-linux-gnu/rocblas/2.47.0/library"
    assert stack["targets"] == index["components"][library]  # the names the real package carries
    assert stack["gpus"] == [{"slot": "0000:03:00.0", "gfx": "gfx1100", "status": "runs", "detail": "code for gfx1100"}]
    assert "gfx1100" in str(findings(doc)["userspace-targets-covered"]["message"])


def test_780m_names_the_stack_without_code_and_the_workaround(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = check(tmp_path, capsys, "780m-ollama")
    f = findings(doc)["userspace-override-workaround"]
    assert "ollama (bundled ROCm) has no code for gfx1103 (AMD Radeon 780M Graphics)" in str(f["message"])
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 in the ollama.service (/etc/systemd/system/ollama.service)" in str(
        f["message"]
    )
    assert "AMDGPU_TARGETS=gfx1103" in str(f["remedy"])
    (stack,) = doc["software"]["stacks"]  # type: ignore[index]
    assert stack["gpus"][0]["status"] == "override"


def test_wrong_override_in_ollama_service_names_unit_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = check(tmp_path, capsys, "rx6800-ollama-wrong-override")
    # ollama has gfx1030 code, but the override makes ROCm report the card as gfx1100 and load gfx1100's:
    # wrong (another instruction set), not merely unneeded.
    f = findings(doc)["userspace-override-wrong"]
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 in the ollama.service (/etc/systemd/system/ollama.service)" in str(
        f["message"]
    )
    assert "code built for gfx1100 on gfx1030" in str(f["message"]) and "another instruction set" in str(f["message"])
    assert f["severity"] == "error"
    assert (
        f["remedy"]
        == "remove HSA_OVERRIDE_GFX_VERSION=11.0.0 from the ollama.service (/etc/systemd/system/ollama.service)"
    )
    assert "userspace-override-unneeded" not in findings(doc)
