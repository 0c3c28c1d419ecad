"""What a privileged oneshot did, for the resident service: one versioned JSON file per kind.

Issue 21: ``kfdguard enforce --record`` (kfdguard-enforce.service) and ``kfdguard fallback
apply|clear --record`` (kfdguard-fallback@.service) run as root and leave their result in
``/run/kfdguard/enforce.json`` or ``/run/kfdguard/fallback.json``; the unprivileged service reads
it after the run it asked for. The file is written atomically (``files.atomic_write``: a reader
sees the old record or the new one, never half of one) through the Root, so a simulated machine
keeps its own. The reader treats it as hostile: a size limit, no symbolic link, every field
checked; anything else is a ``RunStateError`` with a message for the service's findings.

``stamp`` is CLOCK_MONOTONIC in nanoseconds when the run finished: one clock for every process
of the boot that a settimeofday cannot move, so "finished after I asked" is a plain comparison.
"""

from __future__ import annotations

import os
import time

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root

VERSION = 1
KINDS = ("enforce", "fallback-apply", "fallback-clear", "remedy-apply", "remedy-clear")
SIZE_LIMIT = 1 << 20  # a record is a few kB; more is not one
FIELD_LIMIT = 64 << 10  # one message or finding text
Finding4 = tuple[str, str, str, str]  # code, severity, message, remedy: as Status.findings


class RunStateError(ValueError):
    """The state file is missing, unreadable or not a record this version writes; the message says which."""


@dataclass(frozen=True)
class RunRecord:
    kind: str  # one of KINDS
    ok: bool  # enforce: no action failed; fallback: the boot loader did what was asked
    state: str  # enforce: the state after the run; fallback: ""
    message: str  # enforce: the summary after the run; fallback: the outcome's message
    findings: tuple[Finding4, ...] = ()  # problems met while acting (enforce-write-failed...)
    changes: tuple[str, ...] = ()  # "status: what" per action that did something
    exit_code: int = 0
    stamp: int = 0  # CLOCK_MONOTONIC ns at the end of the run
    # enforce: what root's AMDKFD_IOC_GET_VERSION said ("1.11"), or how it failed (errno, text): the
    # unprivileged service may not open /dev/kfd (it is no compute user) and reads it here instead.
    kfd_version: str = ""
    kfd_error: str = ""
    kfd_errno: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "version": VERSION,
            "kind": self.kind,
            "ok": self.ok,
            "state": self.state,
            "message": self.message,
            "findings": [list(f) for f in self.findings],
            "changes": list(self.changes),
            "exit_code": self.exit_code,
            "stamp": self.stamp,
            "kfd_version": self.kfd_version,
            "kfd_error": self.kfd_error,
            "kfd_errno": self.kfd_errno,
        }


def file_for(kind: str) -> str:
    """The file name under /run/kfdguard for a kind: both actions of fallback (and of remedy) share one."""
    return f"{_family(kind)}.json"


def _family(kind: str) -> str:
    return kind.split("-", 1)[0]


def path(root: Root, kind: str) -> HostPath:
    return root.run / "kfdguard" / file_for(kind)


def now() -> int:
    return time.monotonic_ns()


def write(root: Root, record: RunRecord) -> HostPath:
    """Write the record atomically (mode 0644: the resident service reads it as another user)."""
    import json

    from kfdguard.host.files import atomic_write

    if record.kind not in KINDS:
        raise ValueError(f"unknown run kind {record.kind!r}")
    target = path(root, record.kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(record.to_json(), sort_keys=True).encode(), 0o644)
    return target


