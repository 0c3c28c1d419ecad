#!/bin/bash
# Scenario "coldplug": udev events and kfdguard. Runs on its own (after the
# package's install) or after "boot" in the same guest (amdgpu loaded at boot).
#  - amdgpu loaded again (unloaded first if it is loaded): udev announces
#    /dev/kfd and kfdguard checks again by itself (its udev monitor);
#  - a coldplug replay (udevadm trigger --action=add) keeps /dev/kfd's
#    permissions and kfdguard's status;
#  - a tampered /dev/kfd is put right by the next add event.
SCENARIO=coldplug
. ./lib.sh

installed_checks
check "kfdguard serves $BUS_NAME" wait_serving 60
if [ -d /sys/module/amdgpu ]; then
    check "modprobe -r amdgpu (loaded at boot; nothing uses it without a GPU)" modprobe -r amdgpu
    udevadm settle --timeout=30
fi
check "amdgpu is not loaded, /dev/kfd is gone" test ! -d /sys/module/amdgpu -a ! -e /dev/kfd
quiesce
before=$(last_check)

modprobe amdgpu
rc=$?
udevadm settle --timeout=30
check "modprobe amdgpu (rc $rc)" test "$rc" = 0
check "kfdguard checked again after udev's kfd/drm events, by itself" wait_until 30 last_check_after "$before"
mode=$(node_line /dev/kfd)
check "/dev/kfd is crw-rw---- root:render after the load (got: $mode)" test "$mode" = "crw-rw---- root:render"
quiesce # the re-checks the load's events asked for are done
pid=$(main_pid)
status1=$(status_stable)
last1=$(status_field LastCheck)
note "status: $status1"

# Coldplug replay: every device's add event again, as at boot.
udevadm trigger --action=add
udevadm settle --timeout=60
mode=$(node_line /dev/kfd)
check "after udevadm trigger --action=add, /dev/kfd is still crw-rw---- root:render (got: $mode)" \
    test "$mode" = "crw-rw---- root:render"
acl=$(getfacl -cp /dev/kfd 2>/dev/null | grep -v -e '^user::' -e '^group::' -e '^other::' -e '^$' | tr '\n' ' ')
check "/dev/kfd carries no extra ACL entries${acl:+ (got: $acl)}" test -z "$acl"
wait_until 30 last_check_after "$last1"
quiesce
check "kfdguard is still active, same process (pid $pid)" test "$(main_pid)" = "$pid" -a "$(systemctl is-active kfdguard.service)" = active
status2=$(status_stable)
check "kfdguard's status is unchanged by the coldplug replay" test "$status2" = "$status1"
[ "$status2" = "$status1" ] || note "after: $status2"

# A tampered node: the next add event restores udev's (and kfdguard's) permissions.
chmod 0666 /dev/kfd
chgrp root /dev/kfd
tampered=$(node_line /dev/kfd)
udevadm trigger --action=add --subsystem-match=kfd
udevadm settle --timeout=30
mode=$(node_line /dev/kfd)
check "a tampered /dev/kfd ($tampered) is crw-rw---- root:render again after an add event (got: $mode)" \
    test "$mode" = "crw-rw---- root:render"
quiesce
check "kfdguard's status is still the same" test "$(status_stable)" = "$status1"

finish
