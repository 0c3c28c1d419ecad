"""Write a machine description out as a directory tree with the real layout."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kfdguard.host.root import Root
from kfdguard.simulate import state
from kfdguard.simulate.elfmod import FakeModule, build_elf, encode, suffix
from kfdguard.simulate.kernel import KFD_MAJOR, SimKernel, is_merged, kernel_config, kernel_version
from kfdguard.simulate.menu import DISK_UUID, distro_name, grub_cfg
from kfdguard.simulate.modparams import AMDKFD_OLD, amdgpu_params, ttm_params
from kfdguard.simulate.spec import KernelSpec, MachineSpec, spec_json

BASE_GROUPS = (
    ("root", 0),
    ("daemon", 1),
    ("bin", 2),
    ("sys", 3),
    ("adm", 4),
    ("tty", 5),
    ("disk", 6),
    ("lp", 7),
    ("kmem", 15),
    ("dialout", 20),
    ("cdrom", 24),
    ("sudo", 27),
    ("audio", 29),
    ("video", 44),
    ("plugdev", 46),
    ("users", 100),
    ("nogroup", 65534),
)
# gid of the render group as each distribution's first boot allocates it (udev's sysusers).
RENDER_GID = {"ubuntu": 992, "debian": 105, "fedora": 105}

UDEV_DEFAULT = """\
# Excerpt of systemd's 50-udev-default.rules as Debian and Ubuntu ship it.
ACTION!="add", GOTO="default_end"
SUBSYSTEM=="drm", KERNEL!="renderD*", GROUP="video"
SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="{group}", MODE="{mode}"
{kfd}LABEL="default_end"
"""
UDEV_UACCESS = """\
# Excerpt of systemd's 70-uaccess.rules.
SUBSYSTEM=="drm", KERNEL=="renderD*", TAG+="uaccess"
"""
DEBIAN_ETC_MODULES = """\
# /etc/modules: kernel modules to load at boot time.
#
# This file contains the names of kernel modules that should be loaded
# at boot time, one per line. Lines beginning with "#" are ignored.
# Parameters can be specified after the module name.

