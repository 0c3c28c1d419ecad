#!/usr/bin/env python3
"""vmlane's UEFI guest: OVMF, a GPT disk whose ESP has real systemd-boot, two real kernels.

The BIOS guest of vmlane.py boots its kernel with QEMU's -kernel: no boot
loader runs, so nothing can show systemd-boot's own machinery. This guest
boots the way a systemd-boot machine does:

- firmware: Debian's OVMF (``/usr/share/OVMF/OVMF_CODE_4M.fd``), with a
  per-run copy of ``OVMF_VARS_4M.fd`` that lives as long as the run (all its
  boots), so EFI variables written in one boot are there in the next;
- a GPT disk: partition 1 an ESP (FAT32) on which bookworm's own
  ``bootctl install`` (systemd-boot 252) put the boot loader, partition 2 the
  root file system (ext4);
- two real kernels installed by apt in the image's chroot, whose Debian hooks
  run ``kernel-install`` (``/etc/kernel/postinst.d/zz-systemd-boot``,
  ``/etc/initramfs/post-update.d/systemd-boot``): bookworm's 6.1 and
  bookworm-backports' 6.12, each with an initramfs-tools initramfs, as real
  Type #1 entries ``<machine-id>-<version>+<tries>.conf``;
- boot counting on (``/etc/kernel/tries``).

Everything else (the runner, the stand-in display manager, the users) is
vmlane.py's, and so is running it: this module only builds the disk and
gives vmlane's run the firmware and the disk (``UefiGuest``, the hook that
``run_attempt`` and ``run_lane`` take as ``args.boot_hook``); ``suite`` is this
module's, on vmlane's chain helpers.

    python3 vm/uefi.py build [--force] [--check]
    python3 vm/uefi.py run --share DIR --scenario FILE [--deb FILE]
    python3 vm/uefi.py suite --deb FILE uefi-fallback+uefi-oneshot

Stdlib only, like vmlane.py; building needs root (debootstrap, chroot, mount).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vmlane  # the sibling lane this guest plugs into (sys.path above)
from vmlane import LaneError, log, sh

SELF = Path(__file__).resolve()
UEFI_CACHE = vmlane.DEFAULT_CACHE / "uefi"
KEY_FILE = vmlane.KEY_FILE  # stored_key (vmlane.stored_key) reads this file
DISK = "disk.img"
PACKAGES_TXT = "guest-packages.txt"
ENTRIES_TXT = "entries.txt"  # the ESP's loader entries and bootctl's view of them at build time
ARTEFACTS: tuple[str, ...] = (DISK, PACKAGES_TXT, ENTRIES_TXT)

# Debian's ovmf package (bookworm 2022.11): the 4 MiB build, without Secure Boot.
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
HOST_PACKAGES: tuple[str, ...] = ("ovmf", "mtools", "dosfstools", "fdisk")
HOST_TOOLS: tuple[str, ...] = ("mkfs.fat", "mcopy", "sfdisk", "mkfs.ext4", "debootstrap", "qemu-system-x86_64")

# GPT partition types (the Discoverable Partitions Specification): ESP and x86-64 root.
ESP_TYPE = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
ROOT_TYPE = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"

# >>> uefi image recipe >>>
SUITE = "bookworm"
BACKPORTS = "bookworm-backports"
# What the BIOS guest has, plus the boot loader and what a kernel package needs to
# install itself (initramfs-tools; zstd compresses the initramfs).
EXTRA_INCLUDE: tuple[str, ...] = ("systemd-boot", "systemd-boot-efi", "initramfs-tools", "zstd")
# Two tries, not Debian's usual three: the runner boots at most 4 times, and boot 1
# (installing kfdguard) must not be on the kernel that is to run out of tries, so 2
# failed boots of it + the boot the loader falls back on must fit in boots 2..4.
TRIES = 2
ESP_MIB = 256
ROOT_SIZE = "3G"
ESP_MOUNT = "boot/efi"
# vmlane.run starts the runner; vmlane.timeout is test.sh's limit in each boot.
KERNEL_CMDLINE = "root=/dev/vda2 rw console=ttyS0 panic=-1 quiet vmlane.run vmlane.timeout=600"
# The 9p share waits for udev's coldplug (systemd-udev-settle): with initramfs-tools the
# mount could come before udev had loaded 9pnet_virtio and bound the device ("9pnet_virtio:
# no channels available for device host", the runner never started; 1 boot in 2, measured).
UEFI_FSTAB = f"""# vmlane UEFI guest
/dev/vda2 / ext4 rw,noatime 0 1
/dev/vda1 /{ESP_MOUNT} vfat umask=0077,noatime 0 0
host /mnt/host 9p trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.requires=systemd-udev-settle.service 0 0
"""
# MODULES=list: the initramfs needs only what mounts the root (a few MiB instead of
# ~40 MiB each on the ESP with MODULES=most).
INITRAMFS_CONF = "MODULES=list\nCOMPRESS=zstd\n"
INITRAMFS_MODULES = "virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n"
# The default boot: the 6.1 entry on the first boot, so that booting it to install
# kfdguard blesses 6.1 and leaves the newer kernel's counter alone (see the scenario).
# A glob: systemd-boot 252 matches "default" against its own entry ids, which are the
# file names *with* the counter (boot.c: entry->id = the file name; measured: the
# counter-less id bootctl shows did not match, and the newest entry booted instead).
LOADER_CONF = "timeout 0\ndefault {default}\n"


def customise(root: Path, probe: Path, logfile: Path) -> None:
    """What vmlane's customise_rootfs does that a booted Debian needs, without copying kernel modules
    (the kernel packages are installed for real here)."""
    etc = root / "etc"
    vmlane.write_file(etc / "hostname", vmlane.HOSTNAME + "\n")
    vmlane.write_file(
        etc / "hosts",
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{vmlane.HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    )
    vmlane.write_file(etc / "fstab", UEFI_FSTAB)
    (root / "mnt" / "host").mkdir(parents=True, exist_ok=True)
    vmlane.chroot(root, "passwd", "-d", "root", logfile=logfile)
    for uid, name in ((1000, "tester"), (1001, "member")):
        vmlane.chroot(root, "useradd", "-m", "-u", str(uid), "-s", "/bin/bash", name, logfile=logfile)
    system = etc / "systemd" / "system"
    vmlane.write_file(system / "serial-getty@ttyS0.service.d" / "autologin.conf", vmlane.GETTY_DROPIN)
    unit_dir = root / vmlane.UNIT_DIR
    vmlane.write_file(unit_dir / "vmlane-runner.service", vmlane.RUNNER_UNIT)
    vmlane.write_file(root / "usr/local/sbin/vmlane-runner", vmlane.RUNNER_SCRIPT, 0o755)
    vmlane.write_file(unit_dir / "vmlane-dm.service", vmlane.DM_UNIT)
    vmlane.write_file(root / "usr/local/libexec/vmlane-dm", vmlane.DM_SCRIPT, 0o755)
    vmlane.symlink(
        f"/{vmlane.UNIT_DIR}/vmlane-runner.service", system / "multi-user.target.wants/vmlane-runner.service"
    )
    vmlane.symlink(f"/{vmlane.UNIT_DIR}/vmlane-dm.service", system / "display-manager.service")
    vmlane.symlink(f"/{vmlane.UNIT_DIR}/vmlane-dm.service", system / "graphical.target.wants/vmlane-dm.service")
    vmlane.symlink("/lib/systemd/system/graphical.target", system / "default.target")
    for unit in vmlane.MASKED_UNITS:
        vmlane.symlink("/dev/null", system / unit)
    dst = root / "usr/local/bin/kfd-ioctl-probe"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(probe, dst)
    dst.chmod(0o755)


def kernel_config(root: Path) -> None:
    """kernel-install's and initramfs-tools' configuration, before any kernel is installed."""
    kernel = root / "etc" / "kernel"
    vmlane.write_file(kernel / "tries", f"{TRIES}\n")
    vmlane.write_file(kernel / "cmdline", KERNEL_CMDLINE + "\n")
    vmlane.write_file(kernel / "install.conf", "layout=bls\n")
    vmlane.write_file(root / "etc/initramfs-tools/conf.d/vmlane.conf", INITRAMFS_CONF)
    with (root / "etc/initramfs-tools/modules").open("a", encoding="utf-8") as fh:
        fh.write(INITRAMFS_MODULES)


def install_kernels(root: Path, mirror: str, logfile: Path) -> None:
    """bootctl install on the ESP, then both kernels through apt (their hooks run kernel-install)."""
    # bootctl and kernel-install look for the ESP at /boot/efi; a plain directory is
    # fine for bootctl with SYSTEMD_RELAX_ESP_CHECKS=1 (no partition behind it here), but
    # kernel-install writes entry paths relative to the mount point it finds with
    # stat %m: it must be a file system of its own, or the entries name /boot/efi/....
    env = ("env", "SYSTEMD_RELAX_ESP_CHECKS=1", "DEBIAN_FRONTEND=noninteractive")
    vmlane.chroot(root, *env, "bootctl", "install", "--no-variables", f"--esp-path=/{ESP_MOUNT}", logfile=logfile)
    vmlane.write_file(root / "etc/apt/sources.list.d/backports.list", f"deb {mirror} {BACKPORTS} main\n")
    apt = ("apt-get", "-y", "-q", "--no-install-recommends", "-o", "Dpkg::Use-Pty=0")
    vmlane.chroot(root, *env, "apt-get", "update", "-q", logfile=logfile)
    vmlane.chroot(root, *env, *apt, "install", "linux-image-amd64", logfile=logfile)
    # The backports meta-package replaces bookworm's, whose ABI package stays installed.
    vmlane.chroot(root, *env, *apt, "-t", BACKPORTS, "install", "linux-image-amd64", logfile=logfile)
    vmlane.chroot(root, "apt-get", "clean", logfile=logfile)


def write_loader_conf(esp: Path) -> tuple[str, list[str]]:
    """loader.conf with the 6.1 entry as the default; returns it and the entries' file names."""
    entries = sorted(p.name for p in (esp / "loader" / "entries").glob("*.conf"))
    old = [e for e in entries if re.search(r"-6\.1\.0-\d+-amd64\+\d+\.conf$", e)]
    if len(entries) != 2 or len(old) != 1:
        raise LaneError(f"expected two counted entries, one of them 6.1, on the ESP; found {entries}")
    default = re.sub(r"\+\d+(-\d+)?\.conf$", "*", old[0])  # the name up to its counter, then anything
    vmlane.write_file(esp / "loader" / "loader.conf", LOADER_CONF.format(default=default))
    return default, entries


