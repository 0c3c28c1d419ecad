"""Live GPU health while the service runs (issue 17, part 4).

After READY the service follows the kernel log (the journal's kernel
transport; a simulated machine's kmsg FIFO) and the DRM uevents' properties.
``events.py`` turns one kernel line or one uevent into a ``HealthEvent``
(pure: the format strings of amdgpu_device.c, amdgpu_job.c, amdgpu_vm.c and
drm_drv.c's ``drm_dev_wedged_event``); ``tracker.py`` keeps per GPU counters
and whether it is in trouble, and lays that over a published Status (state
``degraded`` while a GPU resets or hangs, back when the kernel says it
recovered); ``follow.py`` is the loop's side: the journal or a FIFO on the
loop's own readers, bounded per wake-up, no thread and no polling.
"""
