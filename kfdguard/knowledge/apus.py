"""Which integrated GPU an AMD processor name implies ("Ryzen 7 PRO 8700GE", "Ryzen AI Max+ 395", "7940HS").

People name an APU by its processor more often than by its GPU, and a processor name is all some reports give
(issue 36). Each row maps a family of processor names to the gfx target of the iGPU every member carries.

Sources, and how sure each step is:

* processor -> iGPU: AMD's processor specifications ("Graphics Model": Radeon 780M/760M/740M for the 7040, 8040
  and 8000G series, 680M/660M for the 6000 and 7035 series, 610M for the 7020 series, 890M/880M for Ryzen AI 9,
  860M/840M for Ryzen AI 7 350 / AI 5 340, 8060S/8050S/8040S for Ryzen AI Max) and AMD's 2023 mobile model-number
  key (the third digit is the CPU architecture: 7x40 Zen 4 "Phoenix", 7x35 Zen 3+ "Rembrandt-R", 7x30 Zen 3
  "Barcelo-R", 7x20 Zen 2 "Mendocino");
* iGPU -> die -> gfx: the die each name is filed under in knowledge/asics.py (libdrm's amdgpu.ids and pci.ids
  names), whose gfx comes from the kernel's own GC-IP table (knowledge/generated.py: GC 10.3.7, Mendocino, is
  gfx1036 there).

Desktop Ryzen 7000 and 9000 without the F suffix ("Raphael", "Granite Ridge") carry a 2-CU display engine,
gfx1036 (knowledge/asics.py's Raphael row: libdrm's 0x164E, GC 10.3.6; real reports show it as the device ROCm
enumerates first: tests/data/real-reports 136, 162 (amdgpu-arch printing gfx1036 on a 9600X), 411). Most such
machines compute on a card beside it, so that row (``named_as_gpu``) counts only where the text names the processor
as its GPU: on a line that says GPU, iGPU, graphics or integrated, or under a label that does (an issue form's
"### GPU"); evidence/text.py decides. AMD's product pages for these parts (Graphics Model "AMD Radeon Graphics",
2 graphics cores) were not reachable from here: the row rests on the kernel's and libdrm's ids and those reports.

Left out on purpose: mobile 7045HX "Dragon Range" (the same die; not read here), processors without graphics
(the F and plain desktop parts of Ryzen 5000: 5600X, 5700, 8400F), and names whose die differs between steppings
or that AMD reused (Ryzen AI 7 PRO 360, Ryzen AI 5 330, the Ryzen 200 series, the Z2 and Z2 Go). A name there
implies nothing.

A processor name is weaker evidence than a GPU's own name or id: the machine may compute on a discrete card
beside it. evidence/text.py records it apart (Observations.cpu_gpus) and the rules take it only when the text
names no other GPU.
"""

from __future__ import annotations

import re

from kfdguard.record import dataclass


@dataclass(frozen=True, slots=True)
class ApuFamily:
    pattern: re.Pattern[str]  # searched in the lower-cased line
    gfx: str
    igpu: str  # the graphics AMD's specifications name, for the finding's evidence
    family: str  # the die, as knowledge/asics.py files it
    named_as_gpu: bool = False  # counts only where the text names the processor as its GPU (a display engine)


def _row(pattern: str, gfx: str, igpu: str, family: str, *, named_as_gpu: bool = False) -> ApuFamily:
    return ApuFamily(re.compile(pattern), gfx, igpu, family, named_as_gpu)


# "Ryzen 7 PRO 8700GE", "Ryzen 9 7940HS", "AMD 7840U": a four-digit model after "ryzen" (its tier and PRO
# between) or right after "amd". The suffix is required: it is what tells an APU from a part without graphics.
_MODEL = r"\b(?:ryzen(?:\s+[3579])?(?:\s+pro)?|amd)\s+(?:pro\s+)?"

