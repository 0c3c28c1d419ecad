"""GPUs on the PCI bus, their DRM nodes, and KFD (device node, topology, ioctl)."""

from __future__ import annotations

import errno

from kfdguard.facts import DeviceNode, GpuFacts, KfdFacts, PcieLink, TopologyNode
from kfdguard.host.paths import HostPath
from kfdguard.host.system import KfdIoctlError
from kfdguard.parsers.pcie import (
    MAX_MEMORY,
    SysfsValueError,
    parse_link_speed,
    parse_link_width,
    parse_memory_total,
)
from kfdguard.parsers.topology import parse_int, parse_properties
from kfdguard.probe.reader import Reader
from kfdguard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from kfdguard.host.system import System

# PCI base classes amdgpu binds: display (0x03) and processing accelerator
# (0x12, Instinct MI300/MI350): the aliases of Debian 13's 6.12 amdgpu.ko
# include pci:v00001002d*sv*sd*bc12sc00i00* beside bc03sc00 and bc03sc80.
GPU_CLASSES = frozenset({0x03, 0x12})
TOPOLOGY_NODE_LIMIT = 256
MEM_BANK_LIMIT = 16
# kfd_crat.h: HSA_MEM_HEAP_TYPE_FB_PUBLIC 1, HSA_MEM_HEAP_TYPE_FB_PRIVATE 2 (0 is SYSTEM, 3-5 GDS/LDS/scratch).
FB_HEAPS = frozenset({1, 2})


def _hex(reader: Reader, path: HostPath) -> int | None:
    text = reader.attribute_value(path)
    if text is None:
        return None
    value = parse_int(text if text.lower().startswith("0x") else "0x" + text)
    if value is None:
        reader.complain(path, f"unreadable: {text[:40]!r} is not a hex number")
    return value


def probe_gpus(reader: Reader) -> list[GpuFacts]:
    root = reader.root
    base = root.sys / "bus/pci/devices"
    gpus = []
    for slot in reader.listdir(base):
        dev = base / slot
        pci_class = _hex(reader, dev / "class")
        if pci_class is not None and pci_class >> 16 not in GPU_CLASSES:
            continue
        vendor = _hex(reader, dev / "vendor")
        device = _hex(reader, dev / "device")
        uevent: dict[str, str] = {}
        if pci_class is None or vendor is None or device is None:
            uevent = _uevent(reader, dev)
            pci_class, vendor, device = _ids_from_uevent(reader, dev, uevent, (pci_class, vendor, device))
        if pci_class is None or pci_class >> 16 not in GPU_CLASSES or vendor is None or device is None:
            continue
        card: str | None = None
        render: int | None = None
        for entry in reader.listdir(dev / "drm"):
            if entry.startswith("card") and entry[4:].isdigit():
                card = card or entry
            elif entry.startswith("renderD") and _small_number(entry[7:]):
                render = int(entry[7:])
        gpus.append(
            GpuFacts(
                slot=slot,
                vendor=vendor,
                device=device,
                subsystem_vendor=_hex(reader, dev / "subsystem_vendor"),
                subsystem_device=_hex(reader, dev / "subsystem_device"),
                revision=_hex(reader, dev / "revision"),
                pci_class=pci_class,
                driver=reader.readlink_name(dev / "driver") or _driver_from_uevent(reader, dev, uevent),
                boot_vga=reader.attribute_value(dev / "boot_vga") == "1",
                card=card,
                render_minor=render,
                vram_total=_number(reader, dev / "mem_info_vram_total", parse_memory_total),
                gtt_total=_number(reader, dev / "mem_info_gtt_total", parse_memory_total),
                link=_link(reader, linked := _physical_port(reader, dev), "current_link"),
                link_max=_link(reader, linked, "max_link"),
            )
        )
    return gpus


def _uevent(reader: Reader, dev: HostPath) -> dict[str, str]:
    """A PCI device's uevent as KEY=value pairs (pci-driver.c pci_uevent: PCI_CLASS=%04X,
    PCI_ID=%04X:%04X, PCI_SUBSYS_ID, PCI_SLOT_NAME, MODALIAS; the driver core adds DRIVER=)."""
    text = reader.attribute(dev / "uevent") or ""
    return dict(line.partition("=")[::2] for line in text.splitlines()[:32] if "=" in line)


