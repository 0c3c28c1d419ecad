"""Installed kernels, the boot loader's entries and state, and kfdguard's own history."""

from __future__ import annotations

import re
from functools import cmp_to_key

from kfdguard.facts import (
    HEALTH_BOOTS,
    Attempt,
    BootEntry,
    BootHealth,
    BootloaderFacts,
    HealthFiles,
    History,
    InstalledKernel,
    KernelRecord,
)
from kfdguard.host.root import BOOT_DIR
from kfdguard.modinfo import module_name
from kfdguard.parsers.kconfig import kconfig_symbol
from kfdguard.parsers.osrelease import parse_os_release
from kfdguard.probe.reader import Reader
from kfdguard.probe.system_info import module_lines, parse_release
from kfdguard.record import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import DkmsModule
    from kfdguard.host.paths import HostPath
    from kfdguard.probe.bootspec import SortFields

# kfdguard.probe.bootspec (systemd-boot's entry names and order) is imported where a systemd-boot
# entry or a fallback's history is read: a GRUB machine's boot pass has neither.

_MENU = re.compile(r"^\s*(?P<kind>menuentry|submenu)\s+(?P<quote>['\"])(?P<title>.*?)(?P=quote)(?P<rest>.*)\{\s*$")
_ID = re.compile(r"(?:\$menuentry_id_option|--id)\s+['\"]?(?P<id>[^'\"\s]+)")
_LINUX = re.compile(r"^\s*linux(?:efi|16)?\s+\S*?vmlinuz-(?P<release>\S+)")
_SET_DEFAULT = re.compile(r'^\s*set default="?(?P<value>[^"]*)"?\s*$')
# systemd-boot's one-shot entry: an EFI variable of the Boot Loader Interface vendor.
LOADER_GUID = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
HISTORY_LIMIT = 1 << 20
ENTRY_LIMIT = 1 << 20  # a loader entry or loader.conf is a few lines
EFIVAR_LIMIT = 4096


def probe_kernels(reader: Reader, dkms: tuple[DkmsModule, ...]) -> tuple[InstalledKernel, ...]:
    root = reader.root
    kernels = []
    dkms_built = {rel for d in dkms if d.module == "amdgpu" for rel in d.built_for}
    for name in reader.listdir(root.boot):
        if not name.startswith("vmlinuz-"):
            continue
        release = name[len("vmlinuz-") :]
        initrd = next(
            (f for f in (f"initrd.img-{release}", f"initramfs-{release}.img") if reader.is_file(root.boot / f)), None
        )
        config = reader.text(root.boot / f"config-{release}")
        hsa = kconfig_symbol(config, "CONFIG_HSA_AMD") if config is not None else None
        moddir = root.lib_modules / release
        amdgpu = dkms_amdgpu = False
        for line in module_lines(reader.text(moddir / "modules.dep", limit=64 << 20) or "", ("amdgpu",)):
            path = line.partition(":")[0]
            if module_name(path.rsplit("/", 1)[-1]) == "amdgpu":
                amdgpu = True
                dkms_amdgpu = dkms_amdgpu or path.startswith(("updates/", "extra/"))
        kernels.append(
            InstalledKernel(
                release=release,
                version=parse_release(release),
                image=root.display(root.boot / name),
                initrd=root.display(root.boot / initrd) if initrd else None,
                modules=reader.is_dir(moddir),
                hsa_amd=hsa,
                amdgpu=amdgpu,
                dkms_amdgpu=dkms_amdgpu or release in dkms_built,
            )
        )
    return tuple(sorted(kernels, key=lambda k: (k.version or (0, 0, 0), k.release)))


