"""The Boot Loader Specification's rules, as systemd applies them: pure, no I/O.

Each rule follows systemd's own code (src/shared/bootspec.c, the user-space
side bootctl uses, and src/fundamental/string-util-fundamental.c), and the
parity tests hold it to the real ``bootctl list --json=short``:

- an entry's id is its file name with the boot-counting suffix ``+LEFT[-DONE]``
  (just before the last ``.``) removed: ``foo+3-1.conf`` is ``foo.conf``, and the
  name changes at every counted boot while the id does not
  (``boot_filename_extract_tries``);
- a counter above INT_MAX makes the whole entry invalid (sd-boot's limit);
- names outside ``[A-Za-z0-9+-_.]`` are not entries (``efi_loader_entry_name_valid``);
- entries are ordered by ``boot_entry_compare``: entries with no tries left
  last, then ones with a sort key (by sort key, machine id, version, newest
  first), then the rest by id, newest first (``strverscmp_improved``);
- the default is the first entry, in that order, that matches the
  ``LoaderEntryDefault`` variable, else loader.conf's ``default`` pattern
  (both fnmatch patterns, case-insensitive), else the first entry.
"""

from __future__ import annotations

from kfdguard.record import dataclass

INT_MAX = (1 << 31) - 1
NAME_MAX = 255
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-_.")
_DIGITS = "0123456789"
_DIGITS_SET = frozenset(_DIGITS)


class BadEntryName(ValueError):
    """A file name that systemd refuses as an entry (bootctl logs it and skips the file)."""


@dataclass(frozen=True, slots=True)
class Counted:
    id: str  # the name without its counters: bootctl's id (systemd-boot's own only from 259: loader_target)
    tries_left: int | None  # None: the name carries no counter (boot counting is off for it)
    tries_done: int | None  # None: not given ("+3.conf"), which systemd shows as absent


