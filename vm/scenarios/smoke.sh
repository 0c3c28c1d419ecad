#!/bin/bash
# vmlane smoke scenario: proves the lane boots Debian's real kernel with real
# systemd/udev and that KFD comes up as the knowledge base says.
# Runs as root inside the guest (vmlane-runner); prints TAP-like lines and
# exits non-zero if any check failed.
set -u

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION COMMAND...
    local desc=$1
    shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
node_line() { stat -c '%A %U:%G' /dev/kfd 2>/dev/null || echo missing; }
kfd_sys=/sys/class/kfd/kfd

echo "# kernel $(uname -r), $(systemctl --version | head -n 1)"
echo "# system state: $(systemctl is-system-running)"

# 1. modprobe amdgpu (no GPU: KFD still initialises with a CPU-only topology)
t0=$(date +%s.%N)
modprobe amdgpu
rc=$?
t1=$(date +%s.%N)
check "modprobe amdgpu (rc $rc, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)" \
    test "$rc" = 0

# 2. the parameter kfdguard reads exists
check "/sys/module/amdgpu/parameters/sched_policy exists ($(cat /sys/module/amdgpu/parameters/sched_policy 2>/dev/null))" \
    test -e /sys/module/amdgpu/parameters/sched_policy

# 3. udev applied 50-udev-default.rules: crw-rw---- root:render
udevadm settle --timeout=30
mode=$(node_line)
check "/dev/kfd after udevadm settle is crw-rw---- root:render (got: $mode)" \
    test "$mode" = "crw-rw---- root:render"

# 4. the ioctl probe as root
probe=$(kfd-ioctl-probe 2>&1)
prc=$?
echo "$probe" | sed 's/^/# probe: /'
version=$(echo "$probe" | sed -n 's/^KFD ioctl interface version //p')
check "kfd-ioctl-probe as root: rc $prc, version ${version:-none} (major 1)" \
    bash -c '[ "$0" = 0 ] && [[ "$1" =~ ^1\.[0-9]+$ ]]' "$prc" "$version"

# 5. topology: exactly one node, a CPU node (gpu_id 0)
nodes=$(ls -1 "$kfd_sys/topology/nodes" 2>/dev/null | wc -l)
gpu_id=$(cat "$kfd_sys/topology/nodes/0/gpu_id" 2>/dev/null || echo missing)
simd=$(awk '$1 == "simd_count" {print $2}' "$kfd_sys/topology/nodes/0/properties" 2>/dev/null)
cores=$(awk '$1 == "cpu_cores_count" {print $2}' "$kfd_sys/topology/nodes/0/properties" 2>/dev/null)
check "topology has exactly one node (got $nodes)" test "$nodes" = 1
check "node 0 is a CPU node: gpu_id ${gpu_id}, simd_count ${simd:-?}, cpu_cores_count ${cores:-?}" \
    bash -c '[ "$0" = 0 ] && [ "$1" = 0 ] && [ "${2:-0}" -gt 0 ]' "$gpu_id" "$simd" "$cores"

# 6. udevadm trigger --action=add keeps 0660 root:render, and restores it
udevadm trigger --action=add --subsystem-match=kfd
udevadm settle --timeout=30
mode=$(node_line)
check "trigger --action=add keeps crw-rw---- root:render (got: $mode)" \
    test "$mode" = "crw-rw---- root:render"
chmod 0666 /dev/kfd
chgrp root /dev/kfd
tampered=$(node_line)
udevadm trigger --action=add --subsystem-match=kfd
udevadm settle --timeout=30
mode=$(node_line)
check "trigger --action=add restores crw-rw---- root:render after chmod 0666/chgrp root ($tampered -> $mode)" \
    test "$mode" = "crw-rw---- root:render"

# 7. an unprivileged user outside 'render' is refused (probe exit 3 = open failed)
runuser -u tester -- kfd-ioctl-probe >/dev/null 2>&1
trc=$?
check "tester (not in render) cannot open /dev/kfd (probe rc $trc, want 3)" test "$trc" = 3

# 8. the stand-in display manager is active
dm=$(systemctl is-active display-manager.service)
check "display-manager.service is active (got: $dm; started at uptime $(cat /run/vmlane-dm.started 2>/dev/null))" \
    test "$dm" = active

echo "# dmesg: $(dmesg | grep -E 'amdgpu|\bkfd\b' | sed 's/^\[[^]]*\] //' | tr '\n' '|')"
echo "1..$n"
if [ "$failed" -gt 0 ]; then
    echo "# $failed of $n checks failed"
    exit 1
fi
echo "# all $n checks passed"
exit 0
