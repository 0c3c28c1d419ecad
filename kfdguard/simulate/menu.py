"""The boot menus of a simulated machine, from its spec: grub.cfg as Debian's and Ubuntu's grub-mkconfig
write it, the same menu as GRUB holds it, and the systemd-boot entries kernel-install writes.

render.py writes these files when it builds the machine; the simulated kernel's reboot
(kernel.SimKernel.boot_target) reads the menu here through the simulator's own boot model
(bootloader.py). Both take it from the spec, so neither parses the other's files.
"""

from __future__ import annotations

import re

from kfdguard.simulate.bootloader import MenuEntry

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.simulate.spec import MachineSpec

DISK_UUID = "6a1c6f0e-3e0b-4c53-9c1e-5b0f4e0d2a11"


def _release_key(release: str) -> tuple[int, ...]:
    # grub-mkconfig's version_sort and systemd-boot's version order agree on these releases: every number
    # counts (6.8.0-51 after 6.8.0-50), so the menu does not depend on which kernel is running.
    return tuple(int(n) for n in re.findall(r"\d+", release))


def distro_name(spec: MachineSpec) -> str:
    return "Ubuntu" if spec.os.id == "ubuntu" else "Debian GNU/Linux"


def grub_cfg(spec: MachineSpec) -> str:
    """grub.cfg the way Debian's and Ubuntu's grub-mkconfig (10_linux) lay it out."""
    name = distro_name(spec)
    kernels = sorted((spec.kernel, *spec.other_kernels), key=lambda k: _release_key(k.release), reverse=True)
    default = '"${saved_entry}"' if spec.grub_default == "saved" else '"0"'
    cls = (
        "--class ubuntu --class gnu-linux --class gnu --class os"
        if spec.os.id == "ubuntu"
        else "--class debian --class gnu-linux --class gnu --class os"
    )
    out = [
        "### BEGIN /etc/grub.d/00_header ###",
        "if [ -s $prefix/grubenv ]; then",
        "  load_env",
        "fi",
        'if [ "${next_entry}" ] ; then',
        '   set default="${next_entry}"',
        "   set next_entry=",
        "   save_env next_entry",
        "   set boot_once=true",
        "else",
        f"   set default={default}",
        "fi",
        "function load_video {",
        "  insmod all_video",
        "}",
        "### END /etc/grub.d/00_header ###",
        "### BEGIN /etc/grub.d/10_linux ###",
    ]

    def entry(title: str, ident: str, release: str, indent: str, recovery: bool = False) -> list[str]:
        opts = "ro recovery nomodeset dis_ucode_ldr" if recovery else "ro quiet splash"
        return [
            f"{indent}menuentry '{title}' {cls} $menuentry_id_option '{ident}' {{",
            f"{indent}\tload_video",
            f"{indent}\tinsmod ext2",
            f"{indent}\tsearch --no-floppy --fs-uuid --set=root {DISK_UUID}",
            f"{indent}\techo\t'Loading Linux {release} ...'",
            f"{indent}\tlinux\t/boot/vmlinuz-{release} root=UUID={DISK_UUID} {opts}",
            f"{indent}\techo\t'Loading initial ramdisk ...'",
            f"{indent}\tinitrd\t/boot/initrd.img-{release}",
            f"{indent}}}",
        ]

    newest = kernels[0].release
    out += entry(name, f"gnulinux-simple-{DISK_UUID}", newest, "")
    out.append(f"submenu 'Advanced options for {name}' $menuentry_id_option 'gnulinux-advanced-{DISK_UUID}' {{")
    for k in kernels:
        out += entry(f"{name}, with Linux {k.release}", f"gnulinux-{k.release}-advanced-{DISK_UUID}", k.release, "\t")
        out += entry(f"{name}, with Linux {k.release} (recovery mode)", f"gnulinux-{k.release}-recovery-{DISK_UUID}",
                     k.release, "\t", recovery=True)  # fmt: skip
    out += ["}", "### END /etc/grub.d/10_linux ###"]
    return "\n".join(out) + "\n"


def grub_menu(spec: MachineSpec) -> tuple[MenuEntry, ...]:
    """The menu grub_cfg() writes, as GRUB holds it (titles, ids, submenu), for the simulator's boot model."""
    name = distro_name(spec)
    kernels = sorted((spec.kernel, *spec.other_kernels), key=lambda k: _release_key(k.release), reverse=True)
    advanced = tuple(
        MenuEntry(f"{name}, with Linux {k.release}{suffix}", f"gnulinux-{k.release}-{kind}-{DISK_UUID}", k.release)
        for k in kernels
        for kind, suffix in (("advanced", ""), ("recovery", " (recovery mode)"))
    )
    return (
        MenuEntry(name, f"gnulinux-simple-{DISK_UUID}", kernels[0].release),
        MenuEntry(f"Advanced options for {name}", f"gnulinux-advanced-{DISK_UUID}", None, advanced),
    )


def sdboot_entries(spec: MachineSpec) -> tuple[dict[str, str], list[str]]:
    """The Type #1 entries _bootloader() writes, by the name of their file without counters (which
    boot counting renames): stem -> kernel, and the stems in systemd-boot's menu order (no sort-key,
    one machine: by version, newest first)."""
    kernels = sorted((spec.kernel, *spec.other_kernels), key=lambda k: _release_key(k.release), reverse=True)
    stems = [f"{spec.os.id}-{k.release}" for k in kernels]
    return dict(zip(stems, (k.release for k in kernels), strict=True)), stems
