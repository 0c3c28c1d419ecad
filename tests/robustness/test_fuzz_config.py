"""Fuzzing the configuration loader: any text or bytes, exact errors, exact values.

Four properties, each over generated input:

- valid configurations, written in any YAML style, give exactly the values
  written (nothing lost, nothing invented);
- one bad value or unknown key in an otherwise valid file gives exactly one
  error naming that key, at the line and column where it is written;
- YAML-shaped garbage (tags, anchors, aliases, merges, deep nesting,
  directives, control characters) and raw bytes never raise: every complaint
  is a ConfigError that names the file and, when it is about a place, a line
  and column inside the text;
- the result is a function of the input (same text, same answer).

The campaign found two bugs, each now a test at the end: an explicit
``!!int`` tag on non-ASCII digits, and an integer of more than 4,300 digits,
made ``int()`` raise ValueError out of parse_config.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.config import (
    _SECTIONS,
    ASSESS,
    INITRAMFS,
    POLICIES,
    REQUIRE,
    UNSTABLE,
    ComputeConfig,
    Config,
    ConfigError,
    DeviceConfig,
    FallbackConfig,
    FleetConfig,
    LogConfig,
    MemoryConfig,
    ModuleConfig,
    SoftwareConfig,
    Timeouts,
    UsersConfig,
    load_config,
    parse_config,
)
from tests.fuzzing import DIGITS, LOWER, UPPER, examples, token

pytestmark = pytest.mark.fuzz
FILE = "/etc/kfdguard/config.yaml"

# --- valid values, as YAML text, with what they must parse to --------------------------

# YAML 1.1 reads these words as booleans or null: never a plain "word" value.
_YAML_WORDS = {"yes", "no", "on", "off", "true", "false", "null", "y", "n", "~"}
names = token(LOWER + "_", LOWER + DIGITS + "_-", 20).filter(lambda s: s.lower() not in _YAML_WORDS)
abs_paths = token("/", LOWER + UPPER + DIGITS + "_./-", 30)
words = token(LOWER, LOWER + DIGITS + "_.,", 12).filter(lambda s: s.lower() not in _YAML_WORDS)
booleans = st.sampled_from(["true", "false", "True", "FALSE", "yes", "no", "on", "Off"])


def _bool(text: str) -> bool:
    return text.lower() in ("true", "yes", "on")


def _mode() -> st.SearchStrategy[tuple[str, int]]:
    def render(value: int, style: str) -> str:
        return {"0": f"0{value:o}", "0o": f"0o{value:o}", "plain": f"{value:o}"}[style]

    modes = st.integers(0, 0o177).map(lambda m: m | 0o600)  # the owner keeps read-write
    return st.tuples(modes, st.sampled_from(["0", "0o", "plain"])).map(lambda t: (render(t[0], t[1]), t[0]))


def _seconds() -> st.SearchStrategy[tuple[str, float]]:
    whole = st.integers(1, 600).map(lambda n: (str(n), float(n)))
    tenths = st.integers(1, 6000).map(lambda n: (f"{n / 10:.1f}", float(f"{n / 10:.1f}")))
    return st.one_of(whole, tenths)


_option_value = st.one_of(
    st.integers(0, 10**6).map(lambda n: (str(n), str(n))),
    booleans.map(lambda b: (b, "1" if _bool(b) else "0")),
    words.map(lambda w: (w, w)),
)
_VALID: dict[str, st.SearchStrategy[tuple[Any, Any]]] = {
    "bool": booleans.map(lambda b: (b, _bool(b))),
    "initramfs": st.sampled_from(INITRAMFS).map(lambda v: (v, v)),
    "group": names.map(lambda v: (v, v)),
    "mode": _mode(),
    "policy": st.sampled_from(POLICIES).map(lambda v: (v, v)),
    "assess": st.sampled_from(ASSESS).map(lambda v: (v, v)),
    "unstable": st.sampled_from(UNSTABLE).map(lambda v: (v, v)),
    "resets": st.integers(1, 1000).map(lambda n: (str(n), n)),
    "require": st.sampled_from(REQUIRE).map(lambda v: (v, v)),
    "seconds": _seconds(),
    "uid": st.integers(0, 2**32 - 2).map(lambda n: (str(n), n)),
    "boots": st.integers(0, 10).map(lambda n: (str(n), n)),
    "names": st.lists(names, max_size=4).map(lambda v: (v, tuple(v))),
    "sources": st.lists(st.one_of(st.sampled_from(["journal", "kmsg"]), abs_paths), max_size=4).map(
        lambda v: (v, tuple(v))
    ),
    "units": st.lists(token(LOWER, LOWER + DIGITS + "-_@", 20).map(lambda n: n + ".service"), max_size=4).map(
        lambda v: (v, tuple(v))
    ),
    "paths": st.lists(abs_paths, max_size=4).map(lambda v: (v, tuple(v))),
    "options": st.dictionaries(token(LOWER + "_", LOWER + DIGITS + "_", 20), _option_value,
                               max_size=4).map(lambda d: ({k: v[0] for k, v in d.items()},
                                                          tuple((k, v[1]) for k, v in d.items()))),
    # fleet.textfile / fleet.nfd: an absolute file path (.prom for node_exporter), or false-like: off.
    "textfile": st.one_of(st.tuples(names, names).map(lambda t: (f"/{t[0]}/{t[1]}.prom",) * 2),
                          st.sampled_from(["false", "no", "Off"]).map(lambda v: (v, None))),
    "nfdfile": st.one_of(st.tuples(names, names).map(lambda t: (f"/{t[0]}/{t[1]}",) * 2),
                         st.sampled_from(["false", "no", "Off"]).map(lambda v: (v, None))),
    # fleet.cdi: a .json path not named amd*, true (the default path) or false-like: off.
    "cdifile": st.one_of(st.tuples(names, names).map(lambda t: (f"/{t[0]}/k{t[1]}.json",) * 2),
                         st.sampled_from(["true", "yes"]).map(lambda v: (v, "/run/cdi/kfdguard.json")),
                         st.sampled_from(["false", "no", "Off"]).map(lambda v: (v, None))),
    # memory.target: whole or decimal binary sizes (1 GiB..16 TiB), or a whole share of the RAM.
    "memtarget": st.one_of(st.integers(1, 16384).map(lambda n: (f"{n}G",) * 2),
                           st.integers(1024, 10**6).map(lambda n: (f"{n}M",) * 2),
                           st.integers(10, 159).map(lambda n: (f"{n / 10}T",) * 2),
                           st.integers(1, 100).map(lambda n: (f"{n}%",) * 2)),
}  # fmt: skip
# Kinds whose text may be quoted: quoting makes a string, which these accept.
_QUOTABLE = {"group", "policy", "assess", "unstable", "initramfs", "mode", "require", "memtarget"}


@st.composite
def valid_configs(draw: st.DrawFn) -> tuple[dict[str, dict[str, tuple[str, Any]]], Config]:
    """A valid configuration as {section: {key: (kind, yaml value)}} and the Config it must give."""
    chosen: dict[str, dict[str, tuple[str, Any]]] = {}
    expected: dict[str, dict[str, Any]] = {}
    for section in draw(st.lists(st.sampled_from(sorted(_SECTIONS)), unique=True, max_size=len(_SECTIONS))):
        keys = draw(st.lists(st.sampled_from(sorted(_SECTIONS[section])), unique=True))
        for key in keys:
            kind = _SECTIONS[section][key]
            text, value = draw(_VALID[kind])
            chosen.setdefault(section, {})[key] = (kind, text)
            expected.setdefault(section, {})[key] = value
    config = Config(
        module=ModuleConfig(**expected.get("module", {})),
        device=DeviceConfig(**expected.get("device", {})),
        users=UsersConfig(**expected.get("users", {})),
        fallback=FallbackConfig(**expected.get("fallback", {})),
        timeouts=Timeouts(**expected.get("timeouts", {})),
        log=LogConfig(**expected.get("log", {})),
        compute=ComputeConfig(**expected.get("compute", {})),
        software=SoftwareConfig(**expected.get("software", {})),
        fleet=FleetConfig(**expected.get("fleet", {})),
        memory=MemoryConfig(**expected.get("memory", {})),
    )
    return chosen, config


def _scalar(kind: str, text: str, quote: str) -> str:
    if quote and kind in _QUOTABLE:
        return f"{quote}{text}{quote}"
    return text


def render_block(chosen: dict[str, dict[str, tuple[str, Any]]], style: st.DataObject) -> tuple[str, dict[str, int]]:
    """Block-style YAML, comments and blank lines sprinkled in; returns the text and each key's line."""
    lines: list[str] = []
    where: dict[str, int] = {}
    indent = " " * style.draw(st.sampled_from([2, 4]))
    quote = style.draw(st.sampled_from(["", "'", '"']))

    def filler() -> None:
        for extra in style.draw(st.lists(st.sampled_from(["", "# a comment", "   ", "#"]), max_size=2)):
            lines.append(extra)

    if style.draw(st.booleans()):
        lines.append("version: 1")
    for section, keys in chosen.items():
        filler()
        lines.append(f"{section}:")
        for key, (kind, value) in keys.items():
            filler()
            path = f"{section}.{key}"
            if kind == "options":
                lines.append(f"{indent}{key}:" + ("" if value else " {}"))
                where[path] = len(lines)
                for name, text in value.items():
                    lines.append(f"{indent}{indent}{name}: {text}")
                    where[f"{path}.{name}"] = len(lines)
            elif kind in ("names", "sources", "units", "paths"):
                items = ", ".join(f'"{v}"' if quote else v for v in value)
                lines.append(f"{indent}{key}: [{items}]")
                where[path] = len(lines)
            else:
                comment = style.draw(st.sampled_from(["", "  # why"]))
                lines.append(f"{indent}{key}: {_scalar(kind, value, quote)}{comment}")
                where[path] = len(lines)
    newline = style.draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline, where


