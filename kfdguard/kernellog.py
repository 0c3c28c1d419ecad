"""Find KFD/amdgpu events in kernel logs of any common shape.

Lines come from the journal, /dev/kmsg, a log file, or text pasted into a bug
report: ``dmesg`` (with monotonic, ``-T`` or relative timestamps),
``journalctl`` in its short, precise, ISO, full and monotonic formats and any
month language, syslog files, /dev/kmsg records, and Markdown or e-mail
quotes (``> ``). Each line is reduced to its message body (no timestamp, no
host and identifier, no ``kfd kfd: amdgpu:``-style device prefix) and the
rules of knowledge/logrules.py are tried on it.

Speed matters: a whole boot's log is scanned at every boot. A cheap
prefilter, run by ``filter`` over a compiled pattern in C, drops the lines
that cannot concern amdgpu before any per-line Python code runs.
"""

from __future__ import annotations

import re

from kfdguard.facts import LogEvent
from kfdguard.knowledge.logrules import RULES, LogRule
from kfdguard.record import dataclass

# Every rule's message contains one of its terms. Python's regex engine tries a
# long alternation position by position, so for whole boot logs a short list of
# anchors is used instead: the kernel prints every KFD/amdgpu message with a
# "kfd"/"amdgpu"/"[drm" prefix (or, before 5.x, the word CRAT), and the
# userspace and signing messages have phrases of their own.
TERMS = re.compile("|".join(re.escape(t) for t in sorted({t for r in RULES for t in r.terms}, key=len, reverse=True)))
PREFILTER = re.compile(
    r"amdgpu|kfd|KFD|\[drm|CRAT|Failed to find module|Unknown group|Failed to resolve group|"
    r"unsigned module|unavailable key|PKCS#7|Key was rejected|Required key not"
)
# A coarser alternation than PREFILTER, searched over the whole text of a big log: every PREFILTER
# match contains one of these (tests/unit/test_kernellog.py checks the cover). Short alternatives with
# few distinct first characters let the regular expression engine skip most positions after one
# character test; measured on a generated 1 M-line log, searching the text with it costs about 2.6x
# splitting the text into lines, where PREFILTER per line cost 7x. Candidate lines are confirmed
# with PREFILTER, so the words that also occur elsewhere (module, group, key) cost only that.
COARSE = ("gpu", "kfd", "KFD", "drm", "CRAT", "module", "group", "key", "Key", "PKCS")
_COARSE = re.compile("|".join(re.escape(c) for c in COARSE))