def make_disk(root: Path, esp: Path, work: Path, disk: Path, logfile: Path) -> None:
    """FAT32 ESP and ext4 root built as files (no loop device), laid into a GPT disk file."""
    esp_img = work / "esp.img"
    root_img = work / "root.img"
    esp_img.unlink(missing_ok=True)
    sh(["mkfs.fat", "-F", "32", "-n", "ESP", "-C", esp_img, str(ESP_MIB * 1024)], logfile=logfile)
    items = sorted(esp.iterdir())
    sh(["mcopy", "-s", "-p", "-i", esp_img, *items, "::/"], logfile=logfile)
    sh(["mkfs.ext4", "-q", "-F", "-L", "kfdroot", "-d", root, root_img, ROOT_SIZE], logfile=logfile)
    root_mib = root_img.stat().st_size // (1024 * 1024)
    total_mib = 1 + ESP_MIB + root_mib + 1  # GPT at both ends
    disk.unlink(missing_ok=True)
    with disk.open("wb") as fh:
        fh.truncate(total_mib * 1024 * 1024)
    layout = (
        "label: gpt\n"
        f"start=1MiB, size={ESP_MIB}MiB, type={ESP_TYPE}, name=ESP\n"
        f"start={1 + ESP_MIB}MiB, size={root_mib}MiB, type={ROOT_TYPE}, name=root\n"
    )
    proc = subprocess.run(
        ["sfdisk", "--no-reread", "--no-tell-kernel", "-q", str(disk)],
        input=layout,
        text=True,
        capture_output=True,
        env=vmlane.system_env(),
        check=False,
    )
    if proc.returncode != 0:
        raise LaneError(f"sfdisk failed: {proc.stderr.strip()}")
    for img, start in ((esp_img, 1), (root_img, 1 + ESP_MIB)):
        sh(["dd", f"if={img}", f"of={disk}", "bs=1M", f"seek={start}", "conv=notrunc,sparse", "status=none"])
        img.unlink()


