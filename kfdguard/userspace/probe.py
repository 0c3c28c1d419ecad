"""Find the installed compute stacks under a Root, with the targets each carries and the environment that matters.

Read-only and bounded: only the known places of kfdguard.host.root's SOFTWARE_*
constants and the paths the caller names are looked at; each library's
targets come from kfdguard.userspace.scan (section headers and bundle
tables, Tensile file names). Never raises: what cannot be read is a Problem.
"""

from __future__ import annotations

import os
import re
import shlex

from kfdguard.facts import Component, EnvSetting, Problem, SoftwareFacts, Stack, VulkanFacts
from kfdguard.host.root import (
    DPKG_STATUS,
    LD_SO_CONF,
    LD_SO_CONF_D,
    SOFTWARE_DEBIAN_PYTHON,
    SOFTWARE_FEDORA_ROCM,
    SOFTWARE_LIB_DIRS,
    SOFTWARE_LLAMA_DIRS,
    SOFTWARE_OLLAMA,
    SOFTWARE_OPT,
    SOFTWARE_PYTHON_DIRS,
    SYSTEMD_UNIT_DIRS,
    Root,
)
from kfdguard.probe.reader import Reader
from kfdguard.userspace.applications import probe_applications
from kfdguard.userspace.env import ENV_NAMES, override_node, wanted_env
from kfdguard.userspace.kpack import SUFFIX as KPACK_SUFFIX
from kfdguard.userspace.scan import FileScan, PathScan, scan_file, scan_tree
from kfdguard.userspace.vulkan import probe_vulkan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from kfdguard.host.paths import HostPath

ROCM_DIR = re.compile(r"^rocm(?:-(\d+\.\d+(?:\.\d+)?))?$")
VERSION_RE = re.compile(r"^[0-9A-Za-z.+~:_-]{1,64}$")
TORCH_VERSION = re.compile(r"""^__version__\s*=\s*['"]([^'"]{1,64})['"]""", re.MULTILINE)
HIP_RUNTIME = re.compile(r"^libamdhip64\.so\.(\d[\d.]*)$")
# TheRock's pip ROCm (ROCm/TheRock build_tools/packaging/python/templates/rocm/src/rocm_sdk/_dist_info.py):
# the dist packages rocm-sdk-core, rocm-sdk-libraries[-<family>] and rocm-sdk-device-<target> install the
# platform packages _rocm_sdk_core<nonce> and _rocm_sdk_libraries[_<family>]<nonce> ("_" + the dist name
# with "-" as "_" + a version nonce, often empty); a device wheel overlays its .kpack archives into the
# libraries package's lib/.kpack (templates/rocm-sdk-device/setup.py).
THEROCK_CORE = re.compile(r"^_rocm_sdk_core(?:_[0-9A-Za-z_]{1,64})?$")
THEROCK_LIBRARIES = re.compile(r"^_rocm_sdk_libraries(?:_[0-9A-Za-z_]{1,64})?$")
THEROCK_DIST = re.compile(
    r"^(rocm|rocm_sdk_core|rocm_sdk_libraries(?:_[0-9a-z_]+)?)-([0-9][0-9A-Za-z.+_]{0,63})\.dist-info$"
)
DEFAULT_UNITS = ("ollama.service",)
TOOLS = ("rocminfo", "amd-smi", "rocm-smi")
BLAS_LIBRARIES = ("librocblas.so.", "libhipblaslt.so.")
# Library directories of one stack read at most this deep (ollama keeps rocBLAS in rocm/rocblas/library).
STACK_DEPTH = 5


