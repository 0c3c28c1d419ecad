"""One kernel log line or one uevent -> a health event (pure).

The patterns are the kernel's format strings, checked in Debian's 6.1.176,
6.12.117 and 7.2.13 sources (linux-source-*; drivers/gpu/drm/amd/amdgpu/ unless
said otherwise):

- ``amdgpu_device_gpu_recover`` (amdgpu_device.c): ``"GPU %s begin!\\n"`` with
  "reset" or "jobs stop" (6.1, 6.12), ``"GPU %s begin!. Source:  %d\\n"`` (7.2);
  ``"GPU reset(%d) succeeded!\\n"`` with the device's gpu_reset_counter;
  ``"GPU reset(%d) failed with error %d\\n"`` (7.2); ``"GPU reset end with ret = %d\\n"``
  (printed only when the reset failed).
- ``amdgpu_job_timedout`` (amdgpu_job.c): ``"ring %s timeout, signaled seq=%u,
  emitted seq=%u\\n"`` (DRM_ERROR in 6.1, dev_err since), ``"ring %s timeout, but soft
  recovered\\n"``, ``"Process information: process %s pid %d thread %s pid %d\\n"``
  (6.1, 6.12) or amdgpu_vm_print_task_info's ``" Process %s pid %d thread %s pid %d\\n"``
  (7.2), 7.2's per-queue ``"Ring %s reset succeeded\\n"`` / ``"Ring %s reset failed\\n"``,
  ``"GPU Recovery Failed: %d\\n"``.
- HWS and MES hangs: the ``kfd-hws-hang`` and ``mes-hang`` rules of knowledge/logrules.py.
- ``drm_dev_wedged_event`` (drivers/gpu/drm/drm_drv.c, 7.2; absent from 6.12): a
  KOBJ_CHANGE uevent on the card node with ``WEDGED=<method>[,...]`` (none, rebind,
  bus-reset, vendor-specific; "unknown" when the driver is unsure) and, when the
  guilty task is known, ``PID=%u`` and ``TASK=%s``. amdgpu sends ``WEDGED=none`` after
  a successful reset and after a successful per-ring reset. Its log line
  (``"[drm] device wedged, but no recovery needed"``) is not counted: the uevent is.
"""

from __future__ import annotations

import re

from kfdguard.health.model import (
    HANG,
    PROCESS,
    RESET_BEGIN,
    RESET_DONE,
    RESET_FAILED,
    RING_RECOVERED,
    RING_TIMEOUT,
    WEDGED,
    HealthEvent,
)
from kfdguard.kernellog import normalise
from kfdguard.knowledge.logrules import AMD_SPEAKERS, BY_ID

LINE_LIMIT = 512  # a kernel line is at most ~1 KiB; what is kept of it, cleaned

_RESET_BEGIN = re.compile(r"^GPU (?:reset|jobs stop) begin!")
_RESET_DONE = re.compile(r"^GPU reset\((?P<count>\d{1,10})\) succeeded!")
_RESET_FAILED = re.compile(
    r"^GPU reset\((?P<count>\d{1,10})\) failed with error (?P<err>-?\d+)|^GPU reset end with ret = (?P<ret>-?\d+)"
    r"|^GPU Recovery Failed: (?P<rec>-?\d+)"
)
_RING_TIMEOUT = re.compile(
    r"^ring (?P<ring>\S{1,64}) timeout, signaled seq=(?P<signaled>\d+), emitted seq=(?P<emitted>\d+)"
)
_RING_SOFT = re.compile(r"^ring (?P<ring>\S{1,64}) timeout, but soft recovered")
_RING_RESET = re.compile(r"^Ring (?P<ring>\S{1,64}) reset succeeded")
# comm is at most 15 characters and may hold spaces: match lazily up to " pid ".
_PROCESS = re.compile(r"^(?:Process information: process|Process) (?P<name>.{0,64}?) pid (?P<pid>\d{1,10}) thread ")
_HANGS = tuple(re.compile(BY_ID[rule].pattern) for rule in ("kfd-hws-hang", "mes-hang"))
# Every line these patterns match contains one of these: most kernel lines cost one scan each.
_TERMS = ("GPU ", "ring ", "Ring ", "Process", *(t for r in ("kfd-hws-hang", "mes-hang") for t in BY_ID[r].terms))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
WEDGE_METHODS = frozenset({"none", "rebind", "bus-reset", "vendor-specific", "unknown"})


