"""Debian archive access for the knowledge generator: indices, packages, extraction.

The mirror is read from the host's apt configuration (deb822 files in
/etc/apt/sources.list.d/), never written down here: whoever runs the generator
uses the mirror their machine already trusts. Suites the host does not list
(bullseye, trixie, sid...) are read from the same mirror over plain HTTP, so
the host's apt state is never touched. Everything downloaded lands in a cache
outside the tree (KFDGUARD_KNOWLEDGE_CACHE, default
/var/cache/kfdguard-testdata/knowledge) and is checked against the SHA256 of
the index it came from.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CACHE = Path("/var/cache/kfdguard-testdata/knowledge")
SOURCES_DIR = Path("/etc/apt/sources.list.d")
TIMEOUT = 120
# Of display/, only amdgpu_dm/ (about 1-2 MB: its DMCU/DMCUB requests and MODULE_FIRMWARE lines, in
# amdgpu_dm.c, and from 7.3 also amdgpu_dm_dmub.c and the macros of amdgpu_dm_dmub.h), not its KUnit
# tests/; the rest of display/ (DC, ~40 MB) requests no firmware.
DM_DIR = "drivers/gpu/drm/amd/display/amdgpu_dm"
# Indices are cached like packages; --refresh fetches them again once per run (to follow the archive).
REFRESH = False
_refreshed: set[Path] = set()


class ArchiveError(Exception):
    """The archive (or the cache) cannot give what was asked for."""


def cache_dir() -> Path:
    return Path(os.environ.get("KFDGUARD_KNOWLEDGE_CACHE", str(DEFAULT_CACHE)))


def mirrors(sources_dir: Path = SOURCES_DIR) -> tuple[str, str | None]:
    """(main archive URI, security archive URI or None) from the host's deb822 sources."""
    main: str | None = None
    security: str | None = None
    for path in sorted(sources_dir.glob("*.sources")):
        for stanza in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            for uri in fields.get("uris", "").split():
                suites = fields.get("suites", "").split()
                if any(s.endswith("-security") for s in suites):
                    security = security or uri.rstrip("/")
                elif uri.startswith(("http://", "https://")):
                    main = main or uri.rstrip("/")
    if main is None:
        raise ArchiveError(f"no Debian mirror in {sources_dir}/*.sources (Types: deb, URIs: http...)")
    return main, security


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    source: str
    filename: str
    size: int
    sha256: str
    suite: str
    base: str  # archive URI the Filename is relative to

    def provenance(self) -> dict[str, str]:
        return {"package": self.name, "version": self.version, "suite": self.suite,
                "file": self.filename.rsplit("/", 1)[-1], "sha256": self.sha256}  # fmt: skip


def _get(url: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response, part.open("wb") as out:  # noqa: S310 - the host's own mirror
            shutil.copyfileobj(response, out, 1 << 20)
    except (urllib.error.URLError, OSError) as exc:
        part.unlink(missing_ok=True)
        raise ArchiveError(f"cannot fetch {url}: {exc}") from exc
    part.replace(dest)


def index(suite: str, component: str, arch: str, *, base: str, offline: bool) -> list[Package]:
    """The packages of one suite/component/arch, from the cache or the mirror."""
    dest = cache_dir() / "indices" / f"{suite}_{component}_{arch}.xz"
    if REFRESH and not offline and dest not in _refreshed:
        dest.unlink(missing_ok=True)  # --refresh: read the archive as it is today
        _refreshed.add(dest)
    if not dest.exists():
        if offline:
            raise ArchiveError(f"cold cache: {dest} missing")
        _get(f"{base}/dists/{suite}/{component}/binary-{arch}/Packages.xz", dest)
    text = lzma.decompress(dest.read_bytes()).decode("utf-8", "replace")
    packages: list[Package] = []
    for stanza in text.split("\n\n"):
        fields = dict(re.findall(r"^([\w-]+): (.*)$", stanza, re.MULTILINE))
        if "Package" not in fields or "Filename" not in fields:
            continue
        src = str(fields.get("Source") or fields["Package"]).split()[0]
        packages.append(Package(fields["Package"], fields["Version"], src, fields["Filename"],
                                int(fields.get("Size", "0")), fields.get("SHA256", ""), suite, base))  # fmt: skip
    return packages


def download(pkg: Package, *, offline: bool) -> Path:
    dest = cache_dir() / "debs" / pkg.filename.rsplit("/", 1)[-1]
    if dest.exists() and _sha256(dest) == pkg.sha256:
        return dest
    if offline:
        raise ArchiveError(f"cold cache: {dest.name} not downloaded")
    _get(f"{pkg.base}/{pkg.filename}", dest)
    if pkg.sha256 and _sha256(dest) != pkg.sha256:
        dest.unlink()
        raise ArchiveError(f"{dest.name}: SHA256 differs from the index")
    return dest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def deb_members(deb: Path) -> list[str]:
    """Paths in a .deb's data archive (dpkg-deb reads every compression Debian uses)."""
    out = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True, timeout=600)
    tmp = deb.with_suffix(".tar")
    tmp.write_bytes(out.stdout)
    try:
        with tarfile.open(tmp) as tar:
            return [m.name.removeprefix("./") for m in tar.getmembers() if not m.isdir()]
    finally:
        tmp.unlink()


