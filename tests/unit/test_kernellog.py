"""Log rules match every message form the kernel and the journal produce."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.kernellog import (
    DEFAULT,
    NEEDLE,
    PREFILTER,
    SMALL,
    TERMS,
    Engine,
    _big_log,
    _sample_counts,
    blind_to_times,
    match,
    needles,
    normalise,
    scan,
    scan_distinct,
    untimed,
)
from kfdguard.knowledge.logrules import RULES, SRC_DEVICE, SRC_MODLOAD, SRC_SIGN, LogRule
from tests.fuzzing import examples

USERSPACE = {"modules-load-missing": "systemd-modules-load", "udev-group-unknown": "systemd-udevd"}
# How kernels of different versions prefix KFD and amdgpu messages (kfd-facts.md §6).
PREFIXES = ["", "kfd kfd: ", "kfd kfd: amdgpu: ", "amdgpu 0000:03:00.0: amdgpu: ", "amdgpu 0000:03:00.0: ", "amdgpu: "]
# Timestamps and wrappers of dmesg, dmesg -T, dmesg -x, journalctl (short, any month language, iso,
# full, monotonic), syslog files, /dev/kmsg and quoting.
STAMPS = [
    "",
    "[    7.026427] ",
    "[Thu Jan 30 23:27:53 2025] ",
    "[  +0.000004] ",
    "kern  :info  : [    7.026427] ",
    "Jan 30 23:27:53 host kernel: ",
    "1月 30 23:27:53 miku-ms7c02 kernel: ",
    "janv. 30 23:27:53 pc kernel: ",
    "Mär 30 23:27:53.123456 pc kernel: ",
    "2025-01-30T23:27:53+0100 host kernel: ",
    "2025-01-30T23:27:53.123456+01:00 host kernel: ",
    "Thu 2025-01-30 23:27:53 CET host kernel: ",
    "[    7.026427] host kernel: ",
    "Jan 30 23:27:53 host kernel: [    7.026427] ",
    "6,339,5140900,-;",
    "> [    7.026427] ",
    "> > Jan 30 23:27:53 host kernel: ",
]


def _forms(rule_id: str, example: str) -> list[str]:
    if rule_id in USERSPACE:
        ident = USERSPACE[rule_id]
        return [example, f"Jan 30 23:27:53 host {ident}[312]: {example}", f"[    9.1] host {ident}[312]: {example}",
                f"2025-01-30T23:27:53+0100 host {ident}[312]: {example}", f"> Jan 30 23:27:53 host {ident}[1]: {example}"]  # fmt: skip
    prefixes = ["amdgpu: "] if rule_id == "parse-args-ignored" else PREFIXES
    if rule_id == "parse-args-ignored":
        example = example.removeprefix("amdgpu: ")
    return [stamp + prefix + example for stamp in STAMPS for prefix in prefixes]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_matches_its_example_in_every_form(rule: object) -> None:
    from kfdguard.knowledge.logrules import LogRule

    assert isinstance(rule, LogRule)
    for line in _forms(rule.id, rule.example):
        # Big logs go through the anchors: a line with a kernel prefix must pass them.
        prefixed = any(p in line for p in PREFIXES if p) or rule.id in USERSPACE
        assert PREFILTER.search(line) or not prefixed, f"the big-log prefilter drops {line!r}"
        assert not PREFILTER.search(line) or DEFAULT.coarse(line).search(line), f"the coarse search drops {line!r}"
        assert TERMS.search(line), f"the paste prefilter drops {line!r}"
        assert rule.id in [e.rule for e in match(line)], f"{rule.id} does not match {line!r}"


def test_rules_are_consistent() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    for r in RULES:
        assert r.klass in ("success", "neutral", "failure", "runtime")
        assert any(term in r.example for term in r.terms), r.id
        assert (r.code is None) == (r.klass == "neutral"), r.id
        assert r.source and r.meaning


def test_normalise_extracts_device_and_ident() -> None:
    line = normalise("1月 30 23:27:53 miku-ms7c02 kernel: kfd kfd: device 1002:15d8 NOT added due to errors")
    assert (line.ident, line.driver, line.device, line.body) == (
        "kernel",
        "kfd",
        "kfd",
        "device 1002:15d8 NOT added due to errors",
    )
    line = normalise("[  950.818166] amdgpu 0000:c5:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE")
    assert (line.device, line.body) == ("0000:c5:00.0", "MES failed to respond to msg=REMOVE_QUEUE")
    line = normalise("Thu 2025-01-30 23:27:53 CET host systemd-modules-load[312]: Failed to find module 'amdkfd'")
    assert (line.ident, line.body) == ("systemd-modules-load", "Failed to find module 'amdkfd'")


def test_values_are_extracted() -> None:
    (event,) = match("[    7.026427] kfd kfd: amdgpu: skipped device 1002:73bf, PCI rejects atomics 730<2090")
    assert event.rule == "kfd-pcie-atomics" and event.ids == (0x1002, 0x73BF)
    assert (event.value("fw"), event.value("need")) == ("730", "2090")
    (event,) = match("amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_10_sos.bin failed with error -2")
    assert event.value("file") == "amdgpu/psp_13_0_10_sos.bin" and event.device == "0000:03:00.0"


@pytest.mark.parametrize(
    "line",
    [
        "usb 1-2: new high-speed USB device number 4 using xhci_hcd",
        "nouveau 0000:01:00.0: fifo: PBDMA0: 01000000 [] ch 3 [00ff992000 DRM] subc 0 mthd 0008 data 00000000",
        "i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in Xorg [1005]",
        "snd_hda_intel: unknown parameter 'enable_msi' ignored",
        "amdgpu: Topology: Add CPU node",
        "[drm] amdgpu kernel modesetting enabled.",
        "amdgpu: Virtual CRAT table created for CPU",
    ],
)
def test_other_lines_are_not_failures(line: str) -> None:
    assert [e.rule for e in match(line) if e.klass in ("failure", "runtime", "success")] == []


def test_big_logs_and_pastes_find_the_same_events() -> None:
    from benchmarks.logdata import generate

    text = generate(30_000, every=700)
    count, big = scan(text)
    assert count == 30_000 and len(big) == len(range(0, 30_000, 700))  # one event per amdgpu line
    small = [e for chunk in range(0, 30_000, 10_000) for e in scan(text.split("\n")[chunk : chunk + 10_000])[1]]
    assert [e.rule for e in big] == [e.rule for e in small]


def test_scan_numbers_lines_and_keeps_order() -> None:
    text = "\n".join(["noise"] * 100 + ["kfd kfd: amdgpu: added device 1002:744c"] + ["noise"] * 50
                     + ["amdgpu: sched_policy has invalid value"])  # fmt: skip
    count, events = scan(text, source="t")
    assert count == 152
    assert [(e.rule, e.line) for e in events] == [("kfd-added-device", 101), ("kfd-sched-policy-invalid", 152)]


@pytest.mark.fuzz
@settings(max_examples=examples(500))
@given(st.text(max_size=300))
def test_scan_never_raises(text: str) -> None:
    count, events = scan(text)
    assert count >= 1 and all(e.line >= 1 for e in events)


@pytest.mark.fuzz
@settings(max_examples=examples(300))
@given(st.lists(st.sampled_from(STAMPS), max_size=3), st.sampled_from(PREFIXES), st.sampled_from([r.example for r in RULES]),
       st.text(max_size=20))  # fmt: skip
def test_scan_survives_mangled_real_lines(stamps: list[str], prefix: str, example: str, tail: str) -> None:
    scan("".join(stamps) + prefix + example + tail)


def test_the_big_log_path_keeps_the_lines_the_prefilter_keeps() -> None:
    for alternative in DEFAULT.alternatives:
        assert PREFILTER.search(alternative), alternative
    lines = ["usb 1-2: new device", "[    1.0] kfd kfd: added device 1002:744c", "a module line", "", "x amdgpu y"]
    lines += ["[drm] foo", "last without newline amdgpu"]
    text = "\n".join(lines)
    expected = [(i, line) for i, line in enumerate(lines, 1) if PREFILTER.search(line)]
    assert _big_log(text) == expected
    assert _big_log("\n" + text) == [(i + 1, line) for i, line in expected]


def test_needles_start_at_the_rarest_character_that_leaves_enough() -> None:
    counts = Counter("aaaammmmdddddgggpu kkfd ''''")
    # "amdgpu": "u" and "p" are rarer but leave fewer than NEEDLE characters; "x amdgpu y" holds "gpu".
    found = needles(["amdgpu", "kfd", "Failed to find module '", "x amdgpu y"], counts)
    assert found == ("gpu", "kfd", "Failed to find module '")
    assert needles(["Key was rejected", "was"], Counter()) == ("was",)  # ties: the earliest position
    assert needles(["ab"], Counter("a")) == ("ab",)  # shorter than NEEDLE: the whole word


@given(st.dictionaries(st.characters(), st.integers(0, 1000)), st.lists(st.text(min_size=1, max_size=12), max_size=8))
def test_every_alternative_holds_a_needle_whatever_the_counts(counts: dict[str, int], words: list[str]) -> None:
    alternatives = (*DEFAULT.alternatives, *words)
    found = needles(alternatives, counts)
    assert all(any(n in a for n in found) for a in alternatives)
    assert all(any(a.endswith(n) and len(n) >= min(NEEDLE, len(a)) for a in alternatives) for n in found)
    assert not any(o != n and o in n for o in found for n in found)


def test_the_counts_sample_the_whole_text() -> None:
    text = "a" * 100_000 + "b" * 100_000
    counts = _sample_counts(text)
    assert counts["a"] > 0 and counts["b"] > 0 and sum(counts.values()) <= 32 * 2048
    assert _sample_counts("abc") == Counter("abc")


# Lines a big log holds around the rules' own: anchors, rare characters and terms out of place, pieces of
# the anchors that are not them, and any text at all.
# Any character but a line end or a lone surrogate, written for Debian 12's Hypothesis too (6.67, the
# package build's tests): it has no exclude_categories/exclude_characters.
_CHARACTER = st.characters().filter(lambda c: c != "\n" and not "\ud800" <= c <= "\udfff")
_AROUND = st.one_of(
    st.text(alphabet=_CHARACTER, max_size=80),
    st.sampled_from(["amdgp", "kf d", "KF", "[dr", "CRA", "'", "#", "snd_hda_intel: bound (ops [amdgpu])",
                     "it's 'quoted'", "Linux version 6.1.0 #1 SMP", "Topology: Add dGPU node [0x744c:0x1002]",
                     "probe of 0000:03:00.0 failed with error -22", "Key was", "unsigned module", ""]),
    st.builds(lambda stamp, prefix, rule: stamp + prefix + rule.example, st.sampled_from(STAMPS),
              st.sampled_from(PREFIXES), st.sampled_from(RULES)),
)  # fmt: skip


def _per_line(lines: list[str], engine: Engine = DEFAULT, *, every: bool = False) -> list[tuple[str, int, str]]:
    """The slow path, the definition of what a log shows: every line tried on its own, those with an
    anchor (a big log) or all of them (``every``: a paste) matched."""
    return [(e.rule, e.line, e.text) for i, line in enumerate(lines, 1) if every or engine.prefilter.search(line)
            for e in match(line, i, engine=engine)]  # fmt: skip


@settings(max_examples=examples(60))
@given(st.dictionaries(st.integers(0, SMALL + 50), _AROUND, min_size=1, max_size=12), st.booleans())
def test_the_big_log_search_finds_exactly_what_the_per_line_path_finds(placed: dict[int, str], tail: bool) -> None:
    lines = [
        f"[{i:12.6f}] usb 1-2: new high-speed USB device number {i % 97} using xhci_hcd" for i in range(SMALL + 51)
    ]
    for position, line in placed.items():
        lines[position] = line
    text = "\n".join(lines) + ("\n" if tail else "")
    count, events = scan(text)
    assert count == len(text.split("\n"))
    assert [(e.rule, e.line, e.text) for e in events] == _per_line(text.split("\n"))
    assert scan(text.split("\n")) == (count, events)


_NEW_ROWS = (
    LogRule("test-new-kernel-row", "failure", "gpu-init-failed", ("frobnicator stalled",),
            r"frobnicator stalled on ring (?P<ring>\w+)", "a made-up kernel message", SRC_DEVICE,
            "frobnicator stalled on ring gfx"),
    LogRule("test-new-userspace-row", "failure", "softdep-missing-module", ("Refusing to frobnicate",),
            r"Refusing to frobnicate (?P<module>\w+)", "a made-up userspace message", SRC_MODLOAD,
            "Refusing to frobnicate amdgpu"),
    LogRule("test-new-quoted-row", "failure", "module-signature-rejected", ("Module signature of '",),
            r"Module signature of '(?P<module>[^']+)' expired", "a made-up signing message", SRC_SIGN,
            "Module signature of 'amdgpu' expired"),
)  # fmt: skip


def test_a_new_rule_row_is_found_by_the_big_log_search_without_more_work() -> None:
    engine = Engine((*RULES, *_NEW_ROWS))
    lines = [
        f"[{i:12.6f}] usb 1-2: new high-speed USB device number {i % 97} using xhci_hcd" for i in range(SMALL + 10)
    ]
    lines[100] = "[  100.000000] amdgpu 0000:03:00.0: amdgpu: frobnicator stalled on ring gfx"
    lines[200] = "Jan 30 23:27:53 host systemd-modules-load[312]: Refusing to frobnicate nouveau"
    lines[300] = "[  300.000000] Module signature of 'nvme' expired"
    text = "\n".join(lines)
    _, events = scan(text, engine=engine)
    assert [(e.rule, e.line) for e in events] == [
        ("test-new-kernel-row", 101), ("test-new-userspace-row", 201), ("test-new-quoted-row", 301)
    ]  # fmt: skip
    assert [(e.rule, e.line, e.text) for e in events] == _per_line(lines, engine)
    assert all(any(n in a for n in needles(engine.alternatives, _sample_counts(text))) for a in engine.alternatives)
    # The table as shipped does not know them.
    assert scan(text)[1] == []


def test_a_repeated_line_shows_what_it_showed_whatever_its_stamp() -> None:
    """Events are reused for a line that differs from an earlier one only in its leading "[...]"; each
    keeps its own text and number, and the reuse changes nothing the per-line path finds."""
    lines = [stamp + prefix + rule.example for rule in RULES for prefix in PREFIXES for stamp in STAMPS]
    lines += ["[drm] amdgpu kernel modesetting enabled.", "[x] [drm] amdgpu kernel modesetting enabled.",
              "[    1.0] amdgpu: Topology: Add CPU node ", "[    1.0]amdgpu: Topology: Add CPU node", "[]  x"]  # fmt: skip
    _, events = scan(lines)
    assert [(e.rule, e.line, e.text) for e in events] == _per_line(lines, Engine(RULES), every=True)
    assert len({e.text for e in events}) > len(RULES)


@pytest.mark.parametrize("terms", [(), ("",), ("two\nlines",)])
def test_an_engine_refuses_terms_that_would_match_everywhere(terms: tuple[str, ...]) -> None:
    row = LogRule("test-bad-terms", "neutral", None, terms, r"x", "", SRC_DEVICE, "x")
    with pytest.raises(ValueError, match="test-bad-terms"):
        Engine((*RULES, row))


def _distinct(text: str) -> tuple[list[str], list[str], list[str]]:
    lines = text.split("\n")
    distinct = list(dict.fromkeys(lines))
    return lines, distinct, untimed(distinct)


@settings(max_examples=examples(60))
@given(st.dictionaries(st.integers(0, SMALL + 50), _AROUND, min_size=1, max_size=12), st.integers(1, 3))
def test_the_distinct_lines_scan_finds_what_the_big_log_search_finds(placed: dict[int, str], repeat: int) -> None:
    """scan_distinct (a long paste's scan, evidence.text) over lines repeated with other times and as
    they are gives scan's events of the text: the same rules, lines, numbers and texts."""
    lines = [
        f"[{i:12.6f}] usb 1-2: new high-speed USB device number {i % 97} using xhci_hcd" for i in range(SMALL + 51)
    ]
    for position, line in placed.items():
        lines[position] = line
    for times in range(1, repeat):  # the same lines later in the log: the times differ, or nothing does
        lines += [f"[{times * 1000 + i:12.6f}] {line}" for i, line in placed.items()] + list(placed.values())
    text = "\n".join(lines)
    assert scan_distinct(*_distinct(text)) == scan(text)[1]


def test_the_distinct_lines_scan_of_an_engine_whose_words_a_time_may_hold() -> None:
    """A rule word that a dmesg time could hold ("1.5") cannot be decided on the untimed lines: the
    distinct lines themselves are searched, and the events are still scan's."""
    row = LogRule("test-digit-row", "neutral", None, ("1.5",), r"1\.5 (?P<x>\w+)", "", SRC_MODLOAD, "1.5 x")
    engine = Engine((*RULES, row))
    assert not all(map(blind_to_times, engine.alternatives))
    lines = [f"[{i:12.6f}] usb 1-2: new device {i % 7}" for i in range(SMALL + 10)]
    lines[42] = "[    1.500000] 1.5 frobs"
    lines[43] = "[    2.000000] 1.5 frobs"
    text = "\n".join(lines)
    events = scan_distinct(*_distinct(text), engine=engine)
    assert events == scan(text, engine=engine)[1]
    assert [e.line for e in events if e.rule == "test-digit-row"] == [43, 44]


def _reference_untimed(line: str) -> str:
    """A leading dmesg time as untimed's docstring and _DMESG_TIMES define it, written out without a pattern:
    "[", at most 12 blanks, a number (at most 12 digits, then a dot and at most 9, or a dot and 1 to 9),
    at most 3 blanks, "]". (A reference that bounded only the end, at 40, differed from the implementation
    on "[" + 13 blanks + "1]": the bounds are part of the definition.)"""
    end = line.find("]")
    if line[:1] != "[" or end < 0:
        return line
    inner = line[1:end]
    body = inner.lstrip(" \t")
    lead = len(inner) - len(body)
    body = body.rstrip(" \t")
    trail = len(inner) - lead - len(body)
    whole, dot, fraction = body.partition(".")
    digits = set("0123456789")
    number = (
        set(whole) <= digits
        and set(fraction) <= digits
        and len(whole) <= 12
        and len(fraction) <= 9
        and (whole != "" if not dot else whole != "" or fraction != "")
    )
    return "[]" + line[end + 1 :] if number and lead <= 12 and trail <= 3 else line


@pytest.mark.parametrize(
    ("line", "timed"),
    [
        ("[" + " " * 12 + "1] x", True),
        ("[" + " " * 13 + "1] x", False),
        ("[" + "1" * 12 + "] x", True),
        ("[" + "1" * 13 + "] x", False),
        ("[1." + "0" * 9 + "] x", True),
        ("[1." + "0" * 10 + "] x", False),
        ("[1" + " " * 3 + "]", True),
        ("[1" + " " * 4 + "]", False),
        ("[.5] x", True),
        ("[5.] x", True),
        ("[.] x", False),
        ("[] x", False),
        ("[1.2.3] x", False),
        ("[\t 12.345678\t] x", True),
    ],
)
def test_untimed_and_its_reference_agree_at_the_bounds(line: str, timed: bool) -> None:
    expected = "[]" + line[line.index("]") + 1 :] if timed else line
    assert _reference_untimed(line) == expected
    assert untimed([line]) == [expected]


_TIMED = st.text(alphabet="[] \t.:0123456789akfdx]", max_size=50)


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(_TIMED, min_size=1, max_size=8))
def test_untimed_removes_a_leading_dmesg_time_and_nothing_else(lines: list[str]) -> None:
    assert untimed(lines) == [_reference_untimed(line) for line in lines]


