"""Userspace messages about AMD GPU compute, and what each means: the ROCm runtime, its libraries,
the applications built on them, container runtimes and the shell tools people paste.

The userspace side of ``logrules.py``: one row per message format, written from the program that
prints it (``source`` names the repository and file), never from a sample report. ``cue`` is a
literal every line of that format contains; ``evidence.text`` joins all cues into one compiled
alternation and runs a row's ``pattern`` only on a line that holds its cue, so a long paste costs
one scan per line, not one regular expression per row. ``fields`` are further expressions searched
on the same line for values that a format prints in varying order (ollama's slog key=value pairs).

What a row's ``what`` means to the rules (``assess.rules``):

- ``no-code-object``: the program has no code for the GPU's gfx target (``gfx`` names it when the
  format does). The cause is the software build, not the GPU, the kernel or permissions.
- ``library-targets``: the gfx targets an installed library carries (rocBLAS lists its files).
- ``no-device``: the runtime found no usable GPU at all: a symptom whose cause lies lower (no KFD,
  permissions, visibility variables), never by itself a library problem.
- ``runtime-gpu``: the runtime enumerated a GPU (so KFD added it and it could be opened).
- ``kfd-eacces``: opening /dev/kfd or a render node failed with EACCES (``path`` when shown).
- ``eacces``: some open failed with EACCES; which node, only the lines around it say.
- ``override``: HSA_OVERRIDE_GFX_VERSION was honoured (ollama skips its own target check).
- ``override-unset``: the program's own environment has no HSA_OVERRIDE_GFX_VERSION (ollama's config map).
- ``wsl-runtime``: ROCm's WSL build is running (no KFD: the GPU is reached through the Windows driver).
- ``runtime-unsupported-gpu``: the WSL runtime refuses the GPU itself (not on the release's WSL list).
- ``kfd-interface-old``: ROCr disabled a GPU because the kernel's KFD interface is older than it needs (``gpu``).
- ``container-device-missing``: the container runtime's host has no such device node.
- ``group-missing``: a group named in advice does not exist on this system.
- ``dkms-build-error``, ``dkms-status``: the out-of-tree amdgpu module's build and its trees.
- ``dkms-status-unbuilt``: dkms status with the amdgpu module only added (no build) or built, not installed.
- ``module-refused``: the module loader refused a module built for another kernel (``module`` names it).
- ``override-setting``: HSA_OVERRIDE_GFX_VERSION as set (``value`` or ``quoted``); ``override-invalid``: libhsakmt
  refused the value.
- ``driver-table``: rocm-smi or amd-smi reporting a GPU (amdgpu's sysfs, not KFD).
- ``amd-driver-only``: the program decided "AMD GPU" only because the amdgpu module is loaded.
- ``amdgpu-bound``, ``amdgpu-loaded``: amdgpu drives a GPU / the module is loaded.
"""

from __future__ import annotations

import functools
import re

from kfdguard.alternation import alternation
from kfdguard.record import dataclass

SRC_CLR_CO = "ROCm/clr hipamd/src/hip_code_object.cpp (ROCclr era: hip-on-vdi/rocclr/hip_code_object.cpp)"
SRC_CLR_FATBIN = "ROCm/clr hipamd/src/hip_fatbin.cpp (LogPrintfError in FatBinaryInfo::ExtractFatBinaryUsingCOMGR)"
SRC_CLR_ERROR = "ROCm/clr hipamd/src/hip_error.cpp (hipGetErrorString of hipErrorInvalidDeviceFunction)"
SRC_ROCBLAS = "ROCm/rocBLAS library/src/tensile_host.cpp (TensileHost: library load, GetDeviceCount)"
SRC_GGML = "ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_init() (HIP build: GGML_CUDA_NAME 'ROCm')"
SRC_TORCH = "pytorch/pytorch torch/cuda/__init__.py _lazy_init (hipified: 'No HIP GPUs are available')"
SRC_OLLAMA = "ollama/ollama discover/amd_linux.go AMDGetGPUInfo (gpu/amd_linux.go before 0.4)"
SRC_OLLAMA_OLD = "ollama/ollama gpu/amd_linux.go, amd_windows.go 0.1.2x-0.1.3x (fmt.Sprintf slog messages)"
SRC_DOCKER = "moby/moby oci/devices_linux.go DevicesFromPath (error gathering device information ...)"
SRC_TF = (
    "ROCm/tensorflow-upstream tensorflow/core/common_runtime/gpu/gpu_device.cc (BaseGPUDeviceFactory: 'Ignoring "
    "visible gpu device (...) with AMDGPU version : %s. The supported AMDGPU versions are %s.'; TF 1.x 'with AMDGPU "
    "ISA %s. The minimum required AMDGPU ISA is gfx803.')"
)
SRC_CLINFO = "Oblomov/clinfo src/clinfo.c (--list: ' `-- Device #N: <name>'; ROCm names devices by gfx target)"
SRC_USERMOD = "shadow-maint/shadow src/usermod.c (\"%s: group '%s' does not exist\")"
SRC_RUST_IO = "rust-lang/rust library/std/src/io/error.rs (Display of an OS error: '... (os error 13)')"
SRC_DKMS = "dell/dkms dkms.in (status lines 'module, version, kernel, arch: installed'; build errors in make.log)"
SRC_SMI = "ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py, ROCm/amdsmi amdsmi_cli (GPU tables)"
SRC_MODULE = "torvalds/linux kernel/module/"
SRC_HSAKMT = "ROCm/ROCT-Thunk-Interface src/topology.c (now ROCm/rocm-systems projects/rocr-runtime libhsakmt)"
SRC_GO_OS = "golang/go src/os/error.go (*PathError: 'open /dev/kfd: permission denied')"
SRC_OLLAMA_ENV = (
    "ollama/ollama envconfig/config.go AsMap + server/routes.go Serve (slog 'server config' env=map[KEY:value ...]; "
    "an unset variable prints as 'KEY:' with nothing after the colon)"
)
# ROCm's WSL releases ship their own rocminfo and ROCr (paths under sources/wsl/ in their messages); the two
# lines below are theirs as users paste them (ROCm/ROCm issues 3413, 4068, 4215, 5106), read against AMD's
# answer that "ROCR: unsupported GPU" is expected for GPUs missing from the WSL compatibility matrix.
SRC_ROCM_WSL = "ROCm WSL releases: rocminfo (sources/wsl/tools/rocminfo/rocminfo.cc) and their ROCr"


@dataclass(frozen=True, slots=True)
class AppFormat:
    id: str
    what: str  # the kind of evidence (module docstring)
    cue: str  # a literal every line of this format contains (case-sensitive)
    pattern: str  # re.search over the line; named groups gfx, path, error, value, group, ...
    meaning: str
    source: str
    example: str  # a line the row must match (tests check every row against its example)
    fields: tuple[str, ...] = ()  # more re.search expressions for named values on the same line


GFX = r"gfx[0-9a-f]{3,4}"
# Prose that says /dev/kfd is absent ("the kfd device is not present", "there is no /dev/kfd").
KFD_ABSENT = re.compile(
    r"\b(?:/dev/)?kfd`?'?\"? (?:device |node )?(?:is |was )?(?:not (?:present|there|created)|missing|"
    r"does not exist|doesn't exist)|\bno /dev/kfd\b"
    # the driver said to make only its DRM nodes ("the amdgpu driver is only exposing /dev/dri/card0"): no KFD node
    r"|\b(?:amdgpu|driver|kernel|module)\b[^.\n]{0,40}?\bonly (?:expos|creat|provid|register)\w*\b"
    r"[^.\n]{0,30}?/dev/dri\b",
    re.IGNORECASE,
)

