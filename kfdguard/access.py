"""Who can open a device node: mode bits, owner, group and POSIX ACLs.

Pure functions: the node's attributes come from the System layer (real stat
and xattr on a host, recorded values on a simulated machine), so the same
decision serves ``kfdguard check``, the assessment and ``CheckAccess``.
"""

from __future__ import annotations

import stat
import struct

from kfdguard.record import dataclass

# Tags from <linux/posix_acl.h>; the xattr layout is <linux/posix_acl_xattr.h>.
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 0x10, 0x20
_ACL_TAG_NAMES = {
    ACL_USER_OBJ: "user_obj",
    ACL_USER: "user",
    ACL_GROUP_OBJ: "group_obj",
    ACL_GROUP: "group",
    ACL_MASK: "mask",
    ACL_OTHER: "other",
}
_ACL_XATTR_VERSION = 2
READ_WRITE = 0o6


@dataclass(frozen=True, slots=True)
class AclEntry:
    tag: str  # "user", "group" (named entries), "group_obj" or "mask"
    qualifier: int | None  # uid or gid for named entries
    perms: int  # rwx as 0..7


@dataclass(frozen=True, slots=True)
class NodeStat:
    kind: str  # "char", "block", "file", "dir", "other"
    major: int
    minor: int
    uid: int
    gid: int
    mode: int  # permission bits only
    acl: tuple[AclEntry, ...] = ()

    @property
    def symbolic(self) -> str:
        """``crw-rw----`` as ``ls -l`` prints it (with ``+`` when an ACL is set)."""
        first = {"char": "c", "block": "b", "dir": "d", "file": "-"}.get(self.kind, "?")
        text = first + stat.filemode(self.mode)[1:]
        return text + ("+" if self.acl else "")


def parse_posix_acl(data: bytes) -> tuple[AclEntry, ...]:
    """Decode a ``system.posix_acl_access`` value; raises ValueError on garbage."""
    if len(data) < 4 or (len(data) - 4) % 8:
        raise ValueError(f"ACL xattr of {len(data)} bytes is not 4 + 8*n")
    (version,) = struct.unpack_from("<I", data)
    if version != _ACL_XATTR_VERSION:
        raise ValueError(f"ACL xattr version {version}, expected {_ACL_XATTR_VERSION}")
    entries = []
    for offset in range(4, len(data), 8):
        tag, perm, ident = struct.unpack_from("<HHI", data, offset)
        name = _ACL_TAG_NAMES.get(tag)
        if name is None:
            raise ValueError(f"unknown ACL tag {tag:#x}")
        if perm > 7:
            raise ValueError(f"ACL permission {perm:#o} out of range")
        # user_obj and other mirror the mode bits. group_obj does not once a
        # mask exists (the mode's group bits then show the mask), so keep it.
        if name in ("user", "group"):
            entries.append(AclEntry(name, ident, perm))
        elif name in ("mask", "group_obj"):
            entries.append(AclEntry(name, None, perm))
    return tuple(entries)


@dataclass(frozen=True, slots=True)
class Access:
    allowed: bool
    via: str  # "root", "owner", "acl-user", "group", "acl-group", "other", "none"
    detail: str


def check_rw(node: NodeStat, uid: int, gids: frozenset[int]) -> Access:
    """Can a process with this uid and these groups open the node read-write?

    Follows the kernel's order (fs/posix_acl.c, acl_permission_check): owner,
    named users, then the groups (owning group and named groups, limited by the
    mask), then other. Root passes through CAP_DAC_OVERRIDE.
    """
    if uid == 0:
        return Access(True, "root", "root bypasses file permissions")
    mask = next((e.perms for e in node.acl if e.tag == "mask"), 0o7)
    if uid == node.uid:
        ok = (node.mode >> 6) & READ_WRITE == READ_WRITE
        return Access(ok, "owner", "owner permissions " + ("allow" if ok else "deny") + " rw")
    for entry in node.acl:
        if entry.tag == "user" and entry.qualifier == uid:
            ok = entry.perms & mask & READ_WRITE == READ_WRITE
            return Access(ok, "acl-user", "ACL entry for this user " + ("allows" if ok else "denies") + " rw")
    return _group_class(node, gids, mask) or _other(node)


def _group_class(node: NodeStat, gids: frozenset[int], mask: int) -> Access | None:
    """The group step: the owning group and named ACL groups; None when no group of the process matches."""
    # With a mask the mode's group bits are the mask; the owning group's own
    # permissions are then the group_obj entry, limited by the mask.
    group_obj = next((e.perms for e in node.acl if e.tag == "group_obj"), None)
    group_perms = (node.mode >> 3) & 0o7 if group_obj is None else group_obj & mask
    matched = node.gid in gids
    if matched and group_perms & READ_WRITE == READ_WRITE:
        return Access(True, "group", "member of the owning group, which has rw")
    for entry in node.acl:
        if entry.tag == "group" and entry.qualifier in gids:
            matched = True
            if entry.perms & mask & READ_WRITE == READ_WRITE:
                return Access(True, "acl-group", "ACL entry for one of the user's groups allows rw")
    return Access(False, "group", "the user's matching group has no rw") if matched else None


def _other(node: NodeStat) -> Access:
    ok = node.mode & READ_WRITE == READ_WRITE
    return Access(ok, "other", "permissions for others " + ("allow" if ok else "deny") + " rw")


def group_grants_rw(node: NodeStat) -> bool:
    """Do members of the node's owning group get rw (mode bits, limited by an ACL mask)?"""
    mask = next((e.perms for e in node.acl if e.tag == "mask"), 0o7)
    group_obj = next((e.perms for e in node.acl if e.tag == "group_obj"), None)
    perms = (node.mode >> 3) & 0o7 if group_obj is None else group_obj & mask
    return perms & READ_WRITE == READ_WRITE


def explain_caller(
    name: str,
    uid: int,
    session_gids: frozenset[int],
    listed_gids: frozenset[int],
    nodes: list[tuple[str, NodeStat]],
    group_names: dict[int, str],
) -> tuple[bool, list[str], str]:
    """Can this caller open every node, and if not: what stops them and the one fix that helps.

    ``session_gids`` are the groups the caller's process has now (from the bus);
    ``listed_gids`` those /etc/group gives the user, which a session started
    before a ``usermod -aG`` does not have yet. Returns (allowed, problems, fix).
    """
    problems: list[str] = []
    fixes: list[str] = []
    for path, node in nodes:
        access = check_rw(node, uid, session_gids)
        if access.allowed:
            continue
        owner = group_names.get(node.gid, str(node.gid))
        problems.append(f"{path} ({node.symbolic} group {owner}): {access.detail}")
        if node.gid == 0 or not group_grants_rw(node) or node.gid in session_gids:
            # Joining root's group is no fix, and a group without rw helps nobody.
            fixes.append("the device's permissions are wrong, not your groups: 'kfdguard reload' repairs them")
        elif node.gid in listed_gids:
            fixes.append(f"you are in '{owner}' but this login started before you were added: log out and back in")
        else:
            fixes.append(f"sudo usermod -aG {owner} {name}, then log out and back in")
    return not problems, problems, "; ".join(dict.fromkeys(fixes))
