"""parse_grubenv cuts the block where grub-editenv's escaping says, as a step per character would."""

from __future__ import annotations

import random
import re

from kfdguard.probe.boot import parse_grubenv


def _by_character(text: str) -> dict[str, str]:
    """The block read a character at a time: a backslash escapes the next one, a newline too."""
    lines, start, i = [], 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "\n":
            lines.append(text[start:i])
            start = i + 1
        i += 1
    lines.append(text[start:])
    values = {}
    for line in lines:
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key] = re.sub(r"\\(.)", r"\1", value, flags=re.S)
    return values


def test_a_real_block_and_its_escapes() -> None:
    block = "# GRUB Environment Block\nsaved_entry=gnulinux-6.8.0\\\\x\nnext_entry=a\\\nb\n"
    block += "#" * (1024 - len(block))
    assert parse_grubenv(block) == {"saved_entry": "gnulinux-6.8.0\\x", "next_entry": "a\nb"}


def test_random_blocks_read_as_a_character_at_a_time() -> None:
    rng = random.Random(5)
    pieces = ["a", "=", "\\", "\n", "#", "saved_entry=", "\\\\", "\\\n", "é"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
        assert parse_grubenv(text) == _by_character(text), repr(text)
