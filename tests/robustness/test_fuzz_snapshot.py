"""Fuzzing snapshot manifests: whatever a bundle from somebody else holds, replaying it raises
SnapshotError or works; and a replay that works answers every probe call without an exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.snapshot import MANIFEST
from kfdguard.snapshot.bundle import SnapshotError
from kfdguard.snapshot.replay import ReplaySystem
from tests.fuzzing import examples

pytestmark = pytest.mark.fuzz

SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=20)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
NODE = st.fixed_dictionaries(
    {"kind": st.sampled_from(["char", "file", "socket", 3]), "major": JSON, "minor": st.integers(-5, 300),
     "uid": st.integers(-1, 2**33), "gid": JSON, "mode": st.integers(-1, 0o20000), "acl": JSON}
)  # fmt: skip
LINES = st.fixed_dictionaries(
    {
        "total": st.integers(-2, 50) | JSON,
        "lines": st.lists(st.tuples(st.integers(-2, 60), SCALARS).map(list), max_size=5) | JSON,
    }
)
MANIFESTS = st.fixed_dictionaries(
    {"format": st.just("kfdguard-snapshot"), "version": st.just(1)},
    optional={
        "nodes": st.dictionaries(st.sampled_from(["/dev/kfd", "/dev/dri/renderD128", "x"]), NODE | JSON, max_size=3) | JSON,
        "kfd_version": st.dictionaries(st.just("/dev/kfd"), st.fixed_dictionaries({"version": JSON}) | JSON, max_size=1) | JSON,
        "kmsg": LINES | JSON,
        "journal": st.fixed_dictionaries({"boots": st.integers(0, 3), "entries": st.lists(st.fixed_dictionaries({"boot": st.integers(-3, 1)}).map(lambda d: d) | JSON, max_size=3)}) | JSON,
        "runs": st.lists(st.fixed_dictionaries({"argv": st.lists(SCALARS, max_size=3), "returncode": JSON, "timed_out": JSON}) | JSON, max_size=3) | JSON,
    },
)  # fmt: skip


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=MANIFESTS)
def test_replaying_any_manifest_is_an_error_or_a_machine(tmp_path: Path, doc: dict[str, object]) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps(doc))
    try:
        system = ReplaySystem(Root(tmp_path))
    except SnapshotError as exc:
        assert str(exc)
        return
    facts = probe(system, log="always")
    assert facts.kernel is not None
