"""Find KFD/amdgpu events in kernel logs of any common shape.

Lines come from the journal, /dev/kmsg, a log file, or text pasted into a bug
report: ``dmesg`` (with monotonic, ``-T`` or relative timestamps),
``journalctl`` in its short, precise, ISO, full and monotonic formats and any
month language, syslog files, /dev/kmsg records, and Markdown or e-mail
quotes (``> ``). Each line is reduced to its message body (no timestamp, no
host and identifier, no ``kfd kfd: amdgpu:``-style device prefix) and the
rules of knowledge/logrules.py are tried on it.

Speed matters: a whole boot's log is scanned at every boot. A big log is not
split into lines: one search over its whole text (in C) finds the rare lines
that can concern amdgpu, and only those become Python strings. What
is searched for is derived from the rule table (``Engine``), so a new rule row
is found by the fast path as by the per-line one.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from itertools import compress

from kfdguard.alternation import alternation
from kfdguard.facts import LogEvent
from kfdguard.knowledge.logrules import RULES, SRC_MODLOAD, SRC_SIGN, SRC_UDEV, LogRule
from kfdguard.record import dataclass

# Since 6.1 the kernel prints every KFD/amdgpu message a rule reads with a "kfd"/"amdgpu"/"[drm" prefix:
# pr_* calls get "amdgpu: " from amdgpu.h's pr_fmt, dev_* calls the device ("amdgpu 0000:03:00.0: ", "kfd kfd: "),
# DRM_* calls "[drm". A big log's line is worth the rules only if it holds one of these (kfd-facts.md §6).
KERNEL_ANCHORS = ("amdgpu", "kfd", "[drm")
# Older kernels print some without any prefix: in 5.10, kfd_crat.c, kfd_module.c and kfd_device_queue_manager.c
# include no header that sets pr_fmt, so "Virtual CRAT table created for GPU", "sched_policy has invalid value",
# "KFD is disabled due to module initialization failure" and "qcm fence wait loop timeout expired" stand alone
# (the generated formats of 5.10; real 5.11 logs in tests/data/real-reports show the first). Every such format
# a rule matches holds one of these words; 6.1 and every later series in the generated data print none (both
# checked against every series' formats by tests/unit/knowledge/test_log_formats.py). Before 5.10 (ROCK-DKMS,
# 4.x) only the corpus of real reports tells, and it shows nothing else. They are looked for in every log: a
# text rarely names its kernel (a ring buffer that wrapped loses the banner), and one search for every word
# (Engine.coarse) costs what the walks for the prefixed words alone did after a 6.1 banner.
OLD_KERNEL_WORDS = ("CRAT", "KFD", "qcm fence wait", "The cp might be", "sched_policy")
# Older still than the generated series (5.10 on): a real 5.0 log prints "Topology: Add APU node
# [0x15dd:0x1002]" bare (tests/data/healthy-logs/405), which 5.10's formats prefix.
OLDER_KERNEL_WORDS = ("Topology: Add",)
# Rules whose messages carry no such prefix: systemd-modules-load and udev print them from userspace,
# the module loader about the module it refuses. Their own terms are what a big log is searched for, so a
# new row from one of these sources is found without further work.
UNPREFIXED_SOURCES = frozenset({SRC_MODLOAD, SRC_UDEV, SRC_SIGN})
# A needle is at least this long (or the whole word): a shorter one would start a match attempt on too
# many lines that hold none of the words.
NEEDLE = 3


def needles(alternatives: Iterable[str], counts: Mapping[str, int]) -> tuple[str, ...]:
    """What the big-log search looks for: of each alternative, the end that starts at its character rarest
    in ``counts`` (a sample of the text) and leaves at least NEEDLE characters; none that holds another.

    A line holding an alternative holds its end, so the search misses nothing the prefilter would keep.
    Python's matcher searches an alternation by testing each character of the text against the set of the
    branches' first characters, and starts a match attempt at each one in that set: the attempts, not the
    test, are what a common first character costs. On the generated 1 M-line log (benchmarks/logdata.py),
    the test alone over the text took 0.18 s, the search for the alternatives as they are 0.54 s, for
    their ends from the rarest character 0.32 s (one str.find walk takes 0.04 to 0.07 s a word).
    """
    picked: list[str] = []
    for word in alternatives:
        last = max(len(word) - NEEDLE, 0)
        at = min(range(last + 1), key=lambda i: (counts.get(word[i], 0), i))
        picked.append(word[at:])
    unique = list(dict.fromkeys(picked))
    return tuple(w for w in unique if not any(o != w and o in w for o in unique))


@functools.lru_cache(maxsize=64)
def _compiled(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(alternation(words))


# Where a big log's characters are counted to choose the needles: this many slices of this many
# characters, spread over the text (its start alone may be a boot's, unlike the hours after it).
_SLICES, _SLICE = 32, 2048


def _sample_counts(text: str) -> Counter[str]:
    step = max(len(text) // _SLICES, _SLICE)
    return Counter("".join(text[at : at + _SLICE] for at in range(0, len(text), step)))


class Engine:
    """What scanning needs of a rule table, derived from it once."""

    def __init__(self, rules: tuple[LogRule, ...]) -> None:
        # An empty term would be in every line: the searches below would find it everywhere.
        empty = [r.id for r in rules if not r.terms or not all(r.terms) or any("\n" in t for t in r.terms)]
        if empty:
            raise ValueError(f"log rules need terms that are non-empty pieces of one line: {', '.join(empty)}")
        self.rules = rules
        # Every rule's message contains one of its terms (the paste path tries each line against them).
        self.terms = re.compile(alternation({t for r in rules for t in r.terms}))
        unprefixed = (t for r in rules if r.source in UNPREFIXED_SOURCES for t in r.terms)
        self.alternatives = tuple(dict.fromkeys((*KERNEL_ANCHORS, *OLD_KERNEL_WORDS, *OLDER_KERNEL_WORDS, *unprefixed)))
        # What a line of a big log must hold: a kernel prefix, an old kernel's unprefixed word, or an
        # unprefixed rule's term (a tree of prefixes: a fifth cheaper per line than the flat alternation).
        self.prefilter = re.compile(alternation(self.alternatives))
        self.compiled = tuple((r, re.compile(r.pattern)) for r in rules)
        by_term: dict[str, list[int]] = {}
        for index, rule in enumerate(rules):
            for term in rule.terms:
                by_term.setdefault(term, []).append(index)
        # term -> the rules that list it, in rule order
        self.term_rules = tuple((term, tuple(indexes)) for term, indexes in by_term.items())

    def coarse(self, text: str) -> re.Pattern[str]:
        """The search for the needles chosen by this text's letters: one walk over the text finds every
        line that may pass the prefilter (str.find, a walk for each of 15 words, took twice as long)."""
        return _compiled(needles(self.alternatives, _sample_counts(text)))


DEFAULT = Engine(RULES)
TERMS = DEFAULT.terms
PREFILTER = DEFAULT.prefilter


def _big_log_counted(text: str, engine: Engine = DEFAULT) -> tuple[int, list[tuple[int, str]]]:
    """The number of lines, and (line number, line) of the lines that pass the prefilter, without splitting:
    the coarse search finds a line, the prefilter decides on it, and the search goes on at the next line."""
    candidates: list[tuple[int, str]] = []
    count, find, rfind = text.count, text.find, text.rfind
    coarse, search = engine.coarse(text).search, engine.prefilter.search
    number, counted, at = 1, 0, 0
    while (hit := coarse(text, at)) is not None:
        start = rfind("\n", 0, hit.start()) + 1
        number += count("\n", counted, start)
        counted = start
        stop = find("\n", hit.end())
        line = text[start:] if stop < 0 else text[start:stop]
        if search(line):
            candidates.append((number, line))
        if stop < 0:
            break
        at = stop + 1
    return number + count("\n", counted), candidates


def _big_log(text: str, engine: Engine = DEFAULT) -> list[tuple[int, str]]:
    """(line number, line) of the lines that pass the prefilter, without splitting the text."""
    return _big_log_counted(text, engine)[1]


# Up to this many lines (a paste, not a boot log) every line is tried against
# the terms, so that a message quoted without its prefix is still recognised.
SMALL = 20_000
_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
# dmesg -r and syslog files that keep the raw record: "<6>[    4.870975] kfd kfd: added device 1002:15dd".
_PRIORITY = re.compile(r"^<\d{1,3}>")
_KMSG = re.compile(r"^(?P<pri>\d{1,3}),(?P<seq>\d+),(?P<usec>\d+),[^;]*;")
# A stamp in brackets; DRM's "[drm:func [module]]" at a line's start (a grep without times) is a prefix, not one.
_BRACKET = re.compile(r"^\[(?!drm[\]:])\s*(?P<stamp>[^\]]{1,40})\]\s?")
_DMESG_X = re.compile(r"^[a-z]+\s*:[a-z]+\s*: ")
# CONFIG_PRINTK_CALLER's field after the time: the task ("[  T315]") or CPU ("[    C3]") that printed.
_CALLER = re.compile(r"^\[\s*[TC]\d{1,7}\]\s?")
# journalctl short/precise/full/iso/syslog: a date of some shape, a time, maybe a
# zone, then "host ident[pid]: ". Month names may be in any language.
_JOURNAL = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}[T ]|(?:\S+ +){1,3}?)\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"(?:[ ]?(?:[A-Z]{2,5}|[+-]\d{2}:?\d{2}|Z))? (?P<host>\S+) (?P<ident>[A-Za-z0-9_.@/+-]+?)(?:\[\d+\])?: "
)
_MONO_JOURNAL = re.compile(r"^(?P<host>[A-Za-z0-9_.-]+) (?P<ident>[A-Za-z0-9_.@/+-]+?)(?:\[\d+\])?: ")
_DEVICE = re.compile(
    r"^(?P<driver>kfd|amdgpu|amdkfd) (?P<device>kfd|[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): "
    r"(?:amdgpu: )?"
)
_DRM = re.compile(r"^\[drm(?::\w+ \[(?P<module>\w+)\])?\] (?:\*ERROR\* )?")
_PR = re.compile(r"^(?P<driver>amdgpu|kfd|amdkfd): ")
# Another driver's prefix: dev_printk's "driver device: " (iwlwifi 0000:03:00.0, platform regulatory.0,
# tee tee0, bluetooth hci0, snd_hda_intel 0000:c5:00.1) or pr_fmt's "module: " (nvidia, ucsi_acpi). Kernel
# driver and module names are lower case; a message's own words rarely start "word word: " in lower case, and
# where one does, it was not a rule's message. A device name holds a digit (an instance number, a bus
# address): "discovery failed: -22", amdgpu's own words cut from their prefix, is no driver's device.
# Read only where no AMD prefix was: it says who else spoke.
_OTHER_DEVICE = re.compile(r"^(?P<driver>[a-z][a-z0-9_-]*) (?P<device>[^\s\[\]]*?[0-9][^\s\[\]]*?): ")
_OTHER_PR = re.compile(r"^(?P<driver>[a-z][a-z0-9_-]*): ")


@dataclass(frozen=True, slots=True)
class LogLine:
    ident: str  # "kernel" or the userspace program ("systemd-modules-load")
    # Who printed it, when its prefix says: kfd, amdgpu, amdkfd, drm (or the module in "[drm:f [module]]"),
    # or another driver or module (iwlwifi, platform, tee, nvidia). None: no prefix said.
    driver: str | None
    device: str | None  # "kfd", a PCI slot, or another driver's device name ("regulatory.0", "tee0")
    body: str
    stamp: str | None  # the timestamp as written, if any


def normalise(raw: str) -> LogLine:
    line = _PRIORITY.sub("", _QUOTE.sub("", raw).strip())
    stamp: str | None = None
    ident = "kernel"
    if line.startswith("MESSAGE="):  # journalctl -o verbose: the entry's message is one of its indented fields
        line = line[8:]
    m = _KMSG.match(line)
    if m:
        stamp, line = m["usec"], line[m.end() :]
    else:
        m = _DMESG_X.match(line)
        if m:
            line = line[m.end() :]
        m = _BRACKET.match(line)
        if m:
            stamp, line = m["stamp"].strip(), line[m.end() :]
            line = _CALLER.sub("", line, count=1)
            j = _MONO_JOURNAL.match(line)  # journalctl -o short-monotonic
            if j and (j["ident"] == "kernel" or j["ident"].startswith(("systemd-", "udev"))):
                ident, line = j["ident"], line[j.end() :]
            elif line.startswith("kernel: "):  # the same without a host name (real logs show both)
                line = line[8:]
        else:
            m = _JOURNAL.match(line)
            if m:
                stamp, ident, line = line[: m.start("host")].strip(), m["ident"], line[m.end() :]
                # syslog files keep the kernel's own bracket timestamp after "kernel: "
                inner = _BRACKET.match(line)
                if inner and ident == "kernel":
                    line = _CALLER.sub("", line[inner.end() :], count=1)
    driver, device, body = _speaker(line)
    return LogLine(ident, driver, device, body.strip(), stamp)


def _speaker(line: str) -> tuple[str | None, str | None, str]:
    """(driver, device, the rest) of a message: amdgpu's and KFD's prefixes, DRM's, or another driver's."""
    m = _DEVICE.match(line)
    if m:
        return m["driver"], m["device"], line[m.end() :]
    driver: str | None = None
    m = _DRM.match(line)
    if m:
        driver, line = m["module"] or "drm", line[m.end() :]
    m = _PR.match(line)
    if m:
        return m["driver"], None, line[m.end() :]
    if driver is None:
        m = _OTHER_DEVICE.match(line) or _OTHER_PR.match(line)
        if m:
            return m["driver"], m.groupdict().get("device"), line[m.end() :]
    return driver, None, line


# What a rule found on a line, before the line itself, its number, boot and source make it an event.
_Found = tuple[str, str, str | None, str | None, str | None, tuple[tuple[str, str], ...]]


def _found(raw: str, engine: Engine) -> list[_Found]:
    # The body is a piece of the raw line: a line that holds no rule's term needs no normalising.
    if not engine.terms.search(raw):
        return []
    parsed = normalise(raw)
    found: list[_Found] = []
    body = parsed.body
    # Substring tests (in C) pick the few rules worth a regular expression.
    candidates = sorted({i for term, rules in engine.term_rules if term in body for i in rules})
    for index in candidates:
        rule, pattern = engine.compiled[index]
        m = pattern.search(body)
        if m is None:
            continue
        if not rule.heard(parsed.driver, body):
            continue
        values = tuple((k, v) for k, v in m.groupdict().items() if v is not None)
        if rule.id == "parse-args-ignored" and parsed.driver:
            values = (("module", parsed.driver), *values)
        found.append((rule.id, rule.klass, rule.code, parsed.device, parsed.driver, values))
    return found


def match(raw: str, number: int = 0, *, boot: int = 0, source: str = "", engine: Engine = DEFAULT) -> list[LogEvent]:
    return [LogEvent(*f, raw.strip(), number, boot, source) for f in _found(raw, engine)]


def _line_key(raw: str) -> tuple[bool, str]:
    """What the rules' findings on a line depend on: the line without a leading "[...]" stamp, cut where
    normalise cuts it (its body, driver and device come from what follows; the stamp it reads is no
    part of an event). A dmesg log's repeated message differs only in that stamp."""
    if raw[:1] == "[":
        line = raw.strip()
        m = _BRACKET.match(line)
        if m:
            return True, line[m.end() :]
    return False, raw