def _ids_from_uevent(
    reader: Reader, dev: HostPath, uevent: dict[str, str], ids: tuple[int | None, int | None, int | None]
) -> tuple[int | None, int | None, int | None]:
    """Class, vendor and device from the uevent where their own files are missing or garbled.

    The kernel always makes all three files; copies of a device directory often leave some out
    (LACT's snapshots of an RX 580, an RX 9070 XT and a Steam Deck have ``vendor`` and no
    ``device``). Before, such a GPU was skipped without a word; now the uevent, which the kernel
    prints from the same registers, fills what is missing, and the copy's gap is said."""
    pci_class, vendor, device = ids
    if pci_class is None:
        pci_class = _hex_or_none(uevent.get("PCI_CLASS", ""))
        if pci_class is None or pci_class >> 16 not in GPU_CLASSES:
            return pci_class, vendor, device  # not a GPU: nothing to say about its files
    pair = uevent.get("PCI_ID", "").split(":")
    if len(pair) == 2:
        vendor = vendor if vendor is not None else _hex_or_none(pair[0])
        device = device if device is not None else _hex_or_none(pair[1])
    missing = [name for name, value in zip(("class", "vendor", "device"), ids, strict=True) if value is None]
    if vendor is None or device is None:
        reader.complain(dev, f"a display device without a readable {'/'.join(missing)}, nor one in its uevent: skipped")
    else:
        reader.complain(
            dev, f"no readable {'/'.join(missing)} (a partial copy of the directory?): taken from its uevent"
        )
    return pci_class, vendor, device


def _driver_from_uevent(reader: Reader, dev: HostPath, uevent: dict[str, str]) -> str | None:
    """The bound driver as the uevent names it, for a copy that kept the uevent and not the driver link.
    On a live machine both say the same: no link, no DRIVER= line (one read, for an unbound GPU only)."""
    driver = (uevent or _uevent(reader, dev)).get("DRIVER", "")
    return driver if driver.isascii() and driver.replace("_", "").replace("-", "").isalnum() else None


def _hex_or_none(text: str) -> int | None:
    text = text.strip()
    return parse_int(text if text.lower().startswith("0x") else "0x" + text) if text else None


# PCI-to-PCI bridge (class 0x0604xx) of AMD's graphics vendor id: the switch on a dGPU's own board.
_ATI, _BRIDGE = "0x1002", "0x0604"


def _physical_port(reader: Reader, dev: HostPath) -> HostPath:
    """Where the GPU's physical PCIe link shows: RDNA dGPUs sit behind a switch of their own
    (upstream and downstream port, vendor 0x1002), so their endpoint's link is internal to
    the card. amdgpu skips those bridges the same way to find its slot
    (amdgpu_device_partner_bandwidth, "skip upstream/downstream switches internal to dGPU",
    6.12); the upstream port's link is the one to the slot. An APU's bridges are the CPU
    vendor's (0x1022) and are not skipped."""
    real = HostPath(reader.realpath(dev))
    if not reader.root.is_host and not real.is_relative_to(reader.root.path):
        return dev  # not the machine's (the Reader refuses a link out of a root: this is a second guard)
    top = real
    for _ in range(4):  # upstream port + downstream port, with room for a deeper board; bounded
        parent = top.parent
        if not _looks_like_slot(parent.name):
            break
        if reader.attribute_value(parent / "vendor") != _ATI or not (
            reader.attribute_value(parent / "class") or ""
        ).startswith(_BRIDGE):
            break
        top = parent
    return top


def _looks_like_slot(name: str) -> bool:
    # "0000:03:00.0": what sysfs names a PCI device directory.
    return len(name) == 12 and name[4] == ":" and name[7] == ":" and name[10] == "."


def _number(reader: Reader, path: HostPath, parse: Callable[[str], int | None]) -> int | None:
    """One numeric attribute: amdgpu's memory totals (registered on the PCI device, where the
    DRM card's ``device`` link points) or a link width. Absent is unknown, garbled a Problem."""
    text = reader.attribute_value(path)
    if text is None:
        return None
    try:
        return parse(text)
    except SysfsValueError as exc:
        reader.complain(path, f"unreadable: {exc}")
        return None


def _link(reader: Reader, dev: HostPath, prefix: str) -> PcieLink | None:
    speed_path, width_path = dev / f"{prefix}_speed", dev / f"{prefix}_width"
    speed_text = reader.attribute_value(speed_path)
    width = _number(reader, width_path, parse_link_width)
    if speed_text is None:
        # Not a PCIe device (the PCI core hides the link attributes then), or an old kernel.
        return None if width is None else PcieLink(None, width)
    try:
        speed = parse_link_speed(speed_text)
    except SysfsValueError as exc:
        reader.complain(speed_path, f"unreadable: {exc}")
        speed = None
    return PcieLink(speed, width)


def probe_node(reader: Reader, system: System, path: HostPath) -> DeviceNode:
    shown = reader.root.display(path)
    try:
        return DeviceNode(shown, system.stat_node(path))
    except OSError as exc:
        return DeviceNode(shown, None, error=exc.strerror or str(exc))