@settings(max_examples=examples(1000), deadline=None)
@given(_TIMED, st.text(alphabet="[] \t.:0123456789akfd", min_size=1, max_size=5))
def test_a_word_blind_to_times_is_in_a_line_exactly_when_in_it_untimed(line: str, word: str) -> None:
    (unit,) = untimed([line])
    if blind_to_times(word):
        assert (word in line) == (word in unit)


@pytest.mark.parametrize(
    ("word", "blind"),
    [("amdgpu", True), ("[drm", True), ("[1002:", True), ("6.2", False), ("7440", False), (" ", False),
     ("] x", False), ("x]", False), ("", False)],
)  # fmt: skip
def test_which_words_are_blind_to_times(word: str, blind: bool) -> None:
    assert blind_to_times(word) is blind


def _boots(*parts: str) -> tuple[str, list[str]]:
    """A big log of the given lines (banners and messages), each followed by noise."""
    lines: list[str] = []
    for part in parts:
        lines.append(part)
        lines += [f"[{i:12.6f}] usb 1-2: new high-speed USB device number {i % 97} using xhci_hcd" for i in range(8000)]
    return "\n".join(lines), lines


BANNER_5_10 = (
    "[    0.000000] Linux version 5.10.0-35-amd64 (debian-kernel@lists.debian.org) (gcc-10) #1 SMP Debian 5.10.237-1"
)
BANNER_6_1 = "[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) (gcc-12) #1 SMP PREEMPT_DYNAMIC Debian"
HANG_5_10 = "[ 4711.000000] qcm fence wait loop timeout expired"  # 5.10's kfd_device_queue_manager.c: no prefix


