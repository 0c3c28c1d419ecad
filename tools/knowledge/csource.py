"""Read facts out of the kernel's C sources: KFD's GC IP table, amdgpu's PCI table, log formats.

Not a C parser: each reader knows the shape of one construct and fails loudly
(KnowledgeError) when the shape is not found, so that a kernel that rewrites
the construct stops the generator instead of yielding an empty table.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path


class KnowledgeError(Exception):
    pass


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_STRING = r'"(?:[^"\\\n]|\\.)*"'


def strip_comments(text: str) -> str:
    """Comments replaced by as many newlines as they held, so line numbers survive."""

    def blank(m: re.Match[str]) -> str:
        return "\n" * m.group(0).count("\n") if m.group(0).startswith("/*") else ""

    # Strings first, so that "//" or "/*" inside a literal is kept.
    out: list[str] = []
    pos = 0
    for m in re.finditer(_STRING + r"|/\*.*?\*/|//[^\n]*|'(?:[^'\\]|\\.)'", text, re.DOTALL):
        out.append(text[pos : m.start()])
        out.append(m.group(0) if m.group(0)[0] in "\"'" else blank(m))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _ifdef_stack(lines: list[str]) -> list[tuple[str, ...]]:
    """The #if conditions in force on each line (coarse: #else negates, #elif replaces)."""
    stack: list[str] = []
    result: list[tuple[str, ...]] = []
    for line in lines:
        s = line.strip()
        m = re.match(r"#\s*(ifdef|ifndef|if|elif|else|endif)\b\s*(.*)", s)
        if m:
            kind, cond = m.group(1), m.group(2).strip()
            if kind == "ifdef":
                stack.append(cond)
            elif kind == "ifndef":
                stack.append(f"!{cond}")
            elif kind == "if":
                stack.append(cond)
            elif kind in ("elif", "else") and stack:
                stack[-1] = f"!({stack[-1]})" if kind == "else" else cond
            elif kind == "endif" and stack:
                stack.pop()
        result.append(tuple(stack))
    return result


def kfd_support(path: Path) -> dict[str, dict[str, object]]:
    """KFD's supported devices in kfd_device.c: {"9.2.1" or "CHIP_HAWAII": {...}}.

    From about 5.15 kgd2kfd_probe switches on the asic type (pre-IP-discovery
    chips) and then on the GC IP version, assigning gfx_target_version and
    the kfd2kgd function table ``f2g``; a case without ``f2g`` is not
    supported. ``vf`` says whether SR-IOV virtual functions get ``f2g`` too.
    5.10 indexes ``kfd_supported_devices[CHIP_*][vf]`` instead.
    """
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    lines = text.splitlines()
    ifdefs = _ifdef_stack(lines)
    start = next((i for i, line in enumerate(lines) if re.match(r"struct kfd_(?:dev|node) \*kgd2kfd_probe\(|struct kfd_dev \*kgd2kfd_probe\(", line)), None)  # fmt: skip
    if start is None:
        raise KnowledgeError(f"{path}: no kgd2kfd_probe()")
    table = next((i for i, line in enumerate(lines) if "kfd_supported_devices[][2] = {" in line), None)
    result: dict[str, dict[str, object]] = {}
    if table is not None:
        names = dict(re.findall(r"static const struct kfd_device_info (\w+)_device_info = \{[^}]*?\.asic_name = \"(\w+)\"", text, re.DOTALL))  # fmt: skip
        for i in range(table + 1, len(lines)):
            if lines[i].startswith("};"):
                break
            m = re.match(r"\s*\[(CHIP_\w+)\]\s*=\s*\{\s*&?(\w+?)(?:_device_info)?\s*,\s*(NULL|&?\w+)\s*\}", lines[i])
            if m:
                result[m.group(1)] = {"gfx_target_version": [], "vf": m.group(3) != "NULL",
                                      "ifdef": list(ifdefs[i]), "asic_name": names.get(m.group(2), m.group(2)),
                                      "line": i + 1}  # fmt: skip
        if not result:
            raise KnowledgeError(f"{path}: empty kfd_supported_devices")
        return result
    pending: list[tuple[str, int]] = []
    versions: list[int] = []
    f2g = False
    vf = True
    depth = 0
    for i in range(start, len(lines)):
        line = lines[i]
        depth += line.count("{") - line.count("}")
        if i > start and depth <= 0 and "}" in line:
            break
        for m in re.finditer(r"case IP_VERSION\((\d+),\s*(\d+),\s*(\d+)\)\s*:|case (CHIP_\w+)\s*:", line):
            if not pending or versions or f2g:
                pending, versions, f2g, vf = ([] if not pending or versions or f2g else pending), [], False, True
            pending.append((m.group(4) or f"{m.group(1)}.{m.group(2)}.{m.group(3)}", i))
        stmt = line
        j = i
        while "gfx_target_version" in stmt and ";" not in stmt and j + 1 < len(lines):
            j += 1
            stmt += " " + lines[j]  # an assignment split over lines (9.4.3's ternary)
        m = re.search(r"gfx_target_version\s*=\s*([^;]+);", stmt)
        if m and pending and "device_info" not in line:
            versions += [int(v) for v in re.findall(r"\b\d{5,6}\b", m.group(1))]
        if re.search(r"\bf2g\s*=\s*&", line) and pending:
            f2g = True
            if re.search(r"if\s*\(\s*!vf\s*\)", lines[i - 1]) or "!vf" in line:
                vf = False
        if re.search(r"\bbreak\s*;", line) and pending:
            if f2g:
                for label, at in pending:
                    result[label] = {"gfx_target_version": sorted(set(versions)), "vf": vf,
                                     "ifdef": list(ifdefs[at]), "line": at + 1}  # fmt: skip
            pending, versions, f2g, vf = [], [], False, True
    if not result:
        raise KnowledgeError(f"{path}: no supported case in kgd2kfd_probe()")
    return result


