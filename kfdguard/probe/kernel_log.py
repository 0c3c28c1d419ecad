"""The kernel log: the first readable source among the configured ones.

Every source is read within one read's budget (``host.system``: ENTRY_LIMIT a line, READ_ENTRIES and
READ_CHARS a read), and what the budget left out is said (``KernelLog.limited``), never silently lost:
a log that was cut proves no absence.
"""

from __future__ import annotations

import re

from kfdguard.facts import KernelLog, LogEvent
from kfdguard.host.system import ENTRY_LIMIT, READ_CHARS, LogLines, LogUnavailable
from kfdguard.probe.reader import Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath
    from kfdguard.host.system import System

# A line of a log file longer than an entry may be: its first ENTRY_LIMIT characters are kept.
_LONG_LINE = re.compile(rf"^([^\n]{{{ENTRY_LIMIT}}})[^\n]+", re.MULTILINE)


def probe_kernel_log(reader: Reader, system: System, sources: tuple[str, ...], previous_boots: int) -> KernelLog:
    from kfdguard.kernellog import scan

    unavailable: list[str] = []
    for source in sources:
        events: list[LogEvent] = []
        limited: list[str] = []
        total = 0
        try:
            if source == "journal":
                for boot, lines in system.read_journal(previous_boots):
                    count, found = scan(lines, boot=boot, source="journal")
                    total += count
                    events.extend(found)
                    limited.extend(_notes(lines, "journal", boot))
            elif source == "kmsg":
                records = system.read_kmsg()
                total, events = scan(records, source="kmsg")
                limited.extend(_notes(records, "kmsg", 0))
            else:
                path = reader.root.join(source)
                text = _file_text(reader, path, source, limited)
                if text is None:
                    unavailable.append(f"{source}: missing or unreadable")
                    continue
                total, events = scan(text, source=source)
        except LogUnavailable as exc:
            unavailable.append(f"{source}: {exc}")
            continue
        except OSError as exc:
            unavailable.append(f"{source}: {exc.strerror or exc}")
            continue
        return KernelLog(True, (source,), total, tuple(events), tuple(unavailable), tuple(limited))
    return KernelLog(True, (), 0, (), tuple(unavailable))


def _notes(lines: list[str], source: str, boot: int) -> list[str]:
    """What the read's budget did to these lines, in words (a System that keeps no count: nothing)."""
    if not isinstance(lines, LogLines):
        return []
    where = f"boot {boot}: " if boot else ""
    return [where + note for note in lines.budget_notes(source)]


def _file_text(reader: Reader, path: HostPath, source: str, limited: list[str]) -> str | None:
    """A log file's text within the read's budget: its last READ_CHARS bytes (a log file grows at its end,
    where the boot being diagnosed is), its lines cut to ENTRY_LIMIT characters; what was left out is
    said in ``limited``."""
    # Through the Reader (is_file, read_at), so that a snapshot records what was read and its size.
    sized = reader.read_at(path, 0, 0) if reader.is_file(path) else None
    if sized is None:
        return None
    size = sized[1]
    if size <= READ_CHARS:
        text = reader.text(path, limit=READ_CHARS)
    else:
        got = reader.read_at(path, size - READ_CHARS, READ_CHARS)
        if got is None:
            return None
        data = got[0]
        start = data.find(b"\n") + 1  # the first line is most likely a piece of one
        text = data[start:].decode("utf-8", errors="replace")
        limited.append(f"{size - READ_CHARS + start} bytes at the start of {source} not read (the read budget "
                       f"is its last {READ_CHARS >> 10} KiB)")  # fmt: skip
    if text is None:
        return None
    text, cut = _LONG_LINE.subn(r"\1", text)
    if cut:
        limited.append(f"{cut} {source} lines longer than {ENTRY_LIMIT} characters cut")
    return text
