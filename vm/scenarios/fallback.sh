#!/bin/bash
# Scenario "fallback": the kernel-fallback policy through GRUB's own tools.
# The guest boots its kernel directly (QEMU -kernel), so the scenario lays
# out what a GRUB machine has: /boot with the running kernel (6.1 or 6.12) and a second,
# newer kernel (placeholder images, real config and modules.dep lines), a
# Debian-style grub.cfg whose default boots the running kernel and whose
# "Advanced options" submenu has both, a grubenv made by grub-editenv, and a
# history in which compute failed on the running kernel and worked on the newer
# one. fallback.policy is oneshot.
#  1. No AMD GPU (the machine's truth): no fallback is needed, and the boot
#     loader is left alone.
#  2. A simulated AMD GPU that the running kernel is too old for (on 6.1 a
#     Strix Halo APU, on 6.12 an Instinct MI350X, below): a PCI device
#     directory bound over /sys/bus/pci/devices (sysfs
#     itself cannot be written), visible to the service started after it.
#     The service reports the GPU unavailable (kernel too old), recommends
#     the newer kernel, records the attempt and sets grubenv's next_entry with
#     grub-reboot, once per boot; it applies the configured device group and
#     mode (a GPU is present now). Nothing reboots; kfdguard fallback clear
#     undoes it.
SCENARIO=fallback
. ./lib.sh

running=$(uname -r)
# Per kernel series: a GPU whose GC IP this KFD does not drive and a newer
# kernel that does (lib.sh: too_new_gpu).
if ! too_new_gpu; then
    not_ok "no simulated GPU is chosen for kernel series $(kernel_series): add one to lib.sh's too_new_gpu"
    finish
fi
entry_new="gnulinux-advanced-kfdroot>gnulinux-$newer-advanced-kfdroot"
grubenv=/boot/grub/grubenv
next_entry() { grub-editenv "$grubenv" list | sed -n 's/^next_entry=//p'; }
has_next_entry() { [ -n "$(next_entry)" ]; }

installed_checks
# Start from no kfdguard state of an earlier scenario in the same guest.
rm -f /etc/modprobe.d/kfdguard.conf /etc/udev/rules.d/71-kfdguard.rules
rm -rf /var/lib/kfdguard/history.json /var/lib/kfdguard/config.cache
check "grub-editenv and grub-reboot are installed (grub-common, grub2-common)" \
    quiet command -v grub-editenv grub-reboot
modprobe amdgpu && udevadm settle --timeout=30

# /boot, /lib/modules, GRUB
grub_layout "$running" "$newer"
rm -f "$grubenv"
check "grub-editenv creates $grubenv" grub-editenv "$grubenv" create
check "grubenv starts without next_entry" test -z "$(next_entry)"

# The simulated history: compute failed on the running kernel and worked on the newer one.
fallback_history "$running" "$newer" "$gpu_id $gpu_gfx"
write_config <<'EOF'
version: 1
fallback:
  policy: oneshot
device:
  group: video
  mode: "0660"
EOF

# 1. no AMD GPU
check "reload: fallback.policy oneshot, the history and GRUB are read" reload_service
sleep 2 # the history and the policy's decision follow each check
json=$(status_json)
check "FallbackPolicy is oneshot" test "$(echo "$json" | json_get FallbackPolicy)" = oneshot
check "without an AMD GPU no fallback is needed ($(echo "$json" | json_get FallbackRecommendation.Reason))" \
    test "$(echo "$json" | json_get FallbackRecommendation.Needed)" = false
check "... and grubenv has no next_entry" test -z "$(next_entry)"
note "history after that check: $(python3 -c 'import json; print(json.load(open("/var/lib/kfdguard/history.json"))["kernels"])')"
fb=$(kfdguard fallback 2>&1)
note "kfdguard fallback: $(echo "$fb" | head -n 6 | tr '\n' ' ')"
check "kfdguard fallback lists both installed kernels" \
    bash -c 'grep -q "$1" <<<"$0" && grep -q "$2" <<<"$0"' "$fb" "$running" "$newer"

# 2. a simulated AMD GPU the running kernel is too old for
check "a simulated GPU $gpu_id ($gpu_name, class $gpu_class) appears in /sys/bus/pci/devices (bind mount)" \
    simulate_gpu "$gpu_class" "$gpu_device" "$gpu_rev"
