"""Installed kernels, the boot loader's entries and state, and kfdguard's own history."""

from __future__ import annotations

import re

from kfdguard.facts import Attempt, BootEntry, BootloaderFacts, History, InstalledKernel, KernelRecord
from kfdguard.modinfo import module_name
from kfdguard.parsers.kconfig import parse_kconfig
from kfdguard.probe.reader import Reader
from kfdguard.probe.system_info import parse_release

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import DkmsModule

_MENU = re.compile(r"^\s*(?P<kind>menuentry|submenu)\s+(?P<quote>['\"])(?P<title>.*?)(?P=quote)(?P<rest>.*)\{\s*$")
_ID = re.compile(r"(?:\$menuentry_id_option|--id)\s+['\"]?(?P<id>[^'\"\s]+)")
_LINUX = re.compile(r"^\s*linux(?:efi|16)?\s+\S*?vmlinuz-(?P<release>\S+)")
_SET_DEFAULT = re.compile(r'^\s*set default="?(?P<value>[^"]*)"?\s*$')
# systemd-boot's one-shot entry: an EFI variable of the Boot Loader Interface vendor.
LOADER_GUID = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
HISTORY_LIMIT = 1 << 20


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
        hsa = parse_kconfig(config)[0].get("CONFIG_HSA_AMD") if config is not None else None
        moddir = root.lib_modules / release
        amdgpu = dkms_amdgpu = False
        for line in (reader.text(moddir / "modules.dep", limit=64 << 20) or "").splitlines():
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
    values = {}
    for line in text.split("\n"):
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key] = value
    return values


def _bls_entries(reader: Reader, directory: object) -> list[BootEntry]:
    from pathlib import Path

    assert isinstance(directory, Path)
    entries = []
    for name in reader.listdir(directory):
        if not name.endswith(".conf"):
            continue
        fields: dict[str, str] = {}
        for line in (reader.text(directory / name) or "").split("\n"):
            key, _, value = line.strip().partition(" ")
            if key and not key.startswith("#"):
                fields.setdefault(key, value.strip())
        release = fields.get("version") or None
        linux = fields.get("linux", "")
        if release is None and "vmlinuz-" in linux:
            release = linux.rsplit("vmlinuz-", 1)[1]
        entries.append(BootEntry(name, fields.get("title", name), release, False))
    return entries


def probe_bootloader(reader: Reader) -> BootloaderFacts:
    root = reader.root
    for esp in (root.efi, root.boot, root.boot / "efi"):
        loader = esp / "loader/entries"
        entries = _bls_entries(reader, loader) if reader.is_dir(loader) else []
        if entries:
            conf = reader.text(esp / "loader/loader.conf") or ""
            default = next((line.split(None, 1)[1] for line in conf.split("\n") if line.startswith("default ")), None)
            oneshot = _efivar(reader, f"LoaderEntryOneShot-{LOADER_GUID}")
            return BootloaderFacts("systemd-boot", root.display(loader), tuple(entries), default, None, oneshot, None)
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
    data = reader.data(reader.root.sys / "firmware/efi/efivars" / name)
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
        )
        for rel, rec in dict(data.get("kernels", {})).items()
    }
    attempts = tuple(
        Attempt(
            source=str(a["from"]),
            target=str(a["to"]),
            entry=str(a.get("entry", "")),
            mode=str(a.get("mode", "oneshot")),
            boot_id=str(a.get("boot_id", "")),
            at=str(a.get("at", "")),
            installed=str(a.get("installed", "")),
            result=str(a.get("result", "pending")),
        )
        for a in list(data.get("attempts", []))
    )
    pinned = data.get("pinned_from")
    return History(kernels, attempts, str(pinned) if pinned else None)
