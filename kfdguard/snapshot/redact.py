"""What a snapshot leaves out: people's names, secrets, root's files, kernel log lines kfdguard does not read.

A bundle is made to be attached to a public bug report. kfdguard needs uid and
gid numbers, group membership and the system groups' names (``render``,
``video``), not who the users are: accounts of people (uid/gid 1000 and up,
``nobody`` aside) are renamed ``user<uid>`` / ``group<gid>``, consistently in
/etc/passwd, /etc/group, kfdguard's configuration and the software record
(stack and library paths under a home directory), and their GECOS fields and
home directories are blanked. The kernel log keeps only the lines a log
rule classifies, at their original line numbers (the journal's, /dev/kmsg's,
and a log file's named in ``log.sources``).

Secrets, whatever ``--include-names`` says (issue 35.5): GRUB's ``password`` and
``password_pbkdf2`` lines keep the command and the user name, not the password
or its hash. A file only root may read (no read bit for others) was not meant
for everybody: it is left out of the bundle unless the verdict needs it
(``ROOT_ONLY_KEPT``), and then only what kfdguard reads of it is kept.
"""

from __future__ import annotations

import re
import stat

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

    def strings(self, value: object) -> object:
        """Every string in a JSON-like value through ``words``: the software record names paths, and a
        virtualenv or a build directory in a person's home names its owner."""
        if isinstance(value, str):
            return self.words(value)
        if isinstance(value, list):
            return [self.strings(v) for v in value]
        if isinstance(value, dict):
            return {k: self.strings(v) for k, v in value.items()}
        return value


def classified_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, text) of the lines a log rule classifies; numbers count from 1."""
    from kfdguard.kernellog import scan

    _, events = scan(lines)
    numbers = sorted({event.line for event in events})
    return [(n, lines[n - 1]) for n in numbers]


# --- secrets and files only root may read ------------------------------------------------------

REDACTED = "<redacted by kfdguard>"
# GRUB's "password USER PASSWORD" and "password_pbkdf2 USER grub.pbkdf2.sha512.ROUNDS.SALT.HASH"
# (grub-core/commands/password.c, password_pbkdf2.c): the user and the fact stay, the secret goes.
_GRUB_PASSWORD = re.compile(r"^([ \t]*password(?:_pbkdf2)?[ \t]+)(\S+)([ \t]+)\S.*$", re.MULTILINE)
# What kfdguard reads of GRUB's environment block and of systemd-boot's entries and loader.conf
# (kfdguard/probe/boot.py): of such a file only root may read, the bundle keeps these and no more.
GRUBENV_READ = ("saved_entry", "next_entry")
ENTRY_READ = ("title", "version", "linux", "sort-key", "machine-id", "default", "timeout")

# Files only root may read that the verdict needs: (machine path pattern, what it is and what is kept,
# how it is reduced). Any other file only root may read is left out, and a note names it.
ROOT_ONLY_KEPT: tuple[tuple[str, str, str], ...] = (
    (r"/grub2?/grub\.cfg$", "GRUB's menu, its password lines without the password", "grub"),
    (r"/grub2?/grubenv$", f"GRUB's environment, {' and '.join(GRUBENV_READ)} only", "grubenv"),
    (r"/loader/(?:loader\.conf|entries/[^/]+\.conf)$", f"systemd-boot's menu, the fields {', '.join(ENTRY_READ)} only",
     "entries"),
    (r"/EFI/Linux/[^/]+\.efi$", "a unified kernel image: the headers and .osrel/.uname/.cmdline only", "whole"),
    (r"^/boot/config-[^/]+$", "the kernel's build configuration", "whole"),
    (r"^/sys/", "a kernel attribute (module parameter, EFI variable)", "whole"),
    (r"^/(?:etc|run|usr/lib|lib)/(?:modprobe|modules-load)\.d/|^/etc/modules$", "module configuration", "whole"),
    (r"^/etc/kfdguard/|^/var/lib/kfdguard/", "kfdguard's own configuration and history", "whole"),
)  # fmt: skip


def grub_passwords(text: str) -> str:
    """GRUB's password lines with the password or its hash replaced; everything else as it was."""
    return _GRUB_PASSWORD.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{REDACTED}", text)


def root_only(mode: int) -> bool:
    """A regular file that others may not read: only root (or its owner) was meant to."""
    return stat.S_ISREG(mode) and not mode & stat.S_IROTH


def root_only_rule(shown: str) -> tuple[str, str] | None:
    """(what is kept, how) for a file only root may read that kfdguard needs; None: left out."""
    for pattern, what, how in ROOT_ONLY_KEPT:
        if re.search(pattern, shown):
            return what, how
    return None


def reduce(text: str, how: str) -> str:
    """A root-only file as the bundle keeps it (``how`` from ROOT_ONLY_KEPT)."""
    if how == "grub":
        return grub_passwords(text)
    if how == "grubenv":
        from kfdguard.probe.boot import parse_grubenv

        values = parse_grubenv(text)
        kept = [f"{k}={values[k].replace(chr(92), chr(92) * 2).replace(chr(10), chr(92) + chr(10))}"
                for k in GRUBENV_READ if k in values]  # fmt: skip
        return "\n".join(["# GRUB Environment Block", *kept]) + "\n"
    if how == "entries":
        kept = [line for line in text.split("\n") if line.split(None, 1)[:1] and line.split(None, 1)[0] in ENTRY_READ]
        return "\n".join(kept) + "\n"
    return text


def log_lines(text: str) -> str:
    """A kernel log file as a bundle keeps it: the classified lines at their numbers, the rest blank."""
    lines = text.split("\n")
    kept = dict(classified_lines(lines))
    return "\n".join(kept.get(n, "") for n in range(1, len(lines) + 1))
