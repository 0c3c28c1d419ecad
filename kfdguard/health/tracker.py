"""Per GPU health since the service started, and how it changes what is published.

``Health.feed`` takes one event and says whether anything a client sees changed.
``Health.overlay`` is pure: a Status in, the Status with health laid over it out.
While a GPU is in trouble (a reset under way, a ring or scheduler hang, a failed
reset, a wedged device that needs recovery) it does not count as computing, the
state is ``degraded`` and a ``gpu-hang`` finding quotes the kernel; when the
kernel reports the recovery (``GPU reset(N) succeeded!``, a soft or per-ring
recovery, ``WEDGED=none``) the GPU is back and the counts stay.

Memory is bounded: one small record per PCI slot, at most MAX_GPUS of them.

What the kernel said is shown to everyone who reads the status (the bus's
properties and signals need no authorization), so ``overlay(disclose=False)``
shows only the cause in kfdguard's words ("ring gfx_0.0.0 timeout") and no
process: the kernel's own lines name other users' programs and pids, which
kernel.dmesg_restrict=1 keeps from them (issue 35). The service discloses the
kernel's line and the process only where any user may read the kernel log
anyway (service/core.py reads the sysctl). The counts and states are the same
either way, and the per-boot record (store.py) keeps the kernel's words.
"""

from __future__ import annotations

