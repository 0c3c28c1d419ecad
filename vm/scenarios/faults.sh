#!/bin/bash
# Scenario "faults": the service under a broken configuration, SIGKILL, and
# a module option the module does not declare.
#  1. a good configuration (cwsr_enable: 0) is applied: modprobe.d written;
#  2. a broken file (YAML error, then a schema error): the service stays up
#     and READY, reports config-invalid with file:line:column, keeps the last
#     good configuration; a restart with the broken file still reaches READY;
#  3. kill -9: systemd restarts it, and its state is intact;
#  4. an option amdgpu does not declare: refused and reported; nothing written.
SCENARIO=faults
. ./lib.sh
# Reported: check_configured_params() returns early without an AMD GPU, so the
# option is never refused, and plan() writes it to kfdguard.conf.

installed_checks
modprobe amdgpu && udevadm settle --timeout=30
check "kfdguard serves $BUS_NAME" wait_serving 60
conf=/etc/modprobe.d/kfdguard.conf

# 1. a good configuration
write_config <<'EOF'
version: 1
module:
  options:
    cwsr_enable: 0
EOF
check "a good configuration is applied (reload)" reload_service
check "kfdguard.conf has 'options amdgpu cwsr_enable=0'" grep -qx "options amdgpu cwsr_enable=0" "$conf"
good_conf=$(sha256sum "$conf")
state0=$(status_field State)

