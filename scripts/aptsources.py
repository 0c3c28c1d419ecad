"""The machine's own Debian archive, read from its apt configuration.

The clean-room package build (scripts/cleanroom.py) and the VM lane
(vm/vmlane.py) fetch packages from the archive that this machine's apt already
uses, so the tree names no archive host and both work wherever apt works.
Reads the deb822 files (/etc/apt/sources.list.d/*.sources, sources.list(5)
"DEB822-STYLE FORMAT") and the one-line files (/etc/apt/sources.list,
/etc/apt/sources.list.d/*.list). Stdlib only: it runs with Debian's python3
before any virtualenv exists.

    python3 scripts/aptsources.py mirror bookworm     # prints the URI
    python3 scripts/aptsources.py lines bookworm      # one-line entries for a chroot
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

APT_DIR = Path("/etc/apt")


class AptSourcesError(Exception):
    """The apt configuration is unreadable, malformed or names no archive for the suite."""


@dataclass(frozen=True)
class Source:
    """One archive entry: where it came from (file:line) and what it says."""

    origin: str
    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]


def _split_options(rest: str, origin: str) -> tuple[str, str]:
    """'[arch=amd64 signed-by=...] uri suite comp' -> ('arch=... ', 'uri suite comp')."""
    if not rest.startswith("["):
        return "", rest
    end = rest.find("]")
    if end < 0:
        raise AptSourcesError(f"{origin}: '[' of the options is never closed")
    return rest[1:end], rest[end + 1 :].strip()


def parse_one_line(text: str, name: str) -> list[Source]:
    """Entries of a one-line-style file (sources.list(5) "ONE-LINE-STYLE FORMAT")."""
    out: list[Source] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        origin = f"{name}:{number}"
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        if kind not in ("deb", "deb-src"):
            raise AptSourcesError(f"{origin}: expected 'deb' or 'deb-src', found {kind!r}")
        options, rest = _split_options(rest.strip(), origin)
        if "enabled=no" in options.split():
            continue
        words = rest.split()
        if len(words) < 2:
            raise AptSourcesError(f"{origin}: an entry needs a URI and a suite: {raw.strip()!r}")
        out.append(Source(origin, (kind,), (words[0],), (words[1],), tuple(words[2:])))
    return out


def _stanzas(text: str, name: str) -> list[tuple[int, dict[str, str]]]:
    """(first line, fields) of each stanza, field names lower-cased, continuation lines joined."""
    stanzas: list[tuple[int, dict[str, str]]] = []
    fields: dict[str, str] = {}
    start = 0
    last = ""
    for number, raw in enumerate([*text.splitlines(), ""], start=1):
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if fields:
                stanzas.append((start, fields))
            fields, last = {}, ""
            continue
        if raw[0] in " \t":
            if not last:
                raise AptSourcesError(f"{name}:{number}: a continuation line with no field before it")
            fields[last] += " " + raw.strip()
            continue
        key, colon, value = raw.partition(":")
        if not colon or not key.strip() or " " in key.strip():
            raise AptSourcesError(f"{name}:{number}: expected 'Field: value', found {raw.strip()!r}")
        if not fields:
            start = number
        last = key.strip().lower()
        fields[last] = value.strip()
    return stanzas


def parse_deb822(text: str, name: str) -> list[Source]:
    """Entries of a deb822-style .sources file; 'Enabled: no' stanzas are skipped."""
    out: list[Source] = []
    for number, stanza in _stanzas(text, name):
        origin = f"{name}:{number}"
        if stanza.get("enabled", "yes").lower() == "no":
            continue
        for required in ("types", "uris", "suites"):
            if not stanza.get(required, "").split():
                raise AptSourcesError(f"{origin}: the stanza has no {required.capitalize()}:")
        out.append(
            Source(
                origin,
                tuple(stanza["types"].split()),
                tuple(stanza["uris"].split()),
                tuple(stanza["suites"].split()),
                tuple(stanza.get("components", "").split()),
            )
        )
    return out


def read_sources(apt_dir: Path = APT_DIR) -> list[Source]:
    """Every enabled entry of the machine's apt configuration, in apt's order."""
    files: list[Path] = []
    main = apt_dir / "sources.list"
    if main.exists():
        files.append(main)
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        files.extend(sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources")))
    out: list[Source] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AptSourcesError(f"{path}: unreadable: {exc}") from exc
        parse = parse_deb822 if path.suffix == ".sources" else parse_one_line
        out.extend(parse(text, str(path)))
    return out


def _binary(sources: Iterable[Source]) -> list[Source]:
    return [s for s in sources if "deb" in s.types]


def mirror_for(suite: str, sources: Sequence[Source]) -> str:
    """The URI of the first binary entry that carries SUITE's main component."""
    for source in _binary(sources):
        if suite in source.suites and (not source.components or "main" in source.components):
            return source.uris[0].rstrip("/")
    raise AptSourcesError(f"no 'deb' entry for suite {suite!r} with component main in the apt configuration")


def chroot_lines(suite: str, sources: Sequence[Source]) -> list[str]:
    """One-line entries for a SUITE chroot: SUITE, SUITE-updates and SUITE-security
    from the host's binary entries, main only, in the host's order. No signed-by:
    the chroot trusts its own debian-archive-keyring."""
    wanted = (suite, f"{suite}-updates", f"{suite}-security")
    lines: list[str] = []
    for source in _binary(sources):
        if source.components and "main" not in source.components:
            continue
        for uri in source.uris:
            for name in source.suites:
                line = f"deb {uri.rstrip('/')} {name} main"
                if name in wanted and line not in lines:
                    lines.append(line)
    if not any(line.split()[2] == suite for line in lines):
        raise AptSourcesError(f"no 'deb' entry for suite {suite!r} with component main in the apt configuration")
    return lines


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("mirror", "lines"):
        print("usage: aptsources.py mirror|lines SUITE", file=sys.stderr)
        return 2
    try:
        sources = read_sources()
        if argv[0] == "mirror":
            print(mirror_for(argv[1], sources))
        else:
            print("\n".join(chroot_lines(argv[1], sources)))
    except AptSourcesError as exc:
        print(f"aptsources: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