def clean(text: str) -> str:
    return _CONTROL.sub("?", text)[:LINE_LIMIT]


def from_log(raw: str) -> HealthEvent | None:
    """The health event a kernel log line reports, or None (most lines)."""
    if len(raw) > 4 * LINE_LIMIT:
        raw = raw[: 4 * LINE_LIMIT]
    if not any(term in raw for term in _TERMS):
        return None
    line = normalise(raw)
    if line.ident != "kernel" or (line.driver is not None and line.driver not in AMD_SPEAKERS):
        # Another driver's words ("[drm:intel_gt_reset [i915]] *ERROR* GPU reset begin!", nouveau's ring
        # timeouts) are no AMD GPU's health (issue 34: every observation is its speaker's).
        return None
    return _classify(line.body, line.device if line.device and line.device != "kfd" else "")


def _classify(body: str, slot: str) -> HealthEvent | None:
    shown = clean(body)
    m = _RESET_BEGIN.match(body)
    if m:
        return HealthEvent(RESET_BEGIN, slot, line=shown)
    m = _RESET_DONE.match(body)
    if m:
        return HealthEvent(RESET_DONE, slot, line=shown, count=int(m["count"]))
    m = _RESET_FAILED.match(body)
    if m:
        err = m["err"] or m["ret"] or m["rec"] or ""
        return HealthEvent(RESET_FAILED, slot, err, line=shown, count=int(m["count"]) if m["count"] else None)
    m = _RING_TIMEOUT.match(body)
    if m:
        return HealthEvent(RING_TIMEOUT, slot, clean(m["ring"]), line=shown)
    m = _RING_SOFT.match(body) or _RING_RESET.match(body)
    if m:
        return HealthEvent(RING_RECOVERED, slot, clean(m["ring"]), line=shown)
    m = _PROCESS.match(body)
    if m:
        return HealthEvent(PROCESS, slot, process=f"{clean(m['name'])} (pid {m['pid']})", line=shown)
    if any(p.search(body) for p in _HANGS):
        return HealthEvent(HANG, slot, line=shown)
    return None


def from_uevent(action: str, subsystem: str, name: str, props: dict[str, str], slot: str) -> HealthEvent | None:
    """A DRM wedged uevent (``slot``: the card's PCI slot as the caller resolved it), or None."""
    wedged = props.get("WEDGED")
    if action != "change" or subsystem != "drm" or wedged is None:
        return None
    methods = [m for m in wedged.split(",") if m]
    detail = ",".join(m if m in WEDGE_METHODS else "unknown" for m in methods[:4]) or "unknown"
    process = ""
    task, pid = props.get("TASK", ""), props.get("PID", "")
    if task and pid.isascii() and pid.isdigit() and len(pid) <= 10:
        process = f"{clean(task)[:32]} (pid {pid})"
    return HealthEvent(WEDGED, slot, detail, process, clean(f"uevent change drm {name} WEDGED={wedged}"))


def parse_uevent_line(text: str) -> tuple[str, str, str, dict[str, str]] | None:
    """``ACTION SUBSYSTEM NAME [KEY=VALUE ...]`` (the simulator's FIFO) -> its parts, or None."""
    words = text.split()
    if len(words) < 3:
        return None
    props: dict[str, str] = {}
    for word in words[3:32]:
        key, sep, value = word.partition("=")
        if sep and key.isascii() and key.replace("_", "").isalnum() and key.isupper():
            props[key] = value
    return words[0], words[1], words[2], props


__all__ = ["HealthEvent", "from_log", "from_uevent", "parse_uevent_line"]
