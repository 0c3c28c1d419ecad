"""One machine per finding code that the bundled machines do not already show."""

from __future__ import annotations

from collections.abc import Callable

from kfdguard.assess import assess
from kfdguard.config import Config, ModuleConfig
from kfdguard.probe import probe
from kfdguard.simulate import state
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Severity, State, Verdict

Make = Callable[[str | MachineSpec], SimulatedSystem]


def verdict_of(make: Make, builder: MachineBuilder, config: Config | None = None) -> Verdict:
    return assess(probe(make(builder.build())), config)


def navi31() -> MachineBuilder:
    return MachineBuilder("case").ubuntu2404().with_gpu(0x744C).with_user("alice", groups=["render"])


def test_firmware_missing(fresh_machine: Make) -> None:
    verdict = verdict_of(fresh_machine, MachineBuilder("fw").ubuntu2404().with_gpu(0x744C, outcome="firmware"))
    (finding,) = verdict.by_code("firmware-missing")
    assert "amdgpu/psp_13_0_0_sos.bin" in finding.message and "linux-firmware" in finding.remedy
    assert verdict.state is State.UNAVAILABLE


def test_iommu_required_on_an_old_apu_kernel(fresh_machine: Make) -> None:
    builder = MachineBuilder("apu").with_kernel("5.10.0-28-amd64").with_gpu(0x15D8, outcome="iommu")
    verdict = verdict_of(fresh_machine, builder)
    (finding,) = verdict.by_code("iommu-required")
    assert "6.6" in finding.remedy and "error getting iommu info" in " ".join(finding.evidence)


def test_gpu_init_failed_without_firmware_lines(fresh_machine: Make) -> None:
    verdict = verdict_of(fresh_machine, MachineBuilder("init").ubuntu2404().with_gpu(0x744C, outcome="init-failed"))
    assert "gpu-init-failed" in verdict.codes()


def test_module_signature_rejected(fresh_machine: Make) -> None:
    builder = (
        MachineBuilder("sb")
        .ubuntu2404()
        .with_gpu(0x744C)
        .amdgpu_not_loaded()
        .with_log("Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7")
    )
    verdict = verdict_of(fresh_machine, builder)
    assert "module-signature-rejected" in verdict.codes() and "module-not-loaded" not in verdict.codes()
    assert "mokutil --import" in verdict.by_code("module-signature-rejected")[0].remedy


def test_module_not_loaded_names_the_blacklist(fresh_machine: Make) -> None:
    builder = navi31().amdgpu_not_loaded().with_file("/etc/modprobe.d/blacklist-amdgpu.conf", "blacklist amdgpu\n")
    (finding,) = verdict_of(fresh_machine, builder).by_code("module-not-loaded")
    assert "blacklisted at /etc/modprobe.d/blacklist-amdgpu.conf:1" in finding.message
    assert "remove the blacklist first" in finding.remedy


def test_device_lost_and_gpu_hang_this_boot(fresh_machine: Make) -> None:
    builder = navi31().with_log(
        "amdgpu 0000:03:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE",
        "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!",
        "amdgpu 0000:03:00.0: amdgpu: device lost from bus!",
    )
    verdict = verdict_of(fresh_machine, builder)
    (hang,) = verdict.by_code("gpu-hang")
    (lost,) = verdict.by_code("device-lost")
    assert "MES" in hang.message and "1 GPU reset" in hang.message and hang.severity is Severity.WARNING
    assert lost.severity is Severity.ERROR and "this boot" in lost.message
    assert verdict.state is State.UNAVAILABLE


def test_device_node_missing_like_in_a_container(fresh_machine: Make) -> None:
    system = fresh_machine(navi31().build())
    nodes = state.read_devices(system.root)
    del nodes["/dev/kfd"]
    state.write_devices(system.root, nodes)
    verdict = assess(probe(system))
    (finding,) = verdict.by_code("device-node-missing")
    assert "--device=/dev/kfd" in finding.remedy and verdict.state is State.UNAVAILABLE


def test_kfd_ioctl_denied_by_a_device_cgroup_is_not_a_failure(fresh_machine: Make) -> None:
    """The service's DeviceAllow= predates amdgpu: EPERM on /dev/kfd, while sysfs shows KFD up."""
    system = fresh_machine(navi31().build())
    state.set_fault(system.root, "kfd-open", "eperm")
    verdict = assess(probe(system))
    (finding,) = verdict.by_code("kfd-ioctl-denied")
    assert finding.severity is Severity.INFO and "systemctl restart kfdguard" in finding.remedy
    assert "kfd-ioctl-failed" not in verdict.codes()
    assert verdict.state is State.READY


def test_kfd_ioctl_failing_otherwise_is_an_error(fresh_machine: Make) -> None:
    system = fresh_machine(navi31().build())
    values = state.read_state(system.root)
    values.pop("kfd_live", None)  # the node exists, KFD does not answer (ENODEV)
    state.write_state(system.root, values)
    verdict = assess(probe(system))
    (finding,) = verdict.by_code("kfd-ioctl-failed")
    assert finding.severity is Severity.ERROR and "No such device" in finding.message


def test_render_node_permissions(fresh_machine: Make) -> None:
    builder = navi31().with_udev(render_mode=0o600)
    verdict = verdict_of(fresh_machine, builder)
    (finding,) = verdict.by_code("render-node-permissions")
    assert finding.message.startswith("/dev/dri/renderD128 is crw------- root:render")
    assert "ROCm silently skips" in finding.message


