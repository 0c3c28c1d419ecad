"""The description of a simulated machine, and its YAML form.

A description says what is *installed and plugged in* (kernel, modules,
GPUs, users, configuration files) and what the kernel did with it at boot
("outcome" per GPU, taken from real kernels' messages). The renderer and the
simulated kernel derive sysfs, /dev, /proc and the kernel log from it.
"""

from __future__ import annotations

import json
import re

from kfdguard.record import asdict, dataclass, field, replace

# What the running kernel's amdgpu/KFD does with a GPU (kfd-facts.md §6).
OUTCOMES = (
    "added",  # KFD adds the GPU: topology node, "added device"
    "atomics",  # KFD skips it: "PCI rejects atomics"
    "not-supported",  # KFD does not know the IP: "... not supported in kfd"
    "asic-not-in-kfd",  # amdgpu does not hand the ASIC to KFD at all (4.15, Polaris): "kfd not supported on this ASIC"
    "missing-did",  # old static table lacks the id: "DID ... is missing in supported_devices"
    "iommu",  # APU needing IOMMUv2 with the IOMMU off
    "firmware",  # amdgpu cannot load firmware: no DRM nodes, no KFD
    "init-failed",  # amdgpu fails to initialise the device ("Fatal error during GPU init")
    "unbound",  # amdgpu does not claim the device at all
)
AMDGPU_SOURCES = ("in-tree", "dkms", "none")
COMPRESSIONS = ("none", "xz", "zst")


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class OsSpec:
    id: str = "debian"
    version_id: str = "12"
    pretty_name: str = "Debian GNU/Linux 12 (bookworm)"
    id_like: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelSpec:
    release: str
    config: dict[str, str | None] = field(default_factory=dict)  # overrides; None unsets
    config_file: str = "boot"  # boot | proc | none
    compression: str = "none"
    amdgpu: str = "in-tree"  # where the running kernel's amdgpu comes from
    kfd_interface: tuple[int, int] = (1, 11)
    initrd: bool = True
    amdgpu_in_initrd: bool = False


@dataclass(frozen=True)
class GpuSpec:
    slot: str
    device: int
    vendor: int = 0x1002
    revision: int = 0
    subsystem: tuple[int, int] = (0x1002, 0x0000)
    pci_class: int = 0x030000
    outcome: str = "added"  # under the running kernel
    driver: str | None = None  # non-AMD GPUs: the driver bound to them (e.g. "nvidia")
    boot_vga: bool = False
    outcomes: tuple[tuple[str, str], ...] = ()  # (release, outcome) under the other installed kernels
    # The link it trained to (MT/s, lanes), when below what it can do: a x16 card in a x4
    # chipset slot. None: the card's own maximum (simulate/hardware.py).
    link: tuple[int, int] | None = None

    def outcome_on(self, release: str, running: str) -> str:
        if release == running:
            return self.outcome
        return dict(self.outcomes).get(release, self.outcome)


@dataclass(frozen=True)
class UserSpec:
    name: str
    uid: int
    groups: tuple[str, ...] = ()
    session: bool = False  # has the active seat session (logind gives it render-node ACLs)


@dataclass(frozen=True)
class UdevSpec:
    kfd_rule: bool = True  # the distribution's 50-udev-default.rules has the kfd line
    render_group: str = "render"
    render_mode: int = 0o660


