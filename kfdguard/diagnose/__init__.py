"""Diagnose text pasted from a bug report: what it shows, what is wrong, what it cannot tell.

A thin front end: ``evidence.text`` turns the paste into observations and the
one rule set (``assess.rules``) reasons over them, as it does for a machine.
"""

from __future__ import annotations

import gc

from kfdguard.assess.rules import reason
from kfdguard.evidence.text import read_text
from kfdguard.record import dataclass
from kfdguard.verdict import Finding, Severity, clean

# Exit codes of "kfdguard diagnose FILE".
EXIT_CLEAN, EXIT_WARNINGS, EXIT_PROBLEMS, EXIT_NOTHING = 0, 1, 2, 4


@dataclass(frozen=True)
class TextDiagnosis:
    kinds: tuple[str, ...]  # what the text contained: kernel-log, rocminfo, ls, id, uname, lspci...
    established: tuple[str, ...]  # facts read from it
    findings: tuple[Finding, ...]  # root cause first: errors, then by floor of the stack
    unknown: tuple[str, ...]  # what it does not show, with the command that would
    overruled: tuple[str, ...] = ()  # findings a GPU's own evidence contradicted, and why (--verbose)

    @property
    def exit_code(self) -> int:
        if any(f.severity is Severity.ERROR for f in self.findings):
            return EXIT_PROBLEMS
        if any(f.severity is Severity.WARNING for f in self.findings):
            return EXIT_WARNINGS
        if not self.established:
            return EXIT_NOTHING
        return EXIT_CLEAN


def diagnose_text(text: str) -> TextDiagnosis:
    # A long paste's reading builds a few lists of a hundred thousand lines, and thousands of small records
    # after them: each collection the records trigger walks those young lists again (a tenth of a 10 MB
    # paste's time, measured with py-spy), and finds nothing, since nothing here makes a cycle. So the cycle
    # collector waits until the diagnosis is done; it is back as it was after it, whatever happens. The
    # observations are dropped before it is back: the first collection after it walked their young lists
    # too, for nothing (3 ms of a 10 MB paste's 100).
    enabled = gc.isenabled()
    gc.disable()
    try:
        obs = read_text(text)
        established, findings, unknown, overruled = reason(obs)
        # Both quote the paste (a user or group name, a path), and go to a terminal.
        kinds = tuple(sorted(obs.kinds))
        del obs
        return TextDiagnosis(
            kinds, tuple(map(clean, established)), findings, tuple(map(clean, unknown)), tuple(map(clean, overruled))
        )
    finally:
        if enabled:
            gc.enable()


__all__ = ["TextDiagnosis", "diagnose_text"]
