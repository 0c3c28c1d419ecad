"""Issue 35.5: a snapshot bundle is its maker's, and carries no secret and no root-only file it need not.

A 0600 grub.cfg holding a GRUB password hash came out 0644 in the bundle, unredacted. Now the
bundle is 0700 with 0600 files whatever the umask; GRUB's password lines keep the user, not the
secret; a file only root may read is left out unless the verdict needs it, then reduced to what
kfdguard reads of it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kfdguard.cli import main
from kfdguard.host.root import Root
from kfdguard.probe import probe
from kfdguard.simulate import bundled
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.snapshot import MANIFEST
from kfdguard.snapshot.replay import ReplaySystem
from kfdguard.snapshot.take import take

MACHINE = "rx7900xtx-ubuntu2404"  # boots with GRUB: grub.cfg and grubenv are read
# What grub-mkpasswd-pbkdf2 prints: 10000 rounds, a 64-byte salt and a 64-byte hash, in hex.
PBKDF2 = "grub.pbkdf2.sha512.10000." + "9F3C" * 32 + "." + "A1B2C3D4" * 16
PLAIN = "hunter2-plain-password"
GRUB_SECRETS = f'set superusers="admin"\npassword_pbkdf2 admin {PBKDF2}\n  password guest {PLAIN}\n'


@pytest.fixture
def umask_022() -> Iterator[None]:
    # The usual umask, under which the old writer made 0755 directories and 0644 files.
    old = os.umask(0o022)
    yield
    os.umask(old)


def _machine(tmp_path: Path) -> tuple[SimulatedSystem, Root]:
    root = bundled.render_bundled(MACHINE, tmp_path / "machine")
    return SimulatedSystem(root), root


def _modes(bundle: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(os.lstat(bundle).st_mode)}
    for directory, dirs, files in os.walk(bundle):
        for name in dirs + files:
            path = Path(directory, name)
            st = os.lstat(path)
            if not stat.S_ISLNK(st.st_mode):
                found[str(path.relative_to(bundle))] = stat.S_IMODE(st.st_mode)
    return found


def test_the_bundle_is_0700_and_every_file_in_it_0600(
    tmp_path: Path, umask_022: None, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "report"
    assert main(["snapshot", "--machine", MACHINE, str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "private: the bundle is yours: its directory is 0700 and every file 0600" in out
    modes = _modes(bundle)
    assert len(modes) > 20 and MANIFEST in modes
    dirs = {p: m for p, m in modes.items() if (bundle / p).is_dir()}
    files = {p: m for p, m in modes.items() if p not in dirs}
    assert set(dirs.values()) == {0o700}, dirs
    assert set(files.values()) == {0o600}, files


def test_the_help_says_the_bundle_is_private(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["snapshot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "DIR is private to whoever took it: the directory is 0700 and every file 0600" in text


@pytest.mark.parametrize("mode", [0o600, 0o644])
def test_grub_password_lines_keep_the_user_and_lose_the_secret(tmp_path: Path, mode: int) -> None:
    system, root = _machine(tmp_path)
    cfg = root.boot / "grub/grub.cfg"
    cfg.write_text(GRUB_SECRETS + cfg.read_text())
    cfg.chmod(mode)
    live = probe(system, log="never").bootloader
    snap = take(system, tmp_path / "bundle", source="x")
    copy = (tmp_path / "bundle/boot/grub/grub.cfg").read_text()
    assert "password_pbkdf2 admin <redacted by kfdguard>\n" in copy
    assert "  password guest <redacted by kfdguard>\n" in copy
    assert 'set superusers="admin"' in copy
    assert PBKDF2 not in copy and "9F3C9F3C" not in copy and PLAIN not in copy
    bundle_text = b"".join(p.read_bytes() for p in (tmp_path / "bundle").rglob("*") if p.is_file())
    assert b"9F3C9F3C" not in bundle_text and PLAIN.encode() not in bundle_text
    assert any("GRUB passwords" in line for line in snap.redacted)
    # The menu the fallback reads is the same.
    assert probe(ReplaySystem(Root(tmp_path / "bundle")), log="never").bootloader == live


def test_a_root_only_file_the_verdict_does_not_need_is_left_out(tmp_path: Path) -> None:
    system, root = _machine(tmp_path)
    spec = root.etc / "cdi/amd.json"
    spec.parent.mkdir(parents=True)
    spec.write_text('{"cdiVersion": "0.6.0", "kind": "amd.com/gpu", "devices": [], "token": "ROOTONLYSECRET"}')
    spec.chmod(0o600)
    snap = take(system, tmp_path / "bundle", source="x")
    assert not (tmp_path / "bundle/etc/cdi/amd.json").exists()
    assert "/etc/cdi/amd.json: only root may read it; left out" in snap.notes
    doc = json.loads((tmp_path / "bundle" / MANIFEST).read_text())
    assert "/etc/cdi/amd.json" not in doc["files"]
    assert "ROOTONLYSECRET" not in json.dumps(doc)


def test_a_root_only_file_the_verdict_needs_keeps_only_what_kfdguard_reads(tmp_path: Path) -> None:
    system, root = _machine(tmp_path)
    env = root.boot / "grub/grubenv"
    block = "# GRUB Environment Block\nsaved_entry=gnulinux-advanced>gnulinux-6.8\nkernelopts=root=UUID=x luks.key=ROOTONLYKEY\n"
    env.write_text(block + "#" * (1024 - len(block)))
    env.chmod(0o600)
    live = probe(system, log="never").bootloader
    assert live.saved_entry == "gnulinux-advanced>gnulinux-6.8"
    snap = take(system, tmp_path / "bundle", source="x")
    copy = (tmp_path / "bundle/boot/grub/grubenv").read_text()
    assert copy == "# GRUB Environment Block\nsaved_entry=gnulinux-advanced>gnulinux-6.8\n"
    assert any(
        n.startswith("/boot/grub/grubenv: only root may read it; kept as GRUB's environment") for n in snap.notes
    )
    assert probe(ReplaySystem(Root(tmp_path / "bundle")), log="never").bootloader == live


def test_a_log_file_keeps_only_its_classified_lines(tmp_path: Path) -> None:
    system, root = _machine(tmp_path)
    log = root.path / "var/log/kern.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "Dec  1 10:00:00 host kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        "Dec  1 10:00:01 host kernel: amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init",
        "Dec  1 10:00:02 host sudo: alice : TTY=pts/0 ; PWD=/home/alice ; COMMAND=/bin/cat /etc/shadow",
    ]
    log.write_text("\n".join(lines) + "\n")
    log.chmod(0o640)  # root:adm, as Debian's rsyslog makes it
    snap = take(system, tmp_path / "bundle", source="x", log_sources=("/var/log/kern.log",))
    copy = (tmp_path / "bundle/var/log/kern.log").read_text().split("\n")
    assert copy[:3] == ["", lines[1], ""]
    assert snap.facts.log.sources == ("/var/log/kern.log",) and snap.facts.log.events
    replay = probe(ReplaySystem(Root(tmp_path / "bundle")), log="always", log_sources=("/var/log/kern.log",))
    assert replay.log.events == snap.facts.log.events
