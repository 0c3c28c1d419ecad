#!/bin/bash
# Scenario "privsep" (issue 21): the split units under the guest's real
# systemd, polkitd and system bus.
#  1. The package made the user kfdguard and /run/kfdguard (1775 root:kfdguard),
#     enabled kfdguard-enforce.service, which ran and left its record; the
#     resident kfdguard.service runs as kfdguard with no capability at all.
#  2. Under the resident unit's own sandbox (its installed file, turned into a
#     oneshot that runs a probe instead of the service), loading a module and
#     chowning /dev/kfd fail with EPERM; as root outside they do not.
#  3. Reload from a member of the render group (polkit: 49-kfdguard.rules)
#     makes the resident service start kfdguard-enforce.service (polkit:
#     50-kfdguard-units.rules, as the user kfdguard), which repairs what the
#     resident could not; systemctl reload kfdguard does the same. A user
#     outside the group starts nothing.
#  4. ApplyFallback/ClearFallback on GRUB go through
#     kfdguard-fallback@apply/clear.service: grub-reboot's next_entry is set
#     and cleared, by the oneshot, not the resident service.
SCENARIO=privsep
. ./lib.sh

invocation() { systemctl show -p InvocationID --value "$1"; }
invocation_changed() { [ "$(invocation "$1")" != "$2" ]; }

installed_checks
# --- 1. the layout the package installed --------------------------------------
check "the system user kfdguard exists (sysusers.d)" quiet id kfdguard
check "/run/kfdguard is drwxrwxr-t root:kfdguard (got: $(stat -c '%A %U:%G' /run/kfdguard))" \
    test "$(stat -c '%a %U:%G' /run/kfdguard)" = "1775 root:kfdguard"
en=$(systemctl is-enabled kfdguard-enforce.service 2>&1)
check "kfdguard-enforce.service is enabled by the package (got: $en)" test "$en" = enabled
check "kfdguard-enforce.service ran and succeeded (Result=$(mono kfdguard-enforce.service Result))" \
    test "$(mono kfdguard-enforce.service Result)" = success
check "/run/kfdguard/enforce.json is root's, mode 0644 (got: $(stat -c '%a %U' /run/kfdguard/enforce.json 2>&1))" \
    test "$(stat -c '%a %U' /run/kfdguard/enforce.json 2>/dev/null)" = "644 root"
pid=$(main_pid)
check "kfdguard.service's main process runs as kfdguard (got: $(ps -o user= -p "$pid"))" \
    test "$(ps -o user= -p "$pid" | tr -d ' ')" = kfdguard
for cap in CapEff CapPrm CapBnd CapAmb; do
    value=$(sed -n "s/^$cap:\t//p" "/proc/$pid/status")
    check "kfdguard.service has $cap 0 (got: $value)" test "$value" = 0000000000000000
done
check "kfdguard.service serves $BUS_NAME" wait_serving 60
note "systemd-analyze security: $(systemd-analyze security kfdguard.service 2>/dev/null | tail -n 1)"

# --- 2. EPERM under the resident unit's sandbox --------------------------------
modprobe amdgpu && udevadm settle --timeout=30
PROBE_PY='
import ctypes, errno, os, sys
what = sys.argv[1]
try:
    if what == "module":
        # finit_module(2) on any open file: the capability (and the seccomp filter) is checked first.
        fd = os.open("/usr/bin/true", os.O_RDONLY)
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.syscall(313, fd, b"", 0)  # x86_64 __NR_finit_module
        err = ctypes.get_errno() if rc != 0 else 0
    else:
        st = os.stat("/dev/kfd")
        os.chown("/dev/kfd", st.st_uid, st.st_gid)  # even to the same owner: CAP_CHOWN is needed
        err = 0
except OSError as exc:
    err = exc.errno
