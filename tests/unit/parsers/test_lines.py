"""lines_with, kconfig_symbol and module_lines give what a plain pass over every line gives."""

from __future__ import annotations

import random

import pytest

from kfdguard.parsers.kconfig import kconfig_symbol, parse_kconfig
from kfdguard.parsers.lines import lines_with
from kfdguard.probe.system_info import module_lines

# Pieces that make lines hard to cut: every end str.splitlines knows, "\r\n" as one end, dashes.
PIECES = ["a", "b", "ab", "-", "_", "\n", "\r", "\r\n", "\x0b", "\x1c", "\x85", "\u2028", " ", "CONFIG_HSA_AMD",
          "=y", "# ", " is not set", '"m"', "amdgpu.ko", "amd-gpu.ko.zst", "kernel/", ":"]  # fmt: skip
NEEDLES = ["a", "ab", "b", "", "\n", "a\nb", "x", "CONFIG_HSA_AMD", "amdgpu.ko", "amd_gpu.ko", "\r"]


def _plain(text: str, needles: tuple[str, ...], seen: str) -> list[str]:
    pairs = zip(text.splitlines(), seen.splitlines(), strict=True)
    return [line for line, look in pairs if any(n in look for n in needles)]


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_lines_with_is_the_plain_filter() -> None:
    rng = random.Random(7)
    for text in _texts(1, 4000):
        needles = tuple(rng.sample(NEEDLES, rng.randint(1, 3)))
        assert lines_with(text, needles) == _plain(text, needles, text), (text, needles)
        seen = text.replace("-", "_")
        assert lines_with(text, needles, seen_as=seen) == _plain(text, needles, seen), (text, needles)


def test_lines_with_refuses_a_text_to_search_of_another_length() -> None:
    with pytest.raises(ValueError, match="length"):
        lines_with("a-b", ("a",), seen_as="ab")


def test_one_symbol_is_what_the_whole_parse_says() -> None:
    for text in _texts(2, 4000):
        for name in ("CONFIG_HSA_AMD", "CONFIG_X"):
            assert kconfig_symbol(text, name) == parse_kconfig(text)[0].get(name), (text, name)
    config = "CONFIG_HSA_AMD=y\n# CONFIG_HSA_AMD_P2P is not set\nCONFIG_HSA_AMD_SVM=y\n# CONFIG_HSA_AMD is not set\n"
    assert kconfig_symbol(config, "CONFIG_HSA_AMD") == "n"  # the last one, as the whole parse has it


def test_module_lines_hold_every_line_that_names_the_module() -> None:
    dep = (
        "kernel/drivers/gpu/drm/drm.ko.zst:\n"
        "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst: kernel/drivers/gpu/drm/drm.ko.zst\n"
        "updates/dkms/amdgpu.ko.xz:\n"
        "kernel/drivers/net/amd-xgbe.ko:\n"
        "extra/amd-kfd.ko:\n"
    )
    assert module_lines(dep, ("amdgpu", "amd_kfd")) == [*dep.splitlines()[1:3], "extra/amd-kfd.ko:"]
    assert module_lines(dep, ("amdkfd",)) == []
    for text in _texts(3, 2000):
        assert module_lines(text, ("amdgpu", "amd_gpu")) == _plain(
            text, ("amdgpu.ko", "amd_gpu.ko"), text.replace("-", "_")
        ), text