FORMATS: tuple[AppFormat, ...] = (
    # --- the HIP runtime: no code object for this target --------------------------------------------
    AppFormat(
        "hip-no-binary",
        "no-code-object",
        "hipErrorNoBinaryForGpu",
        r"hipErrorNoBinaryForGpu: (?:Unable to find code object|Cou?l?dn'?t find binary)",
        "the program's GPU code has no code object for any GPU present",
        SRC_CLR_CO,
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
    ),
    # The error's enum name alone, as hipGetErrorName() returns it and programs print it ("HIP error:
    # hipErrorNoBinaryForGpu", "error: 'hipErrorNoBinaryForGpu'(209)", an issue title): the same cause.
    # Not where prose says the error is gone: a negation at most two words before the name ("I no longer get
    # hipErrorNoBinaryForGpu", "without the", "don't see any"); one further off belongs to another clause.
    AppFormat(
        "hip-no-binary-name",
        "no-code-object",
        "hipErrorNoBinaryForGpu",
        r"^(?!.*?(?:\b(?:no longer|no more|not|never|without|instead of)|n't)\s+(?:\w+\s+){0,2}?"
        r"(?:(?:the|an?|any|that)\s+)?['\"`]?hipErrorNoBinaryForGpu).*?"
        r"\bhipErrorNoBinaryForGpu\b(?!: (?:Unable|Cou?l?dn))",
        "the program's GPU code has no code object for the GPU (HIP's error name)",
        "ROCm/clr hipamd/src/hip_error.cpp (hipGetErrorName: 'hipErrorNoBinaryForGpu')",
        "error: 'hipErrorNoBinaryForGpu'(209) at gemm.cpp:77",
    ),
    AppFormat(
        "hip-no-compatible-co",
        "no-code-object",
        "No compatible code objects found for",
        rf"No compatible code objects found for: (?P<gfx>{GFX})",
        "no code object in the fat binary matches this GPU's target",
        SRC_CLR_FATBIN,
        "No compatible code objects found for: gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0",
    ),
    AppFormat(
        "hip-invalid-device-function",
        "no-code-object",
        "invalid device function",
        r"invalid device function",
        "a kernel launch found no code for this GPU (hipErrorInvalidDeviceFunction)",
        SRC_CLR_ERROR,
        "HIP error: invalid device function",
    ),
    # PyTorch's scaled-dot-product attention on ROCm checks its flash and memory-efficient kernels' targets
    # (aten/src/ATen/native/transformers/hip/sdp_utils.cpp check_*_arch: TORCH_WARN("Flash attention was not compiled
    # for current AMD GPU architecture. Attempting to run on architecture ", arch)): AOTriton carries no code for it.
    AppFormat(
        "torch-sdpa-arch",
        "no-code-object",
        "was not compiled for current AMD GPU architecture",
        rf"(?:Flash|Mem Efficient) attention was not compiled for current AMD GPU architecture\. Attempting to run on "
        rf"architecture (?P<gfx>{GFX})",
        "PyTorch's attention kernels (AOTriton) carry no code for this GPU's target",
        "pytorch/pytorch aten/src/ATen/native/transformers/hip/sdp_utils.cpp (check_flash_attention_hardware_support)",
        "UserWarning: Flash attention was not compiled for current AMD GPU architecture. Attempting to run on "
        "architecture gfx1151 (Triggered internally at sdp_utils.cpp:861.)",
    ),
    # HCC's runtime (ROCm 1.x-3.x, lib/mcwamp.cpp) finding no code object for the GPU in a program's fat binary:
    # "HCC RUNTIME ERROR: Fail to find compatible kernel at file:mcwamp.cpp line:346".
    AppFormat(
        "hcc-no-compatible-kernel",
        "no-code-object",
        "Fail to find compatible kernel",
        r"HCC RUNTIME ERROR: Fail to find compatible kernel\b",
        "HCC's runtime found no code object for this GPU's target in the program",
        "ROCm-Developer-Tools/hcc lib/mcwamp.cpp (LoadInMemoryProgram: 'Fail to find compatible kernel')",
        "HCC RUNTIME ERROR: Fail to find compatible kernel at file:mcwamp.cpp line:346",
    ),
    AppFormat(
        "hip-no-kernel-image",
        "no-code-object",
        "no kernel image is available",
        r"no kernel image is available for execution on the device",
        "PyTorch's wording of the same error (hipErrorNoBinaryForGpu through CUDA's name)",
        SRC_CLR_ERROR,
        "RuntimeError: HIP error: no kernel image is available for execution on the device",
    ),
    AppFormat(
        "tf-ignoring-gpu",
        "no-code-object",
        "Ignoring visible gpu device",
        rf"Ignoring visible gpu device \(.*?\) with AMDGPU (?:version :|ISA) (?P<gfx>{GFX})",
        "TensorFlow's ROCm build carries no code for this GPU's target (by its own list) and leaves the GPU out",
        SRC_TF,
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1990] Ignoring visible gpu device (device: 0, name: AMD "
        "Radeon RX 6600 XT, pci bus id: 0000:0c:00.0) with AMDGPU version : gfx1032. The supported AMDGPU versions "
        "are gfx1030, gfx900, gfx906, gfx908, gfx90a.",
        (
            r"The supported AMDGPU versions are (?P<supported>[^.]*)",
            r"minimum required AMDGPU ISA is (?P<supported>gfx\w+)",
        ),
    ),
    # --- rocBLAS / Tensile ------------------------------------------------------------------------------
    AppFormat(
        "rocblas-no-library",
        "no-code-object",
        "TensileLibrary",
        # "for GPU arch : " as tensile_host.cpp prints it; pastes retyped or reflowed lose the blank ("arch: ").
        rf"Cannot read (?P<path>(?:[A-Za-z]:\\[^:\n]*?|\S*)TensileLibrary\S*\.dat): (?P<error>.+?) for GPU arch ?: "
        rf"(?P<gfx>{GFX})"
        r"|TensileLibrary\S*\.dat:? not found",
        "rocBLAS has no Tensile library for this GPU's target (the file list shows what it has)",
        SRC_ROCBLAS,
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: Illegal seek for "
        "GPU arch : gfx1201",
    ),
    AppFormat(
        "rocblas-no-library-continued",
        "no-code-object",
        "for GPU arch",
        # The same message's second half where a terminal or a form wrapped it after "TensileLibrary.dat: "
        # (issue 36: "Cannot read .../TensileLibrary.dat: " then "Illegal seek for GPU arch: gfx1103"): strerror's
        # words start the line, the target ends it.
        rf"^\s*(?P<error>[A-Z][a-z]+(?: [a-z]+){{0,5}}) for GPU arch ?: (?P<gfx>{GFX})",
        "rocBLAS has no Tensile library for this GPU's target (the first half of the line was wrapped above)",
        SRC_ROCBLAS,
        "Illegal seek for GPU arch: gfx1103",
    ),
    AppFormat(
        "rocblas-unreadable-old",
        "tensile-unreadable",
        "TensileLibrary.dat: ",
        # rocBLAS before "for GPU arch" was added to the message (tensile_host.cpp: "Cannot read " << path << ": "
        # << strerror(errno)). From ROCm 5.2 the library is split per target and TensileLibrary.dat is only the
        # fallback read when the GPU's own file is missing; before 5.2 it was the whole library.
        r"Cannot read (?P<path>(?:[A-Za-z]:\\[^:\n]*?|\S*)TensileLibrary\.dat): (?P<error>(?:(?!for GPU arch).)+?)\s*$",
        "rocBLAS could not read its Tensile library: no library for this GPU's target (ROCm 5.2+), or an install "
        "whose library files are missing or from another rocBLAS",
        SRC_ROCBLAS,
        "rocBLAS error: Cannot read /opt/rocm/rocblas/library/TensileLibrary.dat: Illegal seek",
    ),
    AppFormat(
        "rocblas-unloadable",
        "tensile-unreadable",
        "Could not load ",
        # tensile_host.cpp, after the target's own file was not found and the fallback TensileLibrary.dat passed
        # TestPath: "rocBLAS error: Could not load " << path, then "Could not initialize Tensile library".
        r"Could not load (?P<path>(?:[A-Za-z]:\\[^:\n]*?|\S*)TensileLibrary\.dat)\s*$",
        "rocBLAS could not load its Tensile library: no library for this GPU's target, or an install whose library "
        "files are missing or from another rocBLAS",
        SRC_ROCBLAS,
        "rocBLAS error: Could not load /opt/rocm/lib/rocblas/library/TensileLibrary.dat",
    ),
    AppFormat(
        "rocblas-library-file",
        "library-targets",
        "TensileLibrary_",
        rf"TensileLibrary(?:_lazy)?_(?P<gfx>{GFX})(?:\.dat|\.co|_fallback)",
        "a Tensile library file of the installed rocBLAS: the targets it carries",
        SRC_ROCBLAS,
        '"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx908.dat"',
    ),
    AppFormat(
        "tensile-no-devices",
        "no-device",
        "Could not initialize Tensile host: No devices",
        r"Could not initialize Tensile host: No devices found",
        "hipGetDeviceCount failed: HIP sees no usable GPU (no KFD, no access, or every GPU hidden); "
        "not a library problem",
        SRC_ROCBLAS,
        "rocBLAS error: Could not initialize Tensile host: No devices found",
    ),
    # --- llama.cpp / ggml, PyTorch ------------------------------------------------------------------------
    AppFormat(
        "ggml-init-failed",
        "no-device",
        "ggml_cuda_init: failed to initialize",
        r"ggml_cuda_init: failed to initialize (?:ROCm|HIP): (?P<error>.+)",
        "ggml's HIP backend found no usable device (hipGetDeviceCount failed)",
        SRC_GGML,
        "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected",
    ),
    AppFormat(
        "ggml-device",
        "runtime-gpu",
        "Device ",
        rf"^\s*Device \d+: (?P<name>.+?), (?P<gfx>{GFX})(?::\S+)? \(0x[0-9a-f]+\)",
        "ggml enumerated a GPU through HIP: KFD added it and it could be opened",
        SRC_GGML,
        "  Device 0: AMD Radeon Graphics, gfx1152 (0x1152), VMM: no, Wave Size: 32",
    ),
    AppFormat(
        "hip-no-device",
        "no-device",
        "no ROCm-capable device",
        r"no ROCm-capable device is detected",
        "HIP found no usable GPU (hipErrorNoDevice), whatever program prints it",
        SRC_CLR_ERROR,
        "hipErrorNoDevice: no ROCm-capable device is detected",
    ),
    # The error's enum name alone ("HIP error: hipErrorNoDevice", "hipGetDeviceCount returned hipErrorNoDevice"), as
    # hipGetErrorName() returns it; not where prose says it is gone (the negation test of hip-no-binary-name).
    AppFormat(
        "hip-no-device-name",
        "no-device",
        "hipErrorNoDevice",
        r"^(?!.*?(?:\b(?:no longer|no more|not|never|without|instead of)|n't)\s+(?:\w+\s+){0,2}?"
        r"(?:(?:the|an?|any|that)\s+)?['\"`]?hipErrorNoDevice).*?\bhipErrorNoDevice\b(?!: no ROCm-capable)",
        "HIP found no usable GPU (HIP's error name)",
        "ROCm/clr hipamd/src/hip_error.cpp (hipGetErrorName: 'hipErrorNoDevice')",
        "hipGetDeviceCount failed: hipErrorNoDevice",
    ),
    # TensorFlow's ROCm StreamExecutor logs hipGetDeviceCount's failure and goes on with no GPU (CPU only): the
    # error is HIP's name for it, HIP_ERROR_NoDevice in TF 1.x-2.x, hipErrorNoDevice where it prints the enum.
    AppFormat(
        "tf-rocm-device-count",
        "no-device",
        "could not retrieve ROCM device count",
        r"could not retrieve ROCM device count: (?P<error>\S+)",
        "TensorFlow's ROCm backend got no GPU from HIP (hipGetDeviceCount failed) and runs on the CPU",
        "ROCm/tensorflow-upstream tensorflow/stream_executor/rocm/rocm_driver.cc GetDeviceCount (later "
        'xla/stream_executor/rocm/rocm_driver.cc): LOG(ERROR) << "could not retrieve ROCM device count: "',
        "E tensorflow/stream_executor/rocm/rocm_driver.cc:1098] could not retrieve ROCM device count: "
        "HIP_ERROR_NoDevice",
    ),
    AppFormat(
        "torch-no-gpus",
        "no-device",
        "No HIP GPUs are available",
        r"No HIP GPUs are available",
        "PyTorch-ROCm found no GPU (HIP's device count is 0)",
        SRC_TORCH,
        "RuntimeError: No HIP GPUs are available",
    ),
    # --- ROCm under WSL --------------------------------------------------------------------------------
    AppFormat(
        "rocminfo-wsl",
        "wsl-runtime",
        "WSL environment detected",
        r"WSL environment detected",
        "rocminfo of ROCm's WSL build: there is no KFD; ROCr reaches the GPU through the Windows driver (/dev/dxg)",
        SRC_ROCM_WSL,
        "WSL environment detected.",
    ),
    # ROCm 7's rocminfo when hsa_init() fails (on a Linux host the same words follow a missing KFD GPU; under WSL
    # the DXG path found no GPU), and librocdxg's topology when DXCore lists no usable adapter.
    # rocminfo's check of each HSA call (rocminfo.cc RET_IF_HSA_ERR: "hsa api call failure at: %s:%d", then "Call
    # returned %s" with hsa_status_string's text): OUT_OF_RESOURCES from hsa_init is what ROCr answers when it
    # cannot open /dev/kfd or finds no GPU node to use (ROCR-Runtime core/runtime/runtime.cpp, amd_topology.cpp).
    AppFormat(
        "rocminfo-hsa-out-of-resources",
        "no-device",
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES",
        r"Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES\b",
        "the ROCm runtime did not start: it could not open KFD or found no GPU in it (the cause is below it)",
        "ROCm/rocminfo rocminfo.cc (RET_IF_HSA_ERR); ROCm/ROCR-Runtime src/core/runtime/hsa.cpp hsa_status_string",
        "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
    ),
    AppFormat(
        "rocminfo-hsa-init-failed",
        "no-device",
        "hsa_init Failed",
        r"hsa_init Failed, possibly no supported GPU devices",
        "the ROCm runtime did not start: it found no GPU it can use (the cause is below it)",
        "ROCm/rocminfo rocminfo.cc main() (ROCm 7: 'hsa_init Failed, possibly no supported GPU devices')",
        "hsa_init Failed, possibly no supported GPU devices",
    ),
    AppFormat(
        "rocdxg-no-wddm-adapter",
        "no-device",
        "No WDDM adapters found",
        r"No WDDM adapters found",
        "librocdxg (ROCm's WSL thunk) found no GPU adapter through /dev/dxg: the Windows driver exposes none to WSL",
        "ROCm/librocdxg src/topology.cpp topology_sysfs_get_system_props ('No WDDM adapters found.')",
        "pid:6895 tid:0x76bf09cbb100 [topology_sysfs_get_system_props] No WDDM adapters found.",
    ),
    # ROCclr's device setup (rocdevice.cpp) about an agent the HSA runtime enumerated: LogPrintfError("HSA device %s
    # (PCI ID %x) has %u ISAs but can only support a single ISA"), and "Unable to iterate supported ISAs for HSA
    # device %s (PCI ID %x)". HIP then drops the device, but KFD added it.
    AppFormat(
        "clr-hsa-device",
        "runtime-gpu",
        "HSA device ",
        rf"HSA device (?P<gfx>{GFX})\S* \(PCI ID [0-9a-fA-F]+\)",
        "the HSA runtime enumerated this GPU (KFD added it), and HIP's device setup then refused it",
        "ROCm/clr rocclr/device/rocm/rocdevice.cpp Device::create ('HSA device %s (PCI ID %x) has %u ISAs but can "
        "only support a single ISA')",
        ":1:rocdevice.cpp            :590 : 0431 us:  HSA device gfx1201 (PCI ID 7551) has 2 ISAs but can only "
        "support a single ISA",
    ),
    # --- rocminfo's ISA lines (also as grepped out of its output, without the agent header) ---------------
    AppFormat(
        "rocminfo-isa",
        "runtime-gpu",
        "amdgcn-amd-amdhsa--",
        # rocminfo prints an "ISA Info" block only for a GPU agent ROCr enumerated: KFD added the GPU and this
        # user opened it. hip_fatbin's "Missing CO for these ISAs" lists ISAs without "Name:" and is not this.
        # An issue form may flatten the block onto one line ("Name: gfx950   Marketing Name: ...   Name:
        # amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-"): a "Name:" after two spaces starts a field there.
        rf"(?:^|\s\s)\s*Name:\s+amdgcn-amd-amdhsa--(?P<gfx>{GFX})\b",
        "rocminfo listed a GPU agent's ISA: KFD added the GPU and this user could open it",
        'ROCm/rocminfo rocminfo.cc DisplayISAInfo (printLabelStr("Name:", isa name))',
        "      Name:                    amdgcn-amd-amdhsa--gfx1151",
    ),
    AppFormat(
        "rocr-wsl-unsupported",
        "runtime-unsupported-gpu",
        "ROCR: unsupported GPU",
        r"ROCR: unsupported GPU",
        "the WSL runtime does not support this GPU: it is not on AMD's WSL compatibility list for the release",
        SRC_ROCM_WSL,
        "ROCR: unsupported GPU",
    ),
    # ROCr's topology.cpp DiscoverGpu: an SRAM-ECC-capable gfx906 on a KFD whose ioctl interface is older than
    # 1.4 (which did not report the SRAM ECC mode) is suppressed with this message, once per GPU (ROCm 4.1 on).
    AppFormat(
        "rocr-kfd-interface-old",
        "kfd-interface-old",
        "Incompatible kernel and userspace",
        r"Incompatible kernel and userspace, (?P<gpu>.+?) disabled\. ?Upgrade amdgpu",
        "ROCr turned the GPU off: the kernel's KFD interface is older than this ROCm needs for it (gfx906 before "
        "KFD 1.4 cannot say which SRAM ECC mode the board runs in)",
        "ROCm/ROCR-Runtime src/core/runtime/amd_topology.cpp DiscoverGpu ('HSA Error:  Incompatible kernel and "
        "userspace, %s disabled. Upgrade amdgpu.')",
        "HSA Error:  Incompatible kernel and userspace, AMD Radeon Pro VII disabled. Upgrade amdgpu.",
    ),
    # rccl-tests (and nccl-tests) list the devices each rank uses: src/common.cu "#  Rank %2d [Group %2d] Pid %6d on
    # %10s device %2d [<PCI bus>] %s", the last field the runtime's device name. An AMD name there is a GPU the HIP
    # runtime enumerated and opened. The leading "#" is optional: a paste reader takes "# " for a root prompt.
    AppFormat(
        "rccl-tests-device",
        "runtime-gpu",
        "Pid ",
        r"^(?:#\s+)?Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s+"
        r"(?P<name>(?:AMD|Radeon)\b[^\n]*?|(?P<gfx>gfx[0-9a-f]{3,4})\S*)\s*$",
        "an RCCL test listed an AMD GPU it runs on: the runtime enumerated it, so KFD added it",
        "ROCm/rccl-tests src/common.cu ('#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s')",
        "#   Rank  3 Pid  41822 on node017 device  3 [0000:c1:00.0] AMD Instinct MI250X",
    ),
    # ComfyUI (and its forks) prints the torch device it picked: comfy/model_management.py get_torch_device_name,
    # "{} {} : {}".format(device, torch.cuda.get_device_name(device), allocator_backend) after "Device: ". An AMD
    # name there is a GPU ROCm's HIP runtime enumerated and opened.
    AppFormat(
        "comfyui-device",
        "runtime-gpu",
        "Device: cuda:",
        r"^\s*Device: cuda:\d+ (?P<name>(?:AMD|Radeon)\b[^\n]*?) : \S*\s*$",
        "ComfyUI's torch picked an AMD GPU: the ROCm runtime enumerated it, so KFD added it",
        "comfyanonymous/ComfyUI comfy/model_management.py (print('Device: {}'.format(get_torch_device_name(...))), "
        "'{} {} : {}'.format(device, torch.cuda.get_device_name(device), allocator_backend))",
        "Device: cuda:0 AMD Radeon RX 7800 XT : native",
    ),
    # torch.cuda.get_device_name() answered with an AMD GPU's name (in a Python session, joined to its question by
    # evidence/repl: "torch.cuda.get_device_name(0) -> 'AMD Radeon RX 7900 XTX'"): only a ROCm build of PyTorch
    # names an AMD GPU there, and it names one HIP enumerated and opened.
    AppFormat(
        "torch-device-name",
        "runtime-gpu",
        "get_device_name(",
        r"\bget_device_name\([^)]*\)\)? -> ['\"]?(?P<name>(?:AMD|Radeon)\b[^'\"\n;]*)",
        "PyTorch's ROCm build names the AMD GPU it uses: the ROCm runtime enumerated it, so KFD added it",
        "pytorch/pytorch torch/cuda/__init__.py get_device_name (get_device_properties(device).name)",
        "torch.cuda.get_device_name(0) -> 'AMD Radeon RX 7900 XTX'",
    ),
    # PyTorch's caching allocator running out of a GPU's memory names the device and its capacity
    # (c10/cuda/CUDACachingAllocator.cpp, hipified: "HIP out of memory. Tried to allocate %s. GPU %d has a total
    # capacity of %s ..."; before 2.1 "(GPU %d; %s total capacity; ..."): HIP opened that GPU, so KFD added it.
    AppFormat(
        "torch-hip-oom",
        "runtime-gpu",
        "HIP out of memory",
        r"HIP out of memory\. Tried to allocate [^.(]*(?:\.\d+ \w+)?\.? ?"
        r"(?:\(GPU (?P<index>\d+);|GPU (?P<index2>\d+) has a total capacity)",
        "PyTorch's ROCm build ran out of a GPU's memory: HIP opened the GPU, so KFD added it",
        "pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (hipified for ROCm: 'HIP out of memory')",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 63.98 "
        "GiB of which 3.36 GiB is free.",
    ),
    # TensorFlow's BaseGPUDeviceFactory logs each device it creates: "Created device %s with %d MB memory:  -> %s",
    # the description "device: %d, name: %s, pci bus id: %s" (ROCm builds too). An AMD name there is a GPU the
    # runtime enumerated.
    AppFormat(
        "tf-created-device",
        "runtime-gpu",
        "Created device",
        r"Created device \S*device:GPU:\d+ with \d+ MB memory:?\s+->\s+device: \d+, name: "
        r"(?P<name>(?:AMD|Radeon)\b[^,]*|(?P<gfx>gfx[0-9a-f]{3,4})[^,]*)",
        "TensorFlow created a GPU device on an AMD GPU: the ROCm runtime enumerated it, so KFD added it",
        "tensorflow/core/common_runtime/gpu/gpu_device.cc (BaseGPUDeviceFactory::CreateGPUDevice: 'Created device "
        "%s with %d MB memory:  -> %s')",
        "2023-02-11 09:14:03.118201: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1613] Created device "
        "/job:localhost/replica:0/task:0/device:GPU:0 with 30688 MB memory:  -> device: 0, name: AMD Instinct MI100, "
        "pci bus id: 0000:c3:00.0",
    ),
    # TensorFlow's ROCm build logs each device it finds before it creates any: gpu_device.cc GetValidDeviceIds
    # ("Found device %d with properties: " then "pciBusID: %s name: %s     ROCm AMD GPU ISA: gfx%d" on the next
    # line), and XLA's service.cc its StreamExecutor devices ("StreamExecutor device (%d): %s, AMDGPU ISA version:
    # gfx%d"). A device found is one the ROCm runtime enumerated, even where TensorFlow then skips registering it.
    AppFormat(
        "tf-found-rocm-device",
        "runtime-gpu",
        "ROCm AMD GPU ISA",
        rf"\bname: (?P<name>.+?)\s+ROCm AMD GPU ISA: (?P<gfx>{GFX})\b",
        "TensorFlow's ROCm build found an AMD GPU: the ROCm runtime enumerated it, so KFD added it",
        "ROCm/tensorflow-upstream tensorflow/core/common_runtime/gpu/gpu_device.cc ('Found device ' << i << ' with "
        "properties: ' << '\\npciBusID: ' ... << '     ROCm AMD GPU ISA: gfx' << isa_version)",
        "pciBusID: 0000:05:00.0 name: Vega 20     ROCm AMD GPU ISA: gfx906",
    ),
    AppFormat(
        "xla-rocm-device",
        "runtime-gpu",
        "AMDGPU ISA version",
        rf"StreamExecutor device \(\d+\): (?P<name>[^,]+), AMDGPU ISA version: (?P<gfx>{GFX})\b",
        "XLA's ROCm platform lists an AMD GPU: the ROCm runtime enumerated it, so KFD added it",
        "ROCm/tensorflow-upstream tensorflow/compiler/xla/service/service.cc ('StreamExecutor device (%d): %s, %s')",
        "I tensorflow/compiler/xla/service/service.cc:176]   StreamExecutor device (0): Vega 20, AMDGPU ISA version: "
        "gfx906",
    ),
    # --- ollama -------------------------------------------------------------------------------------------
    AppFormat(
        "ollama-config-override-unset",
        "override-unset",
        "server config",
        r"server config.*?\bHSA_OVERRIDE_GFX_VERSION:(?=[ \]\"]|$)",
        "the ollama server's own environment has no HSA_OVERRIDE_GFX_VERSION, whatever a shell or unit file says",
        SRC_OLLAMA_ENV,
        'routes.go:1125: INFO server config env="map[CUDA_VISIBLE_DEVICES: HIP_VISIBLE_DEVICES: '
        'HSA_OVERRIDE_GFX_VERSION: OLLAMA_DEBUG:false]"',
    ),
    AppFormat(
        "ollama-unsupported",
        "no-code-object",
        "amdgpu is not supported",
        r"amdgpu is not supported",
        "ollama's bundled ROCm libraries have no code for this GPU's target",
        SRC_OLLAMA,
        'level=WARN source=amd_linux.go:378 msg="amdgpu is not supported (supported types:[gfx1030 '
        'gfx1100])" gpu_type=gfx1031 gpu=0',
        (rf"gpu_type=(?P<gfx>{GFX})", r"supported[ _]types:?=?\s*\[(?P<supported>[^\]]*)\]"),
    ),
    AppFormat(
        "ollama-unsupported-old",
        "no-code-object",
        "is not supported by",
        # slog.Warn(fmt.Sprintf("amdgpu [%d] %s is not supported by %s %v", ...)): the list of targets is
        # the last thing on the line, and pastes often cut the line inside it.
        rf"amdgpu (?:\[\d+\] )?(?P<gfx>{GFX}) is not supported by \S+(?: \[(?P<supported>[^\]\"]*)\]?)?",
        "ollama's bundled ROCm libraries have no code for this GPU's target",
        SRC_OLLAMA_OLD,
        'msg="amdgpu [0] gfx1103 is not supported by /tmp/ollama2145067703/rocm [gfx1030 gfx1100]"',
    ),
    # ollama leaves out GPUs older than GCN 5 (major < 9), which no ROCm it bundles carries code for: gpu/amd_linux.go
    # 0.1.3x slog.Warn(fmt.Sprintf("amdgpu [%d] too old %s", i, v.ToGFXString())), later
    # fmt.Sprintf("amdgpu too old gfx%d%x%x", major, minor, patch) (discover/amd_linux.go from 0.4).
    AppFormat(
        "ollama-too-old",
        "no-code-object",
        "too old",
        rf"amdgpu (?:\[\d+\] )?too old (?P<gfx>{GFX})",
        "ollama leaves the GPU out: its target is older than any its ROCm libraries carry code for",
        SRC_OLLAMA,
        'level=WARN source=amd_linux.go:309 msg="amdgpu too old gfx803" gpu=0',
    ),
    # ollama's discovery ending with no GPU (gpu/gpu.go from 0.1.3x, discover/gpu.go: slog.Info("no compatible GPUs
    # were discovered")): it runs on the CPU; the lines before it say why.
    AppFormat(
        "ollama-no-gpus",
        "no-device",
        "no compatible GPUs were discovered",
        r"no compatible GPUs were discovered",
        "ollama found no GPU it can use and runs on the CPU (the cause is in the lines before it)",
        SRC_OLLAMA,
        'level=INFO source=gpu.go:386 msg="no compatible GPUs were discovered"',
    ),
    AppFormat(
        "ollama-no-rocblas",
        "no-code-object",
        "no rocblas support for gfx target",
        # slog.Warn("dropping ROCm device — no rocblas support for gfx target", "device", ..., "gfx_target", gfx,
        # "supported", supported, ...): supported is a map[string]bool, printed map[gfx1030:true ...].
        r"no rocblas support for gfx target",
        "ollama dropped the GPU: its bundled rocBLAS has no kernels for this GPU's target",
        "ollama/ollama discover/ filterUnsupportedROCmDevices (newer discovery: rocblasGFXTargets of the bundled "
        "rocblas/library)",
        'level=WARN source=amd.go:466 msg="dropping ROCm device — no rocblas support for gfx target" '
        'device=ROCm0 gfx_target=gfx1103 supported="map[gfx1030:true gfx1100:true]"',
        (rf"gfx_target=\"?(?P<gfx>{GFX})", r"supported=\"?map\[(?P<supported>[^\]]*)\]"),
    ),
    AppFormat(
        "lmstudio-no-supported-gpus",
        "no-code-object",
        "GPUs detected of supported targets",
        # The engine's compatibility in 'lms runtime survey': status noSupportedGpus and this message; the list is
        # the targets the engine is built for, so the GPU it did not count is of another target.
        r"No ROCm GPUs detected of supported targets:\s*(?P<supported>(?:gfx[0-9a-f]{3,4}[,\s]*)+)",
        "LM Studio's ROCm llama.cpp engine has code only for the listed targets, and no GPU of them was found",
        "lmstudio-ai/lms 'lms runtime survey --json' (prints the engine's compatibility.status noSupportedGpus and "
        "this message; the text comes from LM Studio's own runtime, which is not open source)",
        '"message": "No ROCm GPUs detected of supported targets: gfx1030, gfx1100, gfx1151"',
    ),
    AppFormat(
        "ollama-versions",
        "runtime-gpu",
        "detected amdgpu versions",
        r"detected amdgpu versions \[(?P<supported>[^\]]*)\]",
        "ollama read these gfx targets from KFD's topology: KFD added the GPUs",
        SRC_OLLAMA_OLD,
        'msg="detected amdgpu versions [gfx1103]"',
    ),
    # ollama 0.12 and later log each GPU its runners initialised ("inference compute", slog key=value pairs); for a
    # ROCm device compute is the gfx target HIP reports (ml.DeviceInfo.Compute: "gfx%x%02x"). A CPU-only line
    # (library=cpu) says no GPU was usable, without saying why, and is not read.
    AppFormat(
        "ollama-inference-compute",
        "runtime-gpu",
        "inference compute",
        r"inference compute\b.*?\blibrary=\"?(?i:rocm)\b",
        "ollama's ROCm runner initialised an AMD GPU: the runtime enumerated it, so KFD added it",
        "ollama/ollama discover/types.go LogDetails (slog.Info('inference compute', 'id', ..., 'library', "
        "dev.Library, 'compute', dev.Compute(), ...)); ml/device.go DeviceInfo.Compute",
        'level=INFO source=types.go:42 msg="inference compute" id=0 filter_id="" library=ROCm compute=gfx1100 '
        'name=ROCm0 description="AMD Radeon RX 7900 XTX" libdirs=ollama,rocm driver=60342.13 pci_id=0000:03:00.0 '
        'type=discrete total="24.0 GiB" available="23.8 GiB"',
        (rf"\bcompute=\"?(?P<gfx>{GFX})\b",),
    ),
    AppFormat(
        "ollama-override",
        "override",
        "skipping rocm gfx compatibility check",
        r"skipping rocm gfx compatibility check",
        "HSA_OVERRIDE_GFX_VERSION is set: ollama runs the GPU as another target",
        SRC_OLLAMA,
        'msg="skipping rocm gfx compatibility check" HSA_OVERRIDE_GFX_VERSION=10.3.0',
        (r"HSA_OVERRIDE_GFX_VERSION=(?P<value>[\d.]+)",),
    ),
    AppFormat(
        "ollama-permissions",
        "kfd-eacces",
        "permission",
        r"permission problems block access|permissions not set up properly",
        "ollama could not open /dev/kfd (EACCES): the user lacks the group that owns it",
        SRC_OLLAMA,
        'msg="amdgpu devices detected but permission problems block access" error="permissions not set '
        "up properly.  Either run ollama as root, or add you user account to the render group. open "
        '/dev/kfd: permission denied"',
    ),
    AppFormat(
        "ollama-radeon-detected",
        "amd-driver-only",
        "Radeon card detected",
        r"Radeon card detected",
        "ollama 0.1.2x says 'Radeon card detected' when /sys/module/amdgpu exists (AMDDetected stats the "
        "module directory), with or without an AMD GPU",
        SRC_OLLAMA_OLD,
        "Error: unable to initialize llm library Radeon card detected, but permissions not set up properly.",
    ),
    AppFormat(
        "ollama-no-rocm",
        "no-library",
        "unable to verify rocm library",
        r"unable to verify rocm library",
        "ollama found no usable ROCm libraries (not a GPU problem)",
        SRC_OLLAMA,
        'msg="unable to verify rocm library: no suitable rocm found, falling back to CPU"',
    ),
    # The same from the end of discovery (gpu/amd_linux.go AMDValidateLibDir from 0.1.29, discover/ from 0.4):
    # "amdgpu detected, but no compatible rocm library found.  Either install rocm v6, or follow manual install ...".
    # A row of its own: a format is tried only on lines that hold its cue.
    AppFormat(
        "ollama-no-rocm-found",
        "no-library",
        "no compatible rocm library found",
        r"amdgpu detected, but no compatible rocm library found",
        "ollama found an AMD GPU and no usable ROCm libraries for it (not a GPU problem)",
        SRC_OLLAMA,
        'msg="amdgpu detected, but no compatible rocm library found.  Either install rocm v6, or follow manual '
        'install instructions"',
    ),
    # --- system calls as Go, Rust and the shell print them ---------------------------------------------
    AppFormat(
        "open-eacces",
        "kfd-eacces",
        "ermission denied",
        r"(?P<path>/dev/(?:kfd|dri/renderD\d+))'?\"?:? \(?[Pp]ermission denied",
        "opening the device node failed with EACCES",
        SRC_GO_OS,
        "open /dev/kfd: permission denied",
    ),
    AppFormat(
        "os-error-13",
        "eacces",
        "(os error 13)",
        r"Permission denied \(os error 13\)",
        "an open failed with EACCES; the node is the one the lines above name",
        SRC_RUST_IO,
        "called `Result::unwrap()` on an `Err` value: Permission denied (os error 13)",
    ),
    AppFormat(
        "usermod-no-group",
        "group-missing",
        "does not exist",
        r"usermod: group '(?P<group>[^']+)' does not exist",
        "the group does not exist on this system: udev gives the nodes to another group",
        SRC_USERMOD,
        "usermod: group 'render' does not exist",
    ),
    # ROCm's OpenCL gives each device it enumerated a driver version of "<build> (HSA1.1,LC)" (ROCclr
    # device/rocm/rocdevice.cpp: the HSA runtime and the LC compiler), which programs print beside the device:
    # clinfo's "Driver version", hashcat's and BOINC's device lines ("OpenCL: AMD/ATI GPU 0: Device 66a1 (driver
    # version 3186.0 (HSA1.1,LC), ..."). The ROCm OpenCL runtime enumerated a GPU: KFD added it.
    AppFormat(
        "rocm-opencl-driver",
        "runtime-gpu",
        "(HSA1.1,LC)",
        rf"(?:GPU \d+: (?P<name>[^(]*?) \(driver version )?\d+\.\d+ \(HSA1\.1,LC\)(?:.*?\b(?P<gfx>{GFX})\b)?",
        "ROCm's OpenCL runtime enumerated a GPU (its driver version names HSA): KFD added it",
        "ROCm/clr rocclr/device/rocm/rocdevice.cpp (driverVersion_ '... (HSA1.1,LC)'); BOINC client/gpu_opencl.cpp",
        "OpenCL: AMD/ATI GPU 0: Device 66a1 (driver version 3186.0 (HSA1.1,LC), device version OpenCL 2.0, 16368MB",
    ),
    # --- OpenCL: no platform at all ----------------------------------------------------------------------------
    # The OpenCL ICD loader found no platform (CL_PLATFORM_NOT_FOUND_KHR, -1001): no OpenCL runtime is installed
    # and registered (/etc/OpenCL/vendors/*.icd), or the loader itself is not the one the program opens. As
    # ffmpeg (libavutil/hwcontext_opencl.c "Failed to get number of OpenCL platforms: %d."), John the Ripper
    # (src/opencl_common.c), hashcat (backend.c "clGetPlatformIDs(): %s"), clinfo ("Number of platforms  0") and
    # darktable (src/common/opencl.c "no working opencl library found") print it.
    AppFormat(
        "ffmpeg-opencl-no-platform",
        "opencl-no-platform",
        "OpenCL platforms: -1001",
        r"Failed to get number of OpenCL platforms: -1001\b",
        "the OpenCL ICD loader found no OpenCL platform (CL_PLATFORM_NOT_FOUND_KHR)",
        "FFmpeg libavutil/hwcontext_opencl.c opencl_device_create",
        "[AVHWDeviceContext @ 0x55d0c4a1e2c0] Failed to get number of OpenCL platforms: -1001.",
    ),
    AppFormat(
        "john-opencl-no-platform",
        "opencl-no-platform",
        "No OpenCL-capable platforms",
        r"No OpenCL-capable platforms were detected",
        "the OpenCL ICD loader found no OpenCL platform",
        "openwall/john src/opencl_common.c",
        "Error: No OpenCL-capable platforms were detected by the installed OpenCL driver.",
    ),
    AppFormat(
        "cl-platform-not-found",
        "opencl-no-platform",
        "CL_PLATFORM_NOT_FOUND_KHR",
        r"\bclGetPlatformIDs\(\)?:?\s*CL_PLATFORM_NOT_FOUND_KHR\b",
        "the OpenCL ICD loader found no OpenCL platform (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR)",
        "hashcat src/backend.c (event_log_error 'clGetPlatformIDs(): %s')",
        "clGetPlatformIDs(): CL_PLATFORM_NOT_FOUND_KHR",
    ),
    AppFormat(
        "clinfo-no-platform",
        "opencl-no-platform",
        "Number of platforms",
        r"^\s*Number of platforms:?\s+0\s*$",
        "clinfo: the OpenCL ICD loader found no OpenCL platform",
        SRC_CLINFO,
        "Number of platforms                               0",
    ),
    AppFormat(
        "darktable-no-opencl-library",
        "opencl-no-platform",
        "no working opencl library found",
        r"no working opencl library found",
        "darktable found no OpenCL library (libOpenCL.so) to load",
        "darktable-org/darktable src/common/opencl.c dt_opencl_init",
        "[opencl_init] no working opencl library found. Continue with opencl disabled",
    ),
    # rocm_bandwidth_test lists the agents it found (RocmBandwidthTest.cpp: "Device: %d,  %s" with the agent's
    # name; later versions add the PCI id and bus): a GPU among them is one ROCr enumerated through KFD. CPU agents
    # are listed too, and an APU's CPU name holds "Radeon" ("AMD Ryzen 7 7840HS w/ Radeon 780M Graphics").
    AppFormat(
        "rocm-bandwidth-test-device",
        "runtime-gpu",
        "Device: ",
        r"^\s*Device: \d+,\s+(?P<name>(?![^,]*\b(?:Ryzen|EPYC|Xeon|Core|Threadripper|Athlon|Processor|CPU)\b)"
        r"[^,]*\b(?:Radeon|Instinct|Vega|gfx[0-9a-f]{3,4})\b[^,]*)",
        "rocm_bandwidth_test found a GPU agent: the ROCm runtime enumerated it, so KFD added it",
        "ROCm/rocm_bandwidth_test RocmBandwidthTest.cpp (PrintVersion/PrintTopology: 'Device: %d,  %s')",
        "    Device: 1,  Vega 10 XTX [Radeon Vega Frontier Edition]",
    ),
    AppFormat(
        "clinfo-device",
        "runtime-gpu",
        "Device #",
        rf"`-- Device #\d+: (?P<gfx>{GFX})\b",
        "ROCm's OpenCL listed a GPU: KFD added it and this user could open it",
        SRC_CLINFO,
        " `-- Device #0: gfx1033",
    ),
    # AMD's own clinfo (the APP SDK's CLInfo sample, ROCm's /opt/rocm/opencl/bin/clinfo) prints each device's
    # CL_DEVICE_NAME as "  Name:" and tabs, Oblomov's clinfo as "  Device Name" and spaces; ROCm's OpenCL names a
    # GPU device by its target, as rocminfo names a GPU agent on its "  Name:" line. A CPU device or agent is named
    # by its processor, an ISA line by its triple.
    AppFormat(
        "rocm-device-name",
        "runtime-gpu",
        "Name",
        rf"^\s*(?:Device )?Name:?\s+(?P<gfx>{GFX})(?::\S+)?\s*$",
        "ROCm's runtime (rocminfo, or ROCm's OpenCL in AMD's clinfo) named a GPU device by its target: KFD added it "
        "and the runtime opened it",
        "ROCm/ROCm-OpenCL-Runtime (clinfo's 'Name:' line, CL_DEVICE_NAME); ROCm/rocminfo rocminfo.cc ('Name:')",
        "  Name:\t\t\t\t\t\t gfx803",
    ),
    # --- containers -------------------------------------------------------------------------------------
    AppFormat(
        "docker-device-missing",
        "container-device-missing",
        "error gathering device information",
        r"error gathering device information while adding (?:custom )?device \\?\"(?P<path>/dev/[^\"\\]+)"
        r"\\?\"?[:,]\s*(?:stat \S+:\s*)?(?P<error>no such file or directory)",
        "the container runtime's host has no such device node",
        SRC_DOCKER,
        "docker: Error response from daemon: error gathering device information while adding custom "
        'device "/dev/kfd": no such file or directory.',
    ),
    # --- DKMS ------------------------------------------------------------------------------------------
    AppFormat(
        "dkms-compile-error",
        "dkms-build-error",
        "/var/lib/dkms/",
        r"/var/lib/dkms/(?P<module>amdgpu|amdkfd)/(?P<version>[^/\s]+)/build/\S+:\d+:(?:\d+:)? (?:fatal )?error:",
        "the amdgpu DKMS module does not compile for this kernel",
        SRC_DKMS,
        "/var/lib/dkms/amdgpu/1.8-192/build/amd/amdgpu/amdgpu_atpx_handler.c:577:19: error: initialization "
        "from incompatible pointer type",
    ),
    AppFormat(
        "dkms-bad-status",
        "dkms-build-error",
        "Bad return status for module build",
        r"Bad return status for module build on kernel: (?P<release>\S+)",
        "dkms could not build the module for this kernel",
        SRC_DKMS,
        "Error! Bad return status for module build on kernel: 4.15.0-33-generic (x86_64)",
    ),
    AppFormat(
        "dkms-make-error",
        "dkms-build-error",
        "/var/lib/dkms/",
        # GNU make's "make: *** [target] Error N" for the DKMS build tree (Arch's rock-dkms-bin: amdgpu-3.8/30).
        r"make(?:\[\d+\])?: \*\*\* \[[^\]]*?/var/lib/dkms/(?P<module>amdgpu|amdkfd)[-/](?P<version>[^/\]\s]+)[^\]]*\] "
        r"Error \d+",
        "the amdgpu DKMS module does not compile for this kernel",
        SRC_DKMS,
        "make: *** [_module_/var/lib/dkms/amdgpu/3.9-17/build] Error 2",
    ),
    AppFormat(
        "dkms-build-skipped",
        "dkms-build-skipped",
        "was skipped since the",
        # dkms: "Module build for kernel X was skipped since the / kernel headers for this kernel does not seem to
        # be installed." (older: "for the currently running kernel ... kernel source"). The module is named on the
        # "Loading new <module>-<version> DKMS files..." line above it.
        r"Module build for (?:kernel (?P<release>\S+)|the currently running kernel) was skipped since the",
        "dkms built nothing for this kernel: its headers are not installed",
        SRC_DKMS,
        "Module build for kernel 4.18.14-200.fc28.x86_64 was skipped since the",
    ),
    AppFormat(
        "dkms-status",
        "dkms-status",
        "amdgpu",
        r"^amdgpu[,/] ?(?P<version>[^,\s]+), (?P<release>\d+\.\d+[^,\s]*), (?P<arch>[\w-]+): installed",
        "dkms status: a kernel the amdgpu DKMS module is built and installed for",
        SRC_DKMS,
        "amdgpu, 1.8-192, 4.15.0-29-generic, x86_64: installed",
    ),
    AppFormat(
        "dkms-status-unbuilt",
        "dkms-status-unbuilt",
        "amdgpu",
        # do_status prints "module/version: added" (dkms 2: "module, version: added") while no build exists, and
        # "module/version, kernel, arch: built" for a build that is not installed.
        r"^amdgpu(?:/|, )(?P<version>[^,:\s]+)(?:, (?P<release>\d+\.\d+[^,\s]*), (?P<arch>[\w-]+))?: "
        r"(?P<state>added|built)\b",
        "dkms status: the amdgpu DKMS module added and built for no kernel, or built and not installed",
        SRC_DKMS + " do_status()",
        "amdgpu/6.10.5-2084815.24.04: added",
    ),
    # --- the module loader refusing a module built for another kernel ----------------------------------
    AppFormat(
        "module-symbol-version",
        "module-refused",
        "disagrees about version of symbol",
        r"(?P<module>[\w-]+): disagrees about version of symbol (?P<symbol>\w+)",
        "the kernel refused a module built against another kernel's symbol versions",
        SRC_MODULE + " version.c check_version() ('%s: disagrees about version of symbol %s')",
        "amdgpu: disagrees about version of symbol module_layout",
    ),
    AppFormat(
        "module-vermagic",
        "module-refused",
        "version magic '",
        r"(?P<module>[\w-]+): version magic '[^']*' should be",
        "the kernel refused a module whose version magic names another kernel",
        SRC_MODULE + " main.c check_modinfo() (\"%s: version magic '%s' should be '%s'\")",
        "amdgpu: version magic '6.5.0-14-generic SMP mod_unload ' should be '6.5.0-15-generic SMP mod_unload '",
    ),
    AppFormat(
        "module-enoexec",
        "module-refused",
        "could not insert",
        r"could not insert (?:module )?'?(?P<module>[^'\s:]+)'?: (?:Exec format error|[Ii]nvalid module format)",
        "modprobe or insmod: the kernel refused the module file (ENOEXEC: built for another kernel)",
        "kmod-project/kmod tools/modprobe.c, tools/insmod.c (\"could not insert '%s': %s\"; strerror or "
        "'Invalid module format' for ENOEXEC, as module-init-tools' insmod)",
        "modprobe: ERROR: could not insert 'amdgpu': Exec format error",
    ),
    # --- HSA_OVERRIDE_GFX_VERSION as set and as libhsakmt judges it -------------------------------------
    AppFormat(
        "override-setting",
        "override-setting",
        "HSA_OVERRIDE_GFX_VERSION",
        # Shells, env files, Makefiles, unit files (Environment="..."), docker -e and compose files; the value as
        # written, quoted or not. The rules judge it (assess/report_rules.py: override_refused).
        r"\bHSA_OVERRIDE_GFX_VERSION\s*(?::?=|:)[ \t]*"
        r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]*)(?P=quote)|(?P<value>[^\s\"'`*#;,)\]]+))",
        "HSA_OVERRIDE_GFX_VERSION set to a value, as written",
        SRC_HSAKMT + ' (getenv("HSA_OVERRIDE_GFX_VERSION"))',
        "export HSA_OVERRIDE_GFX_VERSION=10.3.0",
    ),
    AppFormat(
        "hsakmt-override-invalid",
        "override-invalid",
        " is invalid",
        r"HSA_OVERRIDE_GFX_VERSION (?P<value>\S+) is invalid",
        "libhsakmt refused HSA_OVERRIDE_GFX_VERSION: the topology does not load and no GPU is enumerated",
        SRC_HSAKMT + " (pr_err when sscanf '%u.%u.%u%c' does not fill three, or a part is out of range)",
        "HSA_OVERRIDE_GFX_VERSION 1100 is invalid",
    ),
    # --- amdgpu bound to a GPU, as lspci -k, busybox lspci and lsmod show it ---------------------------
    AppFormat(
        "lspci-driver-in-use",
        "amdgpu-bound",
        "Kernel driver in use: amdgpu",
        r"Kernel driver in use: amdgpu\b",
        "amdgpu drives this GPU (lspci -k)",
        "pciutils/pciutils ls-kernel.c show_kernel() ('Kernel driver in use')",
        "\tKernel driver in use: amdgpu",
    ),
    AppFormat(
        "busybox-lspci",
        "amdgpu-bound",
        " amdgpu",
        r"^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] Class 03[0-9a-f]{2}: (?P<vendor>1002):(?P<device>[0-9a-f]{4}) amdgpu$",
        "amdgpu drives this GPU (busybox lspci: slot, class, ids, driver)",
        "mirror/busybox util-linux/lspci.c (prints the uevent DRIVER after the ids)",
        "05:00.0 Class 0300: 1002:1638 amdgpu",
    ),
    AppFormat(
        "lsmod-amdgpu",
        "amdgpu-loaded",
        "amdgpu",
        r"^amdgpu\s+\d+\s+\d+",
        "the amdgpu module is loaded (lsmod)",
        "kmod tools/lsmod.c (name, size, use count, users)",
        "amdgpu               9682944  0",
    ),
    # --- management tools (amdgpu's sysfs, not KFD) ---------------------------------------------------
    AppFormat(
        "amd-smi-denied",
        "kfd-eacces",
        "Permission denied; owner=",
        r"(?P<path>/dev/(?:kfd|dri/(?:card|renderD)\d+)): Permission denied; "
        r"owner=[\w-]+\(\d+\):(?P<group>[\w-]+)\(\d+\)",
        "amd-smi could not open a GPU's device node (EACCES); it names the node's owning group",
        SRC_SMI,
        "  - /dev/dri/card0: Permission denied; owner=root(0):video(39);",
        (r"owner=[\w-]+\(\d+\):(?P<group>[\w-]+)\(",),
    ),
    AppFormat(
        "amd-smi-missing-groups",
        "groups-missing",
        "User is missing the following required groups",
        # amdsmi_cli: required_groups - {names of os.getgroups()}: the groups this process is not in
        r"User is missing the following required groups: (?P<groups>[\w, -]+)\.",
        "amd-smi's process is not in these groups (render, video); where it still lists GPUs it runs as root or "
        "in a container that grants the nodes otherwise",
        SRC_SMI,
        "WARNING: User is missing the following required groups: render, video. Please add user to these groups.",
    ),
    AppFormat(
        "amd-smi-gpu",
        "driver-table",
        "GPU: ",
        r"^GPU: (?P<index>\d+)\s*$",
        "amd-smi reports a GPU amdgpu drives",
        SRC_SMI,
        "GPU: 0",
    ),
)

