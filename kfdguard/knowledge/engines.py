"""Container engine releases with a known defect in how they hand device nodes to a container.

Docker Engine (CE) 17.12.1 and 18.02.0 ran a runc after 1.0.0-rc4 whose device setup created the nodes given with
``--device`` inside the container as ``root:root``, whatever their group on the host (opencontainers/runc#1742,
fixed by #1743 in runc 1.0.0-rc5; reported for /dev/snd, /dev/ttyUSB0 and /dev/dri in docker/for-linux#228 and
moby/moby#36446, #36457, #36628: "happens on 17.12.1 but not 17.12 or below, happens on 18.02"). /dev/kfd and the
render nodes keep their mode (0660) and lose their group, so only root inside the container can open them; a
non-root user of the image is denied although it is in the video/render group the image gives it. Docker Engine
18.03.0-ce (2018-03-21) bumped runc to 1.0.0-rc5 (moby/moby#36449; the 18.03.0-ce section of docker-ce's
CHANGELOG.md, read in a copy of docker-archive/docker-ce: "Fix devices mounted with wrong uid/gid"). 18.01.0 is
reported fine (docker/for-linux#228).

Docker numbered its releases YY.MM[.patch] from 17.03 on; a version written without its patch ("Docker 18.02")
is taken for the release of that month only where every patch release of it is affected (18.02 had one, 18.02.0).
"""

from __future__ import annotations

import re

from kfdguard.record import dataclass

__all__ = ["DEVICE_GROUP_RESET", "DOCKER_RELEASE", "EngineDefect", "device_group_reset", "release_text"]


@dataclass(frozen=True, slots=True)
class EngineDefect:
    """Releases of a container engine that pass ``--device`` nodes into the container as root:root."""

    engine: str
    versions: tuple[tuple[int, ...], ...]  # each an affected release, or a month whose every release is affected
    fixed_in: str
    sources: tuple[str, ...]


DEVICE_GROUP_RESET: tuple[EngineDefect, ...] = (
    EngineDefect(
        "Docker Engine",
        ((17, 12, 1), (18, 2)),
        "18.03.0-ce",
        (
            "https://github.com/docker/for-linux/issues/228",
            "https://github.com/moby/moby/issues/36446",
            "https://github.com/moby/moby/issues/36457",
            "https://github.com/moby/moby/pull/36449",
        ),
    ),
)

# Docker's release as people paste it: "Docker version 18.02.0-ce, build fc4de44" (docker --version), the
# "Version:  18.02.0-ce" rows of `docker version`, a package ("docker-ce 18.02.0~ce-0~ubuntu", "docker-ce=...")
# and prose ("Docker CE 18.02", "docker 17.12.1").
DOCKER_RELEASE = re.compile(
    r"\bdocker(?:[ -](?:ce|ee|engine))?(?:\s+version)?[\s=:]+v?(?P<release>\d{2}\.\d{2}(?:\.\d+)?)(?![\d.]*\d)"
    r"|^\s*Version:\s+(?P<row>\d{2}\.\d{2}\.\d+)-(?:ce|ee)\b",
    re.IGNORECASE,
)


def release_text(version: tuple[int, ...]) -> str:
    """(18, 2) -> "18.02", (17, 12, 1) -> "17.12.1": as Docker numbers its releases."""
    return f"{version[0]}.{version[1]:02d}" + "".join(f".{part}" for part in version[2:])


def _affected(release: tuple[int, ...], row: EngineDefect) -> bool:
    return any(release[: len(version)] == version for version in row.versions)


def device_group_reset(line: str) -> tuple[str, EngineDefect] | None:
    """The Docker release ``line`` shows, and the defect row it falls under; None where it shows none affected."""
    for m in DOCKER_RELEASE.finditer(line):
        written = m["release"] or m["row"]
        release = tuple(int(part) for part in written.split("."))
        for row in DEVICE_GROUP_RESET:
            if _affected(release, row):
                return written, row
    return None
