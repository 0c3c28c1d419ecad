"""``/etc/os-release`` (os-release(5)): shell-style KEY=value lines."""

from __future__ import annotations

import re

# os-release(5): inside double quotes a backslash escapes a double quote, a backslash, $ and `.
# A pattern, compiled (re caches it) for the first value with a backslash: most files have none.
_UNESCAPE = r"\\([\"\\$`])"


def parse_os_release(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.isidentifier():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]  # shell: nothing is special inside single quotes
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
            if "\\" in value:
                value = re.sub(_UNESCAPE, r"\1", value)
        values[key] = value
    return values
