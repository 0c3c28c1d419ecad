"""Diagnose text pasted from a bug report: what it shows, what is wrong, what it cannot tell."""

from __future__ import annotations

from kfdguard.diagnose.extract import TextFacts, extract
from kfdguard.diagnose.reason import reason
from kfdguard.record import dataclass
from kfdguard.verdict import Finding, Severity, clean

# Exit codes of "kfdguard diagnose FILE".
EXIT_CLEAN, EXIT_WARNINGS, EXIT_PROBLEMS, EXIT_NOTHING = 0, 1, 2, 4


@dataclass(frozen=True)
class TextDiagnosis:
    kinds: tuple[str, ...]  # what the text contained: kernel-log, rocminfo, ls, id, uname, lspci...
    established: tuple[str, ...]  # facts read from it
    findings: tuple[Finding, ...]
    unknown: tuple[str, ...]  # what it does not show, with the command that would

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
    facts: TextFacts = extract(text)
    established, findings, unknown = reason(facts)
    # Both quote the paste (a user or group name, a path), and go to a terminal.
    return TextDiagnosis(
        tuple(sorted(facts.kinds)), tuple(map(clean, established)), tuple(findings), tuple(map(clean, unknown))
    )


__all__ = ["TextDiagnosis", "diagnose_text"]
