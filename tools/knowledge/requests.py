"""Which declared firmware files a kernel series does without, from its request call sites.

A kernel's facts (generate.py) hold every firmware request amdgpu makes (csource.firmware_requests:
the name format, the AMDGPU_UCODE_* flag, a fallback, a tolerated failure) and every MODULE_FIRMWARE
declaration with its source file (csource.module_firmware). Here each file the module declares is
matched to the requests that can ask for it, and called optional only when all of them go on without
it. The requests that can ask for a file are those of the source files that declare it whose name
format matches it; where no declaring file has one, those of any file, unless a declaring file has a
request whose name was not read (then nothing is claimed). Of those, the most specific formats
(the most literal text) are taken: "amdgpu/%s_mec2%s.bin" asks for navi10_mec2.bin, not
"amdgpu/%s_mec%s.bin" with "2" for its suffix. A name that only a catch-all format ("amdgpu/%s.bin")
matches is never optional: the format says nothing about which file it is.
"""

from __future__ import annotations

import re
from typing import Any

# What the rules are told per file: "fallback" (a first choice; the driver asks for the second file
# when it fails), "optional" (AMDGPU_UCODE_OPTIONAL: the loader stays quiet and the caller decides),
# "tolerated" (the caller clears the error and goes on without it).
KINDS = ("fallback", "optional", "tolerated")
_CONVERSION = re.compile(r"%(?:[-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|z)?([a-zA-Z%])")


def format_regex(fmt: str) -> re.Pattern[str]:
    """A printf-style file name format as a regular expression, one group per conversion."""
    out: list[str] = []
    pos = 0
    for m in _CONVERSION.finditer(fmt):
        out.append(re.escape(fmt[pos : m.start()]))
        pos = m.end()
        conv = m.group(1)
        out.append(
            "%" if conv == "%" else r"(\d+)" if conv in "diu" else r"([0-9a-fA-F]+)" if conv in "xX" else r"([^/]*?)"
        )
    out.append(re.escape(fmt[pos:]))
    return re.compile("".join(out))


def specific(fmt: str) -> bool:
    """Does the format name something beyond a directory and an extension (not "amdgpu/%s.bin")?"""
    rest = _CONVERSION.sub("", fmt).removeprefix("amdgpu/").removesuffix(".bin")
    return re.search(r"[A-Za-z0-9]", rest) is not None


def kind(request: dict[str, Any]) -> str | None:
    if request["fallback_line"] is not None:
        return "fallback"
    if request["tolerated"]:
        return "tolerated"
    if request["flag"] == "optional":
        return "optional"
    return None


def _fallback_name(name: str, fmt: str, second: dict[str, Any] | None) -> str:
    """The second choice's file for ``name``: its format filled with what the first choice's ``fmt`` matched."""
    if second is None or len(second["names"]) != 1:
        return ""
    m = format_regex(fmt).fullmatch(name)
    values = list(m.groups()) if m else []
    target = second["names"][0]
    if len([c for c in _CONVERSION.findall(target) if c != "%"]) != len(values):
        return ""
    it = iter(values)
    return _CONVERSION.sub(lambda c: "%" if c.group(1) == "%" else next(it), target)


def _literal_length(fmt: str) -> int:
    return len(_CONVERSION.sub("", fmt))


def optional_files(facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{file: {"kind", "fallback", "requests": ["file:line function()"]}} for the module's declared files
    that every request able to ask for them does without (see the module docstring)."""
    requests: list[dict[str, Any]] = facts["firmware_requests"]
    module = set(facts["firmware"])
    declared: dict[str, set[str]] = {}
    for name, file, _line in facts["firmware_declared"]:
        if name in module:
            declared.setdefault(name, set()).add(file)
    unread = {r["file"] for r in requests if not r["names"]}
    patterns = [(r, fmt, format_regex(fmt)) for r in requests for fmt in r["names"]]
    by_line = {(r["file"], r["line"]): r for r in requests}
    out: dict[str, dict[str, Any]] = {}
    for name, files in sorted(declared.items()):
        matching = [(r, fmt) for r, fmt, rx in patterns if rx.fullmatch(name)]
        own = [(r, fmt) for r, fmt in matching if r["file"] in files]
        if not own and files & unread:
            continue  # a declaring file asks for a name not read: it may be this one
        use = own or matching
        if not use:
            continue
        # The most specific formats ask for it: "amdgpu/%s_mec2%s.bin" rather than "amdgpu/%s_mec%s.bin"
        # with "2" for the suffix, "amdgpu/%s_cap.bin" rather than psp's "amdgpu/%s" for any file.
        longest = max(_literal_length(fmt) for _r, fmt in use)
        use = [(r, fmt) for r, fmt in use if _literal_length(fmt) == longest]
        if not all(specific(fmt) for _r, fmt in use):
            continue
        kinds = [kind(r) for r, _fmt in use]
        if None in kinds:
            continue
        fallbacks = {
            _fallback_name(name, fmt, by_line.get((r["file"], r["fallback_line"])))
            for r, fmt in use
            if kind(r) == "fallback"
        }
        if set(kinds) == {"fallback"} and len(fallbacks) == 1:
            chosen, fallback = "fallback", fallbacks.pop()
        else:
            chosen, fallback = ("tolerated" if "tolerated" in kinds else "optional"), ""
        out[name] = {
            "kind": chosen,
            "fallback": fallback,
            "requests": sorted({f"{r['file']}:{r['line']} {r['function']}()" for r, _fmt in use}),
        }
    return out
