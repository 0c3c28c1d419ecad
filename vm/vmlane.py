#!/usr/bin/env python3
"""vmlane: real-kernel, real-systemd VM test lane for kfdguard.

Boots Debian bookworm's own kernel and a minimal bookworm root filesystem
(systemd, udev, dbus, polkitd, logind) under QEMU, installs .deb files into
the guest and runs a scenario script there.  Test script and results travel
through a 9p share.  See vm/README.md.

Subcommands:
  host-deps   apt-get install the host packages the lane needs (idempotent)
  build       build and cache kernel, stage-1 initramfs and root image
  run         boot the cached image, install .debs, run SHARE/test.sh
  suite       build the image if needed, then run chains of scenarios, one guest
              per chain, and print a summary (exit 0 when every scenario passed)
  shell       boot the cached image interactively (root autologin on ttyS0)
  clean       remove the work tree, downloaded packages or the whole cache

Exit status of `run`: the scenario's own exit status (test.sh; 100 when
`dpkg -i` failed), 124 when the scenario started but no status came back
(timeout, kernel panic), 125 when the infrastructure failed twice (QEMU did
not boot or the guest runner never started; retried once), 1 on errors
before booting (no image, missing tools), 2 on bad arguments.

Stdlib only; needs root for host-deps and build (apt, debootstrap, chroot).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_CACHE = REPO / ".cache" / "vm"
PROBE_SOURCE = HERE / "kfd-ioctl-probe.c"
SELF = Path(__file__).resolve()

HOST_PACKAGES: tuple[str, ...] = (
    "qemu-system-x86",
    "qemu-utils",
    "debootstrap",
    "busybox-static",
    "kmod",
    "cpio",
    "e2fsprogs",
    "zstd",
    "gcc",
    "libc6-dev",
)
HOST_TOOLS: tuple[str, ...] = (
    "qemu-system-x86_64",
    "qemu-img",
    "debootstrap",
    "busybox",
    "modprobe",
    "depmod",
    "cpio",
    "mkfs.ext4",
    "gcc",
    "dpkg",
    "apt-get",
    "chroot",
)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Artefacts of a build, inside the cache directory.
KEY_FILE = "key.json"
VMLINUZ = "vmlinuz"
INITRD = "initrd-stage1.img"
ROOTFS = "rootfs.img"
PROBE_BIN = "kfd-ioctl-probe"
PACKAGES_TXT = "guest-packages.txt"
ARTEFACTS: tuple[str, ...] = (VMLINUZ, INITRD, ROOTFS, PROBE_BIN, PACKAGES_TXT)

# Host exit codes of `run` besides the scenario's own status.
EXIT_NO_STATUS = 124  # the scenario started but no exit status came back
EXIT_INFRA = 125  # QEMU/boot/runner failed twice (infrastructure)
MAX_BOOTS = 5  # test.sh may ask for 4 reboots (exit 200): uefi-fallback needs five boots

# Markers printed on the serial console by the guest.
MARK_RUNNER = "VMLANE-RUNNER-START"
MARK_STATE = "VMLANE-SYSTEM-STATE"
MARK_REBOOT = "VMLANE-RUNNER-REBOOT"
MARK_END = "VMLANE-RUNNER-END"

OUTPUT_FILES: tuple[str, ...] = (
    "result.txt",
    "journal.txt",
    "exit-status",
    "serial.log",
    "journal-boot1.txt",
    "journal-boot2.txt",
    "journal-boot3.txt",
    "journal-boot4.txt",
)

SCENARIO_LIB = "lib.sh"  # copied into the share next to test.sh when beside the scenario

# CSI, charset, reset, and OSC sequences (systemd 257 writes "\e[!p\e]104\a\e[?7h" before a line on the console).
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1bc")


class LaneError(Exception):
    """A failure with a message for the user (no traceback)."""


# --------------------------------------------------------------------------
# small helpers


def log(msg: str) -> None:
    print(f"vmlane: {msg}", flush=True)


def fmt_s(seconds: float) -> str:
    return f"{seconds:.1f} s"


def system_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = SYSTEM_PATH
    env["LC_ALL"] = "C.UTF-8"
    env["DEBIAN_FRONTEND"] = "noninteractive"
    env.update(extra)
    return env


def sh(
    args: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    logfile: Path | None = None,
    capture: bool = False,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command; output goes to logfile, is captured, or is inherited."""
    argv = [str(a) for a in args]
    stdout: int | IO[str] | None = None
    fh: IO[str] | None = None
    if logfile is not None:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        fh = logfile.open("a", encoding="utf-8")
        fh.write(f"\n$ {' '.join(argv)}\n")
        fh.flush()
        stdout = fh
    elif capture:
        stdout = subprocess.PIPE
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdout=stdout,
            stderr=subprocess.STDOUT if (fh is not None or capture) else None,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env if env is not None else system_env(),
            check=False,
        )
    finally:
        if fh is not None:
            fh.close()
    if check and proc.returncode != 0:
        detail = ""
        if logfile is not None:
            detail = "\n" + tail_text(logfile, 30)
        elif capture and proc.stdout:
            detail = "\n" + proc.stdout[-3000:]
        raise LaneError(f"command failed (rc {proc.returncode}): {' '.join(argv)}{detail}")
    return proc


def tail_text(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"({path.name} unreadable: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_file(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def symlink(target: str, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def mounts_below(path: Path) -> list[str]:
    prefix = str(path.resolve()).rstrip("/") + "/"
    found: list[str] = []
    with open("/proc/self/mounts", encoding="utf-8") as fh:
        for line in fh:
            mnt = line.split()[1].replace("\\040", " ")
            if mnt.startswith(prefix) or mnt == prefix.rstrip("/"):
                found.append(mnt)
    return found


def remove_tree(path: Path) -> None:
    """rm -rf that first unmounts anything left mounted inside (debootstrap)."""
    if not path.exists() and not path.is_symlink():
        return
    for mnt in sorted(mounts_below(path), key=len, reverse=True):
        subprocess.run(["umount", "-l", mnt], check=False)
    left = mounts_below(path)
    if left:
        raise LaneError(f"refusing to delete {path}: still mounted: {left}")
    shutil.rmtree(path)


def dir_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / name).lstat().st_blocks * 512
    return total


def human(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1024
    return f"{value:.1f} GiB"


@contextlib.contextmanager
def cache_lock(cache: Path) -> Iterator[None]:
    """One build or VM at a time per cache (the machine has 2 cores)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another vmlane build/run using {cache} ...")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


class Steps:
    """Prints the time of each step and a summary."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []
        self.t0 = time.monotonic()

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        log(f"[{name}] ...")
        t = time.monotonic()
        yield
        dt = time.monotonic() - t
        self.times.append((name, dt))
        log(f"[{name}] done in {fmt_s(dt)}")

    def summary(self) -> str:
        parts = [f"{name} {dt:.1f}" for name, dt in self.times]
        total = time.monotonic() - self.t0
        return f"timings (s): {', '.join(parts)}; total {total:.1f}"


# --------------------------------------------------------------------------
# host packages


def installed_packages(names: Sequence[str]) -> set[str]:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *names],
        capture_output=True,
        text=True,
        env=system_env(),
        check=False,
    )
    ok: set[str] = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith("ii"):
            ok.add(parts[0].split(":")[0])
    return ok


