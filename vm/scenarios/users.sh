#!/bin/bash
# vmlane: bus
# Scenario "users": who may do what on org.kfdguard.Guardian1 (bus policy and
# polkit, the real dbus-daemon, polkitd and logind).
#   tester (uid 1000) is not in the compute group 'render'; member (1001) is.
#   - anyone may read: GetStatus, properties, CheckAccess, kfdguard status;
#   - Reload (org.kfdguard.reload) is refused for tester outside a session,
#     allowed for member (polkit rule 49-kfdguard.rules) and for root;
#   - tester in an active local session (autologin on tty1, a seat0 session)
#     is allowed by the action's allow_active default;
#   - ApplyFallback (org.kfdguard.manage) needs an administrator;
#   - nobody but root may own the bus name.
SCENARIO=users
. ./lib.sh

as() { local user=$1; shift; runuser -u "$user" -- "$@"; }
call() { local user=$1 member=$2; shift 2; as "$user" busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" "$member" "$@" 2>&1; }

installed_checks
modprobe amdgpu && udevadm settle --timeout=30
usermod -aG render member
check "member is in render, tester is not" \
    bash -c 'id -nG member | grep -qw render && ! id -nG tester | grep -qw render'
check "kfdguard serves $BUS_NAME" wait_serving 60

# Reading needs no privilege.
out=$(call tester GetStatus)
check "tester: busctl GetStatus works (State \"no-device\")" contains "$out" '"State" s "no-device"'
out=$(as tester busctl --system get-property "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Ready 2>&1)
check "tester: busctl get-property Ready works (got: $out)" test "$out" = "b false"
out=$(call tester CheckAccess)
check "tester: CheckAccess answers (got: $out)" bash -c '[[ $0 =~ ^bs\ (true|false)\ \".+\"$ ]]' "$out"
out=$(as tester kfdguard status 2>&1)
rc=$?
check "tester: kfdguard status works (exit $rc = no-device)" test "$rc" = 3
out=$(as tester kfdguard access 2>&1)
rc=$?
check "tester: kfdguard access answers (exit $rc: $out)" test "$rc" = 0 -o "$rc" = 1
introspect=$(as tester busctl --system introspect "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" 2>&1)
check "tester: introspection lists Reload and GetStatus" \
    bash -c 'grep -q "^\.Reload " <<<"$0" && grep -q "^\.GetStatus " <<<"$0"' "$introspect"

# Reload: polkit decides (org.kfdguard.reload).
out=$(call tester Reload)
rc=$?
note "tester Reload: $out"
check "tester (not in render, no session): Reload is refused" test "$rc" != 0
check "... with a polkit reason (got: $out)" contains "$out" "polkit"
out=$(as tester kfdguard reload 2>&1)
rc=$?
check "tester: kfdguard reload exits 77 (refused) (got: $rc)" test "$rc" = 77
out=$(call tester Reload --allow-interactive-authorization=no)
check "tester, without interactive authorization: refused too" bash -c '! grep -q "s \"no-device\"" <<<"$0"' "$out"
out=$(call member Reload)
rc=$?
check "member (in render): Reload is allowed (rc $rc: $out)" test "$rc" = 0 -a "$out" = 's "no-device"'
out=$(as member kfdguard reload 2>&1)
rc=$?
check "member: kfdguard reload exits 0 (got: $rc: $out)" test "$rc" = 0
out=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Reload 2>&1)
check "root: Reload is allowed (got: $out)" test "$out" = 's "no-device"'

# ApplyFallback: an administrator's action (auth_admin).
out=$(call member ApplyFallback --allow-interactive-authorization=no)
rc=$?
note "member ApplyFallback: $out"
check "member: ApplyFallback is refused (org.kfdguard.manage needs an administrator)" test "$rc" != 0
out=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ApplyFallback 2>&1)
rc=$?
check "root: ApplyFallback is authorized and answers (nothing to boot here): $out" \
    bash -c '[ "$0" = 0 ] || ! grep -qi "not allowed\|denied\|authoriz" <<<"$1"' "$rc" "$out"

# Bus policy: only root may own the name.
out=$(as tester busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
    RequestName su "$BUS_NAME" 4 2>&1)
check "tester cannot own $BUS_NAME (got: $out)" contains "$out" "ccess denied"

# allow_active: tester logged in on tty1 (autologin), a local active session
# on seat0; the session's login shell makes the calls and writes the answers.
mkdir -p /etc/systemd/system/getty@tty1.service.d
cat >/etc/systemd/system/getty@tty1.service.d/vmlane-autologin.conf <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin tester --noclear %I $TERM
EOF
cat >/home/tester/.bash_profile <<'EOF'
if [ "$(tty)" = /dev/tty1 ] && [ -x /mnt/host/in-session.sh ]; then
    /mnt/host/in-session.sh >/tmp/in-session.out 2>&1
    echo "DONE" >>/tmp/in-session.out
fi
EOF
chown tester: /home/tester/.bash_profile
cat >/mnt/host/in-session.sh <<'EOF'
#!/bin/bash
echo "session=${XDG_SESSION_ID:-none}"
loginctl show-session "${XDG_SESSION_ID:-}" -p Seat -p TTY -p Remote -p Active -p Class 2>&1
echo "reload=$(busctl --system call org.kfdguard.Guardian1 /org/kfdguard/Guardian1 org.kfdguard.Guardian1 Reload 2>&1)"
kfdguard reload >/dev/null 2>&1
echo "cli=$?"
EOF
chmod 0755 /mnt/host/in-session.sh
rm -f /tmp/in-session.out
systemctl daemon-reload
systemctl restart getty@tty1.service
wait_until 60 grep -q DONE /tmp/in-session.out
session=$(cat /tmp/in-session.out 2>/dev/null)
note "tty1 session: $(echo "$session" | tr '\n' ' ')"
check "tester has an active local session on seat0 (tty1)" \
    bash -c 'grep -qx "Active=yes" <<<"$0" && grep -qx "Seat=seat0" <<<"$0" && grep -qx "Remote=no" <<<"$0"' "$session"
check "tester in the active session: Reload is allowed (allow_active)" \
    bash -c 'grep -qx "reload=s \"no-device\"" <<<"$0" && grep -qx "cli=0" <<<"$0"' "$session"
systemctl stop getty@tty1.service
out=$(call tester Reload)
check "tester outside that session is still refused" bash -c '! grep -q "s \"no-device\"" <<<"$0"' "$out"

finish
