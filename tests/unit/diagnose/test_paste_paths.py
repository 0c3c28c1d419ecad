"""The fast path of a long paste gives what reading every line gives.

``read_text(text, remember=False)`` reads every line with every extractor: the reference. The default
path skips a line it has seen showing nothing in the same surroundings (the ls directory, the open
rocminfo agent block, a rocm-smi table, the line before naming a command), finds quoted lines by
searching the text, and the rules search a long paste through one index of its distinct lines. Here
lines that open and close those surroundings, the extractors' own shapes and real-report lines are
mixed in random order, repeated as they are, with another stamp and quoted, and the diagnosis must
be the same on every path.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.assess import claims
from kfdguard.assess.rules import reason
from kfdguard.evidence.model import Observations
from kfdguard.evidence.text import read_text
from tests.fuzzing import examples
from tests.paths import TOP

# Lines that change what the lines after them mean, and the shapes each extractor reads.
_SHAPES = [
    "/dev/dri:",
    "crw-rw----+ 1 root render 226, 128 Jan  1 10:00 renderD128",
    "crw-rw---- 1 root video 226, 129 Jan  1 10:00 renderD129",
    "crw-rw-rw- 1 root root 235, 0 Jan  1 10:00 /dev/kfd",
    "ls: cannot access '/dev/kfd': No such file or directory",
    "HSA Agents",
    "Agent 1",
    "Agent 2",
    "  Name:                    gfx1030",
    "  Name:                    gfx1100",
    "  Marketing Name:          AMD Radeon RX 6800",
    "  Device Type:             GPU",
    "  Device Type:             CPU",
    "  Chip ID:                 29631(0x73bf)",
    "  BDFID:                   768",
    "============================ ROCm System Management Interface ============================",
    "0       1     0x73bf,   12345  45.0°C  20.0W   N/A, N/A, 0         500Mhz  96Mhz  0%   auto  203.0W  0%   0%",
    "1    [0x0 : 0x0]   34.0°C",
    "================================== End of ROCm SMI Log ===================================",
    "$ uname -r",
    "6.8.0-45-generic",
    "5.15.0",
    "$ groups",
    "ann adm video",
    "ann : ann video render",
    "uid=1000(ann) gid=1000(ann) groups=1000(ann),44(video)",
    ">>> torch.cuda.is_available()",
    "False",
    "ROCk module is loaded",
    "Unable to open /dev/kfd read-write: Permission denied",
    'ann is not member of "render" group, the default DRM access group.',
    "CONFIG_HSA_AMD=y",
    "-# CONFIG_HSA_AMD is not set",
    "options amdgpu ppfeaturemask=0xffffffff",
    "root@0123456789ab:/# rocminfo",
    "[    2.123456] kfd kfd: amdgpu: added device 1002:73bf",
    "[    2.223456] kfd kfd: amdgpu: skipped device 1002:73bf, PCI rejects atomics 730<0",
    "[    1.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)",
    "Dec 01 10:00:05 box kernel: amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init",
    "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 [1002:73bf] (rev c1)",
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    "It works with sudo but not as my user",
    "my RX 6600 is not supported?",
    "",
]


def _corpus_lines() -> list[str]:
    corpus = TOP / "tests" / "data" / "real-reports"
    texts = [p.read_text(encoding="utf-8").partition("\n# ---\n")[2] for p in sorted(corpus.glob("*.txt"))]
    return sorted({line for text in texts for line in text.split("\n")})


_LINES = _SHAPES + _corpus_lines()
_AROUND = st.sampled_from(["", "[ 1234.567890] ", "Dec 02 11:22:33 host kernel: ", "> ", "  ", "$ "])


_LINE = re.compile(r"\(line \d+\)")


def _diagnosis(text: str, remember: bool) -> tuple[object, ...]:
    """Everything a diagnosis says, but which line of several equal ones its evidence cites: skipping a
    repeat cites the first, reading every line the last (read_text)."""
    claims._LAST.clear()
    obs = read_text(text, remember=remember)
    established, findings, unknown, _overruled = reason(obs)
    said = [
        (
            f.code,
            f.severity,
            f.message,
            f.remedy,
            tuple(_LINE.sub("(line)", e) for e in f.evidence),
            f.gpu,
            f.blocked_by,
        )
        for f in findings
    ]
    return (sorted(obs.kinds), established, said, unknown)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, len(_LINES) - 1), _AROUND), min_size=1, max_size=50),
    st.integers(1, 3),
    st.booleans(),
)
def test_every_path_gives_the_diagnosis_of_reading_every_line(
    picks: list[tuple[int, str]], times: int, shapes_first: bool
) -> None:
    lines = [around + _LINES[i] for i, around in picks]
    if shapes_first:
        lines = [*_SHAPES[:20], *lines]
    text = "\n".join(lines * times)
    reference = _diagnosis(text, False)
    assert _diagnosis(text, True) == reference
    saved = claims.INDEXED
    claims.INDEXED = 0  # the index of distinct lines, as a long paste has it
    try:
        assert _diagnosis(text, True) == reference
    finally:
        claims.INDEXED = saved


@pytest.mark.parametrize("size", [300_000, 2_000_000])
def test_a_generated_long_paste_diagnoses_as_reading_every_line(size: int) -> None:
    from benchmarks.logdata import generate_paste

    text = generate_paste(size, seed=size)
    assert _diagnosis(text, True) == _diagnosis(text, False)


def test_a_long_ascii_paste_is_diagnosed_without_lowering_its_text() -> None:
    """Its rules search the index of its lines (assess/claims.py); 10 MB lowered cost as much as a fifth of
    splitting them. A short paste's rules read its lower case, made once."""
    from benchmarks.logdata import generate_paste

    long = read_text(generate_paste(2 * claims.INDEXED, seed=7))
    reason(long)
    assert "_lowered_of" not in vars(long)
    short = read_text("uid=1000(ann) groups=1000(ann),44(video)\nrocminfo: Permission denied")
    reason(short)
    assert vars(short)["_lowered_of"][1] == short.text.lower()