def cmd_host_deps(_args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    missing = [p for p in HOST_PACKAGES if p not in installed_packages(HOST_PACKAGES)]
    if not missing:
        log(f"host packages present ({len(HOST_PACKAGES)}), nothing to do")
        return 0
    if os.geteuid() != 0:
        raise LaneError(f"need root to install: {' '.join(missing)}")
    log(f"installing {' '.join(missing)}")
    sh(["apt-get", "update", "-qq"])
    sh(
        [
            "apt-get",
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "-o",
            "Dpkg::Use-Pty=0",
            *missing,
        ],
        capture=True,
    )
    still = [p for p in HOST_PACKAGES if p not in installed_packages(HOST_PACKAGES)]
    if still:
        raise LaneError(f"still missing after apt-get: {' '.join(still)}")
    log(f"host packages installed in {fmt_s(time.monotonic() - t0)}")
    return 0


def check_host_tools() -> None:
    missing = [t for t in HOST_TOOLS if shutil.which(t, path=SYSTEM_PATH) is None]
    if "busybox-static" not in installed_packages(["busybox-static"]):
        missing.append("busybox-static")
    if missing:
        raise LaneError(f"missing host tools: {' '.join(missing)}; run: {SELF} host-deps")


# --------------------------------------------------------------------------
# kernel package


@dataclasses.dataclass(frozen=True)
class KernelPkg:
    package: str  # linux-image-6.1.0-57-amd64
    version: str  # 6.1.192-3

    @property
    def release(self) -> str:  # 6.1.0-57-amd64 (uname -r)
        return self.package.removeprefix("linux-image-")

    @property
    def deb_name(self) -> str:
        return f"{self.package}_{self.version.replace(':', '%3a')}_amd64.deb"


@dataclasses.dataclass(frozen=True)
class Apt:
    """apt as the host has it (no options), or a private configuration for a
    suite the host's sources do not carry (its own sources.list and lists in
    the guest's cache): the same archive, another suite."""

    options: tuple[str, ...] = ()
    what: str = "the host's apt"

    def argv(self, tool: str, *args: str) -> list[str]:
        return [tool, *self.options, *args]


HOST_APT = Apt()


def apt_show(package: str, apt: Apt = HOST_APT) -> dict[str, str]:
    proc = subprocess.run(
        apt.argv("apt-cache", "show", "--no-all-versions", package),
        capture_output=True,
        text=True,
        env=system_env(),
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise LaneError(
            f"apt-cache ({apt.what}) knows no {package} ({proc.stderr.strip()}); "
            "run `apt-get update` (or vmlane.py host-deps) first"
        )
    fields: dict[str, str] = {}
    key = ""
    for line in proc.stdout.splitlines():
        if not line.strip():
            break
        if line[0].isspace() and key:
            fields[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def resolve_kernel(apt: Apt = HOST_APT, meta_package: str = "linux-image-amd64") -> KernelPkg:
    """The ABI package that the meta-package (linux-image-amd64) depends on."""
    meta = apt_show(meta_package, apt)
    for dep in meta.get("Depends", "").split(","):
        first = dep.split("|")[0].strip()
        m = re.fullmatch(r"(linux-image-\d\S*-amd64)\s*(?:\(\s*=\s*([^)\s]+)\s*\))?", first)
        if m:
            name, version = m.group(1), m.group(2)
            if not version:
                version = apt_show(name, apt)["Version"]
            return KernelPkg(name, version)
    raise LaneError(f"cannot find the kernel ABI package in {meta.get('Depends')!r}")


def fetch_kernel(kernel: KernelPkg, debdir: Path, apt: Apt = HOST_APT) -> Path:
    debdir.mkdir(parents=True, exist_ok=True)
    deb = debdir / kernel.deb_name
    for old in debdir.glob("linux-image-*.deb"):
        if old != deb:
            log(f"removing old kernel package {old.name}")
            old.unlink()
    if deb.exists():
        log(f"kernel package cached: {deb.name}")
        return deb
    sh(
        apt.argv("apt-get", "download", "-qq", "-o", "APT::Sandbox::User=root", f"{kernel.package}={kernel.version}"),
        cwd=debdir,
        capture=True,
    )
    if not deb.exists():
        found = sorted(debdir.glob(f"{kernel.package}_*.deb"))
        if not found:
            raise LaneError(f"apt-get download produced no {kernel.package} .deb")
        found[-1].rename(deb)
    return deb


def unpack_kernel(deb: Path, kernel: KernelPkg, ktree: Path) -> None:
    remove_tree(ktree)
    ktree.mkdir(parents=True)
    sh(["dpkg-deb", "-x", deb, ktree])
    # Debian 13's kernel ships its modules in usr/lib/modules (the /usr move);
    # depmod -b and modprobe -d look in BASE/lib/modules, as a merged-/usr
    # system's /lib -> usr/lib symlink makes them find it.
    if not (ktree / "lib").exists() and (ktree / "usr" / "lib" / "modules").is_dir():
        (ktree / "lib").symlink_to("usr/lib")
    vmlinuz = ktree / "boot" / f"vmlinuz-{kernel.release}"
    moddir = ktree / "lib" / "modules" / kernel.release
    if not vmlinuz.exists() or not moddir.is_dir():
        raise LaneError(f"{deb.name} has no {vmlinuz.name} or lib/modules/{kernel.release}")
    sh(["depmod", "-b", ktree, kernel.release])


def module_closure(ktree: Path, release: str, names: Sequence[str], optional: Sequence[str] = ()) -> list[str]:
    """Module files (relative to lib/modules/<release>) in load order."""
    moddir = (ktree / "lib" / "modules" / release).resolve()
    order: list[str] = []
    for name in [*names, *optional]:
        proc = subprocess.run(
            ["modprobe", "-d", str(ktree), "-S", release, "--show-depends", name],
            capture_output=True,
            text=True,
            env=system_env(),
            check=False,
        )
        if proc.returncode != 0:
            if name in optional:
                continue
            raise LaneError(f"module {name} not found: {proc.stderr.strip()}")
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "insmod":
                rel = str(Path(parts[1]).resolve().relative_to(moddir))
                if rel not in order:
                    order.append(rel)
    return order


def config_value(ktree: Path, release: str, option: str) -> str:
    config = ktree / "boot" / f"config-{release}"
    for line in config.read_text(encoding="utf-8").splitlines():
        if line.startswith(option + "="):
            return line.split("=", 1)[1]
    return "n"


def _aptsources() -> Any:
    sys.path.insert(0, str(REPO / "scripts"))
    import aptsources  # a sibling script, stdlib only like this one

    return aptsources


def host_carries(suite: str) -> bool:
    """Whether the host's own apt configuration has SUITE (then its apt-cache answers for it)."""
    mod = _aptsources()
    try:
        mod.mirror_for(suite, mod.read_sources())
    except mod.AptSourcesError:
        return False
    return True


def archive_mirror(suite: str) -> str | None:
    """This machine's archive for SUITE, from its apt configuration
    (scripts/aptsources.py), so the tree names no archive host. A suite the
    host does not carry (trixie on a bookworm host) comes from the same archive
    as the host's first main, non-security entry. None leaves debootstrap its
    own default."""
    mod = _aptsources()
    try:
        sources = mod.read_sources()
    except mod.AptSourcesError as exc:
        log(f"no archive from apt ({exc}): debootstrap's default mirror")
        return None
    with contextlib.suppress(mod.AptSourcesError):
        return str(mod.mirror_for(suite, sources))
    for source in sources:
        plain = [x for x in source.suites if not x.endswith("-security")]
        if "deb" in source.types and plain and (not source.components or "main" in source.components):
            return str(source.uris[0]).rstrip("/")
    log("no 'deb' entry with component main in the apt configuration: debootstrap's default mirror")
    return None


def private_source_lines(suite: str) -> list[str]:
    """sources.list lines for SUITE, SUITE-updates and SUITE-security, made
    from the host's own entries for its suite (bookworm -> trixie,
    bookworm-security -> trixie-security: same archives, another suite)."""
    mod = _aptsources()
    lines: list[str] = []
    for source in mod.read_sources():
        if "deb" not in source.types or (source.components and "main" not in source.components):
            continue
        for uri in source.uris:
            for name in source.suites:
                _base, dash, rest = name.partition("-")
                if rest not in ("", "updates", "security"):
                    continue  # backports, proposed-updates: not what the guest runs
                line = f"deb [signed-by={ARCHIVE_KEYRING}] {uri.rstrip('/')} {suite}{dash}{rest} main"
                if line not in lines:
                    lines.append(line)
    if not lines:
        raise LaneError(f"the host's apt configuration has no main entry to derive {suite}'s from")
    return lines


ARCHIVE_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"  # debian-archive-keyring: it has trixie's keys
PRIVATE_LISTS_MAX_AGE = 24 * 3600  # s; older private lists are refreshed before the kernel is resolved


def private_apt(suite: str, aptdir: Path, *, refresh: bool = False) -> Apt:
    """apt options for SUITE in its own directory (sources.list, lists,
    status, archives), updated when new, older than a day, or asked to."""
    lists = aptdir / "lists"
    for sub in (lists / "partial", aptdir / "archives" / "partial"):
        sub.mkdir(parents=True, exist_ok=True)
    sources = aptdir / "sources.list"
    text = "\n".join(private_source_lines(suite)) + "\n"
    changed = not sources.exists() or sources.read_text(encoding="utf-8") != text
    if changed:
        write_file(sources, text)
    (aptdir / "status").touch()
    apt = Apt(
        (
            *("-o", f"Dir::Etc::SourceList={sources}"),
            *("-o", "Dir::Etc::SourceParts=/nonexistent"),
            *("-o", f"Dir::State::Lists={lists}"),
            *("-o", f"Dir::State::Status={aptdir / 'status'}"),
            *("-o", f"Dir::Cache={aptdir}"),
            *("-o", f"Dir::Cache::Archives={aptdir / 'archives'}"),
            *("-o", "APT::Architecture=amd64"),
            *("-o", "Acquire::Languages=none"),
            *("-o", "Debug::NoLocking=1"),
            *("-o", "APT::Sandbox::User=root"),
        ),
        f"a private apt for {suite} in {aptdir}",
    )
    stamp = aptdir / "updated"
    age = time.time() - stamp.stat().st_mtime if stamp.exists() else None
    if refresh or changed or age is None or age > PRIVATE_LISTS_MAX_AGE:
        if os.geteuid() != 0:
            if age is None:
                raise LaneError(f"{suite}: the private apt lists in {aptdir} are missing and updating them needs root")
            return apt
        log(f"apt-get update for {suite} ({apt.what})")
        sh(apt.argv("apt-get", "update", "-qq"), capture=True)
        stamp.touch()
    return apt


# --------------------------------------------------------------------------
# The image recipe.  Everything between the two marker lines below is hashed
# into the cache key: changing it rebuilds the image on the next `build`.
# >>> image recipe >>>


@dataclasses.dataclass(frozen=True)
class Guest:
    """One row of the guest table (mkosi's Distribution/Release/Packages, as data)."""

    name: str  # the cache directory (.cache/vm/<name>/) and the matrix row
    suite: str  # debootstrap's suite; the kernel comes from the same suite
    what: str  # what the row stands for, for the matrix
    kernel: str = "linux-image-amd64"  # the meta-package whose Depends: names the ABI package
    extra: tuple[str, ...] = ()  # packages on top of INCLUDE
    image: str = ""  # "": its own image; else boot that row's image (a boot-time variant)
    bus: str = "dbus-daemon"  # the system bus it boots with: dbus-daemon or dbus-broker
    only: str = ""  # "": every scenario; else those whose header has "# vmlane: <only>"

    @property
    def image_name(self) -> str:
        return self.image or self.name


# One row per guest; `suite` runs them in this order, one guest at a time.
# Debian 13's own default system bus is dbus-daemon (its `dbus` package
# Provides: default-dbus-system-bus); dbus-broker is in the trixie image but
# only the trixie-broker row boots with it (vmlane.bus=dbus-broker, BUS_GENERATOR).
GUESTS: tuple[Guest, ...] = (
    Guest("bookworm", "bookworm", "Debian 12: Linux 6.1, systemd 252, dbus-daemon, polkit 122"),
    Guest(
        "trixie",
        "trixie",
        "Debian 13: Linux 6.12, systemd 257, dbus-daemon, polkit 126",
        extra=("dbus-broker",),
    ),
    Guest(
        "trixie-broker",
        "trixie",
        "Debian 13 booted with dbus-broker as the system bus (the bus and polkit scenarios)",
        image="trixie",
        bus="dbus-broker",
        only="bus",
    ),
)
BUSES: tuple[str, ...] = ("dbus-daemon", "dbus-broker")
BUS_FLAG = "vmlane.bus"

INCLUDE: tuple[str, ...] = (
    "systemd",
    "systemd-sysv",
    "libpam-systemd",  # polkitd needs logind; debootstrap can't pick the alternative
    "libnss-systemd",
    "dbus",
    "polkitd",
    "udev",
    "kmod",
    "python3",
    "python3-yaml",
    "python3-pyudev",
    "python3-systemd",
    "python3-dbus",
    "python3-dbus-fast",
    "python3-dbus-next",
    "python3-zstandard",  # kfdguard's Depends since the software scan (zstd offload bundles)
    # debootstrap's --include resolves no virtual package: python3-zstandard depends on
    # python3-cffi-backend-api-min/-max, which only python3-cffi-backend provides (a cold image failed without it).
    "python3-cffi-backend",
    # The software scan's ELF reader and the UKI reader: Depends of kfdguard (dpkg -i refuses it without them).
    "python3-pyelftools",
    "python3-pefile",
    "python3-msgpack",  # TheRock's kernel packs
    "grub-common",
    "grub2-common",
    "acl",
    "procps",
    "adduser",
    "less",
)
IMAGE_SIZE = "2G"
HOSTNAME = "kfdvm"
RUN_FLAG = "vmlane.run"
STAY_FLAG = "vmlane.stay"

# Stage 1 mounts the root file system and loads the share's transport
# (9pnet_virtio, 9p). Without them here, the 9p channel "host" exists only once
# udev's coldplug has loaded 9pnet_virtio for the virtio-9p device, and
# mnt-host.mount (no device unit to wait for: "host" is a tag, not a path)
# races it. On a loaded host with amdgpu in modules-load.d (the `boot`
# scenario's second boot) the mount lost that race and failed, and the runner,
# which Requires= it, never started. Loaded here, the channel is there before
# systemd starts; udev and the real root see the same modules loaded.
STAGE1_MODULES: tuple[str, ...] = ("virtio_pci", "virtio_blk", "ext4", "9pnet_virtio", "9p")
STAGE1_OPTIONAL: tuple[str, ...] = ("crc32c_generic",)  # ext4 metadata_csum
STAGE1_APPLETS: tuple[str, ...] = (
    "sh",
    "mount",
    "umount",
    "mkdir",
    "insmod",
    "switch_root",
    "sleep",
    "cat",
    "cut",
    "ls",
    "poweroff",
    "reboot",
)

# Modules copied into the root image (with their dependencies).
ROOTFS_MODULES: tuple[str, ...] = (
    "amdgpu",
    "virtio_pci",
    "virtio_blk",
    "virtio_console",
    "ext4",
    "9pnet_virtio",
    "9p",
    "autofs4",
    "efivarfs",
    "binfmt_misc",  # without it the boot ends "degraded"
)
ROOTFS_OPTIONAL: tuple[str, ...] = ("crc32c_generic", "configfs", "fuse", "loop")

MASKED_UNITS: tuple[str, ...] = (
    "systemd-timesyncd.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "fstrim.timer",
    "man-db.timer",
    "dpkg-db-backup.timer",
)

STAGE1_INIT = """#!/bin/sh
# vmlane stage-1 init: load virtio + ext4, mount /dev/vda, switch_root.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
echo "vmlane-stage1: start uptime=$(cut -d' ' -f1 /proc/uptime)"
for m in $(cat /modules.list); do
    insmod "/lib/modules/$m" || echo "vmlane-stage1: insmod $m failed"
done
i=0
while [ ! -b /dev/vda ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
mkdir -p /newroot
if ! mount -t ext4 -o rw,noatime /dev/vda /newroot; then
    echo "vmlane-stage1: FATAL: cannot mount /dev/vda; /dev has:"; ls /dev
    poweroff -f
fi
init=/sbin/init
for arg in $(cat /proc/cmdline); do
    case "$arg" in init=*) init="${arg#init=}" ;; esac
done
echo "vmlane-stage1: switch_root to $init uptime=$(cut -d' ' -f1 /proc/uptime)"
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot "$init"
"""

FSTAB = """# vmlane guest
/dev/vda / ext4 rw,noatime 0 1
host /mnt/host 9p trans=virtio,version=9p2000.L,msize=262144,nofail 0 0
"""

GETTY_DROPIN = """[Unit]
# Autologin on the serial console, but not while a scenario runs (unless stay).
ConditionKernelCommandLine=|!vmlane.run
ConditionKernelCommandLine=|vmlane.stay

[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 \
%I $TERM
"""

# The runner starts as soon as the share is mounted, not after sysinit.target:
# with default dependencies it waited for systemd-modules-load (amdgpu, when a
# scenario loads it at boot: minutes under TCG on a loaded host) before it
# could print its start marker, and the host took the late marker for a guest
# that did not boot. Its own bounded wait for the system (RUNNER_SCRIPT) then
# covers the rest of the boot, and reports a boot that did not finish.
RUNNER_UNIT = """[Unit]
Description=vmlane scenario runner
ConditionKernelCommandLine=vmlane.run
DefaultDependencies=no
Requires=mnt-host.mount
After=mnt-host.mount
Conflicts=shutdown.target
Before=shutdown.target

[Service]
Type=simple
ExecStart=/usr/local/sbin/vmlane-runner
StandardOutput=journal
StandardError=journal
TimeoutStopSec=10

[Install]
WantedBy=multi-user.target
"""

RUNNER_SCRIPT = r"""#!/bin/bash
# vmlane guest runner (installed by vm/vmlane.py, run by vmlane-runner.service
# when the kernel command line has vmlane.run).
#  1. print the start marker, wait for `systemctl is-system-running --wait`
#  2. first boot: dpkg -i /mnt/host/debs/*.deb (status 100 if that fails)
#  3. run /mnt/host/test.sh (VMLANE_BOOT=N), tee to the console + result.txt
#     exit 200 from test.sh = "reboot and run me again" (at most 4 reboots)
#  4. copy the journal, write exit-status, power off (unless vmlane.stay)
set -u
share=/mnt/host
state=/var/lib/vmlane
mkdir -p "$state"
boot=$(( $(cat "$state/boot" 2>/dev/null || echo 0) + 1 ))
echo "$boot" >"$state/boot"
stay=0
tmo=420
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        vmlane.stay) stay=1 ;;
        vmlane.timeout=*) tmo="${arg#vmlane.timeout=}" ;;
    esac
done
up() { cut -d' ' -f1 /proc/uptime; }
con() { echo "$*" >/dev/console; echo "$*"; }
out() { tee -a "$share/result.txt" >/dev/console; }

con "VMLANE-RUNNER-START boot=$boot uptime=$(up)"
# The runner starts early (DefaultDependencies=no): this waits for the rest of
# the boot, at most as long as systemd-modules-load may take (MODULES_LOAD_DROPIN).
sys_state=$(timeout 600 systemctl is-system-running --wait 2>&1)
con "VMLANE-SYSTEM-STATE ${sys_state:-timeout} uptime=$(up)"
con "vmlane: $(systemd-analyze time 2>&1 | head -n 1)"
if [ "$sys_state" != running ]; then
    systemctl --failed --no-legend --plain --no-pager 2>&1 |
        while IFS= read -r line; do con "vmlane: failed unit: $line"; done
fi

status=0
stage=test
if [ "$boot" = 1 ]; then
    shopt -s nullglob
    debs=("$share"/debs/*.deb)
    if [ "${#debs[@]}" -gt 0 ]; then
        stage=install
        echo "# dpkg -i ${debs[*]##*/}" | out
        dpkg -i "${debs[@]}" 2>&1 | out
        rc=${PIPESTATUS[0]}
        if [ "$rc" != 0 ]; then
            echo "not ok - dpkg -i failed (rc $rc)" | out
            status=100
        fi
    fi
fi
if [ "$status" = 0 ]; then
    stage=test
    cd "$share" || exit 1
    VMLANE_BOOT=$boot VMLANE_SHARE=$share \
        timeout -k 10 "$tmo" "$share/test.sh" </dev/null 2>&1 | out
    status=${PIPESTATUS[0]}
    if [ "$status" = 124 ]; then con "vmlane: test.sh timed out after ${tmo}s"; fi
fi

if [ "$status" = 200 ] && [ "$boot" -lt 5 ]; then
    journalctl -b --no-pager -o short-monotonic >"$share/journal-boot$boot.txt" 2>&1
    sync
    con "VMLANE-RUNNER-REBOOT boot=$boot uptime=$(up)"
    systemctl reboot --no-block
    exit 0
fi
journalctl -b --no-pager -o short-monotonic >"$share/journal.txt" 2>&1
echo "$status" >"$share/exit-status"
sync
con "VMLANE-RUNNER-END status=$status stage=$stage boot=$boot uptime=$(up)"
if [ "$stay" = 1 ]; then
    con "vmlane: vmlane.stay set, not powering off"
    exit 0
fi
systemctl poweroff --no-block
"""

# Stand-in for gdm3 & co: Debian links display-manager.service to the real
# display manager's unit; graphical.target Wants= it.
DM_UNIT = """[Unit]
Description=vmlane stand-in display manager
After=systemd-user-sessions.service

[Service]
Type=simple
ExecStart=/usr/local/libexec/vmlane-dm

[Install]
Alias=display-manager.service
WantedBy=graphical.target
"""

DM_SCRIPT = """#!/bin/sh
# Records when the (stand-in) display manager started, then idles.
up=$(cut -d' ' -f1 /proc/uptime)
echo "$up" >/run/vmlane-dm.started
echo "vmlane-dm: display manager stand-in started at uptime $up"
exec sleep infinity
"""

UNIT_DIR = "usr/local/lib/systemd/system"

# systemd-modules-load.service has TimeoutSec=90s (252 and 257 alike). Under TCG
# on a loaded host (load 13-14 on 2 CPUs) loading 6.12's amdgpu from
# modules-load.d took longer: the unit ended "failed timeout" at the trixie
# guest's boot 2 (seed-advice). An emulated CPU is ~10x slower than the
# hardware the 90 s are meant for; the unit's behaviour is otherwise Debian's.
MODULES_LOAD_DROPIN = """[Service]
# vmlane: a TCG guest loads amdgpu far slower than hardware does
TimeoutSec=600
"""

# A system generator: with vmlane.bus=dbus-broker on the kernel command line,
# dbus.service is an alias of dbus-broker.service for this boot. Generators
# run before units are loaded, and their normal directory outranks
# /usr/lib/systemd/system (systemd.generator(7)), where dbus-daemon's
# dbus.service is; the image has no /etc alias to outrank it.
BUS_GENERATOR = """#!/bin/sh
for arg in $(cat /proc/cmdline); do
    if [ "$arg" = "vmlane.bus=dbus-broker" ] && [ -e /usr/lib/systemd/system/dbus-broker.service ]; then
        ln -sf /usr/lib/systemd/system/dbus-broker.service "$1/dbus.service"
    fi
done
exit 0
"""


def build_stage1(ktree: Path, release: str, work: Path, out: Path) -> int:
    """busybox + the virtio/ext4 closure + /init, as a gzip'd newc cpio."""
    mods = module_closure(ktree, release, STAGE1_MODULES, STAGE1_OPTIONAL)
    root = work / "stage1"
    remove_tree(root)
    for d in ("bin", "dev", "proc", "sys", "newroot", "lib/modules"):
        (root / d).mkdir(parents=True, exist_ok=True)
    shutil.copy2("/bin/busybox", root / "bin" / "busybox")
    for applet in STAGE1_APPLETS:
        (root / "bin" / applet).symlink_to("busybox")
    moddir = ktree / "lib" / "modules" / release
    names: list[str] = []
    for rel in mods:
        src = moddir / rel
        name = src.name
        if name.endswith(".ko.xz"):
            name = name[: -len(".xz")]
            sh(["sh", "-c", f"xz -dc '{src}' > '{root / 'lib/modules' / name}'"])
        elif name.endswith(".ko.zst"):
            name = name[: -len(".zst")]
            sh(["zstd", "-qdf", src, "-o", root / "lib/modules" / name])
        else:
            shutil.copy2(src, root / "lib" / "modules" / name)
        names.append(name)
    write_file(root / "modules.list", "\n".join(names) + "\n")
    write_file(root / "init", STAGE1_INIT, 0o755)
    paths: list[str] = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(dirpath, root)
        paths.append(rel)
        paths.extend(os.path.normpath(Path(rel) / f) for f in sorted(files))
    cpio = subprocess.run(
        ["cpio", "--null", "-o", "-H", "newc", "--quiet", "-R", "0:0"],
        input=("\0".join(paths) + "\0").encode(),
        cwd=root,
        capture_output=True,
        env=system_env(),
        check=False,
    )
    if cpio.returncode != 0:
        raise LaneError(f"cpio failed: {cpio.stderr.decode(errors='replace')}")
    out.write_bytes(gzip.compress(cpio.stdout, compresslevel=6, mtime=0))
    log(f"stage-1 initramfs: {len(names)} modules, {human(out.stat().st_size)}")
    return len(names)


def debootstrap(root: Path, guest: Guest, debcache: Path, logfile: Path, mirror: str | None) -> None:
    remove_tree(root)
    debcache.mkdir(parents=True, exist_ok=True)
    sh(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join((*INCLUDE, *guest.extra))}",
            f"--cache-dir={debcache.resolve()}",
            guest.suite,
            root,
            *([] if mirror is None else [mirror]),
        ],
        logfile=logfile,
    )


def chroot(root: Path, *args: str, logfile: Path) -> None:
    sh(["chroot", root, *args], logfile=logfile)


def configure_units(etc: Path) -> None:
    """The bus generator and the modules-load drop-in (MODULES_LOAD_DROPIN).
    The image boots the suite's default bus (dbus-daemon); dbus-broker's
    postinst enables itself as the system bus (/etc/systemd/system/dbus.service),
    so that alias goes and the boot flag chooses (BUS_GENERATOR)."""
    alias = etc / "systemd" / "system" / "dbus.service"
    if alias.is_symlink() and "dbus-broker" in os.readlink(alias):
        alias.unlink()
        log("dbus-broker installed, not enabled: the image boots dbus-daemon unless vmlane.bus=dbus-broker")
    write_file(etc / "systemd" / "system-generators" / "vmlane-bus", BUS_GENERATOR, 0o755)
    write_file(etc / "systemd" / "system" / "systemd-modules-load.service.d" / "vmlane-tcg.conf", MODULES_LOAD_DROPIN)


def customise_rootfs(root: Path, ktree: Path, release: str, probe: Path, logfile: Path) -> None:
    etc = root / "etc"
    configure_units(etc)
    write_file(etc / "hostname", HOSTNAME + "\n")
    write_file(
        etc / "hosts",
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    )
    write_file(etc / "fstab", FSTAB)
    (root / "mnt" / "host").mkdir(parents=True, exist_ok=True)

    # Kernel modules: the closures only (the whole tree is 400 MB).
    src_moddir = ktree / "lib" / "modules" / release
    dst_moddir = root / "lib" / "modules" / release
    mods = module_closure(ktree, release, ROOTFS_MODULES, ROOTFS_OPTIONAL)
    for rel in mods:
        dst = dst_moddir / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src_moddir / rel, dst)
    for index in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        if (src_moddir / index).exists():
            shutil.copy2(src_moddir / index, dst_moddir / index)
    chroot(root, "depmod", "-a", release, logfile=logfile)
    log(f"root image: {len(mods)} kernel modules")

    # Users: root without password, tester (1000), member (1001).
    chroot(root, "passwd", "-d", "root", logfile=logfile)
    for uid, name in ((1000, "tester"), (1001, "member")):
        chroot(
            root,
            "useradd",
            "-m",
            "-u",
            str(uid),
            "-s",
            "/bin/bash",
            "-c",
            f"vmlane {name}",
            name,
            logfile=logfile,
        )

    system = etc / "systemd" / "system"
    write_file(system / "serial-getty@ttyS0.service.d" / "autologin.conf", GETTY_DROPIN)

    # Runner and stand-in display manager (enabled by hand: no systemctl here).
    unit_dir = root / UNIT_DIR
    write_file(unit_dir / "vmlane-runner.service", RUNNER_UNIT)
    write_file(root / "usr/local/sbin/vmlane-runner", RUNNER_SCRIPT, 0o755)
    write_file(unit_dir / "vmlane-dm.service", DM_UNIT)
    write_file(root / "usr/local/libexec/vmlane-dm", DM_SCRIPT, 0o755)
    symlink(
        f"/{UNIT_DIR}/vmlane-runner.service",
        system / "multi-user.target.wants" / "vmlane-runner.service",
    )
    symlink(f"/{UNIT_DIR}/vmlane-dm.service", system / "display-manager.service")
    symlink(
        f"/{UNIT_DIR}/vmlane-dm.service",
        system / "graphical.target.wants" / "vmlane-dm.service",
    )
    symlink("/lib/systemd/system/graphical.target", system / "default.target")
    for unit in MASKED_UNITS:
        symlink("/dev/null", system / unit)

    # The static KFD ioctl probe.
    dst = root / "usr/local/bin/kfd-ioctl-probe"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(probe, dst)
    dst.chmod(0o755)

    # Smaller image: no package cache, docs or man pages.
    chroot(root, "apt-get", "clean", logfile=logfile)
    for sub in ("usr/share/doc", "usr/share/man", "usr/share/info"):
        path = root / sub
        if path.is_dir():
            for child in path.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()