def test_world_open_kfd_is_a_warning(fresh_machine: Make) -> None:
    builder = navi31().with_file("/etc/udev/rules.d/70-kfd.rules", 'SUBSYSTEM=="kfd", MODE="0666"\n')
    verdict = verdict_of(fresh_machine, builder)
    (finding,) = verdict.by_code("device-permissions")
    assert finding.severity is Severity.WARNING and "every local user" in finding.message
    assert verdict.state is State.READY


def test_a_member_locked_out_by_the_mode_is_not_told_to_join(fresh_machine: Make) -> None:
    builder = navi31().with_file("/etc/udev/rules.d/70-kfd.rules", 'SUBSYSTEM=="kfd", MODE="0600"\n')
    verdict = verdict_of(fresh_machine, builder)
    (finding,) = verdict.by_code("device-permissions")
    assert finding.message.startswith("/dev/kfd is crw------- root:render")
    assert "user-not-in-group" not in verdict.codes()  # alice is in render: the node is the problem


def test_missing_compute_group(fresh_machine: Make) -> None:
    verdict = verdict_of(fresh_machine, navi31(), Config().__class__(device=Config().device.__class__(group="compute")))
    messages = [f.message for f in verdict.by_code("device-permissions")]
    assert "the compute group 'compute' does not exist" in messages
    assert verdict.state is State.UNAVAILABLE


def test_configured_options_refused_mismatched_and_tainting(fresh_machine: Make) -> None:
    config = Config(module=ModuleConfig(options=(("enable_iommu", "1"), ("sched_policy", "7"), ("halt_if_hws_hang", "1"),
                                                 ("cwsr_enable", "0"))))  # fmt: skip
    verdict = verdict_of(fresh_machine, navi31(), config)
    codes = verdict.codes()
    assert "module-param-unknown" in codes and "module-param-invalid" in codes
    # halt_if_hws_hang is a plain module_param in 5.10, 6.1 and 6.12 (issue 22): it must not be called tainting.
    assert "module-param-taints" not in codes
    mismatch = verdict.by_code("module-param-mismatch")
    assert {f.message.split(" runs with ")[1].split(",")[0] for f in mismatch} == {
        "halt_if_hws_hang=0",
        "cwsr_enable=1",
    }
    assert all("after a reboot" in f.message for f in mismatch)


def test_unknown_parameter_from_the_kernel_command_line(fresh_machine: Make) -> None:
    builder = navi31().with_cmdline("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro amdgpu.enable_iommu=1")
    verdict = verdict_of(fresh_machine, builder)
    messages = " ".join(f.message for f in verdict.by_code("module-param-unknown"))
    assert "enable_iommu" in messages
    assert any("kernel command line" in f.remedy or "kernel command line" in " ".join(f.evidence)
               for f in verdict.by_code("module-param-unknown"))  # fmt: skip


def test_udev_unknown_group(fresh_machine: Make) -> None:
    # The rules name a group the system does not have (systemd >= 258 also ignores non-system groups).
    builder = navi31().with_file(
        "/etc/udev/rules.d/70-kfd.rules", 'SUBSYSTEM=="kfd", GROUP="gpucompute", MODE="0660"\n'
    )
    verdict = verdict_of(fresh_machine, builder)
    assert any("udev could not use group 'gpucompute'" in f.message for f in verdict.by_code("device-permissions"))


def test_asic_not_supported(fresh_machine: Make) -> None:
    builder = MachineBuilder("si").with_gpu(0x6810, outcome="not-supported")
    verdict = verdict_of(fresh_machine, builder)
    (finding,) = verdict.by_code("asic-not-supported")
    assert "in any kernel" in finding.message


def test_kernel_too_old_remedy_per_distribution(fresh_machine: Make) -> None:
    ubuntu = verdict_of(fresh_machine, MachineBuilder("u").ubuntu2204().with_gpu(0x15BF, outcome="unbound"))
    assert "linux-generic-hwe-22.04" in ubuntu.by_code("kernel-too-old")[0].remedy
    debian = verdict_of(
        fresh_machine, MachineBuilder("d").with_kernel("5.10.0-28-amd64").with_gpu(0x744C, outcome="unbound")
    )
    assert "backports" in debian.by_code("kernel-too-old")[0].remedy


def test_taint_of_a_configured_option_between_series_that_differ_is_said_unknown(fresh_machine: Make) -> None:
    # sched_policy: plain module_param in 6.12, module_param_unsafe in 7.2 (knowledge/data); 6.14 was not read.
    config = Config(module=ModuleConfig(options=(("sched_policy", "1"),)))
    between = verdict_of(fresh_machine, navi31().with_kernel("6.14.0-37-generic"), config)
    (finding,) = between.by_code("module-param-taints")
    assert finding.severity is Severity.INFO
    assert (
        "may taint kernel 6.14: unknown" in finding.message and "6.12" in finding.message and "7.2" in finding.message
    )
    assert "Setting dangerous option sched_policy - tainting kernel" in finding.remedy
    # At 7.2 the source says it: a warning; at 6.8 (6.1 and 6.12 agree: plain) nothing.
    (taints,) = verdict_of(fresh_machine, navi31().with_kernel("7.2.0-1-generic"), config).by_code(
        "module-param-taints"
    )
    assert taints.severity is Severity.WARNING and "module_param_unsafe in 7.2" in taints.message
    assert not verdict_of(fresh_machine, navi31(), config).by_code("module-param-taints")
