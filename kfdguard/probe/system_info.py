"""Operating system, kernel and kernel modules."""

from __future__ import annotations

import os

from kfdguard.facts import DkmsModule, KernelFacts, MemoryFacts, ModuleFacts, OsFacts
from kfdguard.modinfo import ModinfoError, declared_parameters, decompress, modinfo_entries, module_name
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.parsers.lines import lines_with
from kfdguard.parsers.modprobe import kernel_args
from kfdguard.parsers.osrelease import parse_os_release
from kfdguard.probe.reader import Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath
    from kfdguard.host.system import System

# depmod's default search order on Debian/Ubuntu/Fedora: out-of-tree builds
# (DKMS installs into updates/, some vendors into extra/) win over the kernel's own.
_SEARCH_ORDER = ("updates/", "extra/", "kernel/")
MODINFO_TIMEOUT = 5.0


def probe_os(reader: Reader) -> OsFacts:
    root = reader.root
    text = reader.text(root.etc / "os-release")
    if text is None:
        text = reader.text(root.usr_lib / "os-release") or ""
    values = parse_os_release(text)
    return OsFacts(
        id=values.get("ID", "").lower(),
        id_like=tuple(values.get("ID_LIKE", "").lower().split()),
        version_id=values.get("VERSION_ID", ""),
        pretty_name=values.get("PRETTY_NAME", "") or values.get("NAME", ""),
    )


def parse_release(release: str) -> tuple[int, int, int] | None:
    """ "6.8.0-45-generic" -> (6, 8, 0); "6.1.0-57-amd64" -> (6, 1, 0)."""
    head = release.split("-", 1)[0].split("+", 1)[0]
    parts = head.split(".")
    numbers: list[int] = []
    for part in parts[:3]:
        digits = ""
        for char in part:
            if char not in "0123456789":
                break
            digits += char
        if not digits or len(digits) > 9:  # int() refuses > 4,300 digits; no version part is that long
            break
        numbers.append(int(digits))
        if len(digits) != len(part):
            break
    if len(numbers) < 2:
        return None
    while len(numbers) < 3:
        numbers.append(0)
    return numbers[0], numbers[1], numbers[2]


# What uname -r can be (UTS_RELEASE is at most 64 bytes), and never "." or "..". A set of
# characters, not a pattern: compiling one was a four-hundredth of the boot pass (callgrind).
_RELEASE_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._+~-")


def _plain_release(release: str) -> bool:
    return 0 < len(release) <= 64 and release not in (".", "..") and set(release) <= _RELEASE_CHARS


def probe_kernel(reader: Reader) -> KernelFacts:
    root = reader.root
    release = reader.value(root.proc / "sys/kernel/osrelease") or ""
    if release and not _plain_release(release):
        # It becomes a path component (/lib/modules/<release>, /boot/config-<release>).
        reader.complain(root.proc / "sys/kernel/osrelease", f"not a kernel release: {release[:64]!r}")
        release = ""
    elif not release:
        reader.complain(root.proc / "sys/kernel/osrelease", "missing: kernel release unknown")
    cmdline = tuple(kernel_args(reader.value(root.proc / "cmdline") or ""))
    config: dict[str, str] = {}
    source: str | None = None
    candidates = [root.boot / f"config-{release}"] if release else []
    candidates.append(root.proc / "config.gz")
    if release:
        candidates.append(root.lib_modules / release / "config")
    for path in candidates:
        data = reader.data(path)
        if data is None:
            continue
        if path.name.endswith(".gz"):
            import gzip

            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                reader.complain(path, f"unreadable: bad gzip data ({exc})")
                continue
        symbols, complaints = parse_kconfig(data.decode("utf-8", errors="replace"))
        for complaint in complaints[:5]:
            reader.complain(path, complaint)
        if symbols:
            config, source = symbols, root.display(path)
            break
    boot_id = (reader.value(root.proc / "sys/kernel/random/boot_id") or "").replace("-", "")
    return KernelFacts(
        release=release,
        version=parse_release(release) if release else None,
        config=config,
        config_source=source,
        cmdline=cmdline,
        boot_id=boot_id,
    )


