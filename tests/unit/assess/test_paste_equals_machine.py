"""A paste of a machine's own outputs reaches the same error codes, and the same root cause, as checking it.

Each bundled simulated machine is rendered, checked (probe + assess), and its
own outputs (uname -r, lspci -nn, ls -l /dev/kfd /dev/dri, id of its desktop
user, rocminfo as that user, dmesg) are pasted into ``diagnose``. Both go
through one rule set; where a rule needs an observation that these outputs
do not carry, the table below says which, per code, and what the paste
reaches instead.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from kfdguard.access import NodeStat, parse_posix_acl
from kfdguard.assess import assess
from kfdguard.assess.order import headline
from kfdguard.diagnose import diagnose_text
from kfdguard.facts import Facts
from kfdguard.simulate import bundled
from kfdguard.verdict import Finding, Severity
from tests.pastes import paste_of, render_ls

# code -> (the observation its rule needs that the pasted outputs lack, the code the paste reaches instead or None)
NOT_IN_THE_PASTE: dict[str, tuple[str, str | None]] = {
    # DKMS's trees (/var/lib/dkms): 'dkms status'. The log shows the consequence: the in-tree amdgpu fails.
    "dkms-not-built": ("dkms status", "gpu-init-failed"),
    # The kernel config: without it the paste shows only that /dev/kfd is missing.
    "kfd-not-built": ("grep CONFIG_HSA_AMD /boot/config-$(uname -r)", "device-node-missing"),
    # The option sits in /etc/modprobe.d; the log names KFD's refusal (kfd-init-failed), not the file.
    "module-param-invalid": ("grep -r . /etc/modprobe.d", None),
}
# A paste's "id" is the person who reports; a machine has several accounts and says "warning" for each.
ERROR_FOR_THE_REPORTER = {"user-not-in-group"}


def _errors(findings: tuple[Finding, ...]) -> set[str]:
    return {f.code for f in findings if f.severity is Severity.ERROR}


@pytest.mark.parametrize("name", bundled.names())
def test_the_paste_reaches_the_machines_error_codes(
    name: str, rendered_machines: dict[str, Path], machine_facts: dict[str, Facts]
) -> None:
    verdict = assess(machine_facts[name])
    paste = diagnose_text(paste_of(rendered_machines[name]))
    live, pasted = _errors(verdict.findings), _errors(paste.findings)
    expected = {code for code in live if code not in NOT_IN_THE_PASTE}
    expected |= {NOT_IN_THE_PASTE[c][1] or "" for c in live if c in NOT_IN_THE_PASTE} - {""}
    assert pasted - ERROR_FOR_THE_REPORTER == expected - ERROR_FOR_THE_REPORTER
    for code in pasted & ERROR_FOR_THE_REPORTER:
        assert code in verdict.codes()  # as a warning on the machine
    assert set(paste.kinds) >= {"uname", "lspci", "ls", "id", "rocminfo", "kernel-log"}


@pytest.mark.parametrize("name", bundled.names())
def test_the_paste_names_the_same_root_cause(
    name: str, rendered_machines: dict[str, Path], machine_facts: dict[str, Facts]
) -> None:
    machine_root = headline(assess(machine_facts[name]).findings)
    paste_root = headline(diagnose_text(paste_of(rendered_machines[name])).findings)
    assert machine_root is not None and paste_root is not None
    if machine_root.severity is not Severity.ERROR:
        assert paste_root.severity is not Severity.ERROR
        return
    instead = NOT_IN_THE_PASTE.get(machine_root.code, (None, machine_root.code))[1]
    assert paste_root.code == instead


def test_with_the_kernel_config_the_paste_sees_kfd_not_built(rendered_machines: dict[str, Path]) -> None:
    paste = diagnose_text(paste_of(rendered_machines["no-hsa-amd"], kernel_config=True))
    root = headline(paste.findings)
    assert root is not None and root.code == "kfd-not-built"
    assert _errors(paste.findings) == {"kfd-not-built"}  # the missing node follows from it
    blocked = [f for f in paste.findings if f.code == "userspace-target-unsupported"]
    assert blocked and all(f.blocked_by == "kfd-not-built" for f in blocked)


def test_the_paste_has_provenance(rendered_machines: dict[str, Path]) -> None:
    paste = diagnose_text(paste_of(rendered_machines["kfd-perms-0600"]))
    (node,) = [f for f in paste.findings if f.code == "device-permissions"]
    assert any(e.startswith("ls -l (line ") and "crw------- root:root" in e for e in node.evidence)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of character devices needs root (CAP_MKNOD)")
def test_the_ls_format_is_coreutils(tmp_path: Path) -> None:
    """Real ls -l of real device nodes (with an ACL on one) against the renderer, dates aside."""
    dri = tmp_path / "dri"
    dri.mkdir()
    os.mknod(tmp_path / "kfd", 0o660 | stat.S_IFCHR, os.makedev(240, 0))
    os.mknod(dri / "card0", 0o600 | stat.S_IFCHR, os.makedev(226, 0))
    os.mknod(dri / "renderD128", 0o660 | stat.S_IFCHR, os.makedev(226, 128))
    for path, mode in ((tmp_path / "kfd", 0o660), (dri / "card0", 0o600), (dri / "renderD128", 0o660)):
        os.chmod(path, mode)  # mknod's mode went through the umask
    # system.posix_acl_access: version 2; user::rw, user:1000:rw, group::rw, mask::rw, other::-
    entries = [
        (0x01, 6, 0xFFFFFFFF),
        (0x02, 6, 1000),
        (0x04, 6, 0xFFFFFFFF),
        (0x10, 6, 0xFFFFFFFF),
        (0x20, 0, 0xFFFFFFFF),
    ]
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
    try:
        os.setxattr(dri / "renderD128", "system.posix_acl_access", acl)
    except OSError as error:
        pytest.skip(f"this file system takes no POSIX ACLs: {error}")
    real = subprocess.run(
        ["ls", "-l", str(tmp_path / "kfd"), str(dri)], capture_output=True, text=True, env={"LC_ALL": "C"}, check=True
    ).stdout
    nodes = {
        "/dev/kfd": NodeStat("char", 240, 0, 0, 0, 0o660, ()),
        "/dev/dri/card0": NodeStat("char", 226, 0, 0, 0, 0o600, ()),
        "/dev/dri/renderD128": NodeStat("char", 226, 128, 0, 0, 0o660, parse_posix_acl(acl)),
    }
    ours = render_ls(nodes, {0: "root"}, {0: "root"})
    date = re.compile(r"[A-Z][a-z]{2} [ \d]\d (?:\d\d:\d\d| \d{4})")
    expected = real.replace(str(tmp_path / "kfd"), "/dev/kfd").replace(str(dri) + ":", "/dev/dri:")
    assert date.sub("DATE", ours).splitlines() == date.sub("DATE", expected).splitlines()
