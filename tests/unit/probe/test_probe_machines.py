"""What probe reads from each bundled simulated machine."""

from __future__ import annotations

import pytest

from kfdguard.facts import Facts
from tests.conftest import MACHINES


def test_every_bundled_machine_probes_without_problems(machine_facts: dict[str, Facts]) -> None:
    assert set(machine_facts) == set(MACHINES)
    assert len(MACHINES) >= 10
    for name, facts in machine_facts.items():
        assert facts.problems == (), name
        assert facts.simulated
        assert facts.kernel.release, name


def test_rx7900xtx_ubuntu2404(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["rx7900xtx-ubuntu2404"]
    assert f.os.id == "ubuntu" and f.os.version_id == "24.04"
    assert f.kernel.release == "6.8.0-45-generic"
    assert f.kernel.version == (6, 8, 0)
    assert f.kernel.symbol("CONFIG_HSA_AMD") == "y"
    assert f.kernel.config_source == "/boot/config-6.8.0-45-generic"
    (gpu,) = f.gpus
    assert (gpu.slot, gpu.vendor, gpu.device, gpu.revision) == ("0000:03:00.0", 0x1002, 0x744C, 0xC8)
    assert (gpu.subsystem_vendor, gpu.subsystem_device) == (0x1DA2, 0x471E)
    assert gpu.driver == "amdgpu" and gpu.card == "card0" and gpu.render_minor == 128 and gpu.boot_vga
    assert f.amdgpu.loaded and not f.amdgpu.builtin and not f.amdgpu.from_dkms
    assert f.amdgpu.file == "/lib/modules/6.8.0-45-generic/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"
    assert f.amdgpu.params["sched_policy"] == "0"
    assert f.amdgpu.params["hws_max_conc_proc"] == "-1"
    assert f.amdgpu.params["cwsr_enable"] == "1"
    assert "debug_mask" in f.amdgpu.params and "debug_largebar" not in f.amdgpu.params
    assert not f.amdkfd.present
    node = f.kfd.node.stat
    assert node is not None and node.kind == "char" and node.mode == 0o660
    assert f.accounts.user_name(node.uid) == "root" and f.accounts.group_name(node.gid) == "render"
    assert f.kfd.version == (1, 14)
    cpu, gpu_node = f.kfd.topology
    assert not cpu.is_gpu and cpu.prop("cpu_cores_count") == 16 and cpu.name == ""
    assert gpu_node.is_gpu and gpu_node.gfx == "gfx1100" and gpu_node.slot == "0000:03:00.0"
    assert gpu_node.prop("device_id") == 0x744C and gpu_node.prop("vendor_id") == 0x1002
    assert gpu_node.prop("drm_render_minor") == 128 and gpu_node.prop("simd_count") == 192
    assert f.kfd.generation_id == 2
    render = f.render_nodes["renderD128"].stat
    assert render is not None and render.mode & 0o060 == 0o060
    assert any(e.tag == "user" and e.qualifier == 1000 for e in render.acl)  # logind's uaccess ACL
    alice = f.accounts.user("alice")
    assert alice is not None
    render_group = f.accounts.group("render")
    assert render_group is not None and render_group.gid in f.accounts.gids_of(alice)


def test_780m_ubuntu2204_ga(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["780m-ubuntu2204-ga"]
    assert f.kernel.release == "5.15.0-125-generic"
    (gpu,) = f.gpus
    assert gpu.device == 0x15BF and gpu.driver is None and gpu.render_minor is None
    assert not f.amdgpu.loaded and f.amdgpu.file is not None
    # Not loaded: the declared parameters come from the module file itself.
    assert f.amdgpu.declared is not None and "sched_policy" in f.amdgpu.declared
    assert f.kfd.node.stat is None and not f.kfd.sysfs and f.kfd.topology == ()
    assert f.installed_kernels == ("5.15.0-125-generic", "6.8.0-49-generic")


def test_rx6800_seed_advice(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["rx6800-seed-advice"]
    kinds = [(d.kind, d.module, d.line) for d in f.modprobe.directives if d.file == "/etc/modprobe.d/amdkfd.conf"]
    assert kinds == [("softdep", "amdgpu", 2), ("install", "amdkfd", 3), ("options", "amdkfd", 4)]
    options = f.modprobe.for_module("amdkfd", "options")[0]
    assert options.args == ("enable_iommu=1", "max_num_of_devices=2")
    assert [(e.file, e.module) for e in f.modprobe.modules_load] == [("/etc/modules-load.d/modules.conf", "amdkfd")]
    assert not f.amdkfd.present
    assert [n.gfx for n in f.kfd.gpu_nodes] == ["gfx1030"]


def test_no_hsa_amd(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["no-hsa-amd"]
    assert f.kernel.config_source == "/proc/config.gz"
    assert f.kernel.symbol("CONFIG_HSA_AMD") == "n" and f.kernel.symbol("CONFIG_IKCONFIG_PROC") == "y"
    assert f.amdgpu.loaded and "sched_policy" not in f.amdgpu.params
    assert f.gpus[0].driver == "amdgpu" and f.gpus[0].render_minor == 128
    assert f.kfd.node.stat is None and not f.kfd.sysfs


def test_legacy_415_amdkfd(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["legacy-4.15-amdkfd"]
    assert f.kernel.version == (4, 15, 0)
    assert f.kernel.symbol("CONFIG_HSA_AMD") == "m"
    assert f.amdkfd.loaded and f.amdkfd.file and f.amdkfd.file.endswith("amd/amdkfd/amdkfd.ko")
    assert f.amdkfd.holders == ("amdgpu",)
    assert "sched_policy" in f.amdkfd.params and "sched_policy" not in f.amdgpu.params
    assert f.kfd.version == (1, 1)
    assert len(f.kfd.topology) == 1 and f.kfd.gpu_nodes == ()


def test_kfd_perms_0600(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["kfd-perms-0600"]
    node = f.kfd.node.stat
    assert node is not None and (node.mode, node.uid, node.gid) == (0o600, 0, 0)
    assert node.symbolic == "crw-------"
    bob = f.accounts.user("bob")
    render = f.accounts.group("render")
    assert bob is not None and render is not None and render.gid not in f.accounts.gids_of(bob)
    assert [n.gfx for n in f.kfd.gpu_nodes] == ["gfx1031"]


def test_bad_sched_policy(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["bad-sched-policy"]
    assert f.amdgpu.loaded and f.amdgpu.params["sched_policy"] == "9"
    assert f.gpus[0].driver == "amdgpu" and f.render_nodes["renderD128"].stat is not None
    assert f.kfd.node.stat is None and not f.kfd.sysfs
    (directive,) = f.modprobe.for_module("amdgpu", "options")
    assert (directive.file, directive.line, directive.args) == (
        "/etc/modprobe.d/amdgpu-tuning.conf",
        2,
        ("sched_policy=9",),
    )


def test_nvidia_only(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["nvidia-only"]
    (gpu,) = f.gpus
    assert (gpu.vendor, gpu.driver, gpu.is_amd) == (0x10DE, "nvidia", False)
    assert f.amd_gpus == () and not f.amdgpu.loaded


def test_dgpu_plus_igpu_atomics(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["dgpu-plus-igpu-atomics"]
    assert [(g.slot, g.device, g.driver) for g in f.gpus] == [
        ("0000:03:00.0", 0x73BF, "amdgpu"),
        ("0000:0a:00.0", 0x67DF, "amdgpu"),
        ("0000:12:00.0", 0x164E, "amdgpu"),
    ]
    assert [(n.slot, n.gfx) for n in f.kfd.gpu_nodes] == [("0000:03:00.0", "gfx1030"), ("0000:12:00.0", "gfx1036")]
    assert sorted(f.render_nodes) == ["renderD128", "renderD129", "renderD130"]


def test_dkms_missing_for_new_kernel(machine_facts: dict[str, Facts]) -> None:
    f = machine_facts["dkms-missing-for-new-kernel"]
    assert f.kernel.release == "6.8.0-51-generic"
    assert f.gpus[0].driver is None
    assert not f.amdgpu.from_dkms and f.amdgpu.loaded
    (dkms,) = f.dkms
    assert (dkms.module, dkms.version) == ("amdgpu", "6.10.5-2084815.24.04")
    assert dkms.built_for == ("6.8.0-50-generic",) and dkms.failed_for == ("6.8.0-51-generic",)
    assert dkms.make_log == "/var/lib/dkms/amdgpu/6.10.5-2084815.24.04/build/make.log"
    assert f.installed_kernels == ("6.8.0-50-generic", "6.8.0-51-generic")
    assert len(f.kfd.topology) == 1


@pytest.mark.parametrize("name", MACHINES)
def test_kernel_log_is_kmsg_records(name: str, rendered_machines: dict[str, object]) -> None:
    from pathlib import Path

    from kfdguard.host.root import Root
    from kfdguard.simulate.system import SimulatedSystem

    records = SimulatedSystem(Root(Path(str(rendered_machines[name])))).read_kmsg()
    assert records and records[0].split(";", 1)[1].startswith("Linux version ")
    for record in records:
        head, _, _text = record.partition(";")
        priority, seq, usec, flags = head.split(",")
        assert priority.isdigit() and seq.isdigit() and usec.isdigit() and flags == "-"
