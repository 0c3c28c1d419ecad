"""The simulated machine's own model of kmod's configuration and of the kernel's parameter parsing.

Written from kmod's libkmod-config.c (kmod 30, Debian 12) and the kernel's
kernel/params.c, **not** on top of kfdguard's parsers (kfdguard/parsers/
modprobe.py): a simulator that read modprobe.d through the code under test
would agree with it about every bug they share. tests/unit/simulate/test_simulate_modprobe.py
holds both against real kmod (``modprobe -c``) on the same files.

What kmod does, in short:
- the search path is /etc/modprobe.d, /run/modprobe.d, /usr/local/lib/modprobe.d,
  /lib/modprobe.d (kmod 30; /usr/lib/modprobe.d is the same directory on a
  merged /usr and is read too, last); names starting with "." and names
  not ending in ".conf" or ".alias" are skipped; a name seen in an earlier
  directory hides the same name in later ones; the files are then read in
  name order (strcmp) whatever their directory;
- a line ending in a backslash is joined to the next without the backslash
  and the newline; a line whose first character is "#" is a comment, and a
  line whose first word is not a command is ignored;
- the command's words are split on spaces and tabs; module names have "-"
  turned into "_"; "options" and "install" keep the rest of the line as it is
  (after exactly one separator), but an options string has its tabs made spaces;
- the kernel command line comes last: "mod.param=value" is an option of mod,
  "modprobe.blacklist=a,b" blacklists, double quotes protect spaces.
"""

from __future__ import annotations

import os

from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.host.paths import HostPath

# kmod 30's default_config_paths (libkmod.c), then /usr/lib/modprobe.d: the same directory as /lib/modprobe.d
# on a merged /usr (every supported Debian and Ubuntu), a separate one in a rendered machine's tree.
SEARCH_PATH = ("etc/modprobe.d", "run/modprobe.d", "usr/local/lib/modprobe.d", "lib/modprobe.d", "usr/lib/modprobe.d")
LOAD_PATH = ("etc/modules-load.d", "run/modules-load.d", "usr/local/lib/modules-load.d", "usr/lib/modules-load.d",
             "lib/modules-load.d")  # fmt: skip
KCMD_LINE_SIZE = 4096  # read_str_safe() keeps at most this minus one byte of /proc/cmdline
BLANKS = "\0 \n\t\v\f\r"


@dataclass(frozen=True)
class KmodConfig:
    options: tuple[tuple[str, str], ...]  # (module, its option string), in kmod's order
    blacklist: tuple[str, ...]
    install: tuple[tuple[str, str], ...]  # (module, command): kmod runs the first one for a module


def underscores(name: str) -> str | None:
    """shared/util.c underscores(): "-" becomes "_" outside [...] brackets; None where kmod refuses the name."""
    out, i = [], 0
    while i < len(name):
        ch = name[i]
        if ch == "]":
            return None
        if ch == "[":
            close = name.find("]", i)
            if close < 0:
                return None
            out.append(name[i : close + 1])
            i = close + 1
            continue
        out.append("_" if ch == "-" else ch)
        i += 1
    return "".join(out)


def _listing(root: HostPath, search: tuple[str, ...], accept: tuple[str, ...]) -> list[HostPath]:
    """conf_files_list(): skip dot files, other suffixes and directories; a name already seen (an earlier
    directory) is ignored; the result is in strcmp order of the names."""
    chosen: dict[str, HostPath] = {}
    for rel in search:
        directory = root / rel
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            path = directory / name
            if name.startswith(".") or len(name) < 6 or not name.endswith(accept) or path.is_dir():
                continue
            chosen.setdefault(name, path)
    return [chosen[name] for name in sorted(chosen, key=os.fsencode)]


