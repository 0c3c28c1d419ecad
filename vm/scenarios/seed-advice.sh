#!/bin/bash
# Scenario "seed-advice": the popular advice for the old amdkfd module on a
# kernel whose KFD lives inside amdgpu (Linux 4.20+; here 6.1 or 6.12: the
# guest's own modules say that amdkfd does not exist and enable_iommu is no
# amdgpu parameter).
# Boot 1: install the advice: 'amdkfd' in /etc/modules-load.d, and
#   'softdep amdgpu pre: amdkfd' + 'options amdkfd enable_iommu=1' in
#   /etc/modprobe.d. Reboot.
# Boot 2: systemd-modules-load logs "Failed to find module 'amdkfd'" and stays
#   active (kmod's not-found is not a failure); kfdguard names each line, the
#   cause and the fix, and changes nothing (module.repair is off). Then
#   module.repair: true: kfdguard comments the lines out after a backup.
#   Reboot.
# Boot 3: a clean boot: no modules-load error, no findings about the advice.
SCENARIO=seed-advice
. ./lib.sh

modules_load=/etc/modules-load.d/amdkfd.conf
modprobe_conf=/etc/modprobe.d/amdkfd.conf
# Reported: the unit's sandbox (ProtectSystem=strict) has no ReadWritePaths for
# /etc/modules-load.d, so the repair of that file fails with EROFS.
modules_load_error() { journal_of systemd-modules-load.service | grep -F "Failed to find module 'amdkfd'"; }

case $BOOT in
1)
    installed_checks
    check "this kernel ($(uname -r)) has no amdkfd module (modinfo amdkfd fails)" not module_exists amdkfd
    check "... and KFD is amdgpu's: amdgpu declares KFD's sched_policy (modinfo)" has_param sched_policy
    check "enable_iommu is no parameter of this amdgpu (modinfo)" not has_param enable_iommu
    # Start from the package's state, whatever an earlier scenario in this
    # guest left (its configuration, generated files, history).
    write_config <<<"version: 1"
    rm -f /etc/modprobe.d/kfdguard.conf /etc/udev/rules.d/71-kfdguard.rules
    rm -rf /var/lib/kfdguard/history.json /var/lib/kfdguard/config.cache /var/lib/kfdguard/backups
    load_amdgpu_at_boot
    echo amdkfd >"$modules_load"
    cat >"$modprobe_conf" <<'EOF'
softdep amdgpu pre: amdkfd
options amdkfd enable_iommu=1
EOF
    note "installed the advice: $modules_load ($(cat $modules_load)), $modprobe_conf ($(tr '\n' ';' <$modprobe_conf))"
    reboot_for_next_boot
    ;;
2)
    line=$(modules_load_error)
    check "the boot log has systemd-modules-load's \"Failed to find module 'amdkfd'\"${line:+ ($line)}" test -n "$line"
    result="$(systemctl show -p ActiveState --value systemd-modules-load.service) $(systemctl show -p Result --value systemd-modules-load.service)"
    check "systemd-modules-load.service is still active, result success (got: $result)" test "$result" = "active success"
    check "amdgpu is loaded (KFD inside it)" test -d /sys/module/amdgpu
    check "kfdguard serves $BUS_NAME" wait_serving 60
    sums=$(sha256sum "$modules_load" "$modprobe_conf")
    findings=$(finding softdep-missing-module)
    note "findings: $(echo "$findings" | tr '\n' ' ')"
    ml=$(grep -F "$modules_load" <<<"$findings")
    check "a finding names $modules_load:1, the cause (no amdkfd on this kernel) and the boot error" \
        bash -c '[[ $0 == *"$1:1"* && $0 == *"amdkfd, which does not exist"* && $0 == *"Failed to find module"* ]]' "$ml" "$modules_load"
    check "... and the fix: delete the line" contains "$ml" "|delete line 1 of $modules_load"
    sd=$(grep -F "softdep amdgpu pre: amdkfd" <<<"$findings")
    check "a finding names $modprobe_conf:1 'softdep amdgpu pre: amdkfd' as a no-op, with the fix" \
        bash -c '[[ $0 == *"$1:1"* && $0 == *"does nothing"* && $0 == *"delete the line"* ]]' "$sd" "$modprobe_conf"
    opt=$(grep -F "options amdkfd enable_iommu=1" <<<"$findings")
    check "a finding names $modprobe_conf:2 'options amdkfd enable_iommu=1'" contains "$opt" "$modprobe_conf:2"
    bogus=$(finding module-param-unknown)
    check "enable_iommu is reported as no parameter of any amdgpu/amdkfd" contains "$bogus" "'enable_iommu' is not a parameter"
    diag=$(kfdguard diagnose --local 2>&1)
    check "kfdguard diagnose (kernel log included) explains the modules-load error too" \
        contains "$diag" "amdkfd"
    check "with module.repair off, kfdguard changed none of these files" \
        bash -c '[ "$(sha256sum "$1" "$2")" = "$0" ]' "$sums" "$modules_load" "$modprobe_conf"

    write_config <<'EOF'
