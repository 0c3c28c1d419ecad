"""modprobe.d(5) and modules-load.d(5) files, read the way kmod reads them."""

from __future__ import annotations

import re

from kfdguard.facts import ModprobeDirective, ModulesLoadEntry

KINDS = ("alias", "blacklist", "install", "remove", "options", "softdep", "weakdep")


def normalise(module: str) -> str:
    """kmod treats dashes and underscores in module names as the same."""
    return module.replace("-", "_")


# A backslash and the character after it, within one physical line (kmod keeps the character).
_ESCAPED = re.compile(r"\\(.)")


def continues(physical: str) -> bool:
    """Whether kmod joins the next physical line to this one: an odd run of backslashes at its end
    leaves the last one escaping the newline ("a\\\\" ends in an escaped backslash and does not)."""
    return (len(physical) - len(physical.rstrip("\\"))) % 2 == 1


def logical_lines(text: str) -> list[tuple[int, str]]:
    """The lines kmod's freadline_wrapped() reads; each keeps the number of its first physical line.

    A backslash escapes the character after it: kmod drops the backslash and keeps that character
    ("a\\b" is "ab", "\\\\" one backslash). Before a newline it drops the newline too and glues the
    lines: "a=1\\" then "b=2" is "a=1b=2", so a continuation without leading blanks continues the word.
    A line ending in an escaped backslash ("a\\\\") does not continue. A backslash at the very end of
    the file is dropped, as current kmod does (kmod 30 stores the end of file there as a byte 0xff:
    simulate/modprobe.py models that one). kmod reads C strings: a NUL ends the line's text.
    """
    result: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    # kmod reads with getc: only "\n" ends a line (str.splitlines would also
    # split on \x85, \u2028 and friends, shifting every later line number).
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, raw in enumerate(lines, 1):
        if not pending:
            start = number
        continued = continues(raw)
        body = _ESCAPED.sub(r"\1", raw[:-1] if continued else raw) if "\\" in raw else raw
        pending.append(body)
        if continued:
            continue
        result.append((start, "".join(pending).split("\0", 1)[0]))
        pending = []
    tail = "".join(pending)
    if tail:  # kmod reads no line from a file that ends after a continuation with nothing after it
        result.append((start, tail.split("\0", 1)[0]))
    return result


def parse_modprobe_conf(text: str, file: str) -> tuple[list[ModprobeDirective], list[str]]:
    directives: list[ModprobeDirective] = []
    complaints: list[str] = []
    for number, line in logical_lines(text):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        kind = words[0]
        where = f"{file}:{number}"
        if kind not in KINDS:
            complaints.append(f"{where}: unknown command {kind[:40]!r} (kmod ignores the line)")
            continue
        if len(words) < 2:
            complaints.append(f"{where}: {kind} without a module name")
            continue
        parsed = _arguments(kind, words, line)
        if isinstance(parsed, str):
            complaints.append(f"{where}: {parsed}")
            continue
        module, args = parsed
        directives.append(ModprobeDirective(file, number, kind, module, args, " ".join(words)))
    return directives, complaints


def _arguments(kind: str, words: list[str], line: str) -> tuple[str, tuple[str, ...]] | str:
    """The module and arguments of a directive, or what is wrong with it."""
    args: tuple[str, ...]
    if kind == "alias":
        # alias's first argument is a pattern, the module comes second.
        if len(words) != 3:
            return "alias needs a pattern and a module"
        module, args = normalise(words[2]), (words[1],)
    elif kind == "options":
        # kmod hands the rest of the line to the kernel verbatim, and the kernel's
        # next_arg() keeps a double-quoted value with its blanks in one parameter.
        rest = line.split(None, 2)[2].rstrip() if len(words) > 2 else ""
        module, args = normalise(words[1]), tuple(kernel_args(rest))
    else:
        module, args = normalise(words[1]), tuple(words[2:])
    if kind == "blacklist" and args:
        return "blacklist takes one module name"
    if kind in ("install", "remove") and not args:
        return f"{kind} {module} has no command"
    if kind in ("softdep", "weakdep"):
        problem = _check_softdep(kind, args)
        if problem:
            return problem
    return module, args


def _check_softdep(kind: str, args: tuple[str, ...]) -> str | None:
    if kind == "weakdep":
        return None if args else "weakdep without modules"
    if not args:
        return "softdep without pre: or post: modules"
    if args[0] not in ("pre:", "post:"):
        return f"softdep expects 'pre:' or 'post:', found {args[0][:40]!r}"
    return None


def softdep_modules(directive: ModprobeDirective) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (pre, post) modules of a softdep directive."""
    pre: list[str] = []
    post: list[str] = []
    target = pre
    for word in directive.args:
        if word == "pre:":
            target = pre
        elif word == "post:":
            target = post
        else:
            target.append(normalise(word))
    return tuple(pre), tuple(post)


def option_pairs(directive: ModprobeDirective) -> list[tuple[str, str]]:
    """``options m a=1 b c="x y"`` -> [("a", "1"), ("b", ""), ("c", "x y")]; kmod passes all forms on."""
    return [kernel_param(word) for word in directive.args]


def kernel_args(text: str) -> list[str]:
    """Split module or kernel parameters as the kernel's next_arg() does: blanks
    separate them except inside double quotes. Each word keeps its quotes."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            break
        start, in_quote = i, False
        while i < n and (in_quote or not text[i].isspace()):
            if text[i] == '"':
                in_quote = not in_quote
            i += 1
        words.append(text[start:i])
    return words


def kernel_param(word: str) -> tuple[str, str]:
    """``a="b c"`` -> ("a", "b c"); ``"a=b c"`` -> ("a", "b c"); ``a`` -> ("a", ""): next_arg()'s unquoting."""
    quoted = word.startswith('"')
    if quoted:
        word = word[1:]
    name, equals, value = word.partition("=")
    if equals and value.startswith('"'):
        value, quoted = value[1:], True
    if quoted:
        if equals and value.endswith('"'):
            value = value[:-1]
        elif not equals and name.endswith('"'):
            name = name[:-1]
    return name, value


def parse_modules_load(text: str, file: str) -> tuple[list[ModulesLoadEntry], list[str]]:
    entries: list[ModulesLoadEntry] = []
    complaints: list[str] = []
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        words = line.split()
        # /etc/modules (Debian) allows arguments after the name; systemd's
        # modules-load.d does not, but the module is what matters here.
        if not all(c.isalnum() or c in "-_" for c in words[0]):
            complaints.append(f"{file}:{number}: {words[0][:40]!r} is not a module name")
            continue
        entries.append(ModulesLoadEntry(file, number, normalise(words[0])))
    return entries, complaints


def parse_cmdline_modules(args: tuple[str, ...]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """``module.param=value`` and ``modprobe.blacklist=a,b`` from the kernel command line."""
    options: dict[str, dict[str, str]] = {}
    blacklist: list[str] = []
    for arg in args:
        key, value = kernel_param(arg)
        if key == "modprobe.blacklist":
            blacklist.extend(normalise(m) for m in value.split(",") if m)
            continue
        module, dot, param = key.partition(".")
        if not dot or not module or not param or "/" in module:
            continue
        options.setdefault(normalise(module), {})[param] = value
    return options, blacklist
