"""Replaying a snapshot bundle: a System that answers from the manifest, and changes nothing."""

from __future__ import annotations

import errno

from kfdguard.access import AclEntry, NodeStat
from kfdguard.host.runner import RunResult
from kfdguard.host.system import KfdIoctlError, LogUnavailable, System
from kfdguard.snapshot.bundle import Fields, SnapshotError, read_manifest, strings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root

NODE_KINDS = ("char", "block", "file", "dir", "other")
ACL_TAGS = ("user", "group", "group_obj", "mask", "user_obj", "other")
READ_ONLY = "a snapshot replay is read-only"


def _is_int(value: object) -> bool:
    # JSON's true/false arrive as bool, which Python counts as int: never a number here.
    return isinstance(value, int) and not isinstance(value, bool)


def _node(value: object, where: str) -> NodeStat | None:
    if value is None:
        return None
    f = Fields(value, where)
    kind = f.text("kind")
    if kind not in NODE_KINDS:
        raise SnapshotError(f"{where}.kind: {kind!r} is not one of {', '.join(NODE_KINDS)}")
    acl = []
    for index, item in enumerate(f.items("acl", optional=True)):
        if not (isinstance(item, list) and len(item) == 3 and item[0] in ACL_TAGS):
            raise SnapshotError(f"{where}.acl[{index}]: expected [tag, qualifier, perms]")
        tag, qualifier, perms = item
        if not (qualifier is None or (_is_int(qualifier) and 0 <= qualifier < 2**32)):
            raise SnapshotError(f"{where}.acl[{index}]: qualifier must be a uid/gid or null")
        if not (_is_int(perms) and 0 <= perms <= 7):
            raise SnapshotError(f"{where}.acl[{index}]: perms must be 0..7")
        acl.append(AclEntry(tag, qualifier, perms))
    ids = {k: f.number(k, low=0, high=2**32 - 1) for k in ("major", "minor", "uid", "gid")}
    mode = f.number("mode", low=0, high=0o7777)
    return NodeStat(kind, ids["major"] or 0, ids["minor"] or 0, ids["uid"] or 0, ids["gid"] or 0, mode or 0, tuple(acl))


def _lines(value: Fields) -> list[str]:
    total = value.number("total", low=0, high=10_000_000) or 0
    lines = [""] * total
    for index, item in enumerate(value.items("lines")):
        if not (isinstance(item, list) and len(item) == 2 and _is_int(item[0]) and isinstance(item[1], str)):
            raise SnapshotError(f"{value.where}.lines[{index}]: expected [line number, text]")
        number, text = item
        if not 1 <= number <= total:
            raise SnapshotError(f"{value.where}.lines[{index}]: line {number} beyond the total of {total}")
        lines[number - 1] = text
    return lines


class ReplaySystem(System):
    """The machine of a snapshot bundle: files under ``root``, everything else from the manifest."""

    def __init__(self, root: Root) -> None:
        self.root = root
        doc = Fields(read_manifest(root.path), "manifest")
        self.source = doc.text("source", optional=True) or "a snapshot"
        nodes = doc.obj("nodes", optional=True)
        self.nodes = {k: _node(v, f"nodes[{k!r}]") for k, v in (nodes.value if nodes else {}).items()}
        versions = doc.obj("kfd_version", optional=True)
        self.versions: dict[str, tuple[int, int] | KfdIoctlError] = {}
        for path, value in (versions.value if versions else {}).items():
            f = Fields(value, f"kfd_version[{path!r}]")
            if "version" in f.value:
                pair = f.items("version")
                major, minor = pair if len(pair) == 2 else (None, None)
                if not (isinstance(major, int) and isinstance(minor, int) and _is_int(major) and _is_int(minor)):
                    raise SnapshotError(f"{f.where}.version: expected [major, minor]")
                if not (0 <= major < 2**32 and 0 <= minor < 2**32):
                    raise SnapshotError(f"{f.where}.version: [major, minor] out of range")
                self.versions[path] = (major, minor)
            else:
                step, message = f.text("step") or "open", f.text("message") or ""
                self.versions[path] = KfdIoctlError(step, f.number("errno", low=0, high=4095) or errno.EIO, message)
        kmsg = doc.obj("kmsg", optional=True)
        self.kmsg: list[str] | str = "not in the snapshot"
        if kmsg is not None:
            self.kmsg = kmsg.text("unavailable") or "" if "unavailable" in kmsg.value else _lines(kmsg)
        journal = doc.obj("journal", optional=True)
        self.journal: list[tuple[int, list[str]]] | str = "not in the snapshot"
        if journal is not None:
            if "unavailable" in journal.value:
                self.journal = journal.text("unavailable") or ""
            else:
                self.journal = []
                for index, item in enumerate(journal.items("entries")):
                    entry = Fields(item, f"journal.entries[{index}]")
                    self.journal.append((entry.number("boot", low=-10_000, high=0) or 0, _lines(entry)))
        # The software inventory the machine took (kfdguard/userspace/record.py), when the bundle has one.
        from kfdguard.userspace.record import software_from_record

        software = doc.obj("software", optional=True)
        self.software = None if software is None else software_from_record(software.value, "manifest.software")
        self.runs: list[RunResult] = []
        for index, item in enumerate(doc.items("runs", optional=True)):
            run = Fields(item, f"runs[{index}]")
            argv = tuple(strings(run.items("argv"), f"{run.where}.argv"))
            self.runs.append(
                RunResult(
                    argv,
                    run.number("returncode", optional=True, low=-256, high=255),
                    run.text("stdout", optional=True) or "",
                    run.text("stderr", optional=True) or "",
                    run.flag("timed_out") if "timed_out" in run.value else False,
                    0.0,
                    run.text("error", optional=True),
                )
            )

    def stat_node(self, path: HostPath) -> NodeStat | None:
        return self.nodes.get(self.root.display(path))

    def kfd_version(self, path: HostPath) -> tuple[int, int]:
        answer = self.versions.get(self.root.display(path))
        if answer is None:
            raise KfdIoctlError("open", errno.ENOENT, "not recorded in the snapshot")
        if isinstance(answer, KfdIoctlError):
            raise answer
        return answer

    def read_kmsg(self) -> list[str]:
        if isinstance(self.kmsg, str):
            raise LogUnavailable(self.kmsg)
        return list(self.kmsg)

    def read_journal(self, boots: int) -> list[tuple[int, list[str]]]:
        if isinstance(self.journal, str):
            raise LogUnavailable(self.journal)
        return [(boot, list(lines)) for boot, lines in self.journal if boot >= -boots]

    def run(self, argv: Sequence[str], *, timeout: float) -> RunResult:
        shown = tuple(self._machine_arg(a) for a in argv)
        for result in self.runs:
            if result.argv == shown:
                return result
        return RunResult(tuple(argv), None, error="not recorded in the snapshot")

    def _machine_arg(self, arg: str) -> str:
        prefix = str(self.root.path).rstrip("/")
        return arg[len(prefix) :] if prefix and arg.startswith(prefix + "/") else arg

    def set_node_owner(self, path: HostPath, uid: int, gid: int, mode: int) -> None:
        raise OSError(errno.EROFS, READ_ONLY)

    def write_file(self, path: HostPath, data: bytes, mode: int = 0o644) -> None:
        raise OSError(errno.EROFS, READ_ONLY)

    def remove_file(self, path: HostPath) -> None:
        raise OSError(errno.EROFS, READ_ONLY)
