"""The rules' shared index of a long paste's lines (assess/claims.py: lines_with, index_lines).

A long paste is searched through its distinct lines; a short one directly. Both must give what the
definition says: the distinct lines whose lower case holds the cue, in the order they first appear.
The index is forced on small texts here (INDEXED = 0), so that Hypothesis can try many.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.assess import claims
from kfdguard.assess.rules import reason
from kfdguard.evidence.text import read_text
from kfdguard.kernellog import blind_to_times, untimed
from tests.fuzzing import examples
from tests.paths import TOP


def _corpus_texts() -> list[str]:
    corpus = TOP / "tests" / "data" / "real-reports"
    return [p.read_text(encoding="utf-8").partition("\n# ---\n")[2] for p in sorted(corpus.glob("*.txt"))]


_TEXTS = _corpus_texts()
# Lines of the real reports, and lines whose lower case is not character for character (the Turkish
# dotted I lengthens, a Greek capital sigma lowers by its context).
_LINES = [
    *sorted({line for text in _TEXTS for line in text.split("\n")}),
    "İstanbul: /dev/kfd Permission denied",
    "ΟΔΥΣΣΕΥΣ kernel 6.8",
    "Σ",
]
_CUES = ("/dev/kfd", "kernel ", "linux ", "root", "sudo", " group", "support", "7440", "6.2", "dkms", "σ", "i̇")


def _spec(text: str, cue: str) -> list[str]:
    return [line for line in dict.fromkeys(text.split("\n")) if cue in line.lower()]


@pytest.fixture
def indexed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(claims, "INDEXED", 0)
    claims._LAST.clear()
    yield
    claims._LAST.clear()


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(0, len(_LINES) - 1), max_size=40), st.sampled_from(_CUES), st.booleans())
def test_the_index_finds_what_the_definition_says(picks: list[int], cue: str, prepared: bool) -> None:
    text = "\n".join(_LINES[i] for i in picks + picks[:5])
    direct = claims.lines_with(claims.Text(text), cue)
    saved = claims.INDEXED
    claims.INDEXED = 0
    try:
        claims._LAST.clear()
        if prepared:
            claims.index_lines(text, text.split("\n"))
        through_index = claims.lines_with(claims.Text(text), cue)
        again = claims.lines_with(claims.Text(text), cue)  # from the index's memo of this cue
    finally:
        claims.INDEXED = saved
        claims._LAST.clear()
    if len(text.lower()) == len(text):
        assert direct == through_index == again == _spec(text, cue)
    else:
        assert direct == through_index == again  # no alignment: both search the text the same way


_TIMES = st.sampled_from(
    [
        "",
        "[    1.000000] ",
        "[ 6.200000] ",
        "[7440.5] ",
        "[  12.345678]",
        "[] ",
        "Dec 01 10:00:05 ",
        "Dec 01 10:00:06 box ",
        "2025-03-03T10:00:01.123Z ",
        "x\x00y 10:00:05,5 ",
        "[    2.000000] 23:59:59 ",
    ]
)
_WORDS = (
    *_CUES,
    "amdgpu",
    "HSA Agents",
    "[1002:",
    "] kfd",
    "0]",
    "Permission denied",
    ".service",
    "10:00",
    ":05 b",
    ".",
    "5 b",
    "Z /",
    "\x00",
    "01 1",
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_LINES) - 1), _TIMES), max_size=40), st.sampled_from(_WORDS))
def test_the_untimed_index_finds_what_the_definition_says(picks: list[tuple[int, str]], word: str) -> None:
    """Lines of real reports behind dmesg times (the same line behind several, times that hold a cue):
    through the index of untimed lines, a cue finds the distinct lines whose lower case holds it, in
    the order they first appear, and a word is in the text exactly when ``in`` says so."""
    text = "\n".join(time + _LINES[i] for i, time in picks + picks[:5])
    lowered = text.lower()
    cue = word.lower()
    saved = claims.INDEXED
    claims.INDEXED = 0
    try:
        claims._LAST.clear()
        distinct = list(dict.fromkeys(text.split("\n")))
        claims.index_lines(text, text.split("\n"), distinct, untimed(distinct))
        source = claims.Text(text)
        found = claims.lines_with(source, cue) if len(lowered) == len(text) else None
        holds = (claims.contains(source, word), claims.contains(source, cue, lower=True))
    finally:
        claims.INDEXED = saved
        claims._LAST.clear()
    if found is not None:
        assert found == _spec(text, cue)
    assert holds == (word in text, cue in lowered)


def test_lines_of_several_untimed_forms_come_in_the_order_they_first_appear(indexed: None) -> None:
    lines = [
        "[    1.000000] amdgpu: ring A",
        "x amdgpu",
        "[    2.000000] amdgpu: ring B",
        "[    3.000000] amdgpu: ring A",
    ]
    text = "\n".join([*lines, lines[0]])
    assert claims.lines_with(claims.Text(text), "amdgpu") == lines
    assert claims.lines_with(claims.Text(text), "ring a") == [lines[0], lines[3]]
    assert claims.lines_with(claims.Text(text), "1.0") == [lines[0]]  # in a time only: the distinct lines


def test_lines_that_are_not_the_text_are_not_indexed(indexed: None) -> None:
    text = "first line\nsecond root line"
    claims.index_lines(text, ["another", "text"])
    assert claims.lines_with(claims.Text(text), "root") == ["second root line"]
    assert claims.lines_with(claims.Text(text), "another") == []


def test_a_new_text_gets_a_new_index(indexed: None) -> None:
    one, two = "a root line\nx", "sudo works\ny"
    assert claims.lines_with(claims.Text(one), "root") == ["a root line"]
    assert claims.lines_with(claims.Text(two), "root") == []
    assert claims.lines_with(claims.Text(two), "sudo") == ["sudo works"]


@pytest.mark.parametrize("cue", ["", "two\nlines"])
def test_a_cue_that_is_not_a_piece_of_one_line_is_refused(cue: str) -> None:
    with pytest.raises(ValueError, match="non-empty piece of one line"):
        claims.lines_with(claims.Text("text"), cue)


def _diagnosis(text: str) -> tuple[object, ...]:
    claims._LAST.clear()
    obs = read_text(text)
    established, findings, unknown, _overruled = reason(obs)
    return (sorted(obs.kinds), established, findings, unknown)


@pytest.mark.parametrize("index", range(0, len(_TEXTS), 4))
def test_the_index_never_changes_a_diagnosis(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join([_TEXTS[index], _TEXTS[(index + 5) % len(_TEXTS)], _TEXTS[index]])
    direct = _diagnosis(text)
    monkeypatch.setattr(claims, "INDEXED", 0)
    assert _diagnosis(text) == direct


def test_every_claim_cue_is_searched_among_the_untimed_lines() -> None:
    # A cue that a dmesg time could hold ("6.2") sends a long paste's search through all its distinct
    # lines joined; the claims' cues carry a letter so that none does.
    cues = [cue for group in claims.CUES for cue in group]
    assert cues and all(blind_to_times(cue) for cue in cues), [c for c in cues if not blind_to_times(c)]


@pytest.mark.parametrize(
    "line",
    [
        "[    6.200000] someone wrote: RDNA3 compute needs kernel 6.2",
        "[  780.123456] the 780M is 0x14E4, they said",
        "[ 7440.000000] 0x7440 is the 7900 XTX",
        "[   12.000000] ROCm 7.2 came out in June 2024",
    ],
)
def test_a_claim_in_a_timed_line_of_a_long_paste_is_found(line: str) -> None:
    noise = "\n".join(f"[{i / 1000:12.6f}] usb 1-2: new high-speed USB device number {i % 97}" for i in range(60_000))
    long = f"{noise}\n{line}\n{noise}"
    assert len(long) >= claims.INDEXED
    assert "wrong-advice" in {f.code for f in reason(read_text(long))[1]}
    assert "wrong-advice" in {f.code for f in reason(read_text(line))[1]}


@settings(max_examples=examples(3000), deadline=None)
@given(st.text(alphabet="ab .:05\u0660", max_size=12), st.text(alphabet="ab .:05\u0660", min_size=1, max_size=4))
def test_a_word_blind_to_digits_is_in_a_line_as_in_it_with_its_digits_made_0(line: str, word: str) -> None:
    """What the index's search among lines with their digits made "0" rests on (claims.blind_to_digits)."""
    if claims.blind_to_digits(word):
        assert (word in line) == (word in line.translate(claims._DIGITS))