def pci_table(path: Path) -> tuple[list[list[object]], bool]:
    """amdgpu_drv.c's pciidlist: [[device, "CHIP_X", [flags...], [ifdefs...]]], and whether
    a catch-all PCI_ANY_ID entry for CHIP_IP_DISCOVERY follows it (binds any newer AMD GPU)."""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    lines = text.splitlines()
    ifdefs = _ifdef_stack(lines)
    start = next((i for i, line in enumerate(lines) if re.match(r"static const struct pci_device_id pciidlist\[\]", line)), None)  # fmt: skip
    if start is None:
        raise KnowledgeError(f"{path}: no pciidlist[]")
    rows: list[list[object]] = []
    catch_all = False
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("};"):
            break
        m = re.match(r"\s*\{\s*0x1002\s*,\s*0x([0-9a-fA-F]{4})\s*,\s*PCI_ANY_ID\s*,\s*PCI_ANY_ID\s*,\s*0\s*,\s*0\s*,\s*([^}]+)\}", line)  # fmt: skip
        # 7.3 spells the rows { PCI_DEVICE(0x1002, 0x6780), .driver_data = CHIP_TAHITI }.
        m = m or re.match(
            r"\s*\{\s*PCI_DEVICE\(0x1002\s*,\s*0x([0-9a-fA-F]{4})\)\s*,\s*\.driver_data\s*=\s*([^}]+)\}", line
        )
        if m:
            flags = [f.strip().rstrip(",").strip() for f in m.group(2).split("|")]
            chip = next((f for f in flags if f.startswith("CHIP_")), "?")
            rows.append([int(m.group(1), 16), chip, sorted(f for f in flags if f != chip), list(ifdefs[i])])
        elif "CHIP_IP_DISCOVERY" in line or ("PCI_ANY_ID" in line and "PCI_DEVICE(0x1002" in line):
            catch_all = True
    if not rows:
        raise KnowledgeError(f"{path}: empty pciidlist[]")
    return rows, catch_all


def kms_version(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    parts = [re.search(rf"#define\s+KMS_DRIVER_{p}\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCHLEVEL")]
    if not all(parts):
        raise KnowledgeError(f"{path}: no KMS_DRIVER_MAJOR/MINOR/PATCHLEVEL")
    return ".".join(m.group(1) for m in parts if m)


# Printing macros and the index of their format argument. dev_dbg, pr_debug,
# DRM_DEBUG* and drm_dbg* are left out: they print nothing unless dynamic debug
# is switched on, so no bug report carries them by default.
MACROS: dict[str, tuple[str, int]] = {
    **{f"dev_{lvl}{sfx}": (lvl, 1) for lvl in ("emerg", "crit", "alert", "err", "warn", "notice", "info")
       for sfx in ("", "_once", "_ratelimited")},
    **{f"pr_{lvl}{sfx}": (lvl, 0) for lvl in ("emerg", "crit", "alert", "err", "warn", "notice", "info", "cont")
       for sfx in ("", "_once", "_ratelimited")},
    **{f"drm_{lvl}{sfx}": (lvl, 1) for lvl in ("err", "warn", "notice", "info")
       for sfx in ("", "_once", "_ratelimited")},
    "DRM_ERROR": ("err", 0), "DRM_WARN": ("warn", 0), "DRM_INFO": ("info", 0), "DRM_NOTE": ("notice", 0),
    "DRM_INFO_ONCE": ("info", 0), "DRM_WARN_ONCE": ("warn", 0), "DRM_ERROR_RATELIMITED": ("err", 0),
    "DRM_DEV_ERROR": ("err", 1), "DRM_DEV_INFO": ("info", 1), "DRM_DEV_ERROR_RATELIMITED": ("err", 1),
    "dev_err_probe": ("err", 2), "WARN": ("warn", 1), "WARN_ONCE": ("warn", 1),
}  # fmt: skip

# What the macro itself puts before the format (include/drm/drm_print.h): the
# DRM_* macros print "[drm] " or "[drm:func] *ERROR* "; drm_err() and friends
# print "[drm] *ERROR* " after the device name.
DRM_PREFIX = {
    "DRM_ERROR": "[drm:%ps] *ERROR* ", "DRM_ERROR_RATELIMITED": "[drm:%ps] *ERROR* ",
    "DRM_DEV_ERROR": "[drm:%ps] *ERROR* ", "DRM_DEV_ERROR_RATELIMITED": "[drm:%ps] *ERROR* ",
    "DRM_WARN": "[drm] ", "DRM_INFO": "[drm] ", "DRM_NOTE": "[drm] ", "DRM_INFO_ONCE": "[drm] ",
    "DRM_WARN_ONCE": "[drm] ", "DRM_DEV_INFO": "[drm] ",
    **{f"drm_{lvl}{sfx}": ("[drm] *ERROR* " if lvl == "err" else "[drm] ")
       for lvl in ("err", "warn", "notice", "info") for sfx in ("", "_once", "_ratelimited")},
}  # fmt: skip

_CALL = re.compile(r"\b(" + "|".join(sorted(MACROS, key=len, reverse=True)) + r")\s*\(")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "", "a": "", "0": ""}


