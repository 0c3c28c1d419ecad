"""The few lines of a long file that can matter, found without a Python step per line."""

from __future__ import annotations


def lines_with(text: str, needles: tuple[str, ...], *, seen_as: str | None = None) -> list[str]:
    """``[line for line in text.splitlines() if any(n in line for n in needles)]``, in order.

    A boot pass wants one symbol of each installed kernel's config (~10,000 lines) and two
    modules of each modules.dep (~6,000): that comprehension cost ~900 instructions a line
    (callgrind). Here str.find looks for each needle and only the lines around a hit are cut.
    ``seen_as``: search this text instead, which has the same length and the same line ends as
    ``text`` (``text`` with dashes read as underscores, say); the lines returned are ``text``'s.
    """
    seen = text if seen_as is None else seen_as
    if len(seen) != len(text):
        raise ValueError("seen_as must have the length of text")
    if any(needle.splitlines() != [needle] for needle in needles):
        # An empty needle is in every line, one with a line end in none: no shortcut for those.
        return [line for line, look in zip(text.splitlines(), seen.splitlines(), strict=True)
                if any(n in look for n in needles)]  # fmt: skip
    # The stretches between two "\n" that hold a hit. str.splitlines also cuts at "\r", "\x1c"
    # and the like: each stretch is cut the same way below, so a line spans no two stretches.
    spans: set[tuple[int, int]] = set()
    for needle in needles:
        at = seen.find(needle)
        while at >= 0:
            start = seen.rfind("\n", 0, at) + 1
            end = seen.find("\n", at + len(needle))
            end = len(seen) if end < 0 else end
            spans.add((start, end))
            at = seen.find(needle, end)
    found: list[str] = []
    for start, end in sorted(spans):
        pairs = zip(text[start:end].splitlines(), seen[start:end].splitlines(), strict=True)
        found.extend(line for line, look in pairs if any(n in look for n in needles))
    return found
