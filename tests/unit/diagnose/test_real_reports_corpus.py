"""The corpus of real reports (tests/data/real-reports): the contract of issue 16.

Every file is one text copied from a public thread, headed by where it came from,
the root cause the thread established, and the finding codes a correct diagnosis
must (and must not) give. The first tests check the corpus itself; the last one
diagnoses every text and asserts its header: each expected code found, each
must-not code absent. There is no list of known failures: a file that fails is a
failing test (tools/corpus_score.py prints the same comparison for all files).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from kfdguard.diagnose import diagnose_text
from tests.corpus import files, header
from tests.paths import TOP

CORPUS = TOP / "tests" / "data" / "real-reports"
README = CORPUS / "README.md"
FIELDS = ("source", "cause", "class", "expect", "must-not", "gpus", "trimmed")
CLASSES = frozenset({"userspace", "kernel", "permission", "container", "working", "mixed"})
CODE = re.compile(r"[a-z]+(?:-[a-z0-9]+)+")
NAME = re.compile(r"(?P<number>\d{3})-[a-z0-9]+(?:[-.][a-z0-9]+)*\.txt")
# The mix issue 16 asks for, at least.
MINIMUM = {"all": 60, "userspace": 20, "kernel": 15, "permission+container": 10, "working": 8, "mixed": 5}


def _files() -> list[Path]:
    return files(CORPUS)


def _header(path: Path) -> tuple[dict[str, str], str]:
    return header(path, FIELDS)


def _codes(value: str) -> list[str]:
    return [] if value == "-" else value.split()


def _defined_codes() -> dict[str, str]:
    """code -> "existing" or "new", from the README's table of codes."""
    rows = re.findall(r"^\| `([^`]+)` \| (existing|new) \|", README.read_text(encoding="utf-8"), re.M)
    assert rows, "README.md has no table of codes"
    codes = dict(rows)
    assert len(codes) == len(rows), "a code is defined twice in README.md"
    return codes


def _package_literals() -> set[str]:
    found: set[str] = set()
    for path in (TOP / "kfdguard").rglob("*.py"):
        found.update(re.findall(r"\"([a-z]+(?:-[a-z0-9]+)+)\"", path.read_text(encoding="utf-8")))
    return found


FILES = _files()


def test_the_corpus_has_files_and_only_corpus_files() -> None:
    assert FILES, f"no corpus files in {CORPUS}"
    numbers = []
    for path in FILES:
        match = NAME.fullmatch(path.name)
        assert match, f"{path.name}: corpus files are named NNN-short-slug.txt"
        numbers.append(match["number"])
    assert len(numbers) == len(set(numbers)), [n for n, c in Counter(numbers).items() if c > 1]


HELD_OUT = files(TOP / "tests" / "data" / "real-reports-held-out")


@pytest.mark.parametrize("path", FILES + HELD_OUT, ids=[f"{p.parent.name}/{p.name}" for p in FILES + HELD_OUT])
def test_header(path: Path) -> None:
    fields, text = _header(path)
    url = fields["source"].split()[0]
    parts = urlsplit(url)
    assert parts.scheme == "https" and parts.netloc and parts.path not in ("", "/"), f"{path.name}: {url}"
    assert fields["class"] in CLASSES, f"{path.name}: class {fields['class']!r}"
    expect, must_not = _codes(fields["expect"]), _codes(fields["must-not"])
    for code in expect + must_not:
        assert CODE.fullmatch(code), f"{path.name}: {code!r} is not a finding code"
    assert len(set(expect)) == len(expect) and len(set(must_not)) == len(must_not), path.name
    assert not set(expect) & set(must_not), f"{path.name}: a code is both expected and forbidden"
    # A failure must name its cause; only a working system or neutral lines may expect nothing.
    assert expect or fields["class"] in ("working", "kernel"), f"{path.name}: expect names no code"
    assert text.strip(), f"{path.name}: no text below the header"
    assert "\r" not in text and "\x00" not in text, f"{path.name}: text has CR or NUL bytes"


def test_every_code_is_defined() -> None:
    defined = _defined_codes()
    used: set[str] = set()
    for path in FILES:
        fields, _ = _header(path)
        used.update(_codes(fields["expect"]) + _codes(fields["must-not"]))
    assert sorted(used - set(defined)) == [], "codes used in headers but not in README.md's table"
    held: set[str] = set()
    for path in HELD_OUT:
        fields, _ = _header(path)
        held.update(_codes(fields["expect"]) + _codes(fields["must-not"]))
    assert sorted(held - set(defined)) == [], "codes used in the held-out headers but not in README.md's table"
    # The table is the corpus's vocabulary, not a wish list.
    assert sorted(set(defined) - used) == [], "codes in README.md's table that no header uses"
    literals = _package_literals()
    claimed = sorted(c for c, kind in defined.items() if kind == "existing" and c not in literals)
    assert claimed == [], "README.md calls these existing, but kfdguard/ does not name them"


def test_no_thread_twice() -> None:
    """Not within the corpus, and not in both the corpus and the held-out set (whose diagnosis is scored,
    not asserted: no rule is written from it, tests/data/real-reports-held-out/README.md)."""
    assert HELD_OUT, "the held-out set is empty"
    threads: Counter[str] = Counter()
    for path in FILES + HELD_OUT:
        url = _header(path)[0]["source"].split()[0]
        parts = urlsplit(url)
        threads[f"{parts.netloc.lower()}{parts.path.rstrip('/')}"] += 1
    assert [t for t, n in threads.items() if n > 1] == []


def test_the_mix_issue_16_asks_for() -> None:
    classes = Counter(_header(p)[0]["class"] for p in FILES)
    have = {
        "all": len(FILES),
        "userspace": classes["userspace"],
        "kernel": classes["kernel"],
        "permission+container": classes["permission"] + classes["container"],
        "working": classes["working"],
        "mixed": classes["mixed"],
    }
    short = {kind: (have[kind], need) for kind, need in MINIMUM.items() if have[kind] < need}
    assert short == {}, f"(have, need): {short}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_diagnosis_matches_the_header(path: Path) -> None:
    fields, text = _header(path)
    result = diagnose_text(text)
    got = {f.code for f in result.findings}
    expect, must_not = set(_codes(fields["expect"])), set(_codes(fields["must-not"]))
    shown = [f"{f.code}: {f.message}" for f in result.findings]
    assert expect <= got, f"{path.name}: missing {sorted(expect - got)}; found {shown}"
    assert not must_not & got, f"{path.name}: gave the wrong answer {sorted(must_not & got)}; found {shown}"
    if not expect:
        # A working system or neutral lines: nothing may be reported as an error.
        assert not [f for f in result.findings if f.severity.value == "error"], f"{path.name}: {shown}"
