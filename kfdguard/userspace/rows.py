"""One stack × GPU verdict: what userspace/assess.py decides, and the report, the bus and the application
rules (userspace/application_rules.py) read. Apart from assess so that those rules need not import it."""

from __future__ import annotations

from kfdguard.record import dataclass


@dataclass(frozen=True, slots=True)
class Row:
    """One stack × GPU verdict, for the report."""

    stack: str
    slot: str
    gfx: str | None
    status: str  # runs, runs-generic, no-code, override, unknown
    detail: str
