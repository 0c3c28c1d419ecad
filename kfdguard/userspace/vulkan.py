"""The Vulkan drivers a program on the machine finds: the loader's driver manifests and the libraries they name.

The loader (Vulkan-Loader docs/LoaderDriverInterface.md, "Driver Discovery on
Linux" and "Driver Manifest File Format") reads every ``*.json`` in each
``vulkan/icd.d`` of its search path; a manifest is ``{"file_format_version":
"1.0.0", "ICD": {"library_path": ..., "api_version": ...}}``, and its
``library_path`` is a file name the dynamic linker finds, a path relative to
the manifest, or an absolute path. Debian 13's mesa-vulkan-drivers writes bare
names (``radeon_icd.json``: ``libvulkan_radeon.so``); the loader itself is
``libvulkan.so.1`` (Debian's libvulkan1).

Read-only and bounded like the rest of the inventory: at most MAX_MANIFESTS
manifests a directory, each at most MANIFEST_LIMIT bytes, through the probe's
Reader (so a snapshot records what was read and a replay stays in its root).
A manifest that cannot be read or is not one is kept, with why.
"""

from __future__ import annotations

import json
import os

from kfdguard.facts import VulkanFacts, VulkanIcd
from kfdguard.host.root import VULKAN_ICD_DIRS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root
    from kfdguard.probe.reader import Reader

LOADER = "libvulkan.so.1"
MAX_MANIFESTS = 64
MANIFEST_LIMIT = 64 << 10
# The drivers by their library's file name: Mesa's RADV (src/amd/vulkan, libvulkan_radeon.so), AMD's
# AMDVLK (amdvlk64.so; amdgpu-pro ships the same name), Mesa's lavapipe (the CPU, libvulkan_lvp.so).
DRIVERS = {
    "libvulkan_radeon.so": "RADV",
    "amdvlk64.so": "AMDVLK",
    "amdvlk32.so": "AMDVLK",
    "libvulkan_lvp.so": "lavapipe",
}


def driver_of(library_path: str) -> str:
    name = library_path.rsplit("/", 1)[-1]
    return DRIVERS.get(name, name)


class ManifestError(ValueError):
    """Not a driver manifest; the message says why."""


def _manifest(text: str) -> tuple[str, str | None]:
    """(library_path, api_version) of a manifest; ManifestError saying what is wrong."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: thousands of nested brackets
        raise ManifestError(f"not JSON: {type(exc).__name__}: {exc}") from None
    icd = data.get("ICD") if isinstance(data, dict) else None
    if not isinstance(icd, dict):
        raise ManifestError('no "ICD" object')
    library = icd.get("library_path")
    if not isinstance(library, str) or not library or "\0" in library:
        raise ManifestError('no "library_path" string')
    api = icd.get("api_version")
    return library, api if isinstance(api, str) else None


class _Finder:
    def __init__(self, root: Root, reader: Reader, lib_dirs: Iterable[str]) -> None:
        self.root = root
        self.reader = reader
        self.lib_dirs = tuple(dict.fromkeys(lib_dirs))

    def in_lib_dirs(self, name: str) -> HostPath | None:
        """A library the dynamic linker finds by ``name`` in the system's directories (ld.so.conf's and the
        standard ones), as the loader's dlopen of a bare name does."""
        for directory in self.lib_dirs:
            path = self.root.join(directory) / name
            if self.reader.is_file(path):
                return path
        return None

    def library(self, manifest: HostPath, library_path: str) -> HostPath | None:
        if "/" not in library_path:
            return self.in_lib_dirs(library_path)
        if library_path.startswith("/"):
            path = self.root.join(library_path)
        else:
            # Relative to the manifest, as the manifest is shown on the machine; then back under the root.
            shown = os.path.normpath(os.path.join(os.path.dirname(self.root.display(manifest)), library_path))
            path = self.root.join(shown)
        return path if self.reader.is_file(path) else None

    def icd(self, manifest: HostPath) -> VulkanIcd:
        shown = self.root.display(manifest)
        text = self.reader.text(manifest, limit=MANIFEST_LIMIT)
        if text is None:
            return VulkanIcd(shown, "", None, "?", None, "unreadable")
        try:
            library_path, api = _manifest(text)
        except ManifestError as exc:
            return VulkanIcd(shown, "", None, "?", None, str(exc))
        found = self.library(manifest, library_path)
        return VulkanIcd(
            shown, library_path, None if found is None else self.root.display(found), driver_of(library_path), api
        )


def probe_vulkan(root: Root, reader: Reader, lib_dirs: Iterable[str]) -> VulkanFacts:
    """The loader and the driver manifests of the machine under ``root``; ``lib_dirs`` are where the dynamic
    linker looks (the standard directories and ld.so.conf's), as shown on the machine."""
    finder = _Finder(root, reader, lib_dirs)
    icds = []
    for directory in VULKAN_ICD_DIRS:
        path = root.join(directory)
        names = [n for n in reader.listdir(path, limit=4 * MAX_MANIFESTS) if n.endswith(".json")]
        icds += [finder.icd(path / n) for n in names[:MAX_MANIFESTS]]
    loader = finder.in_lib_dirs(LOADER)
    return VulkanFacts(True, None if loader is None else root.display(loader), tuple(icds))
