#!/bin/bash
# vmlane: bus
# Scenario "boot": kfdguard at boot on a real kernel with no AMD GPU.
# Boot 1: the package is installed (by the runner); configure amdgpu's KFD
#   option cwsr_enable=0, let the service write it to modprobe.d, and load
#   amdgpu at boot through modules-load.d (a stand-in for udev loading it for
#   a GPU). Reboot.
# Boot 2: kfdguard was active before the display manager started; amdgpu
#   came up with the configured option; /dev/kfd has the configured group and
#   mode; the reported state is the truth for this machine: no-device, with
#   KFD up, a CPU-only topology and the version ioctl read (1.x), the same
#   through kfdguard status, busctl and kfdguard check.
SCENARIO=boot
. ./lib.sh

case $BOOT in
1)
    installed_checks
    check "this kernel's amdgpu declares cwsr_enable (modinfo: $(param_desc cwsr_enable))" has_param cwsr_enable
    status=$(systemctl show -p StatusText --value kfdguard.service)
    check "the unit's STATUS= text is the state (got: '$status')" contains "$status" "no-device:"
    write_config <<'EOF'
# vmlane scenario "boot"
version: 1
module:
  options:
    cwsr_enable: 0
device:
  group: render
  mode: "0660"
EOF
    load_amdgpu_at_boot
    check "systemctl reload kfdguard re-reads the configuration and checks again" reload_service
    conf=$(cat /etc/modprobe.d/kfdguard.conf 2>/dev/null)
    check "kfdguard wrote 'options amdgpu cwsr_enable=0' to /etc/modprobe.d/kfdguard.conf" \
        contains "$conf" "options amdgpu cwsr_enable=0"
    note "kfdguard.conf: $(grep -v '^#' /etc/modprobe.d/kfdguard.conf 2>/dev/null | tr '\n' ' ')"
    reboot_for_next_boot
    ;;
esac

# --- boot 2 -------------------------------------------------------------------
check "kfdguard.service is active" systemctl -q is-active kfdguard.service
# Issue 21: the boot pass is kfdguard-enforce.service's (a oneshot): the display manager waits for
# its exit; the unprivileged kfdguard.service starts after it and is READY when it has read the result.
en_start=$(mono kfdguard-enforce.service ExecMainStartTimestampMonotonic)
en_exit=$(mono kfdguard-enforce.service ExecMainExitTimestampMonotonic)
kg_start=$(mono kfdguard.service InactiveExitTimestampMonotonic)
kg_ready=$(mono kfdguard.service ActiveEnterTimestampMonotonic)
dm_start=$(mono display-manager.service InactiveExitTimestampMonotonic)
ml_done=$(mono systemd-modules-load.service ActiveEnterTimestampMonotonic)
note "monotonic us: modules-load done $ml_done, enforce $en_start-$en_exit, kfdguard start $kg_start, ready $kg_ready, display-manager start $dm_start"
check "kfdguard-enforce started after systemd-modules-load finished" test "$ml_done" -gt 0 -a "$ml_done" -le "$en_start"
check "kfdguard-enforce had exited ($((en_exit / 1000)) ms) before the display manager started ($((dm_start / 1000)) ms)" \
    test "$en_exit" -gt 0 -a "$en_exit" -le "$dm_start"
check "kfdguard-enforce took $(((en_exit - en_start) / 1000)) ms, under its TimeoutStartSec (60 s)" \
    test $((en_exit - en_start)) -lt 60000000
check "kfdguard.service started after it ($((kg_start / 1000)) ms)" test "$kg_start" -ge "$en_exit"
check "kfdguard took $(((kg_ready - kg_start) / 1000)) ms to READY, under its TimeoutStartSec (30 s)" \
    test "$kg_ready" -gt 0 -a $((kg_ready - kg_start)) -lt 30000000
check "display-manager.service is active" systemctl -q is-active display-manager.service
status=$(systemctl show -p StatusText --value kfdguard.service)
check "systemctl status kfdguard shows its STATUS= text (got: '$status')" contains "$status" "no-device:"
systemctl status kfdguard.service --no-pager --lines=0 2>&1 | head -n 6 | sed 's/^/# systemctl status: /'
restarts=$(systemctl show -p NRestarts --value kfdguard.service)
check "kfdguard did not restart (NRestarts=$restarts)" test "$restarts" = 0

