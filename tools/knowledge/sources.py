"""Which packages of Debian's archive the knowledge is generated from.

Each kernel series names the suite that carries it; the generator takes that
suite's newest ``linux-source-X.Y`` and the ``linux-image-*-amd64`` built from
the same upstream version (``-unsigned`` when the suite has it: the same
modules without the signature wrapper; ``linux-modules-*`` in the split
packaging of 7.x). Series the archive no longer serves
are reported and skipped, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.knowledge.archive import ArchiveError, Package, index


@dataclass(frozen=True)
class KernelChoice:
    series: str
    suite: str
    source: Package
    image: Package


# (series, suite, security suite or None). bullseye and bookworm are stable
# releases: their main suites only move at point releases, which keeps the
# committed data reproducible for months.
KERNELS: tuple[tuple[str, str], ...] = (
    ("5.10", "bullseye"),
    ("6.1", "bookworm"),
    ("6.12", "trixie"),
    ("newest-unstable", "sid"),
    ("newest-experimental", "experimental"),
)

# Firmware file lists: the suites a Debian 12 user can install from.
FIRMWARE_SUITES: tuple[tuple[str, str], ...] = (
    ("bookworm", "non-free-firmware"),
    ("bookworm-backports", "non-free-firmware"),
    ("trixie", "non-free-firmware"),
)

# (package, suite): amdgpu.ids of libdrm, pci.ids.
IDS_PACKAGES: tuple[tuple[str, str], ...] = (
    ("libdrm-common", "bullseye"),
    ("libdrm-common", "bookworm"),
    ("libdrm-common", "trixie"),
    ("libdrm-common", "sid"),
    ("pci.ids", "bookworm"),
    ("pci.ids", "sid"),
)


def _upstream(version: str) -> str:
    return re.split(r"-[^-]*$", version.rsplit(":", maxsplit=1)[-1])[0]


def _vkey(version: str) -> list[tuple[int, str]]:
    return [(int(p), "") if p.isdigit() else (-1, p) for p in re.findall(r"\d+|[a-z~]+", version)]


def choose_kernel(series: str, suite: str, *, base: str, offline: bool) -> KernelChoice:
    packages = index(suite, "main", "amd64", base=base, offline=offline)
    sources = [p for p in packages if re.fullmatch(r"linux-source-\d+\.\d+", p.name)]
    if series[0].isdigit():
        sources = [p for p in sources if p.name == f"linux-source-{series}"]
    if not sources:
        raise ArchiveError(f"{suite} carries no linux-source for {series}")
    source = max(sources, key=lambda p: _vkey(p.version))
    images = [p for p in packages
              if re.fullmatch(r"linux-(image|modules)-[0-9][\w.+~-]*-amd64(-unsigned)?", p.name)
              and p.size > 1 << 20  # a meta package of the split packaging (7.x) holds no modules
              and not re.search(r"-(cloud|rt)-amd64", p.name) and _upstream(p.version) == _upstream(source.version)]  # fmt: skip
    if not images:
        raise ArchiveError(f"{suite}: no linux-image-*-amd64 of {source.version}")
    image = max(
        images, key=lambda p: (p.name.endswith("-unsigned"), p.name.startswith("linux-modules"), _vkey(p.version))
    )
    return KernelChoice(source.name.removeprefix("linux-source-"), suite, source, image)


def newest(name: str, suite: str, component: str, arch: str, *, base: str, offline: bool) -> Package:
    found = [p for p in index(suite, component, arch, base=base, offline=offline) if p.name == name]
    if not found:
        raise ArchiveError(f"{suite}/{component} has no {name}")
    return max(found, key=lambda p: _vkey(p.version))