@dataclass(frozen=True)
class DkmsSpec:
    module: str
    version: str
    built: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class MachineSpec:
    name: str
    description: str
    os: OsSpec
    kernel: KernelSpec
    other_kernels: tuple[KernelSpec, ...] = ()
    gpus: tuple[GpuSpec, ...] = ()
    amdgpu_loaded: bool | None = None  # None: loaded at boot when a GPU needs it
    udev: UdevSpec = UdevSpec()
    users: tuple[UserSpec, ...] = ()
    groups: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    cmdline: str = ""
    log: tuple[str, ...] = ()
    dkms: DkmsSpec | None = None
    cpu_cores: int = 16
    ram_mib: int = 32768  # system memory, for amdgpu's default GTT size
    journal: bool = True  # False: no journald (containers, minimal systems)
    previous_log: tuple[str, ...] = ()  # kernel messages of the boot before, as journal lines
    bootloader: str = "grub"  # grub, systemd-boot, none
    grub_default: str = "0"  # GRUB_DEFAULT: "0" (first entry) or "saved"
    boot_fs: str = "ext4 /dev/nvme0n1p2"  # what findmnt -no FSTYPE,SOURCE -T /boot says
    history: tuple[tuple[str, str], ...] = ()  # (release, "ok"/"failed") kfdguard recorded on earlier boots
    # systemd-boot: the version its LoaderInfo claims (None: no LoaderInfo variable; the boot model
    # then behaves as Debian 12's 252), and boot counting's tries on each entry (0: off).
    sdboot_version: int | None = None
    boot_tries: int = 0

    def with_changes(self, **changes: object) -> MachineSpec:
        return replace(self, **changes)  # type: ignore[arg-type]


# --- YAML form -------------------------------------------------------------


