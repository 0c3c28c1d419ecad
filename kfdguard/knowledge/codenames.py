"""Discrete GPUs named by their chip's code name in prose ("Navi 31", "Polaris 22", "Vega M", "Sienna Cichlid").

The names come from knowledge/asics.py's ``family`` of each discrete ASIC ("Navi21 (Sienna Cichlid)", "VegaM
(Polaris22)"), so a chip added there is read here without a row of its own. Only names a person cannot mean
otherwise are kept: a family word with its number ("Navi 22", written with or without the space), "Vega M", and
the multi-word driver names. Single words that are also places or stars ("Fiji", "Hawaii", "Arcturus") are left
to the ids and retail names, and "Vega 10" beside "Radeon ... Graphics" is a Raven APU's iGPU (its 10 compute
units), not the Vega 10 chip.
"""

from __future__ import annotations

import functools
import re

from kfdguard.knowledge.asics import ASICS
from kfdguard.knowledge.model import Asic

_NUMBERED = re.compile(r"^(?P<word>[A-Z][a-z]+) ?(?P<number>\d{1,2}|M)$")
_WORDS = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)+$")  # "Sienna Cichlid", "Navy Flounder"


def _names(asic: Asic) -> list[tuple[str, str]]:
    """The family's names of ``asic`` as a pattern each, with the name's first word: "Navi21 (Sienna Cichlid)"
    gives ("Navi[ -]?21", "Navi") and ("Sienna\\ Cichlid", "Sienna")."""
    names = []
    for piece in re.split(r"[()/]", asic.family):
        part = piece.strip()
        m = _NUMBERED.match(part)
        if m:
            names.append((rf"{m['word']}[ -]?{m['number']}", m["word"]))
        elif _WORDS.match(part):
            names.append((re.escape(part), part.split()[0]))
    return names


@functools.cache
def _table() -> tuple[re.Pattern[str], dict[str, Asic], tuple[str, ...]]:
    by_name: dict[str, Asic] = {}
    patterns: list[str] = []
    words: set[str] = set()
    for asic in ASICS:
        if asic.apu or asic.gfx is None:
            continue
        for name, word in _names(asic):
            group = f"a{len(patterns)}"
            by_name[group] = asic
            patterns.append(f"(?P<{group}>{name})")
            words.add(word.lower())
    # Not "Radeon Vega 10 Graphics" nor "Vega 8" (APU iGPUs named by compute units).
    pattern = re.compile(r"\b(?:" + "|".join(patterns) + r")\b(?!\s+graphics)", re.I)
    return pattern, by_name, tuple(sorted(words))


def codename_cues() -> tuple[str, ...]:
    """The lower-cased words one of which every code name holds: a line without any names no chip."""
    return _table()[2]


def codename_asics(line: str) -> list[tuple[Asic, str]]:
    """The discrete ASICs the line names by code name, with the words that name each."""
    pattern, by_name, _cues = _table()
    found = []
    for m in pattern.finditer(line):
        group = m.lastgroup
        if group is not None:
            found.append((by_name[group], m.group(0)))
    return found


__all__ = ["codename_asics", "codename_cues"]
