"""What the health tracker counts: the kinds of event and the event record (no parsing here:
the service imports this at start-up, the patterns in events.py only when a line comes)."""

from __future__ import annotations

from kfdguard.record import dataclass

RESET_BEGIN = "reset-begin"
RESET_DONE = "reset-done"
RESET_FAILED = "reset-failed"
RING_TIMEOUT = "ring-timeout"
RING_RECOVERED = "ring-recovered"  # soft recovery or a per-queue reset: no full reset
HANG = "hang"  # HWS or MES stopped answering
PROCESS = "process"  # the task the kernel names for the event before it
WEDGED = "wedged"


@dataclass(frozen=True, slots=True)
class HealthEvent:
    kind: str
    slot: str  # the PCI slot the kernel named; "" when the line carries none (6.1's DRM_ERROR)
    detail: str = ""  # the ring, the error number, the wedge recovery method
    process: str = ""  # "python3 (pid 4242)" when the kernel names one
    line: str = ""  # what the kernel said, cleaned and bounded
    count: int | None = None  # the kernel's own gpu_reset_counter, where printed


# Keys added to each Devices dictionary (additive: clients that do not know them ignore them).
DEVICE_KEYS = {
    "Health": "s",
    "Resets": "u",
    "ResetFailures": "u",
    "RingTimeouts": "u",
    "Hangs": "u",
    "WedgedEvents": "u",
    "LastHealthEvent": "t",
    "LastHealthLine": "s",
    "LastProcess": "s",
}