class _Probe:
    def __init__(self, root: Root) -> None:
        self.root = root
        self.reader = Reader(root)
        self.seen: set[str] = set()  # real paths of library directories already taken by a stack

    def show(self, path: HostPath) -> str:
        return self.root.display(path)

    def resolve(self, path: HostPath) -> HostPath:
        """A path with its symlinks resolved inside the root (an absolute link target is the machine's)."""
        for _ in range(8):
            try:
                target = os.readlink(path)
            except OSError:
                return path
            path = self.root.join(target) if target.startswith("/") else path.parent / target
        return path

    def real(self, shown: str) -> str:
        """A machine path with every symlink resolved inside the root, as shown on the machine."""
        parts = [p for p in shown.split("/") if p]
        done: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            if part == ".":
                continue
            candidate = self.root.join("/" + "/".join([*done, part]))
            try:
                target = os.readlink(candidate)
            except OSError:
                done.append(part)
                continue
            hops += 1
            if hops > 16:
                return shown  # a loop: leave it as written
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
        return "/" + "/".join(done)

    def components(self, scan: PathScan) -> tuple[Component, ...]:
        """Tensile files grouped by directory; each HIP ELF file (split or not) on its own."""
        groups: dict[str, list[FileScan]] = {}
        out: list[Component] = []
        for f in scan.files:
            if f.source == "kpack" and f.path.endswith(KPACK_SUFFIX):
                # A pack holds code for the libraries that point to it, each a component with those targets;
                # a pack of one family alone is no library that lacks the others.
                continue
            if f.source == "name":
                groups.setdefault(f.path.rsplit("/", 1)[0], []).append(f)
            elif f.targets or f.error or f.source == "kpack":
                # A split library with no pack installed is a component with no targets, not nothing.
                out.append(Component(f.path.rsplit("/", 1)[-1], f.path, f.targets, f.source, 1, f.error))
        for directory, files in groups.items():
            targets = tuple(sorted({t for f in files for t in f.targets}))
            parts = directory.split("/")
            # From the library's own directory on: rocblas/2.47.0/library, hipblaslt/library.
            lib = max((i for i, p in enumerate(parts) if p in ("rocblas", "hipblaslt")), default=len(parts) - 2)
            name = "/".join(parts[lib:])
            out.append(Component(name, directory, targets, "name", len(files)))
        return tuple(sorted(out, key=lambda c: c.path))

    def tree(self, path: HostPath, depth: int = STACK_DEPTH) -> PathScan:
        return scan_tree(str(path), self.show(path), max_depth=depth)

    def runtime(self, lib: HostPath) -> str | None:
        # The longest name is the real file (libamdhip64.so.6.2.60204), not its soname link.
        names = [n for n in self.reader.listdir(lib) if HIP_RUNTIME.match(n)]
        return max(names, key=len) if names else None

    def first_line(self, path: HostPath) -> str | None:
        text = self.reader.text(path, limit=4096)
        if text is None:
            return None
        line = text.strip().split("\n", 1)[0].strip()
        return line if VERSION_RE.match(line) else None

    # --- the kinds of stacks ------------------------------------------------------------------

    def rocm_trees(self) -> list[Stack]:
        stacks = []
        opt = self.root.join(SOFTWARE_OPT)
        for name in self.reader.listdir(opt):
            m = ROCM_DIR.match(name)
            if m is None:
                continue
            path = self.resolve(opt / name)
            real = os.path.realpath(path)
            if real in self.seen or not os.path.isdir(path):
                continue
            self.seen.add(real)
            version = self.first_line(path / ".info/version") or m.group(1)
            lib = path / "lib"
            parts: list[Component] = []
            truncated = None
            for sub in ("rocblas/library", "hipblaslt/library"):
                if (lib / sub).is_dir():
                    scan = self.tree(lib / sub, 2)
                    parts += self.components(scan)
                    truncated = truncated or scan.truncated
            parts += self.libraries(lib, [n for n in self.reader.listdir(lib) if n.startswith(BLAS_LIBRARIES)])
            label = f"ROCm {version}" if version else "ROCm (version unknown)"
            stacks.append(
                Stack("rocm", label, self.show(opt / name), version, tuple(parts), self.show(lib), self.runtime(lib),
                      truncated)
            )  # fmt: skip
        return stacks

    def dpkg_version(self, package_prefix: str) -> str | None:
        text = self.reader.text(self.root.join(DPKG_STATUS), limit=64 << 20)
        if text is None:
            return None
        pattern = re.compile(
            rf"^Package: ({re.escape(package_prefix)}[0-9a-z.+-]*)\n(?:[^\n]+\n)*?Version: ([^\n]{{1,64}})",
            re.MULTILINE,
        )
        m = pattern.search(text)
        return m.group(2) if m else None

    def libraries(self, lib: HostPath, names: Iterable[str]) -> list[Component]:
        """The HIP ELF files ``names`` in ``lib``; symlinks are skipped (the soname links of the real file)."""
        parts: list[Component] = []
        for name in names:
            if os.path.islink(lib / name):
                continue
            found = scan_file(str(lib / name), self.show(lib / name))
            if found is not None:
                parts += self.components(PathScan(found.path, "file", (found,)))
        return parts

    def library_trees(self, lib: HostPath) -> list[Component]:
        """The Tensile library directories of rocBLAS and hipBLASLt under a distribution's ``lib``."""
        parts: list[Component] = []
        for sub in ("rocblas", "hipblaslt"):
            # Debian: rocblas/<version>/library; Fedora and Arch: rocblas/library.
            base = lib / sub
            for candidate in [base / "library", *(base / v / "library" for v in self.reader.listdir(base))]:
                if candidate.is_dir():
                    parts += self.components(self.tree(candidate, 2))
        return parts

    def distribution_lib(self, directory: str, os_name: str) -> Stack | None:
        """The distribution's rocBLAS/hipBLASLt in one of SOFTWARE_LIB_DIRS; None without one or when already taken."""
        lib = self.root.join(directory)
        names = [n for n in self.reader.listdir(lib) if n.startswith(BLAS_LIBRARIES)]
        if not names and not (lib / "rocblas").is_dir() and not (lib / "hipblaslt").is_dir():
            return None
        real = os.path.realpath(lib)
        if real in self.seen:
            return None
        self.seen.add(real)
        parts = self.libraries(lib, names) + self.library_trees(lib)
        version = self.dpkg_version("librocblas")
        name = f"{os_name} rocBLAS" + (f" {version}" if version else "")
        return Stack("distribution", name, self.show(lib), version, tuple(parts), self.show(lib), self.runtime(lib))

    def fedora_rocm(self, os_name: str) -> list[Stack]:
        """Fedora's ROCm variants (SOFTWARE_FEDORA_ROCM/<variant>/lib) not already taken."""
        stacks = []
        fedora = self.root.join(SOFTWARE_FEDORA_ROCM)
        for variant in self.reader.listdir(fedora):
            lib = fedora / variant / "lib"
            if lib.is_dir() and os.path.realpath(lib) not in self.seen:
                self.seen.add(os.path.realpath(lib))
                scan = self.tree(lib, 4)
                label = f"{os_name} ROCm ({variant})"
                stacks.append(Stack("distribution", label, self.show(lib), None, self.components(scan),
                                    self.show(lib), self.runtime(lib), scan.truncated))  # fmt: skip
        return stacks

    def distribution(self, os_name: str) -> list[Stack]:
        stacks = [self.distribution_lib(directory, os_name) for directory in SOFTWARE_LIB_DIRS]
        return [s for s in stacks if s is not None] + self.fedora_rocm(os_name)

    def ollama(self) -> list[Stack]:
        stacks = []
        for directory in SOFTWARE_OLLAMA:
            path = self.root.join(directory)
            if not path.is_dir() or os.path.realpath(path) in self.seen:
                continue
            self.seen.add(os.path.realpath(path))
            scan = self.tree(path)
            parts = self.components(scan)
            runtime = self.runtime(path / "rocm") or self.runtime(path)
            if not parts and runtime is None:
                continue  # an ollama without ROCm (CPU or CUDA only)
            lib = path / "rocm" if (path / "rocm").is_dir() else path
            stacks.append(Stack("ollama", "ollama (bundled ROCm)", self.show(path), None, parts, self.show(lib),
                                runtime, scan.truncated))  # fmt: skip
        return stacks

    def site_dirs(self, extra: Iterable[str]) -> list[HostPath]:
        dirs = [self.root.join(SOFTWARE_DEBIAN_PYTHON)]
        for base in SOFTWARE_PYTHON_DIRS:
            path = self.root.join(base)
            for name in self.reader.listdir(path):
                if re.match(r"^python3\.\d{1,2}$", name):
                    dirs += [path / name / "site-packages", path / name / "dist-packages"]
        for venv in extra:
            path = self.root.join(venv)
            lib = path / "lib"
            for name in self.reader.listdir(lib):
                if re.match(r"^python3\.\d{1,2}$", name):
                    dirs.append(lib / name / "site-packages")
        return dirs

    def pytorch(self, extra: Iterable[str]) -> list[Stack]:
        stacks = []
        for site in self.site_dirs(extra):
            torch = site / "torch"
            lib = torch / "lib"
            if not lib.is_dir() or os.path.realpath(lib) in self.seen:
                continue
            text = self.reader.text(torch / "version.py", limit=65536) or ""
            m = TORCH_VERSION.search(text)
            version = m.group(1) if m else None
            rocm = "rocm" in (version or "") or (lib / "libtorch_hip.so").exists()
            if not rocm:
                continue  # a CUDA or CPU build: not a ROCm stack
            self.seen.add(os.path.realpath(lib))
            scan = self.tree(lib, 4)
            label = f"PyTorch {version}" if version else "PyTorch (version unknown)"
            stacks.append(Stack("pytorch", label, self.show(torch), version, self.components(scan), self.show(lib),
                                self.runtime(lib), scan.truncated))  # fmt: skip
        return stacks

    def therock(self, extra: Iterable[str]) -> list[Stack]:
        """TheRock's pip ROCm in each site directory: its libraries (code in kernel packs) and HIP runtime."""
        stacks = []
        for site in self.site_dirs(extra):
            names = self.reader.listdir(site)
            core = [site / n / "lib" for n in names if THEROCK_CORE.match(n)]
            libraries = [site / n / "lib" for n in names if THEROCK_LIBRARIES.match(n)]
            if not core and not libraries:
                continue
            fresh = [lib for lib in libraries if lib.is_dir() and os.path.realpath(lib) not in self.seen]
            parts: list[Component] = []
            truncated = None
            for lib in fresh:
                self.seen.add(os.path.realpath(lib))
                scan = self.tree(lib, 4)  # lib/.kpack/*.kpack, lib/hipblaslt/library/*
                parts += self.components(scan)
                truncated = truncated or scan.truncated
            versions = {m.group(1): m.group(2) for m in map(THEROCK_DIST.match, names) if m}
            version = versions.get("rocm") or versions.get("rocm_sdk_core") or next(iter(versions.values()), None)
            runtime = next((r for r in map(self.runtime, core) if r), None)
            lib_dir = fresh[0] if fresh else core[0]
            label = f"ROCm {version} (TheRock, pip)" if version else "ROCm (TheRock, pip)"
            stacks.append(Stack("therock", label, self.show(site), version, tuple(parts), self.show(lib_dir),
                                runtime, truncated))  # fmt: skip
        return stacks

    def llama_cpp(self, extra: Iterable[str]) -> list[Stack]:
        stacks = []
        for directory in (*SOFTWARE_LLAMA_DIRS, *extra):
            path = self.root.join(directory) / "libggml-hip.so"
            try:
                path = self.resolve(path)
                if not path.is_file():
                    continue
            except OSError:
                continue
            real = os.path.realpath(path)
            if real in self.seen:
                continue
            self.seen.add(real)
            found = scan_file(str(path), self.show(path), explicit=True)
            parts = self.components(PathScan(self.show(path), "file", (found,))) if found else ()
            stacks.append(Stack("llama.cpp", "llama.cpp (libggml-hip.so)", self.show(path), None, parts,
                                self.show(path.parent), self.runtime(path.parent)))  # fmt: skip
        return stacks

    # --- environment -----------------------------------------------------------------------------

    def unit_files(self, unit: str) -> list[HostPath]:
        """The unit's file, then its .conf drop-ins, in systemd's directory order."""
        files: list[HostPath] = []
        for directory in SYSTEMD_UNIT_DIRS:
            path = self.root.join(directory) / unit
            if path.is_file():
                files.append(path)
                break  # the first directory in systemd's order holds the unit; the others are shadowed
        for directory in SYSTEMD_UNIT_DIRS:
            drop = self.root.join(directory) / f"{unit}.d"
            files += [drop / n for n in self.reader.listdir(drop) if n.endswith(".conf")]
        return files

    def environment_file(self, value: str, unit: str) -> list[EnvSetting]:
        """The settings of an EnvironmentFile= of ``unit``; none for a relative path (systemd wants an absolute one)."""
        optional = value.startswith("-")
        target = value.lstrip("-").strip()
        if not target.startswith("/"):
            return []
        env_text = self.reader.text(self.root.join(target), limit=1 << 20, report_missing=not optional)
        if env_text is None:
            return []
        origin = f"{target} (EnvironmentFile= of {unit})"
        return [EnvSetting(n, v, origin, unit) for n, v in _env_file(env_text)]

    def unit_env(self, unit: str) -> list[EnvSetting]:
        settings: list[EnvSetting] = []
        for path in self.unit_files(unit):
            text = self.reader.text(path, limit=1 << 20)
            if text is None:
                continue
            for key, value in _service_lines(text):
                if key == "Environment":
                    settings += [EnvSetting(n, v, f"{unit} ({self.show(path)})", unit) for n, v in _assignments(value)]
                elif key == "EnvironmentFile":
                    settings += self.environment_file(value, unit)
        return [s for s in settings if wanted_env(s.name)]

    def ld_paths(self) -> list[tuple[str, str]]:
        out = []
        conf_d = self.root.join(LD_SO_CONF_D)
        files = [self.root.join(LD_SO_CONF), *(conf_d / n for n in self.reader.listdir(conf_d) if n.endswith(".conf"))]
        for path in files:
            text = self.reader.text(path, limit=1 << 20)
            for raw in (text or "").splitlines():
                line = raw.split("#", 1)[0].strip()
                if line.startswith("/") and " " not in line:
                    # /opt/rocm/lib is the stack found at /opt/rocm-6.2.4/lib.
                    out.append((self.real(os.path.normpath(line)), self.show(path)))
        return out

    def tools(self) -> list[str]:
        found = [name for name in TOOLS if self.root.which(name)]
        opt_bin = self.root.join(SOFTWARE_OPT) / "rocm" / "bin"
        found += [n for n in TOOLS if n not in found and os.access(opt_bin / n, os.X_OK)]
        return found


