"""The extension's build (what `make extension` runs): zips, the GNOME 43 rewrite, the contract, translations."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from tests.conftest import tool
from tests.gnome.kit import EXTENSION, REPO, UUID, build, trixie_chroot

SOURCES = ["client.js", "indicator.js"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build(tmp_path_factory.mktemp("extension"))


def test_two_installable_zips(built: dict[str, Path]) -> None:
    expected_versions = {"shell43": ["43", "44"], "shell45": ["45", "46", "47", "48"]}
    for target, directory in built.items():
        archive = directory.parent.parent / f"{UUID}.{target}.zip"
        with zipfile.ZipFile(archive) as z:
            names = set(z.namelist())
            metadata = json.loads(z.read("metadata.json"))
        assert {"metadata.json", "extension.js", "stylesheet.css", *SOURCES} <= names, names
        assert {n for n in names if n.endswith(".mo")}, "compiled translations"
        assert metadata["uuid"] == UUID and metadata["gettext-domain"] == "kfdguard-gnome"
        assert metadata["shell-version"] == expected_versions[target]


def test_gnome43_build_has_no_es_module_syntax(built: dict[str, Path]) -> None:
    for name in [*SOURCES, "extension.js"]:
        text = (built["shell43"] / name).read_text()
        assert not re.search(r"^(import|export) ", text, re.M), name
    # GNOME 45 gets the sources unchanged, with an ES module entry point.
    for name in SOURCES:
        assert (built["shell45"] / name).read_text() == (EXTENSION / "src" / name).read_text()
    assert "export default class" in (built["shell45"] / "extension.js").read_text()


def _gjs(args: list[str], cwd: Path) -> str:
    result = subprocess.run([tool("gjs"), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


SNAPSHOTS = """[
  {"present": false, "error": null},
  {"present": true, "state": "degraded", "ready": false, "summary": "1 of 2 GPUs can compute",
   "kernel": "6.1.0-28-amd64", "kfdVersion": "1.13", "version": "0.1.0", "lastCheck": null,
   "devices": [{"Name": "AMD Radeon RX 6800", "GfxTarget": "gfx1030", "ComputeReady": true, "Reason": "ready",
                "Integrated": false, "VramTotal": 17179869184, "ComputeUnits": 60, "PcieSpeed": 16000, "PcieWidth": 16},
               {"Name": "", "Slot": "0000:0b:00.0", "GfxTarget": "", "ComputeReady": false, "Reason": "no atomics"}],
   "findings": [{"code": "x", "severity": "warning", "message": "w", "remedy": ""},
                {"code": "y", "severity": "error", "message": "e", "remedy": "do it"}]}
]"""


def test_legacy_module_loads_and_agrees_with_the_es_module(built: dict[str, Path], tmp_path: Path) -> None:
    """The GNOME 43 rewrite of client.js loads with the legacy importer and computes the same views."""
    legacy = tmp_path / "legacy.js"
    legacy.write_text(
        f"imports.searchPath.unshift({json.dumps(str(built['shell43']))});\n"
        "const {describe} = imports.client;\n"
        f"print(JSON.stringify({SNAPSHOTS}.map(s => describe(s, x => x))));\n"
    )
    esm = tmp_path / "esm.js"
    esm.write_text(
        f"import {{describe}} from {json.dumps((EXTENSION / 'src/client.js').as_uri())};\n"
        f"print(JSON.stringify({SNAPSHOTS}.map(s => describe(s, x => x))));\n"
    )
    old, new = _gjs([str(legacy)], tmp_path), _gjs(["-m", str(esm)], tmp_path)
    assert old == new
    views = json.loads(new)
    assert [v["label"] for v in views] == ["GPU ?", "GPU degraded"]
    assert views[1]["devices"][1] == {
        "title": "0000:0b:00.0",
        "detail": "unknown target · no atomics",
        "hardware": "",
        "ready": False,
    }
    assert views[1]["devices"][0]["hardware"] == "Discrete · 16.0 GiB VRAM · 60 CUs · PCIe 16.0 GT/s x16"
    assert [f["code"] for f in views[1]["findings"]] == ["y", "x"]


def test_gnome45_build_parses(built: dict[str, Path], tmp_path: Path) -> None:
    """No GNOME 45 on Debian 12: at least gjs's parser reads every module of that build (import lines aside)."""
    script = tmp_path / "parse.js"
    script.write_text(
        "const {GLib} = imports.gi;\n"
        "for (const path of ARGV) {\n"
        "    const text = new TextDecoder().decode(GLib.file_get_contents(path)[1])\n"
        "        .replace(/^import .*;$/gm, '').replace(/^export (default )?/gm, '');\n"
        "    new Function(text);  // parses, does not run\n"
        "    print(`parsed ${path}`);\n"
        "}\n"
    )
    files = sorted(built["shell45"].glob("*.js"))
    assert {f.name for f in files} == {"extension.js", *SOURCES}
    out = _gjs([str(script), *map(str, files)], tmp_path)
    assert out.count("parsed ") == len(files)


