"""The one place that knows where host paths live.

Every absolute path kfdguard reads or writes is resolved through a ``Root``:
``/`` on a real machine, a simulated machine's directory in tests and in the
demo. No other module spells ``/sys``, ``/dev``, ``/etc``... as a literal; a
test enforces that.
"""

from __future__ import annotations

import os

from kfdguard.host.paths import HostPath, as_host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Where the KFD character device lives, as users see it on any machine.
KFD_NODE = "/dev/kfd"
# Files kfdguard owns, and the trees it changes, as shown on any machine;
# enforce maps them through Root.join.
MODPROBE_CONF = "/etc/modprobe.d/kfdguard.conf"
UDEV_RULE = "/etc/udev/rules.d/71-kfdguard.rules"
MODPROBE_D = "/etc/modprobe.d/"
UDEV_DIR = "/etc/udev/"
MODULES_FILES = ("/etc/modules-load.d/", "/etc/modules")
# What units/kfdguard.service lets the service write under /etc (ReadWritePaths=, ConfigurationDirectory=).
SERVICE_WRITABLE_ETC = ("/etc/modprobe.d", "/etc/modules-load.d", "/etc/udev/rules.d", "/etc/kfdguard")
BOOT_DIR = "/boot"
# Files whose names a snapshot redacts (kfdguard.snapshot.redact), as shown on any machine.
ACCOUNTS_FILE = "/etc/passwd"
GROUP_FILE = "/etc/group"
CONFIG_FILE = "/etc/kfdguard/config.yaml"
# Present, world-readable, only while compute is ready (kfdguard.readiness.marker).
READY_MARKER = "/run/kfdguard/ready"
# Device names of RAID (md) and device-mapper (LVM, LUKS) volumes as findmnt
# prints them: text to recognise, not paths to open.
VOLUME_DEVICES = ("/dev/md", "/dev/mapper/", "/dev/dm-")

# Where fleet tools read kfdguard (kfdguard.fleet; config fleet.textfile, fleet.nfd): the
# directory Debian's prometheus-node-exporter gives its textfile collector, nfd-worker's
# local feature files, and where CDI specs live (the CDI spec's static and dynamic dirs).
FLEET_TEXTFILE = "/var/lib/prometheus/node-exporter/kfdguard.prom"
FLEET_NFD = "/etc/kubernetes/node-feature-discovery/features.d/kfdguard"
# kfdguard's own CDI spec (fleet.cdi: true): /run, since it describes this boot's device nodes.
FLEET_CDI = "/run/cdi/kfdguard.json"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
DRI_DIR = "/dev/dri"  # render and card nodes, as CDI specs name them

# The running process's own descriptors: always the host's /proc, whatever
# machine a Root points at.
PROC_SELF_FD = "/proc/self/fd"


_HOST = HostPath("/")