def test_an_old_kernel_s_unprefixed_message_is_found_wherever_it_is() -> None:
    """No banner, an old one, a new one, several boots: a text and its list of lines find every such line
    (a 6.1 kernel prints it as "amdgpu: qcm fence ...", but a file may hold boots of several kernels, and a
    banner is often lost)."""
    prefixed = "[ 4712.000000] amdgpu: qcm fence wait loop timeout expired"
    for parts in ([HANG_5_10], [BANNER_5_10, HANG_5_10], [BANNER_6_1, HANG_5_10, prefixed],
                  [HANG_5_10, BANNER_6_1, prefixed, BANNER_5_10, HANG_5_10, BANNER_6_1, HANG_5_10]):  # fmt: skip
        text, lines = _boots(*parts)
        numbers = [i for i, line in enumerate(lines, 1) if line in (HANG_5_10, prefixed)]
        assert [(e.rule, e.line) for e in scan(text)[1]] == [("kfd-hws-hang", n) for n in numbers], parts
        assert scan(lines)[1] == scan(text)[1]


# --- issue 34: who said it ------------------------------------------------------------------------------------

# Lines of real healthy machines (issue 34's examples) that other drivers print: none is evidence about a GPU.
OTHER_SPEAKERS = [
    ("platform regulatory.0: Direct firmware load for regulatory.db failed with error -2", "platform", "regulatory.0"),
    ("iwlwifi 0000:03:00.0: Direct firmware load for iwlwifi-cc-a0-64.ucode failed with error -2", "iwlwifi",
     "0000:03:00.0"),
    ("tee tee0: Direct firmware load for /amdtee/f29bb3d9-bd66-5441-afb8-0acc2d0e5b2b.bin failed with error -2", "tee",
     "tee0"),
    ("bluetooth hci0: Direct firmware load for rtl_bt/rtl8852bu_config.bin failed with error -2", "bluetooth", "hci0"),
    # drivers/base/dd.c: 6.1's pr_warn("%s: probe of %s failed ...", drv->name) and 6.12's dev_err on the device.
    ("ucsi_acpi: probe of USBC000:00 failed with error -5", "ucsi_acpi", None),
    ("ucsi_acpi USBC000:00: probe with driver ucsi_acpi failed with error -5", "ucsi_acpi", "USBC000:00"),
    # kernel/module/main.c names the module that lacks a symbol.
    ("nvidia: Unknown symbol drm_gem_object_free (err -2)", "nvidia", None),
    ("[drm:intel_gt_reset [i915]] *ERROR* GPU reset begin!", "i915", None),
]  # fmt: skip


