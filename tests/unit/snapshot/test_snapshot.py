"""kfdguard snapshot: a bundle of what was read replays as the machine it came from."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.cli import main
from kfdguard.config import SoftwareConfig, load_config
from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.simulate import bundled
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.snapshot import MANIFEST
from kfdguard.snapshot.bundle import SnapshotError, minimal_module
from kfdguard.snapshot.replay import ReplaySystem
from kfdguard.snapshot.take import take
from kfdguard.verdict import Verdict
from tests.paths import TESTS


def _verdict(system: object, root: Root) -> Verdict:
    loaded = load_config(root.etc / "kfdguard/config.yaml", "/etc/kfdguard/config.yaml")
    facts = probe(system, log="always", log_sources=loaded.config.log.sources)  # type: ignore[arg-type]
    return assess(facts, loaded.config, loaded.errors)


def _key(verdict: Verdict) -> tuple[object, ...]:
    findings = [(f.code, str(f.severity), f.message, f.remedy, f.evidence) for f in verdict.findings]
    return (verdict.state, verdict.summary, findings, verdict.gpus, verdict.plan)


def _machine(name: str, tmp_path: Path) -> tuple[SimulatedSystem, Root]:
    root = bundled.render_bundled(name, tmp_path / "machine")
    return SimulatedSystem(root), root


@pytest.mark.parametrize("name", bundled.names())
def test_every_bundled_machine_replays_to_the_same_verdict(name: str, tmp_path: Path) -> None:
    system, root = _machine(name, tmp_path)
    live = _verdict(system, root)
    take(system, tmp_path / "bundle", source=name, names=True)
    bundle = Root(tmp_path / "bundle")
    assert _key(_verdict(ReplaySystem(bundle), bundle)) == _key(live)


@pytest.mark.parametrize("name", ["kfd-perms-0600", "rx6800-seed-advice", "dgpu-plus-igpu-atomics"])
def test_redacted_bundles_keep_the_verdict_and_drop_the_names(name: str, tmp_path: Path) -> None:
    system, root = _machine(name, tmp_path)
    live = _verdict(system, root)
    people = [
        line.split(":")[0]
        for line in (root.etc / "passwd").read_text().splitlines()
        if 1000 <= int(line.split(":")[2]) < 65534
    ]
    assert people, "the machine has no personal accounts to redact"
    take(system, tmp_path / "bundle", source=name)
    bundle = Root(tmp_path / "bundle")
    replay = _verdict(ReplaySystem(bundle), bundle)
    assert replay.state == live.state
    assert [f.code for f in replay.findings] == [f.code for f in live.findings]
    for path in (tmp_path / "bundle").rglob("*"):
        if path.is_file() and not path.is_symlink():
            text = path.read_bytes().decode(errors="replace")
            for person in people:
                assert person not in text.split(), f"{person} left in {path}"
    passwd = (tmp_path / "bundle/etc/passwd").read_text()
    assert "user1000:" in passwd or any(f"user{n}:" in passwd for n in range(1000, 65534, 1) if f":{n}:" in passwd)


def test_the_kernel_log_keeps_only_classified_lines_at_their_numbers(tmp_path: Path) -> None:
    system, _ = _machine("dkms-missing-for-new-kernel", tmp_path)
    take(system, tmp_path / "bundle", source="x", names=True)
    doc = json.loads((tmp_path / "bundle" / MANIFEST).read_text())
    entries = doc["journal"]["entries"]
    assert entries, "the machine's journal was recorded"
    live = dict(system.read_journal(doc["journal"]["boots"]))
    for entry in entries:
        assert entry["total"] == len(live[entry["boot"]])
        kept = dict(entry["lines"])
        assert len(kept) < entry["total"], "some lines are not kfdguard's and stay out"
        for number, text in kept.items():
            assert live[entry["boot"]][number - 1] == text


def test_big_modules_shrink_to_their_modinfo(tmp_path: Path) -> None:
    from kfdguard.modinfo import declared_parameters, decompress, modinfo_entries

    entries = [("parmtype", "sched_policy:int"), ("parm", "sched_policy:Scheduling policy"), ("depends", "drm")]
    for name in ("amdgpu.ko", "amdgpu.ko.xz", "amdgpu.ko.gz"):
        data = minimal_module(entries, name)
        assert modinfo_entries(decompress(data, name)) == entries
        assert declared_parameters(modinfo_entries(decompress(data, name))) == ("sched_policy",)


def test_the_destination_must_be_new_or_empty_and_nothing_is_left_on_failure(tmp_path: Path) -> None:
    system, _ = _machine("kfd-perms-0600", tmp_path)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_text("mine")
    with pytest.raises(SnapshotError, match="not empty"):
        take(system, full, source="x")
    assert sorted(os.listdir(full)) == ["keep"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(SnapshotError, match="not a directory"):
        take(system, afile, source="x")
    assert afile.read_text() == "x"
    empty = tmp_path / "empty"
    empty.mkdir()
    take(system, empty, source="x")
    assert (empty / MANIFEST).is_file()
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]


def test_cli_snapshot_then_check_and_diagnose_replay_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "report"
    assert main(["snapshot", "--machine", "kfd-perms-0600", str(dest)]) == 0
    assert "replay it: kfdguard check --root" in capsys.readouterr().out
    assert main(["check", "--machine", "kfd-perms-0600", "--json"]) == 2
    live = json.loads(capsys.readouterr().out)
    assert main(["check", "--root", str(dest), "--json"]) == 2
    replay = json.loads(capsys.readouterr().out)
    assert replay["state"] == live["state"] == "unavailable"
    assert [f["code"] for f in replay["findings"]] == [f["code"] for f in live["findings"]]
    assert main(["diagnose", str(dest)]) == 2
    assert "device-permissions" in capsys.readouterr().out
    assert main(["snapshot", "--machine", "kfd-perms-0600", str(dest)]) == 1
    assert "not empty" in capsys.readouterr().err


def test_enforce_on_a_replay_changes_nothing(tmp_path: Path) -> None:
    system, _ = _machine("kfd-perms-0600", tmp_path)
    take(system, tmp_path / "bundle", source="x", names=True)
    before = {p: p.read_bytes() for p in (tmp_path / "bundle").rglob("*") if p.is_file() and not p.is_symlink()}
    from kfdguard.app.pipeline import enforce
    from kfdguard.config import Config

    bundle = Root(tmp_path / "bundle")
    report, _, after = enforce(ReplaySystem(bundle), Config())
    assert report.failed
    assert any(f.code == "enforce-write-failed" and "read-only" in " ".join(f.evidence) for f in report.findings)
    assert {p: p.read_bytes() for p in before} == before
    assert after.state == "unavailable"


# --- a manifest from somebody else -----------------------------------------------------------


def _bundle(tmp_path: Path) -> Path:
    system, _ = _machine("kfd-perms-0600", tmp_path)
    take(system, tmp_path / "bundle", source="x", names=True)
    return tmp_path / "bundle"


def _with(bundle: Path, change: object) -> None:
    doc = json.loads((bundle / MANIFEST).read_text())
    assert callable(change)
    change(doc)
    (bundle / MANIFEST).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="something"), "not a kfdguard snapshot"),
        (lambda d: d.update(version=99), "version 99"),
        (lambda d: d.update(nodes=[]), "nodes: expected an object"),
        (lambda d: d["nodes"].update({"/dev/kfd": {"kind": "char"}}), r"nodes\['/dev/kfd'\].major: missing"),
        (lambda d: d["nodes"]["/dev/kfd"].update(kind="socket"), "is not one of"),
        (lambda d: d["nodes"]["/dev/kfd"].update(mode=0o77777), "out of range"),
        (lambda d: d["nodes"]["/dev/kfd"].update(uid=True), "expected an integer"),
        (lambda d: d["nodes"]["/dev/kfd"].update(acl=[["user", "x", 9]]), r"acl\[0\]"),
        (lambda d: d["journal"]["entries"][0].update(total=10**9), "out of range"),
        (lambda d: d["journal"]["entries"][0].update(lines=[[999999, "x"]]), "beyond the total"),
        (lambda d: d["journal"]["entries"][0].update(lines=[["1", "x"]]), "expected \\[line number, text\\]"),
        (lambda d: d.update(runs=[{"argv": ["modinfo", 3]}]), "expected a list of strings"),
        (lambda d: d["kfd_version"].update({"/dev/kfd": {"version": [1]}}), "expected \\[major, minor\\]"),
        # Found by the fuzz campaign: JSON false is a Python int and reached int("False").
        (lambda d: d["kfd_version"].update({"/dev/kfd": {"version": [False, False]}}), "expected \\[major, minor\\]"),
        (lambda d: d["journal"]["entries"][0].update(lines=[[True, "x"]]), "expected \\[line number, text\\]"),
    ],
)
def test_a_malformed_manifest_is_a_specific_error(tmp_path: Path, change: object, message: str) -> None:
    bundle = _bundle(tmp_path)
    _with(bundle, change)
    with pytest.raises(SnapshotError, match=message):
        ReplaySystem(Root(bundle))


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"\xff\xfe", "not JSON"), (b"[" * 100_000, "not JSON"), (b"{}", "not a kfdguard snapshot"), (b"", "not JSON")],
)
def test_garbage_manifests(tmp_path: Path, content: bytes, message: str) -> None:
    bundle = _bundle(tmp_path)
    (bundle / MANIFEST).write_bytes(content)
    with pytest.raises(SnapshotError, match=message):
        ReplaySystem(Root(bundle))


def test_a_manifest_that_is_a_link_or_a_fifo_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = _bundle(tmp_path)
    real = tmp_path / "elsewhere.json"
    (bundle / MANIFEST).rename(real)
    (bundle / MANIFEST).symlink_to(real)
    with pytest.raises(SnapshotError):
        ReplaySystem(Root(bundle))
    (bundle / MANIFEST).unlink()
    os.mkfifo(bundle / MANIFEST)
    with pytest.raises(SnapshotError, match="not a regular file"):
        ReplaySystem(Root(bundle))
    assert main(["check", "--root", str(bundle)]) == 64
    assert "not a regular file" in capsys.readouterr().err


def test_a_uki_read_in_pieces_replays_from_a_sparse_copy(tmp_path: Path) -> None:
    from tests.pe_files import uki_image

    system, root = _machine("rx7900xtx-ubuntu2404", tmp_path)
    uki = root.efi / "EFI/Linux/debian-6.12.22-amd64.efi"
    uki.parent.mkdir(parents=True)
    uki.write_bytes(uki_image(uname="6.12.22-amd64"))
    with open(uki, "r+b") as handle:
        handle.truncate(50 << 20)  # a real UKI is tens of MB; the probe reads only its headers and sections
    live = probe(system, log="never").bootloader
    assert any(e.release == "6.12.22-amd64" for e in live.entries), live
    take(system, tmp_path / "bundle", source="x", names=True)
    copy = tmp_path / "bundle/efi/EFI/Linux/debian-6.12.22-amd64.efi"
    assert copy.stat().st_size == 50 << 20
    assert copy.stat().st_blocks * 512 < 1 << 20, "only the pieces read are stored"
    replay = probe(ReplaySystem(Root(tmp_path / "bundle")), log="never").bootloader
    assert replay == live


def test_a_bundle_carries_the_software_inventory_and_replays_the_same_software_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from kfdguard.simulate.render import render
    from kfdguard.simulate.spec import spec_from_dict

    data = TESTS / "data/userspace/machines/780m-ollama.yaml"
    root = render(spec_from_dict("780m-ollama", yaml.safe_load(data.read_text())), tmp_path / "machine")
    assert main(["check", "--root", str(root.path), "--json"]) == 0  # ready: the override is a warning
    live = json.loads(capsys.readouterr().out)
    assert live["software"]["stacks"], "the machine has a stack to carry"
    dest = tmp_path / "bundle"
    assert main(["snapshot", "--root", str(root.path), str(dest)]) == 0
    capsys.readouterr()
    record = json.loads((dest / MANIFEST).read_text())["software"]
    (stack,) = record["stacks"]
    assert stack["path"] == "/usr/lib/ollama" and stack["components"][0]["targets"][:2] == ["gfx1030", "gfx1100"]
    # Not the libraries: the bundle's tree has none of the stack's files, only the record.
    assert not (dest / "usr/lib/ollama").exists()
    assert main(["check", "--root", str(dest), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert replay["software"] == live["software"]
    assert [f["code"] for f in replay["findings"]] == [f["code"] for f in live["findings"]]


def test_a_redacted_bundle_names_no_person_in_the_software_record(tmp_path: Path) -> None:
    """A virtualenv in a home directory names its owner: the record's paths are redacted like the config."""
    import yaml

    from kfdguard.simulate.render import render
    from kfdguard.simulate.spec import spec_from_dict

    data = yaml.safe_load((TESTS / "data/userspace/machines/780m-ollama.yaml").read_text())
    venv = "/home/alice/venvs/torch"
    data["files"]["/etc/kfdguard/config.yaml"] = f"software:\n  paths: [{venv}]\n"
    data["files"][f"{venv}/lib/python3.12/site-packages/torch/lib/libtorch_hip.so"] = ""
    root = render(spec_from_dict("home-venv", data), tmp_path / "machine")
    system = SimulatedSystem(root)
    software = SoftwareConfig(paths=(venv,))  # what `kfdguard snapshot` passes from config.yaml
    take(system, tmp_path / "named", source="x", names=True, software=software)
    named = (tmp_path / "named" / MANIFEST).read_text()
    assert venv in named, "the scan found no stack in the home directory: the test would prove nothing"
    take(system, tmp_path / "bundle", source="x", software=software)
    for path in (tmp_path / "bundle").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert "alice" not in path.read_bytes().decode(errors="replace"), f"alice left in {path}"
    software = json.loads((tmp_path / "bundle" / MANIFEST).read_text())["software"]
    assert "/home/user1000/venvs/torch" in json.dumps(software)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(stacks={}), r"manifest.software.stacks: expected a list"),
        (
            lambda s: s["stacks"][0]["components"][0].update(source="guess"),
            r"source: 'guess' \(known: bundles, name, kpack\)",
        ),
        (lambda s: s["stacks"][0]["components"][0].update(targets=[1]), "targets: expected a list of strings"),
        (lambda s: s["stacks"][0]["components"][0].update(files=-1), "files: -1 is out of range"),
        (lambda s: s["stacks"][0].update(components=[{}] * 5000), r"components: 5000 entries \(at most 4096\)"),
        (lambda s: s.update(ld_paths=[["/a"]]), r"ld_paths\[0\]: expected \[directory, file\]"),
        (lambda s: s["env"].append({"name": "X", "value": 3, "origin": "o"}), r"env\[\d+\].value: expected a string"),
    ],
)
def test_a_malformed_software_record_is_a_specific_error(tmp_path: Path, change: object, message: str) -> None:
    from kfdguard.facts import Component, EnvSetting, SoftwareFacts, Stack
    from kfdguard.userspace.record import software_record

    bundle = _bundle(tmp_path)
    lib = Component("rocblas/library", "/opt/rocm/lib/rocblas/library", ("gfx1100",), "name", 1)
    sw = SoftwareFacts((Stack("rocm", "ROCm 6.2.4", "/opt/rocm", "6.2.4", (lib,)),), (EnvSetting("A", "b", "c"),))
    doc = json.loads((bundle / MANIFEST).read_text())
    doc["software"] = software_record(sw)
    assert callable(change)
    change(doc["software"])
    (bundle / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(SnapshotError, match=message):
        ReplaySystem(Root(bundle))


def test_a_bundle_carries_the_gpus_memory_and_link_files(tmp_path: Path) -> None:
    # Issue 17 item 5: what the devices show (memory totals, PCIe link) must replay too.
    system, _ = _machine("dgpu-plus-igpu-atomics", tmp_path)
    live = probe(system)
    take(system, tmp_path / "bundle", source="dgpu-plus-igpu-atomics")
    files = json.loads((tmp_path / "bundle" / MANIFEST).read_text())["files"]
    for attr in ("mem_info_vram_total", "mem_info_gtt_total"):
        assert f"/sys/bus/pci/devices/0000:0a:00.0/{attr}" in files, attr
    # The link is read where the device really is (probe looks for the card's own switch above it).
    for attr in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        assert f"/sys/devices/pci0000:00/0000:0a:00.0/{attr}" in files, attr
    replayed = probe(ReplaySystem(Root(tmp_path / "bundle")))
    resources = [(g.vram_total, g.gtt_total, g.link, g.link_max) for g in replayed.gpus]
    assert resources == [(g.vram_total, g.gtt_total, g.link, g.link_max) for g in live.gpus]
    assert all(vram is not None for vram, *_ in resources)
