"""``/etc/kfdguard/config.yaml``: schema, defaults and strict validation.

Validation walks YAML's node tree (``yaml.compose``), not the loaded Python
objects, so every error carries the line and column where it is, and octal
modes are read from their text (``0660``) rather than from YAML 1.1's idea of
an integer. A config with any error is not used at all: the caller gets the
errors and the last good config (or the defaults), never a half-applied file.
"""

from __future__ import annotations

import marshal
import os
import re

from kfdguard.host.paths import as_host
from kfdguard.host.root import FLEET_CDI, FLEET_NFD, FLEET_TEXTFILE
from kfdguard.record import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    import yaml

    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root

CONFIG_LIMIT = 256 * 1024
POLICIES = ("off", "notify", "oneshot", "pin", "assess")
# fallback.policy assess: which failed boots kfdguard-boot-check.service counts as bad.
ASSESS = ("if-fallback", "always")
# fallback.unstable: whether a running kernel that runs compute but whose GPU resets repeatedly (live health)
# only gets a recommendation (report), or an automatic fallback under policy oneshot/pin (act).
UNSTABLE = ("report", "act")
LOG_SOURCES = ("journal", "kmsg")
INITRAMFS = ("report", "regenerate")
# What "compute is ready" means for kfdguard-compute.target, the runtime marker and kfdguard wait.
REQUIRE = ("all", "any")
CACHE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ModuleConfig:
    options: tuple[tuple[str, str], ...] = ()  # KFD parameters for amdgpu (amdkfd on old kernels)
    load: bool = True  # load amdgpu when it is not loaded
    reload: bool = False  # reload amdgpu for changed options when nothing uses it (no display, no holders)
    repair: bool = False  # comment out conflicting lines in other modprobe.d files
    initramfs: str = "report"  # report | regenerate


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    group: str = "render"
    mode: int = 0o660
    udev_rule: bool = True


@dataclass(frozen=True, slots=True)
class UsersConfig:
    add_to_group: tuple[str, ...] = ()  # users kfdguard may add to the compute group
    min_uid: int = 1000


@dataclass(frozen=True, slots=True)
class FallbackConfig:
    policy: str = "notify"
    # if-fallback: a boot is bad only when another installed, bootable kernel can run compute (known
    # good here, or able by kfdguard's tables): marking the only usable kernel bad leaves nothing better
    # to boot; always: whenever the kernel is the cause
    assess: str = "if-fallback"
    unstable: str = "report"
    # A boot is unstable when amdgpu reset a GPU this many times in it (or a reset failed): fallback/policy.py.
    unstable_resets: int = 3


@dataclass(frozen=True, slots=True)
class Timeouts:
    modprobe: float = 20.0
    device_wait: float = 5.0
    polkit: float = 5.0
    command: float = 10.0


@dataclass(frozen=True, slots=True)
class ComputeConfig:
    # all: every AMD GPU computes (state ready); any: at least one does (ready, or degraded with one ready)
    require: str = "all"
    wait_timeout: float = 90.0  # kfdguard wait's default, and so kfdguard-wait.service's


@dataclass(frozen=True, slots=True)
class LogConfig:
    sources: tuple[str, ...] = ("journal", "kmsg")  # or absolute file paths
    previous_boots: int = 1


@dataclass(frozen=True, slots=True)
class SoftwareConfig:
    # Consumer units whose Environment=/EnvironmentFile= the software scan reads (kfdguard/userspace).
    units: tuple[str, ...] = ("ollama.service",)
    # Extra places to look for stacks: virtualenvs (PyTorch-ROCm), llama.cpp build directories.
    paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FleetConfig:
    # Files for fleet tools (kfdguard.fleet.publish), written only where their directory
    # exists; None (false in the file) turns one off.
    textfile: str | None = FLEET_TEXTFILE  # node_exporter textfile collector (*.prom)
    nfd: str | None = FLEET_NFD  # Node Feature Discovery feature file
    cdi: str | None = None  # kfdguard's own CDI spec: off unless asked for (true: FLEET_CDI)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    # APUs: the memory compute programs may use, as written: absolute in binary units ("96G" is
    # 96 GiB, "98304M") or a share of the RAM the kernel manages ("75%"). kfdguard.assess.memory turns
    # it into this kernel's and driver's module options. None: no memory options are written.
    target: str | None = None