def _events(
    candidates: Iterable[tuple[int, str]],
    boot: int,
    source: str,
    engine: Engine,
    key_of: Callable[[str], Hashable] = _line_key,
) -> list[LogEvent]:
    """The events of the candidate lines. A long log repeats its lines (a ring timeout a thousand
    times, with other timestamps): what the rules found on a line is kept by its key and reused. The key
    (_line_key, or the line's untimed form where the caller has it) holds all the findings depend on."""
    events: list[LogEvent] = []
    memo: dict[Hashable, list[_Found]] = {}
    for number, line in candidates:
        key = key_of(line)
        found = memo.get(key)
        if found is None:
            found = memo[key] = _found(line, engine)
        for f in found:
            events.append(LogEvent(*f, line.strip(), number, boot, source))
    return events


# A dmesg time at the start of a line ("[   12.345678]"), as evidence.text's memo removes it: blanks, digits
# and a dot between the brackets, its "]" within the first 40 characters. The bounds (12 blanks, 12 digits,
# 9 after the dot, 3 blanks: 37 at most) keep it there without a lookahead, which cost a sixth of a long
# paste's substitution; every time printk writes ("[%5lu.%06lu]") fits them, and a longer one stays in its
# line (which only means its repeats are read again). Possessive: no bound is tried shorter. Preceded by the
# newline that starts the line, so that one substitution over lines joined finds every line's. The number's
# three shapes are three branches, the usual one first ("12.345678", ".5", "12"): an optional group after
# the digits, (?:\.[0-9]{0,9})?, is a general repeat to the matcher, and cost an eighth of the substitution.
_DMESG_TIMES = re.compile(r"\n\[[ \t]{0,12}+(?:[0-9]{1,12}+\.[0-9]{0,9}+|\.[0-9]{1,9}+|[0-9]{1,12}+)[ \t]{0,3}+\]")
# What such a time consists of, besides its closing "]".
_TIME_CHARS = frozenset("[ \t0123456789.")


