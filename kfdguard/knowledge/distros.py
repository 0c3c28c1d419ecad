"""Distributions: one detector, one row of commands per distribution.

In the spirit of mkosi's ``mkosi/distribution/``: a ``Distribution`` enum, a
detector that reads os-release ``ID`` and then ``ID_LIKE`` in order, and per
distribution the data kfdguard needs (initramfs regeneration, kernel and
firmware packages, the package tool). Commands are argv tuples with
``{release}``-style placeholders filled from data: the text shown to a person
and the argv ``enforce`` runs come from the same row. A distribution without a
row gets a manual step (a sentence for a person), which nothing ever runs.

Sources: update-initramfs(8) (initramfs-tools: ``-u -k VERSION``), dracut(8)
(``--force --kver VERSION``), mkinitcpio(8) (``-P``: every preset); Debian's
firmware-amd-graphics (non-free-firmware), Fedora's amd-gpu-firmware
(linux-firmware.spec, subpackage since Fedora 38).
"""

from __future__ import annotations

import re
from enum import StrEnum

from kfdguard.record import dataclass


class Distribution(StrEnum):
    DEBIAN = "debian"
    UBUNTU = "ubuntu"
    FEDORA = "fedora"
    RHEL = "rhel"  # and what says ID_LIKE="rhel ...": CentOS Stream, Rocky, Alma
    ARCH = "arch"
    # Known, but kfdguard has no checked commands for them: manual steps.
    OPENSUSE = "opensuse"
    GENTOO = "gentoo"
    UNKNOWN = "unknown"


# os-release IDs that name a distribution of the enum under another word.
_QUIRKS = {"suse": Distribution.OPENSUSE, "opensuse-tumbleweed": Distribution.OPENSUSE,
           "opensuse-leap": Distribution.OPENSUSE, "centos": Distribution.RHEL}  # fmt: skip


def detect(os_id: str, id_like: tuple[str, ...] | list[str] = ()) -> Distribution:
    """The first of ID, then the ID_LIKE words in order, that kfdguard knows."""
    for given in (os_id, *id_like):
        word = given.strip().lower()
        if not word:
            continue
        if word in _QUIRKS:
            return _QUIRKS[word]
        try:
            found = Distribution(word)
        except ValueError:
            continue
        if found is not Distribution.UNKNOWN:
            return found
    return Distribution.UNKNOWN


def guess_from_release(release: str | None) -> Distribution:
    """Pasted text often shows only ``uname -r``: the distributions whose kernel flavours are unmistakable."""
    if not release:
        return Distribution.UNKNOWN
    if release.endswith("-generic") or "-lowlatency" in release:
        return Distribution.UBUNTU
    if release.endswith(("-amd64", "-arm64")):
        return Distribution.DEBIAN
    if ".fc" in release:
        return Distribution.FEDORA
    if ".el" in release:
        return Distribution.RHEL
    if "arch" in release:
        return Distribution.ARCH
    return Distribution.UNKNOWN


@dataclass(frozen=True)
class Row:
    """What kfdguard may run or suggest on one distribution."""

    initramfs: tuple[str, ...]  # regenerate the initramfs of {release}
    install: tuple[str, ...]  # the package tool; the package names follow
    kernel: str  # the distribution's kernel package
    firmware: str  # the package with /lib/firmware/amdgpu


_APT = ("apt", "install")
_DNF = ("dnf", "install")
_DRACUT = ("dracut", "--force", "--kver", "{release}")
_UPDATE_INITRAMFS = ("update-initramfs", "-u", "-k", "{release}")

ROWS: dict[Distribution, Row] = {
    Distribution.DEBIAN: Row(_UPDATE_INITRAMFS, _APT, "linux-image-amd64", "firmware-amd-graphics"),
    Distribution.UBUNTU: Row(_UPDATE_INITRAMFS, _APT, "linux-generic", "linux-firmware"),
    Distribution.FEDORA: Row(_DRACUT, _DNF, "kernel", "amd-gpu-firmware"),
    # RHEL's linux-firmware comes from the same spec file; the umbrella package recommends the AMD part.
    Distribution.RHEL: Row(_DRACUT, _DNF, "kernel", "linux-firmware"),
    # mkinitcpio -P rebuilds every preset: it takes no release.
    Distribution.ARCH: Row(("mkinitcpio", "-P"), ("pacman", "-S", "--needed"), "linux", "linux-firmware"),
}

# A kernel release as uname -r prints it. It fills an argv slot, so it must not be able to
# become an option ("-rf") or carry a separator; anything else is not a release to pass on.
# A pattern, compiled on first use (re caches it): the boot pass imports this module and
# seldom regenerates an initramfs.
_RELEASE = r"[0-9A-Za-z][0-9A-Za-z._+~-]{0,127}"


@dataclass(frozen=True)
class Step:
    """One thing to do: a command (run by enforce, shown with sudo) or a manual step (never run)."""

    argv: tuple[str, ...] | None
    text: str

    @property
    def manual(self) -> bool:
        return self.argv is None


def _fill(template: tuple[str, ...], **values: str) -> tuple[str, ...]:
    return tuple(arg.format(**values) for arg in template)


def shown(argv: tuple[str, ...]) -> str:
    """A command as a person pastes it."""
    import shlex

    return "sudo " + shlex.join(argv)


def initramfs_step(distro: Distribution, release: str) -> Step:
    row = ROWS.get(distro)
    if row is None or not re.fullmatch(_RELEASE, release):
        name = "this distribution" if distro is Distribution.UNKNOWN else str(distro)
        why = "kfdguard knows no command for " + name if row is None else "the kernel release is not a plain name"
        return Step(None, f"regenerate the initramfs of kernel {release!r} with your distribution's tool ({why})")
    argv = _fill(row.initramfs, release=release)
    return Step(argv, shown(argv))


def install_step(distro: Distribution, *packages: str) -> Step:
    row = ROWS.get(distro)
    if row is None:
        return Step(None, f"install {' and '.join(packages)} (or your distribution's equivalent)")
    argv = (*row.install, *packages)
    return Step(argv, shown(argv))


def row(distro: Distribution) -> Row | None:
    return ROWS.get(distro)


__all__ = ["ROWS", "Distribution", "Row", "Step", "detect", "guess_from_release", "initramfs_step", "install_step"]
