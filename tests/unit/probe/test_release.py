"""A kernel release is accepted exactly as uname -r's pattern accepts it: 1-64 of [0-9A-Za-z._+~-]."""

from __future__ import annotations

import random
import re

from kfdguard.probe.system_info import _plain_release

PATTERN = re.compile(r"(?!\.\.?$)[0-9A-Za-z._+~-]{1,64}")  # what the probe matched before


def test_release_check_is_the_pattern() -> None:
    rng = random.Random(3)
    cases = [".", "..", "...", "", "a" * 64, "a" * 65, ".\n", "6.8.0-45-generic", "6.12.117+deb13-amd64", "a/b"]
    cases += ["".join(rng.choice("aZ09._+~-\n /é") for _ in range(rng.randint(0, 6))) for _ in range(50000)]
    for case in cases:
        assert _plain_release(case) == (PATTERN.fullmatch(case) is not None), repr(case)