def untimed(lines: list[str]) -> list[str]:
    """Each line without its leading dmesg time: "[]" and the rest of the line, or the line as it is.

    A long log's dmesg lines are all distinct, their times differ; without them, a few hundred remain. One
    substitution in C over the lines joined, instead of a call per line."""
    joined = _DMESG_TIMES.sub("\n[]", "\n".join(["", *lines]))  # one copy of the lines, not two
    return joined.split("\n")[1:]


def blind_to_times(word: str) -> bool:
    """Whether ``word`` is in a line exactly when it is in the line untimed (untimed): a word without "]"
    that is not made of a time's characters alone can neither lie in the time nor reach across its end,
    and the "[]" left in its place holds no such word either."""
    return bool(word) and "]" not in word and not set(word) <= _TIME_CHARS


def scan_distinct(
    lines: list[str],
    distinct: list[str],
    units: list[str],
    *,
    boot: int = 0,
    source: str = "",
    engine: Engine = DEFAULT,
    unique: list[str] | None = None,
) -> list[LogEvent]:
    """The events ``scan`` finds in the big log ``"\\n".join(lines)``, given its distinct lines in the order
    they first appear and those untimed (``untimed(distinct)``); ``unique``, where given, is the untimed
    forms each once (``list(dict.fromkeys(units))``, as the caller made it for other uses too).

    Which lines pass the prefilter is decided on the distinct untimed lines (a few hundred in a long
    paste, not a hundred thousand) where every word it looks for is blind to the times; then a filter in C
    keeps every line that passes, and _numbered finds their numbers, as scan does for a list of lines."""
    search = engine.prefilter.search
    passing: Container[str]
    key_of: Callable[[str], Hashable]
    if all(map(blind_to_times, engine.alternatives)):
        passing_units = set(filter(search, dict.fromkeys(units) if unique is None else unique))
        # Each passing distinct line with its untimed form: the memo's key too. Lines with one untimed form
        # differ only in a leading dmesg time, inside the first "[...]" that normalise() removes (untimed's
        # time is at most 37 characters, normalise's bracket 40), so the rules find the same on them.
        unit_of = dict(compress(zip(distinct, units, strict=True), map(passing_units.__contains__, units)))
        passing, key_of = unit_of, unit_of.__getitem__
    else:
        passing, key_of = set(filter(search, distinct)), _line_key
    # The lines that pass, kept by a filter in C and then numbered (_numbered): cheaper than numbering every
    # line (count() makes an integer object a line) to keep the few that pass.
    hits = list(filter(passing.__contains__, lines))
    return _events(_numbered(lines, hits), boot, source, engine, key_of)


