"""SELinux and AppArmor denying /dev/kfd (assess/stack_rules.rule_mac_denies_kfd), read from the kernel's audit
formats: SELinux's "avc:  denied  { perms } for ... scontext= tcontext= tclass=" and AppArmor's
apparmor="DENIED" ... profile= name=. The lines are written from those formats (other pids, programs, labels and
devices than any report), beside the near misses the rule must leave alone.
"""

from __future__ import annotations

import pytest

from kfdguard.diagnose import diagnose_text


def findings(text: str) -> dict[str, str]:
    return {f.code: f"{f.message} | {f.remedy}" for f in diagnose_text(text).findings}


_CONTAINER_AVC = (
    'type=AVC msg=audit(1767000000.123:4411): avc:  denied  { map } for  pid=90211 comm="llama-server" '
    'path="/dev/kfd" dev="tmpfs" ino=5 scontext=system_u:system_r:container_t:s0:c12,c340 '
    "tcontext=system_u:object_r:hsa_device_t:s0 tclass=chr_file permissive=0"
)
_HOST_AVC = (
    'Dec 02 09:14:01 fedora audit[4120]: AVC avc:  denied  { read write } for  pid=4120 comm="rocminfo" '
    'name="kfd" dev="devtmpfs" ino=1043 scontext=unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023 '
    "tcontext=system_u:object_r:device_t:s0 tclass=chr_file permissive=0"
)
_APPARMOR = (
    '[ 8812.004417] audit: type=1400 audit(1767001000.551:812): apparmor="DENIED" operation="open" class="file" '
    'profile="snap.local-llm.daemon" name="/dev/kfd" pid=30117 comm="server" requested_mask="wr" '
    'denied_mask="wr" fsuid=0 ouid=0'
)


def test_selinux_denying_a_container_the_map_of_dev_kfd() -> None:
    got = findings(f"ROCm dies in podman right after loading, the host is Fedora 43.\n{_CONTAINER_AVC}")
    assert "mac-policy-denies" in got
    assert "container_use_devices" in got["mac-policy-denies"] and "{map}" in got["mac-policy-denies"]


def test_selinux_denying_a_host_program_a_mislabelled_node() -> None:
    got = findings(f"rocminfo\nUnable to open /dev/kfd read-write: Permission denied\n{_HOST_AVC}")
    assert "mac-policy-denies" in got
    assert "restorecon -v /dev/kfd" in got["mac-policy-denies"]


def test_apparmor_denying_a_snap_the_node() -> None:
    got = findings(_APPARMOR)
    assert "mac-policy-denies" in got and "snap.local-llm.daemon" in got["mac-policy-denies"]


@pytest.mark.parametrize(
    "text",
    [
        # another device denied
        'avc:  denied  { read write } for  pid=77 comm="fuse-overlayfs" name="fuse" dev="devtmpfs" ino=9 '
        "scontext=system_u:system_r:container_t:s0 tcontext=system_u:object_r:fuse_device_t:s0 tclass=chr_file",
        # granted, not denied
        'avc:  granted  { map } for  pid=5 comm="rocminfo" path="/dev/kfd" dev="tmpfs" ino=5 '
        "scontext=system_u:system_r:container_t:s0 tcontext=system_u:object_r:hsa_device_t:s0 tclass=chr_file",
        # AppArmor denying something else
        'apparmor="DENIED" operation="open" profile="snap.local-llm.daemon" name="/dev/shm/x" pid=3 comm="server"',
        # AppArmor allowing the node
        'apparmor="ALLOWED" operation="open" profile="local-llm" name="/dev/kfd" pid=3 comm="server"',
        # words about SELinux, no denial shown
        "I disabled SELinux (setenforce 0) and it still says /dev/kfd Permission denied",
    ],
)
def test_near_misses_are_not_a_policy_denial(text: str) -> None:
    assert "mac-policy-denies" not in findings(text)
