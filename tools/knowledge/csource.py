"""Read facts out of the kernel's C sources: KFD's GC IP table, amdgpu's PCI table, log formats.

Not a C parser: each reader knows the shape of one construct and fails loudly
(KnowledgeError) when the shape is not found, so that a kernel that rewrites
the construct stops the generator instead of yielding an empty table.
"""

from __future__ import annotations

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
