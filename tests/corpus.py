"""The two corpora of real texts (tests/data/real-reports, tests/data/healthy-logs) share their file shape:
"# key: value" header lines in a fixed order, a "# ---" line, then the text as it was posted."""

from __future__ import annotations

from pathlib import Path

HEADER_END = "# ---"


def files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.name != "README.md")


def header(path: Path, keys: tuple[str, ...]) -> tuple[dict[str, str], str]:
    """The header fields in their fixed order, and the text below the header."""
    lines = path.read_text(encoding="utf-8").split("\n")
    fields: dict[str, str] = {}
    for index, key in enumerate(keys):
        prefix = f"# {key}: "
        assert lines[index].startswith(prefix), f"{path.name}: line {index + 1} must start with {prefix!r}"
        fields[key] = lines[index][len(prefix) :].strip()
        assert fields[key], f"{path.name}: {key} is empty"
    assert lines[len(keys)] == HEADER_END, f"{path.name}: the header must end with a line {HEADER_END!r}"
    return fields, "\n".join(lines[len(keys) + 1 :])
