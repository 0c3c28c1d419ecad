"""kfdguard.alternation: the prefix-tree pattern finds what the flat alternation, longest first, finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.alternation import alternation
from tests.fuzzing import examples


def _flat(words: set[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


def _found(pattern: re.Pattern[str], text: str) -> tuple[int, str] | None:
    m = pattern.search(text)
    return (m.start(), m.group()) if m else None


# Few letters, so that words share prefixes, end inside each other and meet in the texts; and characters
# the pattern must escape.
_WORDS = st.sets(st.text(alphabet="ab.c*(", min_size=1, max_size=5), min_size=1, max_size=12)
_TEXTS = st.text(alphabet="ab.c*(\n ", max_size=40)


@settings(max_examples=examples(2000), deadline=None)
@given(_WORDS, st.lists(_TEXTS, max_size=6))
def test_it_finds_the_longest_word_at_the_leftmost_place_as_the_flat_alternation(
    words: set[str], texts: list[str]
) -> None:
    tree, flat = re.compile(alternation(words)), _flat(words)
    for text in [*texts, *words, "".join(sorted(words))]:
        assert _found(tree, text) == _found(flat, text), (words, text)


def test_shared_prefixes_are_tested_once() -> None:
    assert alternation({"error", "errno", "ermission"}) == "er(?:mission|r(?:no|or))"
    assert alternation({"amdgpu", "amdgpu is not supported"}) == r"amdgpu(?:\ is\ not\ supported|)"
    assert re.search(alternation({"Device ", "Device #"}), "Device #1").group() == "Device #"  # type: ignore[union-attr]


@pytest.mark.parametrize("words", [set(), {""}, {"amdgpu", ""}])
def test_no_words_or_an_empty_word_is_refused(words: set[str]) -> None:
    with pytest.raises(ValueError, match="everywhere"):
        alternation(words)


def test_the_tables_that_use_it_find_what_they_did() -> None:
    """The kernel-log rules' terms and the application cues, over lines that hold them and lines that do
    not: the same match as their flat alternations (what the modules compiled before)."""
    from kfdguard.kernellog import DEFAULT
    from kfdguard.knowledge.appformats import CUES, FORMATS
    from kfdguard.knowledge.logrules import RULES

    for pattern, words in (
        (DEFAULT.terms, {t for r in RULES for t in r.terms}),
        (CUES, {f.cue for f in FORMATS}),
    ):
        flat = _flat(words)
        lines = [f"[  1.0] x {w} y {w[:-1]}" for w in words] + [w[1:] for w in words] + ["nothing here"]
        assert [_found(pattern, line) for line in lines] == [_found(flat, line) for line in lines]
