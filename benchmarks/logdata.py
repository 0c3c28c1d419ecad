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


# What a long bug-report paste mixes: a kernel log, a journal, application logs, rocminfo, ls, id and prose.
PASTE = (
    "[{t:12.6f}] usb 1-2: new high-speed USB device number {n} using xhci_hcd",
    "[{t:12.6f}] r8169 0000:05:00.0 enp5s0: Link is Up - 1Gbps/Full - flow control rx/tx",
    "[{t:12.6f}] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq={n}, emitted seq={n}",
    "Dec 01 10:00:{s:02d} box systemd[1]: Started session-{n}.scope - Session {n} of User ann.",
    "Dec 01 10:00:{s:02d} box ollama[812]: time=2025-03-03T10:00:01.1Z level=INFO source=gpu.go:226 "
    'msg="looking for compatible GPUs"',
    "Dec 01 10:00:{s:02d} box kernel: EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.",
    "> I tried it again with the new kernel and it still does not work, see the log above ({n})",
    "  Name:                    gfx1100",
    "  Marketing Name:          Radeon RX 7900 XTX",
    "  Compute Unit:            96",
    "crw-rw---- 1 root render 226, {n} Dec  1 10:00 renderD128",
    "uid=1000(ann) gid=1000(ann) groups=1000(ann),44(video),992(render)",
    "    at torch/cuda/__init__.py line {n}, in _lazy_init",
    'time=2025-03-03T10:00:01.1Z level=WARN source=amd_linux.go:378 msg="amdgpu is not supported '
    '(supported types:[gfx1030 gfx1100])" gpu_type=gfx1031 gpu=0',
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    "It works with sudo but not as my user, any idea what I am missing here? ({n})",
)


def generate_paste(size: int, *, seed: int = 2) -> str:
    """About ``size`` bytes of mixed paste, lines drawn from PASTE (noise-heavy, as real pastes are)."""
    rng = random.Random(seed)
    weights = (20, 20, 2, 12, 6, 12, 8, 2, 2, 2, 2, 1, 6, 1, 1, 3)
    out: list[str] = []
    total = 0
    i = 0
    while total < size:
        line = rng.choices(PASTE, weights)[0].format(t=i / 1000, n=i % 97, s=i % 60)
        out.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(out)
