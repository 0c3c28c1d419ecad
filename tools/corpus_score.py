"""Score today's text diagnosis against the corpus of real reports.

Runs kfdguard.diagnose.diagnose_text over the text of every file in
tests/data/real-reports (what follows its "# ---" line) and prints, per file, the
expected finding codes that were found and missed and the must-not codes that came
out anyway, then totals per class. It is the baseline the reasoning engine of issue
16 is measured against; it is not part of the installed package.

    .venv/bin/python tools/corpus_score.py [--markdown] [DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
if str(TOP) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(TOP))

from kfdguard.diagnose import diagnose_text  # noqa: E402

CORPUS = TOP / "tests" / "data" / "real-reports"
HEADER_END = "\n# ---\n"
CLASSES = ("userspace", "kernel", "permission", "container", "working", "mixed")


@dataclass(frozen=True)
class Score:
    name: str
    klass: str
    expected: frozenset[str]
    must_not: frozenset[str]
    got: frozenset[str]

    @property
    def found(self) -> frozenset[str]:
        return self.expected & self.got

    @property
    def missing(self) -> frozenset[str]:
        return self.expected - self.got

    @property
    def wrong(self) -> frozenset[str]:
        return self.must_not & self.got

    @property
    def right(self) -> bool:
        return not self.missing and not self.wrong


def _codes(value: str) -> frozenset[str]:
    return frozenset() if value.strip() == "-" else frozenset(value.split())


def score_file(path: Path) -> Score:
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition(HEADER_END)
    if not sep:
        raise ValueError(f"{path.name}: no '# ---' line ends the header")
    fields: dict[str, str] = {}
    for line in head.splitlines():
        key, colon, value = line.removeprefix("# ").partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    result = diagnose_text(body)
    return Score(
        path.name,
        fields.get("class", "?"),
        _codes(fields.get("expect", "-")),
        _codes(fields.get("must-not", "-")),
        frozenset(f.code for f in result.findings),
    )


def _fmt(codes: frozenset[str]) -> str:
    return " ".join(sorted(codes)) or "-"


def report(scores: Sequence[Score], markdown: bool) -> str:
    lines: list[str] = []
    if markdown:
        lines += ["| file | class | found | missing | must-not present |", "| --- | --- | --- | --- | --- |"]
        for s in scores:
            lines.append(f"| {s.name} | {s.klass} | {_fmt(s.found)} | {_fmt(s.missing)} | {_fmt(s.wrong)} |")
        lines += [
            "",
            "| class | files | right | expected codes found | must-not present |",
            "| --- | --- | --- | --- | --- |",
        ]
    else:
        for s in scores:
            lines.append(
                f"{s.name}  [{s.klass}]  found: {_fmt(s.found)}  missing: {_fmt(s.missing)}  "
                f"must-not: {_fmt(s.wrong)}  {'RIGHT' if s.right else 'WRONG'}"
            )
        lines.append("")
    for klass in (*CLASSES, "all"):
        group = [s for s in scores if klass in ("all", s.klass)]
        if not group:
            continue
        expected = sum(len(s.expected) for s in group)
        found = sum(len(s.found) for s in group)
        wrong = sum(1 for s in group if s.wrong)
        right = sum(1 for s in group if s.right)
        if markdown:
            lines.append(f"| {klass} | {len(group)} | {right} | {found}/{expected} | {wrong} |")
        else:
            lines.append(
                f"{klass:<10} files {len(group):>3}  right {right:>3}  expected codes found {found}/{expected}  "
                f"files with a must-not code {wrong}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables (for the README)")
    parser.add_argument("corpus", nargs="?", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    paths = sorted(args.corpus.glob("*.txt"))
    if not paths:
        print(f"no corpus files in {args.corpus}", file=sys.stderr)
        return 2
    print(report([score_file(p) for p in paths], args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
