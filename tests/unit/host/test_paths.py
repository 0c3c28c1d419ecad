"""HostPath against pathlib, method by method: the boot pass's paths behave as pathlib's would."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kfdguard.host.paths import HostPath, as_host
from kfdguard.host.root import Root

# Path text as people and kfdguard write it: names, ".", "..", empty segments (doubled slashes),
# leading and trailing slashes.
SEGMENT = st.sampled_from(["", ".", "..", "a", "b.c", ".d", "e.", "f.g.h", "kfd", "é", "x y"])
TEXT = st.builds(
    lambda lead, parts, trail: "/" * lead + "/".join(parts) + ("/" if trail else ""),
    st.integers(0, 3),
    st.lists(SEGMENT, max_size=6),
    st.booleans(),
)


def reference(text: str) -> PurePosixPath:
    """What HostPath means by ``text``: PurePosixPath's path, with "//" at the start as "/" (paths.py)."""
    if text.startswith("//") and not text.startswith("///"):
        text = "/" + text.lstrip("/")
    return PurePosixPath(text)


@given(TEXT)
def test_the_pure_part_is_purepath(text: str) -> None:
    ours, theirs = HostPath(text), reference(text)
    assert str(ours) == str(theirs) == os.fspath(ours)
    assert ours.parts == theirs.parts
    assert (ours.name, ours.suffix, ours.stem) == (theirs.name, theirs.suffix, theirs.stem)
    assert str(ours.parent) == str(theirs.parent)
    assert ours.is_absolute() == theirs.is_absolute()
    assert ours == theirs and hash(ours) == hash(theirs)


@given(TEXT, TEXT)
def test_joining_comparing_and_relative_paths_are_purepath(left: str, right: str) -> None:
    a, b = HostPath(left), HostPath(right)
    pa, pb = reference(left), reference(right)
    assert str(a / right) == str(pa / reference(right))
    assert str(a / b) == str(pa / pb)
    assert str(left / b) == str(reference(left) / pb)  # text on the left: __rtruediv__
    assert (a == b) == (pa == pb)
    assert (a < b, a <= b, a > b, a >= b) == (pa < pb, pa <= pb, pa > pb, pa >= pb)
    assert a.is_relative_to(b) == pa.is_relative_to(pb)
    if pa.is_relative_to(pb):
        assert str(a.relative_to(b)) == str(pa.relative_to(pb))
    else:
        with pytest.raises(ValueError):
            a.relative_to(b)


@given(TEXT, st.sampled_from(["n", "n.x", "..", ".", "", "a/b", ".hidden"]))
def test_with_name_is_purepath(text: str, name: str) -> None:
    ours, theirs = HostPath(text), reference(text)
    try:
        expected = str(theirs.with_name(name))
    except ValueError:
        with pytest.raises(ValueError):
            ours.with_name(name)
    else:
        assert str(ours.with_name(name)) == expected


@given(TEXT, st.sampled_from([".x", ".tar.gz", "", ".", "x", "./y"]))
def test_with_suffix_is_purepath(text: str, suffix: str) -> None:
    ours, theirs = HostPath(text), reference(text)
    try:
        expected = str(theirs.with_suffix(suffix))
    except ValueError:
        with pytest.raises(ValueError):
            ours.with_suffix(suffix)
    else:
        assert str(ours.with_suffix(suffix)) == expected


def test_a_leading_double_slash_is_one_slash() -> None:
    assert str(HostPath("//etc//kfdguard/")) == "/etc/kfdguard"
    assert str(PurePosixPath("//etc")) == "//etc"  # the one difference, on purpose


def test_it_mixes_with_pathlib(tmp_path: Path) -> None:
    host = HostPath(tmp_path) / "x"
    assert Path(host) == tmp_path / "x" and host == tmp_path / "x"
    assert tmp_path / HostPath("x") == tmp_path / "x"
    assert as_host(host) is host and as_host(tmp_path) == HostPath(str(tmp_path))
    assert host != str(host)  # as pathlib: a path never equals a string
    assert {host, tmp_path / "x"} == {host}  # equal paths of either kind hash alike


