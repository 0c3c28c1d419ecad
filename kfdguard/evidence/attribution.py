"""Who said each line a finding rests on (issue 34): the kernel (which driver, about which device), a program,
the machine kfdguard read, kfdguard's own knowledge, or the person's text.

A finding's evidence is kept as the lines it quotes (``Finding.evidence``); this reads each back to its
speaker for ``--json``'s ``sources``. A kernel line names its speaker in its prefix (kernellog.normalise);
a line kfdguard wrote about a paste names its source as ``what (line N): ...`` (evidence.model.Source);
a sysfs or /dev path is the machine's. What names nothing is the source's own: the machine's facts on a
check, the person's text on a pasted diagnosis.
"""

from __future__ import annotations

import re

from kfdguard.kernellog import normalise
from kfdguard.knowledge.logrules import AMD_SPEAKERS

# What evidence.text names its sources: a person's words, a kernel log, a command's output.
_PERSON = frozenset({"paste", "the text", "prose"})
_NAMED = re.compile(r"^(?P<what>[A-Za-z][\w.() -]*?) \(line (?P<line>\d+)\)")
_STAMPED = re.compile(r"^\s*(?:>\s*)*(?:\[[ \d.:+A-Za-z]{1,40}\]|\d{4}-\d\d-\d\d[T ]\d|[A-Z][a-z]{2} +\d{1,2} \d\d:)")

Attribution = dict[str, "str | int | None"]


def _said(
    kind: str,
    *,
    program: str | None = None,
    driver: str | None = None,
    device: str | None = None,
    line: int | None = None,
) -> Attribution:
    """One ``sources`` entry: every key always there (schema/kfdguard.schema.json $defs/attribution)."""
    return {"kind": kind, "program": program, "driver": driver, "device": device, "line": line}


def attribute(evidence: str, *, origin: str) -> Attribution:
    """The speaker of one evidence line; ``origin`` is "machine" (a check) or "text" (a pasted diagnosis)."""
    if evidence.startswith("sources: "):
        return _said("knowledge")
    named = _NAMED.match(evidence)
    if named:
        what, line = named["what"], int(named["line"])
        if what in _PERSON:
            return _said("text", line=line)
        if what == "kernel log":
            return _said("kernel", line=line)
        return _said("program", program=what, line=line)
    parsed = normalise(evidence)
    if _STAMPED.match(evidence) or parsed.driver in AMD_SPEAKERS:
        if parsed.ident != "kernel":
            return _said("program", program=parsed.ident)
        return _said("kernel", driver=parsed.driver, device=parsed.device)
    if evidence.startswith("/"):
        return _said("machine")
    return _said("machine" if origin == "machine" else "text")
