"""Module parameter values: what kfdguard accepts is what the kernel accepts (issue 36 item 5).

The kernel's side, read in Debian's linux-source 6.1.192 and 6.12.118: kernel/params.c
(param_set_int = kstrtoint(val, 0), param_set_uint = kstrtouint(val, 0)), lib/kstrtox.c,
amdgpu_drv.c (the three are module_param(..., int, 0444)) and the amdkfd code that reads them:
kfd_device.c kfd_cwsr_init() "if (cwsr_enable && ...)", kfd_events.c "if (send_sigterm)",
kfd_device.c "if (hws_max_conc_proc >= 0) min((u32)hws_max_conc_proc, vmid_num_kfd) else vmid_num_kfd".
A parameter whose value the kernel cannot parse makes load_module() fail ("invalid for parameter").
"""

from __future__ import annotations

import itertools

import pytest

from kfdguard.knowledge.generated import KERNELS
from kfdguard.knowledge.params import KFD_PARAMS, kernel_int, taint_judgement, taints


@pytest.mark.parametrize(
    ("name", "value"),
    [
        # Any non-zero value is "on" for these two: the kernel tests them as truth values.
        ("cwsr_enable", "2"),
        ("cwsr_enable", "-1"),
        ("send_sigterm", "2"),
        ("send_sigterm", "-1"),
        # Any negative value means "all of KFD's VMIDs"; any larger one is capped at them.
        ("hws_max_conc_proc", "-2"),
        ("hws_max_conc_proc", "-2147483648"),
        ("hws_max_conc_proc", "0"),
        ("hws_max_conc_proc", "64"),
        ("hws_max_conc_proc", "2147483647"),
        # kstrtoint's base 0: octal after a leading 0, hex after 0x, a leading +, one trailing newline.
        ("cwsr_enable", "010"),
        ("send_sigterm", "0x1"),
        ("hws_max_conc_proc", "+4"),
        ("cwsr_enable", "0\n"),
    ],
)
def test_a_value_the_kernel_accepts_is_not_flagged(name: str, value: str) -> None:
    assert KFD_PARAMS[name].check(value) is None


@pytest.mark.parametrize("name", ["cwsr_enable", "send_sigterm", "hws_max_conc_proc"])
def test_the_three_are_ints_in_every_series_read(name: str) -> None:
    # The premise of the table: modinfo -F parmtype of Debian's amdgpu.ko, every series generated.
    assert {series: k["params"][name] for series, k in KERNELS.items()} == dict.fromkeys(KERNELS, "int")


@pytest.mark.parametrize(
    "value",
    [
        "2147483648",  # does not fit an int: -ERANGE
        "-2147483649",
        "08",  # octal: 8 is no digit
        "0o7",  # Python's spelling, not the kernel's
        "1_000",
        " 1",
        "1 ",
        "0x",
        "-+1",
        "",
        "yes",
    ],
)
def test_a_value_the_kernel_refuses_is_flagged(value: str) -> None:
    for name in ("cwsr_enable", "send_sigterm", "hws_max_conc_proc"):
        assert KFD_PARAMS[name].check(value) is not None, (name, value)


def test_kernel_int_reads_as_kstrtoint_and_kstrtouint() -> None:
    assert kernel_int("010") == 8 and kernel_int("0x1F") == 31 and kernel_int("-0x10") == -16
    assert kernel_int("-2147483648") == -(2**31) and isinstance(kernel_int("2147483648"), str)
    assert kernel_int("4294967295", signed=False) == 2**32 - 1
    assert isinstance(kernel_int("4294967296", signed=False), str)
    assert isinstance(kernel_int("-1", signed=False), str)  # kstrtoull has no "-"
    assert isinstance(kernel_int("7\n\n"), str)  # one newline only


def test_choices_and_bounds_still_apply_after_the_kernel_parse() -> None:
    # sched_policy: kfd_init() refuses anything but 0..2; written in octal it is still 1.
    assert KFD_PARAMS["sched_policy"].check("01") is None
    assert KFD_PARAMS["sched_policy"].check("3") is not None
    assert KFD_PARAMS["debug_mask"].check("-1") is not None  # uint


# --- which options taint which kernel (module_param_unsafe), between the series read -------------


def _v(series: str) -> tuple[int, int]:
    major, minor = series.split(".")
    return int(major), int(minor)


def _changed() -> list[tuple[str, str, str]]:
    """(name, older series, newer series) for each KFD option whose declaration differs in two neighbours read."""
    read = sorted(KERNELS, key=_v)
    return [
        (name, a, b)
        for a, b in itertools.pairwise(read)
        for name in KFD_PARAMS
        if (name in KERNELS[a]["unsafe"]) != (name in KERNELS[b]["unsafe"])
    ]


def test_the_sources_read_show_a_change_between_6_12_and_7_2() -> None:
    # The premise of the audit's claim (issue 36 item 5): 6.12 plain, 7.2 module_param_unsafe.
    assert ("sched_policy", "6.12", "7.2") in _changed()


def test_a_kernel_between_two_series_that_differ_is_not_judged_by_the_older() -> None:
    for name, older, newer in _changed():
        (a_major, a_minor), (b_major, b_minor) = _v(older), _v(newer)
        between = (a_major, a_minor + 1) if (a_major, a_minor + 1) < (b_major, b_minor) else (b_major, b_minor - 1)
        tainting, why = taint_judgement(name, between)
        assert tainting is None, (name, between)
        assert older in why and newer in why and "not read" in why
        # At the series read, the answer is theirs.
        assert taints(name, _v(older)) is (name in KERNELS[older]["unsafe"])
        assert taints(name, _v(newer)) is (name in KERNELS[newer]["unsafe"])
    assert taints("sched_policy", (6, 13)) is None and taints("sched_policy", (7, 1)) is None


def test_a_kernel_between_two_series_that_agree_is_judged_by_them() -> None:
    # Ubuntu's 6.8: 6.1 and 6.12 both declare sched_policy with plain module_param.
    assert "sched_policy" not in KERNELS["6.1"]["unsafe"] and "sched_policy" not in KERNELS["6.12"]["unsafe"]
    assert taint_judgement("sched_policy", (6, 8)) == (False, "plain module_param in 6.1, plain module_param in 6.12")
    # cwsr_enable is plain in every series read, so 6.13..7.1 are judged (not tainting).
    assert not any(name == "cwsr_enable" for name, _, _ in _changed())
    assert taints("cwsr_enable", (6, 15)) is False


def test_beyond_the_newest_series_and_before_the_oldest() -> None:
    newest = max(KERNELS, key=_v)
    after = (_v(newest)[0], _v(newest)[1] + 5)
    assert taint_judgement("sched_policy", after) == (True, f"module_param_unsafe in {newest}")
    oldest = min(KERNELS, key=_v)
    assert taints("sched_policy", (_v(oldest)[0], _v(oldest)[1] - 1)) is None  # nothing read at or below it
    assert taints("sched_policy", None) is None
