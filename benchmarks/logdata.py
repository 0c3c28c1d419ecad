"""A generated kernel log that looks like a real boot plus a long uptime."""

from __future__ import annotations

import random

NOISE = (
    "usb 1-2: new high-speed USB device number {n} using xhci_hcd",
    "EXT4-fs (nvme0n1p2): mounted filesystem {n} with ordered data mode. Quota mode: none.",
    'audit: type=1400 audit(1700000000.{n}:42): apparmor="STATUS" operation="profile_load"',
    "pcieport 0000:00:01.1: AER: Corrected error received: 0000:00:01.{n}",
    "r8169 0000:05:00.0 enp5s0: Link is Up - 1Gbps/Full - flow control rx/tx",
    "nvme nvme0: {n}/0/0 default/read/poll queues",
    "input: Logitech USB Receiver as /devices/pci0000:00/0000:00:14.0/usb1/1-{n}/input/input5",
    "IPv6: ADDRCONF(NETDEV_CHANGE): wlp3s0: link becomes ready",
    "systemd-journald[{n}]: Time spent on flushing to /var/log/journal is 12.345ms",
)
AMD = (
    "[drm] amdgpu kernel modesetting enabled.",
    "amdgpu: Topology: Add CPU node",
    "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236",
    "kfd kfd: amdgpu: added device 1002:744c",
    "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
)


def generate(lines: int, *, every: int = 5000, seed: int = 1) -> str:
    """``lines`` dmesg lines; one in ``every`` is an amdgpu/KFD message."""
    rng = random.Random(seed)
    out = []
    for i in range(lines):
        stamp = f"[{i / 1000:12.6f}] "
        if i % every == 0:
            out.append(stamp + rng.choice(AMD))
        elif i % 997 == 0:
            # Lines that name amdgpu without being KFD news: the prefilter lets them through.
            out.append(
                stamp
                + "snd_hda_intel 0000:0b:00.1: bound 0000:0b:00.0 (ops amdgpu_dm_audio_component_bind_ops [amdgpu])"
            )
        else:
            out.append(stamp + rng.choice(NOISE).format(n=i % 97))
    return "\n".join(out)
