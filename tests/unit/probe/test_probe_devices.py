"""probe_gpus: which PCI functions count as GPUs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kfdguard.host.root import Root
from kfdguard.probe.devices import probe_gpus
from kfdguard.probe.reader import Reader

if TYPE_CHECKING:
    from pathlib import Path

    from kfdguard.host.paths import HostPath


def _device(root: Path, slot: str, pci_class: str, vendor: str, device: str) -> None:
    dev = root / "sys/bus/pci/devices" / slot
    dev.mkdir(parents=True)
    (dev / "class").write_text(pci_class + "\n")
    (dev / "vendor").write_text(vendor + "\n")
    (dev / "device").write_text(device + "\n")
    (dev / "revision").write_text("0x00\n")


def test_display_and_processing_accelerator_classes_are_gpus(tmp_path: Path) -> None:
    # amdgpu binds base classes 0x03 and 0x12: Debian 13's 6.12 amdgpu.ko has the aliases
    # bc03sc00, bc03sc80 and bc12sc00 (an Instinct MI300X/MI350X is a processing accelerator).
    _device(tmp_path, "0000:03:00.0", "0x030000", "0x1002", "0x744c")  # RX 7900 XTX, VGA
    _device(tmp_path, "0000:05:00.0", "0x120000", "0x1002", "0x75a0")  # MI350X, accelerator
    _device(tmp_path, "0000:07:00.0", "0x038000", "0x1002", "0x740f")  # MI210, display controller
    _device(tmp_path, "0000:00:1f.2", "0x010601", "0x8086", "0x2922")  # a SATA controller
    _device(tmp_path, "0000:09:00.0", "0x020000", "0x1002", "0x1234")  # not display, not accelerator
    gpus = probe_gpus(Reader(Root(tmp_path)))
    assert sorted((g.slot, g.pci_class, g.device) for g in gpus) == [
        ("0000:03:00.0", 0x030000, 0x744C),
        ("0000:05:00.0", 0x120000, 0x75A0),
        ("0000:07:00.0", 0x038000, 0x740F),
    ]


def test_only_a_gpus_directory_is_read_beyond_its_class(tmp_path: Path) -> None:
    # The uevent is read only where a GPU's own files are missing (a partial copy): never for the
    # other devices of a machine, whose class says at once that they are not GPUs.
    read: list[str] = []

    class Recording(Reader):
        def data(self, path: HostPath, **kwargs: Any) -> bytes | None:
            read.append(str(path).rsplit("/", 2)[-2] + "/" + str(path).rsplit("/", 1)[-1])
            return super().data(path, **kwargs)

    _device(tmp_path, "0000:00:1f.2", "0x010601", "0x8086", "0x2922")  # a SATA controller
    (tmp_path / "sys/bus/pci/devices/0000:00:1f.2/uevent").write_text("PCI_CLASS=10601\nPCI_ID=8086:2922\n")
    assert probe_gpus(Recording(Root(tmp_path))) == []
    assert read == ["0000:00:1f.2/class"]