# rocm-smi prints a banner and then one row per GPU (an index, then temperatures, power, clocks);
# the rows are recognised inside the banner's block (evidence.text).
ROCM_SMI_BANNER = "ROCm System Management Interface"
ROCM_SMI_END = "End of ROCm SMI Log"
# rocm-smi's per-device lines (rocm_smi.py printLog 'GPU[%s]\t\t: %s', printErrLog behind logging's "ERROR: ").
ROCM_SMI_DEVICE = re.compile(r"^[\s>]*(?:ERROR:\s*)?GPU\[(?P<index>\d+)\]\s*:\s")
# A GPU's row of the concise table: "0  [0x0b36 : 0x00]  45.0°C" (ROCm 5), "0  45.0c" (ROCm 4), and from ROCm 6
# "Device Node IDs (DID, GUID)": "0       1     0x744a,   5599   N/A ..." (rocm_smi.py showAllConcise).
ROCM_SMI_ROW = re.compile(
    r"^\s*(?P<index>\d+)\s+(?:\[0x[0-9a-f]+ : 0x[0-9a-f]+\]|\d+(?:\.\d+)?\s*°?[cC]|\d+\s+0x[0-9a-f]{4},\s)"
)

# Environment variables that select GPUs: ROCr's filter applies first, then HIP's (and CUDA's, which
# HIP honours) index into what ROCr left. ROCm docs: "GPU isolation techniques".
# How a variable is given a value: "=" as a shell or a unit file sets it (the value quoted or not), a program's own
# code (Python's os.environ["X"] = "v", os.environ.setdefault("X", "v"), C's setenv("X", "v", 1)), or ":" as
# ollama's "server config" map prints it (OVERRIDE only: no visibility variable is printed that way).
_SET_TO = r"""(?:["']?\]?\s*=\s*|["']\s*,\s*)["']?"""
# A negative index is kept: HIP reads it, and it ends the list (rule_no_device).
VISIBILITY = re.compile(
    r"\b(?P<var>ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|CUDA_VISIBLE_DEVICES)"
    + _SET_TO
    + r"(?P<value>-?[0-9][0-9,]*)\b"
)
OVERRIDE = re.compile(r"\bHSA_OVERRIDE_GFX_VERSION(?::|" + _SET_TO + r")\"?(?P<value>\d+\.\d+\.\d+)")

