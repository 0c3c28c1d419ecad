"""CDI specs for AMD GPUs: read from the machine, compared with its device nodes, stale ones reported.

The specs here have the shape AMD's container toolkit writes (ROCm/container-toolkit
internal/cdi/cdi.go, through tags.cncf.io/container-device-interface/specs-go): kind
amd.com/gpu, one device per GPU with its card and render node plus /dev/kfd, a device
"all", each node with type "c", major, minor, fileMode, permissions "rwm", uid 0 and gid.
They are built from the simulated machine's own nodes, then changed the way a kernel
update (KFD's dynamic major), a moved GPU or a changed render group changes the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kfdguard.assess import assess
from kfdguard.facts import Facts
from kfdguard.fleet.cdi import check
from kfdguard.probe import probe
from kfdguard.probe.cdi import parse_spec
from kfdguard.simulate import bundled
from kfdguard.simulate.system import SimulatedSystem
from tests.paths import TOP

Make = Callable[[str], SimulatedSystem]
MACHINE = "dgpu-plus-igpu-atomics"

# The CDI project's own JSON schema, as Debian ships it in its Go source package (bookworm: 0.5.2).
CDI_PACKAGE = "golang-github-container-orchestrated-devices-container-device-interface-dev"
CDI_SCHEMA_DIR = "usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or "/var/cache/kfdguard-testdata") / "cdi-schema"


def _cdi_schema_dir() -> Path | None:
    """The installed package's schema, else a copy unpacked from Debian's archive into the cache (outside the tree)."""
    installed = Path("/") / CDI_SCHEMA_DIR
    if (installed / "schema.json").is_file():
        return installed
    cached = CACHE / CDI_SCHEMA_DIR
    if (cached / "schema.json").is_file():
        return cached
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    # apt-get download takes the mirror from the system's apt sources; nothing is installed.
    got = subprocess.run(["apt-get", "download", CDI_PACKAGE], cwd=CACHE, capture_output=True, timeout=120,
                         check=False)  # fmt: skip
    debs = sorted(CACHE.glob(f"{CDI_PACKAGE}_*.deb"))
    if got.returncode != 0 or not debs:
        return None
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(CACHE)], timeout=60, check=True)
    return cached if (cached / "schema.json").is_file() else None


def cdi_validator() -> Any:
    from jsonschema import Draft7Validator

    directory = _cdi_schema_dir()
    if directory is None:
        pytest.skip(f"the CDI schema ({CDI_PACKAGE}) is neither installed nor downloadable from Debian's archive")
    schema = json.loads((directory / "schema.json").read_text())
    defs = json.loads((directory / "defs.json").read_text())
    # schema.json refers to defs.json#/definitions/...: one document, so that any jsonschema version resolves it.
    text = json.dumps(schema).replace('"defs.json#/definitions/', '"#/definitions/')
    merged = json.loads(text) | {"definitions": defs["definitions"]}
    assert merged["$schema"] == "http://json-schema.org/draft-07/schema#"
    Draft7Validator.check_schema(merged)
    return Draft7Validator(merged)


def _node(path: str, major: int, minor: int, mode: int, gid: int) -> dict[str, Any]:
    return {"path": path, "type": "c", "major": major, "minor": minor, "fileMode": mode, "permissions": "rwm",
            "uid": 0, "gid": gid}  # fmt: skip


def amd_ctk_spec(facts: Facts) -> dict[str, Any]:
    """What amd-ctk cdi generate writes for this machine's current nodes."""
    kfd = facts.kfd.node.stat
    assert kfd is not None
    kfd_node = _node("/dev/kfd", kfd.major, kfd.minor, kfd.mode, kfd.gid)
    devices: list[dict[str, Any]] = []
    every: list[dict[str, Any]] = []
    for index, gpu in enumerate(g for g in facts.amd_gpus if g.render_node):
        assert gpu.render_node is not None
        st = facts.render_nodes[gpu.render_node].stat
        assert st is not None
        nodes = [_node(f"/dev/dri/{gpu.card}", 226, index, 0o660, 44),
                 _node(f"/dev/dri/{gpu.render_node}", st.major, st.minor, st.mode, st.gid)]  # fmt: skip
        every.extend(nodes)
        devices.append({"name": str(index), "containerEdits": {"deviceNodes": [*nodes, kfd_node]}})
    devices.append({"name": "all", "containerEdits": {"deviceNodes": [*every, kfd_node]}})
    return {"cdiVersion": "0.6.0", "kind": "amd.com/gpu", "devices": devices}


