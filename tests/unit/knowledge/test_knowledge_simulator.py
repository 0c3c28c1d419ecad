"""Every amdgpu/KFD line of every bundled simulated machine's kernel log is a real kernel message.

"Real" = it matches a format string extracted from the Debian kernel sources
(kfdguard/knowledge/data) of the machine's kernel series or, for a series not
read, of the nearest series read on either side. A simulator that invents
lines trains the log rules on fiction.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from kfdguard.knowledge import formats
from kfdguard.simulate import bundled
from tests.paths import TESTS

_SPEC = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?(?:p[A-Za-z]*|[diouxXcs])")
# Messages printed outside drivers/gpu/drm/amd that the generator reads too (driver core,
# firmware loader) or not at all: DRM core's "Initialized" line (drm_drv.c) and the
# module loader's "unknown parameter" (kernel/params.c) are checked by shape only.
OUTSIDE = (
    re.compile(r"^\[drm\] Initialized amdgpu \d+\.\d+\.\d+ \d{8} for \S+ on minor \d+$"),
    re.compile(r"^\w+: unknown parameter '[^']+' ignored$"),
)


def _regex(message: list[Any]) -> re.Pattern[str]:
    _level, macro, prefix, fmt, _file, _line = message
    parts = _SPEC.split(str(prefix) + str(fmt))
    body = ".*?".join(re.escape(p.replace("%%", "%")) for p in parts)
    device = r"(?:(?:amdgpu|kfd) \S+: )" + ("?" if not str(macro).startswith(("dev_", "drm_", "DRM_DEV")) else "")
    return re.compile(f"^{device}{body}$")


@functools.cache
def _patterns(series: str) -> list[re.Pattern[str]]:
    return [_regex(m) for m in formats.kernel(series)["messages"]]


ATTESTED = TESTS / "data"


def _attested(version: tuple[int, ...]) -> list[re.Pattern[str]]:
    """Formats of an unread series from tests/data/kernel-lines-X.Y.txt, each with the real report it is
    copied from; a series without that file fails: a simulator may only say what real kernels say."""
    path = ATTESTED / f"kernel-lines-{version[0]}.{version[1]}.txt"
    assert path.is_file(), f"no source and no attested lines for kernel {version[0]}.{version[1]}: {path}"
    patterns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fmt, source = line.split("\t", 1)
        assert source.startswith("https://") or "Ubuntu Forums" in source, f"{path}: no report named for {fmt!r}"
        parts = _SPEC.split(fmt)
        patterns.append(re.compile("^" + ".*?".join(re.escape(p.replace("%%", "%")) for p in parts) + "$"))
    return patterns


def _bracket(version: tuple[int, int]) -> list[str]:
    read = sorted(formats.series(), key=lambda s: tuple(int(p) for p in s.split(".")))
    exact = [s for s in read if tuple(int(p) for p in s.split(".")) == version]
    if exact:
        return exact
    below = [s for s in read if tuple(int(p) for p in s.split(".")) < version][-1:]
    above = [s for s in read if tuple(int(p) for p in s.split(".")) > version][:1]
    return below + above


def _kernel_lines(root: Path) -> list[str]:
    lines = []
    for path in root.rglob("kmsg"):
        for record in path.read_text(encoding="utf-8").splitlines():
            text = record.split(";", 1)[-1]
            if text.startswith(("[drm", "amdgpu", "kfd")):
                lines.append(text)
    return lines


@pytest.mark.parametrize("name", bundled.names())
def test_simulated_kernel_lines_are_real_formats(name: str, tmp_path: Path) -> None:
    spec = bundled.load(name)
    release = spec.kernel.release
    version = tuple(int(p) for p in release.split("-")[0].split(".")[:2])
    if version < (5, 0):
        # No source older than 5.10 is reachable: real boots of the series are the evidence.
        series = [f"{version[0]}.{version[1]} (attested)"]
        patterns = _attested(version)
    else:
        series = _bracket(version)  # type: ignore[arg-type]
        patterns = [p for s in series for p in _patterns(s)]
    root = bundled.render_bundled(name, tmp_path / "m").path
    invented = [
        line
        for line in _kernel_lines(Path(root))
        if not any(p.match(line) for p in patterns) and not any(o.match(line) for o in OUTSIDE)
    ]
    assert invented == [], f"{name} ({release}, checked against {', '.join(series)}): lines no kernel prints"
    if series == [f"{version[0]}.{version[1]}"]:
        # DRM core prints amdgpu's own KMS_DRIVER_* version: the series' amdgpu_drv.c says which.
        kms = formats.kernel(series[0])["kms"]
        for line in _kernel_lines(Path(root)):
            if line.startswith("[drm] Initialized amdgpu "):
                assert line.split()[3] == kms, line


@pytest.mark.parametrize(("prefix", "expected"), [("psp_13_0_4", "amdgpu/psp_13_0_4_toc.bin"),
                                                  ("psp_13_0_0", "amdgpu/psp_13_0_0_sos.bin")])  # fmt: skip
def test_simulated_firmware_names_are_declared_by_the_module(prefix: str, expected: str) -> None:
    from kfdguard.simulate.kernel import _firmware_name

    assert _firmware_name((6, 1), prefix) == expected
    assert expected in formats.kernel("6.1")["firmware"]


# The outcomes the bundled machines do not show, on a kernel series read exactly.
OUTCOME_CASES = [
    (release, device, outcome)
    for release in ("6.1.0-27-amd64", "6.12.57+deb13-amd64")
    for device, outcome in (
        (0x744C, "added"),
        (0x67DF, "atomics"),
        (0x7550, "not-supported"),
        (0x6810, "not-supported"),
        (0x744C, "firmware"),
        (0x15BF, "firmware"),
        (0x73BF, "init-failed"),
    )
] + [("6.1.0-27-amd64", 0x15BF, "iommu")]


@pytest.mark.parametrize(("release", "device", "outcome"), OUTCOME_CASES)
def test_simulated_outcomes_print_real_formats(release: str, device: int, outcome: str, tmp_path: Path) -> None:
    from kfdguard.simulate.builder import MachineBuilder

    series = ".".join(release.split("-", maxsplit=1)[0].split("+", maxsplit=1)[0].split(".")[:2])
    root = MachineBuilder("outcome").debian12(release).with_gpu(device, outcome=outcome).render(tmp_path / "m").path
    lines = _kernel_lines(Path(root))
    assert lines, "the simulated boot printed no amdgpu line"
    patterns = _patterns(series)
    invented = [
        line for line in lines if not any(p.match(line) for p in patterns) and not any(o.match(line) for o in OUTSIDE)
    ]
    assert invented == [], f"{release} {device:04x} {outcome}: lines no {series} kernel prints"
