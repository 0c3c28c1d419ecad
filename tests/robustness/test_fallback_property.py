"""The three 'never' rules of the fallback policy, over random kernel sets and histories."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdguard.facts import (
    Accounts,
    Attempt,
    BootEntry,
    BootloaderFacts,
    DeviceNode,
    Facts,
    GpuFacts,
    History,
    InstalledKernel,
    KernelFacts,
    KernelRecord,
    KfdFacts,
    ModprobeFacts,
    ModuleFacts,
    OsFacts,
)
from kfdguard.fallback.policy import auto_action, fingerprint, recommend, record_check
from kfdguard.record import replace
from tests.fuzzing import examples

NAVI31 = GpuFacts("0000:03:00.0", 0x1002, 0x744C, None, None, 0xC8, 0x030000, "amdgpu", True, "card0", 128)
MODULE = ModuleFacts("amdgpu", False, None, False, True, {}, None, (), None, None, "")
NOKFD = ModuleFacts("amdkfd", False, None, False, False, {}, None, (), None, None, "")


mostly = st.sampled_from([True, True, True, True, False])  # most kernels are usable
World = tuple[list[InstalledKernel], BootloaderFacts, dict[str, bool]]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    count = draw(st.integers(1, 6))
    minors = draw(st.lists(st.integers(0, 14), min_size=count, max_size=count, unique=True))
    kernels = []
    entries = []
    works: dict[str, bool] = {}
    for minor in minors:
        release = f"6.{minor}.0-1-generic"
        kernels.append(InstalledKernel(
            release, (6, minor, 0), f"/boot/vmlinuz-{release}",
            draw(st.sampled_from([f"/boot/initrd.img-{release}"] * 5 + [None])), draw(mostly),
            draw(st.sampled_from(["y", "y", "y", "n", None])), draw(mostly), draw(st.booleans()),
        ))  # fmt: skip
        if draw(mostly):
            # Boot counting: mostly off, sometimes in progress, sometimes run out (a bad entry).
            tries = draw(st.sampled_from([None, None, None, 2, 0]))
            entries.append(BootEntry(f"id-{release}", f"Linux {release}", release, tries_left=tries))
        works[release] = draw(st.booleans())  # whether compute really comes up on it
    loader = BootloaderFacts("grub", "/boot/grub/grub.cfg", tuple(entries), "0")
    return kernels, loader, works


histories = st.builds(
    History,
    st.dictionaries(st.sampled_from([f"6.{m}.0-1-generic" for m in range(15)]),
                    st.builds(KernelRecord, st.integers(0, 3), st.integers(0, 3), st.sampled_from(["ok", "failed", ""])),
                    max_size=4),
    st.just(()),
)  # fmt: skip


def facts_for(
    kernels: list[InstalledKernel], loader: BootloaderFacts, running: str, history: History, boot: str
) -> Facts:
    kernel = KernelFacts(running, next(k.version for k in kernels if k.release == running), {}, None, (), boot)
    return Facts(
        root="/", simulated=True, os=OsFacts("ubuntu", (), "24.04", "Ubuntu"), kernel=kernel, amdgpu=MODULE, amdkfd=NOKFD,
        gpus=(NAVI31,), render_nodes={}, kfd=KfdFacts(DeviceNode("/dev/kfd", None), False, (), None, None, None),
        modprobe=ModprobeFacts((), (), (), (), {}, ()), accounts=Accounts((), ()),
        kernels=tuple(kernels), bootloader=loader, history=history,
    )  # fmt: skip


@pytest.mark.fuzz
@settings(max_examples=examples(400))
@given(worlds(), histories, st.sampled_from(["off", "notify", "oneshot", "pin"]), st.data())
def test_recommendation_is_installed_bootable_and_not_a_known_failure(world: World, history: History, policy: str,
                                                                       data: st.DataObject) -> None:  # fmt: skip
    kernels, loader, _ = world
    running = data.draw(st.sampled_from([k.release for k in kernels]))
    facts = facts_for(kernels, loader, running, history, "boot0")
    rec = recommend(facts, {"kernel-too-old"}, policy)
    if rec.kernel is not None:
        chosen = next(k for k in kernels if k.release == rec.kernel)
        assert rec.kernel != running
        assert chosen.initrd is not None and chosen.modules and loader.entry_for(rec.kernel) is not None
        assert chosen.hsa_amd != "n" and chosen.amdgpu
        found = loader.entry_for(rec.kernel)
        assert found is not None and rec.entry == found.id
        assert not found.bad  # boot counting said it does not boot fully: never a fallback target
    mode, _ = auto_action(rec, history, "boot0")
    if policy in ("off", "notify"):
        assert mode is None  # the boot loader is never touched without oneshot or pin


@pytest.mark.fuzz
@settings(max_examples=examples(300))
@given(worlds(), st.data())
def test_no_loop_over_many_boots(world: World, data: st.DataObject) -> None:
    """Boot again and again under policy oneshot: the model of the machine boots the one-shot
    entry once, else the default; a kernel that failed after a fallback is never targeted again."""
    kernels, loader, works = world
    default = data.draw(st.sampled_from([k.release for k in kernels]))
    history = History()
    next_entry: str | None = None
    attempts_per_boot: dict[str, int] = {}
    for boot in range(12):
        boot_id = f"boot{boot}"
        running = next_entry or default
        next_entry = None
        facts = facts_for(kernels, loader, running, history, boot_id)
        ready = works[running] and running in {k.release for k in kernels}
        history = record_check(history, facts, ready, f"t{boot}")
        codes = set() if ready else {"kernel-too-old"}
        rec = recommend(replace(facts, history=history), codes, "oneshot")
        mode, _ = auto_action(rec, history, boot_id)
        if mode is not None:
            assert rec.kernel is not None and rec.entry is not None
            failed = {
                a.target
                for a in history.attempts
                if a.result == "failed" and a.installed == fingerprint(tuple(kernels))
            }
            assert rec.kernel not in failed
            history = replace(history, attempts=(*history.attempts, Attempt(
                running, rec.kernel, rec.entry, mode, boot_id, f"t{boot}", fingerprint(tuple(kernels)))))  # fmt: skip
            attempts_per_boot[boot_id] = attempts_per_boot.get(boot_id, 0) + 1
            # the same boot asks again (a re-check): no second attempt
            assert auto_action(rec, history, boot_id)[0] is None
            next_entry = rec.kernel
    assert all(n == 1 for n in attempts_per_boot.values())
    failures = [a.target for a in history.attempts if a.result == "failed"]
    assert len(failures) == len(set(failures))  # a failed target is never retried
