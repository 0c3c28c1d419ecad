"""Which packages of Debian's archive the knowledge is generated from.

Each kernel series names the suites that carry it: a stable release's main
suite and its security suite (point releases move the former, security
updates the latter; the newest of the two is the series' kernel). ``--update-pins``
takes the newest ``linux-source-X.Y`` there and the ``linux-image-*-amd64``
built from the same upstream version (``-unsigned`` when the suite has it: the
same modules without the signature wrapper; ``linux-modules-*`` in the split
packaging of 7.x), and records both in the pin file (pins.py); every other run
reads the pinned versions. Series the archive no longer serves are reported
and skipped, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tools.knowledge.archive import ArchiveError, Package

# (suite, component, arch) -> the packages of that index (archive.index with the right base).
IndexReader = Callable[[str, str, str], list[Package]]


@dataclass(frozen=True)
class KernelChoice:
    series: str
    suite: str
    source: Package
    image: Package


# (label, suites). A stable series is read from its main suite and its security suite
# ("debian-security" archive), whichever has the newer kernel; sid and experimental move
# daily, which the pin file absorbs (a newer upload is reported, not taken).
KERNELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("5.10", ("bullseye", "bullseye-security")),
    ("6.1", ("bookworm", "bookworm-security")),
    ("6.12", ("trixie", "trixie-security")),
    ("newest-unstable", ("sid",)),
    ("newest-experimental", ("experimental",)),
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


def is_security(suite: str) -> bool:
    return suite.endswith("-security")


def upstream(version: str) -> str:
    return re.split(r"-[^-]*$", version.rsplit(":", maxsplit=1)[-1])[0]


def vkey(version: str) -> list[tuple[int, int, str]]:
    """A sort key for Debian versions good enough for kernels and dated packages: numbers
    compare as numbers, and "~" sorts before anything (7.3~rc7 < 7.3)."""
    key: list[tuple[int, int, str]] = []
    for part in re.findall(r"\d+|~|[a-z+]+", version.rsplit(":", maxsplit=1)[-1]):
        if part.isdigit():
            key.append((1, int(part), ""))
        else:
            key.append((-1 if part == "~" else 0, 0, part))
    return [*key, (0, 0, "")]


def choose_kernel(series: str, suites: tuple[str, ...], read: IndexReader) -> KernelChoice:
    """The newest linux-source of ``series`` in any of ``suites``, and its amd64 modules."""
    packages = [p for suite in suites for p in read(suite, "main", "amd64")]
    sources = [p for p in packages if re.fullmatch(r"linux-source-\d+\.\d+", p.name)]
    if series[0].isdigit():
        sources = [p for p in sources if p.name == f"linux-source-{series}"]
    if not sources:
        raise ArchiveError(f"{'/'.join(suites)} carries no linux-source for {series}")
    source = max(sources, key=lambda p: vkey(p.version))
    images = [p for p in packages
              if re.fullmatch(r"linux-(image|modules)-[0-9][\w.+~-]*-amd64(-unsigned)?", p.name)
              and p.size > 1 << 20  # a meta package of the split packaging (7.x) holds no modules
              and not re.search(r"-(cloud|rt)-amd64", p.name) and upstream(p.version) == upstream(source.version)]  # fmt: skip
    if not images:
        raise ArchiveError(f"{'/'.join(suites)}: no linux-image-*-amd64 of {source.version}")
    image = max(
        images,
        key=lambda p: (p.suite == source.suite, p.name.endswith("-unsigned"), p.name.startswith("linux-modules"),
                       vkey(p.version)),
    )  # fmt: skip
    return KernelChoice(source.name.removeprefix("linux-source-"), source.suite, source, image)


def newest(name: str, suites: tuple[str, ...], component: str, arch: str, read: IndexReader) -> Package:
    found = [p for suite in suites for p in read(suite, component, arch) if p.name == name]
    if not found:
        raise ArchiveError(f"{'/'.join(suites)}/{component} has no {name}")
    return max(found, key=lambda p: vkey(p.version))
