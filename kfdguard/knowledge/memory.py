"""How much memory a compute program may use on an APU: the module options and what each kernel does with them.

Rows read from the sources, each naming where (issue 38). The Debian source packages
linux-source-6.1 6.1.192-3 and linux-source-6.12 6.12.118-1~deb12u1 (bookworm-security) were read
whole for ttm and amdgpu; for 7.2 only the messages of Debian's linux-source-7.2 7.2.13-1 were read
(kfdguard/knowledge/data/kernel-7.2.json.gz, amdgpu_ttm.c's lines); the DKMS driver is ROCm/amdgpu
(drivers/gpu/drm/amd/dkms and drivers/gpu/drm/ttm, commits named per row).

What the sources say, in short:

- TTM counts the pages its buffer objects hold and swaps some out beyond ``pages_limit``
  (ttm_tt.c ttm_tt_populate). Unset (0) it is half the RAM the kernel manages:
  ttm_device.c ttm_global_init() ``num_pages = (totalram * mem_unit) >> PAGE_SHIFT; num_pages /= 2``
  then ttm_tt_mgr_init() ``if (!ttm_pages_limit) ttm_pages_limit = num_pages`` and
  ttm_pool.c ttm_pool_mgr_init() ``if (!page_pool_size) page_pool_size = num_pages``.
- From 6.5 on (6.12 read) amdgpu sizes GTT from that limit (``gtt_size = ttm_tt_pages_limit() <<
  PAGE_SHIFT`` unless gttsize is set) and KFD refuses GTT allocations beyond it
  (``kfd_mem_limit.max_ttm_mem_limit = ttm_tt_pages_limit() << PAGE_SHIFT``): one option rules both.
- 6.1: GTT is gttsize MiB or max(3 GiB, RAM/2); KFD's limit is fixed at 3/8 of the memory free when
  amdgpu loads (``(mem >> 1) - (mem >> 3)``) and no option moves it.
- All three cap GTT at the RAM on an APU ("Capping GTT to %uM to not exceed available system memory").
- 7.2 prints "Configuring gttsize via module parameter is deprecated, please use ttm.pages_limit" for
  any gttsize, and "GTT size has been set as %llu but TTM size has been set as %llu, this is unusual"
  when the two differ; GTT then follows gttsize while KFD still follows TTM: the "15.5 GB of 128"
  and "62 GB instead of 120" reports.
- The DKMS driver builds TTM as its own module ``amdttm`` (``make TTM_NAME=amdttm``): with it loaded,
  ``ttm.pages_limit`` is read by nobody that matters and ``amdttm.pages_limit`` is the option.
"""

from __future__ import annotations

from kfdguard.record import dataclass

DEB_61 = "Debian linux-source-6.1 6.1.192-3"
DEB_612 = "Debian linux-source-6.12 6.12.118-1~deb12u1"
DEB_72 = "Debian linux-source-7.2 7.2.13-1 (messages: knowledge/data/kernel-7.2.json.gz)"
ROCM_DKMS = (
    "ROCm/amdgpu drivers/gpu/drm/amd/dkms/Makefile @070a53f7 (make TTM_NAME=amdttm), dkms.conf @6b588fb3 "
    '(BUILT_MODULE_NAME[1]="amdttm"), drivers/gpu/drm/ttm/Makefile @812cbb83 ($(TTM_NAME)-y), ttm_tt.c @03ff998d'
)


@dataclass(frozen=True, slots=True)
class MemoryParam:
    module: str  # the module that declares it: ttm (in-tree), amdttm (DKMS), amdgpu
    name: str
    kind: str  # the module_param type
    unit: str  # pages (of PAGE_SIZE) or MiB
    unset: str  # the value that means "compute the default"
    default: str  # how the default is computed
    meaning: str
    source: str


def _ttm(module: str, source_61: str, source_612: str) -> tuple[MemoryParam, ...]:
    return (
        MemoryParam(module, "pages_limit", "ulong", "pages", "0",
                    "half the RAM: (totalram * mem_unit) >> PAGE_SHIFT, / 2",
                    "pages TTM's buffer objects may hold before TTM swaps some out; from 6.5 also amdgpu's GTT "
                    "size and KFD's limit for GTT memory, both read once when amdgpu initialises",
                    f"{source_61}; {source_612}"),
        MemoryParam(module, "page_pool_size", "ulong", "pages", "0", "the same half of the RAM as pages_limit",
                    "pages TTM keeps in its pool of freed write-combined/uncached pages for reuse; not an "
                    "allocation limit (the kernel's default makes it equal to pages_limit)",
                    f"{source_61.replace('ttm_tt.c:48', 'ttm_pool.c:63')}; "
                    f"{source_612.replace('ttm_tt.c:51', 'ttm_pool.c:64')}"),
    )  # fmt: skip


