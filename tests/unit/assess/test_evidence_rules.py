"""The evidence layer and the one rule set: a cause taught once is found on a machine and in a paste."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kfdguard.assess import assess
from kfdguard.assess.order import headline
from kfdguard.diagnose import diagnose_text
from kfdguard.evidence.text import read_text
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Severity, State
from tests.pastes import paste_of

Make = Callable[[str | MachineSpec], SimulatedSystem]
TA_LINE = "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_ta.bin failed with error -2"


def test_optional_firmware_on_the_machine_and_in_its_paste(fresh_machine: Make) -> None:
    spec = (
        MachineBuilder("ta")
        .ubuntu2404()
        .with_gpu(0x744C)
        .with_user("alice", groups=["render"], session=True)
        .with_log(TA_LINE)
    )
    system = fresh_machine(spec.build())
    verdict = assess(probe(system))
    (live,) = verdict.by_code("firmware-optional-missing")
    assert live.severity is Severity.INFO and "psp_13_0_0_ta.bin" in live.message
    assert verdict.state is State.READY and "firmware-missing" not in verdict.codes()
    paste = diagnose_text(paste_of(Path(system.root.path)))
    codes = {f.code for f in paste.findings}
    assert "firmware-optional-missing" in codes and "firmware-missing" not in codes
    assert paste.exit_code == 0


def test_optional_firmware_alone_is_not_why_the_gpu_is_missing() -> None:
    text = (
        "$ lspci -nn\n03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] "
        "Navi 10 [1002:731f] (rev c1)\n"
        "[    3.1] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/navi10_ta.bin failed with error -2\n"
        '[    3.2] amdgpu 0000:03:00.0: amdgpu: psp v11.0: Failed to load firmware "amdgpu/navi10_ta.bin"\n'
    )
    result = diagnose_text(text)
    codes = {f.code for f in result.findings}
    assert "firmware-missing" not in codes and "firmware-optional-missing" in codes
    (info,) = [f for f in result.findings if f.code == "firmware-optional-missing"]
    assert "navi10_ta.bin" in info.message and info.evidence


def test_optional_firmware_with_a_failed_init_is_still_missing_firmware() -> None:
    text = (
        "[    3.1] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_ta.bin failed with error -2\n"
        "[    3.2] amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init\n"
    )
    codes = {f.code for f in diagnose_text(text).findings}
    assert "firmware-missing" in codes and "firmware-optional-missing" not in codes


def test_root_cause_first_marks_what_comes_after() -> None:
    text = (
        "$ uname -r\n5.4.0-54-generic\n"
        "05:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Cezanne [Radeon Vega "
        "Series / Radeon Vega Mobile Series] [1002:1638] (rev c5)\n"
    )
    findings = diagnose_text(text).findings
    root = headline(findings)
    assert root is not None and root.code == "kernel-too-old" and root.blocked_by is None
    # gfx90c has no prebuilt ROCm code either, but that cannot matter before the kernel knows the GPU.
    (userspace,) = [f for f in findings if f.code == "userspace-target-unsupported"]
    assert userspace.blocked_by == "kernel-too-old"


def test_observations_carry_their_line() -> None:
    obs = read_text(
        "hello\n$ ls -l /dev/kfd\ncrw-rw---- 1 root render 235, 0 Jan 30 10:12 /dev/kfd\n$ uname -r\n6.8.0-45-generic\n"
    )
    node = obs.nodes["/dev/kfd"]
    assert (node.mode, node.owner, node.group) == ("crw-rw----", "root", "render")
    assert str(node.source) == "ls -l (line 3)"
    release = obs.first("kernel-release")
    assert release is not None and release.value == "6.8.0-45-generic" and release.source.line == 5


def test_rocminfo_agents_give_the_gpu_and_its_slot() -> None:
    text = (
        "*******\nAgent 2\n*******\n  Name:                    gfx1032\n  Uuid:                    GPU-XX\n"
        "  Marketing Name:          AMD Radeon PRO W6600\n  Device Type:             GPU\n"
        "  Chip ID:                 29667(0x73e3)\n  BDFID:                   768\n"
        "  ISA Info:\n    ISA 1\n      Name:                    amdgcn-amd-amdhsa--gfx1032\n"
    )
    obs = read_text(text)
    (agent,) = obs.agents
    assert (agent.gfx, agent.device, agent.slot) == ("gfx1032", 0x73E3, "0000:03:00.0")
    (gpu,) = obs.gpus
    assert gpu.name == "AMD Radeon PRO W6600" and gpu.device == 0x73E3
    codes = {f.code for f in diagnose_text(text).findings}
    assert "kfd-ready" in codes  # rocminfo listing the GPU agent is KFD having added it


def test_an_unknown_stays_unknown() -> None:
    result = diagnose_text("$ uname -r\n6.8.0-45-generic\n")
    assert any("which GPU" in u for u in result.unknown) and any("'id'" in u for u in result.unknown)
    assert not result.findings


def test_a_blocker_of_one_gpu_does_not_block_the_other() -> None:
    # The Picasso APU is refused by KFD, the RX 560 next to it was added (no slots in these lines).
    text = (
        "[    2.510806] kfd kfd: DID 15d8 is missing in supported_devices\n"
        "[    2.510810] kfd kfd: kgd2kfd_probe failed\n"
        "[    2.640332] kfd kfd: Allocated 3969056 bytes on gart\n"
        "[    2.640541] kfd kfd: added device 1002:67ef\n"
    )
    findings = diagnose_text(text).findings
    (too_old,) = [f for f in findings if f.code == "kernel-too-old"]
    assert "15d8" in too_old.message
    polaris = [f for f in findings if f.code == "userspace-target-unsupported" and "67ef" in f.message]
    assert polaris and polaris[0].blocked_by is None


SYMBOL_LINE = "amdgpu: Unknown symbol drm_sched_job_init (err -2)"


def test_a_module_for_another_kernel_on_the_machine_and_in_its_paste(fresh_machine: Make) -> None:
    spec = (
        MachineBuilder("sym")
        .ubuntu2404()
        .with_gpu(0x744C)
        .with_user("alice", groups=["render"], session=True)
        .amdgpu_not_loaded()
        .with_log(SYMBOL_LINE)
    )
    system = fresh_machine(spec.build())
    verdict = assess(probe(system))
    (live,) = verdict.by_code("module-symbol-mismatch")
    assert live.severity is Severity.ERROR and "drm_sched_job_init" in live.message
    assert "module-not-loaded" not in verdict.codes()  # the same cause, said once
    root = headline(verdict.findings)
    assert root is not None and root.code == "module-symbol-mismatch"
    paste = diagnose_text(paste_of(Path(system.root.path)))
    pasted = headline(paste.findings)
    assert pasted is not None and pasted.code == "module-symbol-mismatch"


def test_a_mismatch_before_a_good_load_is_a_warning() -> None:
    text = (
        f"[    4.0] {SYMBOL_LINE}\n"
        "[    6.0] kfd kfd: amdgpu: added device 1002:744c\n"
        "0b:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [1002:744c] (rev c8)\n"
    )
    (finding,) = [f for f in diagnose_text(text).findings if f.code == "module-symbol-mismatch"]
    assert finding.severity is Severity.WARNING


def test_symbols_of_a_missing_dependency_are_not_a_mismatch() -> None:
    text = (
        "[    7.668049] amdgpu: Unknown symbol amd_iommu_bind_pasid (err -2)\n"
        "[    7.668135] amdgpu: Unknown symbol amd_iommu_free_device (err -2)\n"
    )
    codes = {f.code for f in diagnose_text(text).findings}
    assert codes == {"module-dependency-missing"}
    (finding,) = diagnose_text(text).findings
    assert "amd_iommu_v2" in finding.message and "linux-modules-extra" in finding.remedy


def test_a_render_node_the_user_cannot_open() -> None:
    listing = (
        "$ ls -l /dev/kfd /dev/dri\n"
        "crw-rw-rw- 1 root render 240, 0 Dec  1 08:25 /dev/kfd\n\n/dev/dri:\ntotal 0\n"
        "crw-rw----  1 root video  226,   0 Dec  1 08:25 card0\n"
        "crw-rw----  1 root render 226, 128 Dec  1 08:25 renderD128\n"
        "$ id\nuid=1000(bob) gid=1000(bob) groups=1000(bob),44(video)\n"
    )
    (finding,) = [f for f in diagnose_text(listing).findings if f.code == "render-node-permissions"]
    assert finding.message.startswith("/dev/dri/renderD128 is crw-rw---- root:render: bob")
    assert "usermod -aG render bob" in finding.remedy
    assert any(e.startswith("ls -l (line 7)") for e in finding.evidence)
    # With udev's uaccess ACL ("+") the seat user may open it: ls -l cannot say, so nothing is claimed.
    with_acl = listing.replace("crw-rw----  1 root render", "crw-rw----+ 1 root render")
    assert "render-node-permissions" not in {f.code for f in diagnose_text(with_acl).findings}


def test_a_rootless_container_whose_kfd_group_is_not_mapped() -> None:
    text = (
        "$ rocminfo\nROCk module version 6.8.5 is loaded\nUnable to open /dev/kfd read-write: Permission denied\n"
        'root is not member of "video" group, the default DRM access group.\n'
        "$ id\nuid=0(root) gid=0(root) groups=0(root)\n"
        "$ ls -la /dev/kfd\ncrw-rw---- 1 65534 65534 235, 0 Sep 10 19:47 /dev/kfd\n"
    )
    codes = {f.code for f in diagnose_text(text).findings}
    assert "rootless-gid-unmapped" in codes
    assert not codes & {"user-not-in-group", "device-permissions"}  # usermod inside would not help