def _unescape(literal: str) -> str:
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", lambda m: _ESCAPES.get(m.group(1), chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x" else ("" if m.group(1).isdigit() else m.group(1))), literal[1:-1])  # fmt: skip


def _args(text: str, pos: int) -> tuple[list[str], int]:
    """The top-level arguments of a call whose "(" ends at ``pos``."""
    depth, start, args = 1, pos, []
    i = pos
    while i < len(text) and depth:
        c = text[i]
        if c == '"':
            m = re.compile(_STRING).match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == "'":
            m = re.compile(r"'(?:[^'\\]|\\.)'").match(text, i)
            i = m.end() if m else i + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args, i


# Format-string macros from include/linux and the amd headers, expanded where they sit
# between literals (e.g. "... %" PRIx64 or "..." HW_REV ...).
_MACRO_LITERALS = {"KBUILD_MODNAME": "amdgpu", "PRIx64": "llx", "PRIu64": "llu", "PRId64": "lld",
                   "__func__": "%s", "KERN_CONT": "", "KERN_INFO": "", "KERN_ERR": "", "KERN_WARNING": ""}  # fmt: skip


def literal(arg: str) -> str | None:
    """The string a format argument spells: adjacent literals joined, known macros expanded."""
    arg = arg.strip()
    parts = re.findall(_STRING + r"|\w+|\S", arg)
    if not parts or not any(p.startswith('"') for p in parts):
        return None
    out: list[str] = []
    for p in parts:
        if p.startswith('"'):
            out.append(_unescape(p))
        elif p in _MACRO_LITERALS:
            out.append(_MACRO_LITERALS[p])
        else:
            return None  # a computed format (a variable, a ternary...): no fixed text
    return "".join(out)


def prefix_macros(text: str) -> dict[str, str]:
    """pr_fmt / dev_fmt defined in a file: {"pr_fmt": "amdgpu: ", ...}."""
    found: dict[str, str] = {}
    for m in re.finditer(r"#\s*define\s+(pr_fmt|dev_fmt)\(fmt\)\s+(.*)", text):
        body = m.group(2).split(" fmt", 1)[0]
        value = literal(body)
        if value is not None:
            found[m.group(1)] = value
    return found


def messages(path: Path, rel: str, inherited: dict[str, str]) -> list[list[object]]:
    """Every printed format in a file: [level, macro, prefix, format, file, line]."""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    prefixes = {**inherited, **prefix_macros(text)}
    out: list[list[object]] = []
    for m in _CALL.finditer(text):
        macro = m.group(1)
        if text[m.start() - 8 : m.start()].rstrip().endswith("#define"):
            continue
        level, index = MACROS[macro]
        args, _ = _args(text, m.end())
        if macro.startswith("WARN"):
            index = 1
        if len(args) <= index:
            continue
        fmt = literal(args[index])
        if fmt is None:
            continue
        if macro.startswith("pr_"):
            prefix = prefixes.get("pr_fmt", "")
        elif macro.startswith("dev_") or macro.startswith("DRM_DEV"):
            prefix = prefixes.get("dev_fmt", "") + DRM_PREFIX.get(macro, "")
        else:
            prefix = DRM_PREFIX.get(macro, "")
        line = text.count("\n", 0, m.start()) + 1
        out.append([level, macro, prefix, fmt.rstrip("\n"), rel, line])
    return out


def header_prefixes(root: Path, rel: Path, cache: dict[Path, dict[str, str]]) -> dict[str, str]:
    """pr_fmt/dev_fmt a .c file gets from the local headers it includes (amdgpu.h defines both)."""
    seen: set[Path] = set()
    found: dict[str, str] = {}

    def visit(path: Path, depth: int) -> None:
        if path in seen or depth > 4 or not path.exists():
            return
        seen.add(path)
        if path not in cache:
            cache[path] = prefix_macros(path.read_text(encoding="utf-8", errors="replace"))
        for key, value in cache[path].items():
            found.setdefault(key, value)
        for inc in re.findall(r'#\s*include\s+"([^"]+)"', path.read_text(encoding="utf-8", errors="replace")):
            for base in (path.parent, root / "drivers/gpu/drm/amd/amdgpu", root / "drivers/gpu/drm/amd/include"):
                if (base / inc).exists():
                    visit(base / inc, depth + 1)
                    break

    source = root / rel
    for inc in re.findall(r'#\s*include\s+"([^"]+)"', source.read_text(encoding="utf-8", errors="replace")):
        for base in (source.parent, root / "drivers/gpu/drm/amd/amdgpu", root / "drivers/gpu/drm/amd/include"):
            if (base / inc).exists():
                visit(base / inc, 1)
                break
    return found


