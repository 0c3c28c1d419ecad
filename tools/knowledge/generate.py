#!/usr/bin/env python3
"""Generate kfdguard's knowledge data from Debian's archive (see README.md).

    python3 tools/knowledge/generate.py [--offline] [--check] [--update-pins] [--report docs/KNOWLEDGE.md]

Every input is read at the version pins.tsv names (a newer one in the archive
is reported, not taken); --update-pins takes the archive's newest instead and
rewrites pins.tsv. --offline uses only the cache (fails on a cold cache);
--check writes nothing and exits 1 when the committed data (or, with
--update-pins, the pin file) differ from a fresh run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent.parent
sys.path.insert(0, str(TREE))  # run as a script: tools.knowledge and kfdguard from this tree

from tools.knowledge.archive import (  # noqa: E402
    DM_DIR,
    ArchiveError,
    cache_dir,
    deb_members,
    download,
    extract,
    extract_kernel_tree,
    mirrors,
)
from tools.knowledge.csource import (  # noqa: E402
    KnowledgeError,
    firmware_requests,
    header_prefixes,
    kfd_support,
    kms_version,
    loader_missing_errno,
    messages,
    module_firmware,
    pci_table,
    ucode_request_missing_errno,
    ucode_request_signature,
)
from tools.knowledge.pins import PIN_FILE, NotServed, PinError, Resolver, dump, load  # noqa: E402
from tools.knowledge.sources import FIRMWARE_SUITES, IDS_PACKAGES, KERNELS  # noqa: E402

DATA = TREE / "kfdguard/knowledge/data"
GENERATED = TREE / "kfdguard/knowledge/generated.py"
MESSAGE_DIRS = ("drivers/gpu/drm/amd/amdgpu", "drivers/gpu/drm/amd/amdkfd")
# Driver-core files whose messages name amdgpu's failures (probe, firmware loading).
CORE_FILES = ("drivers/base/dd.c", "drivers/base/firmware_loader/main.c")
# Where amdgpu.ko's firmware requests and MODULE_FIRMWARE lines are read (pm/ is in the module too, and
# display/amdgpu_dm/, whose DMCU/DMCUB requests are in amdgpu_dm.c, from 7.3 also amdgpu_dm_dmub.c).
# Of amdgpu_dm/'s messages only those about firmware are kept, as of the driver core's.
FIRMWARE_DIRS = (*MESSAGE_DIRS, "drivers/gpu/drm/amd/pm", DM_DIR)
UCODE_H = "drivers/gpu/drm/amd/amdgpu/amdgpu_ucode.h"
UCODE_C = "drivers/gpu/drm/amd/amdgpu/amdgpu_ucode.c"
LOADER_C = "drivers/base/firmware_loader/main.c"


def modinfo(ko: Path, field: str) -> list[str]:
    out = subprocess.run(
        ["modinfo", "-0", "-F", field, str(ko)], capture_output=True, text=True, check=True, timeout=120
    )
    return [item.strip() for item in out.stdout.split("\0") if item.strip()]


def module_facts(ko: Path) -> dict[str, object]:
    types = dict(entry.split(":", 1) for entry in modinfo(ko, "parmtype"))
    descriptions: dict[str, str] = {}
    for entry in modinfo(ko, "parm"):
        name, _, desc = entry.partition(":")
        descriptions[name] = re.sub(r"\s*\((?:[a-z]+)\)$", "", desc.strip())
    params = {name: [kind, descriptions.get(name, "")] for name, kind in types.items()}
    aliases = modinfo(ko, "alias")
    pci = sorted({int(m.group(1), 16) for a in aliases if (m := re.match(r"pci:v00001002d0000([0-9A-F]{4})", a))})
    return {"params": params, "firmware": sorted(set(modinfo(ko, "firmware"))), "alias_devices": pci,
            "alias_catch_all": any(a.startswith("pci:v00001002d*") for a in aliases), "aliases": len(aliases)}  # fmt: skip


def kernel_facts(label: str, suites: tuple[str, ...], resolver: Resolver, offline: bool) -> dict[str, object]:
    k = resolver.kernel(label, suites)
    trees = cache_dir() / "trees"
    image = extract(download(k.image, offline=offline), trees / f"image-{k.image.version}", ["*/amdgpu.ko*"])
    kos = sorted(image.rglob("amdgpu.ko*"))
    if not kos:
        raise ArchiveError(f"{k.image.name} has no amdgpu.ko")
    src = extract_kernel_tree(download(k.source, offline=offline), k.series, trees / f"source-{k.source.version}")
    root = src / f"linux-source-{k.series}"
    makefile = (root / "Makefile").read_text()
    parts = [re.search(rf"^{f}\s*=\s*(\S*)", makefile, re.M) for f in ("VERSION", "PATCHLEVEL", "SUBLEVEL")]
    if not all(parts):
        raise KnowledgeError(f"{root / 'Makefile'}: no VERSION/PATCHLEVEL/SUBLEVEL")
    upstream = ".".join(m.group(1) for m in parts if m)
    kfd_c = "drivers/gpu/drm/amd/amdkfd/kfd_device.c"
    drv_c = "drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c"
    rows, catch_all = pci_table(root / drv_c)
    cache: dict[Path, dict[str, str]] = {}
    msgs: list[list[object]] = []
    for d in MESSAGE_DIRS:
        for path in sorted((root / d).rglob("*.c")):
            rel = path.relative_to(root)
            msgs += messages(path, str(rel), header_prefixes(root, rel, cache))
    for rel_s in CORE_FILES:
        if (root / rel_s).exists():
            msgs += [m for m in messages(root / rel_s, rel_s, {}) if "probe" in str(m[3]) or "firmware" in str(m[3])]
    for path in sorted((root / DM_DIR).glob("*.c")):
        rel = path.relative_to(root)
        msgs += [m for m in messages(path, str(rel), header_prefixes(root, rel, cache)) if "firmware" in str(m[3])]
    requests, declared, signature = firmware_facts_of(root)
    # module_param_unsafe taints the kernel when set: read which parameters use it, and the
    # queue limit kfd_init() enforces (kfd_priv.h), rather than remembering either.
    decl = "\n".join((root / f).read_text(errors="replace") for d in MESSAGE_DIRS for f in os.listdir(root / d)
                     if f.endswith(".c") and "module_param" in (root / d / f).read_text(errors="replace")
                     for f in [f"{d}/{f}"])  # fmt: skip
    unsafe = sorted(set(re.findall(r"module_param(?:_named)?_unsafe\(\s*(\w+)", decl)))
    priv = (root / "drivers/gpu/drm/amd/amdkfd/kfd_priv.h").read_text(errors="replace")
    procs = re.search(r"#define\s+KFD_MAX_NUM_OF_PROCESSES\s+(\d+)", priv)
    per_proc = re.search(r"#define\s+KFD_MAX_NUM_OF_QUEUES_PER_PROCESS\s+(\d+)", priv)
    flat = re.sub(r"[\s\\()]+", " ", priv)
    if not (
        procs
        and per_proc
        and "KFD_MAX_NUM_OF_QUEUES_PER_DEVICE KFD_MAX_NUM_OF_PROCESSES * KFD_MAX_NUM_OF_QUEUES_PER_PROCESS" in flat
    ):
        raise KnowledgeError("kfd_priv.h: KFD_MAX_NUM_OF_QUEUES_PER_DEVICE is no longer processes x queues")
    limits = {"KFD_MAX_NUM_OF_PROCESSES": int(procs.group(1)), "KFD_MAX_NUM_OF_QUEUES_PER_PROCESS": int(per_proc.group(1)),
              "KFD_MAX_NUM_OF_QUEUES_PER_DEVICE": int(procs.group(1)) * int(per_proc.group(1))}  # fmt: skip
    module = module_facts(kos[0])
    firmware = set(module["firmware"])  # type: ignore[call-overload]
    if len(firmware & {str(d[0]) for d in declared}) < 0.9 * len(firmware):
        raise KnowledgeError(f"{root}: MODULE_FIRMWARE lines read name under 90% of {kos[0].name}'s firmware")
    return {
        "unsafe_params": unsafe, "limits": limits,
        "series": k.series, "upstream": upstream, "suite": k.suite,
        "provenance": {"source": {**k.source.provenance(), "files": [kfd_c, drv_c, *MESSAGE_DIRS, *CORE_FILES, DM_DIR]},
                       "module": {**k.image.provenance(), "file": str(kos[0].relative_to(image))}},
        "kms": kms_version(root / drv_c),
        "kfd": kfd_support(root / kfd_c),
        "pci": rows, "pci_catch_all": catch_all,
        **module,
        "messages": msgs,
        "ucode_request": signature, "firmware_requests": requests, "firmware_declared": declared,
    }  # fmt: skip


def firmware_facts_of(root: Path) -> tuple[list[dict[str, object]], list[list[object]], str | None]:
    """amdgpu's firmware requests (csource.firmware_requests), its MODULE_FIRMWARE lines, and how
    amdgpu_ucode.h declares amdgpu_ucode_request(). Fails when the readers find no request at all,
    or no request the driver does without (neither a fallback, a tolerated failure nor, where the
    wrapper takes one, an AMDGPU_UCODE_OPTIONAL flag): every series read has some, so none means the
    readers no longer recognise the driver's constructs. amdgpu_dm/ must have requests, each with its
    names read (the DMCU/DMCUB files it declares are judged by them)."""
    signature = ucode_request_signature(root / UCODE_H)
    missing = dict.fromkeys(("request_firmware", "request_firmware_direct", "firmware_request_nowarn"),
                            loader_missing_errno(root / LOADER_C))  # fmt: skip
    if (wrapper := ucode_request_missing_errno(root / UCODE_C)) is not None:
        missing["amdgpu_ucode_request"] = wrapper
    requests: list[dict[str, object]] = []
    declared: list[list[object]] = []
    for d in FIRMWARE_DIRS:
        for path in sorted((root / d).rglob("*.c")):
            rel = str(path.relative_to(root))
            requests += firmware_requests(path, rel, signature, missing)
            declared += module_firmware(path, rel)
    display = [r for r in requests if str(r["file"]).startswith(DM_DIR)]
    if not display or not all(r["names"] for r in display):
        raise KnowledgeError(f"{root / DM_DIR}: no firmware request, or one whose file names were not read")
    if not requests or not declared:
        raise KnowledgeError(f"{root}: no firmware request or MODULE_FIRMWARE line in {', '.join(FIRMWARE_DIRS)}")
    if not any(r["fallback_line"] is not None or r["tolerated"] or r["flag"] == "optional" for r in requests):
        raise KnowledgeError(f"{root}: no firmware request with a fallback, a tolerated failure or an optional flag")
    if signature == "flag+format" and not any(r["flag"] == "optional" for r in requests):
        raise KnowledgeError(f"{root}: amdgpu_ucode_request() takes a flag, but no call passes AMDGPU_UCODE_OPTIONAL")
    return requests, declared, signature


def ids_facts(resolver: Resolver, offline: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, suite in IDS_PACKAGES:
        pkg = resolver.package(f"ids:{name}:{suite}", name, (suite,), "main", "all")
        tree = extract(
            download(pkg, offline=offline), cache_dir() / "trees" / f"{name}-{pkg.version}", ["*amdgpu.ids", "*pci.ids"]
        )
        files = sorted(p for p in tree.rglob("amdgpu.ids" if name == "libdrm-common" else "pci.ids") if p.is_file())
        if not files:
            raise ArchiveError(f"{pkg.name} {pkg.version} has no ids file")
        text = files[0].read_text(encoding="utf-8", errors="replace")
        if name == "libdrm-common":
            rows = [
                [int(d, 16), int(r, 16), n.strip()]
                for d, r, n in re.findall(r"^([0-9A-Fa-f]{4}),\s*([0-9A-Fa-f]{2}),\s*(.+)$", text, re.M)
            ]
        else:
            block = re.search(r"^1002\s+.*?\n(.*?)^[0-9a-f]{4}\s", text, re.M | re.S)
            body = block.group(1) if block else ""
            rows = [[int(d, 16), None, n.strip()] for d, n in re.findall(r"^\t([0-9a-f]{4})\s+(.+)$", body, re.M)]
        provenance = dict(pkg.provenance())
        provenance["file"] = str(files[0].relative_to(tree))
        out[f"{name} {suite}"] = {"provenance": provenance, "rows": rows}
    return out


def firmware_facts(resolver: Resolver, offline: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    for suite, component in FIRMWARE_SUITES:
        pkg = resolver.package(f"firmware:{suite}", "firmware-amd-graphics", (suite,), component, "all")
        listing = cache_dir() / "trees" / f"firmware-{pkg.version}.list"
        if not listing.exists():
            names = [m for m in deb_members(download(pkg, offline=offline)) if "/firmware/amdgpu/" in m]
            listing.parent.mkdir(parents=True, exist_ok=True)
            listing.write_text("\n".join(names))
        files = sorted({re.sub(r"\.(xz|zst)$", "", n.split("/firmware/", 1)[1]) for n in listing.read_text().split()})
        out[suite] = {"provenance": pkg.provenance(), "files": files}
    return out


def build(resolver: Resolver, offline: bool) -> tuple[dict[str, object], list[str]]:
    notes: list[str] = []
    kernels: dict[str, object] = {}
    for label, suites in KERNELS:
        try:
            facts = kernel_facts(label, suites, resolver, offline)
        except ArchiveError as exc:
            if resolver.pins is not None and not isinstance(exc, NotServed):
                raise  # a pinned kernel that cannot be read is an error, not a series fewer
            notes.append(f"{label} ({'/'.join(suites)}): skipped: {exc}")
            continue
        kernels[str(facts["series"])] = facts
        notes.append(kernel_note(facts))
    data: dict[str, object] = {
        "kernels": kernels,
        "ids": ids_facts(resolver, offline),
        "firmware": firmware_facts(resolver, offline),
    }
    if unused := resolver.unused():
        raise PinError(f"pins for inputs sources.py no longer has: {', '.join(unused)} (run --update-pins)")
    return data, notes


def kernel_note(facts: dict[str, object]) -> str:
    return f"{facts['series']} ({facts['suite']}): linux-source {facts['upstream']}, {len(facts['messages'])} formats"  # type: ignore[arg-type]


def write_json(path: Path, value: object) -> bytes:
    raw = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    blob = gzip.compress(raw, compresslevel=9, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return blob


def outputs(data: dict[str, object]) -> dict[Path, bytes]:
    """The committed files: gzip'd JSON per kernel series and one for ids/firmware, and the
    literal module the boot path reads (no json import before READY)."""
    from tools.knowledge.literal import render_module

    files: dict[Path, bytes] = {}
    kernels = data["kernels"]
    assert isinstance(kernels, dict)
    for series, facts in kernels.items():
        raw = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        files[DATA / f"kernel-{series}.json.gz"] = gzip.compress(raw, compresslevel=9, mtime=0)
    rest = {"ids": data["ids"], "firmware": data["firmware"]}
    raw = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    files[DATA / "ids-firmware.json.gz"] = gzip.compress(raw, compresslevel=9, mtime=0)
    files[GENERATED] = render_module(data).encode()
    return files


def committed() -> tuple[dict[str, object], list[str]]:
    """The data as committed (what the pinned inputs gave), for --rerender."""
    kernels: dict[str, object] = {}
    for path in sorted(DATA.glob("kernel-*.json.gz"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)]):
        facts = json.loads(gzip.decompress(path.read_bytes()))
        kernels[str(facts["series"])] = facts
    rest = json.loads(gzip.decompress((DATA / "ids-firmware.json.gz").read_bytes()))
    return {"kernels": kernels, "ids": rest["ids"], "firmware": rest["firmware"]}, [
        kernel_note(k) for k in kernels.values() if isinstance(k, dict)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--offline", action="store_true", help="use the cache only")
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    parser.add_argument("--refresh", action="store_true", help="fetch the Packages indices again (follow the archive)")
    parser.add_argument("--update-pins", action="store_true", help="read the archive's newest inputs, rewrite the pins")
    parser.add_argument("--pins", type=Path, default=PIN_FILE, help="the pin file (default: %(default)s)")
    parser.add_argument(
        "--rerender",
        action="store_true",
        help="read no archive: render generated.py and the report again from the committed data"
        " (after a change to the hand-written tables they use)",
    )
    parser.add_argument("--report", type=Path, help="write the coverage report (Markdown) here")
    args = parser.parse_args(argv)
    from tools.knowledge import archive

    archive.REFRESH = args.refresh
    resolver: Resolver | None = None
    try:
        if args.rerender:
            data, notes = committed()
        else:
            resolver = Resolver(None if args.update_pins else load(args.pins), mirrors(), offline=args.offline)
            data, notes = build(resolver, args.offline)
    except (ArchiveError, PinError) as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    for line in resolver.newer if resolver else []:
        print(f"generate: {line}", file=sys.stderr)  # not in the report: the report follows the pins
    files = outputs(data)
    if args.rerender:
        files = {GENERATED: files[GENERATED]}
    if resolver is not None and args.update_pins:
        files[args.pins] = dump(resolver.taken).encode()
    if not args.check:
        for path, blob in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
    from tools.knowledge.report import coverage

    text = coverage(data, notes)
    if args.check:
        stale = [
            str(p.relative_to(TREE) if p.is_relative_to(TREE) else p)
            for p, blob in files.items()
            if not p.exists() or p.read_bytes() != blob
        ]
        if args.report and (not args.report.exists() or args.report.read_text() != text):
            stale.append(str(args.report))
        for name in stale:
            print(f"differs from a fresh run: {name}", file=sys.stderr)
        return 1 if stale else 0
    if args.report:
        args.report.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
