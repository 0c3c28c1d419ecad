"""Taking a snapshot: one recorded probe pass, written as a bundle (``bundle.py`` has the layout)."""

from __future__ import annotations

import os
import posixpath

from kfdguard.record import dataclass
from kfdguard.snapshot import MANIFEST
from kfdguard.snapshot.bundle import SnapshotError, check_dest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.config import SoftwareConfig
    from kfdguard.facts import Facts
    from kfdguard.host.paths import HostPath
    from kfdguard.host.system import System

__all__ = ["Snapshot", "take"]

REDACTED_NAMES = (
    "user and group names of uid/gid 1000 and up (but nobody) replaced by user<uid>/group<gid> in /etc/passwd, "
    "/etc/group, /etc/kfdguard/config.yaml and the software record's paths; their GECOS fields and home "
    "directories blanked"
)
REDACTED_LOG = "kernel log: only the lines a kfdguard log rule classifies, at their line numbers; the rest blank"
REDACTED_SECRETS = (
    "GRUB passwords: password and password_pbkdf2 lines keep the command and the user name, not the password "
    "or its hash; files only root may read: left out unless the verdict needs them, then only what kfdguard "
    "reads of them (the notes name each)"
)
PRIVATE = (
    "the bundle is yours: its directory is 0700 and every file 0600; it becomes public only if you share it "
    "(read its .kfdguard-snapshot.json first)"
)


@dataclass(frozen=True)
class Snapshot:
    path: HostPath
    files: int
    redacted: tuple[str, ...]
    notes: tuple[str, ...]
    facts: Facts


def take(
    system: System,
    dest: str | os.PathLike[str],
    *,
    source: str,
    names: bool = False,
    log_sources: tuple[str, ...] = ("journal", "kmsg"),
    previous_boots: int = 0,
    software: SoftwareConfig | None = None,
) -> Snapshot:
    """Probe ``system`` once, recording, and write the bundle to ``dest`` (new or empty).

    Raises SnapshotError when ``dest`` is unusable; the bundle appears whole
    or not at all (it is written beside ``dest`` and renamed into place).
    """
    import json
    import time

    from kfdguard.host.paths import as_host

    dest = as_host(dest)
    from kfdguard import __version__
    from kfdguard.config import SoftwareConfig
    from kfdguard.probe import probe
    from kfdguard.snapshot.bundle import DIR_MODE, create_file, manifest, write_tree
    from kfdguard.snapshot.recorder import FILE, RecordingReader, RecordingSystem
    from kfdguard.snapshot.redact import GROUP, PASSWD, NameMap
    from kfdguard.userspace.cli import os_label
    from kfdguard.userspace.probe import probe_software
    from kfdguard.userspace.record import software_record

    check_dest(dest)
    reader = RecordingReader(system.root)
    recording = RecordingSystem(system)
    # The configuration decides part of the verdict: it travels with the machine.
    reader.data(system.root.etc / "kfdguard/config.yaml")
    facts = probe(recording, log="always", log_sources=log_sources, previous_boots=previous_boots, reader=reader)
    # The software inventory as read (stacks, versions, the targets their files name): not the libraries,
    # which are gigabytes; replayed as it is (kfdguard/userspace/record.py). No caller's environment:
    # the bundle describes the machine, not the shell that took it.
    config = software or SoftwareConfig()
    inventory = probe_software(system.root, None, units=config.units, paths=config.paths, os_name=os_label(facts))
    redact: NameMap | None = None
    redacted = [REDACTED_SECRETS, REDACTED_LOG]
    if not names:
        text = {k: reader.data_of.get(k, b"").decode("utf-8", errors="replace") for k in (PASSWD, GROUP)}
        redact = NameMap(text[PASSWD], text[GROUP])
        redacted.insert(0, REDACTED_NAMES)
    partial = dest.parent / f".{dest.name}.partial-{os.getpid()}"
    # Kernel log files named in log.sources keep only their classified lines, as the journal's do.
    log_files = frozenset(posixpath.normpath(s) for s in log_sources if s.startswith("/"))
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.mkdir(mode=DIR_MODE)
        os.chmod(partial, DIR_MODE)  # the bundle is its maker's until they share it, whatever the umask
        notes, left_out = write_tree(partial, reader, redact, log_files)
        meta: dict[str, object] = {
            "kfdguard": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source": source,
            "redacted": redacted,
            "notes": notes,
            "files": sorted(
                k for k, v in reader.entries.items() if v == FILE and k in reader.data_of and k not in left_out
            ),
            "software": software_record(inventory) if redact is None else redact.strings(software_record(inventory)),
        }
        doc = manifest(recording, meta)
        with os.fdopen(create_file(partial / MANIFEST), "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=1, sort_keys=True)
            handle.write("\n")
        if dest.exists():
            dest.rmdir()  # empty: check_dest said so
        os.rename(partial, dest)
    except OSError as exc:
        _remove_tree(partial)
        raise SnapshotError(f"{dest}: {exc.strerror or exc}") from None
    files = meta["files"]
    assert isinstance(files, list)
    return Snapshot(dest, len(files), tuple(redacted), tuple(notes), facts)


def _remove_tree(path: HostPath) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
