"""Causes named by prose and settings (assess/app_rules.py, second half): a wrong HSA_OVERRIDE_GFX_VERSION,
/dev/kfd passed through Docker Desktop or WSL, "not in the render group", a kernel version named in prose,
"my GPU is not supported", and kernel log lines a mail client wrapped.

The texts are written from the causes, in words and GPUs the corpus files do not use, with the near
misses each rule must leave alone.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import _unwrapped, read_text
from kfdguard.knowledge.appformats import gfx_major, override_target, rx_target
from tests.fuzzing import examples
from tests.paths import TOP


def codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


@pytest.mark.parametrize(
    ("value", "target"),
    [("10.3.0", "gfx1030"), ("9.0.10", "gfx90a"), ("12.0.1", "gfx1201"), ("11.5.1", "gfx1151"), ("9.0.0", "gfx900")],
)
def test_override_values_name_their_target(value: str, target: str) -> None:
    assert override_target(value) == target


@pytest.mark.parametrize("value", ["10.3", "gfx1030", "9.0.16", "x.y.z"])
def test_override_values_that_name_no_target(value: str) -> None:
    assert override_target(value) is None


def test_gfx_generations() -> None:
    assert [gfx_major(g) for g in ("gfx803", "gfx90a", "gfx1031", "gfx1201")] == [8, 9, 10, 12]


@pytest.mark.parametrize(
    "text",
    [
        "My RX 6750 XT crashes the desktop with export HSA_OVERRIDE_GFX_VERSION=11.0.0 in my launcher",
        "Radeon VII here, and I still had HSA_OVERRIDE_GFX_VERSION=10.3.0 in /etc/environment",
        "Environment=HSA_OVERRIDE_GFX_VERSION=9.0.0\nthe Radeon 8060S then falls back to the CPU",
        # A supported GPU given another target of its own generation: the override only swaps code in.
        "RX 7900 XTX, HSA_OVERRIDE_GFX_VERSION=11.0.1 set by the installer script",
    ],
)
def test_an_override_of_another_generation_or_on_a_supported_gpu_is_wrong(text: str) -> None:
    assert "env-override-wrong" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "RX 6700 XT works with HSA_OVERRIDE_GFX_VERSION=10.3.0",  # the neighbour of its own generation
        "RX 7900 XTX with HSA_OVERRIDE_GFX_VERSION=11.0.0 (its own target: unnecessary, not wrong)",
        "I set HSA_OVERRIDE_GFX_VERSION=10.3.0 and it still fails",  # no GPU named: nothing to compare
    ],
)
def test_a_fitting_or_unjudgeable_override_is_not_called_wrong(text: str) -> None:
    assert "env-override-wrong" not in codes(text)


def test_a_wrong_override_is_judged_by_the_gpu_not_by_what_rocminfo_reports_under_it() -> None:
    # Under the override rocminfo reports the claimed target; the Marketing Name still names the GPU.
    text = (
        "HSA_OVERRIDE_GFX_VERSION=10.3.0\nAgent 2\n*******\n  Name:                    gfx1030\n"
        "  Marketing Name:          AMD Instinct MI210\n  Device Type:             GPU\n"
    )
    assert "env-override-wrong" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "I use Docker Desktop on Fedora 40.\n$ docker run -it --device=/dev/kfd --device=/dev/dri rocm/rocm-terminal",
        "inside WSL2 Ubuntu:\ndocker run --device /dev/kfd --group-add video rocm/pytorch",
        "services:\n  ollama:\n    devices:\n      - /dev/kfd\n      - /dev/dri\n(on Docker Desktop)",
    ],
)
def test_kfd_passed_through_a_host_without_one(text: str) -> None:
    found = codes(text)
    assert "host-without-kfd" in found
    assert "user-not-in-group" not in found


@pytest.mark.parametrize(
    "text",
    [
        "$ docker run -it --device=/dev/kfd --device=/dev/dri rocm/rocm-terminal",  # a Linux host: not said
        "I dual boot Windows 10.\n$ docker run --device=/dev/kfd rocm/pytorch",  # the other disk's OS
        "Docker Desktop is installed but I start it with podman run --device /dev/dri only",
    ],
)
def test_no_foreign_host_without_both_the_host_and_kfd_passed(text: str) -> None:
    assert "host-without-kfd" not in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "rocminfo failed until I noticed my account wasn't in the video group",
        "The service user is not a member of the `render` group, so llama-server falls back to CPU",
        "turns out I'm not in the render group on this box",
    ],
)
def test_prose_that_the_user_lacks_the_group(text: str) -> None:
    assert "user-not-in-group" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "I am in the render group and it still fails",
        "user is not in the render group?\nuid=1000(ann) gid=1000(ann) groups=1000(ann),44(video),992(render)",
        "the docker group is not in the sudoers file",
    ],
)
def test_group_prose_that_says_nothing_missing(text: str) -> None:
    assert "user-not-in-group" not in codes(text)


def test_a_kernel_named_in_prose_older_than_the_gpu() -> None:
    text = "My RX 7900 XTX is not detected by rocminfo on Ubuntu 22.04 with kernel 5.15."
    assert "kernel-too-old" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "My RX 7900 XTX is not detected on kernel 6.8.",  # new enough
        "RX 7900 XTX: it failed on kernel 5.15 and works on kernel 6.5",  # two kernels: which runs?
        "My RX 7900 XTX is not detected.\n$ uname -r\n5.15.0-91-generic",  # uname rules, not prose
    ],
)
def test_prose_kernels_that_decide_nothing(text: str) -> None:
    found = codes(text)
    if "uname" in text:
        assert "kernel-too-old" in found  # read from uname by the kernel rules, as before
    else:
        assert "kernel-too-old" not in found


def test_prose_that_the_gpu_is_not_supported() -> None:
    found = codes("ollama keeps using the CPU; apparently my RX 6600 is not supported")
    assert "userspace-target-unsupported" in found


@pytest.mark.parametrize(
    "text",
    [
        "my RX 7900 XTX is not supported on Debian 12?",  # gfx1100 has prebuilt code: something else
        "GC IP 0b0004 is not supported in kfd",  # the kernel's wording, for the log rules
        "RX 6600 here.\nScreen sharing is not supported by this compositor.",  # the sentence is not about a GPU
    ],
)
def test_unsupported_prose_near_misses(text: str) -> None:
    assert "userspace-target-unsupported" not in codes(text)


@pytest.mark.parametrize(
    ("text", "gfx"),
    [("my AMD 6800M laptop", "gfx1031"), ("Radeon 7900XTX", "gfx1100"), ("AMD 6700S", "gfx1032")],
)
def test_retail_numbers_without_rx(text: str, gfx: str) -> None:
    assert [g for g, _ in read_text(text).prose_gfx] == [gfx]


def test_cpu_names_are_not_gpus() -> None:
    assert read_text("AMD Ryzen 5 5600 and an AMD 5600G").prose_gfx == []
    assert rx_target(6800, "m") == "gfx1031" and rx_target(6800) == "gfx1030"


def test_wrapped_kernel_lines_are_joined_for_the_log_rules() -> None:
    text = (
        "[    3.100000] amdgpu 0000:03:00.0: Direct firmware load for\n"
        "amdgpu/polaris11_mc.bin failed with error -2\n"
        "[    3.200000] amdgpu 0000:03:00.0: Fatal error during GPU init\n"
    )
    assert "firmware-missing" in codes(text)


@pytest.mark.parametrize(
    "lines",
    [
        ["[    1.000000] a", "b", "c", "d"],
        ["[    1.000000] a", "  indented", "[    2.000000] b", ""],
        ["prose", "[    1.000000] a", "", "more prose"],
        ["[    1.000000] a", "- list item", "$ prompt", "> quote"],
    ],
)
def test_unwrapping_keeps_the_line_count_and_joins_only_bare_continuations(lines: list[str]) -> None:
    out = _unwrapped(lines)
    assert len(out) == len(lines)
    for before, after in zip(lines, out, strict=True):
        # A line is either kept, emptied (it moved up), or extended by what followed it.
        assert after in ("", before) or after.startswith(before + " ")
    for i, line in enumerate(lines):
        if line[:1] in (" ", "-", "$", ">", "[") or not line:
            assert out[i] == line or out[i].startswith(line)


def _diagnosis(text: str, remember: bool) -> tuple[object, ...]:
    from kfdguard.assess.rules import reason

    obs = read_text(text, remember=remember)
    established, findings, unknown, _overruled = reason(obs)
    return (sorted(obs.kinds), established, [(f.code, f.message, f.gpu, f.blocked_by) for f in findings], unknown)


def _corpus_texts() -> list[str]:
    corpus = TOP / "tests" / "data" / "real-reports"
    return [p.read_text(encoding="utf-8").partition("\n# ---\n")[2] for p in sorted(corpus.glob("*.txt"))]


def _retimed(text: str, shift: int) -> str:
    """The same text with other timestamps: what a long paste repeats."""
    import re

    def stamp(m: re.Match[str]) -> str:
        return f"[{float(m[1]) + shift:12.6f}]"

    return re.sub(r"^\[\s*(\d+\.\d+)\]", stamp, text, flags=re.M)


@pytest.mark.parametrize("index", range(0, 86, 3))
def test_skipping_repeated_lines_never_changes_the_diagnosis(index: int) -> None:
    """The findings, what is established and what stays unknown are the same whether repeated lines are
    skipped or read (evidence may cite the first of two equal lines instead of the last)."""
    texts = _corpus_texts()
    index %= len(texts)
    # A corpus text, then another one, then the first again with other timestamps, then the second again:
    # repetitions in every position (inside rocminfo blocks, after uname, after groups).
    first, second = texts[index], texts[(index + 7) % len(texts)]
    text = "\n".join([first, second, _retimed(first, 1000), second, first])
    assert _diagnosis(text, True) == _diagnosis(text, False)


_CORPUS_LINES = sorted({line for text in _corpus_texts() for line in text.split("\n")})


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(0, len(_CORPUS_LINES) - 1), min_size=1, max_size=60), st.integers(0, 3),
       st.sampled_from(["", "[    1.000000] ", "Dec 01 10:00:05 box kernel: ", "> "]))  # fmt: skip
def test_repeated_lines_in_any_order_never_change_the_diagnosis(picks: list[int], times: int, stamp: str) -> None:
    """Lines of real reports in any order, repeated exactly and with another stamp: skipping what was
    seen (by the line as it is or without its stamp) gives what reading every line gives."""
    lines = [_CORPUS_LINES[i] for i in picks]
    text = "\n".join(lines + [stamp + line for line in lines] * times + lines)
    assert _diagnosis(text, True) == _diagnosis(text, False)
