"""RealSystem under a root that is not / (an image, a bundle): device nodes are looked at beneath the root.

A planted ``dev/kfd -> /dev/null`` made ``kfdguard check --root DIR`` stat (and open, for the ioctl) the host's
node (issue 35, found while closing item 6). Now a link out of the root is refused and said.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kfdguard.host.root import Root
from kfdguard.host.system import KfdIoctlError, RealSystem
from kfdguard.probe.devices import probe_node
from kfdguard.probe.reader import Reader


def _machine(tmp_path: Path, target: str) -> RealSystem:
    (tmp_path / "dev").mkdir()
    (tmp_path / "image-dev").mkdir()
    (tmp_path / "image-dev/kfd").write_bytes(b"")
    os.symlink(target, tmp_path / "dev/kfd")
    return RealSystem(Root(str(tmp_path)))


def test_a_node_linked_out_of_the_root_is_refused_not_stated_on_the_host(tmp_path: Path) -> None:
    system = _machine(tmp_path, "/dev/null")
    with pytest.raises(OSError) as raised:
        system.stat_node(system.root.kfd)
    assert "leaves the machine's root" in str(raised.value)
    with pytest.raises(KfdIoctlError, match="leaves the machine's root"):
        system.kfd_version(system.root.kfd)
    node = probe_node(Reader(system.root), system, system.root.kfd)
    assert node.stat is None and node.error is not None and "leaves" in node.error


def test_a_node_linked_inside_the_root_is_read_there(tmp_path: Path) -> None:
    system = _machine(tmp_path, "../image-dev/kfd")
    stat = system.stat_node(system.root.kfd)
    assert stat is not None and stat.kind == "file"


def test_the_host_root_looks_at_the_path_itself() -> None:
    system = RealSystem(Root())
    null = system.root.dev / "null"
    stat = system.stat_node(null)
    assert stat is not None and stat.kind == "char" and system._beneath is None