def parse_grub_cfg(text: str) -> tuple[list[BootEntry], str | None]:
    """Menu entries with the ids grub-reboot takes, and grub.cfg's default."""
    entries: list[BootEntry] = []
    stack: list[tuple[str, str]] = []  # (kind, id) of the open blocks
    current: dict[str, str] = {}
    default: str | None = None
    depth = 0
    for line in text.split("\n"):
        m = _MENU.match(line)
        if m:
            ident = _ID.search(m["rest"])
            block_id = ident["id"] if ident else m["title"]
            stack.append((m["kind"], block_id))
            depth += 1
            if m["kind"] == "menuentry":
                parents = [i for kind, i in stack[:-1] if kind == "submenu"]
                current = {"id": ">".join([*parents, block_id]), "title": m["title"]}
            continue
        if depth == 0:
            d = _SET_DEFAULT.match(line)
            # 00_header first sets default to a pending next_entry; the plain default is the other one.
            if d and "next_entry" not in d["value"]:
                default = d["value"]
            continue
        lm = _LINUX.match(line)
        if lm and current:
            current["release"] = lm["release"]
        if line.strip() == "}":
            kind, _ = stack.pop()
            depth -= 1
            if kind == "menuentry" and current:
                title = current["title"]
                entries.append(BootEntry(current["id"], title, current.get("release"), "recovery" in title.lower()))
                current = {}
        elif line.strip().endswith("{") and not line.strip().startswith(("menuentry", "submenu")):
            stack.append(("block", ""))
            depth += 1
    return entries, default


def parse_grubenv(text: str) -> dict[str, str]:
    """GRUB's environment block (grub-core/lib/envblk.c): "name=value" lines; grub-editenv writes a
    backslash as "\\\\" and a newline as a backslash before the line end, so a value may span lines."""
    values = {}
    for line in _env_lines(text):
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        # (compiled, and cached by re, for the first value with a backslash: most have none)
        values[key] = re.sub(r"\\(.)", r"\1", value, flags=re.S) if "\\" in value else value
    return values


def _env_lines(text: str) -> list[str]:
    """Lines of the block; a newline after an escaping backslash belongs to the value."""
    # From one newline or backslash to the next with str.find: the block is 1024 bytes of mostly
    # "#" padding, and a Python step per character was ~2 M instructions of the boot pass.
    lines, start, i = [], 0, 0
    while (newline := text.find("\n", i)) >= 0:
        backslash = text.find("\\", i, newline)
        if backslash >= 0:
            i = backslash + 2  # the escaped character (a newline too) is part of the line
            continue
        lines.append(text[start:newline])
        start = i = newline + 1
    lines.append(text[start:])
    return lines


def _entry_fields(text: str) -> dict[str, str]:
    """A Type #1 entry's fields as bootctl reads them: first word the key, the rest the value;
    a key given twice keeps its last value (free_and_strdup), blank values are ignored."""
    fields: dict[str, str] = {}
    for line in text.split("\n"):
        line = line.strip()  # noqa: PLW2901 - the stripped line is the one parsed
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) == 2:
            fields[parts[0]] = parts[1].strip()
    return fields


def _release_of(version: str | None, linux: str) -> str | None:
    if version:
        return version
    if "vmlinuz-" in linux:
        return linux.rsplit("vmlinuz-", 1)[1] or None
    return None


def _type1_entries(reader: Reader, directory: HostPath) -> list[tuple[BootEntry, SortFields]]:
    from kfdguard.probe import bootspec

    entries = []
    for name in reader.listdir(directory):
        # bootctl: every *.conf (any case) that is not hidden; the id drops the counters.
        if name.startswith(".") or not name.lower().endswith(".conf") or not reader.is_file(directory / name):
            continue
        try:
            counted = bootspec.split_tries(name)
        except bootspec.BadEntryName as exc:
            reader.complain(directory / name, f"not a boot loader entry: {exc}")
            continue
        text = reader.text(directory / name, limit=ENTRY_LIMIT)
        if text is None:
            continue
        fields = _entry_fields(text)
        version = fields.get("version") or None
        entry = BootEntry(
            counted.id,
            fields.get("title", counted.id),
            _release_of(version, fields.get("linux", "")),
            False,
            kind="type1",
            path=reader.root.display(directory / name),
            tries_left=counted.tries_left,
            tries_done=counted.tries_done,
            version=version,
        )
        sort = bootspec.SortFields(
            counted.id, counted.tries_left, fields.get("sort-key"), fields.get("machine-id"), version
        )
        entries.append((entry, sort))
    return entries


class _Unreadable(Exception):
    """The Reader could not read the file (and has said why)."""