@pytest.mark.parametrize(("line", "driver", "device"), OTHER_SPEAKERS, ids=[s[1] for s in OTHER_SPEAKERS])
@pytest.mark.parametrize("stamp", ["", "[    2.100] ", "Dec 04 14:44:20 host kernel: "])
def test_another_driver_s_line_names_its_speaker_and_is_no_gpu_evidence(
    line: str, driver: str, device: str | None, stamp: str
) -> None:
    parsed = normalise(stamp + line)
    assert (parsed.driver, parsed.device) == (driver, device)
    assert match(stamp + line) == []
    # A paste of many such lines and a big log agree: nothing (the big-log path drops them earlier).
    assert scan([stamp + line] * 3) == (3, [])


AMD_LINES = [
    ("amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_10_sos.bin failed with error -2", "firmware-load-failed",
     "amdgpu", "0000:03:00.0"),
    # A line cut from its prefix (a grep, a wrapped paste) is amdgpu's when the file is.
    ("Direct firmware load for amdgpu/gc_11_0_3_mes_2.bin failed with error -2", "firmware-load-failed", None, None),
    ("amdgpu: probe of 0000:03:00.0 failed with error -22", "amdgpu-probe-failed", "amdgpu", None),
    ("amdgpu 0000:03:00.0: probe with driver amdgpu failed with error -22", "amdgpu-probe-failed", "amdgpu",
     "0000:03:00.0"),
    ("amdgpu: Unknown symbol drm_sched_job_init (err -2)", "module-unknown-symbol", "amdgpu", None),
    ("amdttm: Unknown symbol dma_resv_add_fence (err -2)", "module-unknown-symbol", "amdttm", None),
    ("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=1, emitted seq=3", "gpu-ring-timeout",
     "amdgpu", None),
    # amdgpu's own words cut from their prefix are not read as another driver's ("discovery failed:").
    ("discovery failed: -22", "amdgpu-discovery-failed", None, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "rule", "driver", "device"), AMD_LINES, ids=[a[1] + "-" + str(a[2]) for a in AMD_LINES]
)
def test_amdgpu_s_lines_are_heard_with_their_speaker(
    line: str, rule: str, driver: str | None, device: str | None
) -> None:
    events = [e for e in match("[    3.5] " + line) if e.rule == rule]
    assert [(e.driver, e.device) for e in events] == [(driver, device)]


