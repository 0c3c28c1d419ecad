"""The simulator's own kmod model (kfdguard/simulate/modprobe.py) against real kmod, and kfdguard's parser too.

Real ``modprobe -c -C DIR...`` (kmod on this machine) prints the configuration it
read: its options, blacklist and install lines are the oracle for the model the
simulated machines use, and for the parser the probe uses. The kernel command
line is given to kmod by bind-mounting a file over /proc/cmdline in a private
mount namespace (root only). Both implementations were written separately, so a
shared mistake would have to be made twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.host.paths import HostPath
from kfdguard.parsers.modprobe import kernel_param
from kfdguard.simulate.modprobe import SEARCH_PATH, kernel_params, read_config

MODPROBE = shutil.which("modprobe") or "/usr/sbin/modprobe"
pytestmark = pytest.mark.skipif(not os.access(MODPROBE, os.X_OK), reason="kmod's modprobe is not installed")
KMOD_DIRS = SEARCH_PATH[:4]  # kmod 30's own path; the model's fifth is /usr/lib, the same directory when merged
CAN_UNSHARE = os.geteuid() == 0 and shutil.which("unshare") is not None


def _kmod(root: Path, cmdline: str | None = None) -> tuple[list[tuple[str, str]], list[str], list[tuple[str, str]]]:
    argv = [MODPROBE, "-c", *[a for d in KMOD_DIRS for a in ("-C", str(root / d))]]
    if cmdline is not None:
        (root / "cmdline").write_text(cmdline)
        script = 'mount --bind "$0" /proc/cmdline && exec "$@"'
        argv = ["unshare", "-m", "sh", "-c", script, str(root / "cmdline"), *argv]
    else:
        # Without a private /proc/cmdline kmod would add this machine's own: compare files only.
        argv = ["unshare", "-m", "sh", "-c", ': >"$0" && mount --bind "$0" /proc/cmdline && exec "$@"',
                str(root / "cmdline"), *argv] if CAN_UNSHARE else argv  # fmt: skip
    # Bytes: text mode would turn a CR that kmod kept into a line end.
    raw = subprocess.run(argv, capture_output=True, timeout=30, check=True).stdout
    out = raw.decode("utf-8", errors="replace")
    options, blacklist, install = [], [], []
    for line in out.split("\n# End of configuration files.")[0].split("\n"):
        kind, _, rest = line.partition(" ")
        module, _, value = rest.partition(" ")
        if kind == "options":
            options.append((module, value))
        elif kind == "blacklist":
            blacklist.append(rest)
        elif kind == "install":
            install.append((module, value))
    return options, blacklist, install


def _write(root: Path, files: dict[str, bytes] | dict[str, bytes | Path]) -> None:
    """Files, or symbolic links where the value is a path."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, Path):
            path.symlink_to(data)
        else:
            path.write_bytes(data)


