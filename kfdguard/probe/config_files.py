"""modprobe.d, modules-load.d and account files, in the order their tools use."""

from __future__ import annotations

from kfdguard.facts import Accounts, ModprobeDirective, ModprobeFacts, ModulesLoadEntry, Problem
from kfdguard.parsers.accounts import parse_group, parse_passwd
from kfdguard.parsers.modprobe import parse_cmdline_modules, parse_modprobe_conf, parse_modules_load
from kfdguard.probe.reader import Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath

# libkmod's search path (libkmod-config.c); the first directory holding a
# file name wins and files are then read in name order across directories.
MODPROBE_DIRS = (
    "etc/modprobe.d",
    "run/modprobe.d",
    "usr/local/lib/modprobe.d",
    "usr/lib/modprobe.d",
    "lib/modprobe.d",
)
# systemd-modules-load's search path (modules-load.d(5)).
MODULES_LOAD_DIRS = (
    "etc/modules-load.d",
    "run/modules-load.d",
    "usr/local/lib/modules-load.d",
    "usr/lib/modules-load.d",
    "lib/modules-load.d",
)


def collect_conf_files(
    reader: Reader, dirs: tuple[str, ...], suffixes: tuple[str, ...] = (".conf",)
) -> tuple[list[HostPath], list[HostPath]]:
    """Effective and shadowed configuration files across the search path.

    As libkmod's conf_files_list() and systemd's conf_files do: the first
    directory holding a name wins, even when that entry is not a regular file
    (a link to /dev/null is how an administrator masks a vendor file: it hides
    the name and contributes nothing); directories are skipped.
    """
    chosen: dict[str, HostPath | None] = {}
    shadowed: list[HostPath] = []
    for rel in dirs:
        directory = reader.root.path / rel
        for name in reader.listdir(directory):
            if name.startswith(".") or not name.endswith(suffixes):
                continue
            path = directory / name
            if reader.is_dir(path):
                continue
            if name in chosen:
                first = chosen[name]
                # /lib is /usr/lib on merged-/usr systems: the same file, not an override.
                if first is None or reader.realpath(first) != reader.realpath(path):
                    shadowed.append(path)
                continue
            chosen[name] = path if reader.is_file(path) else None  # None: masked
    return [p for name in sorted(chosen) if (p := chosen[name]) is not None], shadowed


def probe_modprobe(reader: Reader, cmdline: tuple[str, ...]) -> ModprobeFacts:
    root = reader.root
    # kmod reads *.alias files there too (conf_files_filter_out()).
    files, shadowed = collect_conf_files(reader, MODPROBE_DIRS, (".conf", ".alias"))
    directives: list[ModprobeDirective] = []
    for path in files:
        text = reader.text(path)
        if text is None:
            continue
        found, complaints = parse_modprobe_conf(text, root.display(path))
        directives.extend(found)
        for complaint in complaints:
            reader.problems.append(_problem(complaint))
    load_files, _ = collect_conf_files(reader, MODULES_LOAD_DIRS)
    seen = {reader.realpath(p) for p in load_files}
    etc_modules = root.etc / "modules"
    if reader.is_file(etc_modules) and reader.realpath(etc_modules) not in seen:
        load_files.append(etc_modules)
    entries: list[ModulesLoadEntry] = []
    for path in load_files:
        text = reader.text(path)
        if text is None:
            continue
        found_entries, complaints = parse_modules_load(text, root.display(path))
        entries.extend(found_entries)
        for complaint in complaints:
            reader.problems.append(_problem(complaint))
    options, blacklist = parse_cmdline_modules(cmdline)
    return ModprobeFacts(
        directives=tuple(directives),
        files=tuple(root.display(p) for p in files),
        shadowed=tuple(root.display(p) for p in shadowed),
        modules_load=tuple(entries),
        cmdline_options=options,
        cmdline_blacklist=tuple(blacklist),
    )


def _problem(complaint: str) -> Problem:
    where, _, reason = complaint.partition(": ")
    return Problem(where, reason)


def probe_accounts(reader: Reader) -> Accounts:
    root = reader.root
    groups, complaints = parse_group(reader.text(root.etc / "group", report_missing=True) or "")
    for complaint in complaints[:5]:
        reader.complain(root.etc / "group", complaint)
    users, complaints = parse_passwd(reader.text(root.etc / "passwd", report_missing=True) or "")
    for complaint in complaints[:5]:
        reader.complain(root.etc / "passwd", complaint)
    return Accounts(tuple(groups), tuple(users))