def _reference_stamp_key(raw: str) -> str:
    """_stamp_key as it was written in string operations before it became two regular expressions."""
    if raw[:1] == "[":
        close = raw.find("]", 1, 40)
        if close > 1 and raw[1:close].strip().replace(".", "", 1).isdigit():
            return "[]" + raw[close + 1 :]
        return raw
    colon = raw.find(":", 2, 24)
    if colon > 0 and raw[colon + 3 : colon + 4] == ":" and raw[colon - 2 : colon].isdigit():
        return raw[: colon - 2] + raw[colon + 6 :]
    return raw


@settings(max_examples=examples(2000), deadline=None)
@given(st.text(alphabet="[] \t.:0123456789aZ-T²\xa0", max_size=44), st.sampled_from(["", " usb 1-2: x", "] kfd"]))
def test_the_stamp_key_removes_what_it_did_or_nothing(head: str, tail: str) -> None:
    """A line's key is what the string-operation definition gave, or the line itself (a stamp written
    with other than ASCII blanks and digits stays: its repeats are read again). Never another key."""
    from kfdguard.evidence.text import _stamp_key

    raw = head + tail
    assert _stamp_key(raw) in (_reference_stamp_key(raw), raw)


@settings(max_examples=examples(2000), deadline=None)
@given(st.lists(st.text(alphabet="> \t\xa0a1", max_size=8), max_size=8))
def test_quote_markers_come_off_every_line_as_they_do_off_one(lines: list[str]) -> None:
    """The whole text's substitution gives what the line's own does: quote markers at a line's start
    (blanks and ">" repeated, one blank after), none elsewhere, trailing blanks gone."""
    from kfdguard.evidence.text import _QUOTE, _unquoted

    text = "\n".join(lines)
    assert _unquoted(text, text.split("\n")) == [_QUOTE.sub("", line).rstrip() for line in text.split("\n")]


@pytest.mark.parametrize(
    "raw",
    [
        "[   12.345678] usb 1-2: new device",
        "[12.5] x",
        "[ .5 ] x",
        "Dec 01 10:00:05 box kernel: amdgpu",
        "2025-03-03T10:00:01.1Z level=INFO",
        "12:34:56 x",
        "a:b 12:34:56 x",
    ],
)
def test_the_stamp_key_of_ordinary_stamps_is_the_old_one(raw: str) -> None:
    from kfdguard.evidence.text import _stamp_key

    assert _stamp_key(raw) == _reference_stamp_key(raw) != raw