UKI_SECTIONS = (".osrel", ".uname", ".cmdline")


def _uki(reader: Reader, path: HostPath) -> dict[str, str]:
    """The UKI sections of a PE file; raises PeError (a bad file) or _Unreadable."""
    first = reader.read_at(path, 0, 0)
    if first is None:
        raise _Unreadable
    size = first[1]

    def read(offset: int, count: int) -> bytes:
        got = reader.read_at(path, offset, count)
        if got is None:
            raise _Unreadable
        return got[0]

    from kfdguard.probe import pe  # only where a UKI is found: not on every boot path

    return pe.sections(read, size, UKI_SECTIONS)


def _type2_entries(reader: Reader, directory: HostPath) -> list[tuple[BootEntry, SortFields]]:
    """Unified kernel images: the id is the file name (counters dropped), the title, version and
    sort key come from the .osrel section as bootctl picks them, the kernel from .uname."""
    from kfdguard.probe import bootspec

    entries = []
    for name in reader.listdir(directory):
        path = directory / name
        if name.startswith(".") or not name.lower().endswith(".efi") or not reader.is_file(path):
            continue
        from kfdguard.probe import pe

        try:
            counted = bootspec.split_tries(name)
            texts = _uki(reader, path)
        except bootspec.BadEntryName as exc:
            reader.complain(path, f"not a boot loader entry: {exc}")
            continue
        except pe.PeError as exc:
            reader.complain(path, f"not a usable unified kernel image: {exc}")
            continue
        except _Unreadable:
            continue
        if ".osrel" not in texts:
            reader.complain(path, "not a unified kernel image: it has no .osrel section")
            continue
        osrel = parse_os_release(texts[".osrel"])
        # bootspec_pick_name_version_sort_key (src/fundamental/bootspec-fundamental.c).
        title = osrel.get("PRETTY_NAME") or osrel.get("IMAGE_ID") or osrel.get("NAME") or osrel.get("ID")
        if not title:
            reader.complain(path, "unified kernel image refused by systemd: its .osrel names no OS")
            continue
        version = osrel.get("IMAGE_VERSION") or osrel.get("VERSION") or osrel.get("VERSION_ID") or osrel.get("BUILD_ID")
        sort_key = osrel.get("IMAGE_ID") or osrel.get("ID") or None
        entry = BootEntry(
            counted.id,
            title,
            texts.get(".uname", "").strip() or None,
            False,
            kind="type2",
            path=reader.root.display(path),
            tries_left=counted.tries_left,
            tries_done=counted.tries_done,
            version=version or None,
        )
        entries.append((entry, bootspec.SortFields(counted.id, counted.tries_left, sort_key, None, version or None)))
    return entries


# The GPT partition type of an Extended Boot Loader partition (UAPI Discoverable Partitions).
XBOOTLDR_TYPE = "bc13c2ff-59e6-4262-a352-b275fd6f7172"


def _boot_partition_type(reader: Reader) -> str | None:
    """What /boot's partition type says: "xbootldr", "other" (not a mount of its own, or another
    partition type), or None when it cannot be told (no mountinfo, no udev data: a simulated
    machine, a container). Read from /proc/self/mountinfo and udev's database, not the block
    device, which the service's DevicePolicy=closed would refuse."""
    root = reader.root
    mountinfo = reader.text(root.proc / "self/mountinfo")
    if not mountinfo:
        return None
    device = None
    for line in mountinfo.splitlines():
        fields = line.split()
        # "36 35 98:0 / /boot rw - ext4 /dev/sda2 rw": mount point 5th, major:minor 3rd; the last mount wins.
        if len(fields) >= 5 and fields[4].replace("\\040", " ") == BOOT_DIR:
            device = fields[2]
    if device is None:
        return "other"
    udev = reader.text(root.run / f"udev/data/b{device}", limit=1 << 16)
    if udev is None:
        return None
    kind = next(
        (
            line[len("E:ID_PART_ENTRY_TYPE=") :]
            for line in udev.splitlines()
            if line.startswith("E:ID_PART_ENTRY_TYPE=")
        ),
        None,
    )
    if kind is None:
        return None
    return "xbootldr" if kind.strip().lower() == XBOOTLDR_TYPE else "other"