def make_image(root: Path, image: Path, logfile: Path) -> None:
    if image.exists():
        image.unlink()
    sh(
        ["mkfs.ext4", "-q", "-F", "-L", "kfdroot", "-d", root, image, IMAGE_SIZE],
        logfile=logfile,
    )


# <<< image recipe <<<
# --------------------------------------------------------------------------
# cache key


def recipe_text() -> str:
    lines = SELF.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index("# >>> image recipe >>>")
        end = lines.index("# <<< image recipe <<<")
    except ValueError as exc:
        raise LaneError("image recipe markers missing in vmlane.py") from exc
    return "\n".join(lines[start : end + 1])


def guest_named(name: str) -> Guest:
    for guest in GUESTS:
        if guest.name == name:
            return guest
    raise LaneError(f"no guest {name!r}; the guests are: {' '.join(g.name for g in GUESTS)}")


def image_guest(guest: Guest) -> Guest:
    """The row whose image GUEST boots (itself unless it is a boot-time variant)."""
    return guest_named(guest.image_name)


def image_dir(root: Path, guest: Guest) -> Path:
    return root / guest.image_name


def guest_apt(root: Path, guest: Guest, *, refresh: bool = False) -> Apt:
    """The host's apt for a suite it carries, else a private one in the image's cache."""
    if host_carries(guest.suite):
        return HOST_APT
    return private_apt(guest.suite, image_dir(root, guest) / "apt", refresh=refresh)


