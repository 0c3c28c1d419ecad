"""The unit lets bootctl rewrite systemd-boot's EFI variables (issue 18: efivarfs immutability).

efivarfs marks non-standard variables such as LoaderEntryOneShot immutable;
bootctl (systemd's efi_set_variable) clears FS_IMMUTABLE_FL, rewrites or
unlinks the file, and restores the flag. Changing that flag needs
CAP_LINUX_IMMUTABLE. The test runs the same three steps on an immutable file
under the unit's own capability bounding set, and under the set without the
capability, where the kernel refuses them as it would inside the service.
The proof on real efivarfs with systemd-boot is the UEFI VM lane's (issue 18).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import TOP

# Issue 21: the boot-loader actions run in their own oneshot, the only unit with this capability.
UNIT = TOP / "units/kfdguard-fallback@.service"


def bounding_set(unit_text: str) -> list[str]:
    (line,) = [line for line in unit_text.splitlines() if line.startswith("CapabilityBoundingSet=")]
    return line.split("=", 1)[1].split()


def test_the_unit_keeps_cap_linux_immutable_for_efivarfs() -> None:
    text = UNIT.read_text()
    assert "CAP_LINUX_IMMUTABLE" in bounding_set(text)
    paths = next(line for line in text.splitlines() if line.startswith("ReadWritePaths=")).split("=", 1)[1].split()
    assert "-/sys/firmware/efi/efivars" in paths


def rewrite_like_bootctl(caps: list[str], variable: Path) -> subprocess.CompletedProcess[str]:
    setpriv = shutil.which("setpriv")
    chattr = shutil.which("chattr")
    assert setpriv and chattr
    keep = ",".join(["-all", *(f"+{c.removeprefix('CAP_').lower()}" for c in caps)])
    script = f'{chattr} -i "$1" && printf "\\7\\0\\0\\0x\\0" > "$1" && {chattr} +i "$1" && {chattr} -i "$1" && rm "$1"'
    return subprocess.run(
        [setpriv, f"--bounding-set={keep}", "--inh-caps=-all", "--", "sh", "-c", script, "sh", str(variable)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason="setting the immutable flag needs root (CI runs as root)")
def test_bootctls_rewrite_works_under_the_units_capabilities_and_not_without(tmp_path: Path) -> None:
    chattr = shutil.which("chattr")
    assert chattr is not None, "chattr (e2fsprogs) is required"
    caps = bounding_set(UNIT.read_text())
    variable = tmp_path / "LoaderEntryOneShot-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
    variable.write_bytes(b"\x07\0\0\0a\0\0\0")
    if subprocess.run([chattr, "+i", str(variable)], capture_output=True, timeout=30, check=False).returncode != 0:
        pytest.skip(f"{tmp_path} is on a filesystem without the immutable flag")
    try:
        without = rewrite_like_bootctl([c for c in caps if c != "CAP_LINUX_IMMUTABLE"], variable)
        assert without.returncode != 0 and "Operation not permitted" in without.stderr, without
        assert variable.exists()
        done = rewrite_like_bootctl(caps, variable)
        assert done.returncode == 0, done.stderr
        assert not variable.exists()
    finally:
        if variable.exists():
            subprocess.run([chattr, "-i", str(variable)], check=False, timeout=30)
