"""Live GPU health handed from the resident service to the per-kernel history (issues 17.4, 18.5).

The health counters live in the resident service (user ``kfdguard``, no capability); the history
(/var/lib/kfdguard/history.json) is root's, written by kfdguard-enforce.service. The resident keeps
one small file per boot in /var/lib/kfdguard/health/ (its ``StateDirectory=kfdguard/health``,
owned by it): ``boot-BOOTID.json``, rewritten atomically whenever a count changes. It has to be
persistent, not in /run: the enforce pass that reads it is usually the next boot's (it runs before
the resident at every boot), and the resets of a boot happen after that boot's pass.

Root reads a file that a less privileged user wrote, so the reader treats it as hostile: no
symbolic link, a size limit, every field checked, at most ``READ_LIMIT`` entries of the directory even
listed (os.scandir stops there: a million names cost the boot pass nothing); a bad file is a
problem with its reason, never an exception. What such a file can do is bounded too: it can only
add bounded counts to a kernel's record, which changes the fallback *recommendation*; the resident
can already ask for a fallback (kfdguard-fallback@apply.service) without it.
"""

from __future__ import annotations

import re
import time

from kfdguard.facts import BootHealth
from kfdguard.health.model import HANG, RESET_BEGIN, RESET_DONE, RESET_FAILED, RING_RECOVERED, RING_TIMEOUT, WEDGED
from kfdguard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.health.tracker import Health
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root

VERSION = 1
DIRECTORY = "kfdguard/health"  # under Root.var_lib
FILE_LIMIT = 8 << 10  # one record is well under 1 kB
READ_LIMIT = 8  # entries the reader lists and looks at, at most (the writer keeps KEEP records)
KEEP = 4  # this boot's file and the three newest others: the next enforce pass needs only the last
COUNT_LIMIT = 1 << 31  # a count beyond this is not one the tracker made
TEXT_LIMITS = {"release": 256, "last_at": 40, "last_line": 512, "last_process": 160}
COUNTS = ("resets", "reset_failures", "ring_timeouts", "hangs")
EVENTS = ("", RESET_BEGIN, RESET_DONE, RESET_FAILED, RING_TIMEOUT, RING_RECOVERED, HANG, WEDGED)
_BOOT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# A pattern, compiled on first use (re caches it): the boot pass reads no directory of health files.
_FILE = r"^boot-([A-Za-z0-9_-]{1,64})\.json$"


class HealthFileError(ValueError):
    """A health record that is not one this version writes; the message says which field."""


def to_json(boot: BootHealth) -> dict[str, object]:
    return {
        "boot_id": boot.boot_id,
        "release": boot.release,
        **{key: getattr(boot, key) for key in COUNTS},
        "last_at": boot.last_at,
        "last_event": boot.last_event,
        "last_line": boot.last_line,
        "last_process": boot.last_process,
    }


def from_json(value: object, shown: str) -> BootHealth:
    """One boot's record (a file's body, or an entry of the history's ``boots``), every field checked."""
    if not isinstance(value, dict):
        raise HealthFileError(f"{shown}: not a JSON object")
    boot_id = value.get("boot_id")
    if not isinstance(boot_id, str) or not _BOOT_ID.match(boot_id):
        raise HealthFileError(f"{shown}: 'boot_id' is not a boot id (1 to 64 letters, digits, '-' or '_')")
    counts: dict[str, int] = {}
    for key in COUNTS:
        number = value.get(key, 0)
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < COUNT_LIMIT:
            raise HealthFileError(f"{shown}: {key!r} is not a count (0 to {COUNT_LIMIT - 1})")
        counts[key] = number
    texts: dict[str, str] = {}
    for key, limit in TEXT_LIMITS.items():
        text = value.get(key, "")
        if not isinstance(text, str) or len(text) > limit or "\0" in text or not _utf8(text):
            raise HealthFileError(f"{shown}: {key!r} is not a UTF-8 string of at most {limit} characters without NUL")
        texts[key] = text
    event = value.get("last_event", "")
    if event not in EVENTS:
        raise HealthFileError(f"{shown}: 'last_event' is not one of {', '.join(e for e in EVENTS if e)}")
    assert isinstance(event, str)
    return BootHealth(
        boot_id=boot_id,
        release=texts["release"],
        resets=counts["resets"],
        reset_failures=counts["reset_failures"],
        ring_timeouts=counts["ring_timeouts"],
        hangs=counts["hangs"],
        last_at=texts["last_at"],
        last_event=event,
        last_line=texts["last_line"],
        last_process=texts["last_process"],
    )