def render_flow(chosen: dict[str, dict[str, tuple[str, Any]]]) -> str:
    def value(kind: str, v: Any) -> str:
        if kind == "options":
            # A comma ends a flow-style value: quote such words (they stay strings).
            return "{" + ", ".join(f"{k}: " + (f'"{t}"' if "," in t else t) for k, t in v.items()) + "}"
        if kind in ("names", "sources", "units", "paths"):
            return "[" + ", ".join(v) + "]"
        return str(v)

    sections = ", ".join(
        f"{s}: {{" + ", ".join(f"{k}: {value(kind, v)}" for k, (kind, v) in keys.items()) + "}"
        for s, keys in chosen.items()
    )
    return "{" + sections + "}\n"


@settings(max_examples=examples(150))
@given(valid_configs(), st.data())
def test_valid_configs_parse_to_exactly_what_is_written(
    case: tuple[dict[str, Any], Config], style: st.DataObject
) -> None:
    chosen, expected = case
    block, _ = render_block(chosen, style)
    for text in (block, render_flow(chosen)):
        config, errors = parse_config(text, FILE)
        assert errors == [], (text, [str(e) for e in errors])
        assert config == expected, text


# --- one mistake in a valid file ----------------------------------------------------------

_INVALID: dict[str, list[str]] = {
    "bool": ["maybe", "1", "[true]", "'yes'"],
    "initramfs": ["sometimes", "Report", "{a: 1}"],
    "group": ["'ren der'", "-render", "x" * 33, "ä"],
    "mode": ["0x1", "9", "0066", "1000", "0o", "[0660]"],
    "policy": ["oneshott", "PIN", "''", "{}"],
    "assess": ["sometimes", "If-Fallback", "''", "[always]"],
    "unstable": ["always", "Act", "''", "[report]"],
    "resets": ["0", "1001", "-3", "2.5", "'3'", "x"],
    "require": ["every", "some", "ALL", "''", "[any]"],
    "seconds": ["9000", "0", "abc", ".nan", "-1", "'5'"],
    "uid": ["-1", "abc", "4294967295", "1.5"],
    "boots": ["11", "-2", "x"],
    "names": ["alice", "[bad/name]", "[[alice]]", "{a: b}"],
    "sources": ["journal", "[syslog]", "[relative/path]", "[[kmsg]]"],
    "options": ["[1, 2]", "x"],
    "units": ["ollama.service", "[ollama]", "[a b.service]", "[[x.service]]"],
    "paths": ["/srv", "[relative]", "[[/srv]]"],
    "textfile": ["relative.prom", "/srv/gpu.txt", "true", "[/a.prom]"],
    "nfdfile": ["relative", "/srv/.hidden", "/srv/../x", "yes", "{a: b}"],
    "cdifile": ["relative.json", "/run/cdi/amd.json", "/run/cdi/spec.yaml", "/srv/../x.json", "[/a.json]"],
    "memtarget": ["96", "96GB", "0.5G", "17T", "101%", "0%", "lots", "[96G]"],
}


