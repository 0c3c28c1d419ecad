"""The big-log search finds every real format a log rule reads, as each kernel series prints it.

The search looks for a few words (kernellog: the kernels' prefixes, and the words of the messages older
kernels print without one) instead of every rule's terms. These tests hold those words to the formats the
generator read from each series' source (knowledge/data), rendered as dmesg lines, and to the real reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kfdguard import kernellog
from kfdguard.kernellog import KERNEL_ANCHORS, OLD_KERNEL_WORDS, SMALL, match, scan
from kfdguard.knowledge import formats
from tests.paths import TOP

SERIES = formats.series()
# The first series whose KFD messages all carry a prefix (the oldest in the generated data after 5.10): why
# OLD_KERNEL_WORDS exist and what they are for.
PREFIXED_SINCE = (6, 1)
NOISE = "[    9.000000] usb 1-2: new high-speed USB device number 3 using xhci_hcd"


def _version(series: str) -> tuple[int, int]:
    major, minor = series.split(".")
    return int(major), int(minor)


def _banner(series: str) -> str:
    """The first line such a kernel prints (init/version.c linux_banner)."""
    return f"[    0.000000] Linux version {series}.0-1-amd64 (debian-kernel@lists.debian.org) (gcc-14) #1 SMP Debian"


def _lines(message: list[Any]) -> list[str]:
    """The message as dmesg shows it. A dev_* call prints the device it names: the data does not say which,
    so both amdgpu's PCI device and KFD's own ("kfd kfd: ") are tried. drivers/base/dd.c's "%s: probe of"
    names the driver first, amdgpu for the messages the rule reads."""
    line = formats.sample_line(message)
    if str(message[4]).endswith("drivers/base/dd.c"):
        line = line.replace("x: probe of", "amdgpu: probe of")
    if str(message[1]).startswith("dev_"):
        return [line, "kfd kfd: " + formats.sample_line([*message[:1], "pr_info", *message[2:]])]
    return [line]


def _read_by_rules(series: str) -> list[str]:
    """Every format of the series that a rule reads, as lines."""
    return [line for m in formats.kernel(series)["messages"] for line in _lines(m) if match(line)]


def _padded(lines: list[str]) -> list[str]:
    """Enough lines for scan to take the big-log path."""
    return [*lines, *[NOISE] * (SMALL + 1 - len(lines))] if len(lines) <= SMALL else lines


@pytest.mark.parametrize("series", SERIES)
def test_a_big_log_of_each_series_shows_every_format_a_rule_reads(series: str) -> None:
    """After the series' banner, and with no banner at all, the big-log path (a text, and a list of lines)
    finds every event the rules find on each line by itself."""
    read = _read_by_rules(series)
    assert len(read) > 100, "the generated data holds the formats the rules read"
    for head in ([_banner(series)], []):
        lines = _padded([*head, *read])
        expected = [(e.rule, number) for number, line in enumerate(lines, 1) for e in match(line, number)]
        _, events = scan("\n".join(lines))
        assert [(e.rule, e.line) for e in events] == expected
        _, events = scan(lines)
        assert [(e.rule, e.line) for e in events] == expected


@pytest.mark.parametrize("series", SERIES)
def test_the_unprefixed_words_are_needed_exactly_before_6_1(series: str) -> None:
    """Series from PREFIXED_SINCE on print every message a rule reads with a kernel prefix; older ones print
    some without, and each of OLD_KERNEL_WORDS is the only word of the search in one of those."""
    bare = [line for line in _read_by_rules(series) if not any(a in line for a in KERNEL_ANCHORS)]
    if _version(series) >= PREFIXED_SINCE:
        assert bare == []
        return
    assert all(any(w in line for w in OLD_KERNEL_WORDS) for line in bare), bare
    for word in OLD_KERNEL_WORDS:
        assert any([w for w in OLD_KERNEL_WORDS if w in line] == [word] for line in bare), word


def test_the_series_read_span_both_sides_of_6_1() -> None:
    """The two tests above say something only if the data holds a series on each side."""
    assert min(map(_version, SERIES)) < PREFIXED_SINCE <= max(map(_version, SERIES))
    assert PREFIXED_SINCE in map(_version, SERIES)


# Lines of the real reports whose prefix the paste lost (a line wrapped by the forum, a grep that cut it):
# a pasted text is read line by line, where the terms find them; a big log keeps its prefixes.
CUT = {
    "080-vegam-initramfs-firmware-wrapped-lines.txt": {"sw_init of IP block <gfx_v8_0> failed -2"},
    "255-imac20-1-navi14-smu-dpm-uclk-init-failed-62.txt": {
        "Failed to setup smc hw!", "hw_init of IP block <smu> failed -62", "Fatal error during GPU init",
    },
    # AMD's answer quotes the kernel's line in markdown bold, without its prefix
    "704-mi50-no-longer-detected-uncorrectable-error-hw-failure-rma.txt": {"**Fatal error during GPU init**"},
    # an issue form's code block of kernel messages copied without their prefixes
    # AMD's answer names the MES failure in a sentence, as prose
    "575-strix-halo-gfx1151-comfyui-mes-suspend-timeout-page-faults-known-issue-rocm-nightly.txt": {
        "I think this might be a dupe of [5151](https://github.com/ROCm/ROCm/issues/5151) or [5190](https://github.com/ROCm/ROCm/issues/5590). When looking in dmesg, I'm seeing similar `MES failed to respond to msg=REMOVE_QUEUE` entries. Probably the rocm-smi program getting called at a bad time during the HIP/MES crash. If it looks the same, this can probably be closed. If you any other sample logs/dmesg/etc would be helpful, please let me know.",
    },
    "547-invokeai-r9700-kernel-7.0-lockup-timeout-2s-ring-gfx-timeout-fine-on-6.17.txt": {
        "Starting gfx_0.0.0 ring reset", "Ring gfx_0.0.0 reset succeeded",
    },
}  # fmt: skip


def _reports() -> list[Path]:
    return sorted(p for p in (TOP / "tests/data/real-reports").glob("*.txt"))


@pytest.mark.parametrize("path", _reports(), ids=lambda p: p.name[:40])
def test_a_real_report_as_a_big_log_shows_what_its_lines_show(path: Path) -> None:
    """Each real report's text, padded to a big log, gives the events its lines give one by one (4.x to 7.x
    kernels, journals and dmesg), but for the lines the paste cut from their prefix."""
    text = path.read_text(encoding="utf-8").split("\n# ---\n", 1)[1]
    lines = _padded(text.split("\n"))
    cut = CUT.get(path.name, set())
    expected = [(e.rule, n) for n, line in enumerate(lines, 1) if line.strip() not in cut for e in match(line, n)]
    _, events = scan("\n".join(lines))
    assert [(e.rule, e.line) for e in events] == expected


def test_cut_lines_are_in_their_reports() -> None:
    for name, cut in CUT.items():
        text = (TOP / "tests/data/real-reports" / name).read_text(encoding="utf-8")
        assert all(line in text.split("\n") for line in cut), name
        assert all(not any(a in line for a in kernellog.DEFAULT.alternatives) for line in cut), name
