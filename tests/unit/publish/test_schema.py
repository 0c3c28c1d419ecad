"""The JSON contract: every JSON output validates against schema/kfdguard.schema.json.

A real validator (jsonschema's Draft202012Validator) on real outputs: every bundled
machine through ``check --json`` and ``diagnose --json``, every real report of
tests/data/real-reports through ``diagnose --json FILE``, and the running service's GetStatus as busctl
prints it and as ``kfdguard status --json`` prints it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kfdguard import cli
from kfdguard.publish.report import SCHEMA_VERSION
from tests.conftest import MACHINES
from tests.paths import TOP

REPO = TOP
SCHEMA_FILE = REPO / "schema" / "kfdguard.schema.json"
# The real reports of issue 16 (the former dmesg-corpus is its first ten files): every text users pasted.
CORPUS = sorted((REPO / "tests" / "data" / "real-reports").glob("*.txt"))


def _schema() -> dict[str, Any]:
    data = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def validator(part: str | None = None) -> Draft202012Validator:
    """The whole schema, or one of its documents (``$defs/<part>``) as the root."""
    schema = _schema()
    if part is not None:
        assert part in schema["$defs"], part
        schema = {k: v for k, v in schema.items() if k != "anyOf"} | {"$ref": f"#/$defs/{part}"}
    return Draft202012Validator(schema)


def errors(part: str, document: object) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(part).iter_errors(document)]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = cli.main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = _schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_schema_version_is_major_one() -> None:
    # The schema file describes major 1; a major step needs a new file (docs/JSON.md).
    assert SCHEMA_VERSION.split(".")[0] == "1"
    assert not errors("schemaVersion", SCHEMA_VERSION)


@pytest.mark.parametrize("name", MACHINES)
def test_check_json_of_every_bundled_machine(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, data = run_cli(capsys, "check", "--machine", name, "--json")
    assert errors("check", data) == []
    assert data["schema_version"] == SCHEMA_VERSION
    assert code == data["exit_code"]
    # The document is also accepted by the schema as a whole (the anyOf of all outputs).
    assert validator().is_valid(data)


@pytest.mark.parametrize("name", MACHINES)
def test_diagnose_json_of_every_bundled_machine(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, data = run_cli(capsys, "diagnose", "--machine", name, "--json")
    assert errors("check", data) == []
    assert data["log"]["read"] is True
    assert code == data["exit_code"]


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_diagnose_json_of_every_corpus_text(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, data = run_cli(capsys, "diagnose", "--json", str(path))
    assert errors("textDiagnosis", data) == []
    assert data["schema_version"] == SCHEMA_VERSION
    assert code == data["exit_code"]


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 68, "tests/data/real-reports holds the real reports"


def test_the_schema_refuses_what_breaks_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    _, good = run_cli(capsys, "check", "--machine", "kfd-perms-0600", "--json")
    assert errors("check", good) == []
    missing = {k: v for k, v in good.items() if k != "schema_version"}
    assert any("schema_version" in e for e in errors("check", missing))
    assert errors("check", good | {"state": "sleeping"})
    assert errors("check", good | {"schema_version": "2.0"})
    assert errors("check", good | {"surprise": 1}), "a field added without the schema must fail this suite"
    bad_finding = dict(good["findings"][0]) | {"severity": "fatal"}
    assert errors("check", good | {"findings": [bad_finding]})


def test_a_failed_check_has_its_own_shape(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from kfdguard.app import pipeline

    def broken(*_: object, **__: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "check", broken)
    code = cli.main(["check", "--machine", "kfd-perms-0600", "--json"])
    captured = capsys.readouterr()
    failed = json.loads(captured.out)
    assert code == 4 and "check failed: RuntimeError: boom" in captured.err
    assert failed == {"schema_version": SCHEMA_VERSION, "state": "error", "ready": False, "error": "boom"}
    assert errors("checkFailed", failed) == []
    assert errors("checkFailed", {"state": "error", "ready": False, "error": "boom"})  # schema_version is required
    assert errors("checkFailed", failed | {"state": "ready", "ready": True})


def test_access_and_reload_documents() -> None:
    both = {"schema_version": SCHEMA_VERSION, "allowed": True, "explanation": "x", "visible": False, "environment": "y"}
    assert errors("access", both) == []
    assert errors("access", {k: v for k, v in both.items() if k not in ("visible", "environment")}) == []
    assert errors("access", {k: v for k, v in both.items() if k != "environment"})  # one without the other
    assert errors("reload", {"schema_version": SCHEMA_VERSION, "state": "ready"}) == []
    assert errors("reload", {"schema_version": SCHEMA_VERSION, "state": "asleep"})


def test_the_bookworm_validator_accepts_the_same(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Debian 12 ships jsonschema 4.10.3: the schema must work with it too, not only with PyPI's newest."""
    debian = Path("/usr/lib/python3/dist-packages/jsonschema")
    if not debian.is_dir():
        pytest.skip("python3-jsonschema (Debian's package) is not installed: scripts/debian-packages.txt lists it")
    _, data = run_cli(capsys, "check", "--machine", "dgpu-plus-igpu-atomics", "--json")
    document = tmp_path / "check.json"
    document.write_text(json.dumps(data))
    script = (
        "import json, sys; from jsonschema import Draft202012Validator as V, __version__ as v; "
        "s = json.load(open(sys.argv[1])); V.check_schema(s); "
        "s = {k: x for k, x in s.items() if k != 'anyOf'} | {'$ref': '#/$defs/check'}; "
        "errs = list(V(s).iter_errors(json.load(open(sys.argv[2])))); print(v, len(errs))"
    )
    # -I: Debian's interpreter with Debian's packages only, whatever the environment says.
    result = subprocess.run(
        ["/usr/bin/python3", "-I", "-W", "ignore", "-c", script, str(SCHEMA_FILE), str(document)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    version, count = result.stdout.split()
    assert version.startswith("4."), version
    assert count == "0"


# --- the running service ------------------------------------------------------------------------


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="the service owns a name on a system-like bus (CI runs as root)")
@pytest.mark.parametrize("name", ["dgpu-plus-igpu-atomics", "no-hsa-amd"])
def test_getstatus_status_json_and_diagnose_json_from_the_service(name: str) -> None:
    from tests.servicekit import NAME, PATH, busctl, guardian

    with guardian(name) as g:
        deadline = time.monotonic() + 20
        while True:
            out = busctl("--json=short", "call", NAME, PATH, NAME, "GetStatus", env=g.env()).stdout
            wire = json.loads(out)
            assert errors("busctlGetStatus", wire) == []
            if wire["data"][0]["State"]["data"] != "starting":
                break
            assert time.monotonic() < deadline, "the boot pass never finished"
            time.sleep(0.1)
        status = subprocess.run(
            [sys.executable, "-m", "kfdguard", "status", "--json", "--bus", g.address],
            capture_output=True, text=True, timeout=60, env=g.env(), check=False,
        )  # fmt: skip
        plain = json.loads(status.stdout)
        assert errors("status", plain) == []
        # The two are the same dictionary, with and without busctl's variant wrapping.
        assert plain["State"] == wire["data"][0]["State"]["data"]
        assert len(plain["Devices"]) == len(wire["data"][0]["Devices"]["data"])
        diagnosis = subprocess.run(
            [sys.executable, "-m", "kfdguard", "diagnose", "--json", "--bus", g.address],
            capture_output=True, text=True, timeout=60, env=g.env(), check=False,
        )  # fmt: skip
        answered = json.loads(diagnosis.stdout)
        assert errors("serviceDiagnosis", answered) == []
        assert plain["schema_version"] == answered["schema_version"] == SCHEMA_VERSION
        for argv, part in ((["access", "--json"], "access"), (["reload", "--json"], "reload")):
            other = subprocess.run(
                [sys.executable, "-m", "kfdguard", *argv, "--bus", g.address],
                capture_output=True, text=True, timeout=120, env=g.env() | {"ROCR_VISIBLE_DEVICES": ""}, check=False,
            )  # fmt: skip
            doc = json.loads(other.stdout)
            assert errors(part, doc) == [], (argv, doc)
        assert doc["state"] in ("ready", "degraded", "unavailable", "no-device", "error")
        assert answered["findings"], "the service's diagnosis of a machine with a problem names it"
