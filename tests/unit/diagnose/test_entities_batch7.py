"""Issue 36, batch 7: GPUs named by their processor, versioned support of the builds programs bundle, prose that
states support in other sentence shapes, target listings that are not the GPU, and device lines of a compose file.

Each text is written for the class of failure, not copied from a report: the batch-7 reports (501-510, in
tests/data/real-reports once their fix is in) are the cases that showed each class missing.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.knowledge import torchwheels
from kfdguard.verdict import Finding


def _codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def _finding(text: str, code: str) -> Finding:
    return next(f for f in diagnose_text(text).findings if f.code == code)


# --- a PyTorch wheel's own rocBLAS carries files for the wheel's targets only ------------------------------------

_WHEEL_FAILS = (
    "posted 2024-03-10\n"
    "My RX 7700 XT shows up in rocminfo, but loading a model in the web UI gives\n"
    "rocBLAS error: Cannot read /home/me/app/venv/lib/python3.10/site-packages/torch/lib/rocblas/library/"
    "TensileLibrary.dat: No such file or directory\n"
)


def test_a_wheels_rocblas_without_the_gpus_files_is_the_build() -> None:
    found = _finding(_WHEEL_FAILS, "userspace-target-unsupported")
    assert "gfx1101" in found.message and "wheel" in found.message


def test_an_override_of_the_same_generation_is_then_the_workaround_not_wrong() -> None:
    text = _WHEEL_FAILS + "Someone suggested HSA_OVERRIDE_GFX_VERSION=11.0.0 for now.\n"
    codes = _codes(text)
    assert "userspace-target-unsupported" in codes
    assert "env-override-wrong" not in codes


def test_another_generations_override_stays_wrong_beside_a_wheel() -> None:
    text = _WHEEL_FAILS + "I also have HSA_OVERRIDE_GFX_VERSION=10.3.0 in my .bashrc.\n"
    assert "env-override-wrong" in _codes(text)


def test_a_wheel_dated_after_the_lists_read_is_not_judged_by_them() -> None:
    text = _WHEEL_FAILS.replace("2024-03-10", "2025-06-10")
    assert "userspace-target-unsupported" not in _codes(text)


def test_a_system_rocblas_is_judged_by_rocms_own_lists() -> None:
    text = _WHEEL_FAILS.replace(
        "/home/me/app/venv/lib/python3.10/site-packages/torch/lib/rocblas", "/opt/rocm/lib/rocblas"
    )
    assert "userspace-target-unsupported" not in _codes(text)


def test_a_target_the_wheels_carry_is_not_blamed_on_the_wheel() -> None:
    text = _WHEEL_FAILS.replace("RX 7700 XT", "RX 7900 XTX")
    assert "userspace-target-unsupported" not in _codes(text)


def test_wheel_eras_cite_their_commits() -> None:
    for era in torchwheels.WHEEL_ERAS:
        assert era.repository and era.paths and era.commits
        assert all(len(c) == 40 for c in era.commits)
        assert "gfx1101" not in era.targets and "gfx1102" not in era.targets
    # gfx1100 joined the lists on 2023-05-23 (3237101a), gfx942 on 2023-12-22 (b9d2b93c)
    assert [("gfx1100" in era.targets, "gfx942" in era.targets) for era in torchwheels.WHEEL_ERAS] == [
        (False, False),
        (True, False),
        (True, True),
    ]
    assert [era.until for era in torchwheels.WHEEL_ERAS] == sorted(era.until for era in torchwheels.WHEEL_ERAS)


def test_a_wheel_dated_before_gfx1100_joined_the_lists_lacks_it() -> None:
    text = _WHEEL_FAILS.replace("posted 2024-03-10", "posted 2023-04-02").replace("RX 7700 XT", "RX 7900 XTX")
    found = _finding(text, "userspace-target-unsupported")
    assert "gfx1100" in found.message and "2023-05-22" in found.message


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/usr/lib/python3/dist-packages/torch/lib/rocblas/library/TensileLibrary.dat", True),
        ("C:\\Users\\a\\venv\\Lib\\site-packages\\torch\\lib\\rocblas\\library\\TensileLibrary.dat", True),
        ("/opt/rocm/lib/rocblas/library/TensileLibrary.dat", False),
    ],
)
def test_wheel_paths(path: str, expected: bool) -> None:
    assert torchwheels.wheel_path(path) is expected


# --- support denied in other sentence shapes: a question, an apposition, "this device", "no support ... for" -------


@pytest.mark.parametrize(
    "told",
    [
        "Why is my gfx1036 not supported by the libraries?",
        "Is the gfx1036 still not supported?",
        "That laptop has a gfx1036 iGPU, not officially supported.",
        "The gfx1036 graphics, sadly not supported, is what I have.",
        "I found that PyTorch does not support this device (gfx1036).",
        "There is no support in any of the ROCm libraries for this GPU (gfx1036).",
        "There isn't any plan to officially support gfx1036 in the libraries.",
        "AMD has no plans to support the gfx1036 iGPU.",
    ],
)
def test_support_denied_in_other_shapes_is_read(told: str) -> None:
    found = _finding(f"{told}\nrocBLAS and PyTorch fail on it.\n", "userspace-target-unsupported")
    assert "gfx1036" in found.message


@pytest.mark.parametrize(
    "told",
    [
        "Is the gfx1036 supported now?",  # a question, no denial
        "My gfx1100 is not supported? It runs fine for me.",  # a target with code: nothing to find
        "There is no support ticket for this GPU (gfx1036) yet, it works with the override.",
    ],
)
def test_near_misses_of_support_denied(told: str) -> None:
    assert "userspace-target-unsupported" not in _codes(f"{told}\n")


# --- a listing of targets (one a line, each with a value) is not the GPU -----------------------------------------


def test_a_per_target_listing_names_no_gpu() -> None:
    text = (
        "My GPU is a gfx1031, so I counted what the sources have for each target:\n"
        "gfx1030: 140 matches\n"
        "gfx1031: 0 matches\n"
        "gfx1100: 121 matches\n"
        "A maintainer said to try HSA_OVERRIDE_GFX_VERSION=10.3.0 meanwhile.\n"
    )
    # the override is of the GPU's own generation; gfx1100 of the listing is not a GPU it could be wrong for
    assert "env-override-wrong" not in _codes(text)


def test_a_single_target_with_a_value_is_still_the_gpu() -> None:
    text = "rocminfo says\ngfx1100: my card\nand I set HSA_OVERRIDE_GFX_VERSION=10.3.0 as a blog said.\n"
    assert "env-override-wrong" in _codes(text)


# --- a desktop Ryzen's iGPU, when the text names the processor as the GPU ----------------------------------------

_TENSILE = "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory\n"


@pytest.mark.parametrize(
    "named",
    [
        "### GPU\n\nRyzen 7 7700\n",
        "GPU: AMD Ryzen 9 9950X (integrated graphics)\n",
        "I only have the iGPU of my Ryzen 5 7600X.\n",
    ],
)
def test_a_desktop_ryzen_named_as_the_gpu_is_its_gfx1036(named: str) -> None:
    text = named + _TENSILE
    found = _finding(text, "userspace-target-unsupported")
    assert "gfx1036" in found.message


@pytest.mark.parametrize(
    "named",
    [
        "CPU: Ryzen 9 7950X\n",  # the processor, not named as the GPU: a card may compute
        "### CPU\n\nRyzen 7 7700X\n\n### GPU\n\nRX 7900 XTX\n",
        "GPU: AMD 7900 XTX\n",  # a Radeon, not a Ryzen
    ],
)
def test_a_desktop_ryzen_not_named_as_the_gpu_implies_nothing(named: str) -> None:
    found = [f for f in diagnose_text(named + _TENSILE).findings if f.code == "userspace-target-unsupported"]
    assert not any("gfx1036" in f.message for f in found)


# --- /dev/kfd left out of a container's device list: commented out, or added as the fix -------------------------


@pytest.mark.parametrize(
    "definition",
    [
        'services:\n  app:\n    devices:\n      # - "/dev/kfd:/dev/kfd"\n      - "/dev/dri:/dev/dri"\n',
        "    devices:\n#      - /dev/kfd\n      - /dev/dri\n",
        "docker run \\\n  # --device=/dev/kfd \\\n  --device=/dev/dri rocm/pytorch\n",
    ],
)
def test_a_commented_out_kfd_device_entry_leaves_the_container_without_it(definition: str) -> None:
    text = f"My compose file:\n{definition}The app exits: no GPU found.\n"
    assert "device-node-missing" in _codes(text)


def test_the_kfd_device_entry_added_as_the_fix() -> None:
    text = (
        "It said no GPU was found. Adding these devices to the service made it work:\n"
        "```\n    devices:\n      - /dev/kfd:/dev/kfd\n      - /dev/dri:/dev/dri\n```\n"
    )
    assert "device-node-missing" in _codes(text)


@pytest.mark.parametrize(
    "text",
    [
        # the entry present and nothing told about it: a working definition
        "    devices:\n      - /dev/kfd:/dev/kfd\n      - /dev/dri:/dev/dri\nIt runs on the RX 7900 XTX.\n",
        # a comment about the entry, not the entry commented out
        '    devices:\n      - "/dev/kfd:/dev/kfd" # remove this line if running on non ROCm\n',
        # added, and it still does not work
        "Adding /dev/kfd did not make it work:\n      - /dev/kfd:/dev/kfd\n",
    ],
)
def test_near_misses_of_the_kfd_device_entry(text: str) -> None:
    assert "device-node-missing" not in _codes(text)
