"""Kernel configuration (``/boot/config-<release>``, ``/proc/config.gz``)."""

from __future__ import annotations


def parse_kconfig(text: str) -> tuple[dict[str, str], list[str]]:
    """Return CONFIG_* symbols and complaints.

    ``CONFIG_X=y`` gives "y"; ``# CONFIG_X is not set`` gives "n" so that an
    explicitly disabled option differs from one the file does not mention.
    String values lose their quotes.
    """
    symbols: dict[str, str] = {}
    complaints: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if body.startswith("CONFIG_") and body.endswith(" is not set"):
                name = body[: -len(" is not set")].strip()
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


def _valid_name(name: str) -> bool:
    return name.startswith("CONFIG_") and len(name) > 7 and all(c.isalnum() or c == "_" for c in name)


def _clip(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[:width] + "…")