def install(system: SimulatedSystem, spec: object, where: str = "etc/cdi/amd.json") -> Path:
    path = system.root.path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return Path(path)


def findings(system: SimulatedSystem, code: str = "cdi-spec-stale") -> list[tuple[str, ...]]:
    verdict = assess(probe(system))
    return [f.evidence for f in verdict.findings if f.code == code]


def test_the_specs_here_are_valid_cdi_specs(fresh_machine: Make) -> None:
    """The fixtures have the real format: the CDI project's schema accepts them and refuses a broken one."""
    validator = cdi_validator()
    spec = amd_ctk_spec(probe(fresh_machine(MACHINE)))
    assert [e.message for e in validator.iter_errors(spec)] == []
    assert not validator.is_valid({"kind": "amd.com/gpu", "devices": []})  # no cdiVersion
    assert not validator.is_valid(spec | {"devices": [{"name": "0", "containerEdits": {"deviceNodes": [{}]}}]})


def test_a_spec_that_matches_gives_no_finding(fresh_machine: Make) -> None:
    system = fresh_machine(MACHINE)
    facts = probe(system)
    install(system, amd_ctk_spec(facts))
    again = probe(system)
    assert len(again.cdi) == 1 and again.cdi[0].path == "/etc/cdi/amd.json" and again.cdi[0].kind == "amd.com/gpu"
    assert check(again, again.cdi) == []
    assert findings(system) == []


def test_a_kfd_major_from_an_older_kernel_makes_it_stale(fresh_machine: Make) -> None:
    system = fresh_machine(MACHINE)
    spec = amd_ctk_spec(probe(system))
    for device in spec["devices"]:
        for node in device["containerEdits"]["deviceNodes"]:
            if node["path"] == "/dev/kfd":
                node["major"] = 234
    install(system, spec, "var/run/cdi/amd.json")
    (evidence,) = findings(system)
    assert evidence == ("/var/run/cdi/amd.json: /dev/kfd: spec says 234:0, the node is 240:0",)
    verdict = assess(probe(system))
    stale = next(f for f in verdict.findings if f.code == "cdi-spec-stale")
    assert stale.remedy == "regenerate it: sudo amd-ctk cdi generate --output=/var/run/cdi/amd.json"
    assert str(verdict.state) == "degraded"  # as before: a warning does not change the state


def test_a_changed_render_gid_and_a_moved_gpu_are_both_named(fresh_machine: Make) -> None:
    system = fresh_machine(MACHINE)
    spec = amd_ctk_spec(probe(system))
    for device in spec["devices"]:
        for node in device["containerEdits"]["deviceNodes"]:
            if node["path"] == "/dev/dri/renderD128":
                node["gid"] = 109  # render's gid on the machine the spec was written on
            if node["path"] == "/dev/dri/renderD130":
                node["path"] = "/dev/dri/renderD131"
    install(system, spec)
    (evidence,) = findings(system)
    assert "/etc/cdi/amd.json: /dev/dri/renderD128: spec gives gid 109, the node's group is render (992)" in evidence
    assert "/etc/cdi/amd.json: /dev/dri/renderD131: no AMD GPU has this render node now" in evidence
    assert "/etc/cdi/amd.json: has no /dev/dri/renderD130: containers cannot use that GPU through it" in evidence


def test_a_kernel_without_kfd_makes_it_stale(fresh_machine: Make) -> None:
    # The spec written while KFD was up; the machine now boots a kernel without CONFIG_HSA_AMD.
    spec = amd_ctk_spec(probe(fresh_machine(MACHINE)))
    system = fresh_machine("no-hsa-amd")
    assert probe(system).kfd.node.stat is None
    install(system, spec)
    (evidence,) = findings(system)
    assert "/etc/cdi/amd.json: /dev/kfd: does not exist now" in evidence