def _expect(value: object, kind: type | tuple[type, ...], where: str) -> object:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SpecError(f"{where}: expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def _keys(data: object, allowed: set[str], where: str) -> dict[str, object]:
    mapping = _expect(data, dict, where)
    assert isinstance(mapping, dict)
    unknown = sorted(set(map(str, mapping)) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    return {str(k): v for k, v in mapping.items()}


def _any_keys(data: object, where: str) -> dict[str, object]:
    if data is None:
        return {}
    mapping = _expect(data, dict, where)
    assert isinstance(mapping, dict)
    return {str(k): v for k, v in mapping.items()}


def _str(value: object, where: str) -> str:
    return str(_expect(value, (str, int, float), where))


def _int(value: object, where: str) -> int:
    result = _expect(value, int, where)
    assert isinstance(result, int)
    return result


def _choice(value: object, choices: tuple[str, ...], where: str) -> str:
    text = _str(value, where)
    if text not in choices:
        raise SpecError(f"{where}: {text!r} is not one of {', '.join(choices)}")
    return text


def _pair(value: object, where: str) -> tuple[int, int]:
    text = _str(value, where)
    left, _, right = text.partition(":" if ":" in text else ".")
    try:
        return int(left, 16 if ":" in text else 10), int(right, 16 if ":" in text else 10)
    except ValueError:
        raise SpecError(f"{where}: {text!r} is not 'vvvv:dddd' or 'major.minor'") from None


def _kernel(data: object, where: str) -> KernelSpec:
    d = _keys(
        data,
        {"release", "config", "config_file", "compression", "amdgpu", "kfd_interface", "initrd", "amdgpu_in_initrd"},
        where,
    )
    if "release" not in d:
        raise SpecError(f"{where}: release is required")
    config: dict[str, str | None] = {}
    for key, value in _any_keys(d.get("config"), f"{where}.config").items():
        config[key] = None if value is None else _str(value, f"{where}.config.{key}")
    return KernelSpec(
        release=_str(d["release"], f"{where}.release"),
        config=config,
        config_file=_choice(d.get("config_file", "boot"), ("boot", "proc", "none"), f"{where}.config_file"),
        compression=_choice(d.get("compression", "none"), COMPRESSIONS, f"{where}.compression"),
        amdgpu=_choice(d.get("amdgpu", "in-tree"), AMDGPU_SOURCES, f"{where}.amdgpu"),
        kfd_interface=_pair(d.get("kfd_interface", "1.11"), f"{where}.kfd_interface"),
        initrd=bool(d.get("initrd", True)),
        amdgpu_in_initrd=bool(d.get("amdgpu_in_initrd", False)),
    )


def _gpu(data: object, where: str) -> GpuSpec:
    d = _keys(
        data,
        {
            "slot",
            "device",
            "vendor",
            "revision",
            "subsystem",
            "class",
            "outcome",
            "driver",
            "boot_vga",
            "outcomes",
            "link",
        },
        where,
    )
    for key in ("slot", "device"):
        if key not in d:
            raise SpecError(f"{where}: {key} is required")
    return GpuSpec(
        slot=_str(d["slot"], f"{where}.slot"),
        device=_int(d["device"], f"{where}.device"),
        vendor=_int(d.get("vendor", 0x1002), f"{where}.vendor"),
        revision=_int(d.get("revision", 0), f"{where}.revision"),
        subsystem=_pair(d.get("subsystem", "1002:0000"), f"{where}.subsystem"),
        pci_class=_int(d.get("class", 0x030000), f"{where}.class"),
        outcome=_choice(d.get("outcome", "added"), OUTCOMES, f"{where}.outcome"),
        driver=None if d.get("driver") is None else _str(d["driver"], f"{where}.driver"),
        boot_vga=bool(d.get("boot_vga", False)),
        outcomes=tuple(
            (str(rel), _choice(out, OUTCOMES, f"{where}.outcomes.{rel}"))
            for rel, out in _any_keys(d.get("outcomes"), f"{where}.outcomes").items()
        ),
        link=None if d.get("link") is None else _link(d["link"], f"{where}.link"),
    )


# A pattern, compiled on first use (re caches it): the boot pass on a rendered machine directory reads no specification.
_LINK = r"(\d{1,2})(?:\.(\d))? GT/s x(\d{1,2})"


def _link(value: object, where: str) -> tuple[int, int]:
    """ "8.0 GT/s x4" -> (8000, 4)."""
    text = _str(value, where)
    match = re.fullmatch(_LINK, text)
    if match is None:
        raise SpecError(f"{where}: {text!r} is not 'S GT/s xW' (e.g. '8.0 GT/s x4')")
    speed, width = int(match[1]) * 1000 + int(match[2] or 0) * 100, int(match[3])
    if speed not in (2500, 5000, 8000, 16000, 32000, 64000) or width not in (1, 2, 4, 8, 16, 32):
        raise SpecError(f"{where}: {text!r} is not a PCIe link")
    return speed, width


def _user(data: object, where: str) -> UserSpec:
    d = _keys(data, {"name", "uid", "groups", "session"}, where)
    groups = _expect(d.get("groups", []), list, f"{where}.groups")
    assert isinstance(groups, list)
    return UserSpec(
        name=_str(d.get("name"), f"{where}.name"),
        uid=_int(d.get("uid"), f"{where}.uid"),
        groups=tuple(_str(g, f"{where}.groups") for g in groups),
        session=bool(d.get("session", False)),
    )


def _os(data: object, name: str) -> OsSpec:
    os_d = _keys(data, {"id", "version_id", "pretty_name", "id_like"}, f"{name}.os")
    return OsSpec(
        id=_str(os_d.get("id", "debian"), f"{name}.os.id"),
        version_id=_str(os_d.get("version_id", "12"), f"{name}.os.version_id"),
        pretty_name=_str(os_d.get("pretty_name", ""), f"{name}.os.pretty_name"),
        id_like=tuple(_str(os_d.get("id_like", ""), f"{name}.os.id_like").split()),
    )


def _udev(data: object, name: str) -> UdevSpec:
    udev_d = _keys(data, {"kfd_rule", "render_group", "render_mode"}, f"{name}.udev")
    return UdevSpec(
        kfd_rule=bool(udev_d.get("kfd_rule", True)),
        render_group=_str(udev_d.get("render_group", "render"), f"{name}.udev.render_group"),
        render_mode=int(_str(udev_d.get("render_mode", "0660"), f"{name}.udev.render_mode"), 8),
    )


def _dkms(data: object, name: str) -> DkmsSpec | None:
    if data is None:
        return None
    k = _keys(data, {"module", "version", "built", "failed"}, f"{name}.dkms")
    return DkmsSpec(
        module=_str(k.get("module", "amdgpu"), f"{name}.dkms.module"),
        version=_str(k.get("version"), f"{name}.dkms.version"),
        built=tuple(_str(r, f"{name}.dkms.built") for r in _list(k.get("built"), f"{name}.dkms.built")),
        failed=tuple(_str(r, f"{name}.dkms.failed") for r in _list(k.get("failed"), f"{name}.dkms.failed")),
    )


def spec_json(spec: MachineSpec) -> str:
    return json.dumps(asdict(spec), indent=1, sort_keys=True)


def spec_from_dict(name: str, data: object) -> MachineSpec:
    d = _keys(
        data,
        {
            "description",
            "os",
            "kernel",
            "other_kernels",
            "gpus",
            "amdgpu_loaded",
            "udev",
            "users",
            "groups",
            "files",
            "cmdline",
            "log",
            "dkms",
            "cpu_cores",
            "ram_mib",
            "journal",
            "previous_log",
            "bootloader",
            "grub_default",
            "boot_fs",
            "history",
        },
        name,
    )
    if "kernel" not in d:
        raise SpecError(f"{name}: kernel is required")
    os_spec, udev, dkms = _os(d.get("os", {}), name), _udev(d.get("udev", {}), name), _dkms(d.get("dkms"), name)
    files = _any_keys(d.get("files"), f"{name}.files")
    for path in files:
        if not path.startswith("/"):
            raise SpecError(f"{name}.files: {path!r} is not an absolute path")
    groups = _any_keys(d.get("groups"), f"{name}.groups")
    loaded = d.get("amdgpu_loaded")
    return MachineSpec(
        name=name,
        description=" ".join(_str(d.get("description", ""), f"{name}.description").split()),
        os=os_spec,
        kernel=_kernel(d["kernel"], f"{name}.kernel"),
        other_kernels=tuple(
            _kernel(k, f"{name}.other_kernels[{i}]") for i, k in enumerate(_list(d.get("other_kernels"), name))
        ),
        gpus=tuple(_gpu(g, f"{name}.gpus[{i}]") for i, g in enumerate(_list(d.get("gpus"), f"{name}.gpus"))),
        amdgpu_loaded=None if loaded is None else bool(loaded),
        udev=udev,
        users=tuple(_user(u, f"{name}.users[{i}]") for i, u in enumerate(_list(d.get("users"), f"{name}.users"))),
        groups={k: _int(v, f"{name}.groups.{k}") for k, v in groups.items()},
        files={k: _str(v, f"{name}.files.{k}") for k, v in files.items()},
        cmdline=_str(d.get("cmdline", ""), f"{name}.cmdline"),
        log=tuple(_str(line, f"{name}.log") for line in _list(d.get("log"), f"{name}.log")),
        dkms=dkms,
        cpu_cores=_int(d.get("cpu_cores", 16), f"{name}.cpu_cores"),
        ram_mib=_int(d.get("ram_mib", 32768), f"{name}.ram_mib"),
        journal=bool(d.get("journal", True)),
        bootloader=_choice(d.get("bootloader", "grub"), ("grub", "systemd-boot", "none"), f"{name}.bootloader"),
        grub_default=_choice(d.get("grub_default", "0"), ("0", "saved"), f"{name}.grub_default"),
        boot_fs=_str(d.get("boot_fs", "ext4 /dev/nvme0n1p2"), f"{name}.boot_fs"),
        history=tuple(_history(h, f"{name}.history") for h in _list(d.get("history"), f"{name}.history")),
        previous_log=tuple(_str(x, f"{name}.previous_log") for x in _list(d.get("previous_log"), name)),
        sdboot_version=None if d.get("sdboot_version") is None else _int(d["sdboot_version"], f"{name}.sdboot_version"),
        boot_tries=_int(d.get("boot_tries", 0), f"{name}.boot_tries"),
    )


def _history(value: object, where: str) -> tuple[str, str]:
    d = _keys(value, {"release", "result"}, where)
    return _str(d.get("release"), f"{where}.release"), _choice(d.get("result"), ("ok", "failed"), f"{where}.result")


def _list(value: object, where: str) -> list[object]:
    if value is None:
        return []
    result = _expect(value, list, where)
    assert isinstance(result, list)
    return result
