"""Minimal logging to stderr with sd-daemon(3) priority prefixes.

Under systemd, journald reads "<3>text" on stderr as priority 3 (error), so
the service's messages land in the journal with the right level without the
``logging`` package, which costs more than 10 ms to import on the boot path.
Outside systemd the prefix is replaced by a readable level name.
"""

from __future__ import annotations

import os
import sys

ERROR, WARNING, NOTICE, INFO, DEBUG = 3, 4, 5, 6, 7
_NAMES = {ERROR: "error", WARNING: "warning", NOTICE: "notice", INFO: "info", DEBUG: "debug"}

_state = {"threshold": INFO, "journal": "JOURNAL_STREAM" in os.environ}


def set_level(level: int) -> None:
    _state["threshold"] = level


def set_journal(enabled: bool) -> None:
    _state["journal"] = enabled


def emit(level: int, message: str) -> None:
    if level > _state["threshold"]:
        return
    # One record per line: a newline inside a message would start a new
    # journal entry without a priority.
    text = message.replace("\n", " | ")
    prefix = f"<{level}>" if _state["journal"] else f"kfdguard: {_NAMES.get(level, 'log')}: "
    try:
        sys.stderr.write(prefix + text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        # stderr closed or broken: logging must never take the daemon down.
        pass


def error(message: str) -> None:
    emit(ERROR, message)


def warning(message: str) -> None:
    emit(WARNING, message)


def notice(message: str) -> None:
    emit(NOTICE, message)


def info(message: str) -> None:
    emit(INFO, message)


def debug(message: str) -> None:
    emit(DEBUG, message)
