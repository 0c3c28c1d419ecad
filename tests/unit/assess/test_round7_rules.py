"""Rules written for the application threads 220-233: ollama's newer rocBLAS filter, LM Studio's engine survey,
an override told as the workaround that makes a program run, HSA_OVERRIDE_GFX_VERSION defined but empty, and a
program said to be built without ROCm.

Every text here is written from the program's format or from the cause, with GPUs, versions and wordings that
those corpus files do not use, beside the near misses each rule must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text
from kfdguard.verdict import Finding, Severity


def findings(text: str) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {}
    for f in diagnose_text(text).findings:
        found.setdefault(f.code, []).append(f)
    return found


def codes(text: str) -> set[str]:
    return set(findings(text))


# --- ollama's rocBLAS filter and LM Studio's engine survey ---------------------------------------------------------


def test_ollama_dropping_a_device_without_rocblas_kernels() -> None:
    # slog's text handler quotes the map, which holds spaces; the list is what the bundled rocBLAS carries.
    text = (
        "time=2026-03-02T09:14:11.020+01:00 level=WARN source=amd.go:470 "
        'msg="dropping ROCm device — no rocblas support for gfx target" device=ROCm1 gfx_target=gfx1036 '
        'supported="map[gfx1030:true gfx1100:true gfx1201:true]" hint="set HSA_OVERRIDE_GFX_VERSION to map to a '
        'supported target"\n'
    )
    found = findings(text)
    assert "userspace-target-unsupported" in found
    evidence = " ".join(found["userspace-target-unsupported"][0].evidence)
    assert "gfx1036" in evidence
    assert "gfx1030 gfx1100 gfx1201" in evidence  # the map's names, not "gfx1030:true"


def test_lm_studio_engine_without_the_gpus_target() -> None:
    text = (
        "lms runtime survey --json\n"
        '      "compatibility": {\n'
        '        "status": "noSupportedGpus",\n'
        '        "message": "No ROCm GPUs detected of supported targets: gfx1030, gfx1100, gfx1101"\n'
        "      },\n"
        "The laptop has a Radeon 780M (gfx1103) and the app uses Vulkan instead.\n"
    )
    found = findings(text)
    assert "userspace-target-unsupported" in found
    assert "gfx1103" in " ".join(found["userspace-target-unsupported"][0].evidence)


# --- an override of the same generation told as the workaround --------------------------------------------------


@pytest.mark.parametrize(
    "told",
    [
        "I needed to set HSA_OVERRIDE_GFX_VERSION=10.3.0 before Fooocus would use my RX 5600 XT.",
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0\nWith that my RX 5600 XT works in SD.Next.",
        "Without the override SD.Next crashes on the RX 5600 XT; HSA_OVERRIDE_GFX_VERSION=10.3.0 in webui-user.sh.",
    ],
)
def test_a_same_generation_override_told_as_what_makes_it_run(told: str) -> None:
    # gfx1010 is in rocBLAS's own list, but this program's build does not carry it: the override stands in.
    found = findings(told)
    assert "env-override-wrong" not in found
    stands_in = found["userspace-target-unsupported"][0]
    assert stands_in.severity is Severity.WARNING


def test_a_same_generation_override_on_a_supported_gpu_that_fails_is_still_wrong() -> None:
    text = "HSA_OVERRIDE_GFX_VERSION=10.3.0 is set for my RX 5600 XT and every run hangs the GPU.\n"
    assert "env-override-wrong" in codes(text)


def test_an_override_of_another_generation_stays_wrong_even_when_told_to_work() -> None:
    # 9.0.0 on an RDNA 3 card runs GFX9 code on a GFX11 GPU, whatever the person believes it does.
    text = "I had to set HSA_OVERRIDE_GFX_VERSION=9.0.0 so my RX 7600 shows up, and it works.\n"
    assert "env-override-wrong" in codes(text)


# --- HSA_OVERRIDE_GFX_VERSION defined but empty ----------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        'export HSA_OVERRIDE_GFX_VERSION=""',
        "      - HSA_OVERRIDE_GFX_VERSION=${HSA_OVERRIDE_GFX_VERSION-}",
        'Environment="HSA_OVERRIDE_GFX_VERSION="',
    ],
)
def test_an_empty_override_leaves_no_gpu(setting: str) -> None:
    text = f"{setting}\nhipErrorNoDevice: no ROCm-capable device is detected\n"
    found = findings(text)
    assert "env-override-wrong" in found
    assert "empty" in found["env-override-wrong"][0].message


@pytest.mark.parametrize(
    "setting",
    [
        "      - HSA_OVERRIDE_GFX_VERSION=${HSA_OVERRIDE_GFX_VERSION:-10.3.0}",
        "unset HSA_OVERRIDE_GFX_VERSION",
        "HSA_OVERRIDE_GFX_VERSION=${HSA_OVERRIDE_GFX_VERSION}",
    ],
)
def test_an_override_with_a_default_or_unset_is_not_empty(setting: str) -> None:
    assert "env-override-wrong" not in codes(f"{setting}\nThe RX 6800 works.\n")


# --- a program built without ROCm, as said ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Turns out the whisper.cpp package was compiled without HIP, so it only ever used the CPU on my RX 6800.",
        "warning: not compiled with GPU offload support, --n-gpu-layers option will be ignored\n"
        "(the box has a Radeon RX 7900 GRE and ROCm 6.1)",
        "Detected AMD Radeon RX 6750 XT: HIP support is not enabled in this build, continuing on CPU.",
    ],
)
def test_a_program_said_to_be_built_without_rocm(said: str) -> None:
    assert "userspace-no-rocm-build" in codes(said)


@pytest.mark.parametrize(
    "said",
    [
        "ROCm support is not available for my RX 580, so PyTorch runs on the CPU.",
        "HIP support not enabled on gfx803 in ROCm 6 (dropped), use an older release.",
    ],
)
def test_support_missing_for_one_gpu_is_not_a_build_without_rocm(said: str) -> None:
    assert "userspace-no-rocm-build" not in codes(said)


# --- torch reinstalled from the ROCm index as the fix -----------------------------------------------------------


REINSTALL = (
    "pip3 install --upgrade --force-reinstall torch torchaudio "
    "--extra-index-url https://[wheel-index-host]/whl/rocm6.0\n"
)


def test_a_forced_rocm_reinstall_told_as_the_fix() -> None:
    text = f"The AUR package's venv ignored my RX 7800 XT.\n{REINSTALL}Now Invoke uses the GPU.\n"
    assert "userspace-no-rocm-build" in codes(text)


def test_a_forced_reinstall_over_a_rocm_torch_is_a_version_change() -> None:
    text = f"torch 2.1.2+rocm5.6 on my RX 7800 XT\n{REINSTALL}now it works with the newer wheel\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_a_forced_reinstall_without_a_success_proves_nothing() -> None:
    text = f"RX 7800 XT here.\n{REINSTALL}Still 'HIP error: invalid device function' afterwards.\n"
    assert "userspace-no-rocm-build" not in codes(text)


# --- an engine's ROCm build said not to be compatible ------------------------------------------------------------


def test_an_engine_build_labelled_not_compatible() -> None:
    text = "Jan lists llama.cpp v0.6.2 and says the ROCm backend is not compatible on my Radeon RX 9060 XT.\n"
    assert "userspace-target-unsupported" in codes(text)


def test_a_rocm_release_incompatible_with_a_kernel_is_another_cause() -> None:
    text = "ROCm 6.0 is not compatible with kernel 6.8 on my Radeon RX 7900 XT, amdgpu-dkms fails.\n"
    assert "userspace-target-unsupported" not in codes(text)


# --- the run without the override is not the override unapplied ------------------------------------------------


def test_a_log_of_the_run_without_the_override_is_not_the_override_lost() -> None:
    text = (
        'level=WARN source=amd.go:470 msg="dropping ROCm device — no rocblas support for gfx target" '
        "device=ROCm0 gfx_target=gfx1035\n"
        "Without the override ollama drops the 680M like this; HSA_OVERRIDE_GFX_VERSION=10.3.0 in the unit fixes it.\n"
    )
    found = codes(text)
    assert "env-override-not-applied" not in found
    assert "userspace-target-unsupported" in found


# --- a platform release told to bring /dev/kfd to its containers ------------------------------------------------


def test_kfd_told_to_come_with_a_later_platform_release() -> None:
    text = (
        "The Jellyfin app container sees /dev/dri but ROCm tone mapping fails.\n"
        "> The kfd passthrough will only work once you update to 24.10.2 of the appliance.\n"
    )
    assert "device-node-missing" in codes(text)


def test_a_kernel_upgrade_told_is_not_a_container_without_kfd() -> None:
    text = "In the container rocminfo fails.\n> kfd will work after you upgrade to kernel 6.8 on that APU.\n"
    assert "device-node-missing" not in codes(text)


# --- a CUDA build's own wording, and a group added that made it work ---------------------------------------------


def test_the_cuda_wording_of_no_gpus_shows_a_cuda_build() -> None:
    text = "SD.Next on my RX 6700 XT, ROCm 6.0 installed:\nRuntimeError: No CUDA GPUs are available\n"
    assert "userspace-no-rocm-build" in codes(text)


def test_zluda_runs_a_cuda_build_on_purpose() -> None:
    text = "ZLUDA with ComfyUI on an RX 6700 XT (ROCm 5.7 HIP SDK):\nRuntimeError: No CUDA GPUs are available\n"
    assert "userspace-no-rocm-build" not in codes(text)


def test_a_group_added_and_then_it_works() -> None:
    text = "try this:\n    sudo gpasswd -a kasia render\nand log in again\n\nthat did the trick, the 7600 shows up\n"
    assert "user-not-in-group" in codes(text)


@pytest.mark.parametrize(
    "after",
    [
        "it still doesn't work after a reboot",
        "$ id\nuid=1000(kasia) gid=1000(kasia) groups=1000(kasia),44(video),993(render)\nnow it works",
    ],
)
def test_a_group_added_without_a_success_or_already_held(after: str) -> None:
    text = f"sudo usermod -aG render,video kasia\n{after}\n"
    assert "user-not-in-group" not in codes(text)


# --- a ROCm library the loader does not find ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("ImportError: libamdhip64.so.5: cannot open shared object file: No such file or directory", "ROCm 5.x"),
        (
            "./llama-server: error while loading shared libraries: librocblas.so.4: cannot open shared object file: "
            "No such file or directory",
            "librocblas.so.4",
        ),
        (
            "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
            "'libMIOpen.so'; dlerror: libMIOpen.so: cannot open shared object file",
            "libMIOpen.so",
        ),
    ],
)
def test_a_rocm_library_the_loader_does_not_find(line: str, named: str) -> None:
    found = findings(f"python -c 'import onnxruntime' on the RX 7900 XT box\n{line}\n")
    assert named in found["userspace-library-missing"][0].message


@pytest.mark.parametrize(
    "line",
    [
        "I tensorflow/stream_executor/platform/default/dso_loader.cc:44] Successfully opened dynamic library libhip_hcc.so",
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library "
        "'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file",
    ],
)
def test_a_library_opened_or_not_rocms_is_not_missing(line: str) -> None:
    assert "userspace-library-missing" not in codes(f"{line}\n")