def _digits(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return end


def _tries(name: str, digits: str) -> int:
    value = int(digits)
    if value > INT_MAX:
        raise BadEntryName(f"{name}: boot counter {digits} is out of range (at most {INT_MAX})")
    return value


def split_tries(name: str) -> Counted:
    """The id and boot counters of an entry file name (``boot_filename_extract_tries``).

    Raises BadEntryName when the name is not a valid entry name or a counter is out of range.
    """
    counted = _split(name)
    if not name_valid(counted.id):
        raise BadEntryName(f"{name}: not a valid boot loader entry name")
    return counted


def _split(name: str) -> Counted:
    dot = name.rfind(".")
    if dot < 0:
        return Counted(name, None, None)
    plus = name.rfind("+", 0, dot)
    if plus < 0:
        return Counted(name, None, None)
    end = _digits(name, plus + 1)
    if end == plus + 1:
        return Counted(name, None, None)
    left_text = name[plus + 1 : end]
    done_text: str | None = None
    if end < len(name) and name[end] == "-":
        done_end = _digits(name, end + 1)
        if done_end == end + 1:
            return Counted(name, None, None)
        done_text = name[end + 1 : done_end]
        end = done_end
    if end != dot:
        return Counted(name, None, None)
    left = _tries(name, left_text)
    done = _tries(name, done_text) if done_text is not None else None
    return Counted(name[:plus] + name[dot:], left, done)


def name_valid(name: str) -> bool:
    """``efi_loader_entry_name_valid``: a plain file name of ``[A-Za-z0-9+-_.]``."""
    return 0 < len(name) <= NAME_MAX and name not in (".", "..") and all(c in _NAME_CHARS for c in name)


def strip_tries(entry_id: str) -> str:
    """An entry id as bootctl takes it, from one that may still carry counters (old histories).

    Only names of entry files (.conf, .efi) are touched: a GRUB menu id keeps its exact text.
    """
    if not entry_id.lower().endswith((".conf", ".efi")):
        return entry_id
    try:
        return _split(entry_id).id
    except BadEntryName:
        return entry_id


def _version_char(c: str) -> bool:
    return c in _DIGITS or ("a" <= c <= "z") or ("A" <= c <= "Z") or c in "~-^."


def _at(s: str, k: int) -> str:
    return s[k] if k < len(s) else ""


def _prefix(a: str, i: int, b: str, j: int, prefix: str) -> tuple[int, int, int]:
    """One of '~-^.' before a segment: the side without it is newer; both with it skip it."""
    ca, cb = _at(a, i), _at(b, j)
    if prefix not in (ca, cb):
        return 0, i, j
    if (ca != prefix) != (cb != prefix):
        return (1 if ca != prefix else -1), i, j
    return 0, i + 1, j + 1


def _numeric(a: str, i: int, b: str, j: int) -> tuple[int, int, int]:
    ea, eb = _digits(a, i), _digits(b, j)
    # A numeric segment is newer than an alphabetic one (systemd 252 checks this before it skips
    # leading zeros: its bootctl lists 0.conf before z.conf).
    if (ea > i) != (eb > j):
        return (1 if ea > i else -1), ea, eb
    while _at(a, i) == "0":
        i += 1
    while _at(b, j) == "0":
        j += 1
    if ea - i != eb - j:
        return (1 if ea - i > eb - j else -1), ea, eb
    sa, sb = a[i:ea], b[j:eb]
    return ((1 if sa > sb else -1) if sa != sb else 0), ea, eb


def _alpha(a: str, i: int, b: str, j: int) -> tuple[int, int, int]:
    ea, eb = i, j
    while ea < len(a) and a[ea].isascii() and a[ea].isalpha():
        ea += 1
    while eb < len(b) and b[eb].isascii() and b[eb].isalpha():
        eb += 1
    n = min(ea - i, eb - j)
    sa, sb = a[i : i + n], b[j : j + n]
    if sa != sb:
        return (1 if sa > sb else -1), ea, eb
    return ((1 if ea - i > eb - j else -1) if ea - i != eb - j else 0), ea, eb


def verscmp(a: str, b: str) -> int:
    """systemd's ``strverscmp_improved``: -1, 0 or 1 (rpmvercmp with '-', '^', '.' and '~' prefixes)."""
    if not a or not b:
        return (a > b) - (a < b)
    i = j = 0
    # Each round consumes at least one character of each side, or ends: bounded by the lengths.
    for _ in range(len(a) + len(b) + 2):
        while i < len(a) and not _version_char(a[i]):
            i += 1
        while j < len(b) and not _version_char(b[j]):
            j += 1
        r, i, j = _prefix(a, i, b, j, "~")
        ca, cb = _at(a, i), _at(b, j)
        if not r and (not ca or not cb):
            return (ca > cb) - (ca < cb)
        for prefix in "-^.":
            if not r:
                r, i, j = _prefix(a, i, b, j, prefix)
        if not r:
            digit = _at(a, i) in _DIGITS_SET or _at(b, j) in _DIGITS_SET
            r, i, j = (_numeric if digit else _alpha)(a, i, b, j)
        if r:
            return r
    return 0


@dataclass(frozen=True, slots=True)
class SortFields:
    id: str
    tries_left: int | None
    sort_key: str | None
    machine_id: str | None
    version: str | None


def _cmp(a: bool | bytes, b: bool | bytes) -> int:
    return int(a > b) - int(a < b)  # type: ignore[operator]


def compare(a: SortFields, b: SortFields) -> int:
    """``boot_entry_compare``: the order of bootctl's list and of the boot menu."""
    r = _cmp(a.tries_left == 0, b.tries_left == 0)
    if r:
        return r
    r = _cmp(a.sort_key is None, b.sort_key is None)
    if r:
        return r
    if a.sort_key is not None and b.sort_key is not None:
        r = _cmp(a.sort_key.encode(), b.sort_key.encode())
        if r:
            return r
        # strcmp_ptr: an absent machine id sorts before any.
        if a.machine_id is not None and b.machine_id is not None:
            r = _cmp(a.machine_id.encode(), b.machine_id.encode())
        else:
            r = _cmp(a.machine_id is not None, b.machine_id is not None)
        if r:
            return r
        r = -verscmp(a.version or "", b.version or "")
        if r:
            return r
    return -verscmp(a.id, b.id)


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """The regular expression of the bracket expression at ``pattern[i]``, and where it ends."""
    import re

    end = i + 1
    if end < len(pattern) and pattern[end] in "!^":
        end += 1
    if end < len(pattern) and pattern[end] == "]":
        end += 1
    while end < len(pattern) and pattern[end] != "]":
        end += 1
    if end >= len(pattern):
        return re.escape("["), i  # an unclosed '[' is a literal, as in glibc
    body = pattern[i + 1 : end]
    negate = body[:1] in ("!", "^")
    body = body[1:] if negate else body
    escaped = "".join("\\" + ch if ch in "\\^[]" else ch for ch in body)
    return f"[{'^' if negate else ''}{escaped}]", end


def fnmatch_casefold(pattern: str, name: str) -> bool:
    """fnmatch(3) with FNM_CASEFOLD and no other flag: ``*``, ``?``, ``[...]`` (``!``/``^``), ``\\`` escapes."""
    import re

    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            regex, i = _bracket(pattern, i)
            out.append(regex)
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.fullmatch("".join(out), name, flags=re.IGNORECASE | re.DOTALL) is not None
    except re.error:
        return False


def select(ids: list[str], pattern: str | None) -> str | None:
    """The first id (in boot menu order) that ``pattern`` names, or None.

    The id without ``.conf`` names nothing: systemd 252's bootctl falls back to the first entry then.
    """
    if not pattern:
        return None
    return next((entry_id for entry_id in ids if fnmatch_casefold(pattern, entry_id)), None)


# --- The id the boot loader itself gives an entry -------------------------------------
#
# bootctl (src/shared/bootspec.c) has always dropped the counters from an entry's id, but
# systemd-boot, the EFI program that matches LoaderEntryOneShot, LoaderEntryDefault and
# loader.conf's "default" against its entries (config_entry_find(): efi_fnmatch() of the
# case-folded pattern on each entry->id, in menu order), set entry->id to the file name,
# counters included, until systemd PR #38897 "boot: Strip boot counter from entry id"
# (merged September 2025, fixing issue #38813, reported on 257.7). Measured on Debian 12's
# systemd-boot 252.39 in the VM lane: LoaderEntrySelected is "...-6.1.0-50-amd64+2.conf",
# and a counter-less id matched nothing. 259 has the fix; for 258 it depends on the point
# release (the fix landed after 258's release candidates; a 258.3 build has it, per
# systemd issue #40192), so 258 is treated as unknown.
LAST_KEEPING_COUNTERS = 257
FIRST_STRIPPING_COUNTERS = 259


def loader_version(loader_info: str | None) -> int | None:
    """systemd-boot's major version from the LoaderInfo EFI variable ("systemd-boot 252.39-1~deb12u2"),
    None when the variable is absent or names another boot loader."""
    if not loader_info:
        return None
    words = loader_info.split()
    if len(words) < 2 or words[0] != "systemd-boot":
        return None
    digits = words[1][: _digits(words[1], 0)]
    # A version that is not a small number is not one systemd-boot writes: unknown, not a guess.
    return int(digits) if 0 < len(digits) <= 4 else None


def loader_keeps_counters(loader_info: str | None) -> bool | None:
    """Does the installed systemd-boot name counted entries by their file name (True), by the
    counter-less id bootctl shows (False), or cannot it be told (None)?"""
    version = loader_version(loader_info)
    if version is None:
        return None
    if version <= LAST_KEEPING_COUNTERS:
        return True
    if version >= FIRST_STRIPPING_COUNTERS:
        return False
    return None


def loader_name(entry_id: str, file_name: str, keeps_counters: bool | None) -> str:
    """The name systemd-boot matches patterns against: the file name when it keeps counters."""
    return file_name if keeps_counters and file_name else entry_id


def both_forms(entry_id: str) -> str | None:
    """A pattern that names an entry with and without its counters ("foo.conf", "foo+2.conf",
    "foo+1-1.conf"): ``foo[+.]*``. None when the id has no suffix to anchor it."""
    dot = entry_id.rfind(".")
    if dot <= 0 or not name_valid(entry_id):
        return None  # valid names hold none of fnmatch's special characters: no escaping needed
    return entry_id[:dot] + "[+.]*"


@dataclass(frozen=True, slots=True)
class LoaderTarget:
    value: str  # what to give bootctl set-oneshot / set-default
    note: str = ""  # why it is not the plain id, for the output ("" when it is)


def loader_target(
    entry_id: str, file_name: str, loader_info: str | None, names: list[tuple[str, str]], *, persistent: bool
) -> LoaderTarget:
    """What to write into LoaderEntryOneShot (``persistent`` False) or LoaderEntryDefault (True)
    so that the installed systemd-boot starts the entry ``entry_id`` (file ``file_name``).

    ``names``: (id, file name) of every entry on the ESP, to check that a pattern names this one only.
    An entry without counters has one name for every version. A counted one: its id for a
    systemd-boot that strips counters; its file name for one that keeps them (a pattern for
    LoaderEntryDefault, which outlives the renames of later boots); a pattern that matches both
    when the version is unknown.
    """
    try:
        counted = split_tries(file_name)
    except BadEntryName:
        return LoaderTarget(entry_id)
    if counted.tries_left is None:
        return LoaderTarget(entry_id)
    keeps = loader_keeps_counters(loader_info)
    if keeps is False:
        return LoaderTarget(entry_id)
    pattern = both_forms(entry_id)
    unique = pattern is not None and [
        (i, f) for i, f in names if fnmatch_casefold(pattern, i) or fnmatch_casefold(pattern, f)
    ] == [(entry_id, file_name)]
    shown = loader_info or "no LoaderInfo EFI variable"
    if keeps:
        if not persistent:
            return LoaderTarget(
                file_name, f"systemd-boot {loader_version(loader_info)} names a counted entry by its file name"
            )
        if pattern is not None and unique:
            return LoaderTarget(
                pattern,
                f"systemd-boot {loader_version(loader_info)} names a counted entry by its file name, "
                "which changes at every boot: a pattern that matches it with and without counters",
            )
        return LoaderTarget(
            file_name,
            f"systemd-boot {loader_version(loader_info)} names a counted entry by its file name; "
            f"the default names nothing once {file_name} is renamed at its next boot",
        )
    if pattern is not None and unique:
        return LoaderTarget(
            pattern,
            f"systemd-boot's version cannot be told ({shown}): older ones name a counted entry by its "
            "file name, newer ones by its id, so a pattern that matches both",
        )
    return LoaderTarget(
        entry_id,
        f"systemd-boot's version cannot be told ({shown}) and no pattern names only this entry: its id "
        f"is given, which a systemd-boot older than {FIRST_STRIPPING_COUNTERS} does not match while the "
        "entry is counted (it boots its default)",
    )
