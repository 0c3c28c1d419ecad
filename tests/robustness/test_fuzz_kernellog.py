"""Fuzzing kernel-log scanning: any text, exact line numbers, and rule lines found wherever they sit.

Properties over generated logs:

- scan never raises; it counts every line, numbers events within the log in
  order, and each event's text is the line it names;
- a log given as text or as a list of lines gives the same events;
- normalise reduces a line to a body that is part of the line;
- metamorphic: a rule's own example, written in any kernel/journal/dmesg form
  and put at any position among noise lines, is found at that line; noise
  lines put around a log do not change the events of its lines (their line
  numbers move by exactly the noise above);
- the big-log path (more than SMALL lines, C prefilter) and the paste path
  (every line against the terms) find the same events on kernel-prefixed lines.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.facts import LogEvent
from kfdguard.kernellog import PREFILTER, SMALL, normalise, scan
from kfdguard.knowledge.logrules import RULES
from tests.fuzzing import examples
from tests.unit.test_kernellog import PREFIXES, STAMPS, USERSPACE

pytestmark = pytest.mark.fuzz
BY_ID = {r.id: r for r in RULES}
# Lines without a newline: what a log's lines look like (any other character goes).
line_text = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=120)
noise = st.one_of(
    line_text,
    st.sampled_from(["usb 1-2: new high-speed USB device number 4 using xhci_hcd", "[    0.000000] Linux version 6.8.0",
                     "Jan 30 23:27:53 host systemd[1]: Started foo.service.", "", "   ", "> quoted", "\r"]),
)  # fmt: skip


def rule_line(rule_id: str, stamp: str, prefix: str) -> str:
    """A rule's example as the kernel or the journal would print it (as tests/unit/test_kernellog.py forms it)."""
    example = BY_ID[rule_id].example
    if rule_id in USERSPACE:
        return (
            f"{stamp.split(' kernel: ', maxsplit=1)[0]} host {USERSPACE[rule_id]}[312]: {example}" if stamp else example
        )
    if rule_id == "parse-args-ignored":
        return stamp + "amdgpu: " + example.removeprefix("amdgpu: ")
    return stamp + prefix + example


rule_lines = st.builds(rule_line, st.sampled_from(sorted(BY_ID)), st.sampled_from(STAMPS), st.sampled_from(PREFIXES))


def check_events(text: str, count: int, events: list[LogEvent]) -> None:
    lines = text.split("\n")
    assert count == len(lines)
    for event in events:
        rule = BY_ID[event.rule]
        assert (event.klass, event.code) == (rule.klass, rule.code)
        assert 1 <= event.line <= count
        assert event.text == lines[event.line - 1].strip()
    assert [e.line for e in events] == sorted(e.line for e in events)


@settings(max_examples=examples(300))
@given(st.lists(st.one_of(noise, rule_lines), max_size=40))
def test_scan_numbers_events_exactly(lines: list[str]) -> None:
    text = "\n".join(lines)
    count, events = scan(text, source="fuzz")
    check_events(text, count, events)
    assert all(e.source == "fuzz" for e in events)
    assert scan(text.split("\n"), source="fuzz") == (count, events)
    assert scan(text, source="fuzz") == (count, events)


@settings(max_examples=examples(300))
@given(st.one_of(line_text, rule_lines, st.tuples(rule_lines, line_text).map("".join)))
def test_normalise_keeps_a_piece_of_the_line(raw: str) -> None:
    line = normalise(raw)
    assert line.body in raw
    assert line.body == line.body.strip()
    assert line.device is None or line.device == "kfd" or len(line.device) == 12
    assert line.ident == "kernel" or line.ident in raw


@settings(max_examples=examples(300))
@given(st.lists(noise, max_size=30), rule_lines, st.data())
def test_a_rule_line_is_found_at_its_position_among_noise(before: list[str], line: str, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(before)))
    lines = [*before[:position], line, *before[position:]]
    _, events = scan("\n".join(lines))
    found = {e.rule for e in events if e.line == position + 1}
    expected = {e.rule for e in scan(line)[1]}
    assert expected, line  # every rule's example, in every form, is recognised on its own
    assert found == expected


@settings(max_examples=examples(200))
@given(st.lists(st.one_of(noise, rule_lines), max_size=20), st.lists(noise, max_size=10), st.lists(noise, max_size=10))
def test_noise_around_a_log_only_moves_its_events(log: list[str], above: list[str], below: list[str]) -> None:
    _, alone = scan("\n".join(log))
    _, framed = scan("\n".join([*above, *log, *below]))
    inside = [e for e in framed if len(above) < e.line <= len(above) + len(log)]
    assert [(e.rule, e.line - len(above), e.text) for e in inside] == [(e.rule, e.line, e.text) for e in alone]


@settings(max_examples=examples(10, campaign=2_000))
@given(st.dictionaries(st.integers(0, SMALL + 2_000), rule_lines, min_size=1, max_size=8))
def test_big_logs_find_what_pastes_find(placed: dict[int, str]) -> None:
    filler = [f"systemd[1]: Started session-{i}.scope." for i in range(SMALL + 2_001)]
    assert scan(filler[:10])[1] == []
    lines = list(filler)
    for position, line in placed.items():
        lines[position] = line
    count, big = scan(lines)
    assert count > SMALL  # the C prefilter path
    # The paste path tries every line against the terms: line by line, the same events.
    paste = [(e.rule, n + 1) for n in sorted(placed) for e in scan([lines[n]])[1]]
    assert [(e.rule, e.line) for e in big] == [(rule, n) for rule, n in paste if PREFILTER.search(lines[n - 1])]
    # A rule line with a kernel prefix or a userspace identifier is never lost to the prefilter.
    for position, line in placed.items():
        if any(p and p in line for p in PREFIXES) or any(ident in line for ident in USERSPACE.values()):
            assert {e.rule for e in big if e.line == position + 1} == {e.rule for e in scan(line)[1]}, line
