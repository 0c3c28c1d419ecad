"""Python sessions in a paste: an expression about PyTorch and the value Python printed under it, joined.

People show their PyTorch build and what it finds by asking the interpreter:

    >>> torch.__version__
    '2.5.1+cu124'
    >>> torch.cuda.get_device_name(0)
    'AMD Radeon RX 7900 XTX'

or with ``python -c "import torch; print(torch.__version__, torch.cuda.is_available())"`` and its answer
``2.5.1+cu124 False`` on the next line. Each line alone says nothing: the value has no name, the expression no
value. This joins them into the answer's line as ``torch.__version__ -> '2.5.1+cu124'`` (one ``expr -> value``
per expression printed), the form the readers of appformats and assess/stack_rules know, and leaves every other
line as it was. The answer keeps its own line number, so evidence points at the value the person pasted.

Only expressions that name ``torch`` are joined: their values are what a reader needs, and any other expression
(a loop, an assignment, a print of a string) is left alone. The interactive prompt (">>> ") is gone already: the
paste's quote markers are removed before this runs, and ">>>" is read as one.
"""

from __future__ import annotations

import re
from itertools import compress, count, repeat
from operator import contains

# An expression alone on a line (the interactive prompt's), or a print() of one or more: "torch.__version__",
# "torch.cuda.get_device_name(0)", "print(torch.version.hip)". IPython's "In [3]: " prompt may stand before it.
_EXPRESSION = re.compile(r"^(?:In \[\d+\]:\s*)?(?P<expr>[A-Za-z_][\w.]*(?:\([^()]*\))?)\s*$")
# A print() anywhere on the line: the interpreter's or a "python -c" command's ("...; print(torch.__version__)\"").
_PRINT = re.compile(r"\bprint\((?P<args>(?:[^()]|\([^()]*\))*)\)")
_ARGUMENT = re.compile(r"(?:[^,()]|\([^()]*\))+")
# What cannot be an answer: another statement, a prompt, a traceback's first line.
_NOT_A_VALUE = re.compile(r"^(?:import |from |print\(|python|\$|#|Traceback|In \[|>>>|\.\.\.)")
_LONGEST_ANSWER = 200  # a value line longer than this is output of something else


def _expressions(line: str) -> list[str]:
    """The expressions about torch that this line asks Python for, in the order Python prints their values."""
    if "torch" not in line:
        return []
    printed = _PRINT.search(line) if "print(" in line else None
    if printed is None and " " in line.strip() and "In [" not in line:
        return []  # a traceback's "at torch/cuda/__init__.py line 3": an expression alone has no blank
    if printed is not None:
        found = [a.strip() for a in _ARGUMENT.findall(printed["args"])]
    else:
        alone = _EXPRESSION.match(line.strip())
        found = [alone["expr"]] if alone else []
    if not found or not all("torch" in e and not e.startswith(("'", '"', "f'", 'f"')) for e in found):
        return []  # a print of text ("print('torch ok')"), or of something besides torch
    return found


def _values(answer: str, count: int) -> list[str] | None:
    """The answer split into one value for each expression printed; None where it cannot be (a value with
    blanks among several, or a line that is no answer)."""
    stripped = answer.strip()
    if not stripped or len(stripped) > _LONGEST_ANSWER or _NOT_A_VALUE.match(stripped):
        return None
    if count == 1:
        return [stripped]
    values = stripped.split()
    return values if len(values) == count else None


def joined_answers(lines: list[str]) -> list[str]:
    """The lines with each answer to an expression about torch written as ``expr -> value`` (see the module).
    Only the lines that hold "torch" are looked at, picked by a filter in C (a long paste has few)."""
    out = lines  # copied at the first answer joined: most pastes have none
    last = len(lines) - 1
    for number in compress(count(), map(contains, lines, repeat("torch"))):
        if number >= last:
            break
        expressions = _expressions(out[number])
        if not expressions:
            continue
        answer = out[number + 1]
        values = None if _expressions(answer) else _values(answer, len(expressions))
        if values is not None:
            if out is lines:
                out = list(lines)
            out[number + 1] = "; ".join(f"{e} -> {v}" for e, v in zip(expressions, values, strict=True))
    return out