def test_journal_lines_that_differ_in_their_clocks_are_found_in_order(indexed: None) -> None:
    lines = [
        "Dec 01 10:00:05 box kernel: amdgpu: ring A",
        "[    1.000000] amdgpu: ring A",
        "Dec 01 10:00:06 box kernel: amdgpu: ring B",
        "Dec 01 10:00:07 box kernel: amdgpu: ring A",
        "time=10:00:07.5 kernel",
    ]
    text = "\n".join([*lines, lines[0]])
    assert claims.lines_with(claims.Text(text), "amdgpu") == lines[:4]
    assert claims.lines_with(claims.Text(text), "ring a") == [lines[0], lines[1], lines[3]]
    assert claims.lines_with(claims.Text(text), "kernel") == [lines[0], lines[2], lines[3], lines[4]]
    assert claims.lines_with(claims.Text(text), "10:00:06") == [lines[2]]  # a clock's digits: the untimed lines
    assert claims.contains(claims.Text(text), "ring b", lower=True)
    assert not claims.contains(claims.Text(text), "10:00:08")


def test_a_pastes_rules_share_one_index_while_they_run_and_drop_it_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """rules.run indexes a long paste once for all its rules, and forgets the index when they are done
    (its lists of the paste's lines are read by nothing after): also when a rule fails."""
    from kfdguard.assess import rules
    from kfdguard.assess.reasoning import Reasoning
    from kfdguard.evidence.text import read_text

    obs = read_text("\n".join(f"[{i:12.6f}] usb 1-2: device {i % 9}" for i in range(claims.INDEXED // 30)))
    assert len(obs.text) >= claims.INDEXED
    seen: list[object] = []

    def spy(r: Reasoning) -> None:
        seen.append(claims._index_of(obs.text))

    monkeypatch.setattr(rules, "_rules", lambda: (spy, spy))
    claims._LAST.clear()
    rules.run(obs)
    assert seen[0] is not None and seen[0] is seen[1]
    assert claims._index_of(obs.text) is None and not claims._LAST

    def failing(r: Reasoning) -> None:
        raise RuntimeError("a rule that fails")

    monkeypatch.setattr(rules, "_rules", lambda: (spy, failing))
    with pytest.raises(RuntimeError):
        rules.run(obs)
    assert seen[2] is not None and not claims._LAST
