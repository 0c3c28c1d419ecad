"""The ROCm releases a text shows, and what rocBLAS of those releases carries for a GPU target.

A fact of support holds for a release, not for ROCm at large: gfx1103 has rocBLAS code from ROCm 7.1 and
none before (knowledge/rocm.py). The rules read the release from what programs and paths print: PyTorch's
local version label ("2.5.1+rocm6.2", a wheel index's ".../rocm6.2"), a versioned install tree
("/opt/rocm-6.2.0"), collect_env's "ROCM used to build PyTorch: 6.2.41133-...", a container tag
(":rocm6.2_ubuntu22.04"), and prose ("ROCm 5.4", "ROCm version: 6.2.4"). Several releases shown that
disagree about a target leave the answer unknown.
"""

from __future__ import annotations

import re

from kfdguard.assess.claims import lines_with
from kfdguard.assess.reasoning import Reasoning
from kfdguard.knowledge import rocm, torchwheels
from kfdguard.knowledge.appformats import gfx_major

RocmVersion = tuple[int, int]

_V = r"(?P<{}>[1-9]\.\d{{1,2}})(?!\d)"
SHOWN = re.compile(
    r"\+rocm"
    + _V.format("label")  # torch 2.5.1+rocm6.2, torchvision-0.20.1+rocm6.2
    + r"|/rocm-"
    + _V.format("tree")  # /opt/rocm-6.2.0
    + r"|/whl/(?:nightly/|test/)?rocm"
    + _V.format("index")  # pip --index-url .../whl/rocm6.2
    + r"|:rocm"
    + _V.format("tag")  # rocm/pytorch:rocm6.2_ubuntu22.04_py3.10
    + r"|\bROCM used to build PyTorch: "
    + _V.format("hip")  # torch.utils.collect_env
    + r"|\bROCm\b[\s:-]*(?:version\s*:?\s*|v)?"
    + _V.format("prose")  # ROCm 5.4, ROCm version: 6.2.4, ROCm v6.1
    # "Installed ROCm from the repositories, version 3.10.0": "version" later in the clause, with no other
    # program's name between (a kernel's, Python's, a driver's version is not ROCm's)
    + r"|\bROCm\b(?:(?!kernel|linux|python|torch|ubuntu|debian|fedora|driver|firmware|cuda|gcc|mesa)[^.\n]){1,40}?"
    r"\bversion\s+" + _V.format("far"),
    re.I,
)
# pip's list of what an index offers names releases nobody installed.
_NOT_INSTALLED = ("from versions:",)


def rocm_versions_shown(r: Reasoning) -> list[tuple[RocmVersion, str]]:
    """The ROCm releases the text shows, each with the first line that shows it, in order of appearance."""
    found: dict[RocmVersion, str] = {}
    for line in lines_with(r.obs, "rocm"):
        if any(cue in line for cue in _NOT_INSTALLED):
            continue
        for m in SHOWN.finditer(line):
            version = rocm.parse_rocm_version(next(v for v in m.groupdict().values() if v))
            if version is not None:
                found.setdefault(version, line.strip()[:160])
    return list(found.items())


def carried_in(gfx: str, shown: list[tuple[RocmVersion, str]]) -> bool | None:
    """Whether rocBLAS of the releases shown carries ``gfx``: True or False when every release shown is known
    and they agree, None otherwise (no release shown, one the table does not know, or releases that disagree)."""
    answers = {rocm.carries(gfx, version) for version, _ in shown}
    if len(answers) != 1:
        return None
    return answers.pop()


def had_a_gap(gfx: str) -> bool:
    """Whether some release of the table, from the first with any target of ``gfx``'s generation, has no code
    for ``gfx`` itself: a release in which an override to a neighbour of its generation was the workaround
    (gfx1101 before 5.5, gfx1103 before 7.1), so without a release shown such an override is not proven wrong."""
    major = gfx_major(gfx)
    if major is None:
        return False
    started = False
    for row in rocm.ROCM_RELEASES:
        started = started or any(gfx_major(t) == major for t in row.targets)
        if started and gfx not in row.targets:
            return True
    return False


# A date as threads and logs print it (2025-01-08, 2025-01-08T10:00): the text was written on it or after it.
_DATE = re.compile(r"(?<![\d-])(?P<date>20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))(?![\d-])")


def newest_date(r: Reasoning) -> tuple[str, str] | None:
    """The newest ISO date the text shows, with its line: no release in use then can be newer than that day."""
    found: tuple[str, str] | None = None
    for line in lines_with(r.obs, "-"):
        for m in _DATE.finditer(line):
            if found is None or m["date"] > found[0]:
                found = (m["date"], line.strip()[:160])
    return found


def predates_support(r: Reasoning, gfx: str) -> tuple[str, str, rocm.RocmRelease] | None:
    """Where the text is dated before the first release whose rocBLAS carries ``gfx`` was published: every ROCm it
    can show in use has no code for it. Returns the date, its line and that first release; None where the table
    has no date for it or the text no date before it."""
    first = rocm.first_rocm_with(gfx)
    row = rocm.release(first) if first else None
    if row is None or not row.published:
        return None
    dated = newest_date(r)
    if dated is None or dated[0] >= row.published:
        return None
    return dated[0], dated[1], row


def wheel_without_code(r: Reasoning, gfx: str, path: str) -> tuple[str, str, torchwheels.WheelEra] | None:
    """Where ``path`` is inside a PyTorch wheel and the text is dated when no wheel bundled rocBLAS files for ``gfx``
    (knowledge/torchwheels.py): the date, its line and the era read. None where the path is not a wheel's, the text
    shows no date, or a wheel of its time may carry the target."""
    if not torchwheels.wheel_path(path):
        return None
    dated = newest_date(r)
    if dated is None:
        return None
    era = torchwheels.bundled_rocblas_lacks(gfx, dated[0])
    return (dated[0], dated[1], era) if era is not None else None


def releases_text(shown: list[tuple[RocmVersion, str]]) -> str:
    return ", ".join(rocm.version_text(v) for v, _ in shown)


__all__ = [
    "SHOWN",
    "carried_in",
    "had_a_gap",
    "newest_date",
    "predates_support",
    "releases_text",
    "rocm_versions_shown",
    "wheel_without_code",
]
