"""The simulated kernel applies TTM's options at boot, and amdgpu sizes GTT and an APU's KFD bank from them (issue 38).

What the simulator follows (kfdguard/simulate/hardware.py, kernel.py, render.py, each with its source):
- modprobe loads amdgpu's dependencies first, each with its own options: ``options ttm pages_limit=...``
  reaches the in-tree ttm; the DKMS amdgpu depends on its own amdttm instead (dkms.conf builds it, and
  pre-build.sh renames its exports to amdttm_*), so only ``options amdttm ...`` reaches the TTM it uses;
- a built-in ttm (CONFIG_DRM_TTM=y) takes ``ttm.<name>=`` from the kernel command line only;
- the parameters stay 0 when unset until amdgpu initialises a device: ttm_global_init() then puts half the
  RAM in place of pages_limit and page_pool_size (dma32_pages_limit: the RAM, at most 2 GiB);
- from 6.12 amdgpu_ttm_init() sizes GTT as ttm_tt_pages_limit() << PAGE_SHIFT, and from 6.10 an APU's
  KFD bank is that limit (amdgpu_amdkfd_get_local_mem_info()); before, neither follows it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from tests.conftest import tool

Make = Callable[[str | MachineSpec], SimulatedSystem]
RELEASE = "6.12.48+deb13-amd64"
DKMS = "6.16.6-2238411.24.04"
RAM_MIB = 32768  # 32 GiB: 8,388,608 pages; TTM's default is half, 4,194,304 pages (16 GiB)
PAGES_24G = 6_291_456  # 24 GiB / 4096
DEFAULT = 4_194_304


def apu(release: str = RELEASE, **gpu: object) -> MachineBuilder:
    return MachineBuilder("apu").with_kernel(release).with_gpu(0x15BF, revision=0xC1, **gpu).with_ram(RAM_MIB)  # type: ignore[arg-type]


def dkms(builder: MachineBuilder) -> MachineBuilder:
    return builder.with_kernel(RELEASE, amdgpu="dkms").with_dkms(DKMS, [RELEASE])


def params(system: SimulatedSystem, module: str) -> dict[str, str]:
    pdir = system.root.sys / "module" / module / "parameters"
    return {p.name: p.read_text().strip() for p in sorted(pdir.iterdir())}


def memory(system: SimulatedSystem) -> tuple[int, int]:
    """(mem_info_gtt_total, the GPU node's KFD bank) in bytes."""
    gtt = int((system.root.sys / "devices/pci0000:00/0000:03:00.0/mem_info_gtt_total").read_text())
    bank = (system.root.sys / "devices/virtual/kfd/kfd/topology/nodes/1/mem_banks/0/properties").read_text()
    return gtt, int(bank.splitlines()[1].split()[1])


def test_without_options_ttm_shows_the_default_it_computed(fresh_machine: Make) -> None:
    system = fresh_machine(apu().build())
    # dma32_pages_limit: min(all of the RAM, 2 GiB) = 524,288 pages.
    assert params(system, "ttm") == {
        "dma32_pages_limit": "524288", "page_pool_size": str(DEFAULT), "pages_limit": str(DEFAULT)}  # fmt: skip
    assert memory(system) == (DEFAULT * 4096, DEFAULT * 4096)  # 16 GiB each
    assert "ttm 16384 1 amdgpu, Live" in (system.root.proc / "modules").read_text()
    assert [p.name for p in (system.root.sys / "module/ttm/holders").iterdir()] == ["amdgpu"]


def test_options_ttm_size_gtt_and_the_apus_bank_after_a_reboot(fresh_machine: Make) -> None:
    system = fresh_machine(apu().build())
    conf = system.root.etc / "modprobe.d/memory.conf"
    conf.parent.mkdir(exist_ok=True)
    conf.write_text(f"options ttm pages_limit={PAGES_24G} page_pool_size={PAGES_24G}\n")
    assert params(system, "ttm")["pages_limit"] == str(DEFAULT)  # read when ttm loads: the next boot
    system.reboot()
    assert params(system, "ttm")["pages_limit"] == str(PAGES_24G)
    assert params(system, "ttm")["page_pool_size"] == str(PAGES_24G)
    assert memory(system) == (24 << 30, 24 << 30)


def test_an_unknown_ttm_option_is_ignored_with_the_kernels_words(fresh_machine: Make) -> None:
    system = fresh_machine(apu().with_modprobe_option("ttm", pages_limt=PAGES_24G).build())
    assert any(r.endswith(";ttm: unknown parameter 'pages_limt' ignored") for r in system.read_kmsg())
    assert params(system, "ttm")["pages_limit"] == str(DEFAULT)


def test_the_dkms_driver_takes_amdttm_options_and_ignores_ttm(fresh_machine: Make) -> None:
    spec = (dkms(apu()).with_modprobe_option("ttm", pages_limit=PAGES_24G)
            .with_modprobe_option("amdttm", pages_limit=5_242_880))  # fmt: skip  # 20 GiB
    system = fresh_machine(spec.build())
    assert params(system, "amdttm")["pages_limit"] == "5242880"
    assert params(system, "amdttm")["page_pool_size"] == str(DEFAULT)  # not set: TTM's default
    assert not (system.root.sys / "module/ttm").exists()  # nothing loaded the in-tree ttm
    assert memory(system) == (20 << 30, 20 << 30)


def test_real_kmod_loads_amdttm_before_the_dkms_amdgpu(fresh_machine: Make) -> None:
    system = fresh_machine(dkms(apu()).build())
    root, base = str(system.root.path), system.root.lib_modules / RELEASE
    rendered = sorted((base / "modules.dep").read_text().splitlines())
    run = subprocess.run([tool("depmod"), "-b", root, RELEASE], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert sorted((base / "modules.dep").read_text().splitlines()) == rendered
    shown = subprocess.run(
        [tool("modprobe"), "-C", str(system.root.etc / "modprobe.d"), "-d", root, "-S", RELEASE,
         "--show-depends", "amdgpu"], capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    loads = [line.split()[-1].rsplit("/", 1)[-1] for line in shown.stdout.splitlines()]
    assert "amdttm.ko" in loads and "ttm.ko" not in loads and loads[-1] == "amdgpu.ko"
    parm = subprocess.run([tool("modinfo"), "-F", "parmtype", str(base / "updates/dkms/amdttm.ko")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert parm.stdout.split() == ["pages_limit:ulong", "dma32_pages_limit:ulong", "page_pool_size:ulong"]


def test_a_built_in_ttm_takes_the_command_line_only(fresh_machine: Make) -> None:
    spec = (apu().with_kernel_config(CONFIG_DRM_TTM="y").with_modprobe_option("ttm", page_pool_size=PAGES_24G)
            .with_cmdline(f"BOOT_IMAGE=/boot/vmlinuz-{RELEASE} ro quiet ttm.pages_limit={PAGES_24G}"))  # fmt: skip
    system = fresh_machine(spec.build())
    assert not (system.root.sys / "module/ttm/initstate").exists()  # built in: no initstate, not in /proc/modules
    assert "ttm" not in (system.root.proc / "modules").read_text()
    assert params(system, "ttm")["pages_limit"] == str(PAGES_24G)
    assert params(system, "ttm")["page_pool_size"] == str(DEFAULT)  # modprobe.d never reached it
    assert memory(system) == (24 << 30, 24 << 30)


def test_reloading_amdgpu_reloads_the_unused_ttm_with_the_new_options(fresh_machine: Make) -> None:
    system = fresh_machine(apu(boot_vga=False).build())
    (system.root.etc / "modprobe.d").mkdir(exist_ok=True)
    (system.root.etc / "modprobe.d/memory.conf").write_text(f"options ttm pages_limit={PAGES_24G}\n")
    assert system.run(["modprobe", "-r", "amdgpu"], timeout=10).ok
    assert not (system.root.sys / "module/ttm").exists()  # modprobe -r removes the dependency it left unused
    assert system.run(["modprobe", "amdgpu"], timeout=10).ok
    assert params(system, "ttm")["pages_limit"] == str(PAGES_24G)
    assert memory(system) == (24 << 30, 24 << 30)


def test_before_610_the_limit_moves_neither_gtt_nor_the_bank(fresh_machine: Make) -> None:
    # Ubuntu 24.04's 6.8: GTT is max(3 GiB, RAM/2) and the APU's bank its 512 MiB carve-out, whatever TTM's limit.
    spec = MachineBuilder("apu").ubuntu2404().with_gpu(0x15BF, revision=0xC1).with_ram(RAM_MIB)
    system = fresh_machine(spec.with_modprobe_option("ttm", pages_limit=PAGES_24G).build())
    assert params(system, "ttm")["pages_limit"] == str(PAGES_24G)
    assert memory(system) == (16 << 30, 512 << 20)


def test_before_61_ttm_is_not_modelled(fresh_machine: Make) -> None:
    spec = MachineBuilder("old").ubuntu2204().with_gpu(0x73BF).with_modprobe_option("ttm", pages_limit=PAGES_24G)
    system = fresh_machine(spec.build())
    assert not (system.root.sys / "module/ttm").exists()
    assert not any("ttm:" in r for r in system.read_kmsg())