def probe_kfd(reader: Reader, system: System) -> KfdFacts:
    root = reader.root
    node = probe_node(reader, system, root.kfd)
    kfd_sys = root.sys / "class/kfd/kfd"
    topo = kfd_sys / "topology"
    nodes: list[TopologyNode] = []
    names = [n for n in reader.listdir(topo / "nodes") if _small_number(n)]
    for name in sorted(names, key=int)[:TOPOLOGY_NODE_LIMIT]:
        node_facts = _topology_node(reader, topo / "nodes" / name, int(name))
        if node_facts is not None:
            nodes.append(node_facts)
    without_id = [n.index for n in nodes if n.gpu_id is None]
    if without_id:
        # Never so on a live kernel (KFD makes gpu_id for every node, 0 for a CPU's); copies of the
        # topology often leave it out (k8s-device-plugin's MI210 and MI300X captures). One word for all.
        reader.complain(
            topo / "nodes",
            f"{len(without_id)} of {len(nodes)} node(s) without a readable gpu_id (a partial copy?): "
            "a node with SIMDs is taken as a GPU's",
        )
    gen_text = reader.attribute_value(topo / "generation_id")
    generation = parse_int(gen_text) if gen_text is not None else None
    version: tuple[int, int] | None = None
    version_error: str | None = None
    version_errno: int | None = None
    if node.stat is not None and node.stat.kind == "char":
        try:
            version = system.kfd_version(root.kfd)
        except KfdIoctlError as exc:
            version_error = str(exc)
            version_errno = exc.errno
            if exc.errno == errno.EPERM:
                version_error += " (a device cgroup or DeviceAllow= may deny it)"
        except OSError as exc:
            version_error = exc.strerror or str(exc)
            version_errno = exc.errno
    elif node.stat is not None:
        version_error = f"{node.path} is not a character device"
    return KfdFacts(
        node=node,
        sysfs=reader.is_dir(kfd_sys),
        topology=tuple(nodes),
        generation_id=generation,
        version=version,
        version_error=version_error,
        version_errno=version_errno,
    )


def _topology_node(reader: Reader, ndir: HostPath, index: int) -> TopologyNode | None:
    text = reader.attribute(ndir / "properties")
    if text is None:
        reader.complain(ndir / "properties", "missing: topology node without properties")
        return None
    props, complaints = parse_properties(text)
    for complaint in complaints[:3]:
        reader.complain(ndir / "properties", complaint)
    gpu_text = reader.attribute_value(ndir / "gpu_id")
    gpu_id = parse_int(gpu_text) if gpu_text is not None else None
    if gpu_text is not None and gpu_id is None:
        reader.complain(ndir / "gpu_id", "unreadable: not a number")
    node = TopologyNode(index, gpu_id, reader.attribute_value(ndir / "name") or "", props)
    if not node.is_gpu:
        return node  # a CPU node's banks are system memory: not read
    gfx_by_id = None
    if not node.gfx_target_version and node.prop("vendor_id") == 0x1002:
        # Older kernels write no gfx_target_version: the knowledge table's ASIC of the node's
        # device_id says it, as it does for a GPU that has no node (imported here, off the boot path).
        from kfdguard.knowledge import identify

        asic, _ = identify(node.prop("device_id"))
        gfx_by_id = asic.gfx if asic is not None else None
    return replace(node, local_memory=_local_memory(reader, ndir), gfx_by_id=gfx_by_id)


def _local_memory(reader: Reader, ndir: HostPath) -> int | None:
    """Bytes in a GPU node's frame-buffer banks; None when none says (absent, or size 0)."""
    total: int | None = None
    banks = [b for b in reader.listdir(ndir / "mem_banks") if _small_number(b)]
    for bank in sorted(banks, key=int)[:MEM_BANK_LIMIT]:
        path = ndir / "mem_banks" / bank / "properties"
        text = reader.attribute(path)
        if text is None:
            continue
        props, complaints = parse_properties(text)
        for complaint in complaints[:3]:
            reader.complain(path, complaint)
        size = props.get("size_in_bytes", 0)
        if props.get("heap_type") not in FB_HEAPS or size == 0:
            continue
        if not 0 < size <= MAX_MEMORY:
            reader.complain(path, f"unreadable: size_in_bytes {size} is not a GPU memory size")
            continue
        total = (total or 0) + size
    return total


def _small_number(text: str) -> bool:
    """A kernel-made decimal name part (renderD128, node 3). isdigit() alone admits "²", which int() refuses."""
    return text.isascii() and text.isdigit() and len(text) <= 9