@settings(max_examples=examples(150))
@given(valid_configs(), st.data())
def test_one_bad_value_is_one_error_at_its_key_line_and_column(case: tuple[dict[str, Any], Config],
                                                              style: st.DataObject) -> None:  # fmt: skip
    chosen, _ = case
    section = style.draw(st.sampled_from(sorted(_SECTIONS)))
    key = style.draw(st.sampled_from(sorted(_SECTIONS[section])))
    kind = _SECTIONS[section][key]
    bad = style.draw(st.sampled_from(_INVALID[kind]))
    chosen = {s: dict(k) for s, k in chosen.items()}
    chosen.setdefault(section, {})[key] = ("raw", bad)
    text, where = render_block(chosen, style)
    config, errors = parse_config(text, FILE)
    assert config == Config()  # nothing of a broken file is used
    assert len(errors) == 1, (text, [str(e) for e in errors])
    (error,) = errors
    path = f"{section}.{key}"
    line = text.splitlines()[where[path] - 1]
    assert (error.key, error.line) == (path, where[path]), (text, str(error))
    # The column points at the value (for a list: at the list or the bad item in it).
    assert line[error.column - 1 :].startswith(bad[0]) or line[error.column - 1 :].startswith(bad.strip("[")[:1])
    assert str(error).startswith(f"{FILE}:{error.line}:{error.column}: {path}: ")


