"""Commands users can paste, per distribution.

The commands themselves are rows of ``kfdguard.knowledge.distros``: what is
shown here is what enforce would run. The functions take a distribution id
string (``Context.distro``, or the paste diagnosis's guess).
"""

from __future__ import annotations

from kfdguard.knowledge import distros
from kfdguard.knowledge.distros import Distribution, Step

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.assess.context import Context


def distribution(distro: str) -> Distribution:
    """A distribution id string (an os-release ID or a Distribution value) as the enum."""
    return distros.detect(distro)


def initramfs_step(distro: str, release: str) -> Step:
    """The initramfs regeneration as a command for enforce to run, or a manual step."""
    return distros.initramfs_step(distribution(distro), release)


def add_to_group(user: str, group: str) -> str:
    return f"sudo usermod -aG {group} {user}, then log out and back in (or reboot) so the new group applies"


def regenerate_initramfs(distro: str, release: str) -> str:
    return initramfs_step(distro, release).text


def newer_kernel(distro: str, version_id: str, needed: tuple[int, int]) -> str:
    want = f"{needed[0]}.{needed[1]}"
    if distro == "ubuntu" and version_id in ("18.04", "20.04", "22.04", "24.04"):
        return (
            f"install a kernel {want} or newer, e.g. Ubuntu's HWE kernel: "
            f"sudo apt install --install-recommends linux-generic-hwe-{version_id}"
        )
    if distro == "debian":
        return (
            f"install a kernel {want} or newer, e.g. from backports: "
            "sudo apt install -t $(. /etc/os-release; echo $VERSION_CODENAME)-backports linux-image-amd64"
        )
    if distribution(distro) in (Distribution.FEDORA, Distribution.RHEL):
        return f"update to a kernel {want} or newer: sudo dnf upgrade --refresh kernel"
    return f"install a kernel {want} or newer from your distribution"


def kernel_with_kfd(distro: str) -> str:
    if distro in ("debian", "ubuntu"):
        return (
            "boot your distribution's kernel (its amdgpu has CONFIG_HSA_AMD=y): "
            "sudo apt install linux-image-amd64 (Debian) or linux-generic (Ubuntu); "
            "for a self-built kernel set CONFIG_HSA_AMD=y (and CONFIG_HSA_AMD_SVM=y) and rebuild"
        )
    return "use a kernel built with CONFIG_HSA_AMD=y (all major distributions' kernels are)"


def load_module(module: str, distro: str, release: str) -> str:
    text = f"sudo modprobe {module} (kfdguard enforce does this at boot)"
    if distribution(distro) is Distribution.UBUNTU:
        step = distros.install_step(Distribution.UBUNTU, f"linux-modules-extra-{release}")
        text += f"; if it is not installed: {step.text}"
    return text


UDEV_FIX = (
    "run 'sudo kfdguard enforce' (fixes it now and installs a udev rule so it survives coldplug), or by hand: "
    'echo \'SUBSYSTEM=="kfd", GROUP="{group}", MODE="{mode}"\' | sudo tee /etc/udev/rules.d/70-kfd.rules '
    "&& sudo udevadm control --reload && sudo udevadm trigger --action=add --subsystem-match=kfd"
)


def fix_kfd_node(group: str, mode: int) -> str:
    return UDEV_FIX.format(group=group, mode=f"{mode:04o}")


def fix_render_node(group: str, mode: int) -> str:
    return (
        "run 'sudo kfdguard enforce', or add "
        f'\'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="{group}", MODE="{mode:04o}"\' '
        "to a rules file in /etc/udev/rules.d and trigger it with "
        "sudo udevadm trigger --action=add --subsystem-match=drm"
    )


def dkms_rebuild(module: str, version: str, release: str, log: str | None) -> str:
    text = f"rebuild it: sudo dkms install {module}/{version} -k {release}"
    if log:
        text += f" (the failed build's log is {log})"
    return text + "; or boot a kernel it is built for"


def install_firmware(distro: str) -> str:
    """The package that holds /lib/firmware/amdgpu and how to install it, from the distribution's row.

    For the firmware-missing cause (assess/explain.py keeps its own table until part B of issue 14
    moves it here).
    """
    row = distros.row(distribution(distro))
    if row is None:
        return "your distribution's linux-firmware package"
    return f"{row.firmware}: {distros.install_step(distribution(distro), row.firmware).text}"


def install_kernel(distro: str) -> str:
    """The distribution's kernel package and how to install it."""
    row = distros.row(distribution(distro))
    if row is None:
        return "your distribution's kernel package"
    return f"{row.kernel}: {distros.install_step(distribution(distro), row.kernel).text}"


def _supporting_kernels(ctx: Context, needed: tuple[int, int]) -> list[str]:
    from kfdguard.probe.system_info import parse_release

    result = []
    for release in ctx.facts.installed_kernels:
        v = parse_release(release)
        if v and (v[0], v[1]) >= needed and release != ctx.facts.kernel.release:
            result.append(release)
    return result


def newer_kernel_remedy(ctx: Context, needed: tuple[int, int] | None) -> str:
    installed = _supporting_kernels(ctx, needed) if needed else []
    if installed:
        return (
            f"boot the installed kernel {installed[-1]} (GRUB: Advanced options), "
            "or let kfdguard arrange it: sudo kfdguard fallback apply"
        )
    if needed is None:
        return "install a newer kernel from your distribution"
    return newer_kernel(ctx.distro, ctx.facts.os.version_id, needed)


# HSA_OVERRIDE_GFX_VERSION's usual value for a target ROCm's prebuilt libraries lack: the neighbour
# whose code the runtime then loads (the workaround that userspace-target-unsupported names).
OVERRIDES = {
    "gfx1031": "10.3.0",
    "gfx1032": "10.3.0",
    "gfx1033": "10.3.0",
    "gfx1034": "10.3.0",
    "gfx1035": "10.3.0",
    "gfx1036": "10.3.0",
    "gfx90c": "9.0.0",
    "gfx902": "9.0.0",
    "gfx1150": "11.0.0",
    "gfx1152": "11.0.0",
}


def override_workaround(gfx: str | None) -> str:
    """The override clause a remedy adds for a target ROCm's prebuilt libraries lack ("; the unsupported workaround is
    HSA_OVERRIDE_GFX_VERSION=10.3.0 ..."), or "" where OVERRIDES knows no neighbour for it."""
    neighbour = OVERRIDES.get(gfx or "")
    if neighbour is None:
        return ""
    return (
        f"; the unsupported workaround is HSA_OVERRIDE_GFX_VERSION={neighbour} in the program's environment "
        "(runs code built for a neighbouring target; it may crash or compute wrongly)"
    )
