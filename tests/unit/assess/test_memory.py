"""memory.target on an APU (issue 38): the option arithmetic, the plan on simulated Strix Halo and Phoenix
machines, and what the running kernel applied.

The numbers are derived in the comments from the sources' units (kfdguard/knowledge/memory.py):
ttm.pages_limit and ttm.page_pool_size are pages of PAGE_SIZE (module_param ulong, ttm_tt.c and
ttm_pool.c); amdgpu.gttsize is MiB (``(uint64_t)amdgpu_gtt_size << 20`` in amdgpu_ttm.c); MemTotal in
/proc/meminfo is kB of the kernel's totalram, which TTM halves for its default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import pytest

from kfdguard.assess import assess
from kfdguard.assess.memory import memory_options
from kfdguard.config import Config, MemoryConfig, parse_config
from kfdguard.host.root import MODPROBE_CONF
from kfdguard.knowledge.memory import rule_for
from kfdguard.probe import probe
from kfdguard.simulate.builder import MachineBuilder
from kfdguard.simulate.spec import MachineSpec
from kfdguard.simulate.system import SimulatedSystem
from kfdguard.verdict import Severity, Verdict

Make = Callable[[str | MachineSpec], SimulatedSystem]

# A Strix Halo with 128 GiB, 512 MiB of it carved out for the UMA frame buffer: the kernel manages
# 127.5 GiB less its reservations. 132,120,576 kB = 126 GiB exactly, for round arithmetic.
MEMTOTAL_KB = 132_120_576
RAM = MEMTOTAL_KB * 1024  # 135,291,469,824 bytes
# 96 GiB = 96 * 2^30 = 103,079,215,104 bytes; / 4096 bytes a page = 25,165,824 pages.
PAGES_96G = 25_165_824


def test_96g_on_6_12_in_tree_is_25165824_pages_of_ttm() -> None:
    plan = memory_options("96G", RAM, (6, 12), dkms=False)
    assert plan.refusal is None and not plan.cmdline
    assert plan.target_bytes == 96 * 2**30 == 103_079_215_104
    assert plan.options == (("ttm", "pages_limit", "25165824"), ("ttm", "page_pool_size", "25165824"))
    assert plan.args() == "ttm.pages_limit=25165824 ttm.page_pool_size=25165824"


def test_96g_with_dkms_is_the_same_pages_for_amdttm() -> None:
    # The DKMS driver builds TTM with TTM_NAME=amdttm: the same parameters, under the module amdttm.
    plan = memory_options("96G", RAM, (6, 12), dkms=True)
    assert plan.options == (("amdttm", "pages_limit", str(PAGES_96G)), ("amdttm", "page_pool_size", str(PAGES_96G)))
    assert any("amdttm" in n and "ttm.* options do not reach it" in n for n in plan.notes)


def test_a_share_of_the_ram_rounds_down_to_whole_pages() -> None:
    # 75% of 135,291,469,824 bytes = 101,468,602,368 bytes; / 4096 = 24,772,608 pages exactly.
    plan = memory_options("75%", RAM, (6, 12), dkms=False)
    assert plan.target_bytes == 101_468_602_368 and plan.pages == 24_772_608
    # 33% of it = 44,646,185,041 bytes (rounded down); / 4096 = 10,899,947.5: 10,899,947 pages.
    odd = memory_options("33%", RAM, (6, 12), dkms=False)
    assert (odd.target_bytes, odd.pages) == (44_646_185_041, 10_899_947)


def test_on_6_1_gtt_needs_gttsize_in_mib_and_kfd_stays_at_three_eighths() -> None:
    # 6.1 sizes GTT from amdgpu.gttsize (MiB): 96 GiB = 98,304 MiB; KFD's limit does not move.
    plan = memory_options("96G", RAM, (6, 1), dkms=False)
    assert ("amdgpu", "gttsize", "98304") in plan.options
    assert ("ttm", "pages_limit", str(PAGES_96G)) in plan.options
    assert any("3/8" in n for n in plan.notes)
    assert not any(m == "amdgpu" for m, _, _ in memory_options("96G", RAM, (6, 12), dkms=False).options)


def test_a_target_beyond_the_ram_is_refused() -> None:
    plan = memory_options("128G", RAM, (6, 12), dkms=False)
    assert plan.options == () and plan.refusal is not None and "126.0 GiB" in plan.refusal


def test_a_built_in_ttm_goes_on_the_command_line() -> None:
    assert memory_options("96G", RAM, (6, 12), dkms=False, ttm_builtin=True).cmdline
    assert not memory_options("96G", RAM, (6, 12), dkms=True, ttm_builtin=True).cmdline  # amdttm is a module


def test_kernels_between_series_that_differ_are_unknown() -> None:
    assert rule_for((6, 1), False) is not None and not rule_for((6, 1), False).gtt_follows_ttm  # type: ignore[union-attr]
    assert rule_for((6, 8), False) is None  # the change (6.5) was not read: not guessed
    assert rule_for((6, 14), False) is rule_for((6, 12), False)  # 6.12 and 7.2 agree on GTT and KFD
    assert rule_for((7, 3), False) is not None and rule_for((7, 3), False).gttsize_warns  # type: ignore[union-attr]
    assert rule_for((5, 15), False) is None and rule_for(None, True) is not None


# --- on simulated machines ------------------------------------------------------------------------


RELEASE = "6.12.48+deb13-amd64"  # Debian 13's 6.12: GTT and KFD's limit follow ttm.pages_limit
DKMS = "6.16.6-2238411.24.04"  # the amdgpu-dkms of tests/data/healthy-logs/207-...


class Apu(Protocol):
    def __call__(self, release: str = RELEASE) -> MachineBuilder: ...


def _apu(name: str, device: int, release: str) -> MachineBuilder:
    return (
        MachineBuilder(name)
        .with_kernel(release)
        .with_gpu(device, revision=0xC1)
        .with_user("alice", groups=["render"])
        .with_ram(MEMTOTAL_KB // 1024)
    )


def strix_halo(release: str = RELEASE) -> MachineBuilder:
    return _apu("strix-halo", 0x1586, release)


def phoenix(release: str = RELEASE) -> MachineBuilder:
    """A Radeon 780M (0x15BF, gfx1103; revision 0xC1 as the bundled 780m-ollama machine's) with the same
    MemTotal as the Strix Halo. 96 GiB needs more RAM than that: Phoenix laptops mostly ship with 16-64 GB,
    so this is a desktop Phoenix (Ryzen 7 8700G, socket AM5, four DIMM slots) with 4x32 GB = 128 GiB; the
    simulator's Phoenix carves out 512 MiB as the Strix Halo does, so 126 GiB for the kernel holds for both."""
    return _apu("phoenix", 0x15BF, release)


# The same cases on both APUs: nothing in kfdguard/assess/memory.py depends on which APU it is.
APUS = pytest.mark.parametrize("apu", [strix_halo, phoenix], ids=["strix-halo", "phoenix"])


def with_dkms_driver(builder: MachineBuilder, release: str = RELEASE) -> MachineBuilder:
    """amdgpu from ROCm's amdgpu-dkms, built for ``release``: it loads amdttm, not ttm."""
    return builder.with_kernel(release, amdgpu="dkms").with_dkms(DKMS, [release])


def verdict(make: Make, builder: MachineBuilder, target: str | None = "96G") -> Verdict:
    return assess(probe(make(builder.build())), Config(memory=MemoryConfig(target=target)))


def conf_of(result: Verdict) -> str:
    (write,) = [a for a in result.plan if a.kind == "write-file" and a.target == MODPROBE_CONF]
    assert write.content is not None
    return write.content


@APUS
def test_check_plans_ttm_options_on_6_12(fresh_machine: Make, apu: Apu) -> None:
    result = verdict(fresh_machine, apu())
    conf = conf_of(result)
    assert "options ttm pages_limit=25165824 page_pool_size=25165824\n" in conf
    assert "gttsize" not in conf and "amdttm" not in conf
    assert not [f for f in result.findings if f.code.startswith("memory-")]


@APUS
def test_check_plans_amdttm_options_with_the_dkms_driver(fresh_machine: Make, apu: Apu) -> None:
    result = verdict(fresh_machine, with_dkms_driver(apu()))
    assert "options amdttm pages_limit=25165824 page_pool_size=25165824\n" in conf_of(result)
    assert "options ttm " not in conf_of(result)


def test_no_target_writes_no_memory_options(fresh_machine: Make) -> None:
    result = verdict(fresh_machine, strix_halo(), target=None)
    assert not any("ttm" in (a.content or "") for a in result.plan)


def test_a_discrete_gpu_gets_no_memory_options(fresh_machine: Make) -> None:
    builder = MachineBuilder("dgpu").with_kernel("6.12.48+deb13-amd64").with_gpu(0x744C).with_ram(MEMTOTAL_KB // 1024)
    result = verdict(fresh_machine, builder)
    assert not any("ttm" in (a.content or "") for a in result.plan)
    assert result.by_code("memory-target-not-apu")


def test_a_target_beyond_the_ram_is_an_error_and_writes_nothing(fresh_machine: Make) -> None:
    result = verdict(fresh_machine, strix_halo(), target="200G")
    (finding,) = result.by_code("memory-target-invalid")
    assert "200G" in finding.message and "126.0 GiB" in finding.message
    assert not any("ttm" in (a.content or "") for a in result.plan)


def test_a_built_in_ttm_is_said_with_the_command_line_to_add(fresh_machine: Make) -> None:
    builder = strix_halo().with_kernel_config(CONFIG_DRM_TTM="y")
    result = verdict(fresh_machine, builder)
    (finding,) = result.by_code("memory-options-cmdline")
    assert "ttm.pages_limit=25165824 ttm.page_pool_size=25165824" in finding.remedy
    assert not any("options ttm" in (a.content or "") for a in result.plan)


# --- what the kernel applied -------------------------------------------------------------------------

OUR_LINE = "options ttm pages_limit=25165824 page_pool_size=25165824\n"


GIB_96 = PAGES_96G * 4096  # 103,079,215,104 bytes
DRIVERS = pytest.mark.parametrize("dkms", [False, True], ids=["in-tree", "dkms"])


@APUS
@DRIVERS
def test_applied_options_give_no_finding_after_the_reboot(fresh_machine: Make, apu: Apu, dkms: bool) -> None:
    # The whole path on the simulated machine: enforce writes kfdguard.conf, the running kernel keeps TTM's
    # default (half of 126 GiB = 16,515,072 pages) until a reboot, and the reboot's modprobe applies the options
    # to ttm (amdttm under the DKMS driver) before amdgpu sizes GTT and KFD's bank from them.
    from kfdguard.app.pipeline import enforce

    module = "amdttm" if dkms else "ttm"
    system = fresh_machine((with_dkms_driver(apu()) if dkms else apu()).build())
    config = Config(memory=MemoryConfig(target="96G"))
    report, _, written = enforce(system, config)
    assert not report.failed, report.changes
    conf = (system.root.etc / "modprobe.d/kfdguard.conf").read_text()
    assert f"options {module} pages_limit=25165824 page_pool_size=25165824\n" in conf
    (stale,) = written.by_code("memory-limit-not-applied")  # written, not yet booted with
    assert "16515072 pages, not the configured 25165824" in stale.message
    system.reboot()
    result = assess(probe(system), config)
    assert not [f for f in result.findings if f.code.startswith("memory-")]
    (gpu,) = result.gpus
    assert gpu.ttm_limit == GIB_96  # the live limit, read from /sys/module/<module>/parameters
    # 6.12: amdgpu_ttm_init() sizes GTT from ttm_tt_pages_limit(), and amdgpu_amdkfd_get_local_mem_info()
    # gives an APU's KFD bank the same limit: what ROCm will be told it may allocate.
    assert gpu.gtt_total == GIB_96
    assert gpu.compute_memory == GIB_96


def loaded_before(builder: MachineBuilder, module: str, pages: int) -> MachineBuilder:
    """``module`` came up before kfdguard.conf held the options, with ``pages`` as its limit: a boot from an
    initramfs built before they were written. The simulator does not model what an initramfs holds (its image
    lists files; update-initramfs changes nothing), so the module is written as already loaded, and the
    simulated modprobe leaves a loaded module alone, as kmod does."""
    return (builder.with_file(f"/sys/module/{module}/initstate", "live\n")
            .with_file(f"/sys/module/{module}/parameters/pages_limit", f"{pages}\n"))  # fmt: skip


@APUS
def test_a_limit_a_stale_initramfs_kept_is_a_finding(fresh_machine: Make, apu: Apu) -> None:
    # The kernel's own default: half of 132,120,576 kB = 66,060,288 kB = 16,515,072 pages.
    builder = loaded_before(apu().with_file(MODPROBE_CONF, OUR_LINE), "ttm", 16_515_072)
    (finding,) = verdict(fresh_machine, builder).by_code("memory-limit-not-applied")
    assert "16515072 pages, not the configured 25165824" in finding.message
    assert "initramfs" in finding.message and "initramfs" in finding.remedy


@APUS
def test_ttm_options_with_the_dkms_driver_are_named_as_ignored(fresh_machine: Make, apu: Apu) -> None:
    # The real case of tests/data/healthy-logs/207-...: ttm.pages_limit on the command line, amdgpu 6.16.6 DKMS.
    # amdttm came up with its default before kfdguard.conf held its options; ttm, loaded beside it, has the value.
    builder = with_dkms_driver(apu()).with_file(
        MODPROBE_CONF, "options amdttm pages_limit=25165824 page_pool_size=25165824\n"
    )
    builder = loaded_before(loaded_before(builder, "ttm", PAGES_96G), "amdttm", 16_515_072)
    (finding,) = verdict(fresh_machine, builder).by_code("memory-limit-not-applied")
    assert "reached ttm, which this amdgpu does not use" in finding.message


@APUS
def test_gttsize_beside_the_ttm_limit_is_both_set(fresh_machine: Make, apu: Apu) -> None:
    builder = apu().with_modprobe_option("amdgpu", gttsize=65536)
    (finding,) = verdict(fresh_machine, builder).by_code("memory-gttsize-set")
    assert "/etc/modprobe.d/test.conf:1: options amdgpu gttsize=65536" in finding.evidence


# --- configuration -----------------------------------------------------------------------------------


def test_memory_target_values_and_errors() -> None:
    assert parse_config("memory:\n  target: 96G\n", "c")[0].memory.target == "96G"
    assert parse_config("memory:\n  target: '75%'\n", "c")[0].memory.target == "75%"
    for text, message in (
        ("96", "'96' has no unit"),
        ("96GB", "unknown unit 'GB'; MB, GB and TB are ambiguous"),
        ("150%", "150% is not a whole percentage"),
        ("512M", "512M is out of range (1G..16T)"),
        ("lots", "'lots' is not a size"),
    ):
        config, errors = parse_config(f"version: 1\nmemory:\n  target: {text}\n", "c.yaml")
        assert config == Config()  # nothing of a broken file is used
        assert [(e.line, e.column, e.key) for e in errors] == [(3, 11, "memory.target")]
        assert message in errors[0].message, errors[0].message


# --- published (issue 38: check, --json, the bus, metrics) ------------------------------------------------


def test_the_ttm_limit_in_force_is_published_with_the_gpu(fresh_machine: Make) -> None:
    from kfdguard.fleet.metrics import render
    from kfdguard.publish.report import to_json, to_text
    from kfdguard.service.status import from_verdict
    from tests.unit.publish.test_schema import errors

    # The machine boots with kfdguard.conf in place: the simulated modprobe gives ttm its options.
    builder = strix_halo().with_file(MODPROBE_CONF, OUR_LINE)
    facts = probe(fresh_machine(builder.build()))
    result = assess(facts, Config(memory=MemoryConfig(target="96G")))
    (gpu,) = result.gpus
    assert gpu.integrated is True and gpu.ttm_limit == PAGES_96G * 4096  # 96 GiB
    assert "TTM limit 96.0 GiB" in to_text(facts, result)
    document = to_json(facts, result)
    assert errors("check", document) == []
    gpus = document["gpus"]
    assert isinstance(gpus, list) and [g["ttm_limit"] for g in gpus] == [103_079_215_104]
    (device,) = from_verdict(facts, result, "notify", 0).devices
    assert device["TtmLimit"] == 103_079_215_104
    assert 'kfdguard_gpu_ttm_limit_bytes{slot="' in render(result, facts, 0.0)


def test_amdttm_rules_when_the_dkms_driver_loaded_it(fresh_machine: Make) -> None:
    # The DKMS amdgpu loads amdttm, which keeps its default (half the RAM); a ttm loaded beside it holds another.
    builder = loaded_before(with_dkms_driver(strix_halo()), "ttm", PAGES_96G)
    (gpu,) = verdict(fresh_machine, builder, target=None).gpus
    assert gpu.ttm_limit == 16_515_072 * 4096  # amdttm's: the DKMS amdgpu does not use ttm


def test_a_discrete_card_has_no_ttm_limit_and_its_vram_for_compute(fresh_machine: Make) -> None:
    from kfdguard.fleet.metrics import render

    builder = MachineBuilder("card").with_kernel("6.12.48+deb13-amd64").with_gpu(0x744C, revision=0xC8)
    facts = probe(fresh_machine(builder.build()))
    result = assess(facts, Config())
    (gpu,) = result.gpus
    assert gpu.integrated is False and gpu.ttm_limit is None
    assert gpu.compute_memory is not None and gpu.compute_memory == gpu.vram_total
    assert "kfdguard_gpu_ttm_limit_bytes" not in render(result, facts, 0.0)
    assert "kfdguard_gpu_compute_memory_bytes" in render(result, facts, 0.0)


# --- the kernel's own limit: KFD handing an APU only its carve-out ---------------------------------------


@pytest.mark.parametrize("target", [None, "96G"])
def test_an_apu_kernel_before_6_10_gives_kfd_only_the_carve_out(fresh_machine: Make, target: str | None) -> None:
    """On 6.8 KFD's bank of the 780M is its 512 MiB carve-out while TTM allows half the RAM (63 GiB): what ROCm
    sees, target or not (the simulator follows kfd_crat.c and eb853413d02c, simulate/hardware.py)."""
    result = verdict(fresh_machine, phoenix("6.8.0-45-generic"), target)
    (found,) = result.by_code("memory-apu-carve-out-only")
    # A warning when memory.target asks for more; without one, what ROCm sees is said.
    assert found.severity is (Severity.INFO if target is None else Severity.WARNING) and found.gpu == "0000:03:00.0"
    assert "only its 0.5 GiB carve-out as compute memory on 6.8.0-45-generic" in found.message
    assert "6.12 LTS or later" in found.remedy and "eb853413d02c" in found.remedy
    assert found.evidence[0] == "KFD node 1's memory bank: 536870912 bytes"


def test_from_6_10_kfd_gives_an_apu_the_ttm_limit_and_nothing_is_said(fresh_machine: Make) -> None:
    assert not verdict(fresh_machine, phoenix(), None).by_code("memory-apu-carve-out-only")
    assert not verdict(fresh_machine, strix_halo(), None).by_code("memory-apu-carve-out-only")


def test_a_pages_limit_of_thousands_of_digits_is_no_limit_and_no_crash() -> None:
    # A hostile sysfs (or a corrupt capture) may hold any digits: int() refuses more than 4300 of them.
    from kfdguard.assess.memory import ttm_limit
    from kfdguard.facts import MemoryFacts

    assert ttm_limit(MemoryFacts(ttm={"ttm": {"pages_limit": "9" * 5000}})) is None
    assert ttm_limit(MemoryFacts(ttm={"ttm": {"pages_limit": "262144"}})) == 262144 * 4096
