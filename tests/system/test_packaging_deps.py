"""Every run-time dependency of pyproject.toml is declared everywhere the code runs without pip.

The package's code imports its libraries; pip reads pyproject.toml, but the
.deb and the machines the tests build do not. Each dependency must be, as its
Debian package:

- a ``Depends`` of the binary package (a machine that installs the .deb);
- in the VM lane's guest image (``vm/vmlane.py`` INCLUDE: the guest installs the
  .deb with ``dpkg -i``, which refuses a package whose Depends are missing).

Build-Depends (what the build's own tests import) name each package once, and
``make deps`` (scripts/debian-packages.txt) installs every one of them, as
``make deb-host`` needs.

The first .deb with pyelftools and pefile listed them twice under Build-Depends
and not at all under Depends: a machine that installed it had a software scan
that could not import its ELF reader.
"""

from __future__ import annotations

import re
import sys
import tomllib

from tests.paths import TOP

sys.path.insert(0, str(TOP / "vm"))
import vmlane  # a script beside the package (stdlib only)

# pyproject names whose Debian package is not python3-<name>.
DEBIAN_NAME = {"pyyaml": "python3-yaml", "systemd-python": "python3-systemd"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _runtime_packages() -> dict[str, str]:
    """pyproject dependency -> its Debian package."""
    project = tomllib.loads((TOP / "pyproject.toml").read_text())["project"]
    out = {}
    for requirement in project["dependencies"]:
        m = _NAME.match(requirement)
        assert m, requirement
        name = m.group(0).lower()
        out[name] = DEBIAN_NAME.get(name, f"python3-{name}")
    return out


def _control_fields() -> list[dict[str, str]]:
    """debian/control's paragraphs (deb822): comment lines dropped, continuation lines joined."""
    paragraphs: list[dict[str, str]] = []
    current: dict[str, str] = {}
    field = ""
    for line in (TOP / "debian" / "control").read_text().splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, field = {}, ""
        elif line[0].isspace():
            current[field] += " " + line.strip()
        else:
            field, _, value = line.partition(":")
            current[field] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


def _relations(value: str) -> list[list[str]]:
    """``a (>= 1) | b, c`` -> [["a", "b"], ["c"]]: each relation's alternatives, names only."""
    out = []
    for relation in value.split(","):
        names = [alt.strip().split(" ")[0].split("(")[0] for alt in relation.split("|")]
        if names and names[0]:
            out.append(names)
    return out


def test_control_parses_as_two_paragraphs() -> None:
    source, binary = _control_fields()
    assert source["Source"] == "kfdguard" and binary["Package"] == "kfdguard"


def test_every_runtime_dependency_is_a_depends_of_the_binary_package() -> None:
    _, binary = _control_fields()
    first_alternatives = {names[0] for names in _relations(binary["Depends"])}
    missing = {dep: pkg for dep, pkg in _runtime_packages().items() if pkg not in first_alternatives}
    assert not missing, f"pyproject dependencies not in debian/control Depends: {missing}"


def test_build_depends_names_each_package_once() -> None:
    source, _ = _control_fields()
    names = [alt for names in _relations(source["Build-Depends"]) for alt in names]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    assert not duplicated, f"named twice in Build-Depends: {duplicated}"


def test_make_deps_installs_every_build_dependency() -> None:
    """make deb-host builds on the host after dpkg-checkbuilddeps: make deps must have installed them all."""
    source, _ = _control_fields()
    listed = {
        line.strip()
        for line in (TOP / "scripts" / "debian-packages.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    needed = {names[0] for names in _relations(source["Build-Depends"]) if not names[0].startswith("debhelper-compat")}
    missing = sorted(needed - listed)
    assert not missing, f"Build-Depends not in scripts/debian-packages.txt: {missing}"


def test_the_vm_guest_image_holds_every_depends() -> None:
    """dpkg -i in the guest needs each Depends installed already: the image has no network to fetch it."""
    _, binary = _control_fields()
    needed = {names[0] for names in _relations(binary["Depends"]) if not names[0].startswith("${")}
    missing = sorted(needed - set(vmlane.INCLUDE))
    assert not missing, f"Depends missing from vm/vmlane.py INCLUDE: {missing}"