def compute_key(guest: Guest, kernel: KernelPkg) -> dict[str, object]:
    guest = image_guest(guest)
    parts: dict[str, object] = {
        "guest": guest.name,
        "kernel_package": kernel.package,
        "kernel_version": kernel.version,
        "suite": guest.suite,
        "mirror": archive_mirror(guest.suite) or "debootstrap's default",
        "include": [*INCLUDE, *guest.extra],
        "recipe_sha256": hashlib.sha256(recipe_text().encode()).hexdigest(),
        "probe_sha256": sha256_file(PROBE_SOURCE),
    }
    blob = json.dumps(parts, sort_keys=True).encode()
    parts["key"] = hashlib.sha256(blob).hexdigest()[:16]
    return parts


def stored_key(cache: Path) -> dict[str, object] | None:
    try:
        data = json.loads((cache / KEY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def cache_is_warm(cache: Path, key: dict[str, object], artefacts: tuple[str, ...] = ARTEFACTS) -> bool:
    """The stored key matches and every artefact is there (``artefacts``: an image kind's own, e.g. uefi.py's)."""
    stored = stored_key(cache)
    if stored is None or stored.get("key") != key["key"]:
        return False
    return all((cache / name).exists() for name in artefacts)


def key_difference(old: dict[str, object], new: dict[str, object]) -> str:
    diffs = [k for k in new if k != "key" and old.get(k) != new.get(k)]
    return ", ".join(diffs) if diffs else "unknown"


# --------------------------------------------------------------------------
# build


def selected_images(names: Sequence[str]) -> list[Guest]:
    """The image rows that the named guests boot (all of them by default), in table order."""
    wanted = {image_guest(guest_named(n)).name for n in names} if names else {g.image_name for g in GUESTS}
    return [g for g in GUESTS if g.name in wanted and not g.image]


def cmd_build(args: argparse.Namespace) -> int:
    root: Path = args.cache.resolve()
    cold = 0
    for guest in selected_images(args.guest):
        cache = image_dir(root, guest)
        t0 = time.monotonic()
        apt = guest_apt(root, guest)
        kernel = resolve_kernel(apt, guest.kernel)
        key = compute_key(guest, kernel)
        if args.check:
            warm = cache_is_warm(cache, key)
            log(f"{guest.name}: cache {'warm' if warm else 'cold'} (key {key['key']}, {kernel.package})")
            cold += 0 if warm else 1
            continue
        with cache_lock(root):
            if not args.force and cache_is_warm(cache, key):
                log(
                    f"{guest.name}: cache warm: key {key['key']} ({kernel.package} {kernel.version}); "
                    f"nothing to build ({fmt_s(time.monotonic() - t0)})"
                )
                continue
            old = stored_key(cache)
            if old is not None:
                log(f"{guest.name}: cache stale: {key_difference(old, key)} changed")
            if os.geteuid() != 0:
                raise LaneError("build needs root (debootstrap, chroot, mkfs.ext4 -d)")
            check_host_tools()
            build(cache, guest, apt, kernel, key, keep_work=args.keep_work)
    return 1 if cold else 0


def build(cache: Path, guest: Guest, apt: Apt, kernel: KernelPkg, key: dict[str, object], *, keep_work: bool) -> None:
    steps = Steps()
    (cache / KEY_FILE).unlink(missing_ok=True)
    work = cache / "work"
    logs = cache / "logs"
    remove_tree(work)
    work.mkdir(parents=True)
    logs.mkdir(exist_ok=True)
    logfile = logs / "build.log"
    logfile.write_text(f"vmlane build {time.strftime('%F %T')} key {key['key']}\n")
    log(f"building {guest.name} ({guest.suite}): {kernel.package} {kernel.version}, key {key['key']}; log {logfile}")
    ktree = work / "kernel"
    root = work / "rootfs"
    out = work / "out"
    out.mkdir()

    with steps.step("kernel download"):
        try:
            deb = fetch_kernel(kernel, cache / "debs" / "kernel", apt)
        except LaneError:
            log("download failed; apt-get update and one more try")
            if apt == HOST_APT:
                sh(["apt-get", "update", "-qq"])
            else:
                apt = guest_apt(cache.parent, guest, refresh=True)
            newer = resolve_kernel(apt, guest.kernel)
            if newer != kernel:
                raise LaneError(f"the kernel moved to {newer.package} {newer.version}; run build again") from None
            deb = fetch_kernel(kernel, cache / "debs" / "kernel", apt)
    with steps.step("kernel unpack"):
        unpack_kernel(deb, kernel, ktree)
        for option in ("CONFIG_HSA_AMD", "CONFIG_DRM_AMDGPU"):
            log(f"{option}={config_value(ktree, kernel.release, option)}")
        shutil.copy2(ktree / "boot" / f"vmlinuz-{kernel.release}", out / VMLINUZ)
    with steps.step("probe"):
        sh(
            [
                "gcc",
                "-static",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-o",
                out / PROBE_BIN,
                PROBE_SOURCE,
            ],
            logfile=logfile,
        )
    with steps.step("stage-1 initramfs"):
        build_stage1(ktree, kernel.release, work, out / INITRD)
    with steps.step("debootstrap"):
        debootstrap(root, guest, cache / "debs" / "debootstrap", logfile, archive_mirror(guest.suite))
    with steps.step("customise"):
        customise_rootfs(root, ktree, kernel.release, out / PROBE_BIN, logfile)
        record_packages(root, out, key)
    with steps.step("image"):
        make_image(root, out / ROOTFS, logfile)
    with steps.step("install + clean up"):
        for name in ARTEFACTS:
            (out / name).replace(cache / name)
        write_file(cache / KEY_FILE, json.dumps(key, indent=1) + "\n")
        if not keep_work:
            remove_tree(work)
    log(steps.summary())
    report_cache(cache)


def record_packages(root: Path, out: Path, key: dict[str, object]) -> None:
    """The image's package list and build key, in the artefacts and inside the image."""
    pkgs = subprocess.run(
        ["chroot", str(root), "dpkg-query", "-W", "-f=${Package} ${Version}\n"],
        capture_output=True,
        text=True,
        env=system_env(),
        check=True,
    ).stdout
    write_file(out / PACKAGES_TXT, pkgs)
    info = {**key, "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    write_file(root / "etc" / "vmlane-image.json", json.dumps(info, indent=1) + "\n")
    used = dir_size(root)
    log(f"root tree {human(used)}, {len(pkgs.splitlines())} packages")


def report_cache(cache: Path) -> None:
    rows: list[str] = []
    for name in ARTEFACTS:
        path = cache / name
        if path.exists():
            st = path.stat()
            rows.append(f"{name} {human(st.st_blocks * 512)}")
    for sub in ("debs", "work"):
        if (cache / sub).exists():
            rows.append(f"{sub}/ {human(dir_size(cache / sub))}")
    log(f"cache {cache}: {', '.join(rows)}; total {human(dir_size(cache))} on disk")


# --------------------------------------------------------------------------
# run


def kvm_usable() -> bool:
    """KVM only if /dev/kvm is usable, kvm_intel/kvm_amd loaded and vmx/svm
    advertised (a paravirtualised kvm_pvm hangs a stock kernel)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    if not any(Path(f"/sys/module/{m}").exists() for m in ("kvm_intel", "kvm_amd")):
        return False
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return False
    return re.search(r"^flags\s*:.*\b(vmx|svm)\b", cpuinfo, re.M) is not None


def accel_args(choice: str) -> tuple[list[str], str]:
    if choice == "kvm" or (choice == "auto" and kvm_usable()):
        return ["-accel", "kvm", "-cpu", "host"], "kvm"
    return ["-accel", "tcg", "-cpu", "max"], "tcg"


def qemu_argv(cache: Path, share: Path, accel: list[str], cmdline: str, drive: str, *, interactive: bool) -> list[str]:
    for p in (cache, share):
        if "," in str(p):
            raise LaneError(f"QEMU cannot take a path with a comma: {p}")
    return [
        "qemu-system-x86_64",
        *accel,
        "-smp",
        "2",
        "-m",
        "2048",
        "-M",
        "q35",
        "-nographic",
        "-nodefaults",
        *([] if interactive else ["-no-reboot"]),
        "-serial",
        "mon:stdio" if interactive else "stdio",
        "-kernel",
        str(cache / VMLINUZ),
        "-initrd",
        str(cache / INITRD),
        "-drive",
        drive,
        "-virtfs",
        f"local,path={share},mount_tag=host,security_model=none,id=host",
        "-append",
        cmdline,
    ]


class SerialWatcher(threading.Thread):
    """Copies one QEMU process's serial output to serial.log (and our stdout)
    and tracks the guest's markers."""

    def __init__(self, stream: IO[bytes], logpath: Path, echo: TextIO | None, t0: float) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.logpath = logpath
        self.echo = echo
        self.t0 = t0
        self.lock = threading.Lock()
        self.runner_at: float | None = None
        self.running_at: float | None = None
        self.system_state = ""
        self.reboot_requested = False
        self.end_status: int | None = None
        self.panic = ""
        self.last_kernel_line = ""
        # An oops's "Modules linked in:" with nothing after it: no module was loaded when the kernel died.
        self.no_modules_linked = False

    def run(self) -> None:
        with self.logpath.open("ab") as logf:
            for raw in iter(self.stream.readline, b""):
                logf.write(raw)
                logf.flush()
                line = ANSI_RE.sub("", raw.decode("utf-8", "replace")).replace("\r", "")
                line = line.rstrip("\n")
                if self.echo is not None and line.strip():
                    self.echo.write(f"guest| {line}\n")
                    self.echo.flush()
                self.parse(line)

    def parse(self, line: str) -> None:
        now = time.monotonic() - self.t0
        with self.lock:
            if line.startswith(MARK_RUNNER):
                if self.runner_at is None:
                    self.runner_at = now
            elif line.startswith(MARK_STATE):
                if self.running_at is None:
                    self.running_at = now
                    words = line.split()
                    self.system_state = words[1] if len(words) > 1 else ""
            elif line.startswith(MARK_REBOOT):
                self.reboot_requested = True
            elif line.startswith(MARK_END):
                m = re.search(r"status=(\d+)", line)
                if m:
                    self.end_status = int(m.group(1))
            else:
                self.parse_kernel(line)

    def parse_kernel(self, line: str) -> None:
        """The kernel's own lines: its panic, an oops's module list, the last line it printed."""
        if "Kernel panic" in line and not self.panic:
            self.panic = line.strip()
        elif re.search(r"\bModules linked in:\s*$", line):
            self.no_modules_linked = True
        elif re.match(r"\[\s*\d+\.\d+\] ", line):
            self.last_kernel_line = line.strip()


@dataclasses.dataclass
class Attempt:
    status: int | None = None  # scenario exit status, if it came back
    runner_started: bool = False
    infra_reason: str = ""
    boot_s: list[float] = dataclasses.field(default_factory=list)  # QEMU start -> runner
    running_s: float | None = None  # first boot: QEMU start -> system running
    system_state: str = ""
    wall_s: float = 0.0
    boots: int = 0
    attempt: int = 1  # 2: the first attempt was an infrastructure failure (retried once)
    retried_because: str = ""  # that first attempt's infra_reason
    # The last boot died in the core kernel (a panic, no module loaded) before its runner started: under TCG
    # that is QEMU's or the kernel's own doing (an int3 oops while it patched its text, 6.12 on trixie), never
    # the scenario's, which acts through modules, their options and userspace.
    core_panic_before_runner: bool = False

    @property
    def infra_failure(self) -> bool:
        return self.status is None and (not self.runner_started or self.core_panic_before_runner)


def note_boot(att: Attempt, watcher: SerialWatcher) -> None:
    """What one boot's console says about the attempt: the runner reached, the core kernel dead before it."""
    if watcher.runner_at is not None:
        att.runner_started = True
        att.boot_s.append(watcher.runner_at)
    att.core_panic_before_runner = bool(watcher.panic) and watcher.no_modules_linked and watcher.runner_at is None


def prepare_share(share: Path, debs: Sequence[Path], scenario: Path | None) -> None:
    test = share / "test.sh"
    if scenario is not None:
        share.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(scenario, test)
        # Helpers the scenarios source (`. ./lib.sh`), from beside the scenario.
        lib = scenario.parent / SCENARIO_LIB
        if lib.is_file() and scenario.resolve() != lib.resolve():
            shutil.copyfile(lib, share / SCENARIO_LIB)
    if not test.is_file():
        raise LaneError(f"{test} missing: the caller writes the scenario there")
    test.chmod(test.stat().st_mode | 0o755)
    clear_outputs(share)
    debdir = share / "debs"
    if debdir.exists():
        shutil.rmtree(debdir)
    if debs:
        debdir.mkdir()
        for deb in debs:
            if not deb.is_file() or deb.suffix != ".deb":
                raise LaneError(f"not a .deb file: {deb}")
            shutil.copy2(deb, debdir / deb.name)


def clear_outputs(share: Path) -> None:
    for name in OUTPUT_FILES:
        (share / name).unlink(missing_ok=True)


def qemu_boot(
    argv: list[str], serial_log: Path, echo: TextIO | None, deadline: float, boot_timeout: float
) -> tuple[SerialWatcher, str]:
    """One QEMU process (one guest boot).  Returns the watcher and why we had
    to stop QEMU ("" when it exited by itself with rc 0)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=system_env(),
    )
    assert proc.stdout is not None
    watcher = SerialWatcher(proc.stdout, serial_log, echo, t0)
    watcher.start()
    reason = ""
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.5)
                if rc != 0:
                    reason = f"QEMU exited with rc {rc}"
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if now > deadline:
                reason = "timed out"
                break
            if watcher.runner_at is None and now - t0 > boot_timeout:
                reason = f"runner did not start within {boot_timeout:.0f} s of QEMU start"
                break
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        watcher.join(timeout=10)
    return watcher, reason


def run_attempt(cache: Path, share: Path, args: argparse.Namespace, accel: list[str], cmdline: str) -> Attempt:
    """Boot until the runner reports an exit status.  A test.sh exit 200 makes
    the runner reboot: QEMU (-no-reboot) exits and we boot a fresh QEMU on the
    same per-run overlay (faster than a TCG warm reset)."""
    att = Attempt()
    serial_log = share / "serial.log"
    echo = None if args.quiet else sys.stdout
    t_start = time.monotonic()
    deadline = t_start + args.timeout
    with tempfile.TemporaryDirectory(prefix="vmlane-run-") as tmp:
        overlay = Path(tmp) / "overlay.qcow2"
        # args.boot_hook: a guest with its own disk and firmware (vm/uefi.py's UefiGuest); None: the table's.
        hook = getattr(args, "boot_hook", None)
        base = cache / ROOTFS if hook is None else hook.base_image(cache)
        sh(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, overlay])
        drive = f"file={overlay},format=qcow2,if=virtio"
        if hook is None:
            argv = qemu_argv(cache, share, accel, cmdline, drive, interactive=False)
        else:
            argv = hook.qemu_argv(share, accel, Path(tmp), overlay)
        reason = ""
        watcher: SerialWatcher | None = None
        for boot in range(1, MAX_BOOTS + 1):
            if boot > 1:
                with serial_log.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n==== vmlane: boot {boot}: fresh QEMU on the same overlay ====\n")
                log(f"guest asked for a reboot: boot {boot}")
            watcher, reason = qemu_boot(argv, serial_log, echo, deadline, args.boot_timeout)
            att.boots = boot
            note_boot(att, watcher)
            if boot == 1 and watcher.running_at is not None:
                att.running_s = watcher.running_at
                att.system_state = watcher.system_state
            if reason or not watcher.reboot_requested or watcher.end_status is not None:
                break
        settle_status(att, share, watcher, reason, args.timeout)
    att.wall_s = time.monotonic() - t_start
    return att


def settle_status(att: Attempt, share: Path, watcher: SerialWatcher | None, reason: str, timeout: float) -> None:
    """The guest's exit status (the file it wrote, else what the console said), or why there is none."""
    status_file = share / "exit-status"
    if status_file.exists():
        with contextlib.suppress(ValueError):
            att.status = int(status_file.read_text().strip())
    if att.status is None and watcher is not None and watcher.end_status is not None:
        att.status = watcher.end_status
    if att.status is None and watcher is not None:
        if reason == "timed out":
            reason = f"timed out after {timeout} s"
        elif not reason:
            reason = "the guest stopped without an exit status"
        if watcher.panic:
            reason += f" ({watcher.panic})"
        elif watcher.last_kernel_line:
            reason += f"; last kernel line: {watcher.last_kernel_line}"
        att.infra_reason = reason


def print_tails(share: Path, lines: int) -> None:
    result = share / "result.txt"
    if result.exists():
        fails = [ln for ln in result.read_text(errors="replace").splitlines() if ln.startswith("not ok")]
        if fails:
            print("---- failed checks (result.txt) ----")
            print("\n".join(fails))
    journal = share / "journal.txt"
    if journal.exists():
        print(f"---- last {lines} lines of the guest journal ({journal}) ----")
        print(tail_text(journal, lines))
    else:
        print("---- no journal.txt (the guest runner did not finish) ----")
    serial = share / "serial.log"
    if serial.exists():
        text = ANSI_RE.sub("", serial.read_text(errors="replace")).replace("\r", "")
        all_lines = [ln for ln in text.splitlines() if ln.strip()]
        panics = [i for i, ln in enumerate(all_lines) if "Kernel panic" in ln]
        if panics:
            first = panics[0]
            print("---- serial console before the kernel panic ----")
            print("\n".join(all_lines[max(0, first - 10) : first + 1]))
        tail = all_lines[-lines:]
        print(f"---- last {lines} lines of the serial console ({serial}) ----")
        print("\n".join(tail))
    print("---- end ----", flush=True)


def describe(att: Attempt) -> str:
    parts = []
    if att.boot_s:
        parts.append("runner started " + " / ".join(fmt_s(b) for b in att.boot_s))
    if att.running_s is not None:
        parts.append(f"system '{att.system_state}' at {fmt_s(att.running_s)}")
    parts.append(f"{att.boots} boot(s), wall {fmt_s(att.wall_s)}")
    return ", ".join(parts)


def cmd_run(args: argparse.Namespace) -> int:
    return run_lane(args)[0]


def check_image_and_tools(root: Path, guest: Guest) -> None:
    """A built image (a stale one only warns) and QEMU, or LaneError saying what to run."""
    cache = image_dir(root, guest)
    missing = [n for n in ARTEFACTS if not (cache / n).exists()]
    if missing or stored_key(cache) is None:
        raise LaneError(f"no built image in {cache}; run: {SELF} build --guest {guest.image_name}")
    with contextlib.suppress(LaneError):
        current = compute_key(guest, resolve_kernel(guest_apt(root, guest), guest.kernel))
        old = stored_key(cache) or {}
        if old.get("key") != current["key"]:
            log(f"warning: cached image is stale ({key_difference(old, current)} changed); run `{SELF.name} build`")
    for tool in ("qemu-system-x86_64", "qemu-img"):
        if shutil.which(tool, path=SYSTEM_PATH) is None:
            raise LaneError(f"{tool} missing; run: {SELF} host-deps")


def run_lane(args: argparse.Namespace) -> tuple[int, Attempt]:
    """One `run`: boot (retried once on an infrastructure failure), install,
    run test.sh; returns the exit status and the last attempt."""
    root: Path = args.cache.resolve()
    guest = guest_named(args.guest)
    cache = image_dir(root, guest)
    share: Path = args.share.resolve()
    t_all = time.monotonic()
    hook = getattr(args, "boot_hook", None)  # vm/uefi.py: its disk is in root itself, checked by the hook
    if hook is None:
        check_image_and_tools(root, guest)
    else:
        cache = root
        hook.check(root)
    debs = [Path(d).resolve() for d in args.deb]
    accel, accel_name = accel_args(args.accel)
    guest_timeout = max(60, args.timeout - 150)
    cmdline = " ".join(
        [
            "console=ttyS0",
            "root=/dev/vda",
            "panic=-1",
            # A loaded host (load 6-9 on 2 CPUs) made 6.1's IO-APIC timer check fail under
            # TCG: "Kernel panic - not syncing: IO-APIC + timer doesn't work!" (retried as an
            # infrastructure failure). The check is for broken hardware timers, not QEMU's.
            "no_timer_check",
            "quiet",
            RUN_FLAG,
            f"vmlane.timeout={guest_timeout}",
            f"{BUS_FLAG}={guest.bus}",
            *args.cmdline_extra,
        ]
    )
    with cache_lock(root):
        prepare_share(share, debs, args.scenario)
        log(
            f"booting {guest.name} ({accel_name}, 2 vCPU, 2 GiB, throw-away overlay) share {share}, "
            f"{len(debs)} .deb, timeout {args.timeout} s (test.sh {guest_timeout} s)"
        )
        att = Attempt()
        first_reason = ""
        for attempt in (1, 2):
            if attempt == 2:
                first_reason = att.infra_reason
                clear_outputs(share)
                log("infrastructure failure: retrying once")
            att = run_attempt(cache, share, args, accel, cmdline)
            att.attempt, att.retried_because = attempt, first_reason
            log(f"attempt {attempt}: {describe(att)}")
            if not att.infra_failure:
                break
            log(f"attempt {attempt}: INFRASTRUCTURE FAILURE: {att.infra_reason}")
            print_tails(share, args.tail)
    total = time.monotonic() - t_all
    if att.infra_failure:
        log(f"infrastructure failure twice; giving up (whole run {fmt_s(total)})")
        return EXIT_INFRA, att
    boot = fmt_s(att.boot_s[0]) if att.boot_s else "?"
    if att.status is None:
        log(f"SCENARIO FAILURE: no exit status: {att.infra_reason}; not retried")
        print_tails(share, args.tail)
        log(f"boot {boot}, whole run {fmt_s(total)}, exit {EXIT_NO_STATUS}")
        return EXIT_NO_STATUS, att
    if att.status != 0:
        log(f"SCENARIO FAILURE: exit status {att.status}; not retried")
        print_tails(share, args.tail)
    else:
        log("scenario passed")
    log(f"boot {boot} (QEMU start -> runner), whole run {fmt_s(total)}, exit {att.status}; outputs in {share}")
    return att.status, att


# A guest runs one chain of scenarios: `suite` writes this driver as test.sh
# and copies the scenarios (and lib.sh) beside it. Installing the package and
# booting cost ~40 s under TCG, so scenarios that can share a guest do.
CHAIN_SCRIPT = """#!/bin/bash
# vmlane chain (written by vmlane.py suite): runs the scenarios below one after
# the other in this guest. A scenario that exits 200 gets a reboot and runs
# again with its own VMLANE_BOOT; the next one starts when it has finished.
# Exit status: 0 if every scenario exited 0, else 1 (200 to reboot).
set -u
cd "$(dirname "$0")" || exit 1
state=/var/lib/vmlane-chain
mkdir -p "$state"
all=0
for name in @SCENARIOS@; do
    if [ -e "$state/$name.status" ]; then
        [ "$(cat "$state/$name.status")" = 0 ] || all=1
        continue
    fi
    boot=$(( $(cat "$state/$name.boot" 2>/dev/null || echo 0) + 1 ))
    echo "$boot" >"$state/$name.boot"
    echo "# vmlane-chain: begin $name boot $boot"
    t0=$(date +%s%N)
    VMLANE_BOOT=$boot bash "./$name.sh" </dev/null
    rc=$?
    echo "# vmlane-chain: end $name boot $boot status $rc ms $(( ($(date +%s%N) - t0) / 1000000 ))"
    if [ "$rc" = 200 ]; then
        exit 200
    fi
    echo "$rc" >"$state/$name.status"
    [ "$rc" = 0 ] || all=1
done
exit "$all"
"""
CHAIN_BEGIN_RE = re.compile(r"^# vmlane-chain: begin (\S+) boot (\d+)")
CHAIN_END_RE = re.compile(r"^# vmlane-chain: end (\S+) boot (\d+) status (\d+) ms (\d+)")


@dataclasses.dataclass
class ScenarioResult:
    name: str
    chain: str
    guest: str = ""
    status: int | None = None  # None: it never finished (the guest's run did not)
    guest_s: float = 0.0  # time inside the guest, all its boots
    boots: int = 0
    tap: list[str] = dataclasses.field(default_factory=list)
    # Why its guest's first attempt failed, when the result is the retry's: a
    # guest that had to be booted twice is reported as such, not as a clean pass.
    retried_because: str = ""
    # The boot a scenario asked for (status 200 at the end of the one before) and that has not begun.
    awaited_boot: int = 0

    @property
    def passed(self) -> int:
        return sum(1 for ln in self.tap if ln.startswith("ok "))

    @property
    def todo(self) -> int:  # "not ok ... # TODO": a known, reported bug, not a failure
        return sum(1 for ln in self.tap if ln.startswith("not ok ") and "# TODO" in ln)

    @property
    def todo_passing(self) -> int:  # "ok ... # TODO": the bug is gone, the marker can go
        return sum(1 for ln in self.tap if ln.startswith("ok ") and "# TODO" in ln)

    @property
    def failing(self) -> list[str]:  # the "not ok" lines that are not known, reported bugs
        return [ln for ln in self.tap if ln.startswith("not ok ") and "# TODO" not in ln]

    @property
    def failed(self) -> int:
        return len(self.failing)

    @property
    def verdict(self) -> str:
        if self.status == 0 and self.failed == 0 and self.passed > 0:
            return "PASS"
        return "FAIL"

    @property
    def why(self) -> str:
        """Why the verdict is FAIL, in a few words for the closing lines (CI keeps only a run's tail)."""
        if self.status is None:
            if self.awaited_boot:
                return f"boot {self.awaited_boot}, which boot {self.boots} asked for, left nothing in result.txt"
            if not self.boots:
                return "it never began: result.txt has no begin marker for it"
            return f"boot {self.boots} left no end marker in result.txt (the guest's run stopped, or a write was lost)"
        if self.status != 0:
            return f"exit {self.status}"
        if failing := self.failing:
            more = f" and {len(failing) - 1} more" if len(failing) > 1 else ""
            return f"{failing[0][:120]}{more}"
        return "" if self.passed else "no check passed"


TAP_RE = re.compile(r"^(ok \d+|not ok \d+|# |1\.\.\d+)")


def split_chain(result: Path, names: Sequence[str], chain: str) -> list[ScenarioResult]:
    """Each scenario's TAP lines, status, boots and time from the chain's result.txt."""
    results = {name: ScenarioResult(name, chain) for name in names}
    current: ScenarioResult | None = None
    text = result.read_text(errors="replace") if result.exists() else ""
    for line in text.splitlines():
        if m := CHAIN_BEGIN_RE.match(line):
            current = results.get(m.group(1))
            if current is not None:
                current.boots, current.awaited_boot = int(m.group(2)), 0
            continue
        if m := CHAIN_END_RE.match(line):
            done = results.get(m.group(1))
            if done is not None:
                done.guest_s += int(m.group(4)) / 1000
                if m.group(3) != "200":
                    done.status = int(m.group(3))
                else:
                    done.awaited_boot = int(m.group(2)) + 1
            current = None
            continue
        if current is not None and TAP_RE.match(line):
            current.tap.append(line)
    return [results[name] for name in names]


def print_service_journal(share: Path, limit: int) -> None:
    """kfdguard's own lines from the guest journals of every boot of the run."""
    for name in ("journal-boot1.txt", "journal-boot2.txt", "journal-boot3.txt", "journal.txt"):
        path = share / name
        if not path.exists():
            continue
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if "kfdguard" in ln or " python3[" in ln]
        print(f"---- kfdguard in the guest journal ({name}, last {limit} of {len(lines)} lines) ----")
        print("\n".join(lines[-limit:]))


def ensure_image(root: Path, guest: Guest) -> str:
    """Build GUEST's image if its cache is cold or stale; says which it was."""
    guest = image_guest(guest)
    cache = image_dir(root, guest)
    apt = guest_apt(root, guest)
    kernel = resolve_kernel(apt, guest.kernel)
    key = compute_key(guest, kernel)
    if cache_is_warm(cache, key):
        return f"warm (key {key['key']}, {kernel.package} {kernel.version})"
    with cache_lock(root):
        if cache_is_warm(cache, key):
            return f"warm (key {key['key']})"
        old = stored_key(cache)
        why = f"stale: {key_difference(old, key)} changed" if old is not None else "cold"
        if os.geteuid() != 0:
            raise LaneError(f"the image cache is {why} and building needs root (debootstrap, chroot)")
        check_host_tools()
        log(f"{guest.name}: image cache {why}: building")
        build(cache, guest, apt, kernel, key, keep_work=False)
    return f"built ({why})"


def parse_chains(specs: Sequence[str], directory: Path) -> list[list[Path]]:
    """'boot+coldplug' -> [directory/boot.sh, directory/coldplug.sh]; a path to a .sh is one scenario."""
    chains: list[list[Path]] = []
    for spec in specs:
        chain: list[Path] = []
        for part in spec.split("+"):
            path = Path(part) if part.endswith(".sh") else directory / f"{part}.sh"
            if not path.is_file():
                raise LaneError(f"no scenario {path}")
            if not re.fullmatch(r"[A-Za-z0-9_.-]+\.sh", path.name) or path.name in ("test.sh", SCENARIO_LIB):
                raise LaneError(f"unusable scenario name {path.name}")
            chain.append(path)
        chains.append(chain)
    names = [p.stem for chain in chains for p in chain]
    if len(set(names)) != len(names):
        raise LaneError(f"a scenario is named twice: {' '.join(names)}")
    return chains


# A scenario whose header has this line gets a guest without the package: the
# .debs are offered (SHARE/offered/) instead of installed, for a scenario that
# installs, upgrades and purges them itself (purge.sh).
NO_INSTALL_LINE = "# vmlane: install=no"


def has_header_line(scenario: Path, line: str) -> bool:
    head = scenario.read_text(encoding="utf-8", errors="replace").splitlines()[:30]
    return line in head


def chains_for(guest: Guest, chains: Sequence[Sequence[Path]]) -> list[list[Path]]:
    """The chains a guest runs: all, or (a row with `only`) the scenarios whose
    header has "# vmlane: <only>", each chain keeping its order; empty chains go."""
    if not guest.only:
        return [list(c) for c in chains]
    tag = f"# vmlane: {guest.only}"
    kept = [[p for p in chain if has_header_line(p, tag)] for chain in chains]
    return [c for c in kept if c]


def wants_install(chain: Sequence[Path]) -> bool:
    for scenario in chain:
        head = scenario.read_text(encoding="utf-8", errors="replace").splitlines()[:30]
        if NO_INSTALL_LINE in head:
            if len(chain) > 1 and scenario != chain[0]:
                raise LaneError(f"{scenario.name} needs a guest without the package: put it first in its chain")
            return False
    return True


def prepare_chain(share: Path, chain: Sequence[Path], offered: Sequence[Path] = ()) -> None:
    """The chain's scenarios, lib.sh, debian/tests/ (autopkgtest.sh runs it) and
    the offered files (SHARE/offered/, not installed) in a fresh share."""
    remove_tree(share)
    share.mkdir(parents=True)
    tests = REPO / "debian" / "tests"
    if tests.is_dir():
        shutil.copytree(tests, share / "debian-tests")
    if offered:
        (share / "offered").mkdir()
        for path in offered:
            shutil.copy2(path, share / "offered" / path.name)
    for scenario in chain:
        shutil.copyfile(scenario, share / scenario.name)
        lib = scenario.parent / SCENARIO_LIB
        if lib.is_file():
            shutil.copyfile(lib, share / SCENARIO_LIB)
    names = " ".join(p.stem for p in chain)
    write_file(share / "test.sh", CHAIN_SCRIPT.replace("@SCENARIOS@", names), 0o755)


def cmd_suite(args: argparse.Namespace) -> int:
    """Every guest of the table (or those named), each chain in its own boot of
    that guest, one guest at a time (2 CPUs: parallel guests only compete)."""
    t_all = time.monotonic()
    root: Path = args.cache.resolve()
    share_root: Path = args.share_root.resolve()
    chains = parse_chains(args.scenarios, args.dir)
    guests = [guest_named(n) for n in args.guest] if args.guest else list(GUESTS)
    for deb in (*args.deb, *args.offer):
        if not Path(deb).is_file():
            raise LaneError(f"no file {deb}; build it first (make deb)")
    results: list[ScenarioResult] = []
    runs: list[GuestRun] = []
    images: list[tuple[str, str, float]] = []  # image row, what ensure_image said, time
    selected = {g.name: [p.stem for c in chains_for(g, chains) for p in c] for g in guests}
    for guest in guests:
        if guest.image_name not in (name for name, _, _ in images):
            t = time.monotonic()
            image = ensure_image(root, guest)
            images.append((guest.image_name, image, time.monotonic() - t))
            log(f"image {guest.image_name}: {image} in {fmt_s(images[-1][2])}")
        guest_chains = chains_for(guest, chains)
        print(
            f"======== {guest.name}: {guest.what}; {len(guest_chains)} chain(s), a fresh guest each ========",
            flush=True,
        )
        for i, chain in enumerate(guest_chains, 1):
            run, chain_results = run_chain(args, root, share_root, guest, chain, f"{i}/{len(guest_chains)}")
            runs.append(run)
            results.extend(chain_results)
    return print_summary(args, guests, selected, results, runs, images, time.monotonic() - t_all, share_root)


@dataclasses.dataclass
class GuestRun:
    guest: str
    chain: str
    status: int
    boots: int
    wall_s: float
    retried_because: str = ""  # non-empty: the first attempt was an infrastructure failure


def run_chain(
    args: argparse.Namespace, root: Path, share_root: Path, guest: Guest, chain: Sequence[Path], count: str
) -> tuple[GuestRun, list[ScenarioResult]]:
    """One chain in a fresh boot of GUEST; its scenarios' TAP lines printed with guest/scenario in front."""
    label = "+".join(p.stem for p in chain)
    share = share_root / guest.name / label
    install = wants_install(chain)
    debs = list(args.deb) if install else []
    offered = [Path(f) for f in (*args.offer, *([] if install else args.deb))]
    prepare_chain(share, chain, offered)
    print(f"======== {guest.name} {count}: {label} ========", flush=True)
    run_args = argparse.Namespace(
        cache=root,
        guest=guest.name,
        share=share,
        scenario=None,
        deb=debs,
        accel=args.accel,
        cmdline_extra=[],
        timeout=args.timeout,
        boot_timeout=args.boot_timeout,
        tail=args.tail,
        quiet=not args.verbose,
    )
    t = time.monotonic()
    status, att = run_lane(run_args)
    wall = time.monotonic() - t
    chain_results = split_chain(share / "result.txt", [p.stem for p in chain], label)
    for r in chain_results:
        r.guest = guest.name
        r.retried_because = att.retried_because
        if r.status is None:
            r.status = status if status != 0 else EXIT_NO_STATUS
        print("\n".join(f"{guest.name}/{r.name}| {ln}" for ln in r.tap))
        print(
            f"---- {guest.name}/{r.name}: {r.verdict} (exit {r.status}), {r.passed} ok, {r.failed} not ok, "
            f"{r.todo} known bug(s) (TODO), {r.boots} boot(s), {fmt_s(r.guest_s)} in the guest",
            flush=True,
        )
    if any(r.verdict != "PASS" for r in chain_results) or status != 0:
        print_service_journal(share, args.tail)
    retry = f", second attempt (the first: {att.retried_because})" if att.attempt > 1 else ""
    print(
        f"======== {guest.name} {label}: exit {status}, {att.boots} boot(s){retry}, {fmt_s(wall)} ========",
        flush=True,
    )
    return GuestRun(guest.name, label, status, att.boots, wall, att.retried_because), chain_results


def matrix_cell(result: ScenarioResult | None) -> str:
    if result is None:
        return "-"
    if result.verdict != "PASS":
        return "FAIL"
    cell = f"TODO {result.todo}" if result.todo else "pass"
    # A pass on the second attempt is not a clean pass: the first boot failed.
    return cell + "*" if result.retried_because else cell


def print_matrix(guests: Sequence[Guest], selected: dict[str, list[str]], results: Sequence[ScenarioResult]) -> None:
    """guest x scenario: pass, FAIL, TODO n (passed, n checks a known bug fails), - (not this guest's)."""
    names: list[str] = []
    for guest in guests:
        names.extend(n for n in selected[guest.name] if n not in names)
    by_key = {(r.guest, r.name): r for r in results}
    width = max([len(g.name) for g in guests] + [5])
    cols = [max(len(n), 6) for n in names]
    print(
        "\nmatrix (guest x scenario): pass, FAIL, TODO n = passed with n checks marked TODO (known bug), - = not run,"
        " * = only on the second attempt, after an infrastructure failure (not a clean pass)"
    )
    print("  " + " " * width + "  " + "  ".join(n.ljust(w) for n, w in zip(names, cols, strict=True)))
    for guest in guests:
        cells = [matrix_cell(by_key.get((guest.name, n))) for n in names]
        print("  " + guest.name.ljust(width) + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, cols, strict=True)))