# amdgpu with the configured option, loaded before kfdguard
check "amdgpu is loaded" test -d /sys/module/amdgpu
cwsr=$(cat /sys/module/amdgpu/parameters/cwsr_enable 2>/dev/null)
check "amdgpu's cwsr_enable is the configured 0 (got: ${cwsr:-none})" test "$cwsr" = 0
sched=$(cat /sys/module/amdgpu/parameters/sched_policy 2>/dev/null)
sched_default=$(param_default sched_policy)
check "an option left unconfigured keeps the default its module declares (sched_policy ${sched:-none}, modinfo's default ${sched_default:-none})" \
    test -n "$sched_default" -a "$sched" = "$sched_default"

# /dev/kfd: the configured group and mode
mode=$(node_line /dev/kfd)
check "/dev/kfd is crw-rw---- root:render, the configured group and mode (got: $mode)" \
    test "$mode" = "crw-rw---- root:render"

# The truth of this machine, independently of kfdguard
amd_display=0
for dev in /sys/bus/pci/devices/*; do
    if [ "$(cat "$dev/vendor")" = 0x1002 ] && [[ $(cat "$dev/class") == 0x03* ]]; then amd_display=1; fi
done
check "no AMD display device on the PCI bus (the machine's truth)" test "$amd_display" = 0
nodes=$(ls /sys/class/kfd/kfd/topology/nodes 2>/dev/null | wc -l)
gpu_id=$(cat /sys/class/kfd/kfd/topology/nodes/0/gpu_id 2>/dev/null)
check "KFD is up with a CPU-only topology: $nodes node, gpu_id ${gpu_id:-?}" test "$nodes" = 1 -a "${gpu_id:-x}" = 0
probe=$(kfd-ioctl-probe 2>&1 | sed -n 's/^KFD ioctl interface version //p')
check "the ioctl probe reads KFD version ${probe:-none} (1.x)" bash -c '[[ $0 =~ ^1\.[0-9]+$ ]]' "$probe"

# What kfdguard reports: the service (kfdguard status, busctl) and the CLI
json=$(kfdguard status --json 2>&1)
rc=$?
note "kfdguard status --json: $(echo "$json" | tr -d '\n' | tr -s ' ')"
check "kfdguard status --json exits 3 (no-device) (got: $rc)" test "$rc" = 3
state=$(echo "$json" | json_get State)
check "the service's State is no-device (got: $state)" test "$state" = no-device
check "Ready is false" test "$(echo "$json" | json_get Ready)" = false
kv=$(echo "$json" | json_get KfdVersion)
check "KfdVersion is what the ioctl answers: '$kv' = '$probe'" test -n "$kv" -a "$kv" = "$probe"
check "KernelRelease is the running kernel ($(uname -r))" test "$(echo "$json" | json_get KernelRelease)" = "$(uname -r)"
check "Devices is empty (no AMD GPU)" test "$(echo "$json" | json_get Devices)" = "[]"
codes=$(finding_codes | tr '\n' ' ')
check "the only finding is no-amd-gpu (got: $codes)" test "$codes" = "no-amd-gpu "
# status --json is GetStatus plus the contract's schema_version (docs/JSON.md).
check "busctl GetStatus says the same (all but LastCheck and the CLI's schema_version)" \
    test "$(status_stable)" = "$(echo "$json" | python3 -c 'import json, sys; s = json.load(sys.stdin); s.pop("LastCheck"); s.pop("schema_version", None); print(json.dumps(s, sort_keys=True))')"
bus=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" GetStatus 2>&1)
check "busctl GetStatus says State \"no-device\"" contains "$bus" '"State" s "no-device"'
check "busctl GetStatus says KfdVersion \"$probe\"" contains "$bus" "\"KfdVersion\" s \"$probe\""
prop=$(busctl --system get-property "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" State 2>&1)
check "the State property is \"no-device\" (got: $prop)" test "$prop" = 's "no-device"'
cli=$(kfdguard check --json 2>/dev/null)
crc=$?
check "kfdguard check --json agrees: exit 3, state $(echo "$cli" | json_get state 2>/dev/null)" \
    test "$crc" = 3 -a "$(echo "$cli" | json_get state 2>/dev/null)" = no-device
human=$(kfdguard check 2>&1)
check "kfdguard check shows KFD up with its topology (interface $probe, 0 GPU + 1 CPU node)" \
    contains "$human" "interface $probe, topology 0 GPU + 1 CPU node"

# The journal of this boot
log=$(kfdguard_journal)
check "the journal has kfdguard's READY line with the state" bash -c 'grep -qiE "ready.*no-device" <<<"$0"' "$log"
errors=$(journalctl -b --no-pager -o cat -u kfdguard.service -p err | grep -v '^-- ' | head -n 3)
check "kfdguard logged no errors this boot${errors:+ (got: $errors)}" test -z "$errors"
sys_state=$(systemctl is-system-running)
check "the system is running, no failed unit (got: $sys_state)" test "$sys_state" = running

finish
