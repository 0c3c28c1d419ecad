"""Claims from popular advice that kfd-facts.md §9 shows to be wrong, and what is true.

A rule (``rules.rule_claims``) quotes the claim when a paste repeats it.
"""

from __future__ import annotations

import re

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

# A literal every match of each claim contains (lower case): the patterns' bounded wildcards are slow
# to search over a whole paste, the literal is not.
CUES = ("7440", "14e4", "6.2", "hwe", "7.2", "config_kfd", "modprobe amdkfd")
assert len(CUES) == len(WRONG_ADVICE)


def lines_with(text: str, lowered: str, cue: str) -> list[str]:
    """The lines of ``text`` whose lower case contains ``cue``, found by substring search over the
    whole text (``lowered`` is ``text.lower()``, same length): a pattern whose matches stay within one
    line then runs on those lines only, not on a whole paste."""
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


def search_lines(pattern: re.Pattern[str], text: str, lowered: str, *cues: str) -> re.Match[str] | None:
    """The first match of a single-line pattern among the lines that hold one of ``cues``."""
    tested: set[str] = set()  # a long paste repeats its lines: each distinct one is searched once
    for cue in cues:
        for line in lines_with(text, lowered, cue):
            if line in tested:
                continue
            tested.add(line)
            m = pattern.search(line)
            if m:
                return m
    return None