def extract(deb: Path, dest: Path, patterns: list[str]) -> Path:
    """Unpack the members of ``deb`` matching tar ``--wildcards`` patterns into ``dest`` (once)."""
    stamp = dest / ".complete"
    if stamp.exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    pipe = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(dest), "--wildcards", *patterns], stdin=pipe.stdout,
                         capture_output=True, timeout=1800, check=False)  # fmt: skip
    pipe.wait(timeout=60)
    if tar.returncode not in (0, 2):  # 2: some pattern matched nothing, which callers check
        raise ArchiveError(f"tar on {deb.name}: {tar.stderr.decode(errors='replace')[-500:]}")
    stamp.touch()
    return dest


def extract_kernel_tree(source_deb: Path, series: str, dest: Path) -> Path:
    """drivers/gpu/drm/amd/{amdgpu,amdkfd,pm}, display/amdgpu_dm and the driver core of a linux-source .deb.

    The .deb holds usr/src/linux-source-X.Y.tar.xz; only the few directories
    the generator reads are unpacked from it (about 60 MB instead of 1.3 GB).
    The stamp records what was unpacked: a tree unpacked for another list is
    unpacked again (from the cached .deb, so --offline can), not read short.
    """
    wanted = ["*/drivers/gpu/drm/amd/amdgpu/*", "*/drivers/gpu/drm/amd/amdkfd/*", "*/drivers/gpu/drm/amd/pm/*",
              f"*/{DM_DIR}/*", "*/drivers/gpu/drm/amd/include/amd_shared.h", "*/drivers/base/dd.c",
              "*/drivers/base/firmware_loader/*", f"linux-source-{series}/Makefile"]  # fmt: skip
    excluded = [f"*/{DM_DIR}/tests"]
    stamp = dest / ".complete"
    recipe = "\n".join([*wanted, *(f"exclude {e}" for e in excluded)]) + "\n"
    if stamp.exists() and stamp.read_text() == recipe:
        return dest
    outer = dest.with_name(dest.name + "-outer")
    extract(source_deb, outer, [f"./usr/src/linux-source-{series}.tar.*"])
    tars = list((outer / "usr/src").glob(f"linux-source-{series}.tar.*"))
    if not tars:
        raise ArchiveError(f"{source_deb.name} has no usr/src/linux-source-{series}.tar.*")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    tar = subprocess.run(["tar", "-x", "-C", str(dest), "-f", str(tars[0]), *(f"--exclude={e}" for e in excluded),
                          "--wildcards", *wanted], capture_output=True, timeout=1800, check=False)  # fmt: skip
    if tar.returncode not in (0, 2):
        raise ArchiveError(f"tar on {tars[0].name}: {tar.stderr.decode(errors='replace')[-500:]}")
    shutil.rmtree(outer)
    stamp.write_text(recipe)
    return dest