# --- firmware requests -------------------------------------------------------------------------------
#
# Which files amdgpu asks the firmware loader for, and which of them it does without. Read from the
# calls themselves: request_firmware() and its variants, and amdgpu_ucode_request() (6.1: a wrapper
# taking a name; 6.12: a printf-style format; 7.2: a format after an explicit AMDGPU_UCODE_OPTIONAL /
# AMDGPU_UCODE_REQUIRED flag). What is recorded for each call is only what its text says:
#
# - the flag, where the call carries one;
# - a fallback: the statement right after the call tests its result (not its negation) and the branch
#   taken on failure asks for another file into the same firmware pointer (gfx_v8_0.c's <chip>_pfp_2.bin
#   then <chip>_pfp.bin; amdgpu_mes.c's <gc>_mes_2.bin then <gc>_mes.bin);
# - a tolerated failure: the failure branch of that test clears the result (``err = 0;``), so the caller
#   goes on without the file (gfx_v9/v10's <chip>_mec2.bin, 6.1 psp's <chip>_cap.bin), or returns 0 from
#   the function (5.10/6.1 amdgpu_dm.c's dm_dmub_sw_init(): "DMUB firmware loading failed", then
#   ``return 0;``). A test of one errno (``r == -ENOENT``) covers a missing file only when that errno is
#   what the call gives for one (``missing``: the loader's -ENOENT, read by loader_missing_errno();
#   amdgpu_ucode_request()'s -ENODEV, read by ucode_request_missing_errno()); without it, decides nothing.
#
# The names are the format the call spells, or, for a name buffer, what the snprintf() that fills it
# writes: in the same straight run of statements before the call, or in each branch of a complete
# if/else chain right before it whose every branch is that one write; a ternary between two literals
# gives both. A local ``const char *`` name gives every value the function assigns it before the call
# (amdgpu_dm.c's ``fw_name_dmub = FIRMWARE_RENOIR_DMUB;`` in each case of a switch), each a literal or a
# macro the file, or a header it includes from its own directory, defines as one; NULL is no name.
# A name built any other way (amdgpu_mes.c: writes in an if/else whose branches also set need_retry; a
# name variable given any other value) is left unread ([]) rather than guessed.

FIRMWARE_CALLS = ("amdgpu_ucode_request", "request_firmware", "request_firmware_direct", "firmware_request_nowarn")
_REQUEST = re.compile(r"\b(" + "|".join(FIRMWARE_CALLS) + r")\s*\(")
_CONVERSION = re.compile(r"%(?:[-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?([a-zA-Z%])")
UCODE_FLAGS = {"AMDGPU_UCODE_OPTIONAL": "optional", "AMDGPU_UCODE_REQUIRED": "required"}


def ucode_request_signature(header: Path) -> str | None:
    """How amdgpu_ucode.h declares amdgpu_ucode_request(): "name" (6.1: const char *fw_name),
    "format" (6.12: const char *fmt, ...), "flag+format" (7.2: enum amdgpu_ucode_required, then the
    format); None when the header does not declare it (5.10)."""
    if not header.exists():
        return None
    text = strip_comments(header.read_text(encoding="utf-8", errors="replace"))
    m = re.search(r"\bint\s+amdgpu_ucode_request\s*\(", text)
    if m is None:
        return None
    params = re.sub(r"\s+", " ", ",".join(_args(text, m.end())[0]))
    shapes = {
        "struct amdgpu_device *adev, const struct firmware **fw, const char *fw_name": "name",
        "struct amdgpu_device *adev, const struct firmware **fw, const char *fmt, ...": "format",
        "struct amdgpu_device *adev, const struct firmware **fw, enum amdgpu_ucode_required required, "
        "const char *fmt, ...": "flag+format",
    }
    shape = shapes.get(re.sub(r"\s*,\s*", ", ", params.strip()))
    if shape is None:
        raise KnowledgeError(f"{header}: amdgpu_ucode_request({params.strip()}) has a shape not read")
    return shape


def _block_end(text: str, open_pos: int) -> int:
    """The index just past the "}" matching the "{" at ``open_pos`` (string and char literals skipped)."""
    return _args(text, open_pos + 1)[1]


def _functions(text: str) -> list[tuple[str, int, int]]:
    """(name, body start, body end) of each function defined in the file: kernel style puts the
    opening brace of a function body alone at the start of a line."""
    out: list[tuple[str, int, int]] = []
    for m in re.finditer(r"^\{", text, re.M):
        head = text[max(0, m.start() - 600) : m.start()]
        head = re.split(r"[;}]\s*$|[;}]\s*\n", head)[-1]
        name = re.findall(r"\b(\w+)\s*\(", head)
        if name:
            out.append((name[0], m.start(), _block_end(text, m.start())))
    return out


