"""A GPU reset on a simulated machine, printed as the running kernel's amdgpu prints it.

The path is amdgpu_job_timedout -> amdgpu_device_gpu_recover (drivers/gpu/drm/amd/
amdgpu/amdgpu_job.c, amdgpu_device.c), with the format strings of Debian's
6.1.176, 6.12.117 and 7.2.13 sources:

- 6.1: ``DRM_ERROR`` for the ring timeout and the process (``[drm:amdgpu_job_timedout
  [amdgpu]] *ERROR* ...``, no device named); ``dev_info`` with dev_fmt "amdgpu: " for
  ``GPU reset begin!`` and ``GPU reset(N) succeeded!``;
- 6.12: every line is ``dev_err``/``dev_info`` with dev_fmt "amdgpu: ";
- 7.2: amdgpu.h no longer defines dev_fmt (the lines carry only ``amdgpu SLOT: ``),
  the begin line ends with ``. Source:  1`` (AMDGPU_RESET_SRC_JOB), the process line
  is amdgpu_vm_print_task_info's ``" Process %s pid %d thread %s pid %d"``, and a
  successful reset ends with drm_dev_wedged_event(DRM_WEDGE_RECOVERY_NONE): the
  drm_info line and a change uevent on the card with ``WEDGED=none PID= TASK=``.

Where the 7.x form started between 6.12 and 7.2 is not known here: releases from
7.0 on print the 7.2 form. **UNCERTAIN** for 6.13-7.1.
"""

from __future__ import annotations

import os

from kfdguard.simulate.kernel import ERROR, INFO, SimKernel

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.root import Root

RING = "gfx_0.0.0"


def _amdgpu(kernel: SimKernel, slot: str) -> str:
    return f"amdgpu {slot}: " if kernel.version >= (7, 0) else f"amdgpu {slot}: amdgpu: "


def _card(root: Root, slot: str) -> str | None:
    for name in sorted(os.listdir(root.sys / "class/drm")) if (root.sys / "class/drm").is_dir() else []:
        target = os.path.realpath(root.sys / "class/drm" / name)
        if (
            name.startswith("card")
            and "-" not in name
            and os.path.basename(os.path.dirname(os.path.dirname(target))) == slot
        ):
            return name
    return None


def hang(kernel: SimKernel, slot: str, process: tuple[str, int] = ("python3", 4242), ring: str = RING) -> None:
    """A job on ``ring`` timed out: the timeout line, the guilty process, and the reset begins."""
    seq = int(kernel.values.get(f"ring_seq:{slot}", "1200")) + 37
    kernel.values[f"ring_seq:{slot}"] = str(seq)
    name, pid = process
    timeout = f"ring {ring} timeout, signaled seq={seq}, emitted seq={seq + 2}"
    if kernel.version >= (7, 0):
        kernel.printk(_amdgpu(kernel, slot) + timeout, ERROR)
        kernel.printk(_amdgpu(kernel, slot) + f" Process {name} pid {pid} thread {name} pid {pid}", ERROR)
        kernel.printk(_amdgpu(kernel, slot) + "GPU reset begin!. Source:  1", INFO)
        return
    info = f"Process information: process {name} pid {pid} thread {name} pid {pid}"
    if kernel.version >= (6, 2):
        kernel.printk(_amdgpu(kernel, slot) + timeout, ERROR)
        kernel.printk(_amdgpu(kernel, slot) + info, ERROR)
    else:
        kernel.printk("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* " + timeout, ERROR)
        kernel.printk("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* " + info, ERROR)
    kernel.printk(_amdgpu(kernel, slot) + "GPU reset begin!", INFO)


def recover(kernel: SimKernel, slot: str, process: tuple[str, int] = ("python3", 4242), ok: bool = True) -> None:
    """The reset ends: succeeded (and, from 7.x, the WEDGED=none uevent) or failed."""
    count = int(kernel.values.get(f"gpu_reset_counter:{slot}", "0")) + 1
    kernel.values[f"gpu_reset_counter:{slot}"] = str(count)
    if not ok:
        if kernel.version >= (7, 0):
            kernel.printk(_amdgpu(kernel, slot) + f"GPU reset({count}) failed with error -110", INFO)
        kernel.printk(_amdgpu(kernel, slot) + "GPU reset end with ret = -110", INFO)
        return
    kernel.printk(_amdgpu(kernel, slot) + f"GPU reset({count}) succeeded!", INFO)
    if kernel.version >= (7, 0):
        kernel.printk(f"amdgpu {slot}: [drm] device wedged, but no recovery needed", INFO)
        card = _card(kernel.root, slot)
        if card is not None:
            name, pid = process
            kernel.uevents.append(f"change drm {card} WEDGED=none PID={pid} TASK={name}")


def reset(root: Root, slot: str, *, ok: bool = True, process: tuple[str, int] = ("python3", 4242)) -> None:
    """A whole reset at once (hang, then recovery), saved and announced."""
    from kfdguard.simulate.system import SimulatedSystem

    kernel = SimulatedSystem(root).kernel()
    hang(kernel, slot, process)
    recover(kernel, slot, process, ok)
    kernel.save()


__all__ = ["hang", "recover", "reset"]
