"""A simulated machine's own outputs, printed as the real tools print them, pasted together.

Formats, checked against real output: ``dmesg`` prints a kmsg record as
``[%5lu.%06lu] text``; ``ls -l`` of a character device prints
``crw-rw---- 1 root render 240, 0 Dec  1 08:25 /dev/kfd`` and, for a
directory operand, a ``/dev/dri:`` header, ``total N`` and bare names with
the minor numbers right-aligned (coreutils 9.1, measured on Debian 12 with
mknod); ``id`` prints ``uid=1000(alice) gid=1000(alice) groups=...``;
``lspci -nn`` prints ``03:00.0 VGA compatible controller [0300]: Advanced
Micro Devices, Inc. [AMD/ATI] Device [1002:73bf] (rev c3)`` for a device
its pci.ids has no name for; rocminfo's agent blocks and messages follow
ROCm/rocminfo rocminfo.cc (shared/knowledge/kfd-facts.md §6, and public
rocminfo output in ROCm issues).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from kfdguard.access import NodeStat, check_rw
from kfdguard.host.root import Root
from kfdguard.simulate.state import read_devices, sim_dir

_CLASSES = {0x0300: "VGA compatible controller", 0x0380: "Display controller", 0x0302: "3D controller"}
_VENDORS = {0x1002: "Advanced Micro Devices, Inc. [AMD/ATI]", 0x10DE: "NVIDIA Corporation", 0x8086: "Intel Corporation"}
_DATE = "Dec  1 08:25"


def _accounts(root: Path) -> tuple[dict[int, str], dict[int, str], dict[str, list[str]], dict[str, tuple[int, int]]]:
    users: dict[int, str] = {}
    primary: dict[str, tuple[int, int]] = {}
    for line in (root / "etc/passwd").read_text().splitlines():
        name, _, uid, gid, *_ = line.split(":")
        users[int(uid)] = name
        primary[name] = (int(uid), int(gid))
    groups: dict[int, str] = {}
    members: dict[str, list[str]] = {}
    for line in (root / "etc/group").read_text().splitlines():
        name, _, gid, listed = line.split(":")
        groups[int(gid)] = name
        members[name] = [m for m in listed.split(",") if m]
    return users, groups, members, primary


def _session_user(root: Path) -> str:
    spec = json.loads((Path(sim_dir(Root(root))) / "spec.json").read_text())
    users = [u for u in spec["users"] if u.get("session")] or spec["users"]
    return str(users[0]["name"])


def dmesg(root: Path) -> str:
    lines = []
    for record in (Path(sim_dir(Root(root))) / "kmsg").read_text().splitlines():
        prefix, _, text = record.partition(";")
        usec = int(prefix.split(",")[2])
        lines.append(f"[{usec // 1_000_000:5d}.{usec % 1_000_000:06d}] {text}")
    return "\n".join(lines)


def _ls_line(path: str, node: NodeStat, users: dict[int, str], groups: dict[int, str], widths: tuple[int, ...]) -> str:
    owner, group = users.get(node.uid, str(node.uid)), groups.get(node.gid, str(node.gid))
    # One more column for the mode when any entry has an ACL ("+"), as coreutils aligns it.
    wmode, wo, wg, wmaj, wmin = widths
    return (
        f"{node.symbolic:<{wmode}} 1 {owner:<{wo}} {group:<{wg}} {node.major:>{wmaj}}, {node.minor:>{wmin}} "
        f"{_DATE} {path}"
    )


def ls_kfd_dri(root: Path) -> str:
    users, groups, _, _ = _accounts(root)
    return render_ls(read_devices(Root(root)), users, groups)


def render_ls(nodes: dict[str, NodeStat], users: dict[int, str], groups: dict[int, str]) -> str:
    """``ls -l /dev/kfd /dev/dri``: the file operand first, then the directory's listing."""
    out = []
    kfd = nodes.get("/dev/kfd")
    if kfd is None:
        out.append("ls: cannot access '/dev/kfd': No such file or directory")
    else:
        out.append(_ls_line("/dev/kfd", kfd, users, groups, (len(kfd.symbolic), 1, 1, 1, 1)))
    dri = sorted((p, n) for p, n in nodes.items() if p.startswith("/dev/dri/"))
    out += ["", "/dev/dri:", f"total {0}"]
    if dri:
        widths = (
            max(len(n.symbolic) for _, n in dri),
            max(len(users.get(n.uid, str(n.uid))) for _, n in dri),
            max(len(groups.get(n.gid, str(n.gid))) for _, n in dri),
            max(len(str(n.major)) for _, n in dri),
            max(len(str(n.minor)) for _, n in dri),
        )
        out += [_ls_line(os.path.basename(p), n, users, groups, widths) for p, n in dri]
    return "\n".join(out)


def id_of(root: Path, user: str) -> str:
    _, groups, members, primary = _accounts(root)
    uid, gid = primary[user]
    by_name = {name: g for g, name in groups.items()}
    gids = [gid, *sorted(by_name[name] for name, listed in members.items() if user in listed and by_name[name] != gid)]
    listed = ",".join(f"{g}({groups[g]})" for g in gids)
    return f"uid={uid}({user}) gid={gid}({groups[gid]}) groups={listed}"


