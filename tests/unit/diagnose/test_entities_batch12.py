"""Issues 36, batches 11 and 12: rocminfo's module check contradicted by its own output, an account told to need the
render (or video) group, GPU targets attributed in a sentence that names several, --privileged told as what made a
container with /dev/kfd work, and a rootless container told to fail where the rootful one works.

Each text is written for the class of failure, not copied from a report: the batch 11 and 12 reports (904-906,
951 and 957 in staging) are the cases that showed each class missing.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Finding


def _codes(text: str) -> set[str]:
    return {f.code for f in diagnose_text(text).findings}


def _finding(text: str, code: str) -> Finding:
    return next(f for f in diagnose_text(text).findings if f.code == code)


LSPCI_6800 = (
    "03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 [Radeon RX 6800] "
    "[1002:73bf]\n"
)
AGENT_1030 = (
    "*******\nAgent 2\n*******\n  Name:                    gfx1030\n  Marketing Name:          AMD Radeon RX 6800\n"
    "  Vendor Name:             AMD\n  Device Type:             GPU\n"
)


# --- rocminfo's module check, contradicted by its own open of /dev/kfd or a GPU agent -------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # the check fails, the open succeeds (rocminfo goes on after its module line)
        LSPCI_6800
        + "$ rocminfo\nROCk module is NOT loaded, possibly no GPU devices\nAble to open /dev/kfd read-write\n",
        # a libkmod warning before it, and the GPU agent listed
        "$ sudo rocminfo\nlibkmod: ERROR ../libkmod/libkmod-module.c:1931 kmod_module_get_holders: could not open "
        "'/sys/module/foo/holders': No such file or directory\nROCk module is NOT loaded, possibly no GPU devices\n"
        "=====================\nHSA System Attributes\n=====================\nRuntime Version:         1.1\n"
        "==========\nHSA Agents\n==========\n" + AGENT_1030,
        # amdgpu built into the kernel: the module line only, then the agents
        LSPCI_6800
        + "ROCk module is NOT loaded, possibly no GPU devices\n==========\nHSA Agents\n==========\n"
        + AGENT_1030,
    ],
)
def test_the_module_line_contradicted_by_an_open_kfd_is_not_the_cause(text: str) -> None:
    codes = _codes(text)
    assert "module-not-loaded" not in codes
    assert not codes & {"device-node-missing", "kfd-no-gpu-node"}


def test_the_gpu_agent_still_says_kfd_added_it() -> None:
    text = "ROCk module is NOT loaded, possibly no GPU devices\nAble to open /dev/kfd read-write\n" + AGENT_1030
    assert "kfd-ready" in _codes(text)
    assert any("module" in o for o in diagnose_text(text).overruled)


@pytest.mark.parametrize(
    "after",
    [
        "Unable to open /dev/kfd read-write: No such file or directory\n",
        "hsa api call failure at: /src/rocminfo/rocminfo.cc:1306\n",
        "",
    ],
)
def test_the_module_line_without_a_contradiction_keeps_its_meaning(after: str) -> None:
    text = LSPCI_6800 + "$ rocminfo\nROCk module is NOT loaded, possibly no GPU devices\n" + after
    assert _codes(text) & {"module-not-loaded", "device-node-missing"}


def test_unable_to_open_is_not_read_as_able_to_open() -> None:
    text = LSPCI_6800 + "ROCk module is NOT loaded, possibly no GPU devices\nUnable to open /dev/kfd read-write\n"
    assert _codes(text) & {"module-not-loaded", "device-node-missing"}


# --- an account told to need render (or video), or created without it ---------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # an installer's service account created without groups, and the group it needs named
        "The installer creates a service account for fahclient but does not assign it any groups.\n"
        "Ubuntu 20.04 amdgpu drivers require render group access, so the client is unable to access the GPU.\n",
        # the account told to need the group
        "The ollama user needs to be in the render group, otherwise the service cannot access the GPU.\n",
        "jellyfin must be a member of the video group; right now transcoding fails with permission denied on "
        "/dev/dri/renderD128 and /dev/kfd.\n",
        # a title asking to add the service account, and the denial in the body
        "Installer: add the foldingathome user to the render group.\n\nThe GPU slot fails: permission denied.\n",
        # the installer told not to add it
        "The package's postinst doesn't add the ollama user to the video group, so ollama cannot access the GPU.\n",
    ],
)
def test_an_account_told_to_need_the_group_is_not_in_it(text: str) -> None:
    codes = _codes(text)
    assert "user-not-in-group" in codes
    assert not codes & {"device-permissions", "asic-not-supported", "kfd-no-gpu-node"}


@pytest.mark.parametrize(
    "text",
    [
        # the need named, and the person already in it
        "ROCm requires render group membership. I am in the render group and still get permission denied.\n",
        # advice with nothing failing
        "Add the ollama user to the render group after installing.\n",
        # done, not needed
        "I added the ollama user to the render group; it still cannot access the GPU, permission denied.\n",
        # another device's group
        "The scanner needs to be in the lp group, otherwise permission denied.\n",
    ],
)
def test_near_misses_of_an_account_needing_the_group(text: str) -> None:
    assert "user-not-in-group" not in _codes(text)


# --- targets attributed to GPUs in one sentence, and one global override for all of them ---------------------------


@pytest.mark.parametrize(
    "text",
    [
        # os.environ in the program, GPUs attributed with "is"
        "I have a 9060XT and an RX 6600. Since the 9060XT is `gfx1200` it works, but the 6600 is `gfx1032`, so I "
        "override it to `gfx1030`.\nWhen I use `os.environ['HSA_OVERRIDE_GFX_VERSION'] = '10.3.0'` all the GPUs "
        "change to gfx1030 and the 9060XT becomes unusable.\n",
        # targets in brackets after the model numbers
        "My cards: 7800XT (gfx1101) and 6750XT (gfx1031).\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
        "Now the 7800XT crashes.\n",
        # "the card is", with a memory size after the model
        "Two GPUs: a 7900 XTX 24GB (gfx1100) and a 6700 XT 12GB (gfx1031). HSA_OVERRIDE_GFX_VERSION=10.3.0 in "
        "/etc/environment breaks the first one.\n",
    ],
)
def test_a_global_override_on_gpus_of_two_generations_is_wrong(text: str) -> None:
    found = _finding(text, "env-override-wrong")
    assert "HSA_OVERRIDE_GFX_VERSION_" in found.remedy  # the per-GPU form for the GPU that needs it
    assert not _codes(text) & {"env-override-not-applied", "asic-not-supported", "env-visibility-hides-gpu"}


@pytest.mark.parametrize(
    "text",
    [
        # the per-GPU form is what was set: not a global override
        "My cards: 7800XT (gfx1101) and 6750XT (gfx1031).\nexport HSA_OVERRIDE_GFX_VERSION_2=10.3.0\n",
        # a library's targets listed, the GPU of the override's generation
        "rocBLAS has kernels for gfx1030 and gfx1100 only; my RX 6600 is gfx1032 so I use "
        "HSA_OVERRIDE_GFX_VERSION=10.3.0 and it works.\n",
        # a target named as what the override stands for, not as a GPU
        "The closest supported is gfx1030 (not gfx1032), so HSA_OVERRIDE_GFX_VERSION=10.3.0 for my RX 6600.\n",
    ],
)
def test_near_misses_of_a_global_override(text: str) -> None:
    assert "env-override-wrong" not in _codes(text)


# --- --privileged told as what made a container with /dev/kfd work: the render nodes were left out -----------------


@pytest.mark.parametrize(
    "text",
    [
        "docker run -it --device=/dev/kfd rocm/pytorch\nhipErrorNoDevice\nWith --privileged it works.\n",
        "The container only had --device=/dev/kfd. Adding --privileged fixed it.\n",
        "ROCm 1.7 requires to add `--privileged` after `docker run`, e.g.:\n"
        "`sudo docker run -it --privileged --device=/dev/kfd`\nCould you try that?\n\n"
        "reporter · comment\nThat gets it to work indeed, but privileged is not an option for us.\n",
        "podman run --device /dev/kfd rocm/rocm-terminal: no GPU found in rocminfo.\n"
        "It works when the container is started with --privileged.\n",
    ],
)
def test_privileged_as_the_fix_with_kfd_passed_is_the_render_nodes(text: str) -> None:
    found = _finding(text, "device-node-missing")
    assert "/dev/dri" in found.remedy
    assert not _codes(text) & {"user-not-in-group", "host-without-kfd", "device-permissions"}


@pytest.mark.parametrize(
    "text",
    [
        # it did not help
        "docker run --device=/dev/kfd rocm/pytorch\nhipErrorNoDevice\n--privileged did not help either.\n",
        # the render nodes were passed in the run that failed: something else
        "docker run --device=/dev/kfd --device=/dev/dri rocm/pytorch fails with hipErrorNoDevice.\n"
        "With --privileged it works.\n",
        # SELinux labels, which --privileged turns off
        "Fedora with SELinux enforcing: podman run --device=/dev/kfd --device=/dev/dri fails, avc: denied.\n"
        "With --privileged it works.\n",
        # no /dev/kfd passed at all
        "With --privileged it works.\n",
    ],
)
def test_near_misses_of_privileged_as_the_fix(text: str) -> None:
    assert "device-node-missing" not in _codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "The docker-instance is run as root, and rocminfo fails with hipErrorNoDevice.\n",
        "I run it as root and rocminfo still fails: hsa api call failure.\n",
        "Everything was run as root; hipErrorNoDevice all the same.\n",
    ],
)
def test_how_a_program_was_run_is_not_that_only_root_can(text: str) -> None:
    assert "user-not-in-group" not in _codes(text)


# --- a rootless container told to fail where the rootful one works ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "docker run --device=/dev/kfd --device=/dev/dri --group-add video --group-add render rocm/pytorch\n"
        "torch.cuda.is_available() returns False.\nI run my docker by rootless mode.\n"
        "In docker without rootless mode, it works. But rootless mode doesn't.\n",
        "podman run --device /dev/kfd --group-add render rocm/dev-ubuntu-22.04: rocminfo shows no GPU.\n"
        "With rootful podman it works fine, rootless does not.\n",
        "In a rootful docker there is no issue with /dev/kfd; only rootless docker fails to find the GPU.\n",
    ],
)
def test_rootful_works_and_rootless_fails_is_the_unmapped_gid(text: str) -> None:
    codes = _codes(text)
    assert "rootless-gid-unmapped" in codes
    assert "device-node-missing" not in codes


def test_the_contrast_holds_beside_gpu_agents_of_the_host() -> None:
    text = (
        "On the host rocminfo works:\n==========\nHSA Agents\n==========\n" + AGENT_1030 + "*** Done ***\n"
        "Then in docker with --device=/dev/kfd --device=/dev/dri, torch says False. I use rootless mode.\n"
        "Rootful docker works.\n"
    )
    assert "rootless-gid-unmapped" in _codes(text)


def test_a_host_account_out_of_the_group_is_kept_beside_the_contrast() -> None:
    text = (
        "It looks like user B is not in the `render` group.\n"
        "Later: docker run --device=/dev/kfd --device=/dev/dri --group-add render rocm/pytorch gives False; I run "
        "docker in rootless mode. In rootful docker it works.\n"
    )
    assert {"user-not-in-group", "rootless-gid-unmapped"} <= _codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "Rootless docker with --device=/dev/kfd: False. Rootful docker doesn't work either.\n",
        "I tried rootful and rootless podman with --device /dev/kfd; neither works.\n",
        "Rootful docker works for my web server.\n",
    ],
)
def test_near_misses_of_the_rootless_contrast(text: str) -> None:
    assert "rootless-gid-unmapped" not in _codes(text)
