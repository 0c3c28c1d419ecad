"""What a snapshot leaves out: people's names, and kernel log lines kfdguard does not read.

A bundle is made to be attached to a public bug report. kfdguard needs uid and
gid numbers, group membership and the system groups' names (``render``,
``video``), not who the users are: accounts of people (uid/gid 1000 and up,
``nobody`` aside) are renamed ``user<uid>`` / ``group<gid>``, consistently in
/etc/passwd, /etc/group and kfdguard's configuration, and their GECOS fields
and home directories are blanked. The kernel log keeps only the lines a log
rule classifies, at their original line numbers.
"""

from __future__ import annotations

import re

from kfdguard.host.root import ACCOUNTS_FILE, CONFIG_FILE, GROUP_FILE

FIRST_PERSON_ID = 1000
NOBODY_ID = 65534
PASSWD, GROUP, CONFIG = ACCOUNTS_FILE, GROUP_FILE, CONFIG_FILE


def _personal(text: str) -> bool:
    # At most 10 digits: int() of a hostile file's field stays cheap and bounded.
    text = text.strip()
    return text.isascii() and text.isdigit() and len(text) <= 10 and FIRST_PERSON_ID <= int(text) < NOBODY_ID


class NameMap:
    """Personal user and group names -> stand-ins, built from passwd and group."""

    def __init__(self, passwd: str, group: str) -> None:
        self.names: dict[str, str] = {}
        for line in passwd.splitlines():
            fields = line.split(":")
            if len(fields) == 7 and fields[0] and _personal(fields[2]):
                self.names[fields[0]] = f"user{fields[2]}"
        for line in group.splitlines():
            fields = line.split(":")
            if len(fields) == 4 and fields[0] and _personal(fields[2]) and fields[0] not in self.names:
                self.names[fields[0]] = f"group{fields[2]}"

    def name(self, name: str) -> str:
        return self.names.get(name, name)

    def passwd(self, text: str) -> str:
        out = []
        for line in text.splitlines():
            fields = line.split(":")
            if len(fields) == 7 and fields[0] in self.names:
                fields = [self.names[fields[0]], fields[1], fields[2], fields[3], "", f"/home/{self.names[fields[0]]}",
                          fields[6]]  # fmt: skip
            out.append(":".join(fields))
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")

    def group(self, text: str) -> str:
        out = []
        for line in text.splitlines():
            fields = line.split(":")
            if len(fields) == 4:
                members = ",".join(self.name(m.strip()) for m in fields[3].split(",") if m.strip())
                fields = [self.name(fields[0]), fields[1], fields[2], members]
            out.append(":".join(fields))
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")

    def words(self, text: str) -> str:
        """Whole-word replacement, for files that name users in free form (the config)."""
        if not self.names:
            return text
        pattern = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in sorted(self.names, key=len, reverse=True))
                             + r")(?![\w.-])")  # fmt: skip
        return pattern.sub(lambda m: self.names[m.group(1)], text)


def classified_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, text) of the lines a log rule classifies; numbers count from 1."""
    from kfdguard.kernellog import scan

    _, events = scan(lines)
    numbers = sorted({event.line for event in events})
    return [(n, lines[n - 1]) for n in numbers]