# Prose that says the program run hides the GPUs itself ("the test explicitly disables all GPUs in the runtime", "the
# example actually tries to ignore the GPU"): a script, test or sample that sets the visibility variables (or the
# framework's device list) to nothing before the runtime starts. An intent, not a symptom: "ignores the GPU" alone
# is what a program without a GPU does, so ignoring counts only as what it tries or is meant to do.
PROGRAM_HIDES_GPUS = re.compile(
    r"\b(?:the|this|that|my|your|said|their)\s+(?:\w+\s+)?"
    r"(?:test|script|example|sample|code|notebook|program|demo|tutorial)s?\b"
    r"(?:\s+(?!not\b|never\b|no\b)[\w']+(?<!n't)){0,3}?\s+"
    r"(?:disables?|disabled|hides?|hid|masks?|masked"
    r"|(?:tries|tried|tries hard|is meant|was meant|is supposed|was supposed|wants|wanted)\s+to\s+"
    r"(?:ignore|disable|hide|mask))"
    r"\s+(?:all\s+(?:of\s+)?|any\s+)?(?:the\s+)?(?:gpus?|gpu devices)\b(?!\s+in\s+(?:the\s+)?(?:bios|uefi))",
    re.I,
)

# Hosts with no amdgpu/KFD kernel driver at all: Windows (and WSL2, whose kernel is Microsoft's and
# reaches the GPU through /dev/dxg), macOS. The WSL2 kernel release ends in "-microsoft-standard-WSL2".
FOREIGN_HOST = re.compile(
    r"\bWSL2?\b|microsoft-standard|\bWindows (?:10|11|Server)\b|\bDocker Desktop\b|/dev/dxg\b|\bwinver\b"
    r"|\bmacOS\b|\b[A-Z]:\\Users\\",
    re.IGNORECASE,
)

