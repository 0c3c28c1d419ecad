"""The software inventory as a snapshot bundle keeps it: to a JSON record and back, every field checked.

A bundle does not carry the libraries (a ROCm tree is gigabytes); it carries
what the inventory read from them: each stack's path and version, each
component's path, its file count and the gfx targets its file names or
offload bundles name, the consumer units' variables, the library search path
and the tools found. Replaying the bundle hands the same record to assess,
so `kfdguard check --root BUNDLE` reports the Software section the machine
reported. The record is outside input when it is read back: every field is
typed and bounded, and a bad one is a SnapshotError naming its place.
"""

from __future__ import annotations

from kfdguard.facts import Application, Component, EnvSetting, Problem, SoftwareFacts, Stack, VulkanFacts, VulkanIcd
from kfdguard.snapshot.bundle import Fields, SnapshotError, strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# More than a machine has; a record beyond them is not one kfdguard wrote.
MAX_STACKS = 256
MAX_COMPONENTS = 4096
MAX_TARGETS = 1024
MAX_ENV = 4096
MAX_ICDS = 1024


def software_record(sw: SoftwareFacts) -> dict[str, object]:
    return {
        "stacks": [
            {
                "kind": s.kind, "name": s.name, "path": s.path, "version": s.version, "lib_dir": s.lib_dir,
                "runtime": s.runtime, "truncated": s.truncated,
                "components": [
                    {"name": c.name, "path": c.path, "targets": list(c.targets), "source": c.source,
                     "files": c.files, "error": c.error}
                    for c in s.components
                ],
            }
            for s in sw.stacks
        ],
        "env": [{"name": e.name, "value": e.value, "origin": e.origin, "unit": e.unit} for e in sw.env],
        "ld_paths": [[d, f] for d, f in sw.ld_paths],
        "tools": list(sw.tools),
        "problems": [{"path": p.path, "reason": p.reason} for p in sw.problems],
        "vulkan": {
            "read": sw.vulkan.read, "loader": sw.vulkan.loader,
            "icds": [
                {"manifest": i.manifest, "library_path": i.library_path, "library": i.library, "driver": i.driver,
                 "api_version": i.api_version, "error": i.error}
                for i in sw.vulkan.icds
            ],
        },
        "applications": [
            {"kind": a.kind, "name": a.name, "version": a.version, "path": a.path, "backends": list(a.backends),
             "files": list(a.files)}
            for a in sw.applications
        ],
    }  # fmt: skip


def _bounded(items: Sequence[object], limit: int, where: str) -> Sequence[object]:
    if len(items) > limit:
        raise SnapshotError(f"{where}: {len(items)} entries (at most {limit})")
    return items


def _text(f: Fields, key: str) -> str:
    value = f.text(key)
    assert value is not None
    return value


def _component(value: object, where: str) -> Component:
    f = Fields(value, where)
    source = _text(f, "source")
    if source not in ("bundles", "name", "kpack"):
        raise SnapshotError(f"{where}.source: {source!r} (known: bundles, name, kpack)")
    targets = strings(list(_bounded(f.items("targets"), MAX_TARGETS, f"{where}.targets")), f"{where}.targets")
    files = f.number("files", low=0, high=2**31) or 0
    return Component(_text(f, "name"), _text(f, "path"), tuple(targets), source, files, f.text("error", optional=True))


def _stack(value: object, where: str) -> Stack:
    f = Fields(value, where)
    parts = _bounded(f.items("components"), MAX_COMPONENTS, f"{where}.components")
    return Stack(
        _text(f, "kind"),
        _text(f, "name"),
        _text(f, "path"),
        f.text("version", optional=True),
        tuple(_component(c, f"{where}.components[{i}]") for i, c in enumerate(parts)),
        f.text("lib_dir", optional=True),
        f.text("runtime", optional=True),
        f.text("truncated", optional=True),
    )


def _pair(value: object, where: str) -> tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise SnapshotError(f"{where}: expected [directory, file]")
    first, second = strings(value, where)
    return first, second


def _vulkan(f: Fields | None, where: str) -> VulkanFacts:
    """A record written before kfdguard read Vulkan drivers has none: not read, not "none installed"."""
    if f is None:
        return VulkanFacts()
    icds = []
    for i, item in enumerate(_bounded(f.items("icds"), MAX_ICDS, f"{where}.icds")):
        e = Fields(item, f"{where}.icds[{i}]")
        icds.append(
            VulkanIcd(_text(e, "manifest"), _text(e, "library_path"), e.text("library", optional=True),
                      _text(e, "driver"), e.text("api_version", optional=True), e.text("error", optional=True))
        )  # fmt: skip
    return VulkanFacts(f.flag("read"), f.text("loader", optional=True), tuple(icds))


def _application(value: object, where: str) -> Application:
    f = Fields(value, where)
    backends = strings(list(_bounded(f.items("backends"), MAX_TARGETS, f"{where}.backends")), f"{where}.backends")
    files = strings(list(_bounded(f.items("files"), MAX_TARGETS, f"{where}.files")), f"{where}.files")
    return Application(_text(f, "kind"), _text(f, "name"), f.text("version", optional=True), _text(f, "path"),
                       tuple(backends), tuple(files))  # fmt: skip


def software_from_record(value: object, where: str = "software") -> SoftwareFacts:
    f = Fields(value, where)
    stacks = _bounded(f.items("stacks"), MAX_STACKS, f"{where}.stacks")
    env = []
    for i, item in enumerate(_bounded(f.items("env"), MAX_ENV, f"{where}.env")):
        e = Fields(item, f"{where}.env[{i}]")
        env.append(EnvSetting(_text(e, "name"), _text(e, "value"), _text(e, "origin"), e.text("unit", optional=True)))
    problems = []
    for i, item in enumerate(_bounded(f.items("problems"), MAX_ENV, f"{where}.problems")):
        p = Fields(item, f"{where}.problems[{i}]")
        problems.append(Problem(_text(p, "path"), _text(p, "reason")))
    ld = _bounded(f.items("ld_paths"), MAX_ENV, f"{where}.ld_paths")
    return SoftwareFacts(
        tuple(_stack(s, f"{where}.stacks[{i}]") for i, s in enumerate(stacks)),
        tuple(env),
        tuple(_pair(p, f"{where}.ld_paths[{i}]") for i, p in enumerate(ld)),
        tuple(strings(list(_bounded(f.items("tools"), MAX_ENV, f"{where}.tools")), f"{where}.tools")),
        tuple(problems),
        vulkan=_vulkan(f.obj("vulkan", optional=True), f"{where}.vulkan"),
        applications=tuple(
            _application(a, f"{where}.applications[{i}]")
            for i, a in enumerate(_bounded(f.items("applications", optional=True), MAX_STACKS, f"{where}.applications"))
        ),
    )
