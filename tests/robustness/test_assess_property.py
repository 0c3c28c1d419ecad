"""assess never raises, on any facts hypothesis can build, and keeps its invariants."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdguard.access import AclEntry, NodeStat
from kfdguard.assess import assess
from kfdguard.config import Config, DeviceConfig, FallbackConfig, ModuleConfig
from kfdguard.facts import (
    Accounts,
    Attempt,
    BootEntry,
    BootloaderFacts,
    DeviceNode,
    DkmsModule,
    Facts,
    GpuFacts,
    Group,
    History,
    InstalledKernel,
    KernelFacts,
    KernelLog,
    KernelRecord,
    KfdFacts,
    LogEvent,
    ModprobeDirective,
    ModprobeFacts,
    ModuleFacts,
    ModulesLoadEntry,
    OsFacts,
    Problem,
    TopologyNode,
    User,
)
from kfdguard.knowledge.logrules import RULES
from kfdguard.verdict import Severity, State
from tests.fuzzing import examples

small = st.integers(min_value=0, max_value=70000)
text = st.text(max_size=30)
devices = st.sampled_from([0x744C, 0x15BF, 0x73BF, 0x67DF, 0x6810, 0x7550, 0x164E, 0x73DF, 0x1586, 0xFFFF, 0x0001])
slots = st.sampled_from(["0000:03:00.0", "0000:0a:00.0", "0000:c4:00.0", "0001:ff:1f.7"])
versions = st.sampled_from([None, (4, 15, 0), (4, 20, 13), (5, 15, 0), (6, 1, 0), (6, 8, 0), (6, 12, 3)])

acl = st.builds(AclEntry, st.sampled_from(["user", "group", "group_obj", "mask"]), st.none() | small, st.integers(0, 7))
nodestat = st.builds(NodeStat, st.sampled_from(["char", "file", "dir", "block"]), small, small, small, small,
                     st.integers(0, 0o7777), st.lists(acl, max_size=3).map(tuple))  # fmt: skip
device_node = st.builds(DeviceNode, st.just("/dev/kfd"), st.none() | nodestat, st.none() | text)
props = st.dictionaries(
    st.sampled_from(["gfx_target_version", "location_id", "domain", "drm_render_minor", "simd_count", "x"]),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    max_size=6,
)
topo = st.builds(TopologyNode, st.integers(0, 8), st.integers(0, 2**32), text, props)
gpu = st.builds(GpuFacts, slots, st.sampled_from([0x1002, 0x10DE, 0x8086]), devices, st.none() | small, st.none() | small,
                st.none() | st.integers(0, 255), st.sampled_from([0x030000, 0x038000, 0x030200]),
                st.none() | st.sampled_from(["amdgpu", "nvidia", "vfio-pci"]), st.booleans(),
                st.none() | st.just("card0"), st.none() | st.integers(128, 140))  # fmt: skip
params = st.dictionaries(st.sampled_from(["sched_policy", "cwsr_enable", "noretry", "enable_iommu", "x"]),
                         st.sampled_from(["0", "1", "9", "-1", "Y", "abc", ""]), max_size=4)  # fmt: skip
module = st.builds(ModuleFacts, st.sampled_from(["amdgpu", "amdkfd"]), st.booleans(), st.none() | text, st.booleans(),
                   st.booleans(), params, st.none() | st.lists(st.sampled_from(["sched_policy", "cwsr_enable"]), max_size=2).map(tuple),
                   st.lists(text, max_size=2).map(tuple), st.none() | small, st.none() | text, st.just("/sys/module/amdgpu"))  # fmt: skip
directive = st.builds(ModprobeDirective, text, st.integers(1, 99),
                      st.sampled_from(["options", "softdep", "install", "blacklist", "alias"]),
                      st.sampled_from(["amdgpu", "amdkfd", "radeon"]),
                      st.lists(st.sampled_from(["pre:", "amdkfd", "sched_policy=9", "enable_iommu=1", "x=", "post:"]),
                               max_size=4).map(tuple), text)  # fmt: skip
modprobe = st.builds(ModprobeFacts, st.lists(directive, max_size=4).map(tuple), st.just(()), st.just(()),
                     st.lists(st.builds(ModulesLoadEntry, text, st.integers(1, 9), st.sampled_from(["amdkfd", "amdgpu", "loop"])),
                              max_size=2).map(tuple),
                     st.dictionaries(st.sampled_from(["amdgpu", "amdkfd"]), params, max_size=2),
                     st.lists(st.sampled_from(["amdgpu", "radeon"]), max_size=1).map(tuple))  # fmt: skip
accounts = st.builds(Accounts,
                     st.lists(st.builds(Group, st.sampled_from(["render", "video", "alice"]), small,
                                        st.lists(st.sampled_from(["alice", "bob"]), max_size=2).map(tuple)), max_size=3).map(tuple),
                     st.lists(st.builds(User, st.sampled_from(["alice", "bob", "root"]), small, small, text,
                                        st.sampled_from(["/bin/bash", "/usr/sbin/nologin"])), max_size=3).map(tuple))  # fmt: skip
event = st.builds(LogEvent, st.sampled_from([r.id for r in RULES]), st.sampled_from(["success", "neutral", "failure", "runtime"]),
                  st.none() | st.sampled_from([r.code for r in RULES if r.code]), st.none() | slots | st.just("kfd"),
                  st.none() | st.just("amdgpu"),
                  st.lists(st.tuples(st.sampled_from(["vendor", "device", "fw", "need", "file", "param", "module", "asic", "slot"]),
                                     st.sampled_from(["1002", "744c", "67df", "zz", "730", "amdgpu/x.bin", "PITCAIRN", "0000:03:00.0"])),
                           max_size=3).map(tuple),
                  text, st.integers(1, 100), st.integers(-2, 0), text)  # fmt: skip
kernel = st.builds(KernelFacts, text, versions,
                   st.dictionaries(st.sampled_from(["CONFIG_HSA_AMD", "CONFIG_DRM_AMDGPU"]), st.sampled_from(["y", "m", "n", "x"]), max_size=2),
                   st.none() | text, st.lists(st.sampled_from(["amdgpu.sched_policy=9", "nomodeset", "quiet"]), max_size=2).map(tuple))  # fmt: skip
releases = st.sampled_from(["6.8.0-49-generic", "5.15.0-1-generic", "6.12.1-arch1", "4.15.0-1-generic", "junk"])
installed = st.builds(
    InstalledKernel, releases, versions, text, st.none() | text, st.booleans(),
    st.none() | st.sampled_from(["y", "m", "n"]), st.booleans(), st.booleans(),
)  # fmt: skip
entries = st.builds(BootEntry, text, text, st.none() | releases, st.booleans())
bootloader = st.builds(
    BootloaderFacts, st.sampled_from(["grub", "systemd-boot", "none"]), st.none() | text,
    st.lists(entries, max_size=4).map(tuple), st.none() | st.sampled_from(["0", "${saved_entry}", "x"]),
    st.none() | text, st.none() | text, st.none() | text,
)  # fmt: skip
history = st.builds(
    History,
    st.dictionaries(releases, st.builds(KernelRecord, small, small, st.sampled_from(["ok", "failed", ""])), max_size=3),
    st.lists(st.builds(Attempt, releases, releases, text, st.sampled_from(["oneshot", "pin"]), text, text, text,
                       st.sampled_from(["pending", "ok", "failed"])), max_size=3).map(tuple),
    st.none() | text, st.none() | text,
)  # fmt: skip
facts_strategy = st.builds(
    Facts,
    root=st.just("/"), simulated=st.booleans(),
    os=st.builds(OsFacts, st.sampled_from(["debian", "ubuntu", "fedora", "", "arch"]), st.just(()), text, text),
    kernel=kernel, amdgpu=module, amdkfd=module,
    gpus=st.lists(gpu, max_size=3).map(tuple),
    render_nodes=st.dictionaries(st.sampled_from(["renderD128", "renderD129"]), device_node, max_size=2),
    kfd=st.builds(KfdFacts, device_node, st.booleans(), st.lists(topo, max_size=3).map(tuple), st.none() | small,
                  st.none() | st.tuples(st.integers(0, 3), st.integers(0, 30)), st.none() | text),
    modprobe=modprobe, accounts=accounts,
    dkms=st.lists(st.builds(DkmsModule, st.sampled_from(["amdgpu"]), text, text, st.lists(text, max_size=2).map(tuple),
                            st.lists(text, max_size=2).map(tuple), st.none() | text), max_size=1).map(tuple),
    installed_kernels=st.lists(releases, max_size=3).map(tuple),
    log=st.builds(KernelLog, st.booleans(), st.just(("journal",)), small, st.lists(event, max_size=5).map(tuple), st.just(())),
    kernels=st.lists(installed, max_size=3).map(tuple),
    bootloader=bootloader,
    history=history,
    problems=st.lists(st.builds(Problem, text, text), max_size=2).map(tuple),
)  # fmt: skip
configs = st.builds(
    Config,
    module=st.builds(ModuleConfig, options=st.lists(st.tuples(st.sampled_from(["sched_policy", "enable_iommu", "halt_if_hws_hang"]),
                                                             st.sampled_from(["0", "1", "9"])), max_size=2).map(tuple)),
    device=st.builds(DeviceConfig, group=st.sampled_from(["render", "video", "nosuch"]), mode=st.sampled_from([0o660, 0o666, 0o600])),
    fallback=st.builds(FallbackConfig, st.sampled_from(["off", "notify", "oneshot", "pin"])),
)  # fmt: skip


@pytest.mark.fuzz
@settings(max_examples=examples(500), suppress_health_check=[HealthCheck.too_slow])
@given(facts_strategy, configs)
def test_assess_never_raises_and_is_consistent(facts: Facts, config: Config) -> None:
    verdict = assess(facts, config)
    assert verdict.state in State
    assert verdict.ready == (verdict.state in (State.READY, State.DEGRADED))
    if verdict.state is State.NO_DEVICE:
        assert not any(g.is_amd for g in facts.gpus)
    if verdict.state is State.READY:
        assert not any(f.severity is Severity.ERROR for f in verdict.findings)
    assert [f.key() for f in verdict.findings] == sorted(f.key() for f in verdict.findings)
    for finding in verdict.findings:
        assert finding.code and finding.message and "\n" not in finding.message
    assert len(verdict.gpus) == sum(1 for g in facts.gpus if g.is_amd)
    assert verdict == assess(facts, config)