restart_service
check "kfdguard restarted (a new mount namespace sees the GPU) and serves $BUS_NAME" wait_serving 60
check "the service set grubenv's next_entry by itself (policy oneshot)" wait_until 60 has_next_entry
ne=$(next_entry)
check "next_entry is the newer kernel's entry: $ne" test "$ne" = "$entry_new"
note "grub-editenv list: $(grub-editenv "$grubenv" list | tr '\n' ' ')"
json=$(status_json)
state=$(echo "$json" | json_get State)
check "the state is unavailable (got: $state)" test "$state" = unavailable
f=$(finding kernel-too-old)
note "finding: $f"
check "finding kernel-too-old: $running is too old for the $gpu_name GPU" contains "$f" "$running is too old"
check "the recommendation is $newer (got: $(echo "$json" | json_get FallbackRecommendation.Kernel))" \
    test "$(echo "$json" | json_get FallbackRecommendation.Kernel)" = "$newer"
check "Needed is true" test "$(echo "$json" | json_get FallbackRecommendation.Needed)" = true
attempts=$(python3 -c '
import json
h = json.load(open("/var/lib/kfdguard/history.json"))
print(" ".join("{from}->{to}:{mode}:{result}".format(**a) for a in h["attempts"]))')
check "history.json records one pending oneshot attempt $running -> $newer (got: $attempts)" \
    test "$attempts" = "$running->$newer:oneshot:pending"
log=$(kfdguard_journal)
check "the journal says what was arranged: \"$newer will boot at the next boot only\"" \
    contains "$log" "$newer will boot at the next boot only"
rule=$(cat /etc/udev/rules.d/71-kfdguard.rules 2>/dev/null)
check "with a GPU present, kfdguard wrote its udev rule with the configured group and mode (video, 0660)" \
    bash -c 'grep -q "SUBSYSTEM==\"kfd\", KERNEL==\"kfd\", GROUP=\"video\", MODE=\"0660\"" <<<"$0"' "$rule"
mode=$(node_line /dev/kfd)
check "/dev/kfd has the configured group and mode (got: $mode)" test "$mode" = "crw-rw---- root:video"

# Once per boot: a second start in the same boot does not arrange it again.
grub-editenv "$grubenv" unset next_entry
old_pid=$(main_pid)
old_enforce=$(mono kfdguard-enforce.service ExecMainStartTimestampMonotonic)
touch /run/vmlane-restarted
sleep 1 # a coarse mtime must tell the history's next write from this mark
restart_service
new_pid=$(main_pid)
check "kfdguard restarted again in the same boot (pid $old_pid -> $new_pid)" test "$new_pid" != "$old_pid"
check "... and serves $BUS_NAME" wait_serving 60
# The history is root's: kfdguard-enforce.service writes it (the packaged resident is unprivileged), and the
# restart starts that pass (Wants=) only within its start limit.
check "... with its boot pass: kfdguard-enforce.service ran again (result $(mono kfdguard-enforce.service Result))" \
    test "$(mono kfdguard-enforce.service ExecMainStartTimestampMonotonic)" != "$old_enforce" \
    -a "$(mono kfdguard-enforce.service Result)" = success
check "... and recorded this check in the history (the policy's decision comes with it)" \
    wait_until 30 test /var/lib/kfdguard/history.json -nt /run/vmlane-restarted
check "... and made no second automatic attempt (next_entry stays unset)" test -z "$(next_entry)"
note "kfdguard: $(journal_of kfdguard.service | grep -F "fallback" | tail -n 1)"
n_attempts=$(python3 -c 'import json; print(len(json.load(open("/var/lib/kfdguard/history.json"))["attempts"]))')
check "history.json still has one attempt (got: $n_attempts)" test "$n_attempts" = 1

# By hand, and undone.
out=$(kfdguard fallback apply 2>&1)
rc=$?
check "kfdguard fallback apply (rc $rc) sets next_entry again" test "$rc" = 0 -a "$(next_entry)" = "$entry_new"
out=$(kfdguard fallback clear 2>&1)
rc=$?
check "kfdguard fallback clear (rc $rc) unsets next_entry with grub-editenv" test "$rc" = 0 -a -z "$(next_entry)"
check "grubenv is still a 1024-byte environment block" test "$(stat -c %s "$grubenv")" = 1024

umount /sys/bus/pci/devices
finish