def print_failures(results: list[ScenarioResult], share_root: Path) -> list[str]:
    """The scenarios that did not pass, each with why (the closing lines are what CI keeps)."""
    bad = {f"{r.guest}/{r.name}": r.why for r in results if r.verdict != "PASS"}
    if bad:
        log(f"FAILED: {', '.join(bad)}; outputs (result.txt, journal.txt, serial.log) in {share_root}")
        for label, why in bad.items():
            log(f"  {label}: {why}")
    return list(bad)


def print_summary(
    args: argparse.Namespace,
    guests: Sequence[Guest],
    selected: dict[str, list[str]],
    results: list[ScenarioResult],
    runs: list[GuestRun],
    images: list[tuple[str, str, float]],
    total: float,
    share_root: Path,
) -> int:
    """The suite's table, the matrix and the closing lines; 1 when a scenario did not pass."""
    print("\nvmlane suite summary")
    print(f"  {'guest/scenario':<30} {'result':<6} {'ok':>4} {'not ok':>6} {'TODO':>4} {'boots':>5} {'in guest':>9}")
    for r in results:
        counts = f"{r.passed:>4} {r.failed:>6} {r.todo:>4}"
        print(f"  {r.guest + '/' + r.name:<30} {r.verdict:<6} {counts} {r.boots:>5} {fmt_s(r.guest_s):>9}")
    for run in runs:
        retry = f"; RETRIED, the first attempt: {run.retried_because}" if run.retried_because else ""
        print(
            f"  {run.guest} {run.chain}: exit {run.status}, {run.boots} boot(s), {fmt_s(run.wall_s)}"
            f" (QEMU, install, scenarios){retry}"
        )
    for guest in guests:
        spent = sum(run.wall_s for run in runs if run.guest == guest.name)
        boots = sum(run.boots for run in runs if run.guest == guest.name)
        print(f"  guest {guest.name}: {fmt_s(spent)}, {boots} boot(s)")
    for name, image, image_s in images:
        print(f"  image {name} {image}: {fmt_s(image_s)}")
    print_matrix(guests, selected, results)
    todo = sum(r.todo for r in results)
    if todo:
        print(f"  {todo} check(s) marked TODO fail because of known, reported kfdguard bugs (see their lines)")
    passing = sum(r.todo_passing for r in results)
    if passing:
        print(f"  {passing} check(s) marked TODO pass now: remove their markers")
    print(f"  images and guests: {fmt_s(total)}")
    if args.lane_start is not None:
        lane = time.time() - args.lane_start
        over = f" (over the {args.budget} s budget)" if lane > args.budget else f" (budget {args.budget} s)"
        print(f"  the whole lane (.deb, images, guests): {fmt_s(lane)}{over}")
    bad = print_failures(results, share_root)
    print(f"vmlane suite: {len(results) - len(bad)} of {len(results)} scenarios passed on {len(guests)} guest(s)")
    # The plain closing line: the checks of all scenarios.
    checks_ok = sum(r.passed for r in results)
    checks_failed = sum(r.failed for r in results)
    retried = [f"{run.guest}/{run.chain}" for run in runs if run.retried_because]
    if retried:
        log(f"{len(retried)} guest(s) ran on a second attempt after an infrastructure failure: {', '.join(retried)}")
    print(f"system-tests: {checks_ok} passed, {checks_failed} failed, {len(retried)} guest(s) retried", flush=True)
    return 1 if bad else 0