CASES: dict[str, dict[str, bytes | Path]] = {
    "continuations, comments, tabs and spaces": {
        "etc/modprobe.d/a.conf": b"options amdgpu  a=1 b=2\n# options amdgpu no=1\n  # indented\noptions\tamdgpu\tc=3\\\nd=4\n"
        b"options amd-gpu e=5\nblacklist radeon\ninstall amdgpu /bin/true \\\n  --x\nbogus line\noptions amdgpu\n",
    },
    "an earlier directory's name hides a later one; name order across directories": {
        "etc/modprobe.d/b.conf": b"options amdgpu from=etc\n",
        "lib/modprobe.d/b.conf": b"options amdgpu from=lib-hidden\n",
        "lib/modprobe.d/a.conf": b"options amdgpu from=lib-first\n",
        "run/modprobe.d/c.alias": b"options amdgpu from=alias-file\n",
        "run/modprobe.d/.hidden.conf": b"options amdgpu from=dotfile\n",
        "run/modprobe.d/d.conf.bak": b"options amdgpu from=backup\n",
    },
    "masked by a link to /dev/null": {
        "etc/modprobe.d/vendor.conf": Path("/dev/null"),
        "lib/modprobe.d/vendor.conf": b"options amdgpu masked=1\nblacklist amdgpu\n",
        "lib/modprobe.d/z.conf": b"options amdgpu kept=1\n",
    },
    "backslashes, brackets, CR and NUL": {
        "etc/modprobe.d/x.conf": b"options amdgpu a=b\\c\r\nblacklist rad\\eon\nblacklist br[a-b]-x\nblacklist bad]\n"
        b"options amdgpu n=1\x00tail\ninstall amd-gpu echo \"a  b\"\n",
    },
    # A backslash that ends the file: kmod stores the EOF it reads next as a byte 0xff (found by the generated
    # files below).
    "a backslash at the end of the file": {"etc/modprobe.d/a.conf": b"blacklist \\"},
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_the_model_reads_files_as_kmod_does(name: str, tmp_path: Path) -> None:
    _write(tmp_path, CASES[name])
    model = read_config(HostPath(tmp_path), "")
    assert (list(model.options), list(model.blacklist), list(model.install)) == _kmod(tmp_path)


CMDLINES = [
    "BOOT_IMAGE=/vmlinuz root=/dev/sda amdgpu.ppfeaturemask=0xfff amd-gpu.x=1 quiet\n",
    '"amdgpu.dyndbg=file a.c +p" amdgpu.q="1 2" modprobe.blacklist=radeon,,nouveau a.b.c=1 x=amdgpu.y=1 .z=1\n',
    'amdgpu.s "amdgpu.t" amdgpu.u=" amdgpu.v=2 k"k.w=3 amdgpu.x="unterminated\n',
]


@pytest.mark.skipif(not CAN_UNSHARE, reason="kmod reads /proc/cmdline: giving it another needs root and unshare")
@pytest.mark.parametrize("cmdline", CMDLINES)
def test_the_model_reads_the_kernel_command_line_as_kmod_does(cmdline: str, tmp_path: Path) -> None:
    _write(tmp_path, {"etc/modprobe.d/a.conf": b"options amdgpu first=1\n"})
    model = read_config(HostPath(tmp_path), cmdline)
    assert (list(model.options), list(model.blacklist), list(model.install)) == _kmod(tmp_path, cmdline)


WORDS = st.sampled_from(["options", "blacklist", "install", "alias", "#", "amdgpu", "amd-gpu", "a=1", 'b="x y"',
                         "\\", "\\\n", " ", "  ", "\t", "\n", "\r", "c", "=", '"', "[a-b]", "]"])  # fmt: skip
FILES = st.sampled_from(["etc/modprobe.d/a.conf", "etc/modprobe.d/b.conf", "run/modprobe.d/a.conf",
                         "lib/modprobe.d/c.conf", "usr/local/lib/modprobe.d/b.alias"])  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(FILES, st.lists(WORDS, max_size=30).map(lambda w: "".join(w).encode()), max_size=4))
def test_generated_files_read_the_same_by_model_and_kmod(tmp_path: Path, files: dict[str, bytes]) -> None:
    root = tmp_path / str(abs(hash(tuple(sorted(files.items())))))
    # exist_ok: when Hypothesis replays a failing example, the failed run left its directory (same files).
    root.mkdir(exist_ok=True)
    _write(root, files)
    model = read_config(HostPath(root), "")
    assert (list(model.options), list(model.blacklist), list(model.install)) == _kmod(root)
    shutil.rmtree(root)


def _kfdguard_view(root: Path, cmdline: str) -> tuple[dict[str, list[tuple[str, str]]], list[str]]:
    """What kfdguard's probe makes of the same files: parameters per module, the blacklist."""
    from kfdguard.host.root import Root
    from kfdguard.probe.config_files import probe_modprobe
    from kfdguard.probe.reader import Reader

    facts = probe_modprobe(Reader(Root(root)), tuple(cmdline.split()))
    params: dict[str, list[tuple[str, str]]] = {}
    for d in facts.directives:
        if d.kind == "options":
            params.setdefault(d.module, []).extend(kernel_param(w) for w in d.args)
    for module, values in facts.cmdline_options.items():
        params.setdefault(module, []).extend(values.items())
    blacklist = [d.module for d in facts.directives if d.kind == "blacklist"] + list(facts.cmdline_blacklist)
    return params, blacklist


@pytest.mark.parametrize(
    "name",
    [
        "continuations, comments, tabs and spaces",
        "masked by a link to /dev/null",
        "an earlier directory's name hides a later one; name order across directories",
    ],
)
def test_kfdguards_parser_agrees_with_kmod_on_the_files_that_matter(name: str, tmp_path: Path) -> None:
    _write(tmp_path, CASES[name])
    kmod_options, kmod_blacklist, _ = _kmod(tmp_path)
    expected: dict[str, list[tuple[str, str]]] = {}
    for module, text in kmod_options:
        expected.setdefault(module, []).extend(kernel_params(text))
    params, blacklist = _kfdguard_view(tmp_path, "")
    assert params == expected and blacklist == kmod_blacklist