WSL_WORD = re.compile(r"\bWSL2?\b", re.I)

# The hosts among those that can never pass a host's /dev/kfd into a container, whatever is installed:
# Docker Desktop runs its engine in a VM of its own (on Linux too), WSL2's kernel is Microsoft's, and a
# Windows prompt (C:\Users\...) runs Docker Desktop. "Windows 10" alone may be another disk of a dual-boot PC.
# Docker Desktop for Linux is the package docker-desktop, and its engine the docker context desktop-linux.
STRONG_FOREIGN = re.compile(
    r"\bDocker[ -]Desktop\b|\bdesktop-linux\b|\bWSL2?\b|microsoft-standard|/dev/dxg\b|\b[A-Z]:\\Users\\", re.I
)
# /dev/kfd handed to a container: docker/podman "--device=/dev/kfd", a compose file's "devices:" list, or the
# node bind-mounted as a volume ("-v /dev/kfd:/dev/kfd", "--volume=/dev/kfd:/dev/kfd"); the path may be quoted
# (--device="/dev/kfd").
KFD_PASSED = re.compile(
    r"--device[= ]\s*[\"']?/dev/kfd\b|^\s*-\s*[\"']?/dev/kfd\b|(?:(?<![\w-])-v|--volume)[= ]\s*/dev/kfd:"
    # bubblewrap's "--dev-bind /dev/kfd /dev/kfd", and an argument list's item on a line of its own ("/dev/kfd",)
    r"|--dev-bind(?:-try)?[= ]\s*[\"']?/dev/kfd\b|^\s*[\"']/dev/kfd[\"'],?\s*$"
)
# A container definition's /dev/kfd entry commented out: a compose file's device list item or a run command's flag
# behind "#" (a quoted line may keep its markdown backtick). The container then gets no /dev/kfd.
KFD_ENTRY_COMMENTED = re.compile(r"^[\s`>]*#\s*(?:-\s*[\"']?/dev/kfd\b|--device[= ]\s*[\"']?/dev/kfd\b)")
# Adding (enabling, passing) a device told as what made it work ("adding this to compose.yml ... makes it work"): read
# on the lines just before a /dev/kfd entry (assess/report_rules.rule_kfd_entry_told).
DEVICE_ADDED_WORKS = re.compile(
    r"\b(?:add(?:ed|ing)?|pass(?:ed|ing)?|enabl(?:ed|ing)|uncomment(?:ed|ing)?|mapp(?:ed|ing))\b[^\n]{0,120}?"
    r"(?<!n't )(?<!not )(?<!never )\b(?:makes? it work|made it work|works|worked|fixe[sd] it|solved it)\b"
    # "For ollama to work on my AMD GPU, I had to share the following paths with the sandbox"
    r"|\bto\s+work\b[^\n]{0,80}?\bhad\s+to\s+(?:share|bind|pass|add|expose|whitelist|allow|map)\b",
    re.I,
)
# The DRM nodes handed over and /dev/kfd not ("/dev/dri devices are configured, but /dev/kfd is not always added"):
# only a container's (or a sandbox's) device list hands over /dev/dri nodes, so the pairing names one
# (assess/report_rules.kfd_told_absent_in_container); DRI_CUE is the literal every such line holds.
DRI_CUE = "/dev/dri"
DRI_BUT_NOT_KFD = re.compile(
    r"/dev/dri\b[^.\n]{0,80}?\bbut\b[^.\n]{0,20}?/dev/kfd\b[`'\"]?\s+(?:is|was|are|were|gets?|got)?\s*"
    # handed-over verbs only: "but /dev/kfd is not created" is a kernel without KFD, not a device list
    r"(?:not|n't|never)\s+(?:always\s+|automatically\s+)?(?:added|passed|mapped|mounted|included|forwarded|exposed|"
    r"bound|listed|configured)\b",
    re.I,
)


# Prose that says a GPU is not supported ("the AMD 6700M GPU is not supported"). Users say it of ROCm's
# libraries; the kernel's own wording ("... not supported in kfd") is read by the log rules instead.
PROSE_UNSUPPORTED = re.compile(
    r"\b(?:is|are|was|were)(?:\s+\w+ly)?(?:n't| not| no longer)\s+(?:(?:officially|yet|fully)\s+)?supported\b"
    r"(?!\s+(?:in|by)\s+(?:kfd|the kernel))"
    r"|\b(?:dropped|removed|ended)\s+(?:official\s+)?support\s+for\b|\bno longer supports?\b"
    # "does not yet support your GPU (gfx1032)", "support has been abandoned", "likely unsupported by ROCm"
    # "We are not officially supporting Navi series of cards": the progressive, of a kind or a series of GPUs
    r"|\b(?:are|is|am)(?:n't| not)\s+(?:yet\s+|officially\s+)?supporting\s+(?:[\w-]+\s+){0,3}?"
    r"(?:gpus?|cards?|series|apus?|igpus?|devices?)\b"
    # "ROCm does not support integrated GPUs": a kind of GPU, plural, without a determiner too
    r"|\b(?:does|do|did)(?:n't| not)\s+(?:yet\s+|officially\s+)?support\s+(?:(?:your|my|the|this|that|our|any)\s+)?"
    r"(?:\w+\s+)?(?:gpus?|cards?|graphics|apus?|igpus?|devices?)\b"
    r"|\bsupport\s+(?:has|had|was|is)\s+(?:been\s+)?(?:abandoned|removed|dropped|discontinued)\b"
    r"|\b(?:likely|probably|now|officially)\s+unsupported\b|\bunsupported\s+(?:by|in)\s+rocm\b"
    # the subject inside a question ("Why is the gfx1150 not supported on Linux?"), or an apposition after the GPU
    # ("It is a gfx90c iGPU, not officially supported"); the rule still needs a GPU named in the line
    r"|\b(?:is|are|was|were)\s+(?:[\w()+-]+\s+){1,3}?(?:still\s+)?not\s+(?:(?:officially|yet|fully)\s+)?supported\b"
    r"|,\s*(?:\w+ly\s+)?not\s+(?:(?:officially|yet|fully)\s+)?supported\b"
    # "there isn't any plan to officially support gfx1036", "no plans to support the iGPU"
    r"|(?:\bno|n[’']t\s+any|\bnot\s+any)\s+plans?\s+to\s+(?:\w+\s+)?support\b"
    # "there is no support in any of the libraries for this GPU"
    r"|\bno\s+support\s+(?:(?:in|from|by)\b[^.\n]{0,60}?\s)?for\s+(?:this|that|my|your|the|our)\s+(?:\w+\s+)?"
    r"(?:gpu|card|device|graphics|apu|igpu)",
    re.I,
)
# A yes/no question ("Is my GPU not supported by HIP?", "So is the RX 580 not supported?"): the verb first and a
# question mark at the end. It is the person's doubt, not a statement, unless "still" or "yet" presupposes the answer
# ("Is the gfx1036 still not supported?"); a question with a question word ("Why is ... not supported?") presupposes it.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_YES_NO_OPENING = re.compile(
    r"^(?:(?:so|or|but|and|then|also)\W+)*"
    r"(?:is|are|was|were|isn't|aren't|has|have|hasn't|haven't|did|didn't|does|do|doesn't|don't)\b",
    re.I,
)
_PRESUPPOSED = re.compile(r"\b(?:still|yet)\b", re.I)


def yes_no_question(line: str, at: int) -> bool:
    """Whether the sentence of ``line`` that holds position ``at`` is a yes/no question without a presupposition."""
    start = max((m.end() for m in _SENTENCE_END.finditer(line, 0, at)), default=0)
    end = _SENTENCE_END.search(line, at)
    if end is None or end.group(0) != "?":
        return False
    sentence = line[start : end.end()].strip(" \t>*_`\"'")
    return bool(_YES_NO_OPENING.match(sentence)) and not _PRESUPPOSED.search(sentence)