@settings(max_examples=examples(150))
@given(valid_configs(), st.data())
def test_an_unknown_key_is_named_with_its_place(case: tuple[dict[str, Any], Config], style: st.DataObject) -> None:
    chosen, _ = case
    section = style.draw(st.sampled_from(sorted(_SECTIONS)))
    unknown = style.draw(names.filter(lambda n: n not in _SECTIONS[section]))
    chosen = {s: dict(k) for s, k in chosen.items()}
    chosen.setdefault(section, {})[unknown] = ("raw", "1")
    text, where = render_block(chosen, style)
    _, errors = parse_config(text, FILE)
    assert [(e.key, e.line) for e in errors] == [(f"{section}.{unknown}", where[f"{section}.{unknown}"])]
    (error,) = errors
    assert text.splitlines()[error.line - 1][error.column - 1 :].startswith(unknown)
    assert f"unknown key in '{section}'" in error.message


# --- garbage --------------------------------------------------------------------------------

_KEYS = [*_SECTIONS, "version", *{k for keys in _SECTIONS.values() for k in keys}, "<<", "devce", "", "sched_policy"]
_TAGS = ["", "!!int ", "!!str ", "!!float ", "!!bool ", "!!null ", "!!binary ", "!!set ", "!!omap ", "!!seq ", "!!map ",
         "!!python/object:os.system ", "!custom ", "!<tag:yaml.org,2002:str> ", "!!timestamp "]  # fmt: skip
_SCALARS = ["0660", "0o660", "0x1f", "1e400", ".nan", "-.inf", "~", "null", "yes", "no", "1_000", "1:20", "2001-12-14",
            "'quoted'", '"dq \\x00 \\u2028"', "|\n  block\n", ">-\n  folded\n", "render", "''", "é", "\t", "\x00",
            "\x1b[31m", "\ufeff", "a" * 300, "9" * 40, "9" * 4301, "²", "٣", "*undefined", "&a x", "*a", "[]", "{}", "- "]  # fmt: skip
