"""amdgpu's CHIP_* types (amdgpu_drv.c's PCI table) -> kfdguard's Asic.key.

Hand-written: the kernel names chips by code name (amdgpu_asic_name[] in
amdgpu_device.c: SIENNA_CICHLID is Navi21, YELLOW_CARP is Rembrandt...);
kfdguard's keys are family names. CHIP_RAVEN covers Raven, Picasso and
Raven2 (told apart by revision at run time), mapped to "raven".

GPUs newer than amdgpu's explicit table (IP discovery) have no CHIP type; for
ids libdrm does not name either, pci.ids's family (the text before "[" in the
device's name: 0x7487 is "Navi 33 [Radeon Graphics]") says which chip it is.
FAMILY_TO_ASIC maps those families, one row each, only where every id pci.ids
gives that family and libdrm or amdgpu's table identify is that ASIC (a test
holds this; "Aqua Vanjaram" is not here because pci.ids uses it for MI300 and
MI350 ids alike) and the ASIC is discovered, not table-listed (gc_ip set).
"""

from __future__ import annotations

CHIP_TO_ASIC: dict[str, str] = {
    "CHIP_TAHITI": "tahiti", "CHIP_PITCAIRN": "pitcairn", "CHIP_VERDE": "verde", "CHIP_OLAND": "oland",
    "CHIP_HAINAN": "hainan", "CHIP_BONAIRE": "bonaire", "CHIP_KAVERI": "kaveri", "CHIP_KABINI": "kabini",
    "CHIP_HAWAII": "hawaii", "CHIP_MULLINS": "mullins", "CHIP_TOPAZ": "topaz", "CHIP_TONGA": "tonga",
    "CHIP_FIJI": "fiji", "CHIP_CARRIZO": "carrizo", "CHIP_STONEY": "stoney", "CHIP_POLARIS10": "polaris10",
    "CHIP_POLARIS11": "polaris11", "CHIP_POLARIS12": "polaris12", "CHIP_VEGAM": "vegam",
    "CHIP_VEGA10": "vega10", "CHIP_VEGA12": "vega12", "CHIP_VEGA20": "vega20", "CHIP_RAVEN": "raven",
    "CHIP_ARCTURUS": "arcturus", "CHIP_RENOIR": "renoir", "CHIP_ALDEBARAN": "aldebaran",
    "CHIP_NAVI10": "navi10", "CHIP_CYAN_SKILLFISH": "cyan_skillfish", "CHIP_NAVI14": "navi14",
    "CHIP_NAVI12": "navi12", "CHIP_SIENNA_CICHLID": "navi21", "CHIP_NAVY_FLOUNDER": "navi22",
    "CHIP_VANGOGH": "vangogh", "CHIP_DIMGREY_CAVEFISH": "navi23", "CHIP_BEIGE_GOBY": "navi24",
    "CHIP_YELLOW_CARP": "rembrandt",
}  # fmt: skip

# pci.ids family -> Asic.key. Source: pci.ids 0.0~2026.10.24-1 (Debian sid; generated data): the
# family's other ids are navi33 (0x7480 ...) and navi22 (0x73DF ...) in libdrm's amdgpu.ids.
FAMILY_TO_ASIC: dict[str, str] = {
    "Navi 33": "navi33",  # 0x7487, 0x748B "Navi 33 [Radeon Graphics]"
    "Navi 22-XL SRIOV MxGPU": "navi22",  # 0x73CE, the Navi 22 SR-IOV function (no bracketed name)
}
