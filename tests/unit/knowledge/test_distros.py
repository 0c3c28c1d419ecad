"""One distribution table: detection from os-release, and commands that are data."""

from __future__ import annotations

import pytest

from kfdguard.assess import remedies
from kfdguard.knowledge.distros import ROWS, Distribution, detect, guess_from_release, initramfs_step, shown

# (ID, ID_LIKE) as the distributions' own /etc/os-release files say it.
OS_RELEASES = [
    ("debian", "", Distribution.DEBIAN),
    ("ubuntu", "debian", Distribution.UBUNTU),
    ("pop", "ubuntu debian", Distribution.UBUNTU),
    ("linuxmint", "ubuntu debian", Distribution.UBUNTU),
    ("fedora", "", Distribution.FEDORA),
    ("rhel", "fedora", Distribution.RHEL),
    ("rocky", "rhel centos fedora", Distribution.RHEL),
    ("almalinux", "rhel centos fedora", Distribution.RHEL),
    ("centos", "rhel fedora", Distribution.RHEL),
    ("arch", "", Distribution.ARCH),
    ("manjaro", "arch", Distribution.ARCH),
    ("endeavouros", "arch", Distribution.ARCH),
    ("opensuse-tumbleweed", "opensuse suse", Distribution.OPENSUSE),
    ("opensuse-leap", "suse opensuse", Distribution.OPENSUSE),
    ("gentoo", "", Distribution.GENTOO),
    ("nixos", "", Distribution.UNKNOWN),
    ("", "", Distribution.UNKNOWN),
]


@pytest.mark.parametrize(("os_id", "id_like", "expected"), OS_RELEASES)
def test_detect_reads_id_then_id_like(os_id: str, id_like: str, expected: Distribution) -> None:
    assert detect(os_id, id_like.split()) is expected


def test_the_id_wins_over_id_like() -> None:
    # Ubuntu says ID_LIKE=debian; its own row (linux-modules-extra, HWE kernels) must apply.
    assert detect("ubuntu", ["debian"]) is Distribution.UBUNTU


@pytest.mark.parametrize("distro", sorted(ROWS))
def test_each_row_gives_an_argv_and_the_same_text(distro: Distribution) -> None:
    step = initramfs_step(distro, "6.8.0-45-generic")
    assert step.argv is not None and not step.manual
    assert all(isinstance(a, str) and a for a in step.argv)
    assert "{" not in " ".join(step.argv)  # every placeholder filled
    assert step.text == shown(step.argv)  # the person sees what enforce runs
    assert remedies.regenerate_initramfs(str(distro), "6.8.0-45-generic") == step.text


def test_the_release_fills_its_slot_only() -> None:
    assert initramfs_step(Distribution.DEBIAN, "6.1.0-27-amd64").argv == (
        "update-initramfs", "-u", "-k", "6.1.0-27-amd64",
    )  # fmt: skip
    assert initramfs_step(Distribution.FEDORA, "6.11.4-301.fc41.x86_64").argv == (
        "dracut", "--force", "--kver", "6.11.4-301.fc41.x86_64",
    )  # fmt: skip


@pytest.mark.parametrize("distro", [Distribution.OPENSUSE, Distribution.GENTOO, Distribution.UNKNOWN])
def test_no_row_is_a_manual_step(distro: Distribution) -> None:
    step = initramfs_step(distro, "6.12.1-1-default")
    assert step.manual and step.argv is None
    assert "6.12.1-1-default" in step.text and "your distribution's tool" in step.text


@pytest.mark.parametrize("release", ["-rf", "--force", "6.1 0", "6.1;reboot", "$(id)", "", "a" * 200, "6.1\n0"])
def test_a_hostile_release_never_becomes_an_argument(release: str) -> None:
    step = initramfs_step(Distribution.DEBIAN, release)
    assert step.manual


def test_the_paste_diagnosis_guess_uses_the_same_enum() -> None:
    assert guess_from_release("6.8.0-45-generic") is Distribution.UBUNTU
    assert guess_from_release("6.1.0-27-amd64") is Distribution.DEBIAN
    assert guess_from_release("6.11.4-301.fc41.x86_64") is Distribution.FEDORA
    assert guess_from_release("5.14.0-427.el9.x86_64") is Distribution.RHEL
    assert guess_from_release("6.12.1-arch1-1") is Distribution.ARCH
    assert guess_from_release("6.12.1-1-default") is Distribution.UNKNOWN
    assert guess_from_release(None) is Distribution.UNKNOWN


def test_remedies_still_take_distro_id_strings() -> None:
    # Part B's callers pass Context.distro, a Distribution value, or os-release IDs.
    assert remedies.regenerate_initramfs("ubuntu", "6.8.0-45-generic") == "sudo update-initramfs -u -k 6.8.0-45-generic"
    assert "dnf upgrade" in remedies.newer_kernel("rhel", "9.4", (6, 8))
    assert "linux-modules-extra-6.8.0-45-generic" in remedies.load_module("amdgpu", "ubuntu", "6.8.0-45-generic")
    assert "linux-modules-extra" not in remedies.load_module("amdgpu", "debian", "6.1.0-27-amd64")


def test_package_remedies_come_from_the_rows() -> None:
    assert remedies.install_firmware("debian") == "firmware-amd-graphics: sudo apt install firmware-amd-graphics"
    assert remedies.install_firmware("fedora") == "amd-gpu-firmware: sudo dnf install amd-gpu-firmware"
    assert remedies.install_firmware("arch") == "linux-firmware: sudo pacman -S --needed linux-firmware"
    assert remedies.install_firmware("gentoo") == "your distribution's linux-firmware package"
    assert remedies.install_kernel("ubuntu") == "linux-generic: sudo apt install linux-generic"