"""
# The slice of the module tree kfdguard cares about: amdgpu's dependency
# closure (measured on Debian's 6.1, vm-lane.md §3), reduced to the modules
# that export what amdgpu imports.
DRM_MODULES = (
    ("kernel/drivers/gpu/drm/drm", "drm", ("drm_dev_register", "drm_ioctl"), ()),
    (
        "kernel/drivers/gpu/drm/drm_kms_helper",
        "drm_kms_helper",
        ("drm_helper_probe_single_connector_modes",),
        ("drm_ioctl",),
    ),
    ("kernel/drivers/gpu/drm/ttm/ttm", "ttm", ("ttm_bo_init_reserved",), ("drm_dev_register",)),
    ("kernel/drivers/gpu/drm/scheduler/gpu-sched", "gpu_sched", ("drm_sched_init",), ()),
)
AMDGPU_IMPORTS = (
    "drm_dev_register",
    "drm_ioctl",
    "drm_helper_probe_single_connector_modes",
    "ttm_bo_init_reserved",
    "drm_sched_init",
)
# What the DKMS build's rename_symbol.h turns TTM's exports into (ROCm/amdgpu drivers/gpu/drm/amd/dkms/
# pre-build.sh: "#define "$2" amd"$2 for every EXPORT_SYMBOL of its sources).
DKMS_RENAMED = {"ttm_bo_init_reserved": "amdttm_bo_init_reserved"}


def vermagic(release: str) -> str:
    return f"{release} SMP preempt mod_unload modversions"


def _write(root: Root, path: str, text: str, mode: int = 0o644) -> None:
    target = root.join(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    os.chmod(target, mode)


def _symlink(root: Root, path: str, target: str) -> None:
    link = root.join(path)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _accounts(root: Root, spec: MachineSpec) -> None:
    groups = dict(BASE_GROUPS)
    groups[spec.udev.render_group] = RENDER_GID.get(spec.os.id, 105)
    groups.update(spec.groups)
    members: dict[str, list[str]] = {name: [] for name in groups}
    passwd = [
        "root:x:0:0:root:/root:/bin/bash",
        "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    ]
    for user in spec.users:
        groups.setdefault(user.name, user.uid)
        members.setdefault(user.name, [])
        passwd.append(f"{user.name}:x:{user.uid}:{user.uid}:{user.name}:/home/{user.name}:/bin/bash")
        for group in user.groups:
            if group not in groups:
                raise ValueError(f"{spec.name}: user {user.name} is in unknown group {group!r}")
            members[group].append(user.name)
    lines = [f"{name}:x:{gid}:{','.join(members[name])}" for name, gid in sorted(groups.items(), key=lambda i: i[1])]
    _write(root, "/etc/group", "\n".join(lines) + "\n")
    _write(root, "/etc/passwd", "\n".join(passwd) + "\n")


def _kernel_tree(root: Root, spec: MachineSpec, kernel: KernelSpec) -> None:
    release = kernel.release
    version = kernel_version(release)
    merged = is_merged(kernel)
    config = kernel_config(kernel)
    config_text = "".join(
        f"# {k} is not set\n" if v == "n" else f'{k}="{v}"\n' if k == "CONFIG_LOCALVERSION" else f"{k}={v}\n"
        for k, v in sorted(config.items())
    )
    if kernel.config_file == "boot" or kernel is not spec.kernel:
        _write(root, f"/boot/config-{release}", config_text)
    elif kernel.config_file == "proc":
        import gzip

        gz_path = root.join("/proc/config.gz")
        gz_path.parent.mkdir(parents=True, exist_ok=True)
        gz_path.write_bytes(gzip.compress(config_text.encode(), mtime=0))
    _write(root, f"/boot/vmlinuz-{release}", f"simulated kernel image {release}\n")
    _write(root, f"/boot/System.map-{release}", "")
    if kernel.initrd:
        listing = "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko\n" if kernel.amdgpu_in_initrd else ""
        _write(root, f"/boot/initrd.img-{release}", f"simulated initramfs\n{listing}")
    base = f"/lib/modules/{release}"
    ext = suffix(kernel.compression)
    magic = vermagic(release)
    # CONFIG_DRM_TTM=y: ttm is part of the kernel image, in modules.builtin and not a file of the tree.
    ttm_builtin = config.get("CONFIG_DRM_TTM") == "y"
    modules = _drm_modules(version, magic, ttm_builtin)
    hsa = config.get("CONFIG_HSA_AMD", "n")
    if kernel.amdgpu != "none" and config.get("CONFIG_DRM_AMDGPU") == "m":
        params = amdgpu_params(version, hsa == "y", merged)
        amdgpu = FakeModule(
            "amdgpu",
            magic,
            depends=tuple(d for d in ("drm", "drm_kms_helper", "ttm", "gpu_sched") if d != "ttm" or not ttm_builtin),
            params=tuple((n, t) for n, t, _ in params),
            aliases=("pci:v00001002d*sv*sd*bc03sc*i*",),
            imports=AMDGPU_IMPORTS,
            extra=(("license", "GPL and additional rights"), ("description", "AMD GPU")),
        )
        modules.append(("kernel/drivers/gpu/drm/amd/amdgpu/amdgpu", amdgpu))
        if kernel.amdgpu == "dkms" and spec.dkms and release in spec.dkms.built:
            _add_dkms(modules, amdgpu, spec.dkms.version, version)
        if not merged and hsa == "m":
            kfd = FakeModule(
                "amdkfd",
                magic,
                params=tuple((n, t) for n, t, _ in AMDKFD_OLD),
                extra=(("description", "Standalone HSA driver for AMD's GPUs"),),
            )
            modules.append(("kernel/drivers/gpu/drm/amd/amdkfd/amdkfd", kfd))
    if any(g.driver == "nvidia" for g in spec.gpus) and kernel is spec.kernel:
        modules.append(("updates/dkms/nvidia", FakeModule("nvidia", magic, imports=("drm_dev_register",))))
    for path, module in modules:
        target = root.join(f"{base}/{path}{ext}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(encode(build_elf(module), kernel.compression))
    _write(root, f"{base}/modules.dep", modules_dep(modules, ext))
    builtin = "kernel/drivers/video/fbdev/core/fb.ko\nkernel/drivers/gpu/drm/drm_panel_orientation_quirks.ko\n"
    # CONFIG_DRM_TTM=y: built in, so modprobe.d never reaches its options.
    builtin += "kernel/drivers/gpu/drm/ttm/ttm.ko\n" * ttm_builtin
    _write(root, f"{base}/modules.builtin", builtin)
    _write(root, f"{base}/modules.order", "".join(f"{p}.ko\n" for p, _ in modules if not p.startswith("updates/")))


def _drm_modules(version: tuple[int, int], magic: str, ttm_builtin: bool) -> list[tuple[str, FakeModule]]:
    """amdgpu's DRM dependencies; ttm declares its parameters where the simulator models them (modparams.py)."""
    modules = []
    for path, name, exports, imports in DRM_MODULES:
        if name == "ttm" and ttm_builtin:
            continue
        declared = ttm_params(version, name) if name == "ttm" else None
        params = tuple((n, t) for n, t, _ in declared or ())
        modules.append((path, FakeModule(name, magic, params=params, exports=exports, imports=imports)))
    return modules