def _statement_end(text: str, pos: int) -> int:
    """Just past the ";" ending the statement that continues at ``pos`` (parentheses skipped)."""
    i = pos
    while i < len(text):
        c = text[i]
        if c == "(":
            i = _args(text, i + 1)[1]
            continue
        if c == '"':
            m = re.compile(_STRING).match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == ";":
            return i + 1
        i += 1
    return i


def _branch(text: str, pos: int) -> tuple[int, int]:
    """The statement or block starting at ``pos`` (after whitespace): (start, end)."""
    start = pos + len(text[pos:]) - len(text[pos:].lstrip())
    if text.startswith("{", start):
        return start, _block_end(text, start)
    if re.match(r"if\s*\(", text[start:]):
        cond_end = _args(text, text.index("(", start) + 1)[1]
        _s, end = _branch(text, cond_end)
        follow = re.match(r"\s*else\b", text[end:])
        if follow:
            return start, _branch(text, end + follow.end())[1]
        return start, end
    return start, _statement_end(text, start)


def _next_test(text: str, pos: int, limit: int) -> tuple[str, int, int, int, int] | None:
    """The ``if`` that runs next after the statement ending at ``pos``: (condition, then start, then end,
    else start, else end), else start/end equal to then end when there is no else. Steps over the
    ``else`` branches of an if/else the call sits in, and out of at most two enclosing blocks."""
    i = pos
    for _ in range(6):
        rest = text[i:limit]
        m = re.match(r"\s*else\b", rest)
        if m:
            i = _branch(text, i + m.end())[1]
            continue
        m = re.match(r"\s*\}", rest)
        if m:
            i += m.end()
            continue
        m = re.match(r"\s*if\s*\(", rest)
        if not m:
            return None
        args, cond_end = _args(text, i + m.end())
        then_start, then_end = _branch(text, cond_end)
        other = re.match(r"\s*else\b", text[then_end:limit])
        if other:
            else_start, else_end = _branch(text, then_end + other.end())
        else:
            else_start = else_end = then_end
        return ",".join(args), then_start, then_end, else_start, else_end
    return None


_TERNARY = re.compile(r"^[^?]*\?\s*(" + _STRING + r")\s*:\s*(" + _STRING + r")\s*$", re.S)
_WRITE = r"\b(snprintf|scnprintf|sprintf)\s*\(\s*{}\s*,"
MAX_ALTERNATIVES = 32  # 7.3 amdgpu_dm_dmub.c assigns its DMCUB name in 20 cases


def _fill(fmt: str, args: list[str], body: str, at: int, macros: dict[str, str] | None = None) -> list[str]:
    """The names ``fmt`` spells with its %s arguments put in: a string literal, each side of a ternary
    between two literals, what a buffer filled before ``at`` holds, or, where the format is only "%s"
    (the whole name), what a local name pointer was assigned (``_assigned``); a runtime value (a chip
    name variable) stays a conversion. One name per combination of choices; [] when an argument is a
    choice this does not read."""
    names = [""]
    pos = 0
    index = 0
    for m in _CONVERSION.finditer(fmt):
        piece = fmt[pos : m.start()]
        pos = m.end()
        arg = args[index].strip() if index < len(args) and m.group(1) != "%" else ""
        index += m.group(1) != "%"
        if m.group(1) == "%":
            values = ["%%"]
        elif m.group(1) != "s":
            values = [m.group(0)]
        elif re.fullmatch(_STRING + r"(?:\s*" + _STRING + r")*", arg):
            value = literal(arg)
            values = [m.group(0) if value is None else value.replace("%", "%%")]
        elif (ternary := _TERNARY.match(arg)) is not None:
            values = [str(literal(ternary.group(i))).replace("%", "%%") for i in (1, 2)]
        elif '"' in arg:
            return []
        elif re.fullmatch(r"\w+", arg) and _written(arg, body):
            values = _buffer(arg, body, at) or [m.group(0)]  # a buffer the function fills, where known
        elif fmt == m.group(0) and re.fullmatch(r"\w+", arg) and (assigned := _assigned(arg, body, at, macros or {})):
            values = [v.replace("%", "%%") for v in assigned]  # "%s" of a whole name (6.12 amdgpu_dm.c)
        else:
            values = [m.group(0)]
        names = [n + piece + v for n in names for v in values]
        if len(names) > MAX_ALTERNATIVES:
            return []
    return [n + fmt[pos:] for n in names]


def _written(name: str, body: str) -> bool:
    """Is ``name`` a buffer the function fills with snprintf()/sprintf() (a file name it builds)?"""
    return re.search(_WRITE.format(re.escape(name)), body) is not None


