"""Writing the fleet files (publish.write) and the config keys that place them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kfdguard.assess import assess
from kfdguard.config import Config, FleetConfig, parse_config
from kfdguard.facts import Facts
from kfdguard.fleet.publish import write
from kfdguard.host.root import FLEET_NFD, FLEET_TEXTFILE, Root
from tests.paths import TOP

NOW = 1_796_000_000.0
EXAMPLE = TOP / "conf" / "config.yaml"


def _dirs(root: Path) -> None:
    for shown in (FLEET_TEXTFILE, FLEET_NFD):
        Root(root).join(shown).parent.mkdir(parents=True)


def test_both_files_are_written_readable_by_their_readers(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    _dirs(tmp_path)
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    results = write(Root(tmp_path), FleetConfig(), assess(facts), facts, NOW)
    assert [(r.output, r.path, r.status) for r in results] == [
        ("textfile", FLEET_TEXTFILE, "written"),
        ("nfd", FLEET_NFD, "written"),
    ]
    prom = Root(tmp_path).join(FLEET_TEXTFILE)
    assert "kfdguard_compute_ready 1\n" in prom.read_text()
    assert "feature.node.kubernetes.io/kfdguard.ready=true\n" in Root(tmp_path).join(FLEET_NFD).read_text()
    # node_exporter runs as prometheus, nfd-worker in its own container: both must read them.
    assert stat.S_IMODE(os.stat(prom).st_mode) == 0o644
    # No temporary file is left next to them (node_exporter would read a *.prom one).
    assert sorted(os.listdir(prom.parent)) == ["kfdguard.prom"]


def test_a_second_write_replaces_the_file(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    _dirs(tmp_path)
    ready = machine_facts["rx7900xtx-ubuntu2404"]
    broken = machine_facts["kfd-perms-0600"]
    write(Root(tmp_path), FleetConfig(), assess(ready), ready, NOW)
    write(Root(tmp_path), FleetConfig(), assess(broken), broken, NOW + 300)
    text = Root(tmp_path).join(FLEET_NFD).read_text()
    assert "kfdguard.ready=false" in text and "kfdguard.ready=true" not in text


def test_a_missing_directory_is_skipped_not_created(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    results = write(Root(tmp_path), FleetConfig(), assess(facts), facts, NOW)
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert "does not exist" in results[0].detail
    assert list(tmp_path.iterdir()) == []


def test_turned_off_outputs_are_not_written(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    _dirs(tmp_path)
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    assert write(Root(tmp_path), FleetConfig(textfile=None, nfd=None), assess(facts), facts, NOW) == []


def test_a_symlink_in_place_of_the_file_is_refused(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    _dirs(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    Root(tmp_path).join(FLEET_TEXTFILE).symlink_to(target)
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    results = write(Root(tmp_path), FleetConfig(nfd=None), assess(facts), facts, NOW)
    assert results[0].status == "failed" and "symbolic link" in results[0].detail
    assert target.read_text() == "keep me\n"


def test_a_write_that_fails_is_a_result_not_an_exception(machine_facts: dict[str, Facts], tmp_path: Path) -> None:
    # A directory in place of the file: os.rename over it fails for root too.
    _dirs(tmp_path)
    Root(tmp_path).join(FLEET_TEXTFILE).mkdir()
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    results = write(Root(tmp_path), FleetConfig(nfd=None), assess(facts), facts, NOW)
    assert results[0].status == "failed" and results[0].detail


# --- config -------------------------------------------------------------------------------------


def test_the_example_config_documents_the_defaults() -> None:
    config, errors = parse_config(EXAMPLE.read_text(), "config.yaml")
    assert errors == []
    assert config.fleet == Config().fleet == FleetConfig(FLEET_TEXTFILE, FLEET_NFD)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fleet:\n  textfile: false\n", FleetConfig(textfile=None)),
        ("fleet:\n  nfd: null\n", FleetConfig(nfd=None)),
        ("fleet:\n  textfile: /srv/metrics/gpu.prom\n  nfd: /etc/nfd/features.d/gpu\n",
         FleetConfig("/srv/metrics/gpu.prom", "/etc/nfd/features.d/gpu")),
    ],
)  # fmt: skip
def test_fleet_keys(text: str, expected: FleetConfig) -> None:
    config, errors = parse_config(text, "config.yaml")
    assert errors == []
    assert config.fleet == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fleet:\n  textfile: metrics.prom\n",
         "config.yaml:2:13: fleet.textfile: 'metrics.prom' is not an absolute file path (or false to turn it off)"),
        ("fleet:\n  textfile: /srv/kfdguard.txt\n",
         "config.yaml:2:13: fleet.textfile: 'kfdguard.txt': node_exporter reads only files ending in .prom"),
        ("fleet:\n  nfd: /etc/features.d/.kfdguard\n",
         "config.yaml:2:8: fleet.nfd: '.kfdguard': a file name starting with a dot is skipped by its reader"),
        ("fleet:\n  nfd: /etc/../tmp/x\n", "config.yaml:2:8: fleet.nfd: '/etc/../tmp/x': no . or .. components"),
        ("fleet:\n  nfd: /etc/features.d/\n",
         "config.yaml:2:8: fleet.nfd: '/etc/features.d/' is not an absolute file path (or false to turn it off)"),
        ("fleet:\n  nfd: true\n", "config.yaml:2:8: fleet.nfd: 'true' is not an absolute file path (or false to turn it off)"),
        ("fleet:\n  nfd: [a]\n", "config.yaml:2:8: fleet.nfd: expected a single value, not a list or mapping"),
        ("fleet:\n  textfle: /x.prom\n", "config.yaml:2:3: fleet.textfle: unknown key in 'fleet'; did you mean 'textfile'?"),
    ],
)  # fmt: skip
def test_bad_fleet_keys_are_refused_with_their_place(text: str, message: str) -> None:
    _, errors = parse_config(text, "config.yaml")
    assert [str(e) for e in errors] == [message]


def test_the_last_check_time_and_the_expiry_count_from_different_moments(
    machine_facts: dict[str, Facts], tmp_path: Path
) -> None:
    # The timer rewrites an hour after the check: the labels live on from now, the check stays old.
    _dirs(tmp_path)
    facts = machine_facts["rx7900xtx-ubuntu2404"]
    write(Root(tmp_path), FleetConfig(), assess(facts), facts, NOW + 3600, checked=NOW)
    assert f"kfdguard_last_check_timestamp_seconds {int(NOW)}\n" in Root(tmp_path).join(FLEET_TEXTFILE).read_text()
    # NOW + 3600 + 900 s, as date -u -d @1796004500 prints it.
    assert "# +expiry-time=2026-11-30T02:08:20Z\n" in Root(tmp_path).join(FLEET_NFD).read_text()
