"""Rules about /dev/kfd and the user: the node, its mode and group, and what rocminfo said about them."""

from __future__ import annotations

import re

from kfdguard.assess.reasoning import Reasoning
from kfdguard.verdict import Finding, Severity

E = Severity.ERROR


def mode_allows_group(mode: str) -> bool:
    """Whether a mode string ("crw-rw----") lets its group read and write."""
    return len(mode) >= 7 and mode[4] == "r" and mode[5] == "w"


def _node_missing(r: Reasoning, error: str) -> None:
    obs = r.obs
    node = obs.kfd
    if not ("No such file" in error or (node is not None and node.mode is None)):
        return
    if r.has("no-amd-gpu"):
        return  # nothing for KFD to do, so no /dev/kfd
    if obs.first("container") or obs.first("no-user-name"):
        evidence = [f"rocminfo: Unable to open /dev/kfd read-write: {error}"] if error else []
        evidence.append("the prompt or tools show a container")
        r.findings.append(
            Finding(
                "device-node-missing",
                E,
                "/dev/kfd does not exist inside the container: it was not passed in",
                "start the container with --device=/dev/kfd --device=/dev/dri (docker/podman), or "
                "--bind /dev/kfd,/dev/dri with apptainer --containall; add --group-add video --group-add render",
                tuple(evidence),
            )
        )
    elif not r.has("kfd-init-failed") and not (r.amd and all(t.stopped for t in r.amd)):
        # When every GPU is already stopped on a lower floor, the missing node follows from that.
        r.findings.append(
            Finding(
                "device-node-missing",
                E,
                "/dev/kfd does not exist",
                "see the kernel log for why KFD did not start (sudo dmesg | grep -Ei 'kfd|amdgpu'); "
                "'kfdguard check' on the machine names the cause",
                (f"Unable to open /dev/kfd read-write: {error}" if error else "ls: /dev/kfd missing",),
            )
        )


# What a locked KFD answers an open of /dev/kfd: EAGAIN from kfd_open() in 5.10 and 6.1 (kfd_chardev.c: "if
# (kfd_is_locked()) ... return -EAGAIN"), EINVAL from kfd_create_process() in 6.12 and 7.2 (kfd_process.c).
_LOCKED_ERRORS = {"Invalid argument": "EINVAL", "Resource temporarily unavailable": "EAGAIN"}


def _kfd_locked(r: Reasoning, error: str) -> bool:
    """A locked KFD refusing open(/dev/kfd) (after a GPU was unbound or hot-unplugged): EINVAL on 6.12 and later,
    EAGAIN before; not permissions."""
    errno = next((name for text, name in _LOCKED_ERRORS.items() if text in error), None)
    if errno is None:
        return False
    r.findings.append(
        Finding(
            "kfd-open-einval",
            E,
            f"opening /dev/kfd fails with {errno} ({error.strip()}): KFD itself refuses every open, which it does "
            "while locked (after a GPU was unbound, removed or reset without recovering: EINVAL from Linux 6.12, "
            "EAGAIN before); the node's mode and the user's groups are not the cause",
            "find what unbound or removed a GPU (a udev rule, a systemd unit writing to .../driver/unbind, a VFIO "
            "setup) and stop it; then reload amdgpu or reboot; do not change permissions",
            (f"rocminfo: Unable to open /dev/kfd read-write: {error}",),
        )
    )
    return True


def _no_gpu_node(r: Reasoning, error: str) -> None:
    if "Cannot allocate memory" in error:
        r.findings.append(
            Finding(
                "kfd-no-gpu-node",
                E,
                "rocminfo gets 'Cannot allocate memory' from /dev/kfd: what ROCm reports when KFD has no usable GPU",
                "the kernel log shows why KFD has no GPU (see the other findings)",
                (f"Unable to open /dev/kfd read-write: {error}",),
            )
        )