APU_FAMILIES: tuple[ApuFamily, ...] = (
    # Ryzen AI Max / Max+ (Strix Halo): 385, 390, 395, PRO 380/385/390/395.
    _row(r"\bryzen\s+ai\s+max\+?\s+(?:pro\s+)?3[89]\d\b", "gfx1151", "Radeon 8060S/8050S/8040S", "Strix Halo"),
    # Ryzen AI 9 HX 370/375 and AI 9 365 (Strix Point, Radeon 890M/880M).
    _row(r"\bryzen\s+ai\s+9\s+(?:hx\s+)?(?:pro\s+)?(?:37[05]|365)\b", "gfx1150", "Radeon 890M/880M", "Strix Point"),
    # Ryzen AI 7 350 and AI 5 340 (Krackan Point, Radeon 860M/840M).
    _row(r"\bryzen\s+ai\s+[57]\s+(?:pro\s+)?(?:350|340)\b", "gfx1152", "Radeon 860M/840M", "Krackan Point"),
    # Ryzen Z1 and Z1 Extreme (Phoenix, in the ROG Ally and Legion Go); Z2 Extreme (Strix Point).
    _row(r"\bryzen\s+z1(?:\s+extreme)?\b", "gfx1103", "Radeon 780M/740M class", "Phoenix"),
    _row(r"\bryzen\s+z2\s+extreme\b", "gfx1150", "Radeon 890M class", "Strix Point"),
    # 7040 and 8040 mobile (Phoenix, Phoenix 2 and Hawk Point: 7x40U/HS/H, 7545U, 8x40U/HS, 8x45HS), 8000G desktop.
    _row(_MODEL + r"(?:7[3-9]40|7545|8[3-9]4[05])(?:u|hs|h)\b", "gfx1103", "Radeon 780M/760M/740M", "Phoenix"),
    _row(_MODEL + r"8[3-7]00(?:ge|g)\b", "gfx1103", "Radeon 780M/760M/740M", "Phoenix"),
    # 6000 mobile and 7035 (Rembrandt and Rembrandt-R: Radeon 680M/660M).
    _row(_MODEL + r"(?:6[4-9]\d0|7[3-7]35)(?:u|hs|hx|h)\b", "gfx1035", "Radeon 680M/660M", "Rembrandt"),
    # 7020 (Mendocino: Radeon 610M).
    _row(_MODEL + r"7[1-5]20u\b", "gfx1036", "Radeon 610M", "Mendocino"),
    # 4000 and 5000 mobile and G desktop, 5x25U and 7x30U (Renoir, Lucienne, Cezanne, Barcelo(-R): Vega graphics).
    _row(
        _MODEL + r"(?:[45][3-9]\d0(?:u|hs|hx|h|ge|g)|5[3-8]25u|7[3-7]30u)\b",
        "gfx90c",
        "Radeon Graphics (Vega)",
        "Renoir/Cezanne",
    ),
    # 2000 and 3000 mobile and G desktop (Raven Ridge, Picasso: Vega graphics); the x50U parts are Dali, left out.
    _row(_MODEL + r"(?:2[2-8]00|3[2-7]00|3580)(?:u|h|ge|g)\b", "gfx902", "Radeon Vega Mobile / Vega 8/11", "Raven"),
    # Desktop 7000 and 9000 (Raphael, Granite Ridge): 7600, 7700X, 7800X3D, 7950X, 9600X, 9950X3D; never F, never
    # "AMD 7900" alone (a Radeon RX 7900), so the tier after "ryzen" is required.
    _row(
        r"\bryzen\s+[3579]\s+(?:pro\s+)?[79][6-9]\d0(?:x3d|x)?\b(?!\s*(?:xt|gre|m\b|s\b))",
        "gfx1036",
        "AMD Radeon Graphics (2 CUs)",
        "Raphael/Granite Ridge",
        named_as_gpu=True,
    ),
)


def apu_targets(lowered: str, *, named_as_gpu: bool = False) -> list[tuple[str, str, ApuFamily]]:
    """(gfx, the name as written, its row) for each APU processor named in a lower-cased line; the display engines'
    rows only with ``named_as_gpu`` (the caller has seen the text name the processor as its GPU)."""
    found = []
    for row in APU_FAMILIES:
        if row.named_as_gpu and not named_as_gpu:
            continue
        for m in row.pattern.finditer(lowered):
            found.append((row.gfx, m.group(0), row))
    return found


__all__ = ["APU_FAMILIES", "ApuFamily", "apu_targets"]