def read(root: Root, kind: str) -> RunRecord:
    """The last record of ``kind``; RunStateError when there is none or it is not a valid one."""
    target = path(root, kind)
    shown = root.display(target)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RunStateError(f"{shown} does not exist") from None
    except OSError as exc:
        raise RunStateError(f"{shown} cannot be read: {exc.strerror or exc}") from None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunStateError(f"{shown} is not a regular file")
        data = os.read(fd, SIZE_LIMIT + 1)
    except OSError as exc:
        raise RunStateError(f"{shown} cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    import json

    if len(data) > SIZE_LIMIT:
        raise RunStateError(f"{shown} is larger than {SIZE_LIMIT} bytes")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RunStateError(f"{shown} is not JSON: {exc}") from None
    record = parse(value, shown)
    if _family(record.kind) != _family(kind):
        raise RunStateError(f"{shown} holds a {record.kind!r} record, not {kind!r}")
    return record


def parse(value: object, shown: str = "the record") -> RunRecord:
    """A decoded record, every field checked (RunStateError names the first bad one)."""
    if not isinstance(value, dict):
        raise RunStateError(f"{shown}: not a JSON object")
    version = value.get("version")
    if version != VERSION or isinstance(version, bool):
        raise RunStateError(f"{shown}: version {version!r}, this kfdguard reads version {VERSION}")
    kind = _text(value, "kind", shown)
    if kind not in KINDS:
        raise RunStateError(f"{shown}: unknown kind {kind!r}")
    ok = value.get("ok")
    if not isinstance(ok, bool):
        raise RunStateError(f"{shown}: 'ok' is not true or false")
    findings = value.get("findings")
    if not isinstance(findings, list) or not all(
        isinstance(f, list) and len(f) == 4 and all(_valid(x) for x in f) for f in findings
    ):
        raise RunStateError(f"{shown}: 'findings' is not a list of [code, severity, message, remedy]")
    changes = value.get("changes")
    if not isinstance(changes, list) or not all(_valid(c) for c in changes):
        raise RunStateError(f"{shown}: 'changes' is not a list of strings")
    numbers = {}
    for key in ("exit_code", "stamp", "kfd_errno"):
        number = value.get(key)
        if not isinstance(number, int) or isinstance(number, bool) or number < 0 or number >= 1 << 63:
            raise RunStateError(f"{shown}: {key!r} is not a non-negative integer")
        numbers[key] = number
    return RunRecord(
        kind=kind,
        ok=ok,
        state=_text(value, "state", shown),
        message=_text(value, "message", shown),
        findings=tuple((f[0], f[1], f[2], f[3]) for f in findings),
        changes=tuple(changes),
        exit_code=numbers["exit_code"],
        stamp=numbers["stamp"],
        kfd_version=_kfd_version(_text(value, "kfd_version", shown), shown),
        kfd_error=_text(value, "kfd_error", shown),
        kfd_errno=numbers["kfd_errno"],
    )


def _kfd_version(text: str, shown: str) -> str:
    major, dot, minor = text.partition(".")
    if text and not (dot and major.isdigit() and minor.isdigit() and len(text) <= 21):
        raise RunStateError(f"{shown}: 'kfd_version' is not MAJOR.MINOR")
    return text


def version_tuple(text: str) -> tuple[int, int] | None:
    """A record's "1.11" as the probe's (1, 11); None when there is none."""
    if not text:
        return None
    major, _, minor = text.partition(".")
    return int(major), int(minor)


def _valid(text: object) -> bool:
    """A string the bus can carry: D-Bus strings are UTF-8 without NUL (JSON allows both \\u0000 and lone
    surrogates, which would make the service's reply or signal fail to marshal)."""
    if not isinstance(text, str) or len(text) > FIELD_LIMIT or "\0" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(value: dict[str, object], key: str, shown: str) -> str:
    text = value.get(key)
    if not _valid(text):
        raise RunStateError(f"{shown}: {key!r} is not a UTF-8 string of at most {FIELD_LIMIT} characters without NUL")
    assert isinstance(text, str)
    return text


__all__ = [
    "KINDS",
    "VERSION",
    "RunRecord",
    "RunStateError",
    "file_for",
    "now",
    "parse",
    "path",
    "read",
    "version_tuple",
    "write",
]
