"""The evidence layer: sources (a live machine, pasted text) turned into observations with provenance."""

from __future__ import annotations

from kfdguard.evidence.model import Observations, Observed, SeenAgent, SeenGpu, SeenNode, SeenUser, Source

__all__ = ["Observations", "Observed", "SeenAgent", "SeenGpu", "SeenNode", "SeenUser", "Source"]