def test_other_vendors_specs_are_not_ours(fresh_machine: Make) -> None:
    system = fresh_machine(MACHINE)
    spec = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [
        {"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/kfd", "major": 1, "minor": 1}]}}]}  # fmt: skip
    install(system, spec, "etc/cdi/amd-but-not.json")
    install(system, spec, "etc/cdi/nvidia.json")
    assert findings(system) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not JSON"),
        ("[1, 2]", "the top level is not an object"),
        ('{"kind": 1}', "no 'kind' and 'cdiVersion' strings"),
        ('{"kind": "amd.com/gpu", "cdiVersion": "0.6.0", "devices": {}}', "'devices' is not a list"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
        ("\udcff", "not JSON"),
    ],
)
def test_a_broken_spec_is_a_finding_with_its_reason(fresh_machine: Make, text: str, problem: str) -> None:
    system = fresh_machine(MACHINE)
    path = system.root.path / "etc/cdi/amd.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    (evidence,) = findings(system, "cdi-spec-unusable")
    assert evidence[0].startswith("/etc/cdi/amd.json: ") and problem in evidence[0]


def test_hostile_values_inside_a_spec_are_ignored_not_trusted() -> None:
    spec = parse_spec("/etc/cdi/amd.json", json.dumps({
        "cdiVersion": "0.6.0", "kind": "amd.com/gpu", "devices": [
            "not a device", {"name": 5}, {"name": "0", "containerEdits": []},
            {"name": "1", "containerEdits": {"deviceNodes": [
                {"path": "/dev/kfd", "major": True, "minor": -1, "gid": "992", "fileMode": 2**40},
                {"nopath": 1}, 7]}}]}).encode())  # fmt: skip
    assert spec.problem is None
    (node,) = spec.nodes
    assert (node.major, node.minor, node.gid, node.mode) == (None, None, None, None)


def test_a_fifo_in_place_of_a_spec_cannot_hang_the_probe(fresh_machine: Make) -> None:
    system = fresh_machine(MACHINE)
    (system.root.path / "etc/cdi").mkdir(parents=True)
    os.mkfifo(system.root.path / "etc/cdi/amd.json")
    facts = probe(system)
    assert facts.cdi == ()
    assert any(p.path == "/etc/cdi/amd.json" and "not a regular file" in p.reason for p in facts.problems)


def test_no_spec_no_finding(machine_facts: dict[str, Facts]) -> None:
    for facts in machine_facts.values():
        assert facts.cdi == ()
        assert check(facts, facts.cdi) == []


# --- kfdguard's own spec ------------------------------------------------------------------------

REPO_SCHEMA = TOP / "schema/cdi"


def committed_cdi_validator() -> Any:
    """The CDI schema committed in schema/cdi (the project's current one, see its README), as one document."""
    from jsonschema import Draft7Validator

    schema = json.loads((REPO_SCHEMA / "schema.json").read_text())
    defs = json.loads((REPO_SCHEMA / "defs.json").read_text())
    text = json.dumps(schema).replace('"defs.json#/definitions/', '"#/definitions/')
    merged = json.loads(text) | {"definitions": defs["definitions"]}
    Draft7Validator.check_schema(merged)
    return Draft7Validator(merged)


def _own(name: str, fresh_machine: Make) -> tuple[Facts, dict[str, Any] | None]:
    from kfdguard.fleet.cdi import render_spec

    system = fresh_machine(name)
    facts = probe(system)
    text = render_spec(assess(facts), facts)
    return facts, None if text is None else json.loads(text)


