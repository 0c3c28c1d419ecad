"""Machines built from real sysfs captures (tests/data/real-sysfs, its README names every source).

A capture holds only files: a PCI device's attributes as ``<cardN>/device/<attribute>`` (LACT's
snapshots) and the KFD topology as ``kfd/topology/...``, ``topology/...`` or ``nodes/...``
(ROCm's k8s-device-plugin). ``machine`` renders a bundled simulated machine (so that the
probe has a System, /dev/kfd and accounts), takes its own GPU, KFD nodes and TTM module out, and puts the
capture's files where the kernel shows them, byte for byte:

- the PCI attributes in ``/sys/devices/pci0000:00/<slot>/``, the slot being the capture's
  uevent PCI_SLOT_NAME, with ``drm/<cardN>`` and the ``/sys/bus/pci/devices/<slot>`` link;
  nothing else (no ``driver`` link, no render node: the captures have none);
- the topology in ``/sys/devices/virtual/kfd/kfd/topology/``, where ``/sys/class/kfd/kfd`` points.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kfdguard.host.root import Root
from kfdguard.simulate import bundled
from kfdguard.simulate.system import SimulatedSystem
from tests.paths import TESTS

CAPTURES = TESTS / "data/real-sysfs"
BASE = "rx7900xtx-ubuntu2404"  # its own GPU (0000:03:00.0) and KFD nodes are removed
_BASE_SLOT = "0000:03:00.0"
_TOPOLOGY = "sys/devices/virtual/kfd/kfd/topology"


def _slot(uevent: Path) -> str:
    for line in uevent.read_bytes().split(b"\0", 1)[0].decode().splitlines():
        if line.startswith("PCI_SLOT_NAME="):
            return line.split("=", 1)[1]
    raise ValueError(f"{uevent} has no PCI_SLOT_NAME")


def _topology_of(capture: Path) -> Path | None:
    for where in ("kfd/topology", "topology", "."):
        if (capture / where / "nodes").is_dir():
            return capture / where
    return None


def machine(name: str, dest: Path) -> SimulatedSystem:
    """The bundled base machine with capture ``name``'s GPU and topology in place of its own."""
    capture = CAPTURES / name
    root = bundled.render_bundled(BASE, dest)
    top = Path(root.path)
    shutil.rmtree(top / "sys/devices/pci0000:00" / _BASE_SLOT)
    for link in ("sys/bus/pci/devices/" + _BASE_SLOT, "sys/class/drm/card0", "sys/class/drm/renderD128"):
        (top / link).unlink()
    shutil.rmtree(top / _TOPOLOGY / "nodes")
    (top / _TOPOLOGY / "generation_id").unlink()
    # The base card's driver loaded TTM (the simulator applies its limits since issue 38): its limit is
    # the simulated machine's, not the capture's, which has no /sys/module.
    for module in ("ttm", "amdttm"):
        shutil.rmtree(top / "sys/module" / module, ignore_errors=True)
    for card in sorted(capture.glob("card*")):
        slot = _slot(card / "device/uevent")
        dev = top / "sys/devices/pci0000:00" / slot
        shutil.copytree(card / "device", dev)  # copy2: the bytes as captured, NULs included
        (dev / "drm" / card.name).mkdir(parents=True)
        os.symlink(f"../../../devices/pci0000:00/{slot}", top / "sys/bus/pci/devices" / slot)
    topology = _topology_of(capture)
    if topology is not None:
        shutil.copytree(topology, top / _TOPOLOGY, dirs_exist_ok=True)
    return SimulatedSystem(Root(top))