def _add_dkms(
    modules: list[tuple[str, FakeModule]], amdgpu: FakeModule, package: str, version: tuple[int, int]
) -> None:
    """The DKMS driver's modules beside the kernel's: its amdgpu and its own TTM, amdttm.

    The package builds its TTM as amdttm (dkms.conf BUILT_MODULE_NAME[1]) and its pre-build.sh prefixes every
    symbol its modules export with "amd" (rename_symbol.h): the DKMS amdgpu imports amdttm_bo_init_reserved, so
    depmod makes it depend on amdttm, not ttm (real oops traces: "amdttm_bo_init_reserved+0x1d6/0x210 [amdttm]"
    under "amdgpu_bo_create [amdgpu]").
    """
    amdttm = FakeModule(
        "amdttm",
        amdgpu.vermagic,
        params=tuple((n, t) for n, t, _ in ttm_params(version, "amdttm") or ()),
        exports=tuple(DKMS_RENAMED.values()),
        imports=("drm_dev_register",),
    )
    # In ttm's place among amdgpu's dependencies, before gpu_sched: real depmod's order for this tree.
    sched = next(i for i, (_, m) in enumerate(modules) if m.name == "gpu_sched")
    modules.insert(sched, ("updates/dkms/amdttm", amdttm))
    dkms = FakeModule(
        "amdgpu",
        amdgpu.vermagic,
        depends=tuple("amdttm" if d == "ttm" else d for d in amdgpu.depends),
        params=amdgpu.params,
        aliases=amdgpu.aliases,
        imports=tuple(DKMS_RENAMED.get(sym, sym) for sym in AMDGPU_IMPORTS),
        extra=(("version", package.split("-", maxsplit=1)[0]),),
    )
    modules.append(("updates/dkms/amdgpu", dkms))


def modules_dep(modules: list[tuple[str, FakeModule]], ext: str) -> str:
    """modules.dep as depmod writes it for these modules.

    depmod keeps one file per module name (updates/ beats kernel/, its default
    "search updates built-in"), lists every transitive dependency, and writes
    them in reverse load order: the module loaded first comes last.
    """
    chosen: dict[str, tuple[str, FakeModule]] = {}
    for path, module in sorted(modules, key=lambda item: not item[0].startswith("updates/")):
        chosen.setdefault(module.name, (path, module))
    position = {m.name: i for i, (_, m) in enumerate(modules)}
    exporter = {sym: m.name for _, m in chosen.values() for sym in m.exports}
    direct = {
        name: sorted({exporter[s] for s in m.imports if s in exporter} - {name}, key=position.__getitem__)
        for name, (_, m) in chosen.items()
    }

    def load_order(name: str, seen: list[str]) -> list[str]:
        for dep in direct[name]:
            if dep not in seen:
                load_order(dep, seen)
                seen.append(dep)
        return seen

    lines = []
    for name, (path, _) in sorted(chosen.items(), key=lambda item: position[item[0]]):
        deps = [chosen[d][0] + ext for d in reversed(load_order(name, []))]
        lines.append(f"{path}{ext}: {' '.join(deps)}".rstrip())
    return "\n".join(lines) + "\n"


def _dkms(root: Root, spec: MachineSpec) -> None:
    if spec.dkms is None:
        return
    d = spec.dkms
    base = f"/var/lib/dkms/{d.module}/{d.version}"
    _write(root, f"{base}/source/dkms.conf", f'PACKAGE_NAME="{d.module}"\nPACKAGE_VERSION="{d.version}"\n')
    for release in d.built:
        ext = suffix(next((k.compression for k in (spec.kernel, *spec.other_kernels) if k.release == release), "none"))
        _write(root, f"{base}/{release}/x86_64/module/{d.module}{ext}", "")
        _symlink(root, f"/var/lib/dkms/{d.module}/kernel-{release}-x86_64", f"{d.version}/{release}/x86_64")
    for release in d.failed:
        _write(
            root,
            f"{base}/build/make.log",
            f"DKMS make.log for {d.module}-{d.version} for kernel {release} (x86_64)\n"
            "error: implicit declaration of function 'drm_dp_mst_topology_get_port_validated'\n"
            "make: *** [Makefile:2047: /var/lib/dkms/amdgpu/build] Error 2\n",
        )