# A gfx target as a word of prose: not part of a file name (TensileLibrary_gfx803.dat, gfx1030.co) or an ISA name;
# a full stop that ends the sentence ("my card reports gfx1032.") is not a file name's.
PROSE_GFX = re.compile(r"(?<![\w-])(gfx[0-9][0-9a-f]{2,3})(?![\w-]|\.\w)")
# A target attributed to a GPU in prose, searched in lower-cased lines: after a model number ("9060xt is `gfx1200`",
# "7800xt (gfx1101)", "7900 xtx 24gb (gfx1100)") or a word for the GPU ("my gpu is gfx1032"). Read where a line
# names several targets, which PROSE_GFX leaves alone as a list of what a program supports; a target after
# "supported is" or a build flag's "=" is not attributed to a GPU.
GPU_TARGET_ATTRIBUTED = re.compile(
    r"(?:(?<![\w.-])(?:rx\s?)?\d{3,4}\s?(?:xtx|xt|gre|m|s)?|\b(?:gpu|card|igpu|apu|dgpu))(?:\s+\d{1,3}\s?gb)?"
    r"\s*(?:\(\s*|\bis\s+(?:an?\s+)?)[`'\"]?(gfx[0-9][0-9a-f]{2,3})(?![\w-]|\.\w)"
)
# GPU families named in prose without a number ("Polaris is no longer supported"): a line that names one
# speaks of a GPU, as "gpu" or "card" would.
PROSE_FAMILY = re.compile(
    r"\b(?:polaris|vega|navi|fiji|tonga|hawaii|ellesmere|baffin|lexa|gcn\s?[1-5]|rdna\s?[1-4])\b", re.I
)
# Prose that says a user lacks the group that owns /dev/kfd ("was not in the render group").
# The verb may be left out after the subject, as people write a cause down ("the issue was `ollama` user not in
# the render group", "my user not a member of video group"); rocminfo's own "is not member of" drops the "a".
NOT_IN_GROUP = re.compile(
    r"(?:\b(?:is|was|are|were|am|'m)(?:n't| not)|\b(?:user|account)[`'\"]?\s+not)\s+"
    r"(?:(?:a\s+)?member\s+of|in|part\s+of|added\s+to)\s+(?:the\s+)?"
    r"[`'\"]?(?P<group>render|video)[`'\"]?\s+group",
    re.I,
)
# A kernel version named in prose: "kernel 6.8", "Linux 6.8.7", "6.8 Kernel", "6.5.0-14 kernel".
PROSE_KERNEL = re.compile(
    r"\b(?:kernel|linux)\s+v?(?P<a>\d\.\d{1,2})(?:\.\d+)?(?!\d|\.\d)"
    r"|(?<![\d.])(?P<b>\d\.\d{1,2})(?:\.\d+)?(?:-[\w.]+)?\s+kernel\b",
    re.I,
)
# What another product's version is named after ("ROCm 6.2 kernel driver", "ollama 0.3.13 kernel"): a version
# there is that product's, not the kernel's (rule_prose_kernel).
VERSION_OF_ANOTHER = re.compile(
    r"\b(?:rocm|hip|ollama|torch|pytorch|adrenalin|amdgpu-install|mesa|llvm|driver|version)\s*v?$", re.I
)
# Prose that says a program runs on the CPU, not the GPU ("Ollama doesn't use gpu", "uses only the CPU").
PROSE_CPU_ONLY = re.compile(
    r"\b(?:does ?n[o']?t|is ?n[o']?t|not|won'?t|never)\s+(?:use|using|used|detect\w*|recogni[sz]\w*|see|find|"
    r"pick\w* up)\s+(?:the\s+|my\s+|any\s+)?(?:amd\s+|radeon\s+)?(?:gpu|graphics card|card)s?\b"
    r"|\b(?:uses?|using|runs?|running)\s+(?:only\s+)?(?:on\s+)?(?:the\s+)?cpu\b|\bfalls? back to (?:the )?cpu\b",
    re.I,
)
# Prose that says the GPU is not seen or does not work ("rocminfo can not get amdgpu info", "I can only see the
# CPU", "it doesn't work for 7800XT"): read only where the text also shows WSL (app_rules.rule_wsl_gpu_unlisted).
PROSE_NO_GPU_SEEN = re.compile(
    r"\b(?:does ?n[o']?t|do ?n[o']?t|not|never|won'?t) work\w*\b|\bcan ?not get\b|\bcan'?t get\b"
    r"|\bonly (?:see|seeing|shows?|showing|lists?|listing|detects?|detecting|finds?|finding) (?:the |my |an? )?"
    r"(?:[\w()-]+ ){0,2}?cpu\b|\bonly the cpu\b|\bnot (?:being )?detected\b"
    r"|\bfailed on\b|\bfail(?:s|ed)? to (?:detect|see|find|recogni[sz]e) (?:the |my |any )?(?:amd )?(?:gpu|card)\b",
    re.I,
)
# Prose that a GPU is missing from a support list ("6900XT (GFX1030) havn't been in Compatibility list of rocm6.1.3
# on WSL2", "the 7600 XT is not on the WSL support matrix"): any negation ending in n't, typos included.
PROSE_NOT_ON_LIST = re.compile(
    r"\b(?:not|never|\w+n'?t)\s+(?:been\s+|yet\s+|even\s+){0,2}(?:in|on|part of|(?:listed|included) (?:in|on))\s+"
    r"(?:the\s+|their\s+|amd'?s\s+)?(?:[\w.-]+\s+){0,3}?(?:compatibility|support(?:ed)?)\s*(?:list|matrix|table)\b",
    re.I,
)
# Prose that says the machine has no AMD GPU ("a system without any AMD card", "the system has no AMD GPUs").
PROSE_NO_AMD = re.compile(
    r"\b(?:without|no|don'?t have|do not have|does ?n'?t have|does not have|lacks?)\s+(?:any\s+|an?\s+)?"
    r"(?:amd|radeon)\s+(?:gpus?|cards?|graphics(?: cards?)?|dgpus?)\b",
    re.I,
)
# A display controller line of lspci (with or without -nn), any vendor: a listing that names no AMD device
# shows a machine without one. Virtual display adapters (pci.ids names) show a VM whose GPU was not passed in.
PCI_DISPLAY = re.compile(
    r"^\s*(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] (?:VGA compatible controller|Display controller|"
    r"3D controller)(?: \[03[0-9a-f]{2}\])?: (?P<name>.+?)\s*$",
    re.I,
)
VIRTUAL_DISPLAY = re.compile(
    r"VMware|SVGA II|\bQXL\b|Virtio|virtio|Bochs|Cirrus Logic GD 5446|Hyper-V|VirtualBox|\bQEMU\b", re.I
)
# The out-of-tree driver's build failing, in prose ("`amdgpu-dkms` fails with that kernel") or as dpkg says it
# ("Errors were encountered while processing:" then the package names, one per line).
PROSE_DKMS = re.compile(
    r"\b(?:amdgpu|rock|rocm)-dkms(?:_[\w.+~:-]*?\.deb\b|\b)[`'\"]?[^.\n]{0,40}?\b(?:fails?|failed|failing|errors?|broke\w*|"
    r"(?:does ?n[o']?t|won'?t|can'?t|cannot) (?:build|compile|install))\b"
    r"|\bdkms\b[^.\n]{0,30}?\b(?:build|install|compil)\w*\s+(?:fails?|failed|error)"
    # the verb first: "Unable to build rock dkms for custom kernel", "could not build amdgpu-dkms"
    r"|\b(?:unable to|fail(?:s|ed|ing)? to|can'?t|cannot|could ?n[o']?t)\s+(?:build|compile|install)\s+(?:the\s+)?"
    r"(?:amdgpu|rock|rocm)[ -]dkms\b"
    # dkms's apport hook, printed after a build failed for a kernel the distribution did not ship
    r"|\bERROR \(dkms apport\)",
    re.I,
)
# "this works: amdgpu-install --usecase=rocm --no-dkms": ROCm works once the DKMS module is left out, so the
# DKMS build is what fails (the kernel's own amdgpu and KFD do the work).
NO_DKMS_WORKS = re.compile(r"\bworks?\b[^\n]{0,80}--no-dkms\b|--no-dkms\b[^\n]{0,40}\bwork(?:s|ed|ing)?\b", re.I)
# The out-of-tree driver said not to build for a kernel, without naming the package: "rocm wouldn't build for
# it", "the module ... fails in all other kernels", "the base driver does not compile on 5.9".
PROSE_BUILD_FAILS = re.compile(
    r"\b(?:(?:the\s+)?(?:rocm|rock|amdgpu|kfd|base|kernel)\s+(?:driver|module)|the\s+(?:driver|module)|rocm|rock|amdgpu)"
    r"\s+(?:would ?n'?t|won'?t|"
    r"does ?n'?t|did ?n'?t|does not|did not|fails? to|failed to|can'?t|cannot)\s+(?:build|compile)\b"
    r"|\b(?:module|driver)\b[^.\n]{0,40}\b(?:builds|compiles) fine\b[^.\n]{0,40}\bfails? (?:in|on|for|with)\b",
    re.I,
)
DPKG_DKMS = re.compile(r"^\s*(?P<package>(?:amdgpu|rock|rocm)-dkms)\s*$", re.M)
# Prose that says the GPU's path lacks PCIe AtomicOps ("VMware not allowing PCIe Atomics", "rx580 required PCIe
# atomics", "my board does not support atomics"): KFD's 'PCI rejects atomics' told in words.
# AER's dump of the TLP a port refused (drivers/pci/pcie/aer.c, "  TLP Header: %02x%02x%02x%02x ..." in 4.x,
# pcie_print_tlp_log's "TLP Header: %08x ..." since 6.15): its first byte is the request's Fmt/Type. The PCIe Base
# Specification's Fmt/Type table gives the AtomicOp requests: FetchAdd 0x4C/0x6C, Swap 0x4D/0x6D, CAS 0x4E/0x6E
# (32- and 64-bit addresses). A port that logs one as malformed or unsupported has no AtomicOp routing for the GPU.
AER_TLP_HEADER = re.compile(r"\bTLP Header:\s*(?:0x)?(?P<fmt_type>[0-9a-f]{2})[0-9a-f]{6}\b", re.I)
ATOMIC_OP_FMT_TYPES = frozenset({0x4C, 0x4D, 0x4E, 0x6C, 0x6D, 0x6E})
PROSE_ATOMICS = re.compile(
    r"\b(?:requires?d?|needs?|needed|lacks?|lacking|without|no)\s+(?:the\s+)?(?:pcie?\s+)?"
    r"(?:atomics?|atomic\s*ops|atomicops|atomic operations)\b"
    r"|\b(?:not|n't|never)\s+(?:allow\w*|support\w*|pass\w*|expos\w*|provid\w*|offer\w*)\s+(?:the\s+)?(?:pcie?\s+)?"
    r"(?:atomics?|atomic\s*ops|atomicops|atomic operations)\b"
    r"|\b(?:pcie?\s+)?(?:atomics?|atomicops|atomic operations)\s+(?:are\s+|is\s+)?(?:not supported|unsupported|missing|"
    r"disabled|not available)\b",
    re.I,
)
# A GPU handed to a virtual machine, in words or as the hypervisor's option.
PASSTHROUGH = re.compile(r"\bpass(?:ed|ing|es)?[ -]?through\b|\bvfio(?:-pci)?\b|\bhostpci\d", re.I)
# A udev rule for the kfd node (KERNEL=="kfd" with a GROUP or MODE), and prose that says a rule is missing.
KFD_UDEV_RULE = re.compile(r"KERNEL\s*==\s*\"kfd\"[^\n]*(?:GROUP|MODE)\s*:?=", re.I)
PROSE_NO_UDEV = re.compile(
    r"\b(?:no|missing|without\s+(?:a|the|any))\s+udev\s+rules?\b|\budev\s+rules?\s+(?:is|was|were|are)\s+"
    r"(?:missing|absent|not installed)\b",
    re.I,
)
# Prose that says what came before it fixed the problem ("just this was required", "that did the trick").
PROSE_FIXED = re.compile(
    r"\b(?:was|is) (?:all (?:that was )?)?required\b"
    r"|\b(?:fix(?:es|ed|ing)?|solv(?:es|ed|ing)|resolv(?:es|ed|ing)) (?:it|this|that|the|my)"
    r"(?: (?:issue|problem|error|crash|segfault))?\b"
    r"|\bdid the trick\b|\b(?:it|that|this) worked\b|\bworks now\b|\bnow it works\b"
    r"|\bhad (?:some |great |good )?success\b"
    # Chinese "solved" in its completed form, not after a negation (没有/没/未/不).
    r"|(?<!没有)(?<!没)(?<!未)(?<!不)解决了",
    re.I,
)
# The cheap substrings one of PROSE_FIXED's tellings holds: the lines to search.
FIXED_CUES = ("required", "fix", "solv", "resolv", "trick", "worked", "works now", "now it works", "success", "解决了")
# A negation on the line of a telling: "didn't fix it", "not solved", "never worked", "no longer", 没有解决.
# A claim told as a possibility or a capability, not as what was found ("the x4 lane could be PCIe Gen2 ... which
# means it does not support PCIe Atomics", "maybe the riser doesn't pass atomics", "we can still do atomic operations
# without PCIe atomics"): a modal word in the sentence before the claim. An answer's "I would guess that ..." stays a
# finding: maintainers settle causes in those words.
HEDGED = re.compile(r"\b(?:could|might|may|maybe|perhaps|possibly|if|whether|can(?!'t|not))\b", re.I)
NEGATED = re.compile(r"\b(?:not|never|no longer)\b|n't\b|没有|未能", re.I)
# KFD and WSL's /dev/dxg named together, as AMD explains why a program finds no GPU under WSL ("the GPU detection
# utilizes the kfd device which ... is replaced with dxg inside WSL", "/dev/kfd doesn't exist, only /dev/dxg").
PROSE_KFD_FOR_DXG = re.compile(r"\bkfd\b[^\n]{0,160}?\bdxg\b|\bdxg\b[^\n]{0,160}?\bkfd\b", re.I)
# TheRock's multi-arch wheels (RELEASES.md, "Installing multi-arch PyTorch Python packages") carry each GPU's kernels in
# a device package of its own (amd-torch-device-gfx1100, rocm-sdk-device-gfx1100, pulled in by torch[device-gfx1100]);
# a telling that it is not installed: "fails unless the exact-arch device wheel is installed", "not installing
# amd-torch-device-gfx packages", "without the rocm-sdk-device-gfx1151 package".
DEVICE_PACKAGE_MISSING = re.compile(
    r"\b(?:unless|without|not\s+install\w*|missing|forg[eo]t\w*\s+(?:to\s+)?install\w*)\b[^.\n]{0,60}?"
    r"(?:\bdevice[- ](?:specific\s+)?(?:wheels?|packages?)\b|\b(?:amd-torch\w*|rocm-sdk)-device-gfx"
    r"|\[device-gfx)",
    re.I,
)
# A BLAS call failing with the status rocBLAS/hipBLAS/hipBLASLt return when no kernel fits ("CUDA error:
# HIPBLAS_STATUS_INTERNAL_ERROR when calling `hipblasSgemm(...)`", rocblas_status_internal_error): beside a GPU whose
# target no rocBLAS release builds, the missing Tensile kernels.
BLAS_STATUS_FAILED = re.compile(
    # a status name is one to four words (HIPBLAS_STATUS_INTERNAL_ERROR, rocblas_status_invalid_size)
    r"\b(?:HIPBLAS|HIPBLASLT|ROCBLAS)_STATUS_(?!SUCCESS\b)[A-Z]+(?:_[A-Z]+){0,3}\b"
    r"|\brocblas_status_(?!success\b)[a-z]+(?:_[a-z]+){0,3}\b"
)
# The runtime's count of GPUs told in words: "even though the HIP runtime correctly reports 1 device", "rocminfo
# lists 2 GPUs". A count of 0, a question or a negation is not one (the rule checks those).
RUNTIME_COUNT_TOLD = re.compile(
    r"\b(?:hip(?:\s+runtime)?|rocminfo|hipGetDeviceCount(?:\(\))?)[`'\"]?\s+(?:\w+\s+)?"
    r"(?:reports?|returns?|lists?|finds?|detects?|sees?|shows?|enumerates?)\s+(?:the\s+)?(?:correct\s+)?"
    r"(?:[`*]*(?P<count>[1-9]\d?)[`*]*\s+(?:amd\s+)?(?:gpus?|devices?|agents?)\b"
    # "rocminfo correctly enumerates the GPU", "rocminfo sees the device fine": the GPU, not a count
    r"|(?<=the\s)(?:amd\s+)?(?:gpu|card|device|igpu|dgpu)\b)"
    # "`rocminfo` shows `ROCk module is loaded`, GPU is shown as Agent 2": the GPU as one of its agents
    r"|\b(?:gpu|card|igpu|dgpu)\s+(?:is\s+)?(?:shown|listed)\s+as\s+(?:an?\s+)?agent\b",
    re.I,
)
# TensorFlow's and XLA's ROCm configure step (third_party/gpus/rocm_configure.bzl _find_libs: auto_configure_fail(
# "Cannot find rocm library %s" % name)): a library the source build links is not in the ROCm it was pointed at.
BAZEL_ROCM_LIBRARY_MISSING = re.compile(r"Cannot find rocm library (?P<lib>[\w.+-]+)")
# The missing group membership told as the cause: "I just forgot to add the groups", "forgot to add my user to the
# render group".
FORGOT_GROUPS = re.compile(
    r"\bforg[oe]t\w*\s+(?:to\s+)?add\w*\s+(?:(?:myself|me|my\s+user|the\s+user|the\s+account|\$?user)\s+)?"
    r"(?:to\s+)?(?:the\s+)?(?:(?P<group>render|video)(?:\s*(?:and|&|/|,)\s*(?:render|video))?\s+)?groups?\b",
    re.I,
)
# A program built or shipped without ROCm, as it or a person says it: "rendered llama.cpp without ROCM support",
# "built without HIP", "AMD GPU detected (ROCm support not currently available)", "not compiled with hipBLAS";
# and llama.cpp's own warning of a build without any GPU backend (common/common.cpp before the backend registry:
# "warning: not compiled with GPU offload support, --n-gpu-layers option will be ignored"). A line that names a
# GPU or a target speaks of that GPU's support instead (PROSE_UNSUPPORTED, app_rules).
PROSE_NO_ROCM_BUILD = re.compile(
    r"\b(?:built|compiled|builds?|compiles?|rendered|installed|installs?|ships?|shipped|packaged)\b(?:[^.\n]|\.(?=\w)){0,60}?"
    r"\bwithout\s+(?:any\s+)?(?:rocm|hip|hipblas)\b"
    r"|\b(?:rocm|hip|hipblas)\s+support\s+(?:is\s+|was\s+)?(?:not\s+(?:currently\s+|yet\s+)?"
    r"(?:available|enabled|included|built|compiled)|unavailable|disabled)\b"
    r"|\bnot\s+(?:been\s+)?(?:built|compiled)\s+with\s+(?:rocm|hip|hipblas)\b"
    # "hipBLAS is not enabled", "HIP was not enabled in the build"
    r"|\b(?:rocm|hip|hipblas)\s+(?:backend\s+)?(?:is|was|were|are)\s+not\s+(?:enabled|built\s+in|compiled\s+in)\b"
    r"|\bnot compiled with GPU offload support\b"
    # a build whose HIP switch the build system ignored (ggml renamed GGML_HIPBLAS to GGML_HIP; CMake drops an
    # unknown -D): "enables ROCm using the deprecated flag GGML_HIPBLAS ... The old name is silently ignored"
    r"|\b(?:GGML|LLAMA|WHISPER|SD)_HIP(?:BLAS)?\b[^\n]{0,200}?\b(?:silently\s+)?ignored\b"
    # a package told CUDA-only: "the PyPI ctranslate2 wheel is CUDA-only", "a CUDA-only build"
    r"|\b(?:wheels?|packages?|builds?|binar(?:y|ies))\b[^.\n]{0,40}?\s(?:is|are|was|were)\s+cuda[- ]only\b"
    r"|\bcuda[- ]only\s+(?:wheels?|packages?|builds?|binar(?:y|ies))\b"
    # an installer that once left ROCm out, told as the fix: "now the installer installs ROCm"
    r"|\b(?:installer|install\.sh|script)\b[^.\n]{0,30}?\bnow\s+installs?\s+(?:the\s+)?(?:rocm|hip)\b"
    # "this results in llama_cpp built with CPU backend", "compiled with only the CPU backend"
    r"|\b(?:built|compiled)\s+with\s+(?:the\s+|a\s+)?(?:only\s+(?:the\s+|a\s+)?)?cpu(?:-only)?\s+backend\b"
    # ollama's scripts/install.sh when lspci/lshw show it no GPU: it installs no GPU backend ("No NVIDIA/AMD GPU
    # detected. Ollama will run in CPU-only mode."), and the same told in words ("installs Ollama in CPU-only mode",
    # "with no GPU backend installed")
    r"|\bwill run in cpu[- ]only mode\b"
    r"|\binstall(?:s|ed|ing)?\b(?:[^.\n]|\.(?=\w)){0,60}?\bin\s+\**cpu[- ]only\s+mode\b"
    r"|\bno\s+(?:gpu|rocm|hip)\s+backend\s+(?:is\s+|was\s+|gets\s+)?installed\b",
    re.I,
)
# What makes such a line speak of one GPU's support rather than the program's build.
FOR_A_GPU = re.compile(
    r"\b(?:for|on|with)\s+(?:this|your|my|the|our|an?)\s+(?:amd\s+)?(?:\w+\s+)?"
    r"(?:gpus?|cards?|apus?|igpus?|graphics|radeon|rx[ -]?\d)",
    re.I,
)
# pip replacing the installed torch with a build from PyTorch's ROCm wheel index: "pip install --force-reinstall torch
# torchvision --index-url https://[wheel-index-host]/whl/rocm5.6" (also --extra-index-url, -i). Told as the fix,
# it says the torch it replaced had no ROCm (stack_rules._rocm_torch_reinstalled).
ROCM_TORCH_REINSTALL = re.compile(
    r"\bpip3?\s+install\b(?=[^\n]*--force-reinstall)(?=[^\n]*\btorch\b)[^\n]*?"
    r"(?:--(?:extra-)?index-url|\s-i)[= ]\s*\S*/whl/(?:nightly/)?rocm[\d.]+",
    re.I,
)
# A program rebuilt (or reinstalled) with its HIP switch on: llama.cpp's cmake -DGGML_HIP=ON (before 2024-11
# -DGGML_HIPBLAS / -DLLAMA_HIPBLAS, make LLAMA_HIPBLAS=1), llama-cpp-python's CMAKE_ARGS with the same, whisper.cpp's
# and stable-diffusion.cpp's GGML switches (-DSD_HIPBLAS), PyTorch's source build USE_ROCM=1. Told as the fix, the build
# before it had no HIP backend.
HIP_SWITCH_REBUILT = re.compile(
    r"\b(?:re-?build\w*|re-?built|re-?compil\w*|re-?install\w*|buil[dt]\w*|compil\w*)\b[^\n]{0,80}?"
    r"(?:-D\s*|\b)(?:GGML_HIP|GGML_HIPBLAS|LLAMA_HIPBLAS|SD_HIPBLAS|USE_ROCM)\s*=\s*[\"']?(?:ON|1|TRUE)\b",
    re.I,
)
# A success told after it: "after that I could run the plugin using my GPU", "now it uses the GPU", "it works".
GPU_WORKS_AFTER = re.compile(
    r"\b(?:after that|afterwards|now|then)\b[^.\n]{0,60}?\b(?:gpu|works?|worked|offloads?|offloading)\b|\bit works\b",
    re.I,
)
# An engine's or backend's ROCm build said not to be compatible, as applications label it ("ROCm llama.cpp linux
# version 1.57.0 is not compatible"): the build carries no code for this GPU. A line about a kernel or a driver
# speaks of another incompatibility (app_rules.rule_prose_incompatible_build skips it).
ROCM_BUILD_INCOMPATIBLE = re.compile(
    r"\b(?:rocm|hip)\b(?:[^.\n]|\.(?=\w)){0,60}?\b(?:is|are)(?:\s+\w+ly)?\s*(?:not|n't)\s+compatible\b",
    re.I,
)
# A ROCm shared library the dynamic loader did not find: glibc's dlerror and ld.so ("%s: cannot open shared object
# file: No such file or directory", elf/dl-load.c; Python re-raises it as ImportError; an executable's ld.so says
# "error while loading shared libraries: %s: cannot open ...") and TensorFlow's dso_loader ("Could not load dynamic
# library '%s'; dlerror: %s"). The names are those of ROCm's libraries (HIP, its math libraries, ROCr, libhsakmt).
ROCM_LIBRARY = re.compile(
    r"\blib(?:amdhip64|hip_hcc|hiprtc|rocblas|rocsolver|rocsparse|rocfft|rocrand|hipblas(?:lt)?|hipsparse|hipfft|"
    r"hiprand|hipsolver|MIOpen|hsa-runtime64|hsakmt|rccl|roctracer64|roctx64|amd_comgr|rocm_smi64|amd_smi|"
    # HCC's C++ AMP runtime (libmcwamp, libhc_am), which ROCm 3.5 dropped with HCC
    r"migraphx\w*|rocprofiler[\w-]*|mcwamp|hc_am|"
    # ROCm on WSL's DXG bridge (librocdxg, ROCm 7.2 and later)
    r"rocdxg|"
    # the OpenCL runtime and the ICD loader ROCm shipped with it up to 6.2
    r"amdocl64|OpenCL)\.so(?:\.(?P<major>\d+)[\d.]*)?"
)
LIBRARY_NOT_LOADED = re.compile(
    r"cannot open shared object file|Could not load dynamic library"
    # ldd's line for a needed library the loader would not find ("\tlibamdhip64.so.7 => not found")
    r"|=>\s*not found\b"
    # told in words: "ollama will fail to find the librocm_smi64.so library", "it cannot find libhipblas.so.2"
    r"|\b(?:fail(?:s|ed)?\s+to|can(?:no|')t|could\s*n(?:o|')t|unable\s+to|does\s*n(?:o|')t)\s+(?:find|locate|load)\s+"
    r"(?:the\s+)?[`'\"]?lib\w"
    # "libOpenCL.so is no longer installed", "librocm_smi64.so is not installed": the file itself told absent
    r"|\.so\b(?:\.[\d.]+)?[`'\"]?\s+(?:is|was|are|were)\s+(?:no\s+longer|not)\s+(?:installed|shipped|included|present)\b",
    re.I,
)
# The cues of LIBRARY_NOT_LOADED's alternatives, for the lines to search.
LIBRARY_NOT_LOADED_CUES = (
    "cannot open shared object", "could not load dynamic library", " find ", " locate ", " load ", "=> not found",
    " no longer ", " not installed", " not shipped", " not included", " not present",
)  # fmt: skip
# The loader finding a ROCm library without a symbol the program was built against: glibc's "symbol lookup error:
# %s: undefined symbol: %s" and dlopen's "%s: undefined symbol: %s" (elf/dl-lookup.c), for a symbol of ROCm's API
# (hipModuleGetGlobal, hsa_amd_..., rocblas_..., a mangled hip:: name): the installed ROCm is another release.
# "chip" is no HIP symbol: the prefix must start the name or follow a mangling digit or underscore.
ROCM_SYMBOL_UNDEFINED = re.compile(
    r"undefined symbol: (?P<symbol>\S*?(?<![A-Za-z])(?:hip|hsa|rocblas|rocsolver|miopen|rccl|amd_comgr)\w*)", re.I
)
# CMake's check of an imported target (cmExportFileGenerator: 'The imported target "%s" references the file
# "%s" but this file does not exist.'): a ROCm package's CMake files name a library file the installation lacks.
CMAKE_FILE_MISSING = "but this file does not exist"
# The override told as what makes the program work: "had to set HSA_OVERRIDE_GFX_VERSION=10.3.0", "without the
# override, ollama drops the 780M", "HSA_OVERRIDE_GFX_VERSION=9.0.0 ... Works perfect now!". Read on the
# override's line and the line after it (app_rules.override_told_needed), never across a paste.
OVERRIDE_NEEDED = re.compile(
    r"\b(?:had|have|has|need(?:ed|s)?|must|required)\s+to\s+(?:set|add|use|export|pass|specify|put)\b"
    # the override named as the fix ("The fix is one environment variable: export HSA_OVERRIDE_GFX_VERSION=11.0.0")
    r"|\b(?:fix|solution|workaround)\s+(?:is|was)\b",
    re.I,
)
# The override taken away ("remove any HSA_OVERRIDE_GFX_VERSION set", "unset HSA_OVERRIDE_GFX_VERSION"): a line that
# says so tells of the override's removal, not of the override as a need (report_rules.rule_override_removed).
OVERRIDE_REMOVED = re.compile(
    r"\b(?:remov\w*|unset\w*|delet\w*|clear\w*|get(?:ting)? rid of)\b[^.;\n]{0,40}?"
    r"HSA_OVERRIDE_GFX_VERSION",
    re.I,
)
# A success told of what came before it ("fixed it", "now it works", "step 2 was the solution").
TOLD_SUCCESS = re.compile(
    r"\b(?:fixe[sd]|solve[sd]|resolve[sd])\b|\b(?:it|that|this)\s+(?:\w+\s+)?worked\b|\bworks now\b"
    r"|\bnow (?:it|everything) works\b|\bwas (?:the|my) (?:solution|fix)\b|\bdid the trick\b"
    r"|\bwork(?:s|ed)\s+(?:perfectly|fine|great|like a charm)\b|^\s*(?:it|that|this) works\b"
    r"|\b(?:it|that|this|everything)(?:'s|\s+is)\s+(?:now\s+)?working\b"
    # "the :rocm tag using the iGPU works a lot better for me"
    r"|\bwork(?:s|ed)\s+(?:a\s+lot\s+|much\s+|way\s+|far\s+)?better\b"
    # "Managed to get it to work by compiling Tensorflow myself", "got it working"
    r"|\b(?:managed|able)\s+to\s+get\s+it\s+(?:to\s+)?work(?:ing)?\b|\bgot\s+it\s+(?:to\s+)?work(?:ing)?\b",
    re.I,
)
# The run without it told as the failure: what a log of that run shows is from before the fix.
WITHOUT_OVERRIDE = re.compile(
    r"\bwithout\s+(?:the\s+|an?\s+|this\s+)?(?:hsa_override_gfx_version|(?:gfx\s+)?override)\b", re.I
)
# A success told right after the override (its line or the next one), with no negation just before it.
OVERRIDE_WORKS = re.compile(
    r"(?<!n't )(?<!not )(?<!never )\b(?:works?|worked|working|is running|runs|fixe[sd] it|solved it|did the trick|"
    r"restores?)\b",
    re.I,
)
# The person says they set the override, with no value shown ("setting the override with systemctl edit").
PROSE_OVERRIDE_SET = re.compile(
    r"\b(?:set|setting|added|adding|put|putting|exported?|exporting|configured?|configuring)\s+(?:the\s+|an\s+)?"
    r"(?:hsa_override_gfx_version|(?:gfx\s+)?override)\b",
    re.I,
)
# Prose that says the user is in a group ("in the video group already", "added myself to the render group").
PROSE_IN_GROUP = re.compile(
    r"\b(?:in|member of|added (?:myself |me |the user |my user |it )?to)\s+(?:the\s+)?[`'\"]?"
    r"(?P<group>render|video)[`'\"]?\s+group",
    re.I,
)
# The render node's group told in prose: "/dev/dri/renderD* is owned by group render", "renderD128 root:render".
RENDER_NODE_GROUP_PROSE = re.compile(
    r"/dev/dri/render\S*[^\n]{0,60}?\b(?:root:(?P<owner>render)\b|(?:group|owned by)\s+[`'\"]?(?P<group>render)\b)",
    re.I,
)
# /dev/kfd's group told in prose: "restricted to root:render", "owned by group render" (and the kdf typo).
NODE_GROUP_PROSE = re.compile(
    r"/dev/k(?:fd|df)\b[^\n]{0,60}?\b(?:root:(?P<owner>render|video)\b|(?:group|owned by)\s+[`'\"]?"
    r"(?P<group>render|video)\b)",
    re.I,
)
# Retail names of the GCN 1-2 era (Radeon R5/R7/R9 2xx-3xx, Radeon HD nnnn, and their mobile parts with a letter:
# HD 8670A, HD 7970M, R5 M330): pci.ids names the chips that carry them ("Tobago PRO [Radeon R7 360 / R9 360 OEM]",
# "Sun XT [Radeon HD 8670A/8670M/8690M / R5 M330 / M430 / R7 M520]"), which knowledge.identify maps to an ASIC.
# Searched in the lower-cased lines that hold a cue (OLD_RADEON_CUES), never over a whole paste.
# "HD Radeon 8790M" is the same retail name with its words the other way round, as people write it.
OLD_RADEON = re.compile(
    r"\bradeon\s+(?P<hd>hd\s?\d{4}[am]?)\b|\bhd\s+radeon\s+(?P<hd_after>\d{4}[am]?)\b"
    r"|\b(?P<r>r[579])[\s-]?(?P<number>m?[23]\d{2}x?)\b"
    r"|\bfirepro\s+(?P<fp>[wsmdv]\d{3,4}[mv]?)\b"  # the workstation parts: "FirePro M6100", "FirePro W7000"
)
OLD_RADEON_CUES = ("radeon", " r5", " r7", " r9", "-r7", "-r9", "firepro")
_PCI_RETAIL = re.compile(
    r"\b(?P<r>R[579]) (?P<numbers>M?\d{3}X?(?:/M?\d{3}X?)*)|\bHD (?P<hd>\d{4}[AM]?(?:/\d{4}[AM]?)*)"
    r"|\bFirePro (?P<fp>[WSMDV]\d{3,4}[MV]?)\b"
)
_OLD_NAMES: dict[str, int] = {}  # "R7 360" -> the lowest device id whose pci.ids name carries it, on first use


