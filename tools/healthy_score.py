"""Score today's diagnosis against real healthy machines' logs (tests/data/healthy-logs or the held-out set).

For every file: the errors (all false: the machine works), the warnings beyond the caveats its header names,
whether kfd-ready is missing where KFD's lines are, and whether the codes change when the log is pasted twice.
Run it on a new batch BEFORE writing any rule for it: that untuned score is the one to report.

    .venv/bin/python tools/healthy_score.py [DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
if str(TOP) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(TOP))

from kfdguard.diagnose import diagnose_text  # noqa: E402

HEADER_END = "\n# ---\n"
# Errors that a healthy machine's log may rightly give, as a caveat its header names: the GPU works for
# graphics but the hardware rules compute out, as the kernel itself says ("OLAND not supported in kfd",
# "skipped device 1002:67e3, PCI rejects atomics"). No other error is ever a caveat: a firmware, init or
# hang error on a working GPU is false by definition. tests/unit/diagnose/test_healthy_logs_corpus.py holds
# the corpus to the same set.
TRUE_OF_HARDWARE = frozenset({"asic-not-supported", "pcie-atomics"})


def _header(text: str) -> tuple[dict[str, str], str]:
    head, _, body = text.partition(HEADER_END)
    fields = {}
    for line in head.split("\n"):
        key, sep, value = line.removeprefix("# ").partition(": ")
        if sep:
            fields[key] = value.strip()
    return fields, body


def score(path: Path) -> tuple[list[str], bool]:
    """The false alarms of one file (empty: none), and whether it is a false alarm at all."""
    fields, body = _header(path.read_text(encoding="utf-8", errors="replace"))
    result = diagnose_text(body)
    caveats = set(fields.get("caveats", "-").split()) - {"-"}
    # An error is a false alarm unless it is one the hardware makes true and the header names it.
    true_errors = caveats & TRUE_OF_HARDWARE
    alarms = [
        f"{f.severity.value} {f.code}: {f.message[:100]}"
        for f in result.findings
        if (f.severity.value == "error" and f.code not in true_errors)
        or (f.severity.value == "warning" and f.code not in caveats)
    ]
    codes = {f.code for f in result.findings}
    if fields.get("kfd") == "yes" and "kfd-ready" not in codes:
        alarms.append("kfd-ready missing, though KFD's lines are there")
    if {f.code for f in diagnose_text(body + "\n" + body).findings} != codes:
        alarms.append("the codes change when the log is pasted twice")
    return alarms, bool(alarms)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", default=str(TOP / "tests" / "data" / "healthy-logs"))
    args = parser.parse_args(argv)
    paths = sorted(p for p in Path(args.dir).glob("*.txt"))
    bad = 0
    for path in paths:
        alarms, wrong = score(path)
        bad += wrong
        print(f"{'FALSE ALARM' if wrong else 'ok':11} {path.name}")
        for alarm in alarms:
            print(f"            {alarm}")
    print(f"\n{len(paths)} logs, {bad} with a false alarm ({100 * bad / max(len(paths), 1):.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