def _big_log(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines that pass PREFILTER, without splitting the text."""
    candidates: list[tuple[int, str]] = []
    search = _COARSE.search
    position = counted = 0
    number = 1
    while True:
        m = search(text, position)
        if m is None:
            return candidates
        start = text.rfind("\n", 0, m.start()) + 1
        stop = text.find("\n", m.end())
        if stop < 0:
            stop = len(text)
        number += text.count("\n", counted, start)
        counted = start
        line = text[start:stop]
        if PREFILTER.search(line):
            candidates.append((number, line))
        position = stop + 1


# Up to this many lines (a paste, not a boot log) every line is tried against
# the terms, so that a message quoted without its prefix is still recognised.
SMALL = 20_000
_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_KMSG = re.compile(r"^(?P<pri>\d{1,3}),(?P<seq>\d+),(?P<usec>\d+),[^;]*;")
_BRACKET = re.compile(r"^\[\s*(?P<stamp>[^\]]{1,40})\]\s?")
_DMESG_X = re.compile(r"^[a-z]+\s*:[a-z]+\s*: ")
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
_DRM = re.compile(r"^\[drm(?::\w+ \[\w+\])?\] (?:\*ERROR\* )?")
_PR = re.compile(r"^(?P<driver>amdgpu|kfd|amdkfd): ")
_COMPILED: list[tuple[LogRule, re.Pattern[str]]] = [(r, re.compile(r.pattern)) for r in RULES]
# term -> the rules that list it, in rule order
_BY_TERM: dict[str, list[int]] = {}
for _index, _rule in enumerate(RULES):
    for _term in _rule.terms:
        _BY_TERM.setdefault(_term, []).append(_index)
_TERM_RULES = tuple(_BY_TERM.items())


@dataclass(frozen=True, slots=True)
class LogLine:
    ident: str  # "kernel" or the userspace program ("systemd-modules-load")
    driver: str | None  # kfd, amdgpu, amdkfd when the message had such a prefix
    device: str | None  # "kfd" or a PCI slot
    body: str
    stamp: str | None  # the timestamp as written, if any


def normalise(raw: str) -> LogLine:
    line = _QUOTE.sub("", raw).strip()
    stamp: str | None = None
    ident = "kernel"
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
            j = _MONO_JOURNAL.match(line)  # journalctl -o short-monotonic
            if j and (j["ident"] == "kernel" or j["ident"].startswith(("systemd-", "udev"))):
                ident, line = j["ident"], line[j.end() :]
        else:
            m = _JOURNAL.match(line)
            if m:
                stamp, ident, line = line[: m.start("host")].strip(), m["ident"], line[m.end() :]
                # syslog files keep the kernel's own bracket timestamp after "kernel: "
                inner = _BRACKET.match(line)
                if inner and ident == "kernel":
                    line = line[inner.end() :]
    driver: str | None = None
    device: str | None = None
    m = _DEVICE.match(line)
    if m:
        driver, device, line = m["driver"], m["device"], line[m.end() :]
    else:
        m = _DRM.match(line)
        if m:
            driver, line = "drm", line[m.end() :]
        m = _PR.match(line)
        if m:
            driver, line = m["driver"], line[m.end() :]
    return LogLine(ident, driver, device, line.strip(), stamp)


def match(raw: str, number: int = 0, *, boot: int = 0, source: str = "") -> list[LogEvent]:
    parsed = normalise(raw)
    events = []
    body = parsed.body
    # Substring tests (in C) pick the few rules worth a regular expression.
    candidates = sorted({i for term, rules in _TERM_RULES if term in body for i in rules})
    for index in candidates:
        rule, pattern = _COMPILED[index]
        m = pattern.search(body)
        if m is None:
            continue
        if rule.id == "parse-args-ignored" and parsed.driver not in ("amdgpu", "amdkfd"):
            continue
        values = tuple((k, v) for k, v in m.groupdict().items() if v is not None)
        if rule.id == "parse-args-ignored" and parsed.driver:
            values = (("module", parsed.driver), *values)
        text = raw.strip()
        events.append(
            LogEvent(rule.id, rule.klass, rule.code, parsed.device, parsed.driver, values, text, number, boot, source)
        )
    return events


def scan(text: str | list[str], *, boot: int = 0, source: str = "") -> tuple[int, list[LogEvent]]:
    """All events in a log; returns (number of lines, events in order)."""
    events: list[LogEvent] = []
    if isinstance(text, str) and text.count("\n") >= SMALL:
        for number, line in _big_log(text):
            events.extend(match(line, number, boot=boot, source=source))
        return text.count("\n") + 1, events
    lines = text.split("\n") if isinstance(text, str) else text
    if len(lines) <= SMALL:
        search = TERMS.search
        candidates = [(i, line) for i, line in enumerate(lines, 1) if search(line)]
    else:
        # Only the rare candidate lines need their numbers: find them by identity
        # after the C-level filter instead of enumerating every line in Python.
        hits = list(filter(PREFILTER.search, lines))
        candidates = []
        start = 0
        for hit in hits:
            index = lines.index(hit, start)
            candidates.append((index + 1, hit))
            start = index + 1
    for number, line in candidates:
        events.extend(match(line, number, boot=boot, source=source))
    return len(lines), events
