"""Budgets of the property tests under the two Hypothesis profiles of tests/conftest.py.

A test's own ``max_examples`` would override the profile, so tests ask here
instead: ``@settings(max_examples=examples(400))`` runs 400 examples in the
default profile and the profile's count (10,000) in the fuzz campaign.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"

# Tests that only make sense in the long campaign (100 clients x 1,000 calls,
# a minute of D-Bus fuzzing) are skipped by `make test`.
campaign_only = pytest.mark.skipif(not CAMPAIGN, reason="long campaign only: HYPOTHESIS_PROFILE=fuzz pytest -m fuzz")


def examples(default: int) -> int:
    """``default`` examples normally; the loaded profile's count when that is larger (the fuzz profile)."""
    return max(default, settings().max_examples)