print(errno.errorcode.get(err, "OK") if err else "OK")
'
echo "$PROBE_PY" >/run/vmlane-probe.py
chmod 0644 /run/vmlane-probe.py
unit=$(systemctl show -p FragmentPath --value kfdguard.service)
sandboxed() {
    # The installed unit with its [Service] sandbox intact; only what makes it the service goes.
    sed -e '/^\(Type\|NotifyAccess\|BusName\|ExecStart\|ExecReload\|WatchdogSec\|Restart\|RestartSec\)=/d' \
        -e '/^\[Install\]/,$d' -e "s|^\[Service\]|[Service]\nType=oneshot\nExecStart=/usr/bin/python3 /run/vmlane-probe.py $1|" \
        "$unit" >"/run/systemd/system/vmlane-sandbox-$1.service"
    systemctl daemon-reload
    systemctl start "vmlane-sandbox-$1.service" >/dev/null 2>&1 || true
    journalctl -b --no-pager -o cat -u "vmlane-sandbox-$1.service" | grep -E '^(OK|E[A-Z]+)$' | tail -n 1
}
user_of_sandbox=$(grep -c '^User=kfdguard' "$unit")
check "the installed kfdguard.service says User=kfdguard" test "$user_of_sandbox" = 1
got=$(sandboxed module)
check "under kfdguard.service's sandbox, loading a module fails with EPERM (got: $got)" test "$got" = EPERM
got=$(sandboxed chown)
check "under kfdguard.service's sandbox, chown /dev/kfd fails with EPERM (got: $got)" test "$got" = EPERM
got=$(python3 /run/vmlane-probe.py module)
check "as root outside it, the same finit_module gets past the permission check (got: $got)" test "$got" != EPERM
got=$(python3 /run/vmlane-probe.py chown)
check "as root outside it, the same chown succeeds (got: $got)" test "$got" = OK

# --- 3. Reload from a render-group user, systemctl reload, and a stranger ------
id alice >/dev/null 2>&1 || useradd -m -G render alice
id bob >/dev/null 2>&1 || useradd -m bob
# Something only the oneshot can do: write /etc/modprobe.d (read-only for the resident service).
rm -f /etc/modprobe.d/kfdguard.conf
printf 'version: 1\nmodule:\n  options:\n    cwsr_enable: 0\n' | write_config
before=$(invocation kfdguard-enforce.service)
reply=$(runuser -u alice -- busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Reload 2>&1)
note "Reload by alice (render): $reply"
check "Reload from a render-group user is answered with a state (got: $reply)" contains "$reply" 's "'
check "... and it ran kfdguard-enforce.service again" invocation_changed kfdguard-enforce.service "$before"
check "... which succeeded (Result=$(mono kfdguard-enforce.service Result))" \
    test "$(mono kfdguard-enforce.service Result)" = success
check "... which read the new configuration and wrote 'options amdgpu cwsr_enable=0' to modprobe.d" \
    contains "$(cat /etc/modprobe.d/kfdguard.conf 2>/dev/null)" "options amdgpu cwsr_enable=0"
check "the resident service's journal says it started the oneshot" \
    contains "$(journal_of kfdguard.service)" "starting kfdguard-enforce.service (Reload by"
before=$(invocation kfdguard-enforce.service)
check "systemctl reload kfdguard checks again" reload_service
check "... through kfdguard-enforce.service" wait_until 30 invocation_changed kfdguard-enforce.service "$before"
before=$(invocation kfdguard-enforce.service)
reply=$(runuser -u bob -- busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Reload 2>&1)
check "Reload from a user outside the group is refused (got: $reply)" contains "$reply" "not allowed"
check "... and started nothing" test "$(invocation kfdguard-enforce.service)" = "$before"
reply=$(runuser -u bob -- busctl --system call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
    org.freedesktop.systemd1.Manager StartUnit ss kfdguard-enforce.service replace 2>&1)
check "nor may that user start the oneshot itself (got: $reply)" test "$(invocation kfdguard-enforce.service)" = "$before"

# --- 4. the kernel fallback on GRUB through kfdguard-fallback@.service ----------
running=$(uname -r)
# A GPU the running kernel's KFD does not drive and a newer kernel that does,
# per kernel series (lib.sh: too_new_gpu, as fallback.sh).
if ! too_new_gpu; then
    not_ok "no simulated GPU is chosen for kernel series $(kernel_series): add one to lib.sh's too_new_gpu"
    finish
fi
entry_new="gnulinux-advanced-kfdroot>gnulinux-$newer-advanced-kfdroot"
grubenv=/boot/grub/grubenv
next_entry() { grub-editenv "$grubenv" list | sed -n 's/^next_entry=//p'; }
grub_layout "$running" "$newer"
rm -f "$grubenv"
grub-editenv "$grubenv" create
fallback_history "$running" "$newer" "$gpu_id $gpu_gfx"
# policy notify: nothing acts by itself; only the D-Bus calls below touch GRUB.
write_config <<'EOF'
version: 1
fallback:
  policy: notify
