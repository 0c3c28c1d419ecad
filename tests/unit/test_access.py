"""Who can open a device node: owner, group, other and ACLs, as the kernel decides."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kfdguard.access import AclEntry, NodeStat, check_rw, explain_caller

RENDER = 992


def node(mode: int, uid: int = 0, gid: int = RENDER, acl: tuple[AclEntry, ...] = ()) -> NodeStat:
    return NodeStat("char", 240, 0, uid, gid, mode, acl)


def test_group_member_with_0660() -> None:
    assert check_rw(node(0o660), 1000, frozenset({RENDER})).via == "group"
    assert not check_rw(node(0o660), 1000, frozenset({44})).allowed


def test_0600_root_only() -> None:
    kfd = node(0o600, gid=0)
    assert check_rw(kfd, 0, frozenset()).allowed
    assert not check_rw(kfd, 1000, frozenset({RENDER, 0})).allowed


def test_matching_group_without_rw_denies_even_if_other_allows() -> None:
    # The kernel stops at the first class that matches: group r--, other rw-.
    assert not check_rw(node(0o646), 1000, frozenset({RENDER})).allowed
    assert check_rw(node(0o646), 1000, frozenset({44})).allowed


def test_owner_class_wins() -> None:
    assert not check_rw(node(0o066, uid=1000), 1000, frozenset({RENDER})).allowed


def test_uaccess_acl_grants_session_user() -> None:
    acl = (AclEntry("user", 1000, 6), AclEntry("group_obj", None, 6), AclEntry("mask", None, 6))
    render = node(0o660, acl=acl)
    assert check_rw(render, 1000, frozenset()).via == "acl-user"
    assert not check_rw(render, 1001, frozenset()).allowed
    assert check_rw(render, 1001, frozenset({RENDER})).allowed


def test_mask_limits_named_entries() -> None:
    acl = (AclEntry("user", 1000, 6), AclEntry("group_obj", None, 6), AclEntry("mask", None, 4))
    assert not check_rw(node(0o640, acl=acl), 1000, frozenset()).allowed


@given(st.integers(0, 0o777), st.integers(0, 5), st.integers(0, 5), st.integers(1, 5), st.sets(st.integers(0, 5)))
def test_matches_plain_unix_rules_without_acl(mode: int, owner: int, group: int, uid: int, gids: set[int]) -> None:
    n = node(mode, uid=owner, gid=group)
    if uid == owner:
        bits = mode >> 6
    elif group in gids:
        bits = mode >> 3
    else:
        bits = mode
    assert check_rw(n, uid, frozenset(gids)).allowed == (bits & 6 == 6)


# --- what CheckAccess tells a caller ----------------------------------------------------------

NAMES = {0: "root", RENDER: "render"}


def explain(node: NodeStat, session: set[int], listed: set[int] | None = None) -> tuple[bool, str]:
    allowed, _problems, fix = explain_caller(
        "alice", 1000, frozenset(session), frozenset(listed if listed is not None else session),
        [("/dev/kfd", node)], NAMES,
    )  # fmt: skip
    return allowed, fix


def test_outsider_is_told_to_join_the_group() -> None:
    assert explain(NodeStat("char", 240, 0, 0, RENDER, 0o660), {1000}) == (
        False,
        "sudo usermod -aG render alice, then log out and back in",
    )


def test_member_of_a_group_without_rw_is_not_told_to_join() -> None:
    allowed, fix = explain(NodeStat("char", 240, 0, 0, RENDER, 0o600), {1000, RENDER})
    assert not allowed and "not your groups" in fix and "usermod" not in fix


def test_root_owned_node_is_never_answered_with_join_root() -> None:
    allowed, fix = explain(NodeStat("char", 240, 0, 0, 0, 0o660), {1000})
    assert not allowed and "usermod" not in fix and "kfdguard reload" in fix


def test_added_to_the_group_after_login() -> None:
    allowed, fix = explain(NodeStat("char", 240, 0, 0, RENDER, 0o660), {1000}, listed={1000, RENDER})
    assert (
        not allowed and fix == "you are in 'render' but this login started before you were added: log out and back in"
    )


def test_allowed_caller_gets_no_fix() -> None:
    assert explain(NodeStat("char", 240, 0, 0, RENDER, 0o660), {1000, RENDER}) == (True, "")