PARAMS: tuple[MemoryParam, ...] = (
    *_ttm("ttm", f"drivers/gpu/drm/ttm/ttm_tt.c:48, ttm_device.c:87-96 ({DEB_61})",
          f"drivers/gpu/drm/ttm/ttm_tt.c:51, ttm_device.c:88-97 ({DEB_612})"),
    *_ttm("amdttm", f"the same ttm_tt.c built as amdttm ({ROCM_DKMS})", "module_param_named(pages_limit, ...) "
          "in ROCm/amdgpu drivers/gpu/drm/ttm/ttm_tt.c @03ff998d"),
    MemoryParam("amdgpu", "gttsize", "int", "MiB", "-1",
                "6.1: max(3 GiB, RAM/2); 6.12 and later: ttm's pages_limit in bytes",
                "size of amdgpu's GTT (the system memory it maps); deprecated in 7.2 for ttm.pages_limit",
                f"drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c:247 and amdgpu_ttm.c:1851-1868 ({DEB_61}); "
                f"amdgpu_drv.c:293 and amdgpu_ttm.c:1998-2001 ({DEB_612}); amdgpu_ttm.c:2170-2173 ({DEB_72})"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SeriesRule:
    """What one kernel series does with the options: which one sizes GTT and which one bounds KFD."""

    series: tuple[int, int]  # the oldest release this row describes (read at the release named in source)
    gtt_follows_ttm: bool  # unset gttsize: GTT = ttm pages_limit (else max(3 GiB, RAM/2))
    kfd_follows_ttm: bool  # KFD refuses GTT allocations beyond ttm pages_limit (else 3/8 of free RAM)
    gttsize_warns: bool  # a set gttsize prints the deprecation warning (and "this is unusual" when it differs)
    apu_cap: bool  # GTT is capped at the RAM on an APU
    source: str


SERIES: tuple[SeriesRule, ...] = (
    SeriesRule((6, 1), gtt_follows_ttm=False, kfd_follows_ttm=False, gttsize_warns=False, apu_cap=True,
               source=f"amdgpu_ttm.c:1851-1880, amdgpu_amdkfd_gpuvm.c:93-98 ({DEB_61})"),
    # "drm/amdgpu: Set GTT size equal to TTM mem limit" (Mukul Joshi, April 2023, the 6.5 cycle); 6.12 read.
    SeriesRule((6, 12), gtt_follows_ttm=True, kfd_follows_ttm=True, gttsize_warns=False, apu_cap=True,
               source=f"amdgpu_ttm.c:1998-2012, amdgpu_amdkfd_gpuvm.c:131 ({DEB_612})"),
    # The warnings are in 7.2's messages; KFD's limit there was not read (6.12's rule is kept).
    SeriesRule((7, 2), gtt_follows_ttm=True, kfd_follows_ttm=True, gttsize_warns=True, apu_cap=True,
               source=f"amdgpu_ttm.c:2170 and 2173 ({DEB_72}); KFD's limit as in 6.12 (not read for 7.2)"),
)  # fmt: skip

# The DKMS driver (ROCm/amdgpu) brings its own amdgpu_ttm.c and amdgpu_amdkfd_gpuvm.c whatever the
# kernel: both follow amdttm's pages_limit, and gttsize warns (the real log of a Strix Halo with
# amdgpu 6.16.6 on 6.12.57: tests/data/healthy-logs/207-rocm5671-strixhalo-debian13-dkms.txt).
DKMS_RULE = SeriesRule(
    (0, 0), gtt_follows_ttm=True, kfd_follows_ttm=True, gttsize_warns=True, apu_cap=True,
    source=f"{ROCM_DKMS}; amdgpu_amdkfd_gpuvm.c max_ttm_mem_limit = ttm_tt_pages_limit()",
)  # fmt: skip


def rule_for(version: tuple[int, int] | None, dkms: bool) -> SeriesRule | None:
    """The row for a kernel (the newest series read at or below it), the DKMS row, or None before 6.1."""
    if dkms:
        return DKMS_RULE
    if version is None:
        return None
    older = [r for r in SERIES if r.series <= version]
    newer = [r for r in SERIES if r.series > version]
    if not older:
        return None
    below = older[-1]
    if below.series != version and newer:
        above = newer[0]
        # Between two series read that size GTT or KFD's limit differently, the release that changed
        # it (6.5 by the patch's date) was not read: unknown, not guessed.
        if (below.gtt_follows_ttm, below.kfd_follows_ttm) != (above.gtt_follows_ttm, above.kfd_follows_ttm):
            return None
    return below


def param(module: str, name: str) -> MemoryParam | None:
    return next((p for p in PARAMS if p.module == module and p.name == name), None)