def lspci_nn(root: Path) -> str:
    out = []
    for device in sorted((root / "sys/bus/pci/devices").iterdir()):
        pci_class = int((device / "class").read_text(), 16) >> 8
        if pci_class not in _CLASSES:
            continue
        vendor, dev = (int((device / f).read_text(), 16) for f in ("vendor", "device"))
        revision = int((device / "revision").read_text(), 16)
        domain, bdf = device.name.split(":", 1)
        slot = bdf if domain == "0000" else device.name
        name = f"{_VENDORS.get(vendor, 'Device')} Device"
        out.append(
            f"{slot} {_CLASSES[pci_class]} [{pci_class:04x}]: {name} [{vendor:04x}:{dev:04x}] (rev {revision:02x})"
        )
    return "\n".join(out)


def _agent(index: int, props: dict[str, int]) -> list[str]:
    version = props["gfx_target_version"]
    major, minor, step = version // 10000, version // 100 % 100, version % 100
    gfx = f"gfx{major}{minor:x}{step:x}"
    return [
        "*******",
        f"Agent {index}",
        "*******",
        f"  {'Name:':<25}{gfx}",
        f"  {'Uuid:':<25}GPU-XX",
        f"  {'Marketing Name:':<25}AMD Radeon Graphics",
        f"  {'Vendor Name:':<25}AMD",
        f"  {'Device Type:':<25}GPU",
        f"  {'Chip ID:':<25}{props['device_id']}(0x{props['device_id']:x})",
        f"  {'BDFID:':<25}{props['location_id']}",
        f"  {'Compute Unit:':<25}{props['simd_count'] // max(props['simd_per_cu'], 1)}",
    ]


def rocminfo(root: Path, user: str) -> str:
    """What rocminfo prints for this user: the agents, or why it could not open /dev/kfd."""
    nodes = read_devices(Root(root))
    kfd = nodes.get("/dev/kfd")
    if kfd is None:
        return "ROCk module is NOT loaded, possibly no GPU devices"
    _, groups, members, primary = _accounts(root)
    uid, gid = primary[user]
    by_name = {name: g for g, name in groups.items()}
    gids = frozenset({gid} | {by_name[n] for n, listed in members.items() if user in listed})
    out = ["ROCk module is loaded"]
    if not check_rw(kfd, uid, gids).allowed:
        out.append("Unable to open /dev/kfd read-write: Permission denied")
        group = groups.get(kfd.gid, str(kfd.gid))
        if kfd.gid not in gids:
            out.append(
                f'{user} is not member of "{group}" group, the default DRM access group. Users must be a member '
                f'of the "{group}" group or another DRM access group in order for ROCm applications to run '
                "successfully."
            )
        return "\n".join(out)
    out += ["==========", "HSA Agents", "==========", "*******", "Agent 1", "*******"]
    out += [f"  {'Name:':<25}AMD Ryzen CPU", f"  {'Device Type:':<25}CPU"]
    topology = root / "sys/class/kfd/kfd/topology/nodes"
    index = 2
    for node in sorted(topology.iterdir(), key=lambda p: int(p.name)) if topology.is_dir() else []:
        props = {}
        for line in (node / "properties").read_text().splitlines():
            key, _, value = line.partition(" ")
            props[key] = int(value)
        if props.get("gfx_target_version"):
            out += _agent(index, props)
            index += 1
    out.append("*** Done ***")
    return "\n".join(out)


def paste_of(root: Path, *, kernel_config: bool = False) -> str:
    """Everything a helpful reporter pastes, each command with its prompt, as one text."""
    user = _session_user(root)
    release = (root / "proc/sys/kernel/osrelease").read_text().strip()
    parts = [
        f"$ uname -r\n{release}",
        f"$ lspci -nn | grep -Ei 'vga|display|3d'\n{lspci_nn(root)}",
        f"$ ls -l /dev/kfd /dev/dri\n{ls_kfd_dri(root)}",
        f"$ id\n{id_of(root, user)}",
        f"$ rocminfo\n{rocminfo(root, user)}",
        f"$ sudo dmesg\n{dmesg(root)}",
    ]
    if kernel_config:
        boot = root / f"boot/config-{release}"
        if boot.exists():
            where, config = f"/boot/config-{release}", boot.read_text()
        else:
            where, config = "/proc/config.gz", gzip.decompress((root / "proc/config.gz").read_bytes()).decode()
        hsa = [line for line in config.splitlines() if "CONFIG_HSA_AMD" in line or "CONFIG_DRM_AMDGPU" in line]
        command = f"grep -E 'HSA_AMD|DRM_AMDGPU' {where}" if boot.exists() else f"zgrep -E 'HSA_AMD|DRM_AMDGPU' {where}"
        parts.append(f"$ {command}\n" + "\n".join(hsa))
    return "\n".join(parts) + "\n"
