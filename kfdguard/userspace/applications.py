"""The applications people run on their GPU, as installed: ollama and llama.cpp, read for what decides their path.

A stack (kfdguard/userspace/probe.py) says which code a ROCm build carries; an
application decides for itself which backend it uses. What that decision reads:

- **ollama**: its version, from the release build's linker flag
  ``-X=github.com/ollama/ollama/version.Version=<v>`` (ollama's
  .github/workflows/release.yaml and cmake/local.cmake set it; Go records a
  build's ``-ldflags`` in the binary's build information), and its backends:
  the directories of its library directory that hold a ``*ggml-*`` file
  (discover/runner.go globs ``LibOllamaPath/*/*ggml-*``): ``rocm``,
  ``vulkan``, ``cuda_v12``...
- **llama.cpp**: a ``libggml-vulkan.so`` beside, or instead of,
  ``libggml-hip.so`` (its Vulkan backend, built with ``-DGGML_VULKAN=ON``).

PyTorch and TheRock's libraries are stacks already: their verdicts need no
more than the stack's. Read-only and bounded: the ollama binary is searched
through a read-only map, at most BINARY_LIMIT bytes.
"""

from __future__ import annotations

import mmap
import os
import re

from kfdguard.facts import Application
from kfdguard.host.root import SOFTWARE_LLAMA_DIRS, SOFTWARE_OLLAMA, SOFTWARE_OLLAMA_BIN
from kfdguard.userspace.elf import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.root import Root
    from kfdguard.probe.reader import Reader

OLLAMA_VERSION = re.compile(rb"-X=github\.com/ollama/ollama/version\.Version=([0-9][0-9A-Za-z.+~-]{0,40})")
BINARY_LIMIT = 1 << 30
GGML = re.compile(r"ggml-")


def binary_version(path: str) -> str | None:
    """The version an ollama release build was linked with; None when the binary does not say (a source
    build without the flag, another program, a file that cannot be read)."""
    try:
        fd, size = open_regular(path)
    except OSError:
        return None
    try:
        if not 0 < size <= BINARY_LIMIT:
            return None
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
            m = OLLAMA_VERSION.search(data)
            return m.group(1).decode("ascii") if m else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def _backends(root: Root, reader: Reader, lib: str) -> tuple[str, ...]:
    """ollama's backend directories: those of its library directory with a ggml library in them."""
    path = root.join(lib)
    found = []
    for name in reader.listdir(path, limit=256):
        sub = path / name
        if reader.is_dir(sub) and any(GGML.search(n) for n in reader.listdir(sub, limit=4096)):
            found.append(name)
    return tuple(found)


def _ollama(root: Root, reader: Reader) -> list[Application]:
    binary = next((b for b in SOFTWARE_OLLAMA_BIN if reader.is_file(root.join(b))), None)
    lib = next((d for d in SOFTWARE_OLLAMA if reader.is_dir(root.join(d))), None)
    if binary is None and lib is None:
        return []
    version = binary_version(str(root.join(binary))) if binary is not None else None
    backends = _backends(root, reader, lib) if lib is not None else ()
    files = tuple(f for f in (binary, lib) if f is not None)
    name = f"ollama {version}" if version else "ollama (version unknown)"
    return [Application("ollama", name, version, lib or binary or "", backends, files)]


def _llama_cpp(root: Root, reader: Reader) -> list[Application]:
    out = []
    for directory in SOFTWARE_LLAMA_DIRS:
        backends = tuple(
            kind
            for kind, library in (("hip", "libggml-hip.so"), ("vulkan", "libggml-vulkan.so"))
            if reader.is_file(root.join(directory) / library)
        )
        if backends:
            files = tuple(f"{directory}/libggml-{k}.so" for k in backends)
            out.append(Application("llama.cpp", f"llama.cpp ({directory})", None, directory, backends, files))
    return out


def probe_applications(root: Root, reader: Reader) -> tuple[Application, ...]:
    return (*_ollama(root, reader), *_llama_cpp(root, reader))