def _assigned(name: str, body: str, at: int, macros: dict[str, str]) -> list[str]:
    """The file names a local ``const char *name`` may hold at ``at``: every value the function assigns it
    before (its initialiser included), each a string literal or a macro in ``macros``; NULL is no name.
    [] when ``name`` is no local pointer of the function, its address is taken, or any value is another
    expression (a name built at run time): then the name is not read."""
    before = body[:at]
    if not re.search(rf"\bchar\s*\*\s*(?:const\s+)?{re.escape(name)}\s*[=;,]", before):
        return []
    if re.search(rf"&\s*{re.escape(name)}\b", body):
        return []
    values: set[str] = set()
    for m in re.finditer(rf"(?<![\w.>]){re.escape(name)}\s*=(?!=)\s*([^;]*);", before):
        value = m.group(1).strip()
        if value == "NULL":
            continue
        named = literal(value) if value.startswith('"') else macros.get(value)
        if named is None:
            return []
        values.add(named)
    return sorted(values)


def _write_names(body: str, write: re.Match[str]) -> list[str]:
    """The names one snprintf()/sprintf() writes."""
    args, _end = _args(body, body.index("(", write.start()) + 1)
    fmt_at = 1 if write.group(1) == "sprintf" else 2
    fmt = literal(args[fmt_at]) if len(args) > fmt_at else None
    return [] if fmt is None else _fill(fmt, args[fmt_at + 1 :], body, write.start())


def _statement_start(body: str, pos: int) -> bool:
    """Does a statement begin at ``pos`` (after a ";", a brace or a case label, not inside an if/else)?"""
    before = re.split(r"[;{}]", body[:pos])[-1]
    return not re.sub(r"\b(?:case\b[^:]+|default\s*):(?!:)", "", before).strip()


def _buffer(name: str, body: str, at: int) -> list[str]:
    """What snprintf()/sprintf() may have written into the buffer ``name`` when the statement at ``at``
    runs: the write in the straight run of statements before it, or each branch of the complete
    if/else chain right before it whose every branch is that one write (gfx_v9_0.c: sjt_mec2 under
    SR-IOV on Aldebaran, else mec2). [] when it was written any other way."""
    write = re.compile(_WRITE.format(re.escape(name)))
    found = None
    for m in write.finditer(body[:at]):
        found = m
    if found is None:
        return []
    between = body[found.start() : at]
    if _statement_start(body, found.start()) and not re.search(
        r"[{}]|\b(?:if|else|case|default|for|while|do|switch)\b|^\s*\w+\s*:(?!:)", between, re.M
    ):
        return _write_names(body, found)
    for chain in reversed(list(re.finditer(r"\bif\s*\(", body[:at]))):
        if re.search(r"\belse\s*$", body[: chain.start()]) or not _statement_start(body, chain.start()):
            continue
        _start, end = _branch(body, chain.start())
        if not re.fullmatch(r"\s*(?:\w+\s*=\s*)?", body[end:at]):
            return []  # the nearest complete statement before the call is not an if/else chain
        return _chain_names(body, chain.start(), end, write)
    return []


def _chain_names(body: str, start: int, end: int, write: re.Pattern[str]) -> list[str]:
    """The names an if / else if / else chain writes, one write per branch; [] if it is any other shape."""
    names: list[str] = []
    pos = start
    while pos < end:
        m = re.compile(r"\s*if\s*\(").match(body, pos)
        if m:
            pos = _args(body, m.end())[1]
        b_start, b_end = _branch(body, pos)
        branch = body[b_start:b_end].strip().removeprefix("{").removesuffix("}").strip()
        w = write.match(branch)
        if w is None or _statement_end(branch, w.start()) != len(branch):
            return []
        names += _write_names(branch, w)
        other = re.compile(r"\s*else\b").match(body, b_end)
        if not m:
            return names  # the final else
        if not other or other.end() > end:
            return []  # no final else: the buffer may hold what it held before
        pos = other.end()
    return []


def _mentions(cond: str, var: str) -> bool:
    """Does an if condition test ``var`` as a failure (``err``, ``err == -ENOENT``, ``r && ...``), not ``!err``?"""
    return re.search(rf"(?<![!\w>.]){re.escape(var)}\b(?!\s*==\s*0\b)", cond) is not None


def _own_level(text: str) -> str:
    """A branch's statements at its own level: the text of its nested blocks left out."""
    inner = text.strip()
    if inner.startswith("{"):
        inner = inner[1:-1]
    depth = 0
    flat = []
    for c in inner:
        depth += c == "{"
        if depth == 0:
            flat.append(c)
        depth -= c == "}"
    return "".join(flat)


def _clears(text: str, var: str) -> bool:
    """Does a branch set ``var`` to 0 at its own level (not in a nested block)?"""
    return re.search(rf"(?:^|[;\s]){re.escape(var)}\s*=\s*0\s*;", _own_level(text)) is not None


def _returns_success(text: str) -> bool:
    """Does a branch return 0 at its own level (the function reports success without the file)?"""
    return re.search(r"(?:^|[;\s)])return\s*\(?\s*0\s*\)?\s*;", _own_level(text)) is not None


