"""Debian 13's real ROCm packages, unpacked into a simulated machine's root: the probe lists exactly their targets.

tools/testdata/fetch-rocm-debs fetches the .debs into /var/cache/kfdguard-testdata
(KFDGUARD_TESTDATA); the test skips, saying why, when the archive cannot be
reached. The expected targets come from elsewhere than the code under test:
the Tensile file names as ``dpkg-deb -c`` lists them, parsed by their own
pattern, and the bundle entry ids found by a plain text search of the
.hip_fatbin bytes located by ``readelf``. tests/data/userspace/trixie-rocm.json
keeps what was seen, with the package versions (KFDGUARD_WRITE_INDEX=1 rewrites it).
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import re
import subprocess
from pathlib import Path

import pytest

from kfdguard.cli import main
from kfdguard.host.root import Root
from kfdguard.simulate import bundled
from kfdguard.userspace.probe import probe_software
from kfdguard.userspace.scan import scan_path
from tests.conftest import tool
from tests.paths import TOP

CHECKOUT = TOP
FETCH = CHECKOUT / "tools/testdata/fetch-rocm-debs"
INDEX = CHECKOUT / "tests/data/userspace/trixie-rocm.json"
CACHE = Path(os.environ.get("KFDGUARD_TESTDATA", "/var/cache/kfdguard-testdata"))
MULTIARCH = "usr/lib/x86_64-linux-gnu"

TENSILE = re.compile(r"^TensileLibrary_(?:lazy_)?(gfx[0-9a-z]+)\.(?:co|dat|hsaco)$")
KERNELS = re.compile(r"^Kernels\.so-\d+-(gfx[0-9a-z]+)(?:-(xnack)([+-]))?\.hsaco$")
PREFIX = b"hipv4-amdgcn-amd-amdhsa--"
ENTRY = re.compile(rb"hipv4-amdgcn-amd-amdhsa--(gfx[0-9a-z]+(?::(?:xnack|sramecc)[+-])*)")


@pytest.fixture(scope="module")
def debs() -> list[Path]:
    try:
        run = subprocess.run([str(FETCH), str(CACHE)], check=False, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip("the Debian archive did not answer within 15 minutes (tools/testdata/fetch-rocm-debs)")
    if run.returncode == 69:
        pytest.skip(f"the Debian archive cannot be reached: {run.stderr.strip()[-300:]}")
    assert run.returncode == 0, run.stderr
    return [Path(line) for line in run.stdout.split()]


@pytest.fixture(scope="module")
def machine(debs: list[Path]) -> Path:
    """A machine root with the packages unpacked, cached beside the .debs (keyed by their names)."""
    key = "-".join(sorted(d.stem for d in debs))
    root = CACHE / "roots" / "trixie-rocm"
    stamp = root / ".kfdguard-debs"
    if not (stamp.is_file() and stamp.read_text() == key):
        subprocess.run(["rm", "-rf", str(root)], check=True)
        root.mkdir(parents=True)
        for deb in debs:
            subprocess.run([tool("dpkg-deb"), "-x", str(deb), str(root)], check=True, timeout=600)
        stamp.write_text(key)
    return root


def _version(deb: Path) -> str:
    return subprocess.run([tool("dpkg-deb"), "-f", str(deb), "Version"], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _listed_targets(deb: Path) -> dict[str, set[str]]:
    """Per library directory, the targets the package's Tensile file names are for (dpkg-deb -c)."""
    # Listing a 166 MB .deb decompresses all of it (~15 s): the listing is cached beside it.
    cached = CACHE / "listings" / f"{deb.name}.txt"
    if not cached.is_file():
        listing = subprocess.run([tool("dpkg-deb"), "-c", str(deb)], capture_output=True, text=True, check=True).stdout
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(listing)
    listing = cached.read_text()
    out: dict[str, set[str]] = {}
    for line in listing.splitlines():
        path = line.split()[-1].lstrip(".")
        directory, _, name = path.rpartition("/")
        if m := TENSILE.match(name):
            out.setdefault(directory, set()).add(m.group(1))
        elif m := KERNELS.match(name):
            out.setdefault(directory, set()).add(m.group(1) + (f":{m.group(2)}{m.group(3)}" if m.group(2) else ""))
    return out


