"""The kernel log: the first readable source among the configured ones."""

from __future__ import annotations

from kfdguard.facts import KernelLog, LogEvent
from kfdguard.host.system import LogUnavailable
from kfdguard.probe.reader import Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.system import System

FILE_LIMIT = 64 << 20


def probe_kernel_log(reader: Reader, system: System, sources: tuple[str, ...], previous_boots: int) -> KernelLog:
    from kfdguard.kernellog import scan

    unavailable: list[str] = []
    for source in sources:
        events: list[LogEvent] = []
        total = 0
        try:
            if source == "journal":
                for boot, lines in system.read_journal(previous_boots):
                    count, found = scan(lines, boot=boot, source="journal")
                    total += count
                    events.extend(found)
            elif source == "kmsg":
                count, found = scan(system.read_kmsg(), source="kmsg")
                total, events = count, found
            else:
                path = reader.root.join(source)
                text = reader.text(path, limit=FILE_LIMIT)
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
        return KernelLog(True, (source,), total, tuple(events), tuple(unavailable))
    return KernelLog(True, (), 0, (), tuple(unavailable))