def cmd_shell(args: argparse.Namespace) -> int:
    root: Path = args.cache.resolve()
    guest = guest_named(args.guest)
    cache = image_dir(root, guest)
    if any(not (cache / n).exists() for n in ARTEFACTS):
        raise LaneError(f"no built image in {cache}; run: {SELF} build --guest {guest.image_name}")
    share: Path = (args.share or (cache / "shell-share")).resolve()
    share.mkdir(parents=True, exist_ok=True)
    accel, accel_name = accel_args(args.accel)
    cmdline = " ".join(["console=ttyS0", "root=/dev/vda", "panic=-1", f"{BUS_FLAG}={guest.bus}", *args.cmdline_extra])
    log(f"interactive boot ({accel_name}); share {share} at /mnt/host; Ctrl-a x quits")
    drive = f"file={cache / ROOTFS},format=raw,if=virtio,snapshot=on"
    with cache_lock(root):
        argv = qemu_argv(cache, share, accel, cmdline, drive, interactive=True)
        return subprocess.run(argv, env=system_env(), check=False).returncode


def cmd_clean(args: argparse.Namespace) -> int:
    root: Path = args.cache.resolve()
    with cache_lock(root):
        if args.all:
            for child in root.iterdir():
                if child.name != ".lock":
                    if child.is_dir() and not child.is_symlink():
                        remove_tree(child)
                    else:
                        child.unlink()
            log(f"emptied {root}")
            return 0
        for guest in selected_images(args.guest):
            cache = image_dir(root, guest)
            if not cache.is_dir():
                continue
            remove_tree(cache / "work")
            if args.debs:
                remove_tree(cache / "debs")
            report_cache(cache)
    return 0


