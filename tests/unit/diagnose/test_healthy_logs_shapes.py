"""A real healthy log says the same in every shape a person pastes it in (issue 34, item 4).

The logs of tests/data/healthy-logs are dmesg output. A person pastes the same boot as `dmesg -T`, as
`journalctl -k` (short, ISO or verbose), as a syslog `kern.log`, quoted in a mail (`> `), as the `+` side of a diff,
wrapped by a mail client at its width, several times over, or after another command's output. None of
these may change which findings the diagnosis gives. Every log in every shape, and Hypothesis picks widths.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.diagnose import diagnose_text
from tests.corpus import files, header
from tests.paths import TOP

CORPUS = TOP / "tests" / "data" / "healthy-logs"
FIELDS = ("source", "machine", "kernel", "format", "kfd", "subject", "trimmed", "caveats", "batch")
STAMP = re.compile(r"^\[\s*(?P<seconds>\d+)\.(?P<fraction>\d+)\] ?(?P<message>.*)$")


def _dmesg_logs() -> list[tuple[str, str]]:
    logs = []
    for path in files(CORPUS):
        fields, text = header(path, FIELDS)
        stamped = sum(1 for line in text.split("\n") if STAMP.match(line))
        if fields["format"] == "dmesg" and stamped >= 5:
            logs.append((path.name, text))
    return logs


LOGS = _dmesg_logs()


def _restamped(form: Callable[[int, str, str], str]) -> Callable[[str], str]:
    """Each dmesg line in another tool's shape: form(seconds since boot, the dmesg stamp, the message)."""

    def shape(text: str) -> str:
        out = []
        for line in text.split("\n"):
            m = STAMP.match(line)
            out.append(form(int(m["seconds"]), line[: m.start("message")].rstrip(), m["message"]) if m else line)
        return "\n".join(out)

    return shape


def _clock(seconds: int) -> str:
    return f"{10 + seconds // 3600 % 12:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


_PCI_SPEAKER = re.compile(r"^\w+ (?P<slot>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): ")


def _verbose_entry(seconds: int, stamp: str, message: str) -> tuple[list[str], list[str]]:
    """One kernel entry as `journalctl -k -o verbose` prints it, as (its lines up to MESSAGE, the lines after): the
    header (systemd's logs-show.c: the realtime stamp, the cursor in brackets), then the fields in the order
    journald's kmsg reader stores them (journald-kmsg.c: the device's, the source stamp, _TRANSPORT, PRIORITY,
    SYSLOG_FACILITY, SYSLOG_IDENTIFIER, MESSAGE), then what journald adds; as a real journalctl here printed them."""
    usec = int(float(stamp.strip("[] ")) * 1_000_000)
    device = _PCI_SPEAKER.match(message)
    cursor = (
        f"s=9a0059588a9e48368a1c8b326d32ea10;i={usec % 4096:x};b=b0c7a045927a4e0284e439422f65adca;m={usec:x};"
        "t=6620cb950a995;x=a5663c3b09360559"
    )
    head = [f"Sun 2026-12-06 {_clock(seconds)}.{usec % 1_000_000:06d} UTC [{cursor}]"]
    if device:
        head += [f"    _KERNEL_DEVICE=+pci:{device['slot']}", "    _KERNEL_SUBSYSTEM=pci"]
    head += [
        f"    _SOURCE_MONOTONIC_TIMESTAMP={usec}",
        "    _TRANSPORT=kernel",
        "    PRIORITY=6",
        "    SYSLOG_FACILITY=0",
        "    SYSLOG_IDENTIFIER=kernel",
        f"    MESSAGE={message}",
    ]
    tail = [
        "    _BOOT_ID=b0c7a045927a4e0284e439422f65adca",
        "    _MACHINE_ID=3d1219c7c4c5404aaa1f6d2a48adfda4",
        "    _HOSTNAME=workstation",
        "    _RUNTIME_SCOPE=system",
    ]
    return head, tail


def _as_verbose(text: str) -> str:
    """Every dmesg line as a verbose entry; a line the log's own wrapping continued stays right after its MESSAGE
    field, where a mail client's wrap of the verbose output would put it."""
    out: list[str] = []
    tail: list[str] = []
    for line in text.split("\n"):
        m = STAMP.match(line)
        if m is None:
            out.append(line)
            continue
        out += tail
        head, tail = _verbose_entry(int(m["seconds"]), line[: m.start("message")].rstrip(), m["message"])
        out += head
    return "\n".join(out + tail)


SHAPES: dict[str, Callable[[str], str]] = {
    "journalctl -k -o verbose": _as_verbose,
    "dmesg -T": _restamped(lambda s, _stamp, msg: f"[Sun Dec  6 {_clock(s)} 2026] {msg}"),
    "journalctl -k": _restamped(lambda s, _stamp, msg: f"Dec 06 {_clock(s)} workstation kernel: {msg}"),
    "journalctl -k -o short-iso": _restamped(
        lambda s, _stamp, msg: f"2026-12-06T{_clock(s)}+0000 workstation kernel: {msg}"
    ),
    "kern.log": _restamped(lambda s, stamp, msg: f"Dec  6 {_clock(s)} workstation kernel: {stamp} {msg}"),
    "quoted": lambda text: "\n".join("> " + line for line in text.split("\n")),
    "diff": lambda text: "\n".join("+" + line for line in text.split("\n")),
    "after another command": lambda text: "$ uname -r\n6.12.9-amd64\n$ sudo dmesg\n" + text,
}


def _wrapped(text: str, width: int) -> str:
    """A mail client's wrapping: long lines broken at blanks, never inside a word."""
    out: list[str] = []
    for line in text.split("\n"):
        out.extend(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""])
    return "\n".join(out)


def _codes(text: str) -> set[tuple[str, str]]:
    return {(f.code, f.severity.value) for f in diagnose_text(text).findings}


def test_there_are_dmesg_logs_to_reshape() -> None:
    assert len(LOGS) >= 10, [name for name, _ in LOGS]


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("log", LOGS, ids=[name for name, _ in LOGS])
def test_a_healthy_log_gives_the_same_findings_in_every_shape(log: tuple[str, str], shape: str) -> None:
    name, text = log
    assert _codes(SHAPES[shape](text)) == _codes(text), (name, shape)
    # The shape wrapped by a mail client too: the pieces are joined again whatever the stamp's shape.
    assert _codes(_wrapped(SHAPES[shape](text), 100)) == _codes(text), (name, shape, "wrapped")


@settings(max_examples=20)
@given(log=st.sampled_from(LOGS), width=st.integers(100, 200))
def test_a_healthy_log_wrapped_by_a_mail_client_gives_the_same_findings(log: tuple[str, str], width: int) -> None:
    name, text = log
    assert _codes(_wrapped(text, width)) == _codes(text), (name, width)
