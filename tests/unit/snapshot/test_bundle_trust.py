"""Issue 35.6: replaying a bundle from somebody else never reads this host's files.

The bundle links its modprobe.d files and kfdguard's configuration to a "secret" outside it (a temp
file standing in for /etc/shadow), absolutely and relatively. Before, ``kfdguard check --root`` quoted
the secret's lines in its findings (modprobe.d's "unknown command", the configuration's errors).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kfdguard.cli import main

SECRET_WORD = "NOTFORANYREPORT7f3a"
# The first word of a line is what the modprobe.d parser quotes; a YAML value is what the config's
# validation quotes: the secret is both.
SECRET = f"{SECRET_WORD} root:$6$saltsalt$hash:19000:0:99999:7:::\nlog:\n  sources: [{SECRET_WORD}]\n"
LEAVES = "link leaves the machine's root"


@pytest.fixture
def hostile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    bundle = tmp_path / "report"
    assert main(["snapshot", "--machine", "rx7900xtx-ubuntu2404", str(bundle)]) == 0
    capsys.readouterr()
    secret = tmp_path / "outside/shadow"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    secret.chmod(0o600)
    modprobe_d = bundle / "etc/modprobe.d"
    (modprobe_d / "x.conf").symlink_to(secret)  # absolute: the host's file
    (modprobe_d / "y.conf").symlink_to("../../../outside/shadow")  # relative, climbing out of the bundle
    (bundle / "etc/kfdguard").mkdir(exist_ok=True)
    (bundle / "etc/kfdguard/config.yaml").symlink_to(secret)
    # A link that stays inside is the machine's own file and is read: a blog's option, flagged.
    (bundle / "etc/inside.conf").write_text("options amdgpu enable_iommu=1\n")
    (modprobe_d / "inside.conf").symlink_to("../inside.conf")
    return bundle


def test_check_text_says_the_links_leave_and_shows_no_secret(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--root", str(hostile), "--verbose"])
    out = capsys.readouterr()
    assert SECRET_WORD not in out.out + out.err
    text = " ".join(out.out.split())  # the report wraps long lines
    assert f"/etc/modprobe.d/x.conf: unreadable: {LEAVES} (/etc/modprobe.d/x.conf -> " in text
    assert f"/etc/modprobe.d/y.conf: unreadable: {LEAVES} (/etc/modprobe.d/y.conf -> ../../../outside/shadow)" in text
    assert f"/etc/kfdguard/config.yaml: cannot read: {LEAVES} (/etc/kfdguard/config.yaml -> " in text
    assert "'enable_iommu' is unknown" in text


def test_check_json_says_the_links_leave_and_shows_no_secret(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--root", str(hostile), "--json"])
    out = capsys.readouterr()
    assert SECRET_WORD not in out.out + out.err
    doc = json.loads(out.out)
    said = json.dumps(doc["findings"])
    assert said.count(LEAVES) >= 3, said  # x.conf, y.conf, config.yaml
    codes = [f["code"] for f in doc["findings"]]
    assert "unreadable" in codes and "config-invalid" in codes and "module-param-unknown" in codes


def test_diagnose_of_the_bundle_shows_no_secret(hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["diagnose", str(hostile)])
    out = capsys.readouterr()
    assert SECRET_WORD not in out.out + out.err
    assert LEAVES in " ".join(out.out.split())