def _lines(path: HostPath) -> list[str]:
    """freadline_wrapped(): a backslash drops itself; before a newline it drops the newline too. Before the end of
    the file it keeps what getc_unlocked() returned there, EOF stored as a char: a byte 0xff (kmod 30: "blacklist \\"
    at the end of a file blacklists "\\xff"), which decodes as the file's other invalid bytes do."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return []
    lines, current, i = [], [], 0
    while i < len(data):
        ch = data[i]
        if ch == "\\":
            i += 1
            if i == len(data):
                current.append("\ufffd")  # EOF as a char, 0xff, decoded with errors="replace"
            elif data[i] != "\n":
                current.append(data[i])
        elif ch == "\n":
            lines.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    if current:
        lines.append("".join(current))
    return [line.split("\0", 1)[0] for line in lines]  # C strings end at a NUL


def _tokens(line: str, count: int) -> tuple[list[str], str | None]:
    """``count`` strtok_r(" \\t") tokens, then strtok_r(""): the rest after exactly one separator."""
    words: list[str] = []
    i, n = 0, len(line)
    for _ in range(count):
        while i < n and line[i] in " \t":
            i += 1
        if i == n:
            return words, None
        start = i
        while i < n and line[i] not in " \t":
            i += 1
        words.append(line[start:i])
    rest = line[i + 1 :] if i < n else ""
    return words, rest or None


def _option_text(text: str) -> str:
    # kmod_config_add_options() (libkmod-config.c) stores an options string with every tab made a space,
    # for a file's line and for the kernel command line alike; install commands are kept as written.
    return text.replace("\t", " ")


def _parse_file(path: HostPath, options: list[tuple[str, str]], blacklist: list[str],
                install: list[tuple[str, str]]) -> None:  # fmt: skip
    for line in _lines(path):
        if not line or line[0] == "#":
            continue
        (command, *_), _ = _tokens(line, 1) if line.strip(" \t") else ([""], None)
        if command == "blacklist":
            words, _ = _tokens(line, 2)
            name = underscores(words[1]) if len(words) == 2 else None
            if name is not None:
                blacklist.append(name)
        elif command in ("options", "install"):
            words, rest = _tokens(line, 2)
            name = underscores(words[1]) if len(words) == 2 else None
            if name is not None and rest is not None and command == "options":
                options.append((name, _option_text(rest)))
            elif name is not None and rest is not None:
                install.append((name, rest))


class _Kcmdline:
    """kmod_config_parse_kcmdline()'s state machine, one method per kind of character."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.state, self.quoted = "modname", False
        self.quote_start: int | None = None
        self.modname, self.mod_end, self.param, self.value = 0, 0, 0, -1
        self.found: list[tuple[str, str]] = []

    def quote(self, i: int) -> None:
        self.quoted = not self.quoted
        if self.quoted and self.state == "modname" and i == self.modname:
            self.quote_start, self.modname = i, i + 1
        elif self.state != "value":
            self.state = "ignore"

    def blank(self, i: int) -> None:
        if self.quoted:
            if self.state != "value":
                self.state = "ignore"  # spaces are only allowed in the value part
        elif self.state in ("value", "param"):
            self.complete(i)
        else:
            self.modname, self.state, self.quote_start = i + 1, "modname", None

    def dot(self, i: int) -> None:
        if self.state == "modname":
            self.mod_end, self.param, self.state = i, i + 1, "param"
        elif self.state == "param":
            self.state = "ignore"

    def equals(self, i: int) -> None:
        if self.state == "param":
            self.value, self.state = i + 1, "value"
        elif self.state == "modname":
            self.state = "ignore"

    def complete(self, i: int) -> None:
        text, word = self.text, self.text[self.param : i]
        if self.quote_start is not None and self.quote_start < self.modname and self.value >= 0:
            word = text[self.param : self.value] + '"' + text[self.value : i]  # the re-quoting memmove()
        self.found.append((text[self.modname : self.mod_end], word))
        self.modname, self.state, self.quote_start, self.value = i + 1, "modname", None, -1


def _kcmdline(buf: str) -> list[tuple[str, str]]:
    """(module, "param[=value]") for each well-formed word of the kernel command line; a word opened by a
    double quote has its value re-quoted (GRUB quotes the whole word)."""
    text = buf[: KCMD_LINE_SIZE - 1] + "\0"
    scan = _Kcmdline(text)
    special = {'"': scan.quote, ".": scan.dot, "=": scan.equals}
    for i, ch in enumerate(text):
        special.get(ch, scan.blank if ch in BLANKS else lambda _: None)(i)
        if ch == "\0":
            break
    return scan.found


def read_config(root: HostPath, cmdline: str) -> KmodConfig:
    """kmod_config_new(): every file of the search path in name order, then the kernel command line."""
    options: list[tuple[str, str]] = []
    blacklist: list[str] = []
    install: list[tuple[str, str]] = []
    for path in _listing(root, SEARCH_PATH, (".conf", ".alias")):
        _parse_file(path, options, blacklist, install)
    for module, param in _kcmdline(cmdline):
        if module == "modprobe" and param.startswith("blacklist="):
            blacklist.extend(param[len("blacklist=") :].split(","))
        elif (name := underscores(module)) is not None:
            options.append((name, _option_text(param)))
    return KmodConfig(tuple(options), tuple(blacklist), tuple(install))


def kernel_params(text: str) -> list[tuple[str, str]]:
    """parse_args()/next_arg() of kernel/params.c: blanks outside double quotes end a parameter; the value
    (after the first "=" that is not the first character) loses its quotes; no "=": the value is ""."""
    params = []
    rest = text.lstrip()
    while rest:
        quoted = rest[0] == '"'
        args = rest[1:] if quoted else rest
        i, equals, in_quote = 0, 0, quoted
        while i < len(args) and (in_quote or not args[i].isspace()):
            if equals == 0 and args[i] == "=":
                equals = i
            if args[i] == '"':
                in_quote = not in_quote
            i += 1
        word = args[:i]
        strip_end = quoted and i > 0 and word.endswith('"')
        if equals:
            name, value = word[:equals], word[equals + 1 :]
            if value.startswith('"'):
                value = value[1:]
                strip_end = strip_end or word.endswith('"')
            if strip_end and value.endswith('"'):
                value = value[:-1]
        else:
            name, value = (word[:-1] if strip_end else word), ""
        params.append((name, value))
        rest = args[i + 1 :].lstrip() if i < len(args) else ""
    return params


def options_for(config: KmodConfig, module: str) -> list[tuple[str, str]]:
    """The parameters modprobe passes for ``module``: every options line for it in order, then the kernel's
    own (the command line was parsed last); a later value of a parameter overrides an earlier one."""
    return [p for m, text in config.options if m == module for p in kernel_params(text)]


def install_command(config: KmodConfig, module: str) -> str | None:
    return next((command for m, command in config.install if m == module), None)


def modules_to_load(root: HostPath) -> list[str]:
    """systemd-modules-load: *.conf in its search path (an earlier directory's name wins), one module per
    line, "#" and ";" start comments."""
    modules = []
    for path in _listing(root, LOAD_PATH, (".conf",)):
        for line in _lines(path):
            name = line.strip()
            if name and name[0] not in "#;":
                modules.append(name)
    return modules