def test_a_bare_firmware_line_is_the_gpu_s_only_when_its_file_is_amdgpu_s() -> None:
    assert match("Direct firmware load for regulatory.db failed with error -2") == []
    assert match("Direct firmware load for iwlwifi-cc-a0-64.ucode failed with error -2") == []
    assert [e.rule for e in match("Failed to load psp firmware!")] == ["firmware-load-failed"]


def test_a_monotonic_journal_line_without_a_host_is_the_kernel_s() -> None:
    # tests/data/healthy-logs/204: "[    3.900280] kernel: kfd kfd: amdgpu: added device 1002:1114"
    parsed = normalise("[    3.900280] kernel: kfd kfd: amdgpu: added device 1002:1114")
    assert (parsed.ident, parsed.driver, parsed.device, parsed.body) == (
        "kernel",
        "kfd",
        "kfd",
        "added device 1002:1114",
    )


def test_a_raw_record_s_priority_and_an_old_kernel_s_bare_topology_line_are_read() -> None:
    # tests/data/healthy-logs/405 (openSUSE's boot.msg, kernel 5.0): raw records, and KFD's topology line bare.
    lines = [
        "<6>[    4.870784] Topology: Add APU node [0x15dd:0x1002]",
        "<6>[    4.870975] kfd kfd: added device 1002:15dd",
    ]
    assert [e.rule for line in lines for e in match(line)] == ["kfd-topology-gpu", "kfd-added-device"]
    big = "\n".join(["<6>[    1.000000] usb 3-2: new full-speed USB device number 2 using xhci_hcd"] * SMALL + lines)
    assert [e.rule for e in scan(big)[1]] == ["kfd-topology-gpu", "kfd-added-device"]