# <<< uefi image recipe <<<


@contextlib.contextmanager
def chroot_mounts(root: Path) -> Iterator[None]:
    """/proc, /sys, /dev for apt and the kernel hooks, and a tmpfs as the ESP (see install_kernels)."""
    mounted: list[Path] = []
    try:
        for how, where in (
            (["-t", "proc", "proc"], root / "proc"),
            (["-t", "sysfs", "sysfs"], root / "sys"),
            (["--bind", "/dev"], root / "dev"),
            (["-t", "tmpfs", "-o", f"size={ESP_MIB}m", "esp"], root / ESP_MOUNT),
        ):
            where.mkdir(parents=True, exist_ok=True)
            sh(["mount", *how, where])
            mounted.append(where)
        yield
    finally:
        for where in reversed(mounted):
            subprocess.run(["umount", "-l", str(where)], check=False)


def recipe_text() -> str:
    lines = SELF.read_text(encoding="utf-8").splitlines()
    start = lines.index("# >>> uefi image recipe >>>")
    end = lines.index("# <<< uefi image recipe <<<")
    return "\n".join(lines[start : end + 1])


def compute_key() -> dict[str, object]:
    """What the disk is built from. The kernels' versions are what the archive has when it is built
    (recorded in key.json), not part of the key: a new upload rebuilds only with build --force."""
    mirror = vmlane.archive_mirror(SUITE)
    parts: dict[str, object] = {
        "suite": SUITE,
        "mirror": mirror or "none",
        "include": [*vmlane.INCLUDE, *EXTRA_INCLUDE],
        # The runner, the display manager and the other texts come from vmlane's recipe.
        "vmlane_recipe_sha256": hashlib.sha256(vmlane.recipe_text().encode()).hexdigest(),
        "recipe_sha256": hashlib.sha256(recipe_text().encode()).hexdigest(),
        "probe_sha256": vmlane.sha256_file(vmlane.PROBE_SOURCE),
        "ovmf_code_sha256": vmlane.sha256_file(OVMF_CODE) if OVMF_CODE.exists() else "missing",
    }
    blob = json.dumps(parts, sort_keys=True).encode()
    parts["key"] = hashlib.sha256(blob).hexdigest()[:16]
    return parts