def _meets_missing(cond: str, var: str, missing: str | None) -> bool:
    """Does a missing file take the failure branch of ``cond``? A test of one errno (``r == -ENOENT``)
    only when it is the call's for a missing file (``missing``, None: not known); ``r != -E...`` never;
    any other failure test (``r``, ``!r``'s else, ``r && need_retry``) does."""
    if re.search(rf"\b{re.escape(var)}\s*!=\s*-?E[A-Z]+\b", cond):
        return False
    tested = re.findall(rf"\b{re.escape(var)}\s*==\s*(-E[A-Z]+)\b", cond)
    return not tested or (missing is not None and missing in tested)


def _call_arguments(
    call: str, args: list[str], signature: str | None, where: str
) -> tuple[str | None, str, str, list[str]]:
    """(flag, firmware pointer, name or format argument, format arguments) of a request call."""
    if call != "amdgpu_ucode_request":
        if len(args) < 2 or not args[1].strip():
            raise KnowledgeError(f"{where}: {call}() without a firmware name argument")
        return None, args[0], args[1], []
    if signature is None:
        raise KnowledgeError(f"{where}: amdgpu_ucode_request() called, but amdgpu_ucode.h declares none")
    shift = 3 if signature == "flag+format" else 2
    if len(args) <= shift or not args[shift].strip():
        raise KnowledgeError(f"{where}: amdgpu_ucode_request() without a firmware name argument")
    flag = None
    if signature == "flag+format":
        flag = UCODE_FLAGS.get(args[2].strip())
        if flag is None:
            raise KnowledgeError(f"{where}: amdgpu_ucode_request() without an AMDGPU_UCODE_* flag ({args[2].strip()})")
    return flag, args[1], args[shift], [] if signature == "name" else args[shift + 1 :]


def _request_names(spelled: str, extra: list[str], body: str, at: int, macros: dict[str, str]) -> list[str]:
    """The file name formats a request may ask for (see the comment above), [] where they are not read."""
    fmt = literal(spelled)
    if fmt is not None:
        names = _fill(fmt, extra, body, at, macros)
    elif re.fullmatch(r"\s*\w+\s*", spelled):
        names = _buffer(spelled.strip(), body, at) or _assigned(spelled.strip(), body, at, macros)
    else:
        names = []
    if any(not _CONVERSION.sub("", n) for n in names):
        return []  # "%s" of a name built elsewhere: nothing known
    return sorted(set(names))


def firmware_requests(
    path: Path, rel: str, ucode_signature: str | None, missing: dict[str, str] | None = None
) -> list[dict[str, object]]:
    """Every firmware request in a file: {"file", "line", "function", "call", "flag", "target", "names",
    "spelled", "fallback_line", "first_choice_line", "tolerated"} (see the comment above). ``missing``:
    the errno each call gives for a missing file ({"request_firmware": "-ENOENT", ...})."""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    functions = _functions(text)
    macros = string_macros(path)
    found: list[dict[str, object]] = []
    spans: list[tuple[int, int, int, str | None]] = []  # call start, statement end, body end, result variable
    for m in _REQUEST.finditer(text):
        call = m.group(1)
        if re.search(r"(?:\bint|EXPORT_SYMBOL\w*\(|#\s*define)\s*$", text[max(0, m.start() - 40) : m.start()]):
            continue  # a definition or prototype, not a call
        line = text.count("\n", 0, m.start()) + 1
        function = next(((n, s, e) for n, s, e in functions if s < m.start() < e), None)
        if function is None:
            raise KnowledgeError(f"{rel}:{line}: {call}() outside any function body read")
        fname, body_start, body_end = function
        if fname == "amdgpu_ucode_request":
            continue  # the wrapper's own request_firmware()/firmware_request_nowarn()
        args, end = _args(text, m.end())
        flag, target, spelled, extra = _call_arguments(call, args, ucode_signature, f"{rel}:{line}")
        names = _request_names(spelled, extra, text[body_start:body_end], m.start() - body_start, macros)
        found.append({"file": rel, "line": line, "function": fname, "call": call, "flag": flag,
                      "target": re.sub(r"\s+", "", target), "names": names,
                      "spelled": re.sub(r"\s+", " ", ", ".join(a.strip() for a in [spelled, *extra])),
                      "fallback_line": None, "first_choice_line": None, "tolerated": False})  # fmt: skip
        result = re.search(r"(\w+)\s*=\s*$", text[max(0, m.start() - 40) : m.start()])
        spans.append((m.start(), _statement_end(text, end), body_end, result.group(1) if result else None))
    _link(text, found, spans, missing or {})
    return found