def _pci(root: Root, spec: MachineSpec) -> None:
    for gpu in spec.gpus:
        dev = f"/sys/devices/pci{gpu.slot[:4]}:00/{gpu.slot}"
        _write(root, f"{dev}/vendor", f"0x{gpu.vendor:04x}\n")
        _write(root, f"{dev}/device", f"0x{gpu.device:04x}\n")
        _write(root, f"{dev}/subsystem_vendor", f"0x{gpu.subsystem[0]:04x}\n")
        _write(root, f"{dev}/subsystem_device", f"0x{gpu.subsystem[1]:04x}\n")
        _write(root, f"{dev}/revision", f"0x{gpu.revision:02x}\n")
        _write(root, f"{dev}/class", f"0x{gpu.pci_class:06x}\n")
        _write(root, f"{dev}/boot_vga", "1\n" if gpu.boot_vga else "0\n")
        _write(
            root,
            f"{dev}/modalias",
            f"pci:v{gpu.vendor:08X}d{gpu.device:08X}sv{gpu.subsystem[0]:08X}sd{gpu.subsystem[1]:08X}bc03sc00i00\n",
        )
        _symlink(root, f"/sys/bus/pci/devices/{gpu.slot}", f"../../../devices/pci{gpu.slot[:4]}:00/{gpu.slot}")


def _distro_files(root: Root, spec: MachineSpec) -> None:
    os_ = spec.os
    lines = [f'PRETTY_NAME="{os_.pretty_name}"', f"ID={os_.id}", f'VERSION_ID="{os_.version_id}"']
    if os_.id_like:
        lines.append(f"ID_LIKE={' '.join(os_.id_like)}")
    _write(root, "/etc/os-release", "\n".join(lines) + "\n")
    _write(root, "/etc/hostname", f"{spec.name}\n")
    if os_.id in ("debian", "ubuntu") or "debian" in os_.id_like:
        _write(root, "/etc/modules", DEBIAN_ETC_MODULES)
        _symlink(root, "/etc/modules-load.d/modules.conf", "../modules")
        _write(
            root,
            "/usr/lib/modprobe.d/aliases.conf",
            "# These are the standard aliases for devices.\nalias char-major-10-175 agpgart\n",
        )
    if os_.id == "ubuntu":
        _write(
            root,
            "/etc/modprobe.d/blacklist.conf",
            "# Ubuntu's default blacklist (excerpt)\nblacklist evbug\nblacklist usbmouse\nblacklist usbkbd\n",
        )
        _write(
            root,
            f"/lib/modprobe.d/blacklist_linux_{spec.kernel.release}.conf",
            "# Kernel supplied blacklist (excerpt)\nblacklist snd-pcsp\n",
        )
    kfd_line = f'SUBSYSTEM=="kfd", GROUP="{spec.udev.render_group}", MODE="{spec.udev.render_mode:04o}"\n'
    rules = UDEV_DEFAULT.format(
        group=spec.udev.render_group, mode=f"{spec.udev.render_mode:04o}", kfd=kfd_line if spec.udev.kfd_rule else ""
    )
    _write(root, "/usr/lib/udev/rules.d/50-udev-default.rules", rules)
    _write(root, "/usr/lib/udev/rules.d/70-uaccess.rules", UDEV_UACCESS)
    for path, content in spec.files.items():
        _write(root, path, content)


