"""The recommendation's ranking: what the history and the boot loader's counters say, and why."""

from __future__ import annotations

from kfdguard.facts import BootEntry, BootloaderFacts, History, InstalledKernel, KernelRecord
from kfdguard.fallback.policy import recommend
from kfdguard.record import replace
from tests.robustness.test_fallback_property import facts_for


def kernel(minor: int) -> InstalledKernel:
    release = f"6.{minor}.0-1-generic"
    return InstalledKernel(release, (6, minor, 0), f"/boot/vmlinuz-{release}", f"/boot/initrd.img-{release}", True,
                           "y", True, False)  # fmt: skip


KERNELS = [kernel(m) for m in (1, 5, 8, 11)]
RUNNING = "6.11.0-1-generic"


def loader(bad: tuple[str, ...] = ()) -> BootloaderFacts:
    entries = tuple(
        BootEntry(f"debian-{k.release}.conf", k.release, k.release, kind="type1",
                  tries_left=0 if k.release in bad else None, tries_done=3 if k.release in bad else None)
        for k in KERNELS
    )  # fmt: skip
    return BootloaderFacts("systemd-boot", "/efi/loader/entries", entries)


def rec_for(history: dict[str, KernelRecord], bad: tuple[str, ...] = ()) -> tuple[str | None, str]:
    facts = facts_for(KERNELS, loader(bad), RUNNING, History(history), "boot9")
    rec = recommend(facts, {"kfd-not-built"}, "notify")
    return rec.kernel, rec.reason


def test_without_history_the_newest_other_kernel_and_says_so() -> None:
    assert rec_for({}) == (
        "6.8.0-1-generic",
        "the newest kernel that can run compute on this GPU (kfdguard has not seen it boot yet)",
    )


def test_the_kernel_that_ran_compute_most_reliably_wins() -> None:
    history = {
        "6.8.0-1-generic": KernelRecord(ok=1, failed=3, last="ok"),
        "6.5.0-1-generic": KernelRecord(ok=6, failed=0, last="ok"),
        "6.1.0-1-generic": KernelRecord(ok=9, failed=1, last="failed"),
    }
    kernel, reason = rec_for(history)
    assert kernel == "6.5.0-1-generic"
    assert reason == "it ran compute on 6 of its 6 boots kfdguard saw, the last one included (last known good)"


def test_a_kernel_whose_last_boot_failed_comes_after_one_never_seen() -> None:
    kernel, reason = rec_for({"6.8.0-1-generic": KernelRecord(ok=2, failed=1, last="failed")})
    assert kernel == "6.5.0-1-generic" and "has not seen it boot yet" in reason


def test_an_entry_out_of_boot_tries_is_never_recommended_and_the_reason_says_so() -> None:
    history = {"6.8.0-1-generic": KernelRecord(ok=5, failed=0, last="ok")}
    kernel, reason = rec_for(history, bad=("6.8.0-1-generic",))
    assert kernel == "6.5.0-1-generic"
    assert reason.endswith("; passed over 6.8.0-1-generic: boot counting marked its entry bad")
    facts = facts_for(KERNELS, loader(("6.8.0-1-generic",)), RUNNING, History(history), "boot9")
    choice = next(c for c in recommend(facts, {"kfd-not-built"}, "notify").choices if c.release == "6.8.0-1-generic")
    assert choice.out_of_tries and any("ran out of boot tries" in r for r in choice.reasons)
    # Nothing left: the reason still names the kernel that was passed over.
    everything = tuple(k.release for k in KERNELS if k.release != RUNNING)
    kernel, reason = rec_for(history, bad=everything)
    assert kernel is None and reason.startswith("no other installed, bootable kernel") and "passed over" in reason


def test_a_good_entry_of_the_same_kernel_is_preferred_to_one_out_of_tries() -> None:
    good = BootEntry("debian-6.8.efi", "UKI", "6.8.0-1-generic", kind="type2")
    bad = BootEntry("debian-6.8.0-1-generic.conf", "conf", "6.8.0-1-generic", kind="type1", tries_left=0, tries_done=3)
    both = BootloaderFacts("systemd-boot", "/efi/loader/entries", (bad, good))
    assert both.entry_for("6.8.0-1-generic") == good
    facts = replace(facts_for(KERNELS, both, RUNNING, History(), "b"), bootloader=both)
    assert recommend(facts, {"kfd-not-built"}, "notify").entry == "debian-6.8.efi"