@dataclass(frozen=True, slots=True)
class Config:
    version: int = 1
    module: ModuleConfig = field(default_factory=ModuleConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    users: UsersConfig = field(default_factory=UsersConfig)
    fallback: FallbackConfig = field(default_factory=FallbackConfig)
    timeouts: Timeouts = field(default_factory=Timeouts)
    log: LogConfig = field(default_factory=LogConfig)
    compute: ComputeConfig = field(default_factory=ComputeConfig)
    software: SoftwareConfig = field(default_factory=SoftwareConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)


@dataclass(frozen=True, slots=True)
class ConfigError:
    file: str
    line: int  # 1-based; 0 when the error is about the whole file
    column: int
    key: str  # dotted path, "" for the top level
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    config: Config
    errors: tuple[ConfigError, ...]
    source: str  # "file", "defaults" (no file), "last-good" or "defaults-after-error"

    @property
    def ok(self) -> bool:
        return not self.errors


# --- the schema -------------------------------------------------------------------

Scalar = str | int | float | bool
_SECTIONS: dict[str, dict[str, str]] = {
    "module": {"options": "options", "load": "bool", "reload": "bool", "repair": "bool", "initramfs": "initramfs"},
    "device": {"group": "group", "mode": "mode", "udev_rule": "bool"},
    "users": {"add_to_group": "names", "min_uid": "uid"},
    "fallback": {"policy": "policy", "assess": "assess", "unstable": "unstable", "unstable_resets": "resets"},
    "timeouts": {"modprobe": "seconds", "device_wait": "seconds", "polkit": "seconds", "command": "seconds"},
    "log": {"sources": "sources", "previous_boots": "boots"},
    "compute": {"require": "require", "wait_timeout": "seconds"},
    "software": {"units": "units", "paths": "paths"},
    "fleet": {"textfile": "textfile", "nfd": "nfdfile", "cdi": "cdifile"},
    "memory": {"target": "memtarget"},
}
_TOP = ("version", *_SECTIONS)


class _Invalid(Exception):
    def __init__(self, node: yaml.Node, key: str, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.key = key
        self.message = message


def _suggest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else f"; expected one of: {', '.join(choices)}"


class _Validator:
    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[ConfigError] = []

    def error(self, node: yaml.Node | None, key: str, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else 0
        column = node.start_mark.column + 1 if node is not None else 0
        self.errors.append(ConfigError(self.file, line, column, key, message))

    def mapping(self, node: yaml.Node, key: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        import yaml

        if not isinstance(node, yaml.MappingNode):
            self.error(node, key, f"expected a mapping of {', '.join(allowed)}")
            return {}
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            path = f"{key}.{name}" if key and name else (name or key)
            if not isinstance(name, str):
                self.error(key_node, key, "keys must be plain names")
            elif name in result:
                self.error(key_node, path, "duplicate key")
            elif name not in allowed:
                where = f"in '{key}'" if key else "at the top level"
                self.error(key_node, path, f"unknown key {where}{_suggest(name, allowed)}")
            else:
                result[name] = value_node
        return result

    def scalar(self, node: yaml.Node, key: str) -> tuple[str, str]:
        """Raw text and resolved tag of a scalar."""
        import yaml

        if not isinstance(node, yaml.ScalarNode):
            raise _Invalid(node, key, "expected a single value, not a list or mapping")
        return node.value, node.tag.rsplit(":", 1)[-1]

    def convert(self, node: yaml.Node, key: str, kind: str) -> object:
        if kind == "options":
            return self._options(node, key)
        if kind in _LIST_ITEMS:
            return self._list(node, key, kind)
        text, tag = self.scalar(node, key)
        return _SCALARS.get(kind, _choice)(node, key, kind, text, tag)

    def _options(self, node: yaml.Node, key: str) -> tuple[tuple[str, str], ...]:
        result: list[tuple[str, str]] = []
        for name, value in self.mapping(node, key, _ANY).items():
            path = f"{key}.{name}"
            if not name.isidentifier() or not name.isascii() or len(name) > 64:
                self.error(value, path, "not a module parameter name")
                continue
            try:
                text, tag = self.scalar(value, path)
            except _Invalid as exc:
                self.error(exc.node, exc.key, exc.message)
                continue
            if tag == "bool":
                text = "1" if text.lower() in ("true", "yes", "on", "y") else "0"
            if tag == "null" or not text or any(c in text for c in " \t\n\"'\\$`;&|") or len(text) > 256:
                self.error(value, path, f"{text!r:.40} is not a usable parameter value")
                continue
            result.append((name, text))
        return tuple(result)

    def _list(self, node: yaml.Node, key: str, kind: str) -> tuple[str, ...]:
        import yaml

        if not isinstance(node, yaml.SequenceNode):
            raise _Invalid(node, key, "expected a list")
        accepts, what = _LIST_ITEMS[kind]
        items = []
        for item in node.value:
            text, _ = self.scalar(item, key)
            if not accepts(text):
                raise _Invalid(item, key, f"{text!r:.40} is not {what}")
            items.append(text)
        return tuple(items)


# One converter per kind of scalar value: (node, key, kind, text, tag) -> value, or _Invalid.


def _bool(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    if tag != "bool":
        raise _Invalid(node, key, f"{text!r:.40} is not true or false")
    return text.lower() in ("true", "yes", "on", "y")


def _mode(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    digits = text[2:] if text.lower().startswith("0o") else text
    if not digits or any(c not in "01234567" for c in digits) or int(digits, 8) > 0o777:
        raise _Invalid(node, key, f"{text!r:.40} is not an octal mode (0..0777)")
    mode = int(digits, 8)
    if mode & 0o600 != 0o600:
        raise _Invalid(node, key, f"{text} would deny the owner (root) read-write access")
    return mode


def _group(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    if not _is_name(text):
        raise _Invalid(node, key, f"{text!r:.40} is not a group name")
    return text


def _integer(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    # isdigit() alone admits "²" and other digits int() refuses (YAML's !!int tag forces them here).
    if tag != "int" or not text.isascii() or not text.isdigit():
        raise _Invalid(node, key, f"{text!r:.40} is not a non-negative integer")
    limit = {"uid": 2**32 - 2, "boots": 10, "version": 1, "resets": 1000}[kind]
    # Length first: int() refuses more than 4,300 digits, and nothing valid is that long.
    number = int(text) if len(text.lstrip("0")) <= len(str(limit)) else limit + 1
    if number > limit or (kind == "version" and number != 1):
        raise _Invalid(node, key, f"{text:.40} is out of range (max {limit})")
    if kind == "resets" and number < 1:
        raise _Invalid(node, key, f"{text:.40} is out of range (1..{limit}: a boot without a reset is not unstable)")
    return number


def _seconds(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    try:
        value = float(text)
    except ValueError:
        raise _Invalid(node, key, f"{text!r:.40} is not a number of seconds") from None
    if tag not in ("int", "float") or not 0.1 <= value <= 600:
        raise _Invalid(node, key, f"{text} is out of range (0.1..600 seconds)")
    return value


def _choice(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> object:
    choices = {"policy": POLICIES, "assess": ASSESS, "unstable": UNSTABLE, "initramfs": INITRAMFS,
               "require": REQUIRE}[kind]  # fmt: skip
    if text not in choices:
        raise _Invalid(node, key, f"{text!r:.40} is not valid{_suggest(text, choices)}")
    return text


def _fleet_file(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> str | None:
    """An absolute file path for a fleet output, or None for false/null (turned off)."""
    if tag == "null" or (tag == "bool" and text.lower() in ("false", "no", "off", "n")):
        return None
    if kind == "cdifile" and tag == "bool" and text.lower() in ("true", "yes", "on", "y"):
        return FLEET_CDI
    name = text.rsplit("/", 1)[-1]
    if tag != "str" or not text.startswith("/") or len(text) > 4096 or "\0" in text or not name:
        raise _Invalid(node, key, f"{text!r:.60} is not an absolute file path (or false to turn it off)")
    if any(part in (".", "..") for part in text.split("/")):
        raise _Invalid(node, key, f"{text!r:.60}: no . or .. components")
    # node_exporter's textfile collector reads only *.prom; nfd-worker skips dot files.
    if kind == "textfile" and not name.endswith(".prom"):
        raise _Invalid(node, key, f"{name!r:.60}: node_exporter reads only files ending in .prom")
    # Container engines read *.json and *.yaml specs; kfdguard writes JSON. amd*.json is what kfdguard
    # checks as AMD's toolkit's spec: its own must not look like one.
    if kind == "cdifile" and (not name.endswith(".json") or name.startswith("amd")):
        raise _Invalid(node, key, f"{name!r:.60}: a CDI spec file ending in .json, not named amd*")
    if name.startswith("."):
        raise _Invalid(node, key, f"{name!r:.60}: a file name starting with a dot is skipped by its reader")
    return text


# memory.target: binary units only. "GB" is refused rather than guessed: vendors' 10^9 and the
# kernel's "M" (MiB, in "98304M of GTT memory ready") differ by 7% at 96.
MEMORY_UNITS = {"M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40}
MEMORY_MIN = 1 << 30  # below the 3 GiB GTT 6.1 gives any machine: a typo, not a choice
MEMORY_MAX = 1 << 44  # 16 TiB: more than any APU takes
_MEMORY = re.compile(r"(?P<number>[0-9]{1,7}(?:\.[0-9]{1,3})?) ?(?P<unit>%|[A-Za-z]{1,3})")


def memory_target(text: str) -> tuple[str, int] | str:
    """("bytes", n) or ("percent", p) for a memory.target, or why it is not one."""
    from fractions import Fraction

    match = _MEMORY.fullmatch(text.strip()) if text.isascii() else None
    if match is None:
        return f"{text!r:.40} is not a size: write 96G (GiB), 98304M (MiB) or a share of the RAM such as 75%"
    number, unit = Fraction(match["number"]), match["unit"]
    if unit == "%":
        if number != int(number) or not 1 <= number <= 100:
            return f"{text.strip()} is not a whole percentage of the RAM (1%..100%)"
        return "percent", int(number)
    if unit not in MEMORY_UNITS:
        hint = "; MB, GB and TB are ambiguous (10^6 or 2^20...): write M, G or T (MiB, GiB, TiB)" if unit.upper() in (
            "GB", "TB", "MB") else f"; expected one of: {', '.join(MEMORY_UNITS)}, %"  # fmt: skip
        return f"{text.strip()}: unknown unit {unit!r}{hint}"
    size = int(number * MEMORY_UNITS[unit])  # Fraction: "1.5T" is exactly 1.5 TiB, no float rounding
    if not MEMORY_MIN <= size <= MEMORY_MAX:
        return f"{text.strip()} is out of range (1G..16T)"
    return "bytes", size


def _memory_target(node: yaml.Node, key: str, kind: str, text: str, tag: str) -> str | None:
    if tag == "null":
        return None
    if tag != "str":  # "96" reads as an int, "1e3" as a float: a size needs its unit
        raise _Invalid(node, key, f"{text!r:.40} has no unit: write 96G (GiB), 98304M (MiB) or 75%")
    parsed = memory_target(text)
    if isinstance(parsed, str):
        raise _Invalid(node, key, parsed)
    return text.strip()


_SCALARS = {"bool": _bool, "mode": _mode, "group": _group, "uid": _integer, "boots": _integer, "resets": _integer,
            "version": _integer, "seconds": _seconds, "textfile": _fleet_file, "nfdfile": _fleet_file,
            "cdifile": _fleet_file, "memtarget": _memory_target}  # fmt: skip


class _AnyKeys(tuple[str, ...]):
    def __contains__(self, item: object) -> bool:
        return True


_ANY = _AnyKeys()


# systemd's unit name characters (systemd.unit(5): ASCII letters, digits, ":", "-", "_", ".", "\\", "@").
# A pattern, compiled on first use (re caches it): the boot pass imports this module and lists no units.
_UNIT = r"[A-Za-z0-9:_.@\\-]{1,248}\.service"


def _is_path(text: str) -> bool:
    return text.startswith("/") and "\0" not in text and len(text) <= 4096


def _is_name(text: str) -> bool:
    # useradd/groupadd's portable names: letters, digits, _ . - and no leading dash.
    return 0 < len(text) <= 32 and text.isascii() and text[0] != "-" and all(c.isalnum() or c in "_.-" for c in text)


# One item check per kind of list: (accepts, what an item must be, for the error).
_LIST_ITEMS: dict[str, tuple[Callable[[str], bool], str]] = {
    "names": (_is_name, "a user name"),
    "sources": (lambda text: text in LOG_SOURCES or text.startswith("/"), "journal, kmsg or an absolute path"),
    "units": (lambda text: re.fullmatch(_UNIT, text) is not None, "a service unit name (NAME.service)"),
    "paths": (_is_path, "an absolute path"),
}


def parse_config(text: str, file: str) -> tuple[Config, list[ConfigError]]:
    """Validate config text. On errors the returned Config is the defaults."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    validator = _Validator(file)
    try:
        root = yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        return Config(), [ConfigError(file, line, column, "", f"not valid YAML: {problem}")]
    if root is None:
        return Config(), []
    top = validator.mapping(root, "", _TOP)
    if "version" in top:
        try:
            validator.convert(top["version"], "version", "version")
        except _Invalid as exc:
            validator.error(exc.node, exc.key, exc.message)
    values = _sections(validator, top)
    if validator.errors:
        return Config(), validator.errors
    return config_from_plain(values), []


def _sections(validator: _Validator, top: dict[str, yaml.Node]) -> dict[str, dict[str, object]]:
    """Each section's keys converted; a key that does not convert is an error and left out."""
    import yaml

    values: dict[str, dict[str, object]] = {}
    for section, keys in _SECTIONS.items():
        node = top.get(section)
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):
            continue
        for name, value_node in validator.mapping(node, section, tuple(keys)).items():
            try:
                values.setdefault(section, {})[name] = validator.convert(value_node, f"{section}.{name}", keys[name])
            except _Invalid as exc:
                validator.error(exc.node, exc.key, exc.message)
    return values


def config_from_plain(values: dict[str, dict[str, object]]) -> Config:
    return Config(
        module=ModuleConfig(**values.get("module", {})),  # type: ignore[arg-type]
        device=DeviceConfig(**values.get("device", {})),  # type: ignore[arg-type]
        users=UsersConfig(**values.get("users", {})),  # type: ignore[arg-type]
        fallback=FallbackConfig(**values.get("fallback", {})),  # type: ignore[arg-type]
        timeouts=Timeouts(**values.get("timeouts", {})),  # type: ignore[arg-type]
        log=LogConfig(**values.get("log", {})),  # type: ignore[arg-type]
        compute=ComputeConfig(**values.get("compute", {})),  # type: ignore[arg-type]
        software=SoftwareConfig(**values.get("software", {})),  # type: ignore[arg-type]
        fleet=FleetConfig(**values.get("fleet", {})),  # type: ignore[arg-type]
        memory=MemoryConfig(**values.get("memory", {})),  # type: ignore[arg-type]
    )


def config_to_plain(config: Config) -> dict[str, dict[str, object]]:
    from kfdguard.record import asdict

    plain = asdict(config)
    plain.pop("version")
    return plain


def load_config(
    path: str | os.PathLike[str],
    display: str,
    cache: str | os.PathLike[str] | None = None,
    *,
    root: Root | None = None,
) -> LoadedConfig:
    """Read and validate the config file; never raises.

    ``cache`` remembers the last file that validated (its bytes and the parsed
    result): when the file is unchanged, parsing and the YAML import are
    skipped, which matters on the boot path; when the file is broken, the last
    good config is used instead of the defaults. ``root``: the machine whose
    file it is; a root other than the host's is opened beneath it (a bundle's
    config.yaml linked to a host file must not have that file's lines quoted
    in the errors: kfdguard/host/beneath.py).
    """
    store = None if cache is None else as_host(cache)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        if root is None or root.is_host:
            fd = os.open(path, flags)
        else:
            from kfdguard.host.beneath import Beneath

            beneath = Beneath(root.path)
            try:
                fd = beneath.open(path, flags)
            finally:
                beneath.close()
    except FileNotFoundError:
        return LoadedConfig(Config(), (), "defaults")
    except OSError as exc:
        error = ConfigError(display, 0, 0, "", f"cannot read: {exc.strerror or exc}")
        return _fallback(store, error)
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return _fallback(store, ConfigError(display, 0, 0, "", "not a regular file"))
        raw = os.read(fd, CONFIG_LIMIT + 1)
    except OSError as exc:
        return _fallback(store, ConfigError(display, 0, 0, "", f"cannot read: {exc.strerror or exc}"))
    finally:
        os.close(fd)
    if len(raw) > CONFIG_LIMIT:
        return _fallback(store, ConfigError(display, 0, 0, "", f"larger than {CONFIG_LIMIT} bytes"))
    cached = _read_cache(store)
    if cached is not None and cached[0] == raw:
        return LoadedConfig(cached[1], (), "file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fallback(store, ConfigError(display, 0, 0, "", f"not UTF-8 text (byte {exc.start})"))
    config, errors = parse_config(text, display)
    if errors:
        return _fallback(store, *errors)
    _write_cache(store, raw, config)
    return LoadedConfig(config, (), "file")


def _fallback(cache: HostPath | None, *errors: ConfigError) -> LoadedConfig:
    cached = _read_cache(cache)
    if cached is not None:
        return LoadedConfig(cached[1], tuple(errors), "last-good")
    return LoadedConfig(Config(), tuple(errors), "defaults-after-error")


def _read_cache(cache: HostPath | None) -> tuple[bytes, Config] | None:
    if cache is None:
        return None
    try:
        with open(cache, "rb") as handle:
            # Our own file under /var/lib/kfdguard (0644 root: only root writes it): not foreign input.
            version, raw, plain = marshal.load(handle)  # noqa: S302
        if version != CACHE_VERSION or not isinstance(raw, bytes):
            return None
        return raw, config_from_plain(plain)
    except (OSError, ValueError, EOFError, TypeError):
        return None


def _write_cache(cache: HostPath | None, raw: bytes, config: Config) -> None:
    if cache is None:
        return
    from kfdguard.host.files import atomic_write

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        # The last good configuration is what a broken edit falls back to: it must
        # survive a crash and a full disk whole (fsync, rename, no half file). Readable by all, as
        # config.yaml is: the resident service (user kfdguard, issue 21) falls back to it too, and
        # with a root-only cache a broken edit made it check with the defaults while the root
        # oneshot kept the last good options.
        atomic_write(cache, marshal.dumps((CACHE_VERSION, raw, config_to_plain(config))), 0o644)
    except OSError:
        # Not root (kfdguard check as a user), or a read-only /var/lib: the
        # cache is an optimisation and a fallback, not a requirement.
        pass