def _service_lines(text: str) -> list[tuple[str, str]]:
    """Key=value lines of the [Service] section, continuation lines joined."""
    out = []
    section = ""
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, value = line.split("=", 1)
            out.append((key.strip(), value.strip()))
    return out


def _assignments(value: str) -> list[tuple[str, str]]:
    """systemd's Environment= value: space-separated VAR=value words, each optionally quoted."""
    try:
        words = shlex.split(value, posix=True)
    except ValueError:
        words = value.split()
    return [tuple(w.split("=", 1)) for w in words if "=" in w and w.split("=", 1)[0]]  # type: ignore[misc]


def _env_file(text: str) -> list[tuple[str, str]]:
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.append((key, value))
    return out


def probe_software(
    root: Root,
    environ: Mapping[str, str] | None = None,
    *,
    units: Iterable[str] = DEFAULT_UNITS,
    paths: Iterable[str] = (),
    os_name: str = "distribution",
) -> SoftwareFacts:
    """The software inventory of the machine under ``root``.

    ``environ`` is the caller's environment (the CLI on this host; None for
    another root), ``units`` the consumer units whose Environment= matters,
    ``paths`` extra directories (virtualenvs, llama.cpp builds) to look in.
    """
    probe = _Probe(root)
    stacks: list[Stack] = []
    extra = tuple(paths)
    for kind in (
        probe.rocm_trees,
        lambda: probe.distribution(os_name),
        probe.ollama,
        lambda: probe.pytorch(extra),
        lambda: probe.therock(extra),
        lambda: probe.llama_cpp(extra),
    ):
        try:
            stacks += kind()
        except Exception as exc:  # never out of probe: a bug or a hostile tree becomes a problem
            probe.reader.problems.append(Problem("software inventory", f"{type(exc).__name__}: {exc}"))
    env: list[EnvSetting] = []
    if environ is not None:
        env += [EnvSetting(n, environ[n], "caller environment") for n in ENV_NAMES if n in environ]
        per_node = sorted(n for n in environ if override_node(n) is not None)
        env += [EnvSetting(n, environ[n], "caller environment") for n in per_node]
    for unit in dict.fromkeys(units):
        try:
            env += probe.unit_env(unit)
        except Exception as exc:
            probe.reader.problems.append(Problem(unit, f"{type(exc).__name__}: {exc}"))
    try:
        ld = probe.ld_paths()
        tools = probe.tools()
    except Exception as exc:
        probe.reader.problems.append(Problem("software inventory", f"{type(exc).__name__}: {exc}"))
        ld, tools = [], []
    try:
        vulkan = probe_vulkan(root, probe.reader, [*(d for d, _ in ld), *SOFTWARE_LIB_DIRS])
    except Exception as exc:
        probe.reader.problems.append(Problem("Vulkan drivers", f"{type(exc).__name__}: {exc}"))
        vulkan = VulkanFacts()
    try:
        applications = probe_applications(root, probe.reader)
    except Exception as exc:
        probe.reader.problems.append(Problem("applications", f"{type(exc).__name__}: {exc}"))
        applications = ()
    return SoftwareFacts(
        tuple(stacks), tuple(env), tuple(ld), tuple(tools), tuple(probe.reader.problems), vulkan=vulkan,
        applications=applications,
    )  # fmt: skip
