#!/bin/bash
# Scenario "forged-log": what an unprivileged user writes to the journal is no
# kernel evidence (issue 35). A user can log any SYSLOG_IDENTIFIER and MESSAGE
# (logger -t systemd-udevd, -t kernel); journald stamps the sender's _UID,
# _SYSTEMD_UNIT and _TRANSPORT itself, and kfdguard reads only the kernel
# transport and root inside systemd-udevd.service / systemd-modules-load.service.
# The machine: a simulated AMD GPU the running kernel does support (Navi 21,
# gfx1030, bound over /sys/bus/pci/devices as in "fallback", so it has no KFD
# node), a newer kernel in GRUB's menu, fallback.policy oneshot.
#  1. As nobody: logger -t systemd-udevd "amdgpu SLOT: amdgpu: GC IP 0b0001 not
#     supported in kfd" (a kernel-too-old line of KFD's) and logger -t kernel
#     with a ring timeout (a GPU hang). They are in the journal, with _UID 65534.
#  2. The root pass (kfdguard restarted, kfdguard-enforce's boot pass and the
#     fallback step): no kernel-too-old, no fallback recommendation, grubenv has
#     no next_entry; kfdguard diagnose (which reads the live journal) reports no
#     kernel-too-old and no gpu-hang.
# Before the fix the first line made kernel-too-old the root cause and the root
# pass wrote next_entry (issue 35 item 1); the unit tests hold the same case
# with a real journal file (tests/unit/fallback/test_fallback_forged_log.py).
SCENARIO=forged-log
. ./lib.sh

running=$(uname -r)
if ! too_new_gpu; then  # only for $newer, a kernel GRUB's menu can offer
    not_ok "no newer kernel is chosen for kernel series $(kernel_series): add one to lib.sh's too_new_gpu"
    finish
fi
slot=0000:0f:00.0  # simulate_gpu's
grubenv=/boot/grub/grubenv
next_entry() { grub-editenv "$grubenv" list | sed -n 's/^next_entry=//p'; }

installed_checks
rm -f /etc/modprobe.d/kfdguard.conf /etc/udev/rules.d/71-kfdguard.rules
rm -rf /var/lib/kfdguard/history.json /var/lib/kfdguard/config.cache
modprobe amdgpu && udevadm settle --timeout=30
grub_layout "$running" "$newer"
rm -f "$grubenv"
check "grub-editenv creates $grubenv" grub-editenv "$grubenv" create
write_config <<'EOF2'
version: 1
fallback:
  policy: oneshot
EOF2

# 1. the forged lines, logged by nobody
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
gc_ip="amdgpu $slot: amdgpu: GC IP 0b0001 not supported in kfd"
ring="amdgpu $slot: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=2"
check "nobody logs KFD's kernel-too-old line as systemd-udevd (logger -t systemd-udevd)" \
    as_nobody logger -t systemd-udevd "$gc_ip"
check "nobody logs a ring timeout as the kernel (logger -t kernel)" as_nobody logger -t kernel "$ring"
check "... and as systemd-modules-load through the native socket (systemd-cat)" \
    as_nobody systemd-cat -t systemd-modules-load echo "$gc_ip"
journalctl --sync 2>/dev/null || sleep 1
forged=$(journalctl -b --no-pager -o cat _UID=65534 SYSLOG_IDENTIFIER=systemd-udevd)
check "the journal has the forged line, with journald's _UID 65534" contains "$forged" "GC IP 0b0001 not supported"

# 2. the root pass
check "a simulated GPU 1002:73bf (Navi 21, supported by $running) appears in /sys/bus/pci/devices" \
    simulate_gpu 0x030000 0x73bf 0xc1
restart_service
check "kfdguard restarted and serves $BUS_NAME" wait_serving 60
check "its boot pass ran (kfdguard-enforce.service: $(mono kfdguard-enforce.service Result))" \
    wait_until 60 test "$(mono kfdguard-enforce.service Result)" = success
sleep 2 # the fallback step follows the check
codes=$(finding_codes)
note "findings: $codes"
check "the service sees the simulated GPU (its status names $slot)" contains "$(status_json)" "$slot"
check "no kernel-too-old finding" not contains "$codes" kernel-too-old
check "no gpu-hang finding" not contains "$codes" gpu-hang
json=$(status_json)
check "no fallback is needed ($(echo "$json" | json_get FallbackRecommendation.Reason))" \
    test "$(echo "$json" | json_get FallbackRecommendation.Needed)" = false
check "grubenv has no next_entry" test -z "$(next_entry)"
out=$(kfdguard diagnose --local 2>&1)
note "kfdguard diagnose --local: $(echo "$out" | grep -E '^  [✗!i]' | tr '\n' ' ')"
check "kfdguard diagnose (the live journal) reports no kernel-too-old" not contains "$out" kernel-too-old
check "... and no gpu-hang" not contains "$out" gpu-hang

umount /sys/bus/pci/devices
finish
