"""Claims from popular advice that kfd-facts.md §9 shows to be wrong, and what is true.

A rule (``rules.rule_claims``) quotes the claim when a paste repeats it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kfdguard.kernellog import blind_to_times, untimed

WRONG_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"0x7440\b.{0,60}(?:navi ?31|7900)|(?:navi ?31|7900).{0,60}0x7440\b", re.I),
        "0x7440 is not a Navi31 id: consumer RX 7900 cards are 1002:744C, the Pro W7900/W7800 0x7448 and 0x745E",
    ),
    (
        re.compile(r"780m.{0,60}(?:0x)?14e4\b|(?:0x)?14e4\b.{0,60}780m", re.I),
        "the Radeon 780M is 1002:15BF (Phoenix; 0x1900/0x1901 on Hawk Point); 0x14E4 is Broadcom's PCI vendor id",
    ),
    (
        re.compile(
            r"(?:rdna ?3|gfx11|7900|7800|7600).{0,80}(?:kfd|compute|rocm|support)?.{0,40}"
            r"(?:since|from|arrived in|needs?|requires?|added in) (?:linux |kernel )?6\.2\b",
            re.I,
        ),
        "KFD support for GFX11 (GC 11.0.0/11.0.1/11.0.2: Navi31, Phoenix, Navi33) was committed in May 2022 for "
        "Linux 6.0; only GC 11.0.4 (Phoenix2) is 6.2-era",
    ),
    (
        re.compile(
            r"22\.04.{0,60}hwe.{0,80}(?:5\.15|can'?t|cannot|not).{0,40}(?:past|beyond|newer|higher|above)"
            r"|hwe.{0,40}22\.04.{0,60}(?:stuck|limited) (?:at|to) 5\.15",
            re.I,
        ),
        "Ubuntu 22.04's HWE kernel is not stuck at 5.15: the point releases moved it to 5.19, 6.2, 6.5 and, "
        "with 22.04.5, 6.8 (linux-generic-hwe-22.04)",
    ),
    (
        re.compile(r"rocm 7\.2\b.{0,60}(?:june|jun\.?) 2024|(?:june|jun\.?) 2024.{0,60}rocm 7\.2\b", re.I),
        "ROCm 7.2.0 was released on 21 January 2026; June 2024 was ROCm 6.1.2",
    ),
    (re.compile(r"\bCONFIG_KFD\b"), "there is no CONFIG_KFD: KFD's Kconfig option is CONFIG_HSA_AMD"),
    (
        re.compile(r"(?:sudo )?modprobe amdkfd\b"),
        "on Linux 4.20 and later there is no amdkfd module to load: KFD is part of amdgpu and "
        "'modprobe amdkfd' fails with 'Module amdkfd not found'",
    ),
)

# Literals one of which every match of each claim contains (lower case): the patterns' bounded wildcards
# are slow to search over a whole paste, the literals are not. Each holds a letter, so that none can lie in
# a dmesg time (kernellog.blind_to_times) and a long paste is searched for it among its few untimed lines:
# "6.2" alone could be a time's digits, the verb before it in the claim cannot.
CUES: tuple[tuple[str, ...], ...] = (
    ("0x7440",),
    ("14e4",),
    ("since ", "from ", "arrived in ", "need", "require", "added in "),
    ("hwe",),
    ("rocm 7.2",),
    ("config_kfd",),
    ("modprobe amdkfd",),
)
assert len(CUES) == len(WRONG_ADVICE)


# A paste this long is searched through its index of distinct lines (_Index); a shorter one directly.
INDEXED = 1_000_000


# Every ASCII digit as "0": in a long paste's untimed lines most of what still differs is digits (a journal
# line a second, a counter, a pid), and str.translate replaces them in C over the few hundred kilobytes.
_DIGITS = str.maketrans("123456789", "000000000")
_ASCII_DIGITS = frozenset("0123456789")


def blind_to_digits(word: str) -> bool:
    """Whether ``word`` is in a line exactly when it is in the line with its ASCII digits made "0"
    (_DIGITS): a word that holds none cannot lie over a digit in either, and nothing else changes."""
    return not _ASCII_DIGITS.intersection(word)


class _Index:
    """A long text's distinct lines, searched through their untimed forms, and the lines found for each cue.

    A long paste repeats itself (the same journal, application and prose lines thousands of times), and
    its rules search it for some forty cues and words: each whole-text search of a 10 MB paste cost as
    much as half of splitting it, most of it spent on repeats. Its distinct lines are still half the text:
    a kernel log's lines differ in their times. Without their dmesg times (kernellog.untimed) a few
    thousand lines remain, a few hundred kilobytes, and most of those are journal lines that differ in
    their clocks' digits; with every digit made "0", a few hundred lines. A cue or word blind to times and
    digits (kernellog.blind_to_times, blind_to_digits) is in a line exactly when it is in that form of the
    line, so it is searched for there, and the lines it finds stand for every distinct line with that form.
    A cue blind to times only ("rocm 7.2", "14e4") is searched among the untimed lines, built when first
    needed; any other in the distinct lines joined. A cue asked for twice is searched once.
    """

    __slots__ = (
        "_forms", "_full", "_groups", "_members", "_order", "_rank", "_untimed",
        "distinct", "found", "lowered", "source", "text", "unique", "units",
    )  # fmt: skip

    def __init__(
        self, text: str, distinct: list[str], units: list[str] | None = None, unique: list[str] | None = None
    ) -> None:
        self.source = text  # held, so that the identity test in _index cannot meet a new string at its address
        self.distinct = distinct
        self.units = untimed(distinct) if units is None else units
        # the untimed forms, in the order they first appear
        self.unique = list(dict.fromkeys(self.units)) if unique is None or units is None else unique
        self._forms = "\n".join(self.unique).translate(_DIGITS).split("\n")  # each with its digits made "0"
        self.text = "\n".join(dict.fromkeys(self._forms))
        self.lowered = self.text.lower()
        self.found: dict[str, list[str]] = {}
        self._untimed: tuple[str, str] | None = None  # the untimed forms joined, and in lower case
        self._full: tuple[str, str] | None = None  # the distinct lines joined, and in lower case
        self._groups: dict[str, list[str]] | None = None  # an untimed form -> the distinct lines it stands for
        self._members: dict[str, list[str]] | None = None  # a form with a "0" -> the untimed forms it stands for
        self._order: dict[str, int] | None = None  # a distinct line -> where it first appears
        self._rank: dict[str, int] | None = None  # an untimed form -> where it first appears

    def full(self) -> tuple[str, str]:
        if self._full is None:
            joined = "\n".join(self.distinct)
            self._full = (joined, joined.lower())
        return self._full

    def untimed_text(self) -> tuple[str, str]:
        if self._untimed is None:
            joined = "\n".join(self.unique)
            self._untimed = (joined, joined.lower())
        return self._untimed

    def _texts(self, word: str) -> tuple[str, str]:
        """The text (and its lower case) that holds ``word`` in a line exactly when the long text does."""
        if not blind_to_times(word):
            return self.full()
        return (self.text, self.lowered) if blind_to_digits(word) else self.untimed_text()

    def contains(self, word: str, lower: bool) -> bool:
        """Whether a line of the text (or of its lower case) holds ``word``, a piece of one line."""
        text, lowered = self._texts(word)
        return word in (lowered if lower else text)

    def lines_with(self, cue: str) -> list[str]:
        if not blind_to_times(cue):
            text, lowered = self.full()
            return _find(text, lowered, cue)
        found = self._untimed_forms(cue)
        if not any(unit[:2] == "[]" for unit in found):
            return found  # no dmesg line among them: each line is its own untimed form
        if self._groups is None:
            # Every line whose untimed form begins "[]": the dmesg lines, and any line written so itself.
            self._groups = _grouped(self.distinct, self.units, lambda unit: unit[:2] == "[]")
        return _expanded(found, self._groups, self._order_of)

    def _untimed_forms(self, cue: str) -> list[str]:
        """The untimed forms whose lower case holds ``cue`` (blind to times), in the order they first appear."""
        if not blind_to_digits(cue):
            return _find(*self.untimed_text(), cue)
        found = _find(self.text, self.lowered, cue)
        if not any("0" in form for form in found):
            return found  # no digit in them: each is its own untimed form
        if self._members is None:
            # Every untimed form whose form holds a "0": it had a digit, and another form with other digits may
            # have the same one (a form without "0" is its own untimed form, and stands for no other).
            self._members = _grouped(self.unique, self._forms, lambda form: "0" in form)
        return _expanded(found, self._members, self._rank_of)

    def _order_of(self) -> dict[str, int]:
        if self._order is None:
            self._order = {line: at for at, line in enumerate(self.distinct)}
        return self._order

    def _rank_of(self) -> dict[str, int]:
        if self._rank is None:
            self._rank = {unit: at for at, unit in enumerate(self.unique)}
        return self._rank


def _grouped(members: list[str], keys: list[str], kept: Callable[[str], bool]) -> dict[str, list[str]]:
    """Each kept key with the members that have it, in the order they come (members and keys pair up)."""
    groups: dict[str, list[str]] = {}
    for member, key in zip(members, keys, strict=True):
        if kept(key):
            groups.setdefault(key, []).append(member)
    return groups


def _expanded(found: list[str], groups: dict[str, list[str]], order: Callable[[], dict[str, int]]) -> list[str]:
    """What the found keys stand for (a key without a group stands for itself). Each group is in order; the
    keys of several groups are merged by where each first appears (``order``, made only then)."""
    out = [member for key in found for member in groups.get(key, (key,))]
    if len(out) > len(found) and len(found) > 1:
        out.sort(key=order().__getitem__)
    return out


_LAST: list[_Index] = []  # the index of the text searched last: a diagnosis asks its rules in turn


def _index(text: str) -> _Index:
    last = _index_of(text)
    if last is not None:
        return last
    index = _Index(text, list(dict.fromkeys(text.split("\n"))))
    _LAST[:] = [index]
    return index


def index_lines(
    text: str,
    lines: list[str],
    distinct: list[str] | None = None,
    units: list[str] | None = None,
    unique: list[str] | None = None,
) -> None:
    """Index a long ``text`` that is ``lines`` joined by newlines (Observations.text and .lines) before its
    rules search it. A ``lines`` that is not ``text`` split is ignored: the search then splits the text.
    ``distinct`` and ``units``, where given, are the lines' distinct lines in the order they first appear and
    those untimed (Observations.distinct and .units, as evidence.text made them from those lines); ``unique``
    the untimed forms each once, in the order they first appear (Observations.unique)."""
    if len(text) < INDEXED or _index_of(text) is not None:
        return
    if distinct is None or units is None or len(distinct) != len(units):
        if "\n".join(lines) == text:
            _LAST[:] = [_Index(text, list(dict.fromkeys(lines)))]
        return
    _LAST[:] = [_Index(text, distinct, units, unique)]


def forget_index(text: str) -> None:
    """Drop the index of ``text`` once its rules are done (rules.run): a long paste's index holds lists of
    its distinct lines, which nothing reads after its diagnosis."""
    if _index_of(text) is not None:
        _LAST.clear()


def _index_of(text: str) -> _Index | None:
    last = _LAST[0] if _LAST else None
    return last if last is not None and last.source is text else None


TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported on the boot path (tests/service/test_boot_path.py)
    from typing import Protocol

    class Searchable(Protocol):
        """What the searches below read: a text and its lower case (Observations, or Text for any other
        string). A long text's lower case is not read when the text is ASCII: its index answers from its own
        lines."""

        @property
        def text(self) -> str: ...

        @property
        def lowered(self) -> str: ...


class Text:
    """A text to search that is not a paste's Observations; its lower case is made when first needed."""

    __slots__ = ("_lowered", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lowered: str | None = None

    @property
    def lowered(self) -> str:
        if self._lowered is None:
            self._lowered = self.text.lower()
        return self._lowered


def _long(source: Searchable, word: str) -> bool:
    """Whether a text is searched through an index: a long one whose lines and their lower case align (an
    ASCII text always does, and str.isascii is a flag of the string: its lower case need not be made)."""
    text = source.text
    return len(text) >= INDEXED and "\n" not in word and (text.isascii() or len(source.lowered) == len(text))


def contains(source: Searchable, word: str, *, lower: bool = False) -> bool:
    """``word in`` the text (in its lower case with ``lower``), for a word that is a piece of one line: a long
    text through its index, where the word is looked for among its few untimed lines when it can be."""
    index = _index_of(source.text) if _long(source, word) else None  # one search needs no index made for it
    if index is None:
        return word in (source.lowered if lower else source.text)
    return index.contains(word, lower)


def _find(text: str, lowered: str, cue: str) -> list[str]:
    found: list[str] = []
    position = 0
    while True:
        at = lowered.find(cue, position)
        if at < 0:
            return found
        start = text.rfind("\n", 0, at) + 1
        stop = text.find("\n", at)
        if stop < 0:
            stop = len(text)
        found.append(text[start:stop])
        position = stop + 1


def lines_with(source: Searchable, cue: str) -> list[str]:
    """The distinct lines of the text whose lower case contains ``cue``, in the order they first appear,
    found by substring search over the text and its lower case (of the same length, or the text is searched
    as it is): a pattern whose matches stay within one line then runs on those lines only, not on a whole
    paste. A long text is searched through its index of distinct lines, built once for all the rules that ask."""
    if not cue or "\n" in cue:
        raise ValueError(f"a cue is a non-empty piece of one line: {cue!r}")
    if not _long(source, cue):
        return list(dict.fromkeys(_find(source.text, source.lowered, cue)))
    index = _index(source.text)
    found = index.found.get(cue)
    if found is None:
        found = index.found[cue] = index.lines_with(cue)
    return list(found)


def search_lines(pattern: re.Pattern[str], source: Searchable, *cues: str) -> re.Match[str] | None:
    """The first match of a single-line pattern among the lines that hold one of ``cues``."""
    tested: set[str] = set()  # a long paste repeats its lines: each distinct one is searched once
    for cue in cues:
        for line in lines_with(source, cue):
            if line in tested:
                continue
            tested.add(line)
            m = pattern.search(line)
            if m:
                return m
    return None


def line_number(lines: list[str], line: str) -> int:
    """The 1-based number of the first line equal to ``line`` (0 where none is): one C-level scan of the list.
    A line lines_with found is a line of the text, but a rule holds a line it built itself too."""
    try:
        return lines.index(line) + 1
    except ValueError:
        return 0