_PUNCT = [": ", "\n", "\n  ", "\n    ", "- ", "[", "]", "{", "}", ", ", "? ", "# c", "---\n", "...\n", "%YAML 1.1\n",
          "%TAG ! tag:x,2000:\n", "&a ", "*a", "<<: *a\n", "\r\n", "\t", "'", '"', "|", ">"]  # fmt: skip


@st.composite
def yamlish(draw: st.DrawFn) -> str:
    tokens = st.one_of(
        st.sampled_from(_KEYS),
        st.sampled_from(_PUNCT),
        st.tuples(st.sampled_from(_TAGS), st.sampled_from(_SCALARS)).map("".join),
        st.integers(-(10**30), 10**30).map(str),
        st.text(max_size=8),
    )
    text = "".join(draw(st.lists(tokens, max_size=60)))
    if draw(st.booleans()):
        depth = draw(st.integers(1, 1200))
        text += draw(
            st.sampled_from(
                ["[" * depth, "{a: " * depth, "- " * depth, "\n".join(" " * i + "a:" for i in range(depth))]
            )
        )
    return text


def check_errors(text: str, errors: list[ConfigError], file: str) -> None:
    lines = text.splitlines() or [""]
    for error in errors:
        assert isinstance(error, ConfigError)
        assert error.file == file and error.message
        if error.line:
            # A place inside the text (YAML may point just past the last line).
            assert 1 <= error.line <= len(lines) + 1 and error.column >= 1, str(error)
            assert str(error).startswith(f"{file}:{error.line}:{error.column}: ")
        else:
            assert str(error).startswith(f"{file}: ")
        if error.key:
            top = error.key.split(".", 1)[0]
            assert (
                top in _SECTIONS
                or top == "version"
                or "unknown key" in error.message
                or error.message == "duplicate key"
            )


@settings(max_examples=examples(300))
@given(st.one_of(yamlish(), st.text(max_size=400)))
def test_yaml_shaped_garbage_never_raises_and_complains_exactly(text: str) -> None:
    config, errors = parse_config(text, FILE)
    assert isinstance(config, Config)
    check_errors(text, errors, FILE)
    if errors:
        assert config == Config()
    again = parse_config(text, FILE)
    assert again[0] == config and [str(e) for e in again[1]] == [str(e) for e in errors]


@settings(max_examples=examples(100))
@given(st.one_of(st.binary(max_size=400), yamlish().map(lambda t: t.encode("utf-8", "surrogatepass"))), st.data())
def test_load_config_on_any_bytes_never_raises_and_keeps_the_last_good(data: bytes, choice: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path, cache = Path(tmp) / "config.yaml", Path(tmp) / "state" / "config.cache"
        good = choice.draw(st.booleans())
        if good:
            path.write_text("fallback:\n  policy: pin\n")
            assert load_config(path, FILE, cache).ok
        path.write_bytes(data)
        loaded = load_config(path, FILE, cache)
        assert loaded.source in ("file", "last-good", "defaults-after-error")
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            check_errors(text, list(loaded.errors), FILE)
        else:
            assert [str(e) for e in loaded.errors] == [f"{FILE}: not UTF-8 text (byte {_bad_byte(data)})"]
        if loaded.errors and good:
            assert loaded.source == "last-good" and loaded.config.fallback.policy == "pin"
        elif loaded.errors:
            assert loaded.config == Config()
        else:
            assert loaded.source == "file" and load_config(path, FILE, cache).config == loaded.config
        os.chmod(tmp, 0o700)


def _bad_byte(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    raise AssertionError("valid UTF-8")


# --- found by the campaign ----------------------------------------------------------------------


def test_an_int_tag_on_non_ascii_digits_is_an_error() -> None:
    _, errors = parse_config("version: !!int ²\n", FILE)
    assert [(e.key, e.message) for e in errors] == [("version", "'²' is not a non-negative integer")]


def test_an_integer_of_more_than_4300_digits_is_an_error() -> None:
    _, errors = parse_config("users:\n  min_uid: " + "1" * 4301 + "\n", FILE)
    assert [(e.key, e.message) for e in errors] == [("users.min_uid", f"{'1' * 40} is out of range (max 4294967294)")]
