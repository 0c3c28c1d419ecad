"""scripts/aptsources.py: the archive comes from the machine's apt configuration, and bad files say where they are bad."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.paths import TOP

sys.path.insert(0, str(TOP / "scripts"))
import aptsources  # a script beside the package, not part of it

# The layout of a Debian 12 installation's own file (deb822), with a disabled stanza.
DEB822 = """\
Types: deb deb-src
# a comment inside a stanza
URIs: http://mirror.invalid/debian/
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.invalid/debian-security
Suites: bookworm-security
Components: main

Enabled: no
Types: deb
URIs: http://disabled.invalid/debian
Suites: bookworm
Components: main
"""


def _write(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp


def test_deb822_mirror_and_chroot_lines(tmp_path: Path) -> None:
    apt = _write(tmp_path, {"sources.list.d/debian.sources": DEB822})
    sources = aptsources.read_sources(apt)
    assert [s.origin.rsplit(":", 1)[1] for s in sources] == ["1", "8"]
    assert aptsources.mirror_for("bookworm", sources) == "http://mirror.invalid/debian"
    assert aptsources.chroot_lines("bookworm", sources) == [
        "deb http://mirror.invalid/debian bookworm main",
        "deb http://mirror.invalid/debian bookworm-updates main",
        "deb http://security.invalid/debian-security bookworm-security main",
    ]


def test_one_line_files_with_options_come_first(tmp_path: Path) -> None:
    apt = _write(
        tmp_path,
        {
            "sources.list": "# old style\ndeb [arch=amd64 signed-by=/k.gpg] http://one.invalid/debian bookworm main\n"
            "deb-src http://src.invalid/debian bookworm main\n",
            "sources.list.d/debian.sources": DEB822,
            "sources.list.d/other.list": "deb http://other.invalid/debian trixie main  # comment\n",
        },
    )
    sources = aptsources.read_sources(apt)
    assert aptsources.mirror_for("bookworm", sources) == "http://one.invalid/debian"
    assert aptsources.mirror_for("trixie", sources) == "http://other.invalid/debian"
    assert "deb http://src.invalid/debian bookworm main" not in aptsources.chroot_lines("bookworm", sources)


def test_no_entry_for_the_suite_is_a_clear_error(tmp_path: Path) -> None:
    apt = _write(tmp_path, {"sources.list": "deb http://one.invalid/debian trixie main\n"})
    with pytest.raises(aptsources.AptSourcesError, match="no 'deb' entry for suite 'bookworm'"):
        aptsources.mirror_for("bookworm", aptsources.read_sources(apt))
    with pytest.raises(aptsources.AptSourcesError, match="no 'deb' entry for suite 'bookworm'"):
        aptsources.chroot_lines("bookworm", aptsources.read_sources(apt))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("sources.list", "deb [arch=amd64 http://x.invalid bookworm main\n", r"sources.list:1: '\[' .* never closed"),
        ("sources.list", "\n\ndeb http://x.invalid\n", r"sources.list:3: an entry needs a URI and a suite"),
        ("sources.list", "rpm http://x.invalid bookworm\n", r"sources.list:1: expected 'deb' or 'deb-src'"),
        ("sources.list.d/a.sources", "Types: deb\nURIs http://x.invalid\n", r"a.sources:2: expected 'Field: value'"),
        ("sources.list.d/a.sources", " continued\n", r"a.sources:1: a continuation line"),
        ("sources.list.d/a.sources", "Types: deb\nSuites: bookworm\n", r"a.sources:1: the stanza has no Uris:"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    apt = _write(tmp_path, {name: text})
    with pytest.raises(aptsources.AptSourcesError, match=message):
        aptsources.read_sources(apt)


def test_unreadable_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d/bad.list").write_bytes(b"deb http://\xff.invalid bookworm main\n")
    with pytest.raises(aptsources.AptSourcesError, match=r"bad\.list: unreadable"):
        aptsources.read_sources(tmp_path)


def test_this_machine_names_an_archive_when_apt_has_one() -> None:
    try:
        sources = aptsources.read_sources()
    except aptsources.AptSourcesError as exc:
        pytest.fail(f"this machine's apt configuration does not parse: {exc}")
    if not any("deb" in s.types and "bookworm" in s.suites for s in sources):
        pytest.skip("this machine's apt has no bookworm entry (not a Debian 12 host)")
    assert aptsources.mirror_for("bookworm", sources).startswith(("http://", "https://", "file:", "mirror+"))