def _link(
    text: str, found: list[dict[str, object]], spans: list[tuple[int, int, int, str | None]], missing: dict[str, str]
) -> None:
    """Mark each request whose failure branch asks for another file into the same pointer (a fallback),
    or else goes on without it: clears the error or returns 0, on a test a missing file meets (tolerated)."""
    for req, (_start, stmt_end, body_end, var) in zip(found, spans, strict=True):
        test = _next_test(text, stmt_end, body_end) if var else None
        if var is None or test is None:
            continue
        cond, then_start, then_end, else_start, else_end = test
        negated = re.fullmatch(rf"\s*!\s*{re.escape(var)}\s*", cond) is not None
        failure = (else_start, else_end) if negated else (then_start, then_end) if _mentions(cond, var) else None
        if failure is None or failure[0] == failure[1]:
            continue
        for other, (other_start, *_rest) in zip(found, spans, strict=True):
            if failure[0] <= other_start < failure[1] and other["target"] == req["target"] and other is not req:
                req["fallback_line"] = other["line"]
                other["first_choice_line"] = req["line"]
                break
        else:
            branch = text[failure[0] : failure[1]]
            goes_on = _clears(branch, var) or _returns_success(branch)
            req["tolerated"] = goes_on and _meets_missing(cond, var, missing.get(str(req["call"])))


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(.+?)[ \t]*$", re.M)
_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"/]+)"', re.M)


@functools.lru_cache(maxsize=4096)
def _own_macros(path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """The string-literal macros a file #defines itself, and the headers it includes by bare name."""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    macros = {m.group(1): value for m in _DEFINE.finditer(text) if (value := literal(m.group(2))) is not None}
    return macros, tuple(_LOCAL_INCLUDE.findall(text))


def string_macros(path: Path) -> dict[str, str]:
    """The macros a source file may use as string literals: its own #defines of one
    (``#define FIRMWARE_RENOIR_DMUB "amdgpu/renoir_dmcub.bin"``), then those of the headers it includes
    from its own directory, and theirs (7.3's amdgpu_dm.c and amdgpu_dm_dmub.c take theirs from
    amdgpu_dm_dmub.h). The nearer definition wins."""
    found: dict[str, str] = {}
    seen: set[Path] = set()
    queue = [path]
    while queue:
        current = queue.pop(0)
        if current in seen or not current.is_file() or len(seen) > 64:
            continue
        seen.add(current)
        own, includes = _own_macros(current)
        for key, value in own.items():
            found.setdefault(key, value)
        queue += [current.parent / name for name in includes]
    return found


def loader_missing_errno(main_c: Path) -> str:
    """The error the firmware loader gives for a file it does not find: the one _request_firmware()
    (drivers/base/firmware_loader/main.c) tries the compressed and the platform copies on
    (``ret == -ENOENT && nondirect``), and returns when they are not found either."""
    text = strip_comments(main_c.read_text(encoding="utf-8", errors="replace"))
    body = next((text[s:e] for n, s, e in _functions(text) if n == "_request_firmware"), None)
    if body is None:
        raise KnowledgeError(f"{main_c}: no _request_firmware() body read")
    found: set[str] = set(re.findall(r"\bret\s*==\s*(-E[A-Z]+)\s*&&\s*nondirect\b", body))
    if len(found) != 1:
        raise KnowledgeError(f"{main_c}: _request_firmware()'s not-found error (ret == -E... && nondirect) not found")
    return found.pop()


def ucode_request_missing_errno(ucode_c: Path) -> str | None:
    """What amdgpu_ucode_request() returns when its request fails (a missing file among the causes): the
    ``if (r) return -E...;`` after its request_firmware()/firmware_request_nowarn() (6.1 on: -ENODEV).
    None where amdgpu_ucode.c defines no amdgpu_ucode_request() (5.10); another shape stops the generator."""
    text = strip_comments(ucode_c.read_text(encoding="utf-8", errors="replace"))
    body = next((text[s:e] for n, s, e in _functions(text) if n == "amdgpu_ucode_request"), None)
    if body is None:
        return None
    call = re.search(r"\b(\w+)\s*=\s*(?:request_firmware|firmware_request_nowarn)\s*\(", body)
    ret = call and re.compile(rf"\bif\s*\(\s*{call.group(1)}\s*\)\s*return\s+(-E[A-Z]+)\s*;").search(body, call.end())
    if not ret:
        raise KnowledgeError(f"{ucode_c}: amdgpu_ucode_request(): no 'if (r) return -E...;' after its request")
    return ret.group(1)


def module_firmware(path: Path, rel: str) -> list[list[object]]:
    """The files a source file declares with MODULE_FIRMWARE(): [[name, file, line]]. The argument is
    a literal or a macro the file (or a header of its directory it includes, string_macros) #defines as
    one (amdgpu_uvd.c's FIRMWARE_POLARIS10); any other spelling stops the generator rather than
    dropping a declaration."""
    text = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
    macros = string_macros(path)
    out: list[list[object]] = []
    for m in re.finditer(r"\bMODULE_FIRMWARE\s*\(", text):
        if text[max(0, m.start() - 12) : m.start()].rstrip().endswith("define"):
            continue
        args, _end = _args(text, m.end())
        arg = args[0].strip() if len(args) == 1 else ""
        name = literal(arg) if arg.startswith('"') else macros.get(arg)
        if name is None:
            raise KnowledgeError(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: MODULE_FIRMWARE({arg}) not read")
        out.append([name, rel, text.count("\n", 0, m.start()) + 1])
    return out