def _denied(r: Reasoning, error: str) -> None:
    obs = r.obs
    node = obs.kfd
    group = node.group if node and node.group else "render"
    seen = obs.user
    if not ("Permission denied" in error or (obs.not_member_of and not error)):
        return
    not_member = [(u, g) for u, g, _ in obs.not_member_of] or (
        [(seen.user or "the user", group)] if seen is not None and group not in seen.groups else []
    )
    if not_member:
        user, grp = not_member[0]
        r.findings.append(
            Finding(
                "user-not-in-group",
                E,
                f"{user} is not in group '{grp}', which /dev/kfd needs",
                f"sudo usermod -aG {grp} {user}, then log out and back in",
                (f'rocminfo: {user} is not member of "{grp}" group',)
                if obs.not_member_of
                else (f"groups: {' '.join(seen.groups if seen else ())}",),
            )
        )
    elif "Permission denied" in error:
        r.findings.append(
            Finding(
                "device-permissions",
                E,
                "opening /dev/kfd is denied (Permission denied)",
                "check 'ls -l /dev/kfd' and 'id'; 'sudo kfdguard enforce' fixes the node's mode",
                (f"Unable to open /dev/kfd read-write: {error}",),
            )
        )


def _mode(r: Reasoning) -> None:
    node = r.obs.kfd
    seen = r.obs.user
    if node is None or node.mode is None:
        return
    if not mode_allows_group(node.mode) and node.mode[7:9] != "rw":
        r.findings.append(
            Finding(
                "device-permissions",
                E,
                f"/dev/kfd is {node.mode} {node.owner}:{node.group}: only its owner can open it",
                'sudo kfdguard enforce, or a udev rule SUBSYSTEM=="kfd", GROUP="render", MODE="0660"',
                (f"{node.source}: {node.mode} {node.owner}:{node.group}",),
            )
        )
    elif seen is not None and node.group not in seen.groups and node.mode[7:9] != "rw" and seen.user != node.owner:
        r.findings.append(
            Finding(
                "user-not-in-group",
                E,
                f"{seen.user or 'the user'} is not in group '{node.group}' that owns /dev/kfd",
                f"sudo usermod -aG {node.group} {seen.user or '$USER'}, then log in again",
                (f"/dev/kfd {node.mode} {node.owner}:{node.group}", f"groups: {' '.join(seen.groups)}"),
            )
        )


def _render_nodes(r: Reasoning) -> None:
    """libhsakmt skips a GPU whose render node the user cannot open, without a word (kfd-facts.md §3)."""
    seen = r.obs.user
    for path, node in sorted(r.obs.nodes.items()):
        if not path.rsplit("/", 1)[-1].startswith("renderD") or node.mode is None or node.acl or node.mode[7:9] == "rw":
            continue  # an ACL ("+") may grant the user access: ls -l does not show to whom
        if seen is None:
            closed = not mode_allows_group(node.mode)
        else:
            closed = seen.user != node.owner and (node.group not in seen.groups or not mode_allows_group(node.mode))
        if not closed:
            continue
        who = f"{seen.user or 'the user'} (groups: {' '.join(seen.groups)})" if seen else "members of its group"
        r.findings.append(
            Finding(
                "render-node-permissions",
                E,
                f"{path} is {node.mode} {node.owner}:{node.group}: {who} cannot open it, so ROCm silently "
                "skips that GPU",
                f"sudo usermod -aG {node.group} {seen.user if seen and seen.user else '$USER'} and log in again"
                if seen and mode_allows_group(node.mode)
                else 'a udev rule SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"',
                (f"{node.source}: {node.mode} {node.owner}:{node.group}",)
                + ((f"{seen.source}: groups {' '.join(seen.groups)}",) if seen else ()),
            )
        )


# Inside a user namespace an id the namespace does not map shows as the overflow id
# (/proc/sys/kernel/overflowuid and overflowgid, 65534 by default: "nobody"/"nogroup").
OVERFLOW = frozenset({"65534", "nobody", "nogroup"})


