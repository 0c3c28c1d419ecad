"""Fuzzing the machine-file parsers: round trips of valid files, exact complaints on garbage.

For each parser (modprobe.d, modules-load.d, the kernel command line,
kernel config, KFD topology properties, passwd/group, os-release):

- a generated valid file, written with the layout variations the format
  allows, parses to exactly what was generated and raises no complaint;
- any text parses without an exception, each complaint names a line that
  exists, results are well-formed, and the same text gives the same answer;
- metamorphic: a comment or blank line put in front shifts every reported
  line number by one and changes nothing else.

The campaign found four bugs, each now a test of its own: continued lines
glued with a blank (kmod glues them without), quoted option values split at
their blanks, a uid or gid of more than 4,300 digits raising out of int(),
and backslash escapes undone inside single quotes in os-release.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.parsers.accounts import parse_group, parse_passwd
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.parsers.modprobe import (
    KINDS,
    logical_lines,
    option_pairs,
    parse_cmdline_modules,
    parse_modprobe_conf,
    parse_modules_load,
)
from kfdguard.parsers.osrelease import parse_os_release
from kfdguard.parsers.topology import parse_int, parse_properties
from tests.conftest import tool
from tests.fuzzing import DIGITS, LOWER, UPPER, examples, token

pytestmark = pytest.mark.fuzz

# Any text, including what splitlines() treats as line ends (\x85, \u2028, \x0b...).
garbage = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=1500)
blank = st.sampled_from(["", "   ", "\t", "#", "# comment", "  # indented comment"])
space = st.sampled_from([" ", "  ", "\t", " \t "])
module_names = token(LOWER, LOWER + DIGITS + "_-", 15)
words = token("", LOWER + UPPER + DIGITS + "_=:.,/-", 12, min_size=1)
# A module parameter whose value holds blanks: the kernel's next_arg() keeps it whole.
quoted_options = st.tuples(token(LOWER, LOWER + DIGITS + "_", 10), st.lists(words, min_size=1, max_size=3)).map(
    lambda t: f'{t[0]}="{" ".join(t[1])}"'
)


def _complaint_lines(complaints: list[str], prefix: str) -> list[int]:
    numbers = []
    for complaint in complaints:
        m = re.match(re.escape(prefix) + r"(\d+): \S", complaint)
        assert m, complaint
        numbers.append(int(m[1]))
    return numbers


# --- modprobe.d -------------------------------------------------------------------------------


@st.composite
def modprobe_files(draw: st.DrawFn) -> tuple[str, list[tuple[str, int, str, str, tuple[str, ...]]]]:
    """A valid modprobe.d file and its directives (kind, first line, module, normalised module, args)."""
    lines: list[str] = []
    expected = []
    for _ in range(draw(st.integers(0, 12))):
        lines.extend(draw(st.lists(blank, max_size=2)))
        kind = draw(st.sampled_from(KINDS))
        module = draw(module_names)
        if kind == "alias":
            args: list[str] = [draw(words)]
            tokens = [kind, args[0], module]
        elif kind == "blacklist":
            args, tokens = [], [kind, module]
        elif kind == "softdep":
            args = [draw(st.sampled_from(["pre:", "post:"])), *draw(st.lists(module_names, max_size=3))]
            tokens = [kind, module, *args]
        elif kind == "options":
            args = draw(st.lists(st.one_of(words, quoted_options), max_size=4))
            tokens = [kind, module, *args]
        else:
            at_least = 1 if kind in ("install", "remove", "weakdep") else 0
            args = draw(st.lists(words, min_size=at_least, max_size=4))
            tokens = [kind, module, *args]
        # Split the directive over physical lines with backslash continuations.
        cuts = sorted(draw(st.sets(st.integers(1, len(tokens) - 1), max_size=2))) if len(tokens) > 1 else []
        pieces = [tokens[a:b] for a, b in zip([0, *cuts], [*cuts, len(tokens)], strict=True)]
        first = len(lines) + 1
        indent = draw(st.sampled_from(["", " ", "\t"]))
        # kmod glues continued lines without adding a blank, so the blank between two
        # words goes before the backslash, at the start of the next line, or both.
        need_lead = False
        for i, piece in enumerate(pieces):
            sep = draw(space)
            lead = indent if i == 0 else draw(space if need_lead else st.sampled_from(["", " ", "\t"]))
            before = draw(st.sampled_from(["", " ", "\t"]))
            need_lead = before == ""
            end = before + "\\" if i < len(pieces) - 1 else before
            lines.append(lead + sep.join(piece) + end)
        normalised = module.replace("-", "_")
        expected.append((kind, first, module, normalised, tuple(args)))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"])), expected


@settings(max_examples=examples(200))
@given(modprobe_files())
def test_modprobe_round_trip(case: tuple[str, list[Any]]) -> None:
    text, expected = case
    directives, complaints = parse_modprobe_conf(text, "/etc/modprobe.d/x.conf")
    assert complaints == [], text
    assert [(d.kind, d.line, d.module, d.args) for d in directives] == [(k, n, m, a) for k, n, _, m, a in expected]
    assert all(d.file == "/etc/modprobe.d/x.conf" for d in directives)


def kmod_view(text: str, directory: Path) -> list[str]:
    """What kmod itself makes of a modprobe.d file: its --showconfig lines for this file."""
    modprobe = tool("modprobe")
    conf = directory / "fuzz.conf"
    empty = directory / "empty.conf"
    conf.write_text(text)
    empty.write_text("")

    def show(path: Path) -> list[str]:
        out = subprocess.run([modprobe, "-C", str(path), "--showconfig"], capture_output=True, text=True,
                             timeout=30, check=False).stdout  # fmt: skip
        return [" ".join(line.split()) for line in out.split("# End of configuration files")[0].splitlines() if line]

    baseline = show(empty)  # the kernel command line's options, whatever the file says
    lines = show(conf)
    for line in baseline:
        lines.remove(line)
    return sorted(line for line in lines if not line.startswith("softdep "))


def kfdguard_view(text: str) -> list[str]:
    """The same lines from kfdguard's parse (softdep is left out: kmod 30 prints it garbled; weakdep is
    newer than kmod 30, which rejects it)."""
    directives, _ = parse_modprobe_conf(text, "/f.conf")
    shown = []
    for d in directives:
        if d.kind == "alias":
            shown.append(f"alias {d.args[0].replace('-', '_')} {d.module}")
        elif d.kind == "options" and not d.args:
            continue  # no options: nothing happens either way (kmod calls the line bad, kfdguard keeps it)
        elif d.kind not in ("softdep", "weakdep"):
            shown.append(" ".join((d.kind, d.module, *d.args)))
    return sorted(shown)


@settings(max_examples=examples(25, campaign=2_000))
@given(modprobe_files().filter(lambda c: "weakdep" not in c[0]))
def test_modprobe_agrees_with_kmod(case: tuple[str, list[Any]]) -> None:
    """Differential: the real kmod (modprobe --showconfig) reads each valid file the same way."""
    with tempfile.TemporaryDirectory() as tmp:
        assert kfdguard_view(case[0]) == kmod_view(case[0], Path(tmp)), case[0]


def test_a_continuation_without_blanks_continues_the_word_as_in_kmod(tmp_path: Path) -> None:
    text = "options amdgpu a=1\\\nb=2\n"
    assert kfdguard_view(text) == kmod_view(text, tmp_path) == ["options amdgpu a=1b=2"]


def test_a_quoted_option_value_stays_whole_as_in_kmod_and_the_kernel(tmp_path: Path) -> None:
    text = 'options amdgpu a="b c" d\n'
    assert kmod_view(text, tmp_path) == ['options amdgpu a="b c" d']
    directives, _ = parse_modprobe_conf(text, "/f.conf")
    assert option_pairs(directives[0]) == [("a", "b c"), ("d", "")]


def test_backslashes_escape_as_in_kmod(tmp_path: Path) -> None:
    """kmod's freadline_wrapped(): a backslash keeps the character after it and drops itself; an escaped
    backslash at the end of a line does not continue it; an odd run of them does."""
    text = (
        "options amdgpu a=x\\y\n"  # a=xy
        "options amdgpu b=1\\\\\n"  # b=1\, and the line ends
        "options amdgpu c=2\n"
        "options amdgpu d=3\\\\\\\ne=4\n"  # d=3\ continued: d=3\e=4
    )
    expected = ["options amdgpu a=xy", "options amdgpu b=1\\", "options amdgpu c=2", "options amdgpu d=3\\e=4"]
    assert kfdguard_view(text) == kmod_view(text, tmp_path) == sorted(expected)
    assert [n for n, _ in logical_lines(text)] == [1, 2, 3, 4]


def test_a_nul_ends_a_lines_text_as_in_kmod(tmp_path: Path) -> None:
    text = "options amdgpu a=1\0 b=2\noptions amdgpu c=3\n"
    assert kfdguard_view(text) == kmod_view(text, tmp_path) == ["options amdgpu a=1", "options amdgpu c=3"]


# Texts rich in what freadline_wrapped() treats specially: backslashes, newlines, NULs.
escapes = st.text(alphabet=st.sampled_from(["a", " ", "#", "\\", "\n", "\0", "\u00e9"]), max_size=60)


@settings(max_examples=examples(300))
@given(escapes)
def test_logical_lines_are_the_lines_kmod_30s_reader_reads(text: str) -> None:
    """The probe's reader against simulate/modprobe.py's model of kmod 30's freadline_wrapped() (which
    tests/unit/simulate holds to real kmod): the same lines, except that at the very end of the file a
    lone backslash is dropped where kmod 30 stores the end of file as a byte 0xff."""
    from kfdguard.host.paths import HostPath
    from kfdguard.simulate.modprobe import _lines

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.conf"
        path.write_bytes(text.encode())
        kmod30 = _lines(HostPath(str(path)))
    ours = [line for _, line in logical_lines(text)]
    if (len(text) - len(text.rstrip("\\"))) % 2 == 1:  # the file ends in a backslash that escapes nothing
        # kmod 30 reads the end of file there as the character 0xff (decoded as U+FFFD), current kmod as nothing.
        assert kmod30 == [line for _, line in logical_lines(text[:-1] + "\ufffd")], text
        assert ours == [line for _, line in logical_lines(text[:-1])], text
    else:
        assert ours == kmod30, text


@settings(max_examples=examples(300))
@given(st.one_of(garbage, modprobe_files().map(lambda c: c[0])))
def test_modprobe_garbage_gives_exact_complaints(text: str) -> None:
    physical = text.split("\n")
    logical = dict(logical_lines(text))
    directives, complaints = parse_modprobe_conf(text, "/f.conf")
    assert parse_modprobe_conf(text, "/f.conf") == (directives, complaints)
    for line in _complaint_lines(complaints, "/f.conf:"):
        assert 1 <= line <= len(physical)
    lines = [d.line for d in directives]
    assert lines == sorted(set(lines)) and all(1 <= n <= len(physical) for n in lines)
    for d in directives:
        assert d.kind in KINDS and d.module and "-" not in d.module
        # The directive starts on the line it names.
        assert logical[d.line].split()[0] == d.kind
        written = d.text.split()
        assert d.text == " ".join(written) and written[0] == d.kind
        if d.kind == "options":  # the kernel's words: blanks inside double quotes do not split
            assert " ".join(d.args).split() == written[2:] and all(a == a.strip() for a in d.args)
        else:
            assert d.args == ((written[1],) if d.kind == "alias" else tuple(written[2:]))
    assert len(directives) + len(complaints) <= len(logical_lines(text))


@settings(max_examples=examples(200))
@given(st.one_of(garbage, modprobe_files().map(lambda c: c[0])), blank)
def test_modprobe_line_in_front_shifts_every_line_by_one(text: str, first: str) -> None:
    directives, complaints = parse_modprobe_conf(text, "/f.conf")
    shifted, shifted_complaints = parse_modprobe_conf(first + "\n" + text, "/f.conf")
    assert [(d.kind, d.module, d.args, d.line + 1) for d in directives] == [
        (d.kind, d.module, d.args, d.line) for d in shifted
    ]
    assert [n + 1 for n in _complaint_lines(complaints, "/f.conf:")] == _complaint_lines(shifted_complaints, "/f.conf:")


@settings(max_examples=examples(200))
@given(st.lists(st.one_of(module_names.map(lambda m: ("ok", m)), blank.map(lambda b: ("blank", b)),
                          st.sampled_from(["; c", "bad/name", "x.y"]).map(lambda b: ("bad", b))), max_size=20),
       garbage)  # fmt: skip
def test_modules_load_round_trip_and_garbage(items: list[tuple[str, str]], text: str) -> None:
    body = "\n".join(v if kind != "ok" else v + " max_loop=8" * (len(v) % 2) for kind, v in items)
    entries, complaints = parse_modules_load(body, "/etc/modules")
    assert [(e.line, e.module) for e in entries] == [
        (i, v.replace("-", "_")) for i, (kind, v) in enumerate(items, 1) if kind == "ok"
    ]
    assert _complaint_lines(complaints, "/etc/modules:") == [
        i for i, (kind, v) in enumerate(items, 1) if kind == "bad" and v != "; c"
    ]
    entries, complaints = parse_modules_load(text, "/etc/modules")
    count = len(text.split("\n"))
    assert all(1 <= e.line <= count and e.module and "-" not in e.module for e in entries)
    assert all(1 <= n <= count for n in _complaint_lines(complaints, "/etc/modules:"))


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(module_names, token(LOWER + "_", LOWER + DIGITS + "_", 10),
                          token("", LOWER + UPPER + DIGITS + ",.", 8)), max_size=8),
       st.lists(module_names, max_size=4), st.lists(st.text(max_size=20), max_size=5))  # fmt: skip
def test_cmdline_round_trip(options: list[tuple[str, str, str]], blacklist: list[str], noise: list[str]) -> None:
    args = [f"{m}.{p}={v}" for m, p, v in options]
    if blacklist:
        args.append("modprobe.blacklist=" + ",".join(blacklist))
    parsed, banned = parse_cmdline_modules((*args, "quiet", "root=/dev/sda1"))
    expected: dict[str, dict[str, str]] = {}
    for m, p, v in options:
        expected.setdefault(m.replace("-", "_"), {})[p] = v
    assert parsed == expected and banned == [m.replace("-", "_") for m in blacklist]
    parse_cmdline_modules(tuple(noise))


# --- kernel config ----------------------------------------------------------------------------

symbols = token("", UPPER + DIGITS + "_", 20, min_size=1).map("CONFIG_".__add__)
kvalues = st.one_of(st.sampled_from(["y", "m", "n"]), st.integers(-(2**40), 2**40).map(str),
                    st.integers(0, 2**32).map(hex), token("", LOWER + DIGITS + " ._/-", 12).map(lambda s: f'"{s}"'))  # fmt: skip


@settings(max_examples=examples(200))
@given(st.dictionaries(symbols, kvalues, max_size=15), st.data())
def test_kconfig_round_trip(values: dict[str, str], data: st.DataObject) -> None:
    lines = []
    for name, value in values.items():
        lines.extend(data.draw(st.lists(st.sampled_from(["", "#", "# Automatically generated file"]), max_size=2)))
        lines.append(f"# {name} is not set" if value == "n" else f"{name}={value}")
    parsed, complaints = parse_kconfig("\n".join(lines))
    assert complaints == []
    assert parsed == {k: v[1:-1] if v.startswith('"') else v for k, v in values.items()}


@settings(max_examples=examples(300))
@given(garbage, blank)
def test_kconfig_garbage_gives_exact_complaints(text: str, first: str) -> None:
    parsed, complaints = parse_kconfig(text)
    assert parse_kconfig(text) == (parsed, complaints)
    count = len(text.splitlines())
    numbers = [int(m[1]) for c in complaints if (m := re.match(r"line (\d+): not a CONFIG_ assignment: ['\"]", c))]
    assert len(numbers) == len(complaints), complaints
    assert all(1 <= n <= count for n in numbers) and numbers == sorted(set(numbers))
    assert all(re.fullmatch(r"CONFIG_\w+", k) for k in parsed)
    shifted, shifted_complaints = parse_kconfig(first + "\n" + text)
    assert shifted == parsed
    assert [int(c.split(":")[0][5:]) for c in shifted_complaints] == [n + 1 for n in numbers]


# --- KFD topology properties ------------------------------------------------------------------

prop_keys = token(LOWER, LOWER + DIGITS + "_", 24)
prop_values = st.integers(-(2**63), 2**64 - 1)


@settings(max_examples=examples(200))
@given(st.dictionaries(prop_keys, prop_values, max_size=40), st.data())
def test_topology_properties_round_trip(props: dict[str, int], data: st.DataObject) -> None:
    lines = []
    for key, value in props.items():
        written = hex(value) if value >= 0 and data.draw(st.booleans()) else str(value)
        lines.append(key + data.draw(space) + written + data.draw(st.sampled_from(["", " ", "\t"])))
    parsed, complaints = parse_properties("\n".join(lines) + "\n")
    assert (parsed, complaints) == (props, [])


@settings(max_examples=examples(300))
@given(st.one_of(garbage, st.lists(st.tuples(prop_keys, st.one_of(st.text(max_size=8), st.integers().map(str),
                                                                st.just("9" * 5000))), max_size=10)
                .map(lambda kv: "\n".join(f"{k} {v}" for k, v in kv))))  # fmt: skip
def test_topology_properties_garbage(text: str) -> None:
    parsed, complaints = parse_properties(text)
    count = len(text.splitlines())
    assert all(isinstance(v, int) and -(2**63) <= v <= 2**64 - 1 for v in parsed.values())
    assert all(k.isascii() and k.replace("_", "").isalnum() for k in parsed)
    numbers = [int(m[1]) for c in complaints if (m := re.match(r"line (\d+): ", c))]
    assert len(numbers) == len(complaints) and all(1 <= n <= count for n in numbers)
    assert len(parsed) + len(complaints) <= count


@settings(max_examples=examples(300))
@given(st.one_of(st.text(max_size=40), st.integers().map(str), st.integers(0, 2**70).map(hex), st.just("1" * 5000)))
def test_parse_int_is_total(text: str) -> None:
    value = parse_int(text)
    assert value is None or -(2**63) <= value <= 2**64 - 1
    if value is not None:
        assert value == (int(text.strip(), 16) if text.strip().lower().startswith("0x") else int(text.strip()))


# --- passwd and group -------------------------------------------------------------------------

account_names = token(LOWER + "_", LOWER + DIGITS + "_-", 15)
ids = st.integers(0, 2**32 - 1)
fields = token("", LOWER + UPPER + DIGITS + " /._-", 15)


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(account_names, ids, ids, fields, fields, fields), max_size=10),
       st.lists(st.tuples(account_names, ids, st.lists(account_names, max_size=4)), max_size=10))  # fmt: skip
def test_accounts_round_trip(
    users: list[tuple[str, int, int, str, str, str]], groups: list[tuple[str, int, list[str]]]
) -> None:
    passwd = "".join(f"{n}:x:{u}:{g}:{gecos}:{home}:{shell}\n" for n, u, g, gecos, home, shell in users)
    parsed, complaints = parse_passwd(passwd)
    assert complaints == []
    assert [(u.name, u.uid, u.gid, u.home, u.shell) for u in parsed] == [(n, u, g, h, s) for n, u, g, _, h, s in users]
    group = "".join(f"{n}:x:{gid}:{','.join(m)}\n" for n, gid, m in groups)
    parsed_groups, complaints = parse_group(group)
    assert complaints == []
    assert [(g.name, g.gid, g.members) for g in parsed_groups] == [(n, gid, tuple(m)) for n, gid, m in groups]


colon_garbage = st.lists(st.one_of(st.text(max_size=10), st.sampled_from([":", "::", "x", ","]),
                                   st.integers(-(2**70), 2**70).map(str), st.just("9" * 2000), st.just("1" * 4301)), max_size=20).map("".join)  # fmt: skip


@settings(max_examples=examples(300))
@given(st.one_of(garbage, colon_garbage))
def test_accounts_garbage_gives_exact_complaints(text: str) -> None:
    count = len(text.splitlines())
    users, user_complaints = parse_passwd(text)
    groups, group_complaints = parse_group(text)
    assert all(0 <= u.uid < 2**32 and 0 <= u.gid < 2**32 and u.name for u in users)
    assert all(0 <= g.gid < 2**32 and g.name and all(m and m == m.strip() for m in g.members) for g in groups)
    for complaint in user_complaints + group_complaints:
        m = re.match(r"line (\d+): ", complaint)
        assert m and 1 <= int(m[1]) <= count, complaint


def test_an_id_of_more_than_4300_digits_is_a_complaint() -> None:
    _, complaints = parse_group("render:x:" + "1" * 4301 + ":\n")
    assert complaints == ["line 1: group 'render' has gid '" + "1" * 4301 + "'"]


# --- os-release -------------------------------------------------------------------------------

os_keys = token(UPPER + "_", UPPER + DIGITS + "_", 15)
os_values = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=20)


def _quote(value: str, style: str) -> str:
    """os-release(5) is shell syntax: how a distribution would write ``value``."""
    if style == "single" and "'" not in value:
        return f"'{value}'"
    if style == "plain" and re.fullmatch(r"[A-Za-z0-9._-]+", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(max_examples=examples(200))
@given(st.dictionaries(os_keys, os_values.map(str.strip), max_size=10), st.data())
def test_os_release_round_trip(values: dict[str, str], data: st.DataObject) -> None:
    lines = []
    for key, value in values.items():
        lines.extend(data.draw(st.lists(st.sampled_from(["", "# comment"]), max_size=1)))
        lines.append(f"{key}={_quote(value, data.draw(st.sampled_from(['plain', 'single', 'double'])))}")
    assert parse_os_release("\n".join(lines)) == values


def test_os_release_single_quotes_are_literal() -> None:
    # Shell (and so os-release(5)): no escapes inside single quotes.
    assert parse_os_release("PRETTY_NAME='a\\\"b'\n") == {"PRETTY_NAME": 'a\\"b'}


@settings(max_examples=examples(300))
@given(garbage)
def test_os_release_garbage(text: str) -> None:
    values = parse_os_release(text)
    assert all(k.isidentifier() for k in values)
    assert parse_os_release(text) == values