# 2. a broken configuration
write_config <<'EOF'
version: 1
module:
  options: [cwsr_enable: 0
device:
  mode: "0660"
EOF
check "reload with a YAML syntax error: the service checks again" reload_service
check "kfdguard.service is still active" systemctl -q is-active kfdguard.service
f=$(finding config-invalid)
note "finding: $f"
check "finding config-invalid names the file with line and column" \
    bash -c '[[ $0 =~ ^config-invalid\|[a-z]+\|.*/etc/kfdguard/config\.yaml:[0-9]+:[0-9]+ ]]' "$f"
check "the state is still $state0 (the last good configuration applies)" test "$(status_field State)" = "$state0"
check "kfdguard.conf is unchanged (the last good configuration)" bash -c '[ "$(sha256sum "$1")" = "$0" ]' "$good_conf" "$conf"

write_config <<'EOF'
version: 1
device:
  mode: "0x1"
  group: render
EOF
check "reload with a schema error (device.mode \"0x1\")" reload_service
f=$(finding config-invalid)
note "finding: $f"
check "config-invalid names the key: device.mode at config.yaml:3" \
    bash -c '[[ $0 == *config.yaml:3:* && $0 == *device.mode* ]]' "$f"
check "kfdguard.conf is still the last good one" bash -c '[ "$(sha256sum "$1")" = "$0" ]' "$good_conf" "$conf"

t0=$(date +%s%N)
restart_service
rc=$?
t1=$(date +%s%N)
check "systemctl restart with the broken file succeeds: READY in $(((t1 - t0) / 1000000)) ms (rc $rc)" test "$rc" = 0
status=$(systemctl show -p StatusText --value kfdguard.service)
check "its STATUS= text is the state (got: '$status')" contains "$status" "$state0:"
wait_serving 60
check "after the restart: config-invalid still reported" bash -c '[ -n "$0" ]' "$(finding config-invalid)"
journal=$(kfdguard_journal)
check "the journal has the configuration error with its position" \
    bash -c 'grep -q "configuration: .*config.yaml:3:[0-9]*: device.mode" <<<"$0"' "$journal"

# 3. kill -9
wait_serving 60
quiesce
before=$(status_stable)
pid=$(main_pid)
restarts=$(systemctl show -p NRestarts --value kfdguard.service)
kill -9 "$pid"
check "systemd restarts kfdguard after kill -9 of pid $pid" \
    wait_until 30 bash -c '[ "$(systemctl show -p MainPID --value kfdguard.service)" != "$0" ] && systemctl -q is-active kfdguard.service' "$pid"
now=$(systemctl show -p NRestarts --value kfdguard.service)
check "NRestarts went from $restarts to $now" test "$now" = $((restarts + 1))
check "the restarted service serves $BUS_NAME again" wait_serving 60
quiesce
after=$(status_stable)
check "its state is intact: the same status as before the kill" test "$after" = "$before"
if [ "$after" != "$before" ]; then note "before: $before"; note "after:  $after"; fi
check "kfdguard.conf is intact" bash -c '[ "$(sha256sum "$1")" = "$0" ]' "$good_conf" "$conf"
check "/dev/kfd is still crw-rw---- root:render" test "$(node_line /dev/kfd)" = "crw-rw---- root:render"
check "/var/lib/kfdguard/history.json is intact (valid JSON)" \
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' /var/lib/kfdguard/history.json
leftovers=$(find /etc/modprobe.d /etc/udev/rules.d /var/lib/kfdguard -name '*.tmp*' -o -name '.kfdguard*' 2>/dev/null | tr '\n' ' ')
check "no temporary files left behind${leftovers:+ (got: $leftovers)}" test -z "$leftovers"

# 4. an option the module does not declare, and an invalid value: both from
# this kernel's own amdgpu.ko (modinfo), and kfdguard's tables for this series
# checked against it.
series=$(kernel_series)
real=$(param_types)
known=$(python3 -c '
import sys
from kfdguard.knowledge.generated import KERNELS
k = KERNELS.get(sys.argv[1])
print("\n".join(sorted(f"{n}:{t}" for n, t in k["params"].items())) if k else "")' "$series")
check "kfdguard's generated table of amdgpu $series parameters (name:type) is this module's modinfo ($(wc -l <<<"$real") parameters)" \
    test -n "$known" -a "$known" = "$real"
if [ "$known" != "$real" ]; then note "modinfo vs kfdguard: $(diff <(echo "$real") <(echo "$known") | grep '^[<>]' | tr '\n' ' ')"; fi
values=$(param_values sched_policy)
choices=$(python3 -c 'from kfdguard.knowledge.params import KFD_PARAMS; print(" ".join(map(str, KFD_PARAMS["sched_policy"].choices)))')
check "kfdguard's sched_policy values ($choices) are the ones this module describes ($values)" test "$choices" = "$values"
check "this amdgpu declares no enable_iommu ($(param_names | wc -l) parameters, modinfo)" not has_param enable_iommu
check "7 is none of the sched_policy values this amdgpu describes ($values)" \
    bash -c '[ -n "$0" ] && ! grep -qw 7 <<<"$0"' "$values"
write_config <<'EOF'
version: 1
module:
  options:
    enable_iommu: 1
EOF
check "reload with module.options.enable_iommu" reload_service
f=$(finding module-param-unknown)
note "finding: $f"
check "reported: module-param-unknown for enable_iommu" contains "$f" "enable_iommu"
check "refused: kfdguard.conf unchanged, no enable_iommu in modprobe.d" \
    bash -c '[ "$(sha256sum "$1")" = "$0" ] && ! grep -rq enable_iommu /etc/modprobe.d' "$good_conf" "$conf"
check "the state is still $state0" test "$(status_field State)" = "$state0"
write_config <<'EOF'
version: 1
module:
  options:
    sched_policy: 7
EOF
check "reload with module.options.sched_policy: 7" reload_service
f=$(finding module-param-invalid)
note "finding: $f"
check "reported: module-param-invalid for sched_policy=7" contains "$f" "sched_policy"
check "refused: no sched_policy=7 in kfdguard.conf" bash -c '! grep -q "sched_policy=7" "$0"' "$conf"
enf=$(kfdguard enforce --dry-run 2>&1)
note "kfdguard enforce --dry-run: $(echo "$enf" | head -n 3 | tr '\n' ' ')"
restarts_end=$(systemctl show -p NRestarts --value kfdguard.service)
check "no further restarts (NRestarts $restarts_end)" test "$restarts_end" = $((restarts + 1))

finish