@pytest.mark.parametrize(
    "line",
    [
        # tests/data/healthy-logs/646 and 604 (CONFIG_PRINTK_CALLER: the task or CPU after the time).
        "[    5.008098] [    T315] kfd kfd: amdgpu: added device 1002:73ff",
        "[    5.008098][  T315] kfd kfd: amdgpu: added device 1002:73ff",
        "[    5.008098][    C3] kfd kfd: amdgpu: added device 1002:73ff",
        "Dec  6 10:00:05 workstation kernel: [    5.008098] [    T315] kfd kfd: amdgpu: added device 1002:73ff",
    ],
)
def test_the_printk_caller_field_is_no_part_of_the_speaker(line: str) -> None:
    """Before, the caller's bracket stood between the time and "kfd kfd:": the line was heard from nobody and
    KFD's added device was missed on every kernel built with CONFIG_PRINTK_CALLER."""
    parsed = normalise(line)
    assert (parsed.driver, parsed.device, parsed.body) == ("kfd", "kfd", "added device 1002:73ff")
    assert [e.rule for e in match(line)] == ["kfd-added-device"]


def test_a_verbose_journal_entrys_message_field_is_the_line() -> None:
    """journalctl -o verbose prints the message as one of the entry's indented fields (issue 34, every format)."""
    line = normalise(
        "    MESSAGE=amdgpu 0000:c1:00.0: Direct firmware load for amdgpu/gc_11_0_1_mes_2.bin failed with error -2"
    )
    assert (line.driver, line.device) == ("amdgpu", "0000:c1:00.0")
    assert line.body.startswith("Direct firmware load for")