@pytest.mark.parametrize("name", bundled.names())
def test_own_spec_of_every_bundled_machine_is_a_valid_cdi_spec(name: str, fresh_machine: Make) -> None:
    facts, spec = _own(name, fresh_machine)
    verdict = assess(facts)
    ready = [g for g in verdict.gpus if g.compute_ready]
    if spec is None:
        # Nothing to offer: no GPU computes (or /dev/kfd is no character device).
        assert not ready or facts.kfd.node.stat is None
        return
    assert [e.message for e in committed_cdi_validator().iter_errors(spec)] == []
    assert spec["kind"] == "kfdguard.org/gpu" and spec["cdiVersion"] == "0.5.0"
    names = [d["name"] for d in spec["devices"]]
    assert names == [*(str(i) for i in range(len(names) - 1)), "all"]
    # The minimum version (container-device-interface specs-go/version.go): no annotations (0.6.0),
    # no dots in the kind's class (0.6.0), device names starting with a digit (0.5.0).
    assert "annotations" not in spec and all("annotations" not in d for d in spec["devices"])
    assert "." not in spec["kind"].split("/")[1]
    # Every node is what the host has now: kfdguard's own staleness check finds nothing wrong in it, and
    # misses only the GPUs that do not compute (left out on purpose: they would hand containers a GPU
    # that fails).
    as_amd = json.dumps(spec | {"kind": "amd.com/gpu"})
    stale = [e for f in check(facts, (parse_spec("/run/cdi/kfdguard.json", as_amd.encode()),)) for e in f.evidence]
    idle = {f"/dev/dri/{g.render_node}" for g in verdict.gpus if not g.compute_ready and g.render_node}
    assert all(e.split(": has no ")[1].split(":")[0] in idle for e in stale if ": has no " in e), stale
    assert all(": has no " in e for e in stale), stale


def test_own_spec_also_valid_under_debians_cdi_schema(fresh_machine: Make) -> None:
    _, spec = _own("rx7900xtx-ubuntu2404", fresh_machine)
    assert spec is not None
    assert [e.message for e in cdi_validator().iter_errors(spec)] == []


def test_own_spec_is_written_when_enabled_and_removed_when_nothing_computes(fresh_machine: Make) -> None:
    from kfdguard.config import FleetConfig
    from kfdguard.fleet.publish import write

    system = fresh_machine("rx7900xtx-ubuntu2404")
    (system.root.path / "run/cdi").mkdir(parents=True, exist_ok=True)
    facts = probe(system)
    paths = FleetConfig(textfile=None, nfd=None, cdi="/run/cdi/kfdguard.json")
    (result,) = write(system.root, paths, assess(facts), facts, 1_700_000_000.0)
    assert result.status == "written"
    spec = json.loads((system.root.path / "run/cdi/kfdguard.json").read_text())
    assert spec["devices"][-1]["name"] == "all"
    broken = fresh_machine("no-hsa-amd")
    (broken.root.path / "run/cdi").mkdir(parents=True, exist_ok=True)
    (broken.root.path / "run/cdi/kfdguard.json").write_text(json.dumps(spec))  # left from an earlier boot
    facts = probe(broken)
    (result,) = write(broken.root, paths, assess(facts), facts, 1_700_000_000.0)
    assert (result.status, result.detail) == ("removed", "no AMD GPU can compute")
    assert not (broken.root.path / "run/cdi/kfdguard.json").exists()
    # Off by default: the default configuration writes no CDI spec.
    assert FleetConfig().cdi is None


@pytest.mark.parametrize(
    ("value", "expected", "error"),
    [
        ("true", "/run/cdi/kfdguard.json", None),
        ("false", None, None),
        ("/etc/cdi/kfdguard.json", "/etc/cdi/kfdguard.json", None),
        ("/etc/cdi/amd.json", None, "not named amd*"),
        ("/run/cdi/kfdguard.yaml", None, "ending in .json"),
        ("relative.json", None, "not an absolute file path"),
    ],
)
def test_fleet_cdi_setting(tmp_path: Path, value: str, expected: str | None, error: str | None) -> None:
    from kfdguard.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(f"version: 1\nfleet:\n  cdi: {value}\n")
    loaded = load_config(path, "/etc/kfdguard/config.yaml")
    if error is None:
        assert loaded.errors == () or not loaded.errors
        assert loaded.config.fleet.cdi == expected
    else:
        assert any(error in str(e) for e in loaded.errors), loaded.errors
        assert loaded.config.fleet.cdi is None  # a bad file: the default (off)