def _old_names() -> dict[str, int]:
    if not _OLD_NAMES:
        from kfdguard.knowledge.generated import PCI_NAMES

        for device, name in sorted(PCI_NAMES.items()):
            for m in _PCI_RETAIL.finditer(name):
                if m["fp"]:
                    tokens = [f"FirePro {m['fp']}"]
                elif m["hd"]:
                    tokens = [f"HD {n}" for n in m["hd"].split("/")]
                else:
                    tokens = [f"{m['r']} {n}" for n in m["numbers"].split("/")]
                for token in tokens:
                    _OLD_NAMES.setdefault(token, device)
    return _OLD_NAMES


def old_radeon_devices(lines: str) -> list[tuple[str, int]]:
    """(retail name, PCI device id) for each Radeon R5/R7/R9, HD or FirePro name in lower-cased ``lines`` that
    pci.ids gives a chip."""
    names = _old_names()
    found: list[tuple[str, int]] = []
    for m in OLD_RADEON.finditer(lines):
        if m["fp"]:
            token = f"FirePro {m['fp'].upper()}"
        elif m["hd"] or m["hd_after"]:
            token = "HD " + (m["hd_after"] or m["hd"][2:].strip()).upper()
        else:
            token = f"{m['r'].upper()} {m['number'].upper()}"
        if token in names:
            found.append((token, names[token]))
    return found


# Chip names pci.ids gives the GPUs KFD never drove (the part before its brackets: "Sun XT", "Tahiti PRO", "Cape
# Verde", "Oland"), as people write them when lspci is all they read (ROCm#528: "Sun XT [Radeon HD 8670A/...]").
# Taken only as pci.ids spells them, and a one-word name only where it is the ASIC's own family name: "Mars",
# "Neptune", "Venus" and "Sun" alone are words, "Mars XTX" and "Sun XT" are chips.
_CHIP_SUFFIX = re.compile(r"^(?:XT|XTX|PRO|LE|GL|ULT|PRX|LP|XL)$")
_CHIPS: dict[str, int] = {}  # chip name -> the lowest device id that carries it, filled on first use


def _chip_names() -> dict[str, int]:
    if not _CHIPS:
        from kfdguard.knowledge import identify
        from kfdguard.knowledge.generated import PCI_NAMES

        for device, name in sorted(PCI_NAMES.items()):
            asic, _ = identify(device)
            if asic is None or asic.kfd_since is not None:
                continue
            families = set(asic.family.split("/"))
            for chip in name.split(" [")[0].split(" / "):
                words = chip.split()
                if chip in families or (len(words) > 1 and _CHIP_SUFFIX.match(words[-1])):
                    _CHIPS.setdefault(chip, device)
    return _CHIPS


