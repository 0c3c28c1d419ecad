"""The NFD feature file, read as nfd-worker reads it and held to Kubernetes' documented label grammar.

The grammar here is written from the Kubernetes documentation ("Labels and
Selectors": an optional DNS-subdomain prefix of at most 253 characters and a
slash, a name of at most 63 characters, a value of at most 63 characters, both
"beginning and ending with an alphanumeric character ([a-z0-9A-Z]) with dashes
(-), underscores (_), dots (.), and alphanumerics between"), not imported from
kfdguard.fleet.nfd. The reader follows node-feature-discovery's
source/local/local.go: '#' lines are comments, '# +expiry-time=<RFC 3339>'
applies to the lines after it, '<key>[=<value>]' (value 'true' when absent).
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kfdguard.assess import assess
from kfdguard.facts import Facts
from kfdguard.fleet.nfd import FILE_LIMIT, render
from kfdguard.verdict import Finding, Severity, State, Verdict
from tests.conftest import MACHINES

DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
PREFIX = re.compile(rf"{DNS_LABEL}(\.{DNS_LABEL})*")
NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
NOW = 1_796_000_000.0
TTL = 900.0


def valid_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not PREFIX.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and NAME.fullmatch(name) is not None


def valid_value(value: str) -> bool:
    return len(value) <= 63 and VALUE.fullmatch(value) is not None


def nfd_labels(text: str, at: float) -> dict[str, str]:
    """The labels nfd-worker takes from a feature file at time ``at``."""
    assert len(text.encode()) <= FILE_LIMIT
    labels: dict[str, str] = {}
    expiry: float | None = None  # no directive yet: the lines never expire
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# +"):
                key, _, value = line[3:].partition("=")
                assert key == "expiry-time", f"unknown directive {line!r}"
                # Go's time.RFC3339 layout: 2006-01-02T15:04:05Z07:00.
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value.strip()), value
                expiry = datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
            continue
        if expiry is not None and expiry < at:
            continue
        key, sep, value = line.partition("=")
        labels[key] = value if sep else "true"
    return labels


@pytest.mark.parametrize("name", MACHINES)
def test_every_label_is_within_the_grammar_and_says_what_the_verdict_says(
    machine_facts: dict[str, Facts], name: str
) -> None:
    verdict = assess(machine_facts[name])
    labels = nfd_labels(render(verdict, NOW, TTL), NOW)
    for key, value in labels.items():
        assert valid_key(key), key
        assert valid_value(value), (key, value)
        assert key.startswith("feature.node.kubernetes.io/kfdguard.")
    short = {k.removeprefix("feature.node.kubernetes.io/"): v for k, v in labels.items()}
    assert short["kfdguard.ready"] == ("true" if verdict.ready else "false")
    assert short["kfdguard.state"] == str(verdict.state)
    errors = [f.code for f in verdict.findings if f.severity is Severity.ERROR]
    assert short.get("kfdguard.blocked") == (errors[0] if errors else None)
    for code in errors:
        assert short[f"kfdguard.blocked.{code}"] == "true"
    targets = sorted({g.gfx for g in verdict.gpus if g.compute_ready and g.gfx})
    assert short.get("kfdguard.gfx-targets") == ("_".join(targets) if targets else None)


def test_a_dead_service_s_labels_expire(machine_facts: dict[str, Facts]) -> None:
    text = render(assess(machine_facts["rx7900xtx-ubuntu2404"]), NOW, TTL)
    assert (
        "# +expiry-time=2026-11-30T01:08:20Z" in text.splitlines()
    )  # NOW + 900 s in UTC, as date -u -d @1796000900 says
    alive = nfd_labels(text, NOW + TTL - 1)
    assert alive["feature.node.kubernetes.io/kfdguard.ready"] == "true"
    assert nfd_labels(text, NOW + TTL + 1) == {}


def test_the_expiry_comes_before_every_label(machine_facts: dict[str, Facts]) -> None:
    lines = render(assess(machine_facts["kfd-perms-0600"]), NOW, TTL).splitlines()
    expiry = next(i for i, line in enumerate(lines) if line.startswith("# +expiry-time="))
    assert all(line.startswith("#") for line in lines[:expiry])


def _verdict(gfx: list[str], codes: list[str]) -> Verdict:
    from kfdguard.verdict import GpuStatus

    gpus = tuple(
        GpuStatus(f"0000:{i:02x}:00.0", 0x1002, 0x744C, None, "x", None, t, "amdgpu", i, i + 1, None, True, "ready")
        for i, t in enumerate(gfx)
    )
    findings = tuple(Finding(c, Severity.ERROR, "m", "r") for c in codes)
    return Verdict(State.DEGRADED, True, "s", findings, gpus)


def test_many_targets_fit_in_one_value_and_each_has_its_own_label() -> None:
    targets = [f"gfx{n}" for n in range(1100, 1112)]  # twelve targets: 95 characters joined
    labels = nfd_labels(render(_verdict(targets, []), NOW, TTL), NOW)
    joined = labels["feature.node.kubernetes.io/kfdguard.gfx-targets"]
    assert valid_value(joined) and len(joined) <= 63
    assert joined.split("_") == targets[: len(joined.split("_"))]  # whole targets only
    for target in targets:
        assert labels[f"feature.node.kubernetes.io/kfdguard.gfx.{target}"] == "true"


def test_machine_text_that_breaks_the_grammar_is_left_out() -> None:
    long_code = "a-" * 40 + "b"
    verdict = _verdict(["gfx1100", "gfx11 00\n", "not-a-target"], ["Bad Code", long_code, "kernel-too-old"])
    text = render(verdict, NOW, TTL)
    labels = nfd_labels(text, NOW)
    assert all(valid_key(k) and valid_value(v) for k, v in labels.items())
    short = {k.removeprefix("feature.node.kubernetes.io/"): v for k, v in labels.items()}
    assert short["kfdguard.gfx-targets"] == "gfx1100"
    # The long code fits neither a value nor a name: the next error that fits is the headline.
    assert short["kfdguard.blocked"] == "kernel-too-old"
    assert not any(long_code in k or long_code in v for k, v in short.items())
    assert short["kfdguard.blocked.kernel-too-old"] == "true"
    assert len(labels) == 6  # ready, state, gfx-targets, gfx.gfx1100, blocked, blocked.kernel-too-old
    assert not any("Bad" in k or "Bad" in v for k, v in short.items())


def test_no_gpu_no_targets(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["nvidia-only"])
    short = nfd_labels(render(verdict, NOW, TTL), NOW)
    assert short["feature.node.kubernetes.io/kfdguard.state"] == "no-device"
    assert "feature.node.kubernetes.io/kfdguard.gfx-targets" not in short


def test_a_fractional_now_still_gives_an_rfc3339_second(machine_facts: dict[str, Facts]) -> None:
    verdict = assess(machine_facts["rx7900xtx-ubuntu2404"])
    text = render(verdict, NOW + 0.75, TTL)
    assert "# +expiry-time=2026-11-30T01:08:20Z" in text


@given(st.lists(st.text(max_size=70), max_size=6), st.lists(st.text(max_size=70), max_size=6))
def test_any_machine_text_gives_only_valid_labels(gfx: list[str], codes: list[str]) -> None:
    labels = nfd_labels(render(_verdict(gfx, [c or "x" for c in codes]), NOW, TTL), NOW)
    assert "feature.node.kubernetes.io/kfdguard.ready" in labels
    for key, value in labels.items():
        assert valid_key(key), key
        assert valid_value(value), (key, value)
