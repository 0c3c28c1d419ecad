"""Reader.values: a directory's attributes read relative to it, exactly as value() reads each one."""

from __future__ import annotations

import os
from pathlib import Path

from kfdguard.host.paths import HostPath
from kfdguard.host.root import Root
from kfdguard.probe.reader import Reader


def _parameters(tmp_path: Path) -> Path:
    pdir = tmp_path / "sys/module/amdgpu/parameters"
    pdir.mkdir(parents=True)
    (pdir / "noretry").write_text("-1\n")
    (pdir / "ppfeaturemask").write_text("0xfff7bfff\n")
    (pdir / "empty").write_text("")
    (pdir / "binary").write_bytes(b"\xff\xfe\n")
    (pdir / "nested").mkdir()  # not a regular file: said so
    os.mkfifo(pdir / "fifo")  # must neither hang nor be read
    (pdir / "dangling").symlink_to(pdir / "gone")  # vanished between listdir and open: left out
    return pdir


def test_values_read_what_value_reads_and_say_the_same_about_the_rest(tmp_path: Path) -> None:
    pdir = _parameters(tmp_path)
    names = [*sorted(os.listdir(pdir)), "missing"]
    fast, slow = Reader(Root(tmp_path)), Reader(Root(tmp_path))
    found = fast.values(HostPath(pdir), names)
    assert found == slow.values_by_path(HostPath(pdir), names)
    assert found == {"binary": "\ufffd\ufffd", "empty": "", "noretry": "-1", "ppfeaturemask": "0xfff7bfff"}
    assert fast.problems == slow.problems
    assert sorted(p.path for p in fast.problems) == [
        "/sys/module/amdgpu/parameters/fifo",
        "/sys/module/amdgpu/parameters/nested",
    ]
    assert all(p.reason == "unreadable: not a regular file" for p in fast.problems)


def test_values_of_a_directory_that_cannot_be_opened_are_read_one_by_one(tmp_path: Path) -> None:
    reader = Reader(Root(tmp_path))
    assert reader.values(HostPath(tmp_path / "sys/module/absent/parameters"), ["a", "b"]) == {}
    assert reader.problems == []  # as value() on missing files: nothing to say