@functools.cache
def chip_cues() -> tuple[str, ...]:
    """Lower-cased first words of the chip names: the lines chip_devices needs to see."""
    return tuple(sorted({name.split()[0].lower() for name in _chip_names()}))


@functools.cache
def _chip_pattern() -> re.Pattern[str]:
    spelled = sorted(_chip_names(), key=len, reverse=True)  # "Tahiti XT GL" before "Tahiti XT" before "Tahiti"
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in spelled) + r")(?![\w-])")


def chip_devices(lines: str) -> list[tuple[str, int]]:
    """(chip name, PCI device id) for each chip name of a GPU KFD never drove in ``lines`` (as written)."""
    names = _chip_names()
    return [(m.group(0), names[m.group(0)]) for m in _chip_pattern().finditer(lines)]


# Radeon Pro workstation and cloud names (WX 7100, WX 3200, W5700, W6800, V520): pci.ids gives each its chip
# ("Ellesmere [Radeon Pro WX 7100]", "Lexa XT [Radeon PRO WX 3200]"), which knowledge.identify maps to an ASIC.
# Searched in lower-cased lines holding "pro w" or "pro v" (PRO_CUES); written with or without the space.
PRO_NAME = re.compile(r"\bpro\s+(?P<series>wx|w|v)\s?(?P<number>\d{3,4})(?P<x>x)?\b")
PRO_CUES = ("pro w", "pro v")
_PCI_PRO = re.compile(r"\bPro (?P<series>WX|W|V) ?(?P<number>\d{3,4})(?P<x>X)?\b", re.I)
_PRO_NAMES: dict[str, int] = {}  # "WX7100" -> the lowest device id whose pci.ids name carries it, on first use


def _pro_key(m: re.Match[str]) -> str:
    """A Radeon Pro name as one key, however it is spaced or cased: "WX7100", "W5700", "V520"."""
    return f"{m['series'].upper()}{m['number']}{(m['x'] or '').upper()}"


def pro_devices(lowered: str) -> list[tuple[str, int]]:
    """(the name as "Radeon Pro WX 7100", PCI device id) for each Radeon Pro name in a lower-cased line that
    pci.ids gives a chip."""
    if not _PRO_NAMES:
        from kfdguard.knowledge.generated import PCI_NAMES

        for device, name in sorted(PCI_NAMES.items()):
            for m in _PCI_PRO.finditer(name):
                _PRO_NAMES.setdefault(_pro_key(m), device)
    found = []
    for m in PRO_NAME.finditer(lowered):
        key = _pro_key(m)
        if key in _PRO_NAMES:
            # pci.ids and AMD write "WX 7100" with a space, "W5700" and "V520" without
            named = f"WX {key[2:]}" if m["series"] == "wx" else key
            found.append((f"Radeon Pro {named}", _PRO_NAMES[key]))
    return found


# APU code names people and lspci use for integrated GPUs (pci.ids brackets, AMD's product pages), with the
# target of the ASIC that knowledge/asics.py files them under (its family or note names each of them).
CODENAMES: tuple[tuple[str, str], ...] = (
    ("Raven Ridge", "gfx902"),
    ("Picasso", "gfx902"),
    ("Renoir", "gfx90c"),
    ("Cezanne", "gfx90c"),
    ("Lucienne", "gfx90c"),
    ("Barcelo", "gfx90c"),
    ("Rembrandt", "gfx1035"),
    ("Raphael", "gfx1036"),
    ("Granite Ridge", "gfx1036"),
    ("Mendocino", "gfx1036"),
    ("Phoenix", "gfx1103"),
    ("Hawk Point", "gfx1103"),
    ("Strix Point", "gfx1150"),
    ("Strix Halo", "gfx1151"),
    ("Krackan", "gfx1152"),
)
CODENAME = re.compile(r"\b(?P<name>" + "|".join(re.escape(n) for n, _ in CODENAMES) + r")\b")


def codename_targets(text: str) -> list[tuple[str, str]]:
    """(gfx target, where) for each APU code name in the text ("Granite Ridge [Radeon Graphics]")."""
    targets = dict(CODENAMES)
    return [(targets[m["name"]], f"the text: {m['name']}") for m in CODENAME.finditer(text)]


# HSA_OVERRIDE_GFX_VERSION=major.minor.stepping makes ROCr report that target for every GPU
# (libhsakmt topology.c); the stepping is the last hex digit of the name (9.0.10 is gfx90a).
OVERRIDE_VALUE = re.compile(r"(?P<major>\d{1,2})\.(?P<minor>\d)\.(?P<step>\d{1,2})")


def override_target(value: str) -> str | None:
    """The gfx target HSA_OVERRIDE_GFX_VERSION=value claims (10.3.0 -> gfx1030, 9.0.10 -> gfx90a)."""
    m = OVERRIDE_VALUE.fullmatch(value)
    if m is None or int(m["step"]) > 15:
        return None
    return f"gfx{int(m['major'])}{int(m['minor'])}{int(m['step']):x}"


def gfx_major(gfx: str) -> int | None:
    """The GFX generation of a target name: gfx803 -> 8, gfx90a -> 9, gfx1151 -> 11."""
    digits = gfx[3:]
    if len(digits) == 3 and digits[0].isdigit():
        return int(digits[0])
    if len(digits) == 4 and digits[:2].isdigit():
        return int(digits[:2])
    return None


# GPUs named in prose. NVIDIA's brands; AMD's retail names map to gfx targets through LLVM's table
# (llvm/docs/AMDGPUUsage.rst "Processors"), the source of every row below.
# "GFX 1060" is a common misspelling of GTX 1060; no AMD gfx target has a number from 1050 to 1080
# (llvm/docs/AMDGPUUsage.rst: gfx1010-gfx1036, gfx1100-gfx1153, gfx1200-gfx1201), so it cannot be one.
# The word "nvidia" alone (nvidia-smi, "unlike nvidia") names no GPU: a brand needs a model with it.
NVIDIA = re.compile(
    r"\b(?:geforce|quadro)\b(?:[ \w-]{0,20}?\b\d{3,4}\b)?|\bnvidia\b[ \w-]{0,20}?\b\d{3,4}\b"
    r"|\b(?:GTX|RTX)[ -]?\d{3,4}\b|\bGFX ?10[5-8]0\b",
    re.IGNORECASE,
)
# Searched in the lower-cased line (a case-insensitive pattern is slower on every line with "rx").
RADEON_RX = re.compile(r"\b(?:radeon\s+)?rx[ -]?(?P<number>\d{3,4})(?P<suffix>\s?(?:xtx|xt|gre|s|m))?\b")
RX_GFX: tuple[tuple[range, str], ...] = (
    (range(460, 600), "gfx803"),  # Polaris 10/11/12, Polaris 20/21/30 (RX 460-590)
    (range(5500, 5600), "gfx1012"),  # Navi 14
    (range(5600, 5800), "gfx1010"),  # Navi 10
    (range(6300, 6600), "gfx1034"),  # Navi 24 (RX 6300, libdrm's 7424; RX 6400, 6500)
    (range(6600, 6700), "gfx1032"),  # Navi 23
    (range(6700, 6800), "gfx1031"),  # Navi 22
    (range(6800, 7000), "gfx1030"),  # Navi 21
    (range(7600, 7700), "gfx1102"),  # Navi 33
    (range(7700, 7900), "gfx1101"),  # Navi 32
    (range(7900, 8000), "gfx1100"),  # Navi 31
    (range(9060, 9070), "gfx1200"),  # Navi 44
    (range(9070, 9080), "gfx1201"),  # Navi 48
)


# Other retail names that name one target (same source).
NAMED_GFX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bVega ?(?:56|64)\b|\bVega Frontier\b", re.IGNORECASE), "gfx900"),
    (re.compile(r"\bRadeon VII\b|\bMI50\b|\bMI60\b", re.IGNORECASE), "gfx906"),
    (re.compile(r"\bMI100\b"), "gfx908"),
    (re.compile(r"\bMI2[015]0X?\b"), "gfx90a"),  # MI200 is the series' name
    # The Instinct architectures by name, upper case ("cDNA" is biology): CDNA is MI100 alone, CDNA 2 the MI200s,
    # CDNA 3 the MI300s, CDNA 4 the MI350s (LLVM AMDGPUUsage's processor table).
    (re.compile(r"\bCDNA(?: ?1)?\b(?! ?[234])"), "gfx908"),
    (re.compile(r"\bCDNA ?2\b"), "gfx90a"),
    (re.compile(r"\bCDNA ?3\b"), "gfx942"),
    (re.compile(r"\bCDNA ?4\b"), "gfx950"),
    (re.compile(r"\bMI3(?:00[AX]?|08X|25X)\b"), "gfx942"),
    (re.compile(r"\bMI35[05]X\b"), "gfx950"),
    (re.compile(r"\b(?:Radeon )?680M\b"), "gfx1035"),
    (re.compile(r"\b(?:Radeon )?7[468]0M\b"), "gfx1103"),
    (re.compile(r"\b(?:Radeon )?8[89]0M\b"), "gfx1150"),
    (re.compile(r"\b(?:Radeon )?80[56]0S\b"), "gfx1151"),
    # Instinct, Radeon Pro and cloud parts (pci.ids names, as in knowledge/generated.py: "Vega 10 [Radeon Instinct
    # MI25 MxGPU]", "Navi 12 [Radeon Pro V520]", "Navi 21 [Radeon Pro V620 MxGPU]", "Navi 31 [Radeon Pro W7900]").
    (re.compile(r"\bMI25\b"), "gfx900"),
    (re.compile(r"\bMI[68]\b"), "gfx803"),
    (re.compile(r"\bPro V520\b"), "gfx1011"),
    (re.compile(r"\bPro (?:V620|W68\d0)\b"), "gfx1030"),
    (re.compile(r"\bPro W66\d0\b"), "gfx1032"),
    (re.compile(r"\bPRO W7[89]00\b", re.IGNORECASE), "gfx1100"),
    (re.compile(r"\bPro (?:V710|W7700)\b", re.IGNORECASE), "gfx1101"),
    (re.compile(r"\bPRO W7[56]00\b", re.IGNORECASE), "gfx1102"),
    # Cloud VM sizes that name their GPU: Azure NVv4 (MI25 MxGPU partitions), NGads V620, NVads V710 v5, AWS g4ad
    # (Radeon Pro V520). Azure's ND MI300X v5 names the part itself.
    # Azure writes them "Standard_NV4as_v4", "Standard_NG8ads_V620_v1": "_" is a word character, so no \b there.
    (re.compile(r"(?<![A-Za-z0-9])NV\d+as_v4(?![A-Za-z0-9])", re.IGNORECASE), "gfx900"),
    (re.compile(r"(?<![A-Za-z0-9])NG\d+ads[_ ]V620(?![A-Za-z0-9])", re.IGNORECASE), "gfx1030"),
    (re.compile(r"(?<![A-Za-z0-9])NV\d+ads[_ ]V710(?![A-Za-z0-9])", re.IGNORECASE), "gfx1101"),
    (re.compile(r"\bg4ad\.\w+\b"), "gfx1011"),
)
# Literals one of which every NAMED_GFX match contains: evidence.text searches a line only when it holds one
# (specific ones: "ads" alone is in every "threads" and "loads" line).
NAMED_GFX_CUES = ("Vega", "VII", "MI", "CDNA", "0M", "0S", "Pro ", "PRO ", "as_v4", "ads_V", "ads V", "g4ad.")


def named_target(name: str) -> str | None:
    """The gfx target of a GPU named by its retail or cloud name ("AMD Instinct MI100" -> gfx908, "AMD Radeon RX
    6800 XT" -> gfx1030), if one."""
    for pattern, target in NAMED_GFX:
        if pattern.search(name):
            return target
    lowered = name.lower()
    m = RADEON_RX.search(lowered) or AMD_NUMBER.search(lowered)
    return rx_target(int(m["number"]), m["suffix"] or "") if m else None


# Mobile names whose chip differs from the desktop card of the same number (pci.ids, as in
# knowledge/generated.py: "Navi 22 [... 6800M/6850M XT]", "Navi 23 [Radeon RX 6650 XT / 6700S / 6800S]";
# libdrm's amdgpu.ids: "7480, C1, AMD Radeon RX 7700S", 0x7480 being Navi 33 in knowledge/asics.py).
RX_MOBILE_GFX: dict[tuple[range, str], str] = {
    (range(6800, 6900), "m"): "gfx1031",  # RX 6800M, 6850M XT: Navi 22
    (range(6700, 6900), "s"): "gfx1032",  # RX 6700S, 6800S: Navi 23
    (range(7700, 7800), "s"): "gfx1102",  # RX 7700S: Navi 33 (the desktop RX 7700 is Navi 32)
}
# A four-digit model after "AMD" or "Radeon" without "RX" ("my AMD 6700M", "Radeon 7900XTX"), searched in
# the lower-cased line; "AMD Ryzen 5 5600" has a word between, "5600G" no boundary after the digits. "HD Radeon 7970"
# is the HD 7970 of 2012 (OLD_RADEON), not an RX 7000 card.
AMD_NUMBER = re.compile(r"(?<!hd )\b(?:amd|radeon)\s+(?P<number>[5-9]\d{3})(?P<suffix>\s?(?:xtx|xt|gre|s|m))?\b")
# A model number without "AMD", "Radeon" or "RX", on a line the text names as its GPU ("GPU: 6750 XT", an issue
# form's "### GPU" heading over "7900 XTX", "my gpu is a 5700 XT"): with its XT/XTX/GRE suffix, which no quantity
# carries, or right after the label itself ("GPU: 6600") and not followed by a unit ("GPU: 6750 MHz").
BARE_MODEL = re.compile(r"(?<![\w.])(?P<number>[5-9]\d{3})(?P<suffix>\s?(?:xtx|xt|gre))\b", re.I)
LABELLED_MODEL = re.compile(
    r"\b(?:i?gpu|graphics(?: card)?|video card)\s*[:=]\s*(?:amd\s+)?(?:radeon\s+)?(?P<number>[5-9]\d{3})\b"
    r"(?!\s*(?:[kmg]i?b|[mg]hz|rpm|cores?|w\b|%|x\b))",
    re.I,
)


def rx_target(number: int, suffix: str = "") -> str | None:
    suffix = suffix.strip()[:1]
    for (span, mobile), gfx in RX_MOBILE_GFX.items():
        if suffix == mobile and number in span:
            return gfx
    return next((gfx for span, gfx in RX_GFX if number in span), None)


COMPILED: tuple[tuple[AppFormat, re.Pattern[str], tuple[re.Pattern[str], ...]], ...] = tuple(
    (f, re.compile(f.pattern), tuple(re.compile(x) for x in f.fields)) for f in FORMATS
)
# One alternation of every cue, their common prefixes shared (kfdguard.alternation): a line without any
# cue costs one C-level search.
CUES = re.compile(alternation({f.cue for f in FORMATS}))
BY_CUE: dict[str, tuple[int, ...]] = {
    cue: tuple(i for i, f in enumerate(FORMATS) if f.cue == cue) for cue in {f.cue for f in FORMATS}
}

__all__ = [
    "COMPILED",
    "CUES",
    "FORMATS",
    "AppFormat",
    "chip_cues",
    "chip_devices",
    "codename_targets",
    "gfx_major",
    "old_radeon_devices",
    "override_target",
    "pro_devices",
    "rx_target",
]