def module_lines(text: str, names: tuple[str, ...]) -> list[str]:
    """The lines of modules.dep or modules.builtin that can name one of ``names``.

    module_name() of a file is one of them only if the file's name, dashes read as underscores,
    holds NAME.ko: the other lines (a distribution kernel has ~6,000 modules) need no parsing,
    which cost a boot pass ~6,000 instructions a line (callgrind).
    """
    needles = tuple(f"{name}.ko" for name in names)
    return lines_with(text, needles, seen_as=text.replace("-", "_"))  # the same line ends: neither ends one


def _module_index(reader: Reader, release: str, names: tuple[str, ...]) -> tuple[dict[str, list[str]], set[str]]:
    """Module name -> candidate paths (modules.dep), and which are built in: for ``names``."""
    base = reader.root.lib_modules / release
    files: dict[str, list[str]] = {}
    dep = reader.text(base / "modules.dep", limit=64 << 20) or ""
    for line in module_lines(dep, names):
        path = line.partition(":")[0].strip()
        name = module_name(path.rsplit("/", 1)[-1])
        if name in names:
            files.setdefault(name, []).append(path)
    builtin: set[str] = set()
    for line in module_lines(reader.text(base / "modules.builtin", limit=64 << 20) or "", names):
        name = module_name(line.strip().rsplit("/", 1)[-1])
        if name in names:
            builtin.add(name)
    return files, builtin


def _rank(path: str) -> int:
    return next((i for i, prefix in enumerate(_SEARCH_ORDER) if path.startswith(prefix)), len(_SEARCH_ORDER))


def probe_modules(reader: Reader, system: System, release: str, names: tuple[str, ...]) -> dict[str, ModuleFacts]:
    index, builtin = _module_index(reader, release, names) if release else ({}, set())
    return {name: _probe_module(reader, system, release, name, index, builtin) for name in names}


def _probe_module(
    reader: Reader,
    system: System,
    release: str,
    name: str,
    index: dict[str, list[str]],
    builtin: set[str],
) -> ModuleFacts:
    root = reader.root
    sysdir = root.sys / "module" / name
    candidates = sorted(index.get(name, []), key=_rank)
    relative = candidates[0] if candidates else None
    file = root.display(root.lib_modules / release / relative) if relative else None
    is_builtin = name in builtin
    exists = reader.is_dir(sysdir)
    initstate = reader.value(sysdir / "initstate") if exists else None
    # Built-in modules have /sys/module/<name> (when they have parameters) but
    # no initstate; loadable ones are usable once initstate says "live".
    loaded = exists and (initstate == "live" or (initstate is None and is_builtin))
    params: dict[str, str] = {}
    declared: tuple[str, ...] | None = None
    holders: tuple[str, ...] = ()
    refcnt: int | None = None
    version: str | None = None
    if exists:
        pdir = sysdir / "parameters"
        names = reader.listdir(pdir)
        # Parameters the module declares 0600 (amdgpu's vramlimit, gartsize, gttsize, moverate)
        # are root's: the unprivileged service (issue 21) skips them instead of reporting each one
        # unreadable; the KFD options kfdguard reads are 0444.
        params = reader.values(pdir, names, skip_denied=os.geteuid() != 0)
        if loaded and names:
            declared = tuple(names)
        holders = tuple(reader.listdir(sysdir / "holders"))
        text = reader.value(sysdir / "refcnt")
        refcnt = int(text) if text and text.isascii() and text.isdigit() and len(text) <= 9 else None
        version = reader.value(sysdir / "version")
    if declared is None and relative is not None:
        declared = _declared_from_file(reader, system, root.lib_modules / release / relative)
    return ModuleFacts(
        name=name,
        builtin=is_builtin,
        file=file,
        from_dkms=bool(relative and relative.startswith(("updates/", "extra/"))),
        loaded=loaded,
        params=params,
        declared=declared,
        holders=holders,
        refcnt=refcnt,
        version=version,
        sysfs=root.display(sysdir),
    )


def _declared_from_file(reader: Reader, system: System, path: HostPath) -> tuple[str, ...] | None:
    if path.name.endswith(".zst"):
        result = system.run(["modinfo", "-F", "parmtype", str(path)], timeout=MODINFO_TIMEOUT)
        if not result.ok:
            reader.complain(path, f"modinfo failed: {result.describe()}")
            return None
        return tuple(line.partition(":")[0] for line in result.stdout.splitlines() if line.partition(":")[0])
    data = reader.data(path, limit=128 << 20)
    if data is None:
        return None
    try:
        return declared_parameters(modinfo_entries(decompress(data, path.name)))
    except ModinfoError as exc:
        reader.complain(path, f"unreadable module: {exc}")
        return None