def render(spec: MachineSpec, dest: Path) -> Root:
    """Render ``spec`` into the empty or absent directory ``dest``."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    root = Root(dest)
    sim = Path(state.sim_dir(root))
    sim.mkdir()
    (sim / "spec.json").write_text(spec_json(spec), encoding="utf-8")
    (sim / "kmsg").write_text("", encoding="utf-8")
    state.write_state(root, {"clock_us": "0", "kmsg_seq": "0"})
    state.write_devices(root, {})
    # The RAM the kernel manages (totalram), as meminfo prints it; a spec's own file replaces it.
    _write(root, "/proc/meminfo", f"MemTotal:       {spec.ram_mib * 1024} kB\n")
    _distro_files(root, spec)
    _accounts(root, spec)
    release = spec.kernel.release
    cmdline = (
        spec.cmdline
        or f"BOOT_IMAGE=/boot/vmlinuz-{release} root=UUID=6a1c6f0e-3e0b-4c53-9c1e-5b0f4e0d2a11 ro quiet splash"
    )
    _write(root, "/proc/sys/kernel/osrelease", release + "\n")
    _write(root, "/proc/sys/kernel/random/boot_id", "9b1f3c6e-4a2d-4c8e-b0a7-5d3e2f1c0b9a\n")
    _write(root, "/proc/cmdline", cmdline + "\n")
    _write(root, "/proc/modules", "")
    _write(root, "/proc/devices", f"Character devices:\n  1 mem\n  4 tty\n{KFD_MAJOR} kfd\n226 drm\n")
    for kernel in (spec.kernel, *spec.other_kernels):
        _kernel_tree(root, spec, kernel)
    _dkms(root, spec)
    _bootloader(root, spec)
    _history(root, spec)
    _pci(root, spec)
    for rel in ("sys/class/drm", "sys/module", "dev/dri", "run", "var/lib"):
        (dest / rel).mkdir(parents=True, exist_ok=True)
    _boot(root, spec, cmdline)
    return root


def _boot(root: Root, spec: MachineSpec, cmdline: str) -> None:
    kernel = SimKernel(root, spec)
    kernel.boot(cmdline, first=True)


def clear(dest: Path) -> None:
    shutil.rmtree(dest)


# --- boot loader and kfdguard's history -----------------------------------------------

GRUBENV_SIZE = 1024


def grubenv(values: dict[str, str]) -> str:
    """GRUB's environment block: a 1024-byte file padded with '#' (what grub-editenv writes)."""
    head = "# GRUB Environment Block\n# WARNING: Do not edit this file by tools other than grub-editenv!!!\n"
    body = head + "".join(f"{k}={v}\n" for k, v in values.items())
    return body + "#" * (GRUBENV_SIZE - len(body.encode()))


def _bootloader(root: Root, spec: MachineSpec) -> None:
    kernels = (spec.kernel, *spec.other_kernels)
    if spec.bootloader == "grub":
        _write(root, "/boot/grub/grub.cfg", grub_cfg(spec), 0o444)
        _write(root, "/boot/grub/grubenv", grubenv({}))
        _write(
            root,
            "/etc/default/grub",
            f'GRUB_DEFAULT={spec.grub_default}\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\n',
        )
    elif spec.bootloader == "systemd-boot":
        entries = "/efi/loader/entries"
        counter = f"+{spec.boot_tries}" if spec.boot_tries > 0 else ""  # kernel-install's /etc/kernel/tries
        for k in kernels:
            _write(root, f"{entries}/{spec.os.id}-{k.release}{counter}.conf", (
                f"title {distro_name(spec)}\nversion {k.release}\nlinux /vmlinuz-{k.release}\n"
                f"initrd /initrd.img-{k.release}\noptions root=UUID={DISK_UUID} ro quiet\n"))  # fmt: skip
        _write(root, "/efi/loader/loader.conf", "timeout 3\n")
        (root.sys / "firmware/efi/efivars").mkdir(parents=True, exist_ok=True)
        if spec.sdboot_version is not None:
            from kfdguard.simulate.bootloader import efi_value
            from kfdguard.simulate.kernel import LOADER_GUID

            info = root.sys / f"firmware/efi/efivars/LoaderInfo-{LOADER_GUID}"
            info.write_bytes(efi_value(f"systemd-boot {spec.sdboot_version}"))


def _history(root: Root, spec: MachineSpec) -> None:
    if not spec.history:
        return
    records: dict[str, dict[str, object]] = {}
    for release, result in spec.history:
        rec = records.setdefault(
            release, {"ok": 0, "failed": 0, "last": "", "last_seen": "2026-11-20T08:00:00Z", "gpus": []}
        )
        rec["ok" if result == "ok" else "failed"] = int(str(rec["ok" if result == "ok" else "failed"])) + 1
        rec["last"] = result
    path = root.join("/var/lib/kfdguard/history.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "kernels": records, "attempts": []}, indent=1) + "\n")
