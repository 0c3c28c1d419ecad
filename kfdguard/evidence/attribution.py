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

# What evidence.text names its sources: a person's words, a kernel log, a command's output.
_PERSON = frozenset({"paste", "the text", "prose"})
_NAMED = re.compile(r"^(?P<what>[A-Za-z][\w.() -]*?) \(line (?P<line>\d+)\)")
_STAMPED = re.compile(r"^\s*(?:>\s*)*(?:\[[ \d.:+A-Za-z]{1,40}\]|\d{4}-\d\d-\d\d[T ]\d|[A-Z][a-z]{2} +\d{1,2} \d\d:)")

Attribution = dict[str, "str | int | None"]


def _kernel(line: str) -> Attribution:
    parsed = normalise(line)
    if parsed.ident != "kernel":
        return {"kind": "program", "program": parsed.ident, "driver": None, "device": None, "line": None}
    return {"kind": "kernel", "program": None, "driver": parsed.driver, "device": parsed.device, "line": None}


def attribute(evidence: str, *, origin: str) -> Attribution:
    """The speaker of one evidence line; ``origin`` is "machine" (a check) or "text" (a pasted diagnosis)."""
    if evidence.startswith("sources: "):
        return {"kind": "knowledge", "program": None, "driver": None, "device": None, "line": None}
    named = _NAMED.match(evidence)
    if named:
        what, line = named["what"], int(named["line"])
        if what in _PERSON:
            return {"kind": "text", "program": None, "driver": None, "device": None, "line": line}
        if what == "kernel log":
            return {"kind": "kernel", "program": None, "driver": None, "device": None, "line": line}
        return {"kind": "program", "program": what, "driver": None, "device": None, "line": line}
    if _STAMPED.match(evidence) or normalise(evidence).driver in ("amdgpu", "kfd", "amdkfd", "drm"):
        return _kernel(evidence)
    if evidence.startswith("/"):
        return {"kind": "machine", "program": None, "driver": None, "device": None, "line": None}
    kind = "machine" if origin == "machine" else "text"
    return {"kind": kind, "program": None, "driver": None, "device": None, "line": None}