EOF
check "a simulated GPU $gpu_id ($gpu_name, class $gpu_class) appears in /sys/bus/pci/devices (bind mount)" \
    simulate_gpu "$gpu_class" "$gpu_device" "$gpu_rev"
# New mount namespaces see it: restarting the resident service runs the enforce pass again (Wants=).
restart_service
check "kfdguard restarted and serves $BUS_NAME" wait_serving 60
check "the newer kernel is recommended (got: $(status_field FallbackRecommendation.Kernel))" \
    wait_until 30 test "$(status_field FallbackRecommendation.Kernel)" = "$newer"
check "grubenv has no next_entry yet (policy notify)" test -z "$(next_entry)"
reply=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ApplyFallback 2>&1)
note "ApplyFallback: $reply"
check "ApplyFallback ran kfdguard-fallback@apply.service (Result=$(mono kfdguard-fallback@apply.service Result))" \
    test "$(mono kfdguard-fallback@apply.service Result)" = success
check "... which set next_entry to the newer kernel's entry (got: $(next_entry))" test "$(next_entry)" = "$entry_new"
check "... and the reply is its message" contains "$reply" "$newer"
reply=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ClearFallback 2>&1)
note "ClearFallback: $reply"
check "ClearFallback ran kfdguard-fallback@clear.service (Result=$(mono kfdguard-fallback@clear.service Result))" \
    test "$(mono kfdguard-fallback@clear.service Result)" = success
check "... which removed next_entry" test -z "$(next_entry)"
check "the fallback oneshot's journal has both actions" \
    bash -c 'journalctl -b --no-pager -o cat -u "kfdguard-fallback@*" | grep -q "fallback apply" &&
             journalctl -b --no-pager -o cat -u "kfdguard-fallback@*" | grep -q "fallback clear"'

# --- A boot pass systemd refuses: kfdguard.service starts anyway (Wants=), and says so --------------
# Ten starts a minute, then systemd refuses the pass (StartLimitBurst=10): start it until it is refused.
# Under TCG one pass takes 3 to 6 s, so ten of them need not fit in the unit's 60 s, and the oldest
# starts leave the window before the limit is reached (CI: fourteen starts, none refused, on both
# guests). A runtime drop-in widens the interval only; the burst stays the unit's. reset-failed
# zeroes the count, so the starts below are the only ones in it.
limit_dropin=/run/systemd/system/kfdguard-enforce.service.d/vmlane-start-limit.conf
mkdir -p "${limit_dropin%/*}"
printf '[Unit]\nStartLimitIntervalSec=1h\n' >"$limit_dropin"
systemctl daemon-reload
systemctl reset-failed kfdguard-enforce.service
burst=$(mono kfdguard-enforce.service StartLimitBurst)
refused_after=0
for i in $(seq 1 $((burst + 3))); do
    if ! systemctl start kfdguard-enforce.service 2>/dev/null; then refused_after=$i; break; fi
done
# Exactly burst + 1 unless the resident started the pass itself meanwhile; never the first start.
check "systemd refuses kfdguard-enforce.service past its start limit of $burst (refused start $refused_after, Result=$(mono kfdguard-enforce.service Result))" \
    test "$refused_after" -gt 1 -a "$refused_after" -le $((burst + 1)) -a "$(mono kfdguard-enforce.service Result)" = start-limit-hit
systemctl reset-failed kfdguard.service # only the service's own count: the pass stays refused
systemctl restart kfdguard.service
check "kfdguard.service starts without its pass and serves $BUS_NAME" wait_serving 60
f=$(finding enforce-run-failed)
note "finding: $f"
check "... and says the pass did not run for this start (systemd's start limit)" contains "$f" "start limit"
systemctl reset-failed kfdguard-enforce.service
rm -f "$limit_dropin" && systemctl daemon-reload
check "once the limit is reset, systemctl reload runs the pass" reload_service
check "... and the finding is gone (got: $(finding_codes | tr '\n' ' '))" \
    bash -c '! grep -qx enforce-run-failed <<<"$0"' "$(finding_codes)"

umount /sys/bus/pci/devices || true
rm -f /run/systemd/system/vmlane-sandbox-*.service && systemctl daemon-reload
finish
