"""Module parameter values: what kfdguard accepts is what the kernel accepts (issue 36 item 5).

The kernel's side, read in Debian's linux-source 6.1.192 and 6.12.118: kernel/params.c
(param_set_int = kstrtoint(val, 0), param_set_uint = kstrtouint(val, 0)), lib/kstrtox.c,
amdgpu_drv.c (the three are module_param(..., int, 0444)) and the amdkfd code that reads them:
kfd_device.c kfd_cwsr_init() "if (cwsr_enable && ...)", kfd_events.c "if (send_sigterm)",
kfd_device.c "if (hws_max_conc_proc >= 0) min((u32)hws_max_conc_proc, vmid_num_kfd) else vmid_num_kfd".
A parameter whose value the kernel cannot parse makes load_module() fail ("invalid for parameter").
"""

from __future__ import annotations

import pytest

from kfdguard.knowledge.generated import KERNELS
from kfdguard.knowledge.params import KFD_PARAMS, kernel_int


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