def test_a_new_extractor_needs_no_declaration_to_be_read_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is skipped by what an extractor says it looks for: a new extractor (as another engineer
    adds one) sees, on the fast path of a long paste, every line whose like it has not yet read there."""
    from benchmarks.logdata import generate_paste
    from kfdguard.evidence import text as evidence_text
    from kfdguard.evidence.model import Source

    def xyzzy(obs: Observations, line: evidence_text._Line, state: evidence_text._State) -> None:
        if "XYZZY" in line.bare:
            obs.add("xyzzy", line.bare, Source("test", line.number))

    monkeypatch.setattr(evidence_text, "EXTRACTORS", (*evidence_text.EXTRACTORS, xyzzy))
    lines = generate_paste(3_000_000, seed=5).split("\n")
    for at, marker in ((7, "XYZZY one"), (len(lines) // 2, "[ 99.000000] XYZZY two"), (len(lines) - 3, "> XYZZY 3")):
        lines.insert(at, marker)
    text = "\n".join(lines)
    seen = [o.value for o in read_text(text).facts if o.what == "xyzzy"]
    assert seen == ["XYZZY one", "[ 99.000000] XYZZY two", "XYZZY 3"]
    assert seen == [o.value for o in read_text(text, remember=False).facts if o.what == "xyzzy"]


def test_a_new_cue_needs_no_declaration_to_be_found_in_a_long_paste() -> None:
    from benchmarks.logdata import generate_paste

    lines = generate_paste(2 * claims.INDEXED, seed=6).split("\n")
    lines.insert(len(lines) // 3, "a line with a brand-new Cue in it")
    text = "\n".join(lines)
    claims._LAST.clear()
    claims.index_lines(text, lines)
    assert claims.lines_with(claims.Text(text), "brand-new cue") == ["a line with a brand-new Cue in it"]


def _firsts(obs: Observations) -> Observations:
    """The Observations with what reading every line adds by repeats left out: of the userspace messages
    of each kind, the GPUs named in prose and the NVIDIA names, the first of each; the user without which
    and the device nodes without which of their equal lines showed them (the default path reads the first,
    reading every line ends on the last)."""
    from kfdguard.evidence.model import SeenMessage, Source
    from kfdguard.record import replace

    messages: dict[tuple[str, str], SeenMessage] = {}
    for m in obs.messages:
        messages.setdefault((m.what, m.format), m)
    gfx: dict[str, tuple[str, Source]] = {}
    for named in obs.prose_gfx:
        gfx.setdefault(named[0], named)
    cpu_gpus: dict[str, tuple[str, Source]] = {}
    for implied in obs.cpu_gpus:
        cpu_gpus.setdefault(implied[0], implied)
    nvidia: dict[str, tuple[str, Source]] = {}
    for name in obs.nvidia:
        nvidia.setdefault(name[0], name)
    user = replace(obs.user, source=Source("id")) if obs.user is not None else None
    nodes = {path: replace(node, source=Source("ls -l")) for path, node in obs.nodes.items()}
    kfd = replace(obs.kfd, source=Source("ls -l")) if obs.kfd is not None else None
    return replace(obs, messages=list(messages.values()), prose_gfx=list(gfx.values()),
                   cpu_gpus=list(cpu_gpus.values()), nvidia=list(nvidia.values()), user=user, nodes=nodes,
                   kfd=kfd)  # fmt: skip


def _retimed(text: str, shift: int) -> str:
    return re.sub(r"^\[\s*(\d+\.\d+)\]", lambda m: f"[{float(m[1]) + shift:12.6f}]", text, flags=re.M)


_REPORTS = sorted((TOP / "tests" / "data" / "real-reports").glob("*.txt"))


@pytest.mark.parametrize("path", _REPORTS, ids=[p.stem for p in _REPORTS])
def test_every_real_report_reads_as_reading_every_line(path: object) -> None:
    """Every report alone and followed by itself with other times and again as it is: the whole
    Observations (but which of equal lines the repeats cite: _firsts) and the findings are those of
    reading every line."""
    from pathlib import Path

    assert isinstance(path, Path)
    report = path.read_text(encoding="utf-8").partition("\n# ---\n")[2]
    for text in (report, "\n".join([report, _retimed(report, 1000), report])):
        assert _firsts(read_text(text)) == _firsts(read_text(text, remember=False))
        assert _diagnosis(text, True) == _diagnosis(text, False)


@pytest.mark.parametrize(("size", "seed"), [(300_000, 1), (300_000, 4), (2_500_000, 9)])
def test_a_generated_long_paste_reads_as_reading_every_line(size: int, seed: int) -> None:
    """A generated paste (over kernellog.SMALL lines at 2.5 MB: the big-log scan of distinct lines and the
    untimed index): the whole Observations, as above, and the findings with their evidence."""
    from benchmarks.logdata import generate_paste

    text = generate_paste(size, seed=seed)
    assert _firsts(read_text(text)) == _firsts(read_text(text, remember=False))
    assert _diagnosis(text, True) == _diagnosis(text, False)


@settings(max_examples=examples(2000), deadline=None)
@given(st.lists(st.text(alphabet="[] \t.:0123456789aZ>", max_size=24), max_size=12))
def test_each_distinct_lines_key_is_its_stamp_key_behind_a_newline_inside_a_block(lines: list[str]) -> None:
    """_unit_keys takes the keys of lines that begin "[" from untimed and computes the rest, and _Keys enters
    them as lines are asked for: whichever way a line goes, and in whatever order the lines are asked for,
    its key is its _stamp_key, behind a newline exactly when an open block reads it (a blank or digit first);
    and the keys the forms have are the keys the lines have."""
    from kfdguard.evidence.text import _INSIDE, _Keys, _stamp_key, _unit_keys
    from kfdguard.kernellog import untimed

    distinct = list(dict.fromkeys(line for line in lines if "\n" not in line))
    expected = {raw: ("\n" if raw[:1] in _INSIDE else "") + _stamp_key(raw) for raw in distinct}
    units = untimed(distinct)
    unit_key = _unit_keys(list(dict.fromkeys(units)))
    assert set(unit_key.values()) == set(expected.values())
    for order in (distinct, distinct[::-1]):
        keys = _Keys(distinct, units, unit_key)
        assert {raw: keys[raw] for raw in order} == expected
    with pytest.raises(KeyError):
        _Keys(distinct, units, unit_key)["\n"]  # no line holds a newline: never a distinct line


def test_the_keys_are_entered_in_batches_as_reading_reaches_them() -> None:
    """A line asked for enters the batch that holds it and those before, not the distinct lines after."""
    from kfdguard.evidence.text import _BATCH, _Keys, _unit_keys
    from kfdguard.kernellog import untimed

    distinct = [f"[{i:12.6f}] usb 1-2: device {i}" for i in range(3 * _BATCH + 10)]
    units = untimed(distinct)
    keys = _Keys(distinct, units, _unit_keys(list(dict.fromkeys(units))))
    assert keys[distinct[0]] == units[0]
    assert len(keys) == _BATCH
    assert keys[distinct[_BATCH + 1]] == units[_BATCH + 1]
    assert len(keys) == 2 * _BATCH
    assert keys[distinct[-1]] == units[-1]
    assert len(keys) == len(distinct)


_TIMES = st.sampled_from(["[    1.5] ", "[    1.500000] ", "[ 12.345678] ", "[1] ", "[ 7.] ", "[.25] ", ""])
_BODIES = st.sampled_from(["usb 1-2: new high-speed USB device", "I pasted this by hand", "amdgpu: ring gfx timeout"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(_TIMES, _BODIES).map("".join), min_size=1, max_size=8))
def test_lines_that_differ_in_their_times_shape_read_as_reading_every_line(lines: list[str]) -> None:
    """Lines that differ only in their dmesg times share a key; the times' shape still decides whether the
    text is a kernel log (printk's six digits after the dot), whichever of them is read."""
    text = "\n".join(lines)
    assert _firsts(read_text(text)) == _firsts(read_text(text, remember=False)), text


def test_a_trimmed_time_read_first_does_not_hide_the_kernel_log_after_it() -> None:
    text = "[    1.5] usb 1-2: new high-speed USB device\n[    1.500000] usb 1-2: new high-speed USB device"
    assert "kernel-log" in read_text(text).kinds