# --------------------------------------------------------------------------


def _add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"cache directory (default {DEFAULT_CACHE})",
    )


def _add_guest(p: argparse.ArgumentParser, *, many: bool) -> None:
    names = ", ".join(g.name for g in GUESTS)
    if many:
        p.add_argument(
            "--guest",
            action="append",
            default=[],
            metavar="NAME",
            help=f"only this guest (repeatable; {names}; default all)",
        )
    else:
        p.add_argument("--guest", default=GUESTS[0].name, metavar="NAME", help=f"{names} (default {GUESTS[0].name})")


def _add_boot(p: argparse.ArgumentParser) -> None:
    _add_cache(p)
    _add_guest(p, many=False)
    p.add_argument("--accel", choices=("auto", "tcg", "kvm"), default="auto")
    p.add_argument(
        "--cmdline-extra",
        action="extend",
        nargs="+",
        default=[],
        metavar="ARG",
        help="extra kernel command-line arguments",
    )


def _build_parser(sub: Any) -> None:
    p = sub.add_parser("build", help="build and cache kernel, initramfs, root image")
    _add_cache(p)
    _add_guest(p, many=True)
    p.add_argument("--force", action="store_true", help="rebuild even if warm")
    p.add_argument("--check", action="store_true", help="exit 0 if warm, 1 if not")
    p.add_argument("--keep-work", action="store_true", help="keep work/ for debugging")
    p.set_defaults(func=cmd_build)


