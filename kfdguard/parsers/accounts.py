"""``/etc/passwd`` and ``/etc/group``."""

from __future__ import annotations

from kfdguard.facts import Group, User


def parse_group(text: str) -> tuple[list[Group], list[str]]:
    groups: list[Group] = []
    complaints: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(":")
        if len(fields) != 4 or not fields[0]:
            complaints.append(f"line {number}: expected name:password:gid:members")
            continue
        gid = _id(fields[2])
        if gid is None:
            complaints.append(f"line {number}: group {fields[0]!r} has gid {fields[2]!r}")
            continue
        members = tuple(m.strip() for m in fields[3].split(",") if m.strip())
        groups.append(Group(fields[0], gid, members))
    return groups, complaints


def parse_passwd(text: str) -> tuple[list[User], list[str]]:
    users: list[User] = []
    complaints: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(":")
        if len(fields) != 7 or not fields[0]:
            complaints.append(f"line {number}: expected 7 colon-separated fields")
            continue
        uid, gid = _id(fields[2]), _id(fields[3])
        if uid is None or gid is None:
            complaints.append(f"line {number}: user {fields[0]!r} has a bad uid or gid")
            continue
        users.append(User(fields[0], uid, gid, fields[5], fields[6]))
    return users, complaints


def _id(text: str) -> int | None:
    text = text.strip()
    # The length bound keeps int() under its 4,300-digit limit; 2**32 has 10 digits.
    if not text.isdigit() or not text.isascii() or len(text.lstrip("0")) > 10:
        return None
    value = int(text)
    return value if value < 2**32 else None
