"""The fleet files under the privilege split: root's stage directory and link, the service's writes through them.

The readers follow DIR/NAME -> .kfdguard/NAME (node_exporter os.Open, nfd-worker os.Stat +
os.ReadFile, the CDI cache os.ReadFile); reading the link here is what they do.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from kfdguard.app import oneshot, pipeline
from kfdguard.app.pipeline import ConfigSource
from kfdguard.app.triggers import Trigger
from kfdguard.config import Config, FleetConfig
from kfdguard.fleet import metrics, nfd, prepare, publish
from kfdguard.host.root import FLEET_CDI, FLEET_NFD, FLEET_TEXTFILE, Root
from kfdguard.simulate.system import SimulatedSystem

Make = Callable[[str], SimulatedSystem]
ALL = FleetConfig(textfile=FLEET_TEXTFILE, nfd=FLEET_NFD, cdi=FLEET_CDI)
ME = (os.getuid(), os.getgid())


def _dirs(root: Root) -> None:
    for shown in (FLEET_TEXTFILE, FLEET_NFD, FLEET_CDI):
        root.join(shown).parent.mkdir(parents=True, exist_ok=True)


def test_each_directory_gets_a_stage_and_a_relative_link(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    results = prepare.prepare(root, ALL, ME)
    assert [(r.output, r.status) for r in results] == [("textfile", "made"), ("nfd", "made"), ("cdi", "made")]
    for shown in (FLEET_TEXTFILE, FLEET_NFD, FLEET_CDI):
        path = root.join(shown)
        # Relative and inside the directory: nfd-worker sees features.d through a hostPath mount.
        assert os.readlink(path) == f".kfdguard/{path.name}"
        st = os.lstat(path.parent / ".kfdguard")
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755
        assert (st.st_uid, st.st_gid) == ME
    assert (root.var_lib / "kfdguard/fleet-links").read_text().splitlines() == [FLEET_TEXTFILE, FLEET_NFD, FLEET_CDI]
    # Idempotent: the next pass finds everything in place.
    assert [r.status for r in prepare.prepare(root, ALL, ME)] == ["ready", "ready", "ready"]


def test_the_service_writes_the_stage_and_the_reader_sees_it_through_the_link(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    prepare.prepare(root, ALL, ME)
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.DEVICE_EVENT)
    written = publish.write(root, ALL, outcome.verdict, outcome.facts, 1_800_000_000.0)
    assert [w.status for w in written] == ["written", "written", "written"]
    prom = root.join(FLEET_TEXTFILE)
    assert os.path.islink(prom) and prom.read_text() == metrics.render(outcome.verdict, outcome.facts, 1_800_000_000.0)
    assert root.join(FLEET_NFD).read_text() == nfd.render(outcome.verdict, 1_800_000_000.0, publish.NFD_TTL)
    assert '"kind": "kfdguard.org/gpu"' in root.join(FLEET_CDI).read_text()
    # The links are root's and stay: the service replaced only its own files.
    assert os.readlink(prom) == ".kfdguard/kfdguard.prom"
    # No temporary is left where a reader lists.
    assert sorted(os.listdir(prom.parent)) == [".kfdguard", "kfdguard.prom"]


def test_a_file_the_single_root_service_wrote_moves_into_the_stage(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    old = root.join(FLEET_TEXTFILE)
    old.write_text("# HELP kfdguard_compute_ready 1 when ...\nkfdguard_compute_ready 1\n")
    results = prepare.prepare(root, FleetConfig(textfile=FLEET_TEXTFILE, nfd=None), ME)
    assert [r.status for r in results] == ["made"]
    assert os.path.islink(old) and old.read_text().endswith("kfdguard_compute_ready 1\n")
    assert not os.path.islink(old.parent / ".kfdguard/kfdguard.prom")


def test_a_file_kfdguard_did_not_write_is_left_alone(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    theirs = root.join(FLEET_NFD)
    theirs.write_text("vendor.example/ready=true\n")
    other = root.join(FLEET_TEXTFILE)
    other.symlink_to("/var/lib/elsewhere/kfdguard.prom")
    results = prepare.prepare(root, FleetConfig(textfile=FLEET_TEXTFILE, nfd=FLEET_NFD), ME)
    assert [r.status for r in results] == ["failed", "failed"]
    assert "not kfdguard's" in results[0].detail and "did not write" in results[1].detail
    assert theirs.read_text() == "vendor.example/ready=true\n" and not theirs.is_symlink()
    assert os.readlink(other) == "/var/lib/elsewhere/kfdguard.prom"
    assert not (root.var_lib / "kfdguard/fleet-links").exists()


def test_a_planted_stage_link_is_refused_not_followed(fresh_machine: Make, tmp_path: Path) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    directory = root.join(FLEET_TEXTFILE).parent
    (directory / ".kfdguard").symlink_to(elsewhere)
    results = prepare.prepare(root, FleetConfig(textfile=FLEET_TEXTFILE, nfd=None), ME)
    assert results[0].status == "failed" and "symbolic link" in results[0].detail
    assert stat.S_IMODE(os.stat(elsewhere).st_mode) == 0o700 and not os.listdir(elsewhere)
    assert not os.path.lexists(root.join(FLEET_TEXTFILE))


def test_a_missing_directory_is_skipped_and_not_made(fresh_machine: Make) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    results = prepare.prepare(system.root, ALL, ME)
    assert [r.status for r in results] == ["skipped", "skipped", "skipped"]
    assert not system.root.join(FLEET_TEXTFILE).parent.exists()


def test_the_enforce_oneshot_prepares_the_enabled_outputs(fresh_machine: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    system = fresh_machine("rx7900xtx-ubuntu2404")
    root = system.root
    _dirs(root)
    monkeypatch.setattr(prepare, "owner", lambda: ME)
    config = Config(fleet=FleetConfig(textfile=FLEET_TEXTFILE, nfd=None, cdi=None))
    oneshot.enforce(system, ConfigSource.fixed(config))
    assert os.readlink(root.join(FLEET_TEXTFILE)) == ".kfdguard/kfdguard.prom"
    assert not os.path.lexists(root.join(FLEET_NFD))  # turned off: not touched


def test_a_directory_read_only_for_the_service_says_to_restart_it(
    fresh_machine: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from kfdguard.host import files

    system = fresh_machine("rx7900xtx-ubuntu2404")
    _dirs(system.root)
    outcome = pipeline.check(system, ConfigSource.fixed(Config()), Trigger.DEVICE_EVENT)

    def read_only(*_args: object, **_kwargs: object) -> None:
        # What a directory made after the service started is in its mount namespace.
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(files, "atomic_write", read_only)
    written = publish.write(
        system.root, FleetConfig(textfile=FLEET_TEXTFILE, nfd=None), outcome.verdict, outcome.facts, 1.0
    )
    assert [w.status for w in written] == ["failed"]
    assert "appeared after the service started" in written[0].detail and "restart kfdguard" in written[0].detail
