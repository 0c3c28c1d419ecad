"""``/run/kfdguard/ready``: present only while compute is ready.

KEY=value lines in os-release(5) quoting, so that a shell can source it and
kfdguard reads it with its os-release parser::

    STATE=ready
    READY_GPUS="0000:03:00.0"
    GFX_TARGETS="gfx1100"
    SINCE=1764579200
    SUMMARY="1 GPU can compute: AMD Radeon RX 7900 XTX (gfx1100, 0000:03:00.0)"

Written atomically with mode 0644 (the service's UMask would make it 0600:
scripts and containers of any user read it); removed when compute is lost.
"""

from __future__ import annotations

import re

from kfdguard.readiness.condition import satisfied
from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.host.system import System
    from kfdguard.verdict import Status

MARKER_LIMIT = 64 << 10
_SAFE = re.compile(r"[^\x20-\x7e]")
HEADER = "# kfdguard: AMD GPU compute is ready; this file exists only while it is (kfdguard(8))\n"


@dataclass(frozen=True)
class Marker:
    state: str
    ready_gpus: tuple[str, ...]
    gfx_targets: tuple[str, ...]
    since: int
    summary: str


def _quote(value: str) -> str:
    # Printable ASCII only (a GPU name from hostile sysfs cannot add a line), then os-release escapes.
    value = _SAFE.sub("?", value)
    return '"' + re.sub(r'(["\\$`])', r"\\\1", value) + '"'


def render(marker: Marker) -> str:
    return (
        HEADER
        + f"STATE={marker.state}\n"
        + f"READY_GPUS={_quote(' '.join(marker.ready_gpus))}\n"
        + f"GFX_TARGETS={_quote(' '.join(marker.gfx_targets))}\n"
        + f"SINCE={marker.since}\n"
        + f"SUMMARY={_quote(marker.summary)}\n"
    )


def parse(text: str) -> Marker | None:
    """A marker's content; None when it is not one (truncated, foreign, garbage)."""
    from kfdguard.parsers.osrelease import parse_os_release  # readers only: the service writes before READY

    values = parse_os_release(text[:MARKER_LIMIT])
    state, since = values.get("STATE", ""), values.get("SINCE", "")
    if state not in ("ready", "degraded") or not (since.isascii() and since.isdigit() and len(since) <= 12):
        return None
    return Marker(
        state,
        tuple(values.get("READY_GPUS", "").split()),
        tuple(values.get("GFX_TARGETS", "").split()),
        int(since),
        values.get("SUMMARY", ""),
    )


def wanted(state: str, devices: list[tuple[str, bool, str]], summary: str, require: str, now: int) -> Marker | None:
    """The marker for a status, or None when compute is not ready. ``devices``: (slot, ready, gfx target)."""
    ready = [slot for slot, ok, _ in devices if ok]
    if not satisfied(state, ready, require):
        return None
    gfx = sorted({target for _, ok, target in devices if ok and target})
    return Marker(state, tuple(ready), tuple(gfx), now, summary)


def publish(system: System, marker: Marker | None, previous: Marker | None) -> str | None:
    """Write or remove the marker; returns a problem text, never raises. ``since`` survives rewrites."""
    from kfdguard.host.files import atomic_write
    from kfdguard.host.root import READY_MARKER

    path = system.root.join(READY_MARKER)
    try:
        if marker is None:
            path.unlink(missing_ok=True)
            return None
        if previous is not None:
            marker = Marker(marker.state, marker.ready_gpus, marker.gfx_targets, previous.since, marker.summary)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, render(marker).encode(), 0o644)
    except OSError as exc:
        return f"{READY_MARKER}: {exc.strerror or exc}"
    return None


def read(system: System) -> Marker | None:
    from kfdguard.host.root import READY_MARKER
    from kfdguard.probe.reader import Reader

    # /run/kfdguard belongs to the resident service (not root): a marker that is a link is not its file,
    # and `kfdguard wait` run by root must not read (and print the SUMMARY of) what it points at.
    text = Reader(system.root).text(system.root.join(READY_MARKER), limit=MARKER_LIMIT, nofollow=True)
    return None if text is None else parse(text)


class MarkerPublisher:
    """A Service listener: keeps the marker in step with every transition (rewritten only on change)."""

    def __init__(self, system: System, require: Callable[[], str], now: Callable[[], float]) -> None:
        self.system = system
        self.require = require
        self.now = now
        self.current: Marker | None = None
        self.problem: str | None = None
        self._started = False

    def __call__(self, _old: Status, new: Status) -> None:
        devices = [
            (str(d.get("Slot", "")), bool(d.get("ComputeReady")), str(d.get("GfxTarget", ""))) for d in new.devices
        ]
        marker = wanted(new.state, devices, new.summary, self.require(), int(self.now()))
        same = (marker is None and self.current is None) or (
            marker is not None
            and self.current is not None
            and (marker.state, marker.ready_gpus, marker.gfx_targets, marker.summary)
            == (self.current.state, self.current.ready_gpus, self.current.gfx_targets, self.current.summary)
        )
        if same and self._started:
            return
        # The first transition always writes or removes: a marker left by an earlier run is not trusted.
        self.problem = publish(self.system, marker, self.current)
        self._started = True
        if self.problem is None:
            self.current = marker if marker is None or self.current is None else Marker(
                marker.state, marker.ready_gpus, marker.gfx_targets, self.current.since, marker.summary
            )  # fmt: skip
