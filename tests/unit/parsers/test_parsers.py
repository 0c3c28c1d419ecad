"""Parsers of machine files: exact results on real formats, no exception on garbage."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.access import parse_posix_acl
from kfdguard.facts import gfx_name
from kfdguard.modinfo import ModinfoError, declared_parameters, modinfo_entries, module_name
from kfdguard.parsers.accounts import parse_group, parse_passwd
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.parsers.modprobe import (
    kernel_args,
    kernel_param,
    logical_lines,
    parse_cmdline_modules,
    parse_modprobe_conf,
    parse_modules_load,
    softdep_modules,
)
from kfdguard.parsers.osrelease import parse_os_release
from kfdguard.parsers.topology import parse_int, parse_properties
from kfdguard.probe.system_info import parse_release
from kfdguard.simulate.elfmod import FakeModule, build_elf
from tests.fuzzing import examples

garbage = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=2000)
lines_of = st.lists(
    st.sampled_from(["options", "softdep", "install", "blacklist", "alias", "#", "pre:", "post:", "amdgpu", "\\",
                     "a=1", "=", " ", "\t", "\n", "amdkfd", "remove", "weakdep", "x" * 50, "\x00", "é"]),
    max_size=60,
).map("".join)  # fmt: skip


def test_kconfig_values_and_unset() -> None:
    text = (
        '# comment\nCONFIG_HSA_AMD=y\nCONFIG_DRM_AMDGPU=m\n# CONFIG_HSA_AMD_P2P is not set\nCONFIG_LOCALVERSION="-x"\n'
    )
    symbols, complaints = parse_kconfig(text)
    assert symbols == {
        "CONFIG_HSA_AMD": "y",
        "CONFIG_DRM_AMDGPU": "m",
        "CONFIG_HSA_AMD_P2P": "n",
        "CONFIG_LOCALVERSION": "-x",
    }
    assert complaints == []


def test_kconfig_reports_bad_lines() -> None:
    symbols, complaints = parse_kconfig("CONFIG_OK=y\nthis is not config\nCONFIG_=1\n")
    assert symbols == {"CONFIG_OK": "y"}
    assert complaints == [
        "line 2: not a CONFIG_ assignment: 'this is not config'",
        "line 3: not a CONFIG_ assignment: 'CONFIG_=1'",
    ]


@pytest.mark.fuzz
@given(garbage)
def test_kconfig_never_raises(text: str) -> None:
    symbols, complaints = parse_kconfig(text)
    assert all(k.startswith("CONFIG_") for k in symbols)
    assert all(c.startswith("line ") for c in complaints)


def test_modprobe_directives_with_continuation_and_dashes() -> None:
    text = (
        "# seed advice\n"
        "softdep amdgpu pre: amdkfd post: snd-hda-intel\n"
        "options amdgpu sched_policy=1 \\\n  cwsr_enable=0\n"
        "blacklist radeon\n"
        "alias pci:v00001002d* amdgpu\n"
        "install amd-kfd /bin/true\n"
    )
    directives, complaints = parse_modprobe_conf(text, "/etc/modprobe.d/x.conf")
    assert complaints == []
    assert [(d.kind, d.module, d.line) for d in directives] == [
        ("softdep", "amdgpu", 2),
        ("options", "amdgpu", 3),
        ("blacklist", "radeon", 5),
        ("alias", "amdgpu", 6),
        ("install", "amd_kfd", 7),
    ]
    assert softdep_modules(directives[0]) == (("amdkfd",), ("snd_hda_intel",))
    assert directives[1].args == ("sched_policy=1", "cwsr_enable=0")


def test_modprobe_complaints_name_file_and_line() -> None:
    _, complaints = parse_modprobe_conf("frobnicate amdgpu\noptions\nsoftdep amdgpu amdkfd\n", "/etc/m.conf")
    assert complaints == [
        "/etc/m.conf:1: unknown command 'frobnicate' (kmod ignores the line)",
        "/etc/m.conf:2: options without a module name",
        "/etc/m.conf:3: softdep expects 'pre:' or 'post:', found 'amdkfd'",
    ]


@pytest.mark.fuzz
@settings(max_examples=examples(300))
@given(st.one_of(garbage, lines_of))
def test_modprobe_never_raises(text: str) -> None:
    directives, complaints = parse_modprobe_conf(text, "/f.conf")
    for d in directives:
        assert d.kind in ("alias", "blacklist", "install", "remove", "options", "softdep", "weakdep")
        assert d.module and "-" not in d.module
    assert all(c.startswith("/f.conf:") for c in complaints)
    assert sum(1 for _ in logical_lines(text)) <= text.count("\n") + 1


def test_modules_load_and_cmdline() -> None:
    entries, complaints = parse_modules_load("# c\n; c\namdkfd\nloop max_loop=8\nbad/name\n", "/etc/modules")
    assert [(e.line, e.module) for e in entries] == [(3, "amdkfd"), (4, "loop")]
    assert complaints == ["/etc/modules:5: 'bad/name' is not a module name"]
    options, blacklist = parse_cmdline_modules(
        (
            "BOOT_IMAGE=/boot/vmlinuz",
            "amdgpu.sched_policy=2",
            "amd-gpu.ppfeaturemask=0xffffffff",
            "modprobe.blacklist=radeon,nouveau",
            "quiet",
        )
    )
    assert options == {"amdgpu": {"sched_policy": "2"}, "amd_gpu": {"ppfeaturemask": "0xffffffff"}}
    assert blacklist == ["radeon", "nouveau"]


@pytest.mark.fuzz
@given(garbage)
def test_modules_load_never_raises(text: str) -> None:
    parse_modules_load(text, "/etc/modules")
    parse_cmdline_modules(tuple(text.split()))


def test_properties_real_gpu_node() -> None:
    props, complaints = parse_properties("simd_count 192\ngfx_target_version 110000\nunique_id 11673270660693242239\n")
    assert props == {"simd_count": 192, "gfx_target_version": 110000, "unique_id": 11673270660693242239}
    assert complaints == []


def test_properties_reports_garbage() -> None:
    props, complaints = parse_properties("simd_count twelve\nlonely\nok 1\n")
    assert props == {"ok": 1}
    assert complaints == ["line 1: 'simd_count' has non-numeric value 'twelve'", "line 2: expected 'key value'"]


@pytest.mark.fuzz
@given(garbage)
def test_properties_never_raise(text: str) -> None:
    props, _ = parse_properties(text)
    assert all(isinstance(v, int) for v in props.values())


@pytest.mark.fuzz
@given(st.text(max_size=30))
def test_parse_int_is_total(text: str) -> None:
    value = parse_int(text)
    assert value is None or -(2**63) <= value < 2**64


def test_gfx_names() -> None:
    assert [gfx_name(v) for v in (110000, 90010, 100300, 90402, 80003, 90012, 0, 120001)] == [
        "gfx1100", "gfx90a", "gfx1030", "gfx942", "gfx803", "gfx90c", None, "gfx1201",
    ]  # fmt: skip


@pytest.mark.fuzz
@given(st.integers(min_value=-(2**40), max_value=2**40))
def test_gfx_name_total(value: int) -> None:
    name = gfx_name(value)
    assert name is None or name.startswith("gfx")


def test_group_and_passwd() -> None:
    groups, complaints = parse_group("render:x:992:alice,bob\nvideo:x:44:\nbroken\nx:x:notanumber:\n")
    assert [(g.name, g.gid, g.members) for g in groups] == [("render", 992, ("alice", "bob")), ("video", 44, ())]
    assert complaints == ["line 3: expected name:password:gid:members", "line 4: group 'x' has gid 'notanumber'"]
    users, complaints = parse_passwd("alice:x:1000:1000:A:/home/alice:/bin/bash\nsvc:x:12:12::/:/usr/sbin/nologin\n")
    assert [(u.name, u.uid, u.can_log_in) for u in users] == [("alice", 1000, True), ("svc", 12, False)]


@pytest.mark.fuzz
@given(garbage)
def test_account_files_never_raise(text: str) -> None:
    parse_group(text)
    parse_passwd(text)


def test_os_release_quoting() -> None:
    values = parse_os_release('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME="Ubuntu 24.04.1 LTS"\nbad line\n')
    assert values == {"NAME": "Ubuntu", "ID": "ubuntu", "ID_LIKE": "debian", "PRETTY_NAME": "Ubuntu 24.04.1 LTS"}


def test_release_parsing() -> None:
    assert parse_release("6.8.0-45-generic") == (6, 8, 0)
    assert parse_release("6.1.0-27-amd64") == (6, 1, 0)
    assert parse_release("5.15.0-125-generic") == (5, 15, 0)
    assert parse_release("6.12.10-arch1-1") == (6, 12, 10)
    assert parse_release("6.9") == (6, 9, 0)
    assert parse_release("6.11.0-rc3+") == (6, 11, 0)
    assert parse_release("garbage") is None
    assert parse_release("9" * 5000 + ".1") is None  # int() refuses more than 4,300 digits
    assert parse_release("6." + "1" * 5000) is None


def test_parameters_split_and_unquote_as_the_kernel_does() -> None:
    # The kernel's next_arg(): blanks inside double quotes do not split; quotes are dropped from values.
    cmdline = 'BOOT_IMAGE=/vmlinuz ro amdgpu.ppfeaturemask="0x ff" "amdgpu.x=a b" quiet  splash\n'
    assert kernel_args(cmdline) == ["BOOT_IMAGE=/vmlinuz", "ro", 'amdgpu.ppfeaturemask="0x ff"', '"amdgpu.x=a b"',
                                    "quiet", "splash"]  # fmt: skip
    assert [kernel_param(w) for w in kernel_args(cmdline)][2:4] == [
        ("amdgpu.ppfeaturemask", "0x ff"),
        ("amdgpu.x", "a b"),
    ]
    assert kernel_param("nomodeset") == ("nomodeset", "")
    assert kernel_param('a="unterminated') == ("a", "unterminated")
    assert kernel_args('a="open quote b c') == ['a="open quote b c']  # the kernel reads to the end too
    options, _ = parse_cmdline_modules(tuple(kernel_args(cmdline)))
    assert options["amdgpu"] == {"ppfeaturemask": "0x ff", "x": "a b"}


@pytest.mark.fuzz
@given(st.text(max_size=40))
def test_release_parsing_total(text: str) -> None:
    parse_release(text)


def test_posix_acl_xattr() -> None:
    data = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, ident)
        for tag, perm, ident in (
            (1, 6, 0xFFFFFFFF),
            (2, 6, 1000),
            (4, 6, 0xFFFFFFFF),
            (0x10, 6, 0xFFFFFFFF),
            (0x20, 0, 0xFFFFFFFF),
        )
    )
    entries = parse_posix_acl(data)
    assert [(e.tag, e.qualifier, e.perms) for e in entries] == [
        ("user", 1000, 6),
        ("group_obj", None, 6),
        ("mask", None, 6),
    ]


@pytest.mark.fuzz
@given(st.binary(max_size=200))
def test_posix_acl_garbage_is_value_error(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        parse_posix_acl(data)


def test_modinfo_reads_fake_module() -> None:
    elf = build_elf(FakeModule("amdgpu", "6.1.0 SMP", params=(("sched_policy", "int"), ("noretry", "int"))))
    entries = modinfo_entries(elf)
    assert ("name", "amdgpu") in entries
    assert declared_parameters(entries) == ("sched_policy", "noretry")
    assert module_name("amdgpu.ko.zst") == "amdgpu" and module_name("gpu-sched.ko") == "gpu_sched"
    assert module_name("README") is None


@pytest.mark.fuzz
@given(st.binary(max_size=400))
def test_modinfo_garbage_is_modinfo_error(data: bytes) -> None:
    with contextlib.suppress(ModinfoError):
        modinfo_entries(b"\x7fELF\x02\x01" + data)
