"""gfx target ids: parsing, names in library file names, and which GPU can run which code.

Target ids are ``<processor>(:<feature>(+|-))*`` (LLVM AMDGPUUsage, "Target
ID"); bundle entry ids are ``<kind>-<triple>-<target id>`` with the triple
``amdgcn-amd-amdhsa-`` (clang OffloadBundler.cpp, ``OffloadTargetInfo``: the
id is split at the first five dashes, so the triple's empty environment
gives the double dash of ``hipv4-amdgcn-amd-amdhsa--gfx1100``).
"""

from __future__ import annotations

import functools
import re

from kfdguard.record import dataclass

# Generic processors and the processors their code runs on: LLVM
# llvm/docs/AMDGPUUsage.rst, table "AMDGPU Generic Processors" (code object V6
# and later), as llvm/llvm-project f5c8b0a9139bcc301b75f3e77e307f65f7f870d8 has it
# (gfx9-4-generic: gfx942 gfx950; gfx11-generic with gfx1153; gfx12-generic:
# gfx1200 gfx1201) and ROCm/llvm-project 056c6fbd9aa20cb553d2c2bf834bfd98e658bb62,
# the first of the two with gfx12-5-generic (gfx1250 gfx1251). A generic code
# object also carries a version that a processor must be at least as new as;
# kfdguard does not read it (UNCERTAIN for processors added to a family after its
# first version, such as gfx1153: code built before it joined may not load there).
GENERIC = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
    "gfx12-5-generic": ("gfx1250", "gfx1251"),
}

# A processor name: gfx + major (1-2 digits) + minor + stepping (hex), or a generic family.
_PROCESSOR = r"gfx(?:\d{1,2}(?:-\d)?-generic|\d{1,2}[0-9a-f][0-9a-f])"
PROCESSOR_RE = re.compile(rf"^{_PROCESSOR}$")
# In a file name: not preceded or followed by another letter or digit, with
# optional features written either as in a target id (":xnack-") or as Tensile
# and rocBLAS spell them in file names ("-xnack-", "_xnack+").
NAME_RE = re.compile(rf"(?<![0-9A-Za-z])({_PROCESSOR})((?:[-_:](?:xnack|sramecc)[+-])*)(?![0-9a-z])")
FEATURE_RE = re.compile(r"(xnack|sramecc)([+-])")
# Processor ids that are too long for any real one are refused, as are absurd
# feature lists, so a hostile entry id cannot grow a record.
MAX_ID = 256


@dataclass(frozen=True, slots=True)
class Target:
    """A target id: a processor and the features the code was built with on or off ("any" when absent)."""

    processor: str
    features: tuple[tuple[str, bool], ...] = ()

    def __str__(self) -> str:
        return self.processor + "".join(f":{name}{'+' if on else '-'}" for name, on in self.features)

    @property
    def generic(self) -> bool:
        return self.processor.endswith("-generic")


def parse_target(text: str) -> Target | None:
    """``gfx90a:sramecc+:xnack-`` -> Target; None for what is not an AMDGPU target id."""
    if len(text) > MAX_ID:
        return None
    processor, *features = text.split(":")
    if not PROCESSOR_RE.match(processor):
        return None
    parsed: dict[str, bool] = {}
    for feature in features:
        m = FEATURE_RE.fullmatch(feature)
        if m is None or m.group(1) in parsed:
            return None
        parsed[m.group(1)] = m.group(2) == "+"
    return Target(processor, tuple(sorted(parsed.items())))


@dataclass(frozen=True, slots=True)
class EntryId:
    """A bundle entry id split as clang splits it."""

    kind: str  # host, hip, hipv4, openmp
    triple: str  # "amdgcn-amd-amdhsa-", "x86_64-unknown-linux-gnu"
    target: Target | None  # None for the host entry and non-AMDGPU devices

    @property
    def is_amdgpu(self) -> bool:
        return self.triple.startswith("amdgcn-")


@functools.lru_cache(maxsize=4096)
def parse_entry_id(text: str) -> EntryId | None:
    """``hipv4-amdgcn-amd-amdhsa--gfx1100`` -> EntryId; None when it has fewer than five components."""
    parts = text.split("-", 5)
    if len(parts) < 5:
        return None
    kind, triple = parts[0], "-".join(parts[1:5])
    target = parse_target(parts[5]) if len(parts) == 6 and parts[5] else None
    return EntryId(kind, triple, target)


def targets_in_name(name: str) -> tuple[Target, ...]:
    """The targets a rocBLAS/hipBLASLt/Tensile file name is for (``Kernels.so-000-gfx90a-xnack-.hsaco``)."""
    found = []
    for m in NAME_RE.finditer(name):
        features = tuple(sorted({f.group(1): f.group(2) == "+" for f in FEATURE_RE.finditer(m.group(2))}.items()))
        found.append(Target(m.group(1), features))
    return tuple(found)


def runs_on(code: Target, gpu: str) -> bool:
    """Whether code built for ``code`` loads on a GPU whose processor is ``gpu`` (ignoring features)."""
    if code.processor == gpu:
        return True
    return gpu in GENERIC.get(code.processor, ())


def feature_note(code: Target) -> str:
    """What a feature setting demands of the process ("" when the code runs with any setting)."""
    if not code.features:
        return ""
    needs = ", ".join(f"{name} {'on' if on else 'off'}" for name, on in code.features)
    return f"loads only where {needs}"


def family(gfx: str) -> str:
    """``gfx1103`` -> ``gfx110``: the major and minor version, the stepping dropped."""
    return gfx[:-1] if PROCESSOR_RE.match(gfx) and not gfx.endswith("generic") else gfx


def override_for(gfx: str) -> str:
    """The HSA_OVERRIDE_GFX_VERSION value that names ``gfx`` itself (``gfx1030`` -> ``10.3.0``)."""
    digits = gfx[3:]
    major, minor, step = digits[:-2], digits[-2], digits[-1]
    return f"{int(major)}.{int(minor, 16)}.{int(step, 16)}"


OVERRIDE_RE = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{1,2})$")


def gfx_of_override(value: str) -> str | None:
    """``11.0.0`` -> ``gfx1100``, as ROCr reads HSA_OVERRIDE_GFX_VERSION (major.minor.stepping, decimal)."""
    m = OVERRIDE_RE.match(value.strip())
    if m is None:
        return None
    major, minor, step = (int(x) for x in m.groups())
    if minor > 15 or step > 15 or major == 0:
        return None
    return f"gfx{major}{minor:x}{step:x}"