def probe_installed_kernels(reader: Reader) -> tuple[str, ...]:
    releases = [n[len("vmlinuz-") :] for n in reader.listdir(reader.root.boot) if n.startswith("vmlinuz-")]
    return tuple(sorted(releases, key=lambda r: (parse_release(r) or (0, 0, 0), r)))


def _dkms_built(reader: Reader, vdir: HostPath, module: str) -> list[str]:
    """The kernels this version has a built module for."""
    built = []
    for entry in reader.listdir(vdir):
        if entry in ("source", "build"):
            continue
        for arch in reader.listdir(vdir / entry):
            if any(n.startswith(module) for n in reader.listdir(vdir / entry / arch / "module")):
                built.append(entry)
    return built


def _dkms_failed(reader: Reader, log_path: HostPath, built: list[str]) -> tuple[list[str], str | None]:
    """The kernel of the last build when it has no module (its make.log stayed behind), and the log's name."""
    head = reader.text(log_path, limit=1 << 20)
    if head is None:
        return [], None
    first = head.splitlines()[0] if head.strip() else ""
    # "DKMS make.log for amdgpu-6.10.5 for kernel 6.8.0-51-generic (x86_64)"
    if " for kernel " in first:
        release = first.split(" for kernel ", 1)[1].split()[0]
        if release not in built:
            return [release], reader.root.display(log_path)
    return [], reader.root.display(log_path)


def probe_dkms(reader: Reader) -> tuple[DkmsModule, ...]:
    """DKMS state from /var/lib/dkms/<module>/<version>/<kernel>/<arch>/module/."""
    base = reader.root.var_lib / "dkms"
    found: list[DkmsModule] = []
    for module in reader.listdir(base):
        if module not in ("amdgpu", "amdkfd"):
            continue
        for version in reader.listdir(base / module):
            vdir = base / module / version
            if version.startswith("kernel-") or not reader.is_dir(vdir) or reader.is_symlink(vdir):
                continue
            built = _dkms_built(reader, vdir, module)
            failed, log_shown = _dkms_failed(reader, vdir / "build" / "make.log", built)
            shown = reader.root.display(vdir)
            found.append(DkmsModule(module, version, shown, tuple(sorted(built)), tuple(failed), log_shown))
    return tuple(found)


TTM_MODULES = ("ttm", "amdttm")  # the in-tree TTM and the DKMS driver's own copy (knowledge/memory.py)
TTM_PARAMS = ["pages_limit", "page_pool_size"]


def probe_memory(reader: Reader, release: str) -> MemoryFacts:
    """The RAM, the page size and TTM's live limits: what an APU's compute memory is made of (issue 38)."""
    root = reader.root
    ram: int | None = None
    for line in (reader.text(root.proc / "meminfo") or "").splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        # "MemTotal:       131592980 kB": the kernel's totalram_pages << (PAGE_SHIFT - 10).
        if name == "MemTotal" and len(fields) == 2 and fields[1] == "kB" and fields[0].isascii():
            ram = int(fields[0]) * 1024 if fields[0].isdigit() and len(fields[0]) <= 15 else None
            break
    limits: dict[str, dict[str, str]] = {}
    for module in TTM_MODULES:
        pdir = root.sys / "module" / module / "parameters"
        if reader.is_dir(pdir):
            limits[module] = reader.values(pdir, TTM_PARAMS)
    builtin = ""
    if release:
        builtin = reader.text(root.lib_modules / release / "modules.builtin", limit=64 << 20) or ""
    in_kernel = any(module_name(line.strip().rsplit("/", 1)[-1]) == "ttm" for line in module_lines(builtin, ("ttm",)))
    # Every x86-64 kernel (all AMD APUs) uses 4 KiB pages; the host's own size where it is the host.
    page_size = os.sysconf("SC_PAGE_SIZE") if root.is_host else 4096
    return MemoryFacts(ram_bytes=ram, page_size=page_size, ttm=limits, ttm_builtin=in_kernel)
