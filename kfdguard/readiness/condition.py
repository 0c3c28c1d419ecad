"""When compute counts as ready: one rule for the marker, kfdguard wait and the target."""

from __future__ import annotations

ALL, ANY = "all", "any"


def normal_slot(slot: str) -> str:
    """'03:00.0' -> '0000:03:00.0' (lspci prints slots without the domain)."""
    slot = slot.strip().lower()
    return slot if slot.count(":") == 2 else f"0000:{slot}"


def satisfied(state: str, ready_slots: list[str], require: str, gpu: str | None = None) -> bool:
    """``require`` all: state ready; any: some GPU computes; ``gpu``: that GPU computes."""
    if gpu is not None:
        return normal_slot(gpu) in {normal_slot(s) for s in ready_slots}
    if require == ANY:
        return state in ("ready", "degraded") and bool(ready_slots)
    return state == "ready"