def _numbered(lines: list[str], hits: list[str]) -> list[tuple[int, str]]:
    """(line number, line) of ``hits``, the lines of ``lines`` that a filter in C kept, in order: each is
    found by list.index after the one before it, without enumerating every line in Python. list.index
    compares by equality, and a line equal to a hit is a hit too (the filter keeps equal lines alike), so
    the first equal line after the one before is that hit."""
    numbered: list[tuple[int, str]] = []
    start, index = 0, lines.index
    for hit in hits:
        at = index(hit, start)
        numbered.append((at + 1, hit))
        start = at + 1
    return numbered


def _is_big(text: str) -> bool:
    """Whether the text has at least SMALL lines, counting no further than needed: the newlines of its
    first SMALL * 400 characters decide a log of ordinary lines (a whole count costs 0.4x a split)."""
    head = SMALL * 400
    return text.count("\n", 0, head) >= SMALL or (len(text) > head and text.count("\n") >= SMALL)


def scan(
    text: str | list[str], *, boot: int = 0, source: str = "", engine: Engine = DEFAULT
) -> tuple[int, list[LogEvent]]:
    """All events in a log; returns (number of lines, events in order)."""
    if isinstance(text, str) and _is_big(text):
        lines_in, found = _big_log_counted(text, engine)
        return lines_in, _events(found, boot, source, engine)
    lines = text.split("\n") if isinstance(text, str) else text
    if len(lines) <= SMALL:
        search = engine.terms.search
        candidates = [(i, line) for i, line in enumerate(lines, 1) if search(line)]
    else:
        # Only the rare candidate lines need their numbers: find them by identity
        # after the C-level filter instead of enumerating every line in Python.
        candidates = _numbered(lines, list(filter(engine.prefilter.search, lines)))
    return len(lines), _events(candidates, boot, source, engine)
