"""Kernel configuration (``/boot/config-<release>``, ``/proc/config.gz``)."""

from __future__ import annotations

from kfdguard.parsers.lines import lines_with


def parse_kconfig(text: str) -> tuple[dict[str, str], list[str]]:
    """Return CONFIG_* symbols and complaints.

    ``CONFIG_X=y`` gives "y"; ``# CONFIG_X is not set`` gives "n" so that an
    explicitly disabled option differs from one the file does not mention.
    String values lose their quotes.
    """
    symbols: dict[str, str] = {}
    complaints: list[str] = []
    # The running kernel's whole config is read at every boot (~10,000 lines on a distribution
    # kernel): the loop tests the first character directly and calls nothing it need not.
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line[0] == "#":
            if line.endswith(" is not set"):
                name = line[1 : -len(" is not set")].strip()
                if _valid_name(name):
                    symbols[name] = "n"
            continue
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not _valid_name(name):
            complaints.append(f"line {number}: not a CONFIG_ assignment: {_clip(raw)}")
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        symbols[name] = value
    return symbols, complaints


def kconfig_symbol(text: str, name: str) -> str | None:
    """``parse_kconfig(text)[0].get(name)``, parsing only the lines that mention ``name``.

    A line sets the symbol only if it contains its name, and each line is parsed on its own: the
    same answer, for a boot pass that wants one symbol of each installed kernel's ~10,000 lines.
    """
    mentions = lines_with(text, (name,))
    return parse_kconfig("\n".join(mentions))[0].get(name) if mentions else None


def _valid_name(name: str) -> bool:
    # Letters, digits and "_" (str.isalnum: the same test as a character at a time, in C). Run
    # for every line of a distribution's config (~10,000): a Python loop over the characters cost
    # ~16,000 instructions a line (callgrind), and a boot pass parses each installed kernel's.
    return name.startswith("CONFIG_") and len(name) > 7 and name.replace("_", "").isalnum()


def _clip(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[:width] + "…")