class Root:
    """Where a machine's files are: ``/``, or the directory of a simulated machine or a snapshot.

    Given a pathlib path or a string, it keeps a HostPath (kfdguard/host/paths.py: the boot pass does
    not import pathlib), and every path it makes is one. Frozen, compared and hashed by its path."""

    __slots__ = ("_path",)
    _path: HostPath

    def __init__(self, path: str | os.PathLike[str] = "/") -> None:
        object.__setattr__(self, "_path", path if type(path) is HostPath else HostPath(path))

    @property
    def path(self) -> HostPath:
        return self._path

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Root is frozen: cannot assign to {name!r}")

    def __eq__(self, other: object) -> bool:
        return self._path == other._path if type(other) is Root else NotImplemented

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Root(path={str(self.path)!r})"

    @property
    def is_host(self) -> bool:
        return self.path == _HOST

    @property
    def sys(self) -> HostPath:
        return self.path / "sys"

    @property
    def dev(self) -> HostPath:
        return self.path / "dev"

    @property
    def proc(self) -> HostPath:
        return self.path / "proc"

    @property
    def etc(self) -> HostPath:
        return self.path / "etc"

    @property
    def boot(self) -> HostPath:
        return self.path / "boot"

    @property
    def lib_modules(self) -> HostPath:
        return self.path / "lib/modules"

    @property
    def run(self) -> HostPath:
        return self.path / "run"

    @property
    def var_lib(self) -> HostPath:
        return self.path / "var/lib"

    @property
    def usr_lib(self) -> HostPath:
        return self.path / "usr/lib"

    @property
    def lib(self) -> HostPath:
        return self.path / "lib"

    @property
    def efi(self) -> HostPath:
        return self.path / "efi"

    @property
    def kfd(self) -> HostPath:
        return self.join(KFD_NODE)

    @property
    def bin_dirs(self) -> tuple[HostPath, ...]:
        # Search order for helper binaries (modprobe, grub-editenv...): sbin first,
        # as root's PATH has it on Debian.
        return tuple(self.path / d for d in ("usr/sbin", "usr/bin", "sbin", "bin"))

    def join(self, absolute: str | os.PathLike[str]) -> HostPath:
        """Map a path as written on the machine ("/etc/x") to this root."""
        text = str(absolute)
        if not text.startswith("/"):
            raise ValueError(f"not an absolute path: {text!r}")
        relative = os.path.normpath(text).lstrip("/")
        return self.path / relative if relative and relative != "." else self.path

    def display(self, path: str | os.PathLike[str]) -> str:
        """Show a path as it appears on the machine, without the root prefix."""
        shown = as_host(path)
        if self.is_host:
            return str(shown)
        try:
            return "/" + str(shown.relative_to(self.path))
        except ValueError:
            return str(shown)

    def which(self, name: str) -> HostPath | None:
        for directory in self.bin_dirs:
            candidate = directory / name
            if os.access(candidate, os.X_OK) and candidate.is_file():
                return candidate
        return None


# Where compute stacks install themselves, as written on any machine;
# kfdguard/userspace/probe.py maps them through Root.join and reads only these
# places (and what it is told), never a walk of the disk.
SOFTWARE_OPT = "/opt"  # /opt/rocm, /opt/rocm-X.Y.Z
SOFTWARE_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")  # Debian/Ubuntu, Fedora, Arch
SOFTWARE_FEDORA_ROCM = "/usr/lib64/rocm"
SOFTWARE_OLLAMA = ("/usr/lib/ollama", "/usr/local/lib/ollama")
SOFTWARE_OLLAMA_BIN = ("/usr/local/bin/ollama", "/usr/bin/ollama")  # the install script's, a package's
SOFTWARE_PYTHON_DIRS = ("/usr/lib", "/usr/local/lib")  # pythonX.Y/{site,dist}-packages below
SOFTWARE_DEBIAN_PYTHON = "/usr/lib/python3/dist-packages"
# The Vulkan loader's driver manifests, system-wide, in its search order (Vulkan-Loader
# docs/LoaderDriverInterface.md, "Driver Discovery on Linux": $XDG_CONFIG_DIRS (/etc/xdg),
# SYSCONFDIR (/etc; /usr/local/etc for a loader built there), $XDG_DATA_DIRS (/usr/local/share,
# /usr/share), each with /vulkan/icd.d). The per-user ones ($HOME) are the user's, not the machine's.
VULKAN_ICD_DIRS = (
    "/etc/xdg/vulkan/icd.d",
    "/usr/local/etc/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/usr/share/vulkan/icd.d",
)
SOFTWARE_LLAMA_DIRS = ("/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/opt/llama.cpp/lib")
SYSTEMD_UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
# The administrator's units and drop-ins: where kfdguard remedy writes its own (userspace/dropin.py).
SYSTEMD_ADMIN_UNIT_DIR = SYSTEMD_UNIT_DIRS[0]
# Present only while systemd is PID 1 (sd_booted(3)): whether a daemon-reload has anyone to reach.
SYSTEMD_BOOTED = "/run/systemd/system"
LD_SO_CONF = "/etc/ld.so.conf"
LD_SO_CONF_D = "/etc/ld.so.conf.d"
DPKG_STATUS = "/var/lib/dpkg/status"