def _fatbin_ids(lib: Path) -> set[str]:
    """Entry-id targets in the .hip_fatbin bytes, located by readelf, found by a text search."""
    sections = subprocess.run([tool("readelf"), "-SW", str(lib)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\.hip_fatbin\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    assert m, sections
    offset, size = int(m.group(1), 16), int(m.group(2), 16)
    with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        # mmap.find is a C memory search; a regular expression over 437 MB takes half a minute.
        found = set()
        pos = mm.find(PREFIX, offset, offset + size)
        while pos >= 0:
            entry = ENTRY.match(mm[pos : pos + 128])
            if entry:
                found.add(entry.group(1).decode())
            pos = mm.find(PREFIX, pos + 1, offset + size)
        return found


@pytest.mark.slow
def test_probe_lists_exactly_the_targets_of_debians_rocblas(debs: list[Path], machine: Path) -> None:
    rocblas = next(d for d in debs if d.name.startswith("librocblas"))
    listed = _listed_targets(rocblas)
    assert listed, "no Tensile files in the package: the package layout changed"
    library = next(iter(listed))
    lib_file = next(
        p for p in (machine / MULTIARCH).iterdir() if p.name.startswith("librocblas.so.") and not p.is_symlink()
    )
    from_bytes = _fatbin_ids(lib_file)

    facts = probe_software(Root(machine), os_name="Debian")
    assert facts.problems == ()
    (stack,) = [s for s in facts.stacks if s.kind == "distribution"]
    assert stack.path == f"/{MULTIARCH}"
    assert stack.runtime is not None and stack.runtime.startswith("libamdhip64.so.5")
    by_path = {c.path: c for c in stack.components}
    assert set(by_path[library].targets) == listed[library]
    assert set(by_path[f"/{MULTIARCH}/{lib_file.name}"].targets) == from_bytes
    assert by_path[f"/{MULTIARCH}/{lib_file.name}"].error is None

    seen = {
        "packages": {d.name.split("_")[0]: _version(d) for d in sorted(debs)},
        "components": {c.path: list(c.targets) for c in stack.components},
    }
    if os.environ.get("KFDGUARD_WRITE_INDEX"):
        INDEX.write_text(json.dumps(seen, indent=1, sort_keys=True) + "\n")
    index = json.loads(INDEX.read_text())
    if index["packages"] == seen["packages"]:
        assert index["components"] == seen["components"]
    else:
        pytest.fail(f"the archive now has {seen['packages']}, the index {index['packages']}: "
                    "KFDGUARD_WRITE_INDEX=1 rewrites it")  # fmt: skip


@pytest.mark.slow
def test_targets_of_the_other_packages(machine: Path) -> None:
    # The HIP runtime and ROCr carry no device code of their own: no bundles, no targets, no error.
    for name in ("libamdhip64.so.5", "libhsa-runtime64.so.1"):
        scan = scan_path(str(machine / MULTIARCH / name))
        assert scan.kind == "file" and scan.targets == ()
        assert "no .hip_fatbin" in (scan.files[0].error or "")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "gfx", "covered"), [("rx7900xtx-ubuntu2404", "gfx1100", True),
                                                      ("780m-ubuntu2204-ga", "gfx1103", False)])  # fmt: skip
def test_check_json_on_a_simulated_machine_with_debians_rocblas(
    machine: Path, name: str, gfx: str, covered: bool
) -> None:
    # The machine is rendered beside the unpacked packages so that cp -l can hard-link 1.8 GB instead of copying.
    work = CACHE / "machines" / f"{name}-{os.getpid()}"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.parent.mkdir(parents=True, exist_ok=True)
    try:
        root = bundled.render_bundled(name, work).path
        subprocess.run(["cp", "-al", f"{machine}/usr/.", str(root / "usr")], check=True, timeout=120)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            main(["check", "--root", str(root), "--json"])
        doc = json.loads(buffer.getvalue())
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=True)
    (stack,) = doc["software"]["stacks"]
    index = json.loads(INDEX.read_text())
    assert {c["path"]: c["targets"] for c in stack["components"]} == index["components"]
    (gpu,) = stack["gpus"]
    assert gpu["gfx"] == gfx and (gpu["status"] == "runs") is covered
    codes = [f["code"] for f in doc["findings"]]
    assert ("userspace-target-unsupported" in codes) is not covered
    assert ("userspace-targets-covered" in codes) is covered