def _members(iface: ET.Element) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in iface.iter("property"):
        out[f"property {p.get('name')}"] = f"{p.get('type')} {p.get('access')}"
    for m in iface.iter("method"):
        args = [f"{a.get('direction', 'in')}:{a.get('type')}" for a in m.iter("arg")]
        out[f"method {m.get('name')}"] = " ".join(args)
    for s in iface.iter("signal"):
        out[f"signal {s.get('name')}"] = " ".join(str(a.get("type")) for a in s.iter("arg"))
    return out


def test_client_interface_agrees_with_the_contract() -> None:
    source = (EXTENSION / "src/client.js").read_text()
    match = re.search(r"INTERFACE_XML = `(.*?)`", source, re.S)
    assert match
    ours = _members(ET.fromstring(match.group(1)).find("interface"))  # type: ignore[arg-type]
    contract_root = ET.parse(REPO / "dbus/org.kfdguard.Guardian1.xml").getroot()
    contract = _members(next(i for i in contract_root.iter("interface") if i.get("name") == "org.kfdguard.Guardian1"))
    assert ours, "no members parsed"
    for member, signature in ours.items():
        assert contract.get(member) == signature, (member, signature, contract.get(member))


def test_translation_template_is_current(tmp_path: Path) -> None:
    """po/kfdguard-gnome.pot lists exactly the strings of the sources (regenerate: gnome-extension/po/update.sh)."""
    pot = tmp_path / "fresh.pot"
    subprocess.run(
        [tool("xgettext"), "--from-code=UTF-8", "--language=JavaScript", "--keyword=_", "-o", str(pot)]
        + [f"src/{name}" for name in SOURCES],
        cwd=EXTENSION,
        check=True,
        timeout=60,
    )

    def msgids(path: Path) -> set[str]:
        # msgid "..." with continuation lines, up to msgstr; the header's empty msgid is left out.
        blocks = re.findall(r'^msgid ((?:".*"\n)+)msgstr', path.read_text(), re.M)
        ids = {"".join(re.findall(r'"(.*)"', block)) for block in blocks}
        return ids - {""}

    assert msgids(EXTENSION / "po/kfdguard-gnome.pot") == msgids(pot)
    for po in (EXTENSION / "po").glob("*.po"):
        assert msgids(po) == msgids(pot), f"{po.name} is out of date: run gnome-extension/po/update.sh"


def _icon_names() -> set[str]:
    names: set[str] = set()
    for source in sorted((EXTENSION / "src").glob("*.js")):
        names |= set(re.findall(r"'([a-z0-9-]+-symbolic)'", source.read_text()))
    return names


@pytest.mark.parametrize("system", ["debian12", "debian13"])
def test_every_icon_the_extension_names_is_in_the_icon_theme(system: str) -> None:
    """An icon name the theme lacks draws as a broken image: Adwaita 48 (Debian 13) dropped emblem-ok-symbolic."""
    root = Path("/")
    if system == "debian13":
        chroot = trixie_chroot()
        if chroot is None:
            pytest.skip("Debian 13's icon theme is in the chroot scripts/trixie-chroot builds")
        root = chroot
    themes = [root / "usr/share/icons/Adwaita", root / "usr/share/icons/hicolor"]
    if not themes[0].is_dir():
        pytest.skip(f"{themes[0]} is not installed (adwaita-icon-theme)")
    present = {p.name.split(".")[0] for theme in themes for p in theme.rglob("*-symbolic*")}
    names = _icon_names()
    assert {"object-select-symbolic", "dialog-error-symbolic"} <= names, names  # the scan finds them
    assert names <= present, sorted(names - present)