def _partition_dirs(reader: Reader) -> tuple[HostPath | None, HostPath | None]:
    """(ESP, XBOOTLDR) as bootctl finds them: the ESP at /efi, /boot or /boot/efi, and /boot
    as $BOOT apart from it when it is an XBOOTLDR partition (by its partition type when that
    can be read, else when it holds entries of its own). Only directories that hold boot
    loader spec content count: an ESP with GRUB alone is not systemd-boot's."""
    root = reader.root

    def has_entries(d: HostPath) -> bool:
        return (
            reader.is_dir(d / "loader/entries")
            or reader.is_file(d / "loader/loader.conf")
            or any(n.lower().endswith(".efi") for n in reader.listdir(d / "EFI/Linux"))
        )

    esp = next((d for d in (root.efi, root.boot, root.boot / "efi") if has_entries(d)), None)
    apart = esp is not None and esp != root.boot and reader.realpath(esp) != reader.realpath(root.boot)
    if not apart or not has_entries(root.boot):
        return esp, None
    # systemd-boot reads $BOOT only from an XBOOTLDR partition: entries left in a plain /boot boot nothing.
    return esp, (None if _boot_partition_type(reader) == "other" else root.boot)


def _menu_order(a: tuple[BootEntry, SortFields], b: tuple[BootEntry, SortFields]) -> int:
    from kfdguard.probe.bootspec import compare

    return compare(a[1], b[1])


def probe_bootloader(reader: Reader) -> BootloaderFacts:
    root = reader.root
    esp, xbootldr = _partition_dirs(reader)
    if esp is not None:
        found: list[tuple[BootEntry, SortFields]] = []
        seen: set[str] = set()
        for part in (esp, xbootldr):
            if part is None:
                continue
            for sub, kind in (("loader/entries", _type1_entries), ("EFI/Linux", _type2_entries)):
                directory = part / sub
                real = reader.realpath(directory)
                if real in seen:
                    continue
                seen.add(real)
                found.extend(kind(reader, directory))
        if found:
            found.sort(key=cmp_to_key(_menu_order))
            conf = _entry_fields(reader.text(esp / "loader/loader.conf", limit=ENTRY_LIMIT) or "")
            return BootloaderFacts(
                "systemd-boot",
                root.display(esp / "loader/entries"),
                tuple(e for e, _ in found),
                conf.get("default"),
                None,
                _efivar(reader, f"LoaderEntryOneShot-{LOADER_GUID}"),
                None,
                efi_default=_efivar(reader, f"LoaderEntryDefault-{LOADER_GUID}"),
                timeout=conf.get("timeout"),
                xbootldr=root.display(xbootldr) if xbootldr is not None else None,
                last_booted=_efivar(reader, f"LoaderEntryLastBooted-{LOADER_GUID}"),
                loader_info=_efivar(reader, f"LoaderInfo-{LOADER_GUID}"),
            )
    for grub in (root.boot / "grub", root.boot / "grub2"):
        cfg = reader.text(grub / "grub.cfg")
        if cfg is None:
            continue
        entries, default = parse_grub_cfg(cfg)
        env_text = reader.text(grub / "grubenv")
        env = parse_grubenv(env_text) if env_text is not None else {}
        return BootloaderFacts(
            "grub",
            root.display(grub / "grub.cfg"),
            tuple(entries),
            default,
            env.get("saved_entry") or None,
            env.get("next_entry") or None,
            root.display(grub / "grubenv") if env_text is not None else None,
        )
    return BootloaderFacts("none")


def _efivar(reader: Reader, name: str) -> str | None:
    data = reader.data(reader.root.sys / "firmware/efi/efivars" / name, limit=EFIVAR_LIMIT)
    if data is None or len(data) < 4:
        return None
    # 4 bytes of attributes, then a NUL-terminated UTF-16LE string.
    return data[4:].decode("utf-16-le", errors="replace").rstrip("\0") or None