from kfdguard.health.model import (
    DEVICE_KEYS,
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
from kfdguard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.verdict import Status

MAX_GPUS = 64
OK, RESETTING, HUNG, RESET_FAILED_STATE, WEDGED_STATE = "ok", "resetting", "hung", "reset-failed", "wedged"
FINDING = "gpu-hang"  # the code the log rules give runtime hangs and resets (knowledge/logrules.py)
_WHAT = {
    RESETTING: "is being reset by amdgpu; running GPU programs lose their work",
    HUNG: "stopped making progress (a ring or the scheduler hung); a reset usually follows",
    RESET_FAILED_STATE: "could not be reset: it may stay unusable until the driver is reloaded or the machine reboots",
    WEDGED_STATE: "is wedged: the kernel says it needs recovery from outside the driver",
}
_REMEDY = {
    RESETTING: "wait for the reset to finish; kfdguard says when the GPU is back",
    HUNG: "wait for amdgpu's recovery; if it recurs, see which program the kernel names and whether a newer "
    "kernel or firmware fixes it",
    RESET_FAILED_STATE: "reboot; if it recurs, try another kernel or firmware (journalctl -k shows the reset)",
    WEDGED_STATE: "recover as the uevent's WEDGED= says (rebind the driver, or reset the PCI device), or reboot",
}


class GpuHealth:
    __slots__ = ("hangs", "last_cause", "last_kind", "last_line", "last_process", "last_usec", "reset_failures",
                 "resets", "ring_timeouts", "state", "wedged")  # fmt: skip

    def __init__(self) -> None:
        self.state = OK
        self.resets = 0
        self.reset_failures = 0
        self.ring_timeouts = 0
        self.hangs = 0
        self.wedged = 0
        self.last_usec = 0
        self.last_line = ""
        self.last_kind = ""  # the HealthEvent kind of last_line (the per-kernel history says what it meant)
        self.last_process = ""
        self.last_cause = ""  # last_line as anyone may be told it: the cause, no process, no pid

    def shown_line(self, disclose: bool) -> str:
        return self.last_line if disclose else self.last_cause

    def keys(self, disclose: bool = False) -> dict[str, object]:
        return {
            "Health": self.state,
            "Resets": self.resets,
            "ResetFailures": self.reset_failures,
            "RingTimeouts": self.ring_timeouts,
            "Hangs": self.hangs,
            "WedgedEvents": self.wedged,
            "LastHealthEvent": self.last_usec,
            "LastHealthLine": self.shown_line(disclose),
            "LastProcess": self.last_process if disclose else "",
        }


class Health:
    def __init__(self) -> None:
        self.gpus: dict[str, GpuHealth] = {}
        self.slots: tuple[str, ...] = ()  # the AMD GPUs of the last published status

    def know(self, slots: tuple[str, ...]) -> None:
        """The GPUs the last check found: a line without a slot belongs to the only one, if there is one."""
        self.slots = slots[:MAX_GPUS]

    def _gpu(self, slot: str) -> GpuHealth | None:
        if not slot:
            if len(self.slots) != 1:
                return None  # 6.1's DRM_ERROR lines name no device: on several GPUs it is anyone's
            slot = self.slots[0]
        gpu = self.gpus.get(slot)
        if gpu is None:
            if slot not in self.slots or len(self.gpus) >= MAX_GPUS:
                return None  # a slot no check found (or hostile input inventing slots): not tracked
            gpu = self.gpus[slot] = GpuHealth()
        return gpu

    def feed(self, event: HealthEvent, now_usec: int) -> bool:
        """Count the event; True when what a client sees changed."""
        gpu = self._gpu(event.slot)
        if gpu is None:
            return False
        if event.kind == PROCESS:
            # The task the kernel names belongs to the event just before it.
            changed = gpu.last_process != event.process
            gpu.last_process = event.process
            return changed
        step = _STEPS.get(event.kind)
        if step is None or not step(gpu, event):
            return False
        gpu.last_usec = now_usec
        gpu.last_line = event.line
        gpu.last_cause = cause(event)
        gpu.last_kind = event.kind
        if event.process:
            gpu.last_process = event.process
        return True

    def in_trouble(self) -> list[str]:
        return [slot for slot, gpu in self.gpus.items() if gpu.state != OK]

    def counts(self) -> dict[str, GpuHealth]:
        return dict(self.gpus)

    def overlay(self, status: Status, *, disclose: bool = False) -> Status:
        """``status`` with every GPU's health keys, and degraded while a GPU is in trouble.

        ``disclose``: show the kernel's line and the process it named (only where any user may
        read the kernel log); otherwise the cause alone (the module's docstring says why)."""
        if not status.devices:
            return status
        devices: list[dict[str, object]] = []
        troubled: list[tuple[str, str, GpuHealth]] = []
        for device in status.devices:
            slot = str(device.get("Slot", ""))
            gpu = self.gpus.get(slot) or GpuHealth()
            merged = {**device, **gpu.keys(disclose)}
            if gpu.state != OK:
                name = str(device.get("Name", "")) or "AMD GPU"
                troubled.append((slot, name, gpu))
                merged["ComputeReady"] = False
                merged["Reason"] = f"{gpu.state}: {gpu.shown_line(disclose)}"
            devices.append(merged)
        if not troubled:
            return replace(status, devices=tuple(devices))
        findings = tuple(f for f in status.findings if f[0] != FINDING)
        added = []
        for slot, name, gpu in troubled:
            who = f"; the kernel named {gpu.last_process}" if gpu.last_process and disclose else ""
            message = f"{name} ({slot}) {_WHAT[gpu.state]} (kernel: {gpu.shown_line(disclose)!r}{who})"
            added.append((FINDING, "error", message, _REMEDY[gpu.state]))
        computing = any(bool(d.get("ComputeReady")) for d in devices)
        state = status.state
        if state == "ready":
            state = "degraded"  # the service's check found it computing; the kernel says it is not, for now
        names = ", ".join(f"{name} ({slot}): {gpu.state}" for slot, name, gpu in troubled)
        summary = f"GPU trouble: {names}" + (f"; {status.summary}" if status.state != "ready" else "")
        return replace(
            status,
            state=state,
            ready=computing and status.ready,
            summary=summary,
            devices=tuple(devices),
            findings=(*added, *findings),
        )


# --- one function per kind of event: what it counts, what it does to the GPU's state, ------------
# --- and whether that is news (False: the line is kept out of LastHealthLine) --------------------


def _reset_begin(gpu: GpuHealth, _event: HealthEvent) -> bool:
    gpu.resets += 1
    gpu.state = RESETTING
    return True


def _reset_done(gpu: GpuHealth, _event: HealthEvent) -> bool:
    if gpu.state not in (RESETTING, RESET_FAILED_STATE):
        gpu.resets += 1  # the begin line was missed (it came before the service followed the log)
    gpu.state = OK
    return True


def _reset_failed(gpu: GpuHealth, _event: HealthEvent) -> bool:
    if gpu.state == RESET_FAILED_STATE:
        return False  # 7.2 prints two lines for one failure
    gpu.reset_failures += 1
    gpu.state = RESET_FAILED_STATE
    return True


def _ring_timeout(gpu: GpuHealth, _event: HealthEvent) -> bool:
    gpu.ring_timeouts += 1
    if gpu.state == OK:
        gpu.state = HUNG
    return True


def _ring_recovered(gpu: GpuHealth, event: HealthEvent) -> bool:
    soft = "soft recovered" in event.line
    if soft:
        gpu.ring_timeouts += 1  # a soft recovery is a ring timeout that needed no reset
    if gpu.state == HUNG:
        gpu.state = OK
        return True
    return soft


def _hang(gpu: GpuHealth, _event: HealthEvent) -> bool:
    if gpu.state != OK:
        return False  # the same episode: a reset under way evicts queues and logs more of these
    gpu.hangs += 1
    gpu.state = HUNG
    return True


def _wedged(gpu: GpuHealth, event: HealthEvent) -> bool:
    gpu.wedged += 1
    # WEDGED=none: recovered, nothing left to do; any other method: userspace must recover it.
    gpu.state = OK if event.detail == "none" else WEDGED_STATE
    return True


def cause(event: HealthEvent) -> str:
    """The event in kfdguard's words, built from what it means and never from the line's other text:
    the ring's name, an error number and a wedge method are the kernel's, nothing else is."""
    ring = f"ring {event.detail}"
    if event.kind == RING_RECOVERED:
        return f"{ring} timeout, soft recovered" if "soft recovered" in event.line else f"{ring} reset succeeded"
    if event.kind == HANG:
        return "MES stopped answering" if "MES" in event.line else "the hardware scheduler (HWS) stopped answering"
    return {
        RESET_BEGIN: "GPU reset begin",
        RESET_DONE: "GPU reset succeeded",
        RESET_FAILED: f"GPU reset failed (error {event.detail})" if event.detail else "GPU reset failed",
        RING_TIMEOUT: f"{ring} timeout",
        WEDGED: f"GPU wedged (WEDGED={event.detail})",
    }.get(event.kind, event.kind)


_STEPS: dict[str, Callable[[GpuHealth, HealthEvent], bool]] = {
    RESET_BEGIN: _reset_begin,
    RESET_DONE: _reset_done,
    RESET_FAILED: _reset_failed,
    RING_TIMEOUT: _ring_timeout,
    RING_RECOVERED: _ring_recovered,
    HANG: _hang,
    WEDGED: _wedged,
}


__all__ = ["DEVICE_KEYS", "FINDING", "Health"]