def test_root_keeps_a_host_path_from_pathlib_or_text(tmp_path: Path) -> None:
    assert type(Root(tmp_path).path) is HostPath
    assert Root(tmp_path) == Root(str(tmp_path)) and hash(Root(tmp_path)) == hash(Root(str(tmp_path)))
    assert Root().is_host and not Root(tmp_path).is_host
    assert Root(tmp_path).join("/etc/../etc/x") == tmp_path / "etc/x"
    assert Root(tmp_path).display(tmp_path / "etc/x") == "/etc/x"
    with pytest.raises(AttributeError):
        Root(tmp_path).path = HostPath("/")  # type: ignore[misc]  # mypy: a read-only property


def _tree(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("text\n")
    (tmp_path / "link").symlink_to("file")
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "loop").symlink_to("loop")


@pytest.mark.parametrize("name", ["dir", "file", "link", "dangling", "loop", "absent", "file/below", "nul\0name"])
def test_the_tests_of_a_file_are_pathlib(tmp_path: Path, name: str) -> None:
    _tree(tmp_path)
    ours, theirs = HostPath(tmp_path) / name, tmp_path / name
    for method in ("exists", "is_file", "is_dir", "is_symlink", "is_char_device"):
        assert getattr(ours, method)() == getattr(theirs, method)(), method


def test_an_error_other_than_absence_is_raised_as_pathlib_raises_it(tmp_path: Path) -> None:
    # ENAMETOOLONG, like EACCES, is not "no such file": pathlib raises it rather than answer False.
    name = "x" * 300
    for path in (tmp_path / name, HostPath(tmp_path) / name):
        for method in ("exists", "is_file", "is_dir", "is_symlink"):
            with pytest.raises(OSError, match="File name too long"):
                getattr(path, method)()


def test_files_are_read_written_listed_and_removed(tmp_path: Path) -> None:
    base = HostPath(tmp_path)
    (base / "a/b/c").mkdir(parents=True)
    (base / "a/b/c").mkdir(parents=True, exist_ok=True)
    with pytest.raises(FileExistsError):
        (base / "a/b/c").mkdir()
    with pytest.raises(FileNotFoundError):
        (base / "x/y").mkdir()
    f = base / "a/f.txt"
    assert f.write_text("héllo\n") == 6 and f.read_text() == "héllo\n"
    assert f.read_bytes() == "héllo\n".encode()
    assert f.write_bytes(b"\x00\x01") == 2 and (tmp_path / "a/f.txt").read_bytes() == b"\x00\x01"
    with f.open("rb") as handle:
        assert handle.read() == b"\x00\x01"
    assert sorted(p.name for p in (base / "a").iterdir()) == ["b", "f.txt"]
    assert all(type(p) is HostPath for p in (base / "a").iterdir())
    (base / "a/t").touch()
    with pytest.raises(FileExistsError):
        (base / "a/t").touch(exist_ok=False)
    (base / "a/t").chmod(0o600)
    assert (base / "a/t").stat().st_mode & 0o777 == 0o600
    (base / "a/l").symlink_to("t")
    assert (base / "a/l").readlink() == HostPath("t") and (base / "a/l").lstat().st_size == 1
    assert (base / "a/l").resolve() == (tmp_path / "a/t").resolve()
    moved = (base / "a/t").rename(base / "a/u")
    assert moved == base / "a/u" and moved.exists() and not (base / "a/t").exists()
    assert (base / "a/u").replace(base / "a/f.txt") == base / "a/f.txt"
    (base / "a/f.txt").unlink()
    (base / "a/f.txt").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (base / "a/f.txt").unlink()
    (base / "a/b/c").rmdir()
    assert not (tmp_path / "a/b/c").exists()
