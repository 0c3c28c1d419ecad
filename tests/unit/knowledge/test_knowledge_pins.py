"""The generator reads pinned inputs (tools/knowledge/pins.py), on a fake archive index.

Each test writes Packages indices into a throwaway cache (KFDGUARD_KNOWLEDGE_CACHE)
and resolves offline: nothing is fetched, and the mirror URIs are placeholders.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import lzma
from pathlib import Path

import pytest

from tests.paths import TOP
from tools.knowledge.archive import ArchiveError
from tools.knowledge.pins import PIN_FILE, NotServed, Pin, PinError, Resolver, dump, load
from tools.knowledge.sources import FIRMWARE_SUITES, IDS_PACKAGES, KERNELS

BASES = ("file:///nonexistent/debian", "file:///nonexistent/debian-security")
SUITES = ("bookworm", "bookworm-security")


def _sha(name: str, version: str) -> str:
    return hashlib.sha256(f"{name} {version}".encode()).hexdigest()


def _stanza(name: str, version: str, *, size: int = 1 << 22, sha: str | None = None) -> str:
    arch = "all" if name.startswith(("linux-source", "libdrm", "pci.ids")) else "amd64"
    return (
        f"Package: {name}\nSource: linux\nVersion: {version}\nArchitecture: {arch}\n"
        f"Filename: pool/main/l/linux/{name}_{version}_{arch}.deb\nSize: {size}\n"
        f"SHA256: {sha or _sha(name, version)}\n"
    )


def _index(cache: Path, suite: str, stanzas: list[str], component: str = "main", arch: str = "amd64") -> None:
    dest = cache / "indices" / f"{suite}_{component}_{arch}.xz"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(lzma.compress("\n".join(stanzas).encode()))


def _kernel(version: str, abi: str) -> list[str]:
    return [_stanza("linux-source-6.1", version), _stanza(f"linux-image-6.1.0-{abi}-amd64-unsigned", version),
            _stanza(f"linux-image-6.1.0-{abi}-amd64", version)]  # fmt: skip


def _pin(input_name: str, name: str, version: str, suite: str) -> Pin:
    arch = "all" if name.startswith(("linux-source", "libdrm")) else "amd64"
    return Pin(input_name, name, version, suite, _sha(name, version), f"pool/main/l/linux/{name}_{version}_{arch}.deb")


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """bookworm has 6.1.176-1, bookworm-security the newer 6.1.192-3."""
    monkeypatch.setenv("KFDGUARD_KNOWLEDGE_CACHE", str(tmp_path))
    _index(tmp_path, "bookworm", _kernel("6.1.170-3", "48") + _kernel("6.1.176-1", "50"))
    _index(tmp_path, "bookworm-security", _kernel("6.1.190-1", "51") + _kernel("6.1.192-3", "52"))
    return tmp_path


PINNED_176 = {
    "kernel:6.1:source": _pin("kernel:6.1:source", "linux-source-6.1", "6.1.176-1", "bookworm"),
    "kernel:6.1:module": _pin("kernel:6.1:module", "linux-image-6.1.0-50-amd64-unsigned", "6.1.176-1", "bookworm"),
}


def test_a_pinned_version_is_read_although_a_newer_one_exists(archive: Path) -> None:
    resolver = Resolver(dict(PINNED_176), BASES, offline=True)
    choice = resolver.kernel("6.1", SUITES)
    assert (choice.source.version, choice.image.name) == ("6.1.176-1", "linux-image-6.1.0-50-amd64-unsigned")
    assert choice.source.sha256 == PINNED_176["kernel:6.1:source"].sha256
    assert resolver.newer == [
        "kernel:6.1:source: newer available: linux-source-6.1 6.1.192-3 (bookworm-security),"
        " pinned linux-source-6.1 6.1.176-1 (bookworm)"
    ]


def test_updating_the_pins_takes_the_security_suite_when_it_is_newer(archive: Path) -> None:
    resolver = Resolver(None, BASES, offline=True)
    choice = resolver.kernel("6.1", SUITES)
    assert (choice.suite, choice.source.version) == ("bookworm-security", "6.1.192-3")
    assert choice.image.name == "linux-image-6.1.0-52-amd64-unsigned"
    assert choice.source.base == BASES[1]  # read from the security archive, not the main one
    taken = resolver.taken["kernel:6.1:source"]
    assert (taken.version, taken.suite, taken.sha256) == ("6.1.192-3", "bookworm-security", choice.source.sha256)
    (archive / "pins.tsv").write_text(dump(resolver.taken), encoding="utf-8")
    assert load(archive / "pins.tsv") == resolver.taken


def test_the_main_suite_wins_when_a_point_release_is_newer_than_security(archive: Path) -> None:
    _index(archive, "bookworm", _kernel("6.1.176-1", "50") + _kernel("6.1.193-1", "53"))
    choice = Resolver(None, BASES, offline=True).kernel("6.1", SUITES)
    assert (choice.suite, choice.source.version) == ("bookworm", "6.1.193-1")


def test_a_missing_pin_is_an_error_naming_the_input(archive: Path) -> None:
    pins = {"kernel:6.1:source": PINNED_176["kernel:6.1:source"]}
    with pytest.raises(PinError, match=r"kernel:6\.1:module: no pin"):
        Resolver(pins, BASES, offline=True).kernel("6.1", SUITES)


def test_a_pin_whose_sha256_differs_from_the_index_is_refused(archive: Path) -> None:
    pins = dict(PINNED_176)
    pins["kernel:6.1:source"] = dataclasses.replace(PINNED_176["kernel:6.1:source"], sha256="0" * 64)
    with pytest.raises(PinError, match=r"kernel:6\.1:source: linux-source-6\.1 6\.1\.176-1 .* SHA256"):
        Resolver(pins, BASES, offline=True).kernel("6.1", SUITES)


def test_a_pin_gone_from_the_index_and_the_cache_says_so(archive: Path) -> None:
    _index(archive, "bookworm", _kernel("6.1.180-1", "51"))  # the point release replaced 6.1.176-1
    with pytest.raises(PinError, match=r"6\.1\.176-1 is no longer in bookworm's index \(6\.1\.180-1\)"):
        Resolver(dict(PINNED_176), BASES, offline=True).kernel("6.1", SUITES)
    # The same pin with its .deb already cached is still read (download() checks its SHA256).
    (archive / "debs").mkdir()
    (archive / "debs" / "linux-source-6.1_6.1.176-1_all.deb").write_bytes(b"")
    (archive / "debs" / "linux-image-6.1.0-50-amd64-unsigned_6.1.176-1_amd64.deb").write_bytes(b"")
    assert Resolver(dict(PINNED_176), BASES, offline=True).kernel("6.1", SUITES).source.version == "6.1.176-1"


def test_a_sid_pin_reports_a_newer_upload_without_taking_it(archive: Path) -> None:
    _index(archive, "sid", [_stanza("libdrm-common", "2.4.134-3"), _stanza("libdrm-common", "2.4.135-1")], arch="all")
    pin = _pin("ids:libdrm-common:sid", "libdrm-common", "2.4.134-3", "sid")
    resolver = Resolver({pin.input: pin}, BASES, offline=True)
    assert resolver.package(pin.input, "libdrm-common", ("sid",), "main", "all").version == "2.4.134-3"
    assert resolver.newer == [
        "ids:libdrm-common:sid: newer available: libdrm-common 2.4.135-1 (sid), pinned libdrm-common 2.4.134-3 (sid)"
    ]
    assert resolver.unused() == []


def test_a_malformed_pin_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pins.tsv"
    path.write_text("# header\nkernel:6.1:source\tlinux-source-6.1\t6.1.176-1\n", encoding="utf-8")
    with pytest.raises(PinError, match=r"pins\.tsv:2: expected 6 tab-separated fields"):
        load(path)


def test_the_committed_pins_are_the_inputs_the_committed_data_was_read_from() -> None:
    pins = load(PIN_FILE)
    inputs = {f"kernel:{label}:{part}" for label, _ in KERNELS for part in ("source", "module")}
    inputs |= {f"ids:{name}:{suite}" for name, suite in IDS_PACKAGES}
    inputs |= {f"firmware:{suite}" for suite, _ in FIRMWARE_SUITES}
    assert set(pins) == inputs
    data = TOP / "kfdguard/knowledge/data"
    read: list[dict[str, str]] = []
    for path in sorted(data.glob("kernel-*.json.gz")):
        provenance = json.loads(gzip.decompress(path.read_bytes()))["provenance"]
        read += [provenance["source"], provenance["module"]]
    rest = json.loads(gzip.decompress((data / "ids-firmware.json.gz").read_bytes()))
    read += [v["provenance"] for part in ("ids", "firmware") for v in rest[part].values()]
    pinned = {(p.package, p.version, p.suite, p.sha256) for p in pins.values()}
    assert {(r["package"], r["version"], r["suite"], r["sha256"]) for r in read} == pinned


def test_a_series_the_archive_did_not_serve_is_pinned_absent_and_skipped(archive: Path) -> None:
    resolver = Resolver(None, BASES, offline=True)
    with pytest.raises(ArchiveError, match=r"carries no linux-source for 6\.12"):
        resolver.kernel("6.12", SUITES)
    assert resolver.taken["kernel:6.12:source"].absent
    with pytest.raises(NotServed):
        Resolver(dict(resolver.taken), BASES, offline=True).kernel("6.12", SUITES)
