"""Which firmware files an ASIC needs, and which Debian package version carries them.

The files a kernel can ask for are those its amdgpu.ko declares (``modinfo -F
firmware``, generated data); which of them a firmware-amd-graphics version
ships is its file list (generated data). What is hand-written is only which
file-name prefixes belong to an ASIC: the GC prefix follows from its GC IP
version; the other IP blocks' versions (PSP, SMU, SDMA) come from IP
discovery on the card and are listed below with their source. Off the boot
path: the lists are loaded lazily.
"""

from __future__ import annotations

from kfdguard.knowledge.formats import ids_firmware, kernel
from kfdguard.knowledge.model import Asic

# Non-GC IP blocks of IP-discovery ASICs whose firmware gaps matter on Debian 12 (files the
# 6.1 module declares that bookworm's firmware-amd-graphics 20230210 lacks). The sources only
# list the files (MODULE_FIRMWARE in psp_v13_0.c, smu_v13_0.c, sdma_v6_0.c); which IP version
# a card has comes from its discovery table at run time. Pairings (MP0/MP1 13.0.10 and SDMA
# 6.0.3 with GC 11.0.3 Navi32; MP0 13.0.11 with GC 11.0.4 Phoenix2) as in issue 22 and
# shared/knowledge/kfd-facts.md's corrections, not re-read from a card (UNCERTAIN).
EXTRA_PREFIXES: dict[str, tuple[str, ...]] = {
    "navi32": ("psp_13_0_10_", "smu_13_0_10", "sdma_6_0_3"),
    "phoenix2": ("psp_13_0_11_",),
}


# Firmware names that are not the CHIP_* code name: amdgpu_ucode_legacy_naming() in
# drivers/gpu/drm/amd/amdgpu/amdgpu_ucode.c (torvalds/linux, from 6.2; the same names in 5.15's
# gfx_v9_0.c/gfx_v10_0.c/sdma_v5_0.c chip_name choices) names GC 10.1.3/10.1.4 and SDMA 5.0.1
# "cyan_skillfish2", GC 9.1.0 "raven2"/"picasso" by APU flag (kfdguard's "picasso" row is
# Picasso/Raven2) and GC 9.3.0 "green_sardine" unless AMD_APU_IS_RENOIR (Cezanne, in the "renoir"
# row). Every such file is declared by the module (MODULE_FIRMWARE, modinfo -F firmware: generated
# data), and tests/unit/knowledge/test_knowledge_sources.py holds every declared legacy-named file
# to an ASIC, so a name missing here fails there.
FIRMWARE_NAMES: dict[str, tuple[str, ...]] = {
    "cyan_skillfish": ("cyan_skillfish2",),
    "picasso": ("picasso", "raven2"),
    "renoir": ("green_sardine",),
}


def prefixes(asic: Asic) -> tuple[str, ...]:
    """File-name prefixes (under amdgpu/) of the firmware this ASIC loads."""
    from kfdguard.knowledge.chips import CHIP_TO_ASIC

    # Chips named before IP discovery use their code name (sienna_cichlid_*.bin, polaris10_*.bin)
    # or a legacy variant of it (FIRMWARE_NAMES); later ones the GC IP (gc_11_0_3_*.bin).
    own = tuple(f"{chip.removeprefix('CHIP_').lower()}_" for chip, key in CHIP_TO_ASIC.items() if key == asic.key)
    own += tuple(f"{name}_" for name in FIRMWARE_NAMES.get(asic.key, ()))
    if asic.gc_ip:
        own += (f"gc_{asic.gc_ip.replace('.', '_')}_",)
    return own + EXTRA_PREFIXES.get(asic.key, ())


def declared(series: str, asic: Asic) -> list[str]:
    """Firmware files of the ASIC that that kernel series' amdgpu.ko declares."""
    wanted = prefixes(asic)
    return sorted(f for f in kernel(series)["firmware"] if f.removeprefix("amdgpu/").startswith(wanted))


def shipped(suite: str) -> frozenset[str]:
    """The amdgpu/ files of firmware-amd-graphics in a suite read by the generator."""
    return frozenset(ids_firmware()["firmware"][suite]["files"])


def package_version(suite: str) -> str:
    return str(ids_firmware()["firmware"][suite]["provenance"]["version"])


def missing(series: str, asic: Asic, suite: str) -> list[str]:
    """Declared files of the ASIC that the suite's firmware-amd-graphics lacks and the series' amdgpu needs.

    Files the series goes on without are left out (knowledge/fallbacks.py: a first choice with a
    fallback, bookworm's missing gc_11_0_x_mes_2.bin; an optional or tolerated request). So is a file
    no suite ships (6.1 declares gc_11_0_3_mes.bin, which no package has).
    """
    from kfdguard.knowledge.fallbacks import fallback_of, goes_without

    major, minor = series.split(".")[:2]
    version = (int(major), int(minor))
    suites = ids_firmware()["firmware"]
    anywhere = frozenset().union(*(frozenset(v["files"]) for v in suites.values()))
    have = shipped(suite)
    return [
        f
        for f in declared(series, asic)
        if f not in have and f in anywhere and fallback_of(f, version) is None and goes_without(f, version) is None
    ]


def advice(series: str, asic: Asic, suite: str = "bookworm") -> str | None:
    """What to install when ``suite``'s firmware-amd-graphics lacks files the kernel wants for the ASIC.

    None when nothing is missing. Otherwise names the first suite read (backports first) that
    ships all of them.
    """
    gaps = missing(series, asic, suite)
    if not gaps:
        return None
    suites = [s for s in ids_firmware()["firmware"] if s != suite]
    suites.sort(key=lambda s: (not s.endswith("-backports"), s))
    for other in suites:
        if not set(gaps) - shipped(other):
            option = f" -t {other}" if other.endswith("-backports") else ""
            return (
                f"{suite}'s firmware-amd-graphics {package_version(suite)} lacks {', '.join(gaps)} "
                f"(declared by the {series} amdgpu module for {asic.family}); {other}'s "
                f"{package_version(other)} has them: apt install{option} firmware-amd-graphics"
            )
    return f"no firmware-amd-graphics read ships {', '.join(gaps)}: install them from linux-firmware upstream"
