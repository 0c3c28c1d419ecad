"""Budgets of the property tests under the two Hypothesis profiles of tests/conftest.py.

A test's own ``max_examples`` would override the profile, so tests ask here
instead: ``@settings(max_examples=examples(400))`` runs 400 examples in the
default profile and the profile's count (10,000) in the fuzz campaign.
"""

from __future__ import annotations

import os
import string

import pytest
from hypothesis import settings
from hypothesis import strategies as st

CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"

# Tests that only make sense in the long campaign (100 clients x 1,000 calls,
# a minute of D-Bus fuzzing) are skipped by `make test`.
campaign_only = pytest.mark.skipif(not CAMPAIGN, reason="long campaign only: HYPOTHESIS_PROFILE=fuzz pytest -m fuzz")


def examples(default: int, campaign: int | None = None) -> int:
    """``default`` examples normally; the loaded profile's count when that is larger (the fuzz profile).

    ``campaign`` caps the count for a test whose example costs a subprocess or a
    whole generated log; its target is then covered at full count by cheaper tests.
    """
    count = max(default, settings().max_examples)
    return count if campaign is None else max(default, min(count, campaign))


LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits


def token(first: str, rest: str, max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    """A name: one character of ``first``, then up to ``max_size`` of ``rest`` (st.from_regex is far slower)."""
    head = st.sampled_from(first) if first else st.just("")
    return st.tuples(head, st.text(alphabet=rest, min_size=min_size, max_size=max_size)).map("".join)