def _run_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="boot, install .debs, run SHARE/test.sh")
    _add_boot(p)
    p.add_argument("--share", type=Path, required=True, help="dir with test.sh")
    p.add_argument("--scenario", type=Path, default=None, help="copy this script to SHARE/test.sh first")
    p.add_argument("--deb", action="extend", nargs="+", default=[], metavar="FILE", help=".deb files")
    p.add_argument(
        "--timeout",
        type=int,
        default=600,
        help="wall limit of one attempt, all its boots, in s (default 600); "
        "test.sh itself gets this minus 150 s (at least 60 s)",
    )
    p.add_argument(
        "--boot-timeout",
        type=int,
        default=240,
        help="infrastructure failure if the runner has not started by then (s)",
    )
    p.add_argument("--tail", type=int, default=40, help="lines of logs on failure")
    p.add_argument("--quiet", action="store_true", help="do not echo the console")
    p.set_defaults(func=cmd_run)


def _suite_parser(sub: Any) -> None:
    p = sub.add_parser("suite", help="build the images if needed, run chains of scenarios on every guest")
    _add_cache(p)
    _add_guest(p, many=True)
    p.add_argument("--accel", choices=("auto", "tcg", "kvm"), default="auto")
    p.add_argument("--deb", action="append", default=[], metavar="FILE", help=".deb file to install (repeatable)")
    p.add_argument(
        "--offer",
        action="append",
        default=[],
        metavar="FILE",
        help="copied to every guest's SHARE/offered/, not installed (repeatable): the previous release for purge.sh",
    )
    p.add_argument(
        "--share-root",
        type=Path,
        default=DEFAULT_CACHE / "suite",
        help="one share directory per scenario under it (default .cache/vm/suite)",
    )
    p.add_argument("--timeout", type=int, default=420, help="wall limit of one guest's attempt, in s (default 420)")
    # 150 s was too short on a loaded host (load 13 on 2 CPUs): a trixie boot 2 with amdgpu
    # loaded by modules-load.d had not started the runner after 150 s.
    p.add_argument("--boot-timeout", type=int, default=300, help="infrastructure failure if the runner has not started")
    p.add_argument("--tail", type=int, default=60, help="lines of logs on failure")
    p.add_argument("--verbose", action="store_true", help="echo the guest console")
    p.add_argument(
        "--lane-start",
        type=float,
        default=None,
        metavar="EPOCH",
        help="when the whole lane started (date +%%s), to print its run time",
    )
    p.add_argument("--budget", type=int, default=600, help="the lane's time budget in s, for the report (600)")
    p.add_argument(
        "--dir", type=Path, default=HERE / "scenarios", help="where scenarios named without .sh are (vm/scenarios)"
    )
    p.add_argument(
        "scenarios",
        nargs="+",
        metavar="CHAIN",
        help="scenarios, in order; NAME+NAME runs them one after the other in the same guest",
    )
    p.set_defaults(func=cmd_suite)


def _shell_parser(sub: Any) -> None:
    p = sub.add_parser("shell", help="interactive boot, root autologin on ttyS0")
    _add_boot(p)
    p.add_argument("--share", type=Path, default=None)
    p.set_defaults(func=cmd_shell)


def _clean_parser(sub: Any) -> None:
    p = sub.add_parser("clean", help="remove work/ (and debs/ or everything)")
    _add_cache(p)
    _add_guest(p, many=True)
    p.add_argument("--debs", action="store_true", help="also the downloaded .debs")
    p.add_argument("--all", action="store_true", help="the whole cache")
    p.set_defaults(func=cmd_clean)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="vmlane.py", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("host-deps", help="install host packages (apt-get)")
    p.set_defaults(func=cmd_host_deps)
    for add in (_build_parser, _run_parser, _suite_parser, _shell_parser, _clean_parser):
        add(sub)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        rc: int = args.func(args)
    except LaneError as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    return rc


if __name__ == "__main__":
    sys.exit(main())