# The BIOS image's key file and its reader: the same layout, the UEFI disk's own artefacts.
stored_key = vmlane.stored_key


def cache_is_warm(cache: Path, key: dict[str, object]) -> bool:
    return vmlane.cache_is_warm(cache, key, ARTEFACTS)


def check_host() -> None:
    missing = [t for t in HOST_TOOLS if shutil.which(t, path=vmlane.SYSTEM_PATH) is None]
    missing += [str(p) for p in (OVMF_CODE, OVMF_VARS) if not p.exists()]
    if missing:
        raise LaneError(f"missing on the host: {' '.join(missing)}; apt-get install {' '.join(HOST_PACKAGES)}")


def build(cache: Path, key: dict[str, object], *, keep_work: bool) -> None:
    mirror = vmlane.archive_mirror(SUITE)
    if mirror is None:
        raise LaneError("the UEFI guest needs this machine's Debian archive (for bookworm-backports' kernel)")
    steps = vmlane.Steps()
    (cache / KEY_FILE).unlink(missing_ok=True)
    work = cache / "work"
    vmlane.remove_tree(work)
    work.mkdir(parents=True)
    logfile = cache / "logs" / "build.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text(f"vmlane uefi build {time.strftime('%F %T')} key {key['key']}\n")
    log(f"building the UEFI guest, key {key['key']}; log {logfile}")
    root = work / "rootfs"
    esp = work / "esp"
    out = work / "out"
    out.mkdir()
    # debootstrap --cache-dir refuses a directory that does not exist (a cold cache has none)
    (cache / "debs").mkdir(exist_ok=True)
    with steps.step("probe"):
        probe = out / "kfd-ioctl-probe"
        sh(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", probe, vmlane.PROBE_SOURCE], logfile=logfile)
    with steps.step("debootstrap"):
        sh(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join([*vmlane.INCLUDE, *EXTRA_INCLUDE])}",
                f"--cache-dir={(cache / 'debs').resolve()}",
                SUITE,
                root,
                mirror,
            ],
            logfile=logfile,
        )
    with steps.step("customise"):
        customise(root, probe, logfile)
        kernel_config(root)
    with steps.step("kernels (apt, initramfs-tools, kernel-install)"):
        with chroot_mounts(root):
            install_kernels(root, mirror, logfile)
            shutil.copytree(root / ESP_MOUNT, esp, symlinks=True)
            listing = subprocess.run(
                ["chroot", str(root), "env", "SYSTEMD_RELAX_ESP_CHECKS=1", "bootctl", f"--esp-path=/{ESP_MOUNT}",
                 "--no-pager", "list"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=vmlane.system_env(), check=False,
            )  # fmt: skip
        default, entries = write_loader_conf(esp)
        pkgs = subprocess.run(
            ["chroot", str(root), "dpkg-query", "-W", "-f=${Package} ${Version}\n"],
            capture_output=True, text=True, env=vmlane.system_env(), check=True,
        ).stdout  # fmt: skip
        vmlane.write_file(out / PACKAGES_TXT, pkgs)
        vmlane.write_file(
            out / ENTRIES_TXT,
            "\n".join([*entries, f"loader.conf default {default}", "", "bootctl list at build time:", listing.stdout]),
        )
        kernels = sorted(re.findall(r"^linux-image-(\d\S*-amd64) (\S+)$", pkgs, re.M))
        log(f"kernels: {', '.join(f'{r} ({v})' for r, v in kernels)}; entries {', '.join(entries)}")
        info = {**key, "kernels": dict(kernels), "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        vmlane.write_file(root / "etc" / "vmlane-image.json", json.dumps(info, indent=1) + "\n")
        for sub in ("usr/share/doc", "usr/share/man", "usr/share/info"):
            vmlane.remove_tree(root / sub)
            (root / sub).mkdir()
    with steps.step("disk (FAT32 ESP + ext4 root in GPT)"):
        make_disk(root, esp, work, out / DISK, logfile)
    with steps.step("install + clean up"):
        for name in ARTEFACTS:
            (out / name).replace(cache / name)
        vmlane.write_file(cache / KEY_FILE, json.dumps(info, indent=1) + "\n")
        if not keep_work:
            vmlane.remove_tree(work)
    log(steps.summary())
    disk = cache / DISK
    log(f"{disk}: {vmlane.human(disk.stat().st_size)} apparent, {vmlane.human(disk.stat().st_blocks * 512)} allocated")


def ensure(cache: Path) -> str:
    key = compute_key()
    if cache_is_warm(cache, key):
        return f"warm (UEFI key {key['key']})"
    with vmlane.cache_lock(cache):
        if cache_is_warm(cache, key):
            return f"warm (UEFI key {key['key']})"
        old = stored_key(cache)
        why = f"stale: {vmlane.key_difference(old, key)} changed" if old is not None else "cold"
        if os.geteuid() != 0:
            raise LaneError(f"the UEFI disk cache is {why} and building needs root")
        check_host()
        vmlane.check_host_tools()
        log(f"UEFI disk cache {why}: building")
        build(cache, key, keep_work=False)
    return f"built ({why})"


class UefiGuest:
    """The hook vmlane's run takes as ``args.boot_hook``: this guest's disk and QEMU's firmware."""

    name = "uefi"

    def check(self, cache: Path) -> None:
        check_host()
        if stored_key(cache) is None or any(not (cache / n).exists() for n in ARTEFACTS):
            raise LaneError(f"no built UEFI disk in {cache}; run: {SELF} build")
        current = compute_key()
        if stored_key(cache) != current and (stored_key(cache) or {}).get("key") != current["key"]:
            log(f"warning: the UEFI disk is stale ({vmlane.key_difference(stored_key(cache) or {}, current)} changed)")

    def ensure(self, cache: Path) -> str:
        return ensure(cache)

    def base_image(self, cache: Path) -> Path:
        return cache / DISK

    def qemu_argv(self, share: Path, accel: list[str], run_dir: Path, overlay: Path) -> list[str]:
        """Firmware instead of -kernel/-initrd/-append: the kernel and its command line come from the ESP's
        entries, chosen by systemd-boot. The VARS copy is made once per run and kept across its boots."""
        vars_copy = run_dir / "OVMF_VARS.fd"
        if not vars_copy.exists():
            shutil.copyfile(OVMF_VARS, vars_copy)
        for p in (share, run_dir):
            if "," in str(p):
                raise LaneError(f"QEMU cannot take a path with a comma: {p}")
        return [
            "qemu-system-x86_64",
            *accel,
            "-smp", "2", "-m", "2048", "-M", "q35",
            "-nographic", "-nodefaults", "-no-reboot", "-serial", "stdio",
            "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
            "-drive", f"if=pflash,format=raw,unit=1,file={vars_copy}",
            "-drive", f"file={overlay},format=qcow2,if=virtio",
            "-virtfs", f"local,path={share},mount_tag=host,security_model=none,id=host",
        ]  # fmt: skip


def cmd_build(args: argparse.Namespace) -> int:
    cache: Path = args.cache.resolve()
    t0 = time.monotonic()
    key = compute_key()
    if args.check:
        warm = cache_is_warm(cache, key)
        log(f"UEFI cache {'warm' if warm else 'cold'} (key {key['key']})")
        return 0 if warm else 1
    with vmlane.cache_lock(cache):
        if not args.force and cache_is_warm(cache, key):
            log(f"UEFI cache warm: key {key['key']}; nothing to build ({vmlane.fmt_s(time.monotonic() - t0)})")
            return 0
        if os.geteuid() != 0:
            raise LaneError("build needs root (debootstrap, chroot, mount)")
        check_host()
        vmlane.check_host_tools()
        build(cache, key, keep_work=args.keep_work)
    return 0


def cmd_suite(args: argparse.Namespace) -> int:
    """vmlane's suite for this one guest: each chain in a fresh boot of the UEFI disk, with vmlane's
    run_lane (args.boot_hook) and its chain helpers; prints the TAP lines, the times and the summary line."""
    t_all = time.monotonic()
    root: Path = args.cache.resolve()
    share_root: Path = args.share_root.resolve()
    chains = vmlane.parse_chains(args.scenarios, args.dir)
    for deb in (*args.deb, *args.offer):
        if not Path(deb).is_file():
            raise LaneError(f"no file {deb}; build it first (make deb)")
    t = time.monotonic()
    image = ensure(root)
    image_s = time.monotonic() - t
    log(f"UEFI disk {image} in {vmlane.fmt_s(image_s)}")
    results: list[vmlane.ScenarioResult] = []
    for chain in chains:
        label = "+".join(p.stem for p in chain)
        share = share_root / label
        install = vmlane.wants_install(chain)
        offered = [Path(f) for f in (*args.offer, *([] if install else args.deb))]
        vmlane.prepare_chain(share, chain, offered)
        print(f"======== uefi: {label} ========", flush=True)
        run_args = argparse.Namespace(
            cache=root, guest=vmlane.GUESTS[0].name, boot_hook=UefiGuest(), share=share, scenario=None,
            deb=list(args.deb) if install else [], accel=args.accel, cmdline_extra=[], timeout=args.timeout,
            boot_timeout=args.boot_timeout, tail=args.tail, quiet=not args.verbose,
        )  # fmt: skip
        t = time.monotonic()
        status, att = vmlane.run_lane(run_args)
        wall = time.monotonic() - t
        chain_results = vmlane.split_chain(share / "result.txt", [p.stem for p in chain], label)
        for r in chain_results:
            r.guest = "uefi"
            if r.status is None:
                r.status = status if status != 0 else vmlane.EXIT_NO_STATUS
            print("\n".join(f"uefi/{r.name}| {ln}" for ln in r.tap))
            counts = f"{r.passed} ok, {r.failed} not ok, {r.todo} known bug(s) (TODO)"
            print(f"---- uefi/{r.name}: {r.verdict} (exit {r.status}), {counts}, {r.boots} boot(s), {r.guest_s:.1f} s")
        if any(r.verdict != "PASS" for r in chain_results) or status != 0:
            vmlane.print_service_journal(share, args.tail)
        print(f"======== uefi {label}: exit {status}, {att.boots} boot(s), {vmlane.fmt_s(wall)} ========", flush=True)
        results.extend(chain_results)
    bad = [r.name for r in results if r.verdict != "PASS"]
    print(f"  UEFI disk {image}: {vmlane.fmt_s(image_s)}; disk and guests: {vmlane.fmt_s(time.monotonic() - t_all)}")
    if args.lane_start is not None:
        print(f"  the whole lane: {vmlane.fmt_s(time.time() - args.lane_start)} (budget {args.budget} s)")
    print(f"vmlane uefi suite: {len(results) - len(bad)} of {len(results)} scenarios passed")
    print(f"system-tests: {sum(r.passed for r in results)} passed, {sum(r.failed for r in results)} failed", flush=True)
    return 1 if bad else 0


def cmd_host_deps(_args: argparse.Namespace) -> int:
    missing = [p for p in HOST_PACKAGES if p not in vmlane.installed_packages(HOST_PACKAGES)]
    if missing:
        log(f"installing {' '.join(missing)}")
        sh(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], capture=True)
    return vmlane.cmd_host_deps(_args)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    func: Callable[[argparse.Namespace], int]
    if argv[:1] == ["build"]:
        p = argparse.ArgumentParser(prog="uefi.py build")
        p.add_argument("--cache", type=Path, default=UEFI_CACHE)
        p.add_argument("--force", action="store_true")
        p.add_argument("--check", action="store_true")
        p.add_argument("--keep-work", action="store_true")
        args = p.parse_args(argv[1:])
        func = cmd_build
    elif argv[:1] in (["run"], ["suite"]):
        # vmlane's own options; the cache and the share root default to the UEFI guest's.
        args = vmlane.parse_args(argv)
        if args.cache == vmlane.DEFAULT_CACHE:
            args.cache = UEFI_CACHE
        if argv[0] == "suite":
            if args.share_root == vmlane.DEFAULT_CACHE / "suite":
                args.share_root = UEFI_CACHE / "suite"
            func = cmd_suite
        else:
            args.guest = vmlane.GUESTS[0].name  # vmlane's table is not used: the hook brings disk and firmware
            args.boot_hook = UefiGuest()
            func = args.func
    elif argv[:1] == ["host-deps"]:
        args = argparse.Namespace()
        func = cmd_host_deps
    else:
        print(__doc__)
        return 2
    try:
        rc: int = func(args)
    except LaneError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    return rc


if __name__ == "__main__":
    sys.exit(main())
