"""A Reader over a root other than "/" never reads past it (issue 35.6): links out are problems.

The "secret" is a file beside the root, outside it, as /etc/shadow is outside a bundle that links
to it. Every way the probe reaches a file is tried: a read, a read at an offset, a module
parameter, a listing, the existence tests, realpath, and a link anywhere on the path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kfdguard.host.beneath import LEAVES, Beneath
from kfdguard.host.paths import HostPath
from kfdguard.host.root import Root
from kfdguard.probe.reader import Reader

SECRET = b"root:$6$saltsalt$NOT-FOR-ANY-REPORT:19000:0:99999:7:::\n"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Root, Path]:
    """A machine root at tmp_path/m and a secret at tmp_path/secret (outside it), with a directory of it."""
    (tmp_path / "secret").write_bytes(SECRET)
    (tmp_path / "secret-dir").mkdir()
    (tmp_path / "secret-dir/x.conf").write_bytes(SECRET)
    machine = tmp_path / "m"
    (machine / "etc/modprobe.d").mkdir(parents=True)
    (machine / "etc/modules").write_text("amdgpu\n")
    return Root(machine), tmp_path


def _problems(reader: Reader) -> list[tuple[str, str]]:
    return [(p.path, p.reason) for p in reader.problems]


@pytest.mark.parametrize(
    "target",
    [
        "ABS",  # an absolute link to the host's file
        "../../../secret",  # a relative one that climbs out
        "../../etc/../../secret",  # climbs out on the way
    ],
)
def test_a_link_out_of_the_root_is_a_problem_and_never_read(tree: tuple[Root, Path], target: str) -> None:
    root, outside = tree
    link = root.etc / "modprobe.d/x.conf"
    link.symlink_to(str(outside / "secret") if target == "ABS" else target)
    reader = Reader(root)
    assert reader.data(link) is None
    assert reader.text(link) is None
    assert reader.read_at(link, 0, 16) is None
    assert reader.is_file(link) is False
    problems = _problems(reader)
    assert problems and all(path == "/etc/modprobe.d/x.conf" for path, _ in problems)
    # Said once, however often the probe asks, and with the link that leads out.
    assert len(problems) == 1
    reason = problems[0][1]
    assert reason.startswith(f"unreadable: {LEAVES} (/etc/modprobe.d/x.conf -> ")
    assert "NOT-FOR-ANY-REPORT" not in reason


def test_a_directory_link_out_of_the_root_is_refused_for_every_name_below_it(tree: tuple[Root, Path]) -> None:
    root, outside = tree
    (root.path / "etc/modprobe.d").rmdir()
    (root.path / "etc/modprobe.d").symlink_to(outside / "secret-dir")
    reader = Reader(root)
    assert reader.listdir(root.etc / "modprobe.d") == []
    assert reader.data(root.etc / "modprobe.d/x.conf") is None
    assert reader.values(root.etc / "modprobe.d", ["x.conf"]) == {}
    assert reader.is_dir(root.etc / "modprobe.d") is False
    assert not reader.realpath(root.etc / "modprobe.d/x.conf").startswith(str(outside / "secret-dir"))
    assert reader.problems and all(LEAVES in p.reason for p in reader.problems)


def test_a_module_parameter_that_links_out_is_refused(tree: tuple[Root, Path]) -> None:
    root, outside = tree
    pdir = root.sys / "module/amdgpu/parameters"
    pdir.mkdir(parents=True)
    (pdir / "noretry").write_text("1\n")
    (pdir / "leak").symlink_to(outside / "secret")
    reader = Reader(root)
    assert reader.values(pdir, ["noretry", "leak"]) == {"noretry": "1"}
    assert [p.path for p in reader.problems] == ["/sys/module/amdgpu/parameters/leak"]


def test_links_that_stay_inside_are_followed(tree: tuple[Root, Path]) -> None:
    root, _ = tree
    # Debian's /etc/modules-load.d/modules.conf -> ../modules; sysfs's class -> device links; an
    # absolute link into the root's own directory (what a test or a copied tree may hold).
    (root.path / "etc/modules-load.d").mkdir()
    (root.path / "etc/modules-load.d/modules.conf").symlink_to("../modules")
    device = root.sys / "devices/pci0000:00/0000:03:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x1002\n")
    (root.sys / "bus/pci/devices").mkdir(parents=True)
    (root.sys / "bus/pci/devices/0000:03:00.0").symlink_to("../../../devices/pci0000:00/0000:03:00.0")
    (root.etc / "absolute.conf").symlink_to(root.path / "etc/modules")
    (root.etc / "loop").symlink_to("loop")
    reader = Reader(root)
    assert reader.text(root.etc / "modules-load.d/modules.conf") == "amdgpu\n"
    assert reader.value(root.sys / "bus/pci/devices/0000:03:00.0/vendor") == "0x1002"
    assert reader.values(root.sys / "bus/pci/devices/0000:03:00.0", ["vendor"]) == {"vendor": "0x1002"}
    assert reader.text(root.etc / "absolute.conf") == "amdgpu\n"
    assert reader.is_symlink(root.etc / "modules-load.d/modules.conf")
    assert reader.is_dir(root.sys / "bus/pci/devices/0000:03:00.0")
    assert reader.listdir(root.sys / "bus/pci/devices") == ["0000:03:00.0"]
    assert reader.realpath(root.sys / "bus/pci/devices/0000:03:00.0") == str(device)
    assert reader.readlink_name(root.sys / "bus/pci/devices/0000:03:00.0") == "0000:03:00.0"
    assert reader.problems == []
    assert reader.text(root.etc / "loop") is None
    assert [p.reason for p in reader.problems] == ["unreadable: Too many levels of symbolic links"]


def test_the_nofollow_read_refuses_a_link_even_inside(tree: tuple[Root, Path]) -> None:
    root, _ = tree
    (root.etc / "link").symlink_to("modules")
    reader = Reader(root)
    assert reader.data(root.etc / "link", nofollow=True) is None
    assert reader.data(root.etc / "link") == b"amdgpu\n"


def test_a_path_outside_the_root_is_not_read_through_it(tree: tuple[Root, Path]) -> None:
    root, outside = tree
    reader = Reader(root)
    assert reader.data(HostPath(outside / "secret")) is None
    assert reader.problems and "not under the machine's root" in reader.problems[0].reason


def test_the_host_root_reads_with_plain_os_calls() -> None:
    # The real machine pays nothing: no walk, no descriptor cache (the boot pass, kfdguard/host/paths.py).
    assert Reader(Root()).beneath is None


def test_directories_are_kept_open_within_a_bound(tmp_path: Path) -> None:
    for n in range(100):
        (tmp_path / f"d{n}").mkdir()
        (tmp_path / f"d{n}/f").write_text(str(n))
    beneath = Beneath(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    for n in range(100):
        fd = beneath.open(HostPath(tmp_path / f"d{n}/f"), os.O_RDONLY)
        assert os.read(fd, 8) == str(n).encode()
        os.close(fd)
    assert len(os.listdir("/proc/self/fd")) - before <= 64
    beneath.close()
    assert len(os.listdir("/proc/self/fd")) == before