def _unmapped(r: Reasoning) -> bool:
    """A rootless container: the host's group that owns /dev/kfd is not mapped, so no group inside can open it."""
    node = r.obs.kfd
    if node is None or node.mode is None or node.group not in OVERFLOW or node.mode[7:9] == "rw":
        return False
    r.findings.append(
        Finding(
            "rootless-gid-unmapped",
            E,
            f"/dev/kfd shows group {node.group}: inside this user namespace (a rootless container) the host's group "
            "that owns it is not mapped, so no user in the container can open it; usermod inside does not help",
            "on the host, start the container so that it keeps that group: podman run --group-add keep-groups "
            "(crun), or run it as a user who is in the host's render/video group with those gids mapped "
            "(/etc/subgid); a rootful container with --device=/dev/kfd --group-add video --group-add render "
            "also works",
            (f"{node.source}: {node.mode} {node.owner}:{node.group}",),
        )
    )
    return True


# A process told to run without root: Kubernetes' runAsUser/runAsNonRoot, docker's -u/--user with an id, a user
# named nobody, "non-root", "unprivileged" (and its common misspelling).
NON_ROOT = re.compile(
    r"\b(?:nobody|non-?root|unprivileged|unpriviledged|runAsUser|runAsNonRoot)\b|(?:^|\s)(?:-u|--user)[ =]\s*\d+\b",
    re.I,
)
NON_ROOT_CUES = ("nobody", "root", "privileged", "priviledged", "runas", "-u ", "--user")


def _unnamed_gid(r: Reasoning) -> bool:
    """/dev/kfd owned by a group that ls shows as a bare number (not the overflow id): a gid with no name in this
    /etc/group, which inside a container is the host's render or video gid passed in with the device. A non-root
    user there is in it only if the container is told so (--group-add, supplementalGroups)."""
    obs = r.obs
    node = obs.kfd
    gid = node.group if node is not None else None
    if node is None or node.mode is None or gid is None or not gid.isdigit() or gid in OVERFLOW:
        return False
    if node.mode[7:9] == "rw" or not mode_allows_group(node.mode):
        return False  # anyone may open it, or the group may not: the gid is not what decides
    if obs.user is not None and gid in obs.user.groups:
        return False
    denied = "Permission denied" in (obs.value("kfd-open-error") or "")
    # Imported here: this module runs on the boot path, where a machine has no text to search.
    from kfdguard.assess.claims import search_lines

    if not denied and search_lines(NON_ROOT, obs, *NON_ROOT_CUES) is None:
        return False  # root opens it whatever its group
    r.findings.append(
        Finding(
            "user-not-in-group",
            E,
            f"/dev/kfd belongs to gid {gid}, which has no name here: the host's render (or video) group, passed into "
            "the container with the device; the container's non-root user is not in it, so it cannot open the node",
            f"give the container's user that gid: docker/podman run --group-add {gid}; in Kubernetes, the pod's "
            f"securityContext.supplementalGroups: [{gid}]; the gid is the host's ('getent group render' on the host) "
            "and differs from host to host",
            (f"{node.source}: {node.mode} {node.owner}:{gid}",),
        )
    )
    return True


def rule_access(r: Reasoning) -> None:
    if r.machine is not None:
        from kfdguard.assess.checks import check_permissions, check_users

        # A machine shows numeric owners, ACLs and every account, not one user's "id".
        check_permissions(r.machine)
        check_users(r.machine)
        return
    error = r.obs.value("kfd-open-error") or ""
    if _kfd_locked(r, error):
        return  # the node opens for nobody: groups and modes are not what blocks
    _node_missing(r, error)
    _no_gpu_node(r, error)
    if _unmapped(r) or _unnamed_gid(r):
        return  # what denies access is the mapping or the container's groups, not the node's mode
    _denied(r, error)
    _mode(r)
    _render_nodes(r)