def _utf8(text: str) -> bool:
    # JSON admits lone surrogates; the history is written back as UTF-8 and the bus carries these texts.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_file(data: bytes, shown: str) -> BootHealth:
    import json

    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HealthFileError(f"{shown}: not JSON ({exc})") from None
    if not isinstance(value, dict) or value.get("version") != VERSION or isinstance(value.get("version"), bool):
        raise HealthFileError(f"{shown}: not a version {VERSION} health record")
    boot = from_json(value, shown)
    if not boot.release:
        raise HealthFileError(f"{shown}: 'release' is empty")
    return boot


def file_boot_id(name: str) -> str | None:
    """The boot id a file name carries, None when the name is not one the writer makes."""
    match = re.match(_FILE, name)
    return match.group(1) if match else None


def summary(health: Health, boot_id: str, release: str) -> BootHealth:
    """The tracker's per-GPU counts summed over the GPUs, with the latest event's line."""
    gpus = list(health.counts().values())
    boot = BootHealth(
        boot_id=boot_id,
        release=release,
        resets=sum(g.resets for g in gpus),
        reset_failures=sum(g.reset_failures for g in gpus),
        ring_timeouts=sum(g.ring_timeouts for g in gpus),
        hangs=sum(g.hangs for g in gpus),
    )
    latest = max(gpus, key=lambda g: g.last_usec, default=None)
    if latest is None or not latest.last_usec:
        return boot
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(latest.last_usec / 1e6))
    return replace(
        boot,
        last_at=at,
        last_event=latest.last_kind,
        last_line=_bounded(latest.last_line, TEXT_LIMITS["last_line"]),
        last_process=_bounded(latest.last_process, TEXT_LIMITS["last_process"]),
    )


def _bounded(text: str, limit: int) -> str:
    text = text.replace("\0", "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def path(root: Root, boot_id: str) -> HostPath:
    return root.var_lib / DIRECTORY / f"boot-{boot_id}.json"


def write(root: Root, boot: BootHealth) -> HostPath:
    """Write this boot's record atomically (0644: root's enforce pass and ``kfdguard fallback`` read it),
    and remove all but the newest KEEP records. Raises OSError (the caller logs it) or ValueError."""
    import json
    import os

    from kfdguard.host.files import atomic_write

    if not _BOOT_ID.match(boot.boot_id) or not boot.release:
        raise ValueError(f"not a boot to record: {boot.boot_id!r} {boot.release!r}")
    target = path(root, boot.boot_id)
    target.parent.mkdir(parents=True, exist_ok=True)  # the unit's StateDirectory= made it; a simulated root may not
    body = {"version": VERSION, **to_json(boot)}
    atomic_write(target, json.dumps(body, sort_keys=True).encode(), 0o644)
    others = []
    for name in os.listdir(target.parent):
        if file_boot_id(name) not in (None, boot.boot_id):
            try:
                others.append((os.lstat(target.parent / name).st_mtime_ns, name))
            except FileNotFoundError:
                continue
    for _mtime, name in sorted(others, reverse=True)[KEEP - 1 :]:
        try:  # noqa: SIM105 (contextlib stays off the boot path)
            os.unlink(target.parent / name)
        except FileNotFoundError:
            pass
    return target


__all__ = ["HealthFileError", "file_boot_id", "from_json", "parse_file", "path", "summary", "to_json", "write"]