def probe_history(reader: Reader) -> History:
    import json

    path = reader.root.var_lib / "kfdguard/history.json"
    raw = reader.data(path, limit=HISTORY_LIMIT)
    if raw is None:
        return History()
    try:
        return history_from_json(json.loads(raw))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return History(problem=f"{reader.root.display(path)}: unusable ({exc}); starting a new history")


def history_from_json(data: object) -> History:
    """Raises ValueError (or TypeError/KeyError) on anything but a version 1 history."""
    if not isinstance(data, dict) or data.get("version") != 1:
        raise ValueError("not a version 1 history")
    kernels = {
        str(rel): KernelRecord(
            ok=int(rec.get("ok", 0)),
            failed=int(rec.get("failed", 0)),
            last=str(rec.get("last", "")),
            last_seen=str(rec.get("last_seen", "")),
            gpus=tuple(str(g) for g in rec.get("gpus", [])),
            boot_id=str(rec.get("boot_id", "")),  # absent in files from before it was kept
            boots=_boots(rec.get("boots", []), str(rel)),  # absent in files from before live health
        )
        for rel, rec in dict(data.get("kernels", {})).items()
    }
    attempts = tuple(
        Attempt(
            source=str(a["from"]),
            target=str(a["to"]),
            # Histories written before ids dropped boot counters ("foo+3-1.conf") name the stable id.
            entry=_stable_id(str(a.get("entry", ""))),
            mode=str(a.get("mode", "oneshot")),
            boot_id=str(a.get("boot_id", "")),
            at=str(a.get("at", "")),
            installed=str(a.get("installed", "")),
            result=str(a.get("result", "pending")),
        )
        for a in list(data.get("attempts", []))
    )
    pinned = data.get("pinned_from")
    return History(kernels, attempts, _stable_id(str(pinned)) if pinned else None)


def _stable_id(entry_id: str) -> str:
    """The id without boot counters: histories written before ids dropped them name "foo+3-1.conf"."""
    from kfdguard.probe.bootspec import strip_tries  # only a history with attempts or a pin has ids

    return strip_tries(entry_id)


def _boots(value: object, release: str) -> tuple[BootHealth, ...]:
    from kfdguard.health.store import from_json

    if not isinstance(value, list):
        raise TypeError(f"kernels.{release}.boots is not a list")
    # The newest HEALTH_BOOTS are kept: a longer list was not written by kfdguard, but its tail is still sound.
    return tuple(replace(from_json(b, f"kernels.{release}.boots"), release=release) for b in value[-HEALTH_BOOTS:])


def probe_health(reader: Reader) -> HealthFiles:
    """The resident service's per-boot health records (kfdguard/health/store.py), newest boots first."""
    from kfdguard.health import store

    directory = reader.root.var_lib / store.DIRECTORY
    if not reader.is_dir(directory):
        return HealthFiles()
    boots: list[tuple[str, BootHealth]] = []
    problems: list[str] = []
    # The resident service (not root) fills this directory: list no more of it than is read. The
    # writer leaves KEEP records; more than READ_LIMIT entries is not its doing, and which ones are
    # looked at is then the directory's order (a name is not a reason to trust a file more).
    listed = reader.listdir(directory, limit=store.READ_LIMIT)
    names = [n for n in listed[: store.READ_LIMIT] if store.file_boot_id(n) is not None]
    for name in names:
        path = directory / name
        shown = reader.root.display(path)
        before = len(reader.problems)
        data = reader.data(path, limit=store.FILE_LIMIT, nofollow=True)
        if data is None:
            if len(reader.problems) > before:
                problems.append(f"{shown}: {reader.problems[-1].reason}")
            continue
        try:
            boot = store.parse_file(data, shown)
        except store.HealthFileError as exc:
            problems.append(str(exc))
            continue
        if boot.boot_id != store.file_boot_id(name):
            problems.append(f"{shown}: names boot {boot.boot_id}, not the boot of its file name")
            continue
        boots.append((boot.last_at, boot))
    if len(listed) > store.READ_LIMIT:
        problems.append(
            f"{reader.root.display(directory)}: more than {store.READ_LIMIT} entries; only {store.READ_LIMIT} looked at"
        )
    return HealthFiles(tuple(b for _at, b in sorted(boots, key=lambda x: x[0], reverse=True)), tuple(problems))