version: 1
module:
  repair: true
EOF
    check "module.repair: true, reload" reload_service
    note "$modules_load now: $(tr '\n' ';' <"$modules_load")"
    note "$modprobe_conf now: $(tr '\n' ';' <"$modprobe_conf")"
    check "kfdguard commented out 'amdkfd' in $modules_load" \
        grep -qx "# kfdguard disabled: amdkfd" "$modules_load"
    check "kfdguard commented out the softdep and options lines in $modprobe_conf" \
        bash -c '[ "$(grep -c "^# kfdguard disabled: " "$0")" = 2 ]' "$modprobe_conf"
    backups=$(find /var/lib/kfdguard/backups -type f 2>/dev/null | tr '\n' ' ')
    check "backups of both files are in /var/lib/kfdguard/backups (got: ${backups:-none})" \
        bash -c '[[ $0 == *"$1"* && $0 == *"$2"* ]]' "$backups" "$modules_load" "$modprobe_conf"
    left=$(finding softdep-missing-module; finding module-param-unknown)
    check "the findings about $modprobe_conf are gone after the repair" \
        bash -c '! grep -qF "$1" <<<"$0"' "$left" "$modprobe_conf"
    check "the finding about $modules_load is gone after the repair" \
        bash -c '! grep -qF "$1" <<<"$0"' "$left" "$modules_load"
    reboot_for_next_boot
    ;;
esac

# --- boot 3 -------------------------------------------------------------------
line=$(modules_load_error)
check "a clean boot: no \"Failed to find module 'amdkfd'\"${line:+ (got: $line)}" test -z "$line"
mlog=$(journal_of systemd-modules-load.service | grep -v '^-- ' | tr '\n' ';')
note "systemd-modules-load: $mlog"
check "systemd-modules-load.service is active" systemctl -q is-active systemd-modules-load.service
check "amdgpu is loaded" test -d /sys/module/amdgpu
check "kfdguard serves $BUS_NAME" wait_serving 60
advice=$(finding softdep-missing-module; finding module-param-unknown)
check "no finding about $modprobe_conf any more (repaired at boot 2)" bash -c '! grep -qF "$1" <<<"$0"' "$advice" "$modprobe_conf"
codes=$(finding_codes | tr '\n' ' ')
check "kfdguard's findings are clean: only no-amd-gpu (got: $codes)" test "$codes" = "no-amd-gpu "
warnings=$(journalctl -b --no-pager -o cat -u kfdguard.service -p warning | grep -v '^-- ' | head -n 3)
check "kfdguard logged no warnings this boot${warnings:+ (got: $warnings)}" test -z "$warnings"
plan=$(kfdguard enforce --dry-run 2>&1)
note "kfdguard enforce --dry-run: $(echo "$plan" | head -n 4 | tr '\n' ' ')"
system=$(systemctl is-system-running)
check "the system is running, no failed unit (got: $system)" test "$system" = running

finish
