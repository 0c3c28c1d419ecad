#!/bin/bash
# vmlane: install=no
# Scenario "purge": install, upgrade, remove and purge, in the spirit of
# piuparts, in a guest where kfdguard was never installed (the line above: the
# lane offers the .debs in ./offered/ instead of installing them).
#  1. amdgpu loaded, udev's /dev/kfd noted; an administrator's modprobe.d file
#     with the old amdkfd advice; /etc, /var/lib and /run listed (with the
#     checksums of /etc's files): the machine before kfdguard.
#  2. The previous release installed, configured to write everything it can
#     write (module options -> modprobe.d, a group -> its udev rule,
#     module.repair -> an edit of the administrator's file, with a backup), its
#     history written.
#  3. Upgraded to this build without a terminal (keep the administrator's
#     configuration, as unattended-upgrades does): the package is configured,
#     the service restarted, the configuration and the history are kept. The
#     single root unit became the split (issue 21): the resident runs as
#     kfdguard with no capability, kfdguard-enforce.service is enabled and ran,
#     what the old service left in /var/lib/kfdguard and /run/kfdguard is usable
#     by the process that uses it now, the textfile is linked for the resident,
#     and systemctl reload and a bus Reload still repair.
#  4. apt purge: nothing the package or the service created is left in /etc,
#     /var/lib or /run (node_exporter's directory as it was: no link, no .kfdguard); a file kfdguard edited is as it was, or its backup is
#     named in the purge output; /dev/kfd is as udev's default rule makes it.
SCENARIO=purge
. ./lib.sh

advice=/etc/modprobe.d/amdkfd-advice.conf
history=/var/lib/kfdguard/history.json
snap=/var/tmp/purge-snapshots # not under a listed tree
mkdir -p "$snap"

# Paths that change on a running system whatever is installed; each is
# compared elsewhere or belongs to another program.
ignored() {
    grep -Ev '^(/var/lib/dpkg/|/var/lib/apt/|/var/lib/vmlane-chain|/var/lib/systemd/(random-seed|timers|catalog|coredump)|/var/lib/polkit-1/|/run/systemd/|/run/udev/(data|tags|watch|links)/|/run/log/|/run/user/|/run/credentials/|/run/mount/|/run/lock/|/run/utmp|/run/sudo|/etc/ld\.so\.cache)'
}
# One line per path: type, mode, owner and, for /etc's files, the sha256.
snapshot() {
    {
        find /etc /var/lib /run -xdev \( -type f -o -type d -o -type l \) -printf '%p %y %m %u:%g\n' 2>/dev/null
    } | ignored | LC_ALL=C sort >"$snap/$1.list"
    find /etc -xdev -type f -exec sha256sum {} + 2>/dev/null | awk '{print $2, $1}' | ignored | LC_ALL=C sort >"$snap/$1.sums"
}

deb_version() { dpkg-deb -f "$1" Version; }
current= previous=
for deb in ./offered/*.deb; do
    [ "$(dpkg-deb -f "$deb" Package)" = kfdguard ] || continue
    if [ -z "$current" ] || dpkg --compare-versions "$(deb_version "$deb")" gt "$(deb_version "$current")"; then
        [ -n "$current" ] && previous=$current
        current=$deb
    elif [ -z "$previous" ] || dpkg --compare-versions "$(deb_version "$deb")" gt "$(deb_version "$previous")"; then
        previous=$deb
    fi
done
check "this build is offered (${current:-none})" test -n "$current"
check "the previous release is offered (${previous:-none})" test -n "$previous"
check "kfdguard is not installed in this guest" bash -c '! dpkg-query -W -f="\${Status}" kfdguard 2>/dev/null | grep -q installed'
[ -n "$current" ] && [ -n "$previous" ] || finish

# 1. The machine before kfdguard.
check "modprobe amdgpu" quiet modprobe amdgpu
quiet udevadm settle
default_node=$(node_line)
check "udev's default rule gives /dev/kfd crw-rw---- root:render (got: $default_node)" test "$default_node" = "crw-rw---- root:render"
# kfdguard writes its udev rule only for an AMD GPU: the simulated one of
# fallback.sh (an RX 7900 XTX, 1002:744c), a PCI device directory bound over
# /sys/bus/pci/devices, made before the listing so that its /run files are
# the same before and after.
check "a simulated GPU 1002:744c appears in /sys/bus/pci/devices (bind mount)" \
    simulate_gpu 0x030000 0x744c 0xc8
printf '%s\n' "# the administrator's file, from a blog post" "options amdkfd enable_iommu=1" >"$advice"
advice_sum=$(sha256sum <"$advice")
# node_exporter's textfile directory as Debian's prometheus-node-exporter ships it (root, 0755): this
# build links its textfile there (docs/FLEET.md), and the purge must leave the directory as it was.
prom_dir=/var/lib/prometheus/node-exporter
mkdir -p "$prom_dir" && chmod 0755 "$prom_dir"
snapshot before
mkdir -p "$snap/accounts"
cp -p /etc/passwd /etc/passwd- /etc/group /etc/group- /etc/shadow /etc/shadow- /etc/gshadow /etc/gshadow- "$snap/accounts/" 2>/dev/null
note "before: $(wc -l <"$snap/before.list") paths in /etc, /var/lib and /run"

# 2. The previous release, made to write everything it writes.
# The status is taken at once: a $(...) in check's message would run first
# and reset $? to its own status.
out=$(dpkg -i "$previous" 2>&1)
rc=$?
check "dpkg -i the previous release $(deb_version "$previous")" test "$rc" = 0 || note "$out"
check "kfdguard.service is active" wait_until 60 systemctl -q is-active kfdguard.service
write_config <<'EOF'
# vmlane scenario "purge": the administrator's configuration
version: 1
module:
  repair: true
  options:
    cwsr_enable: 0
device:
  group: video
  mode: "0660"
EOF
config_sum=$(sha256sum <"$CONFIG")
check "kfdguard serves $BUS_NAME" wait_serving 60
check "reload with the administrator's configuration" reload_service
check "kfdguard wrote /etc/modprobe.d/kfdguard.conf" wait_until 30 test -f /etc/modprobe.d/kfdguard.conf
check "kfdguard wrote /etc/udev/rules.d/71-kfdguard.rules" wait_until 30 test -f /etc/udev/rules.d/71-kfdguard.rules
check "/dev/kfd follows kfdguard's rule: root:video (got: $(node_line))" wait_until 30 bash -c '[ "$(stat -c %G /dev/kfd)" = video ]'
check "kfdguard edited $advice (module.repair) after a backup" \
    wait_until 30 bash -c '[ "$(sha256sum <"$0")" != "$1" ] && find /var/lib/kfdguard/backups -type f | grep -q .' "$advice" "$advice_sum"
check "kfdguard wrote its history ($history)" wait_until 30 test -s "$history"
cp "$history" "$snap/history.before-upgrade"
old_pid=$(main_pid)

# 3. The upgrade keeps the configuration and the history.
# This build ships a longer config.yaml than the previous release, and the
# administrator changed theirs: dpkg would ask which to keep, and with no
# terminal it fails the upgrade ("end of file on stdin at conffile prompt"),
# leaving the package unconfigured, its postinst (restart) and later its prerm
# (stop) never run. An upgrade without a terminal answers as unattended-upgrades
# does: keep the administrator's file, put the new one beside it.
before_upgrade=$(journalctl -n 0 --show-cursor --no-pager | sed -n 's/^-- cursor: //p')
out=$(dpkg --force-confdef --force-confold -i "$current" 2>&1)
rc=$?
check "dpkg -i this build $(deb_version "$current") over $(deb_version "$previous")" test "$rc" = 0 || note "$out"
check "the package is configured after the upgrade (status: $(dpkg-query -W -f='${Status}' kfdguard))" \
    test "$(dpkg-query -W -f='${Status}' kfdguard)" = "install ok installed"
check "the installed version is $(deb_version "$current")" test "$(dpkg-query -W -f='${Version}' kfdguard)" = "$(deb_version "$current")"
check "the configuration is kept, byte for byte" test "$(sha256sum <"$CONFIG")" = "$config_sum"
shipped() { dpkg-deb --fsys-tarfile "$1" | tar -xO ".$CONFIG" | sha256sum; }
if [ "$(shipped "$previous")" != "$(shipped "$current")" ]; then
    check "the new shipped configuration is offered beside it (${CONFIG}.dpkg-dist)" test -f "${CONFIG}.dpkg-dist"
else
    note "both releases ship the same $CONFIG: dpkg had nothing to ask"
fi
check "kfdguard.service was restarted by the upgrade (PID $old_pid -> $(main_pid))" \
    wait_until 60 bash -c '[ "$(systemctl show -p MainPID --value kfdguard.service)" != "$0" ]' "$old_pid"
check "kfdguard.service is active after the upgrade" wait_until 60 systemctl -q is-active kfdguard.service
check "kfdguard serves $BUS_NAME after the upgrade" wait_serving 60
check "the history is kept: every entry from before the upgrade is still there" python3 -c '
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:])
def entries(h):
    if isinstance(h, dict):
        h = next((v for v in h.values() if isinstance(v, list)), [h])
    return [json.dumps(e, sort_keys=True) for e in h]
missing = [e for e in entries(old) if e not in entries(new)]
sys.exit(1 if missing else 0)
' "$snap/history.before-upgrade" "$history"
check "the generated files are still there after the upgrade" test -f /etc/modprobe.d/kfdguard.conf -a -f /etc/udev/rules.d/71-kfdguard.rules

# 3b. From the single root unit to the split (issue 21 item 4).
pid=$(main_pid)
check "after the upgrade kfdguard.service runs as kfdguard (got: $(ps -o user= -p "$pid"))" \
    test "$(ps -o user= -p "$pid" | tr -d ' ')" = kfdguard
for cap in CapEff CapPrm CapBnd CapAmb; do
    value=$(sed -n "s/^$cap:\t//p" "/proc/$pid/status")
    check "... with $cap 0 (got: $value)" test "$value" = 0000000000000000
done
procs=$(ps -o user= -p "$(tr '\n' ',' </sys/fs/cgroup/system.slice/kfdguard.service/cgroup.procs | sed 's/,$//')" | sort -u | tr -d ' ' | tr '\n' ' ')
check "every process of kfdguard.service is kfdguard's: nothing of the old root service is left (got: $procs)" \
    test "$procs" = "kfdguard "
en=$(systemctl is-enabled kfdguard-enforce.service 2>&1)
check "kfdguard-enforce.service is enabled by the upgrade (got: $en)" test "$en" = enabled
check "kfdguard-enforce.service ran after the upgrade and succeeded (Result=$(mono kfdguard-enforce.service Result))" \
    test "$(mono kfdguard-enforce.service Result)" = success -a -n "$(mono kfdguard-enforce.service InvocationID)"
# Each run of the pass is one invocation of the unit: the resident service's restart pulls it in (Wants=),
# and the package does not start it a second time on its own.
journalctl --sync 2>/dev/null
runs=$(journalctl --after-cursor "$before_upgrade" --no-pager -o export -u kfdguard-enforce.service \
    | sed -n 's/^_SYSTEMD_INVOCATION_ID=//p' | sort -u | wc -l)
check "the upgrade ran the pass once (invocations: $runs)" test "$runs" = 1
check "/run/kfdguard is drwxrwxr-t root:kfdguard after the upgrade (got: $(stat -c '%A %U:%G' /run/kfdguard))" \
    test "$(stat -c '%a %U:%G' /run/kfdguard)" = "1775 root:kfdguard"
note "/run/kfdguard after the upgrade: $(find /run/kfdguard -mindepth 1 -printf '%f %m %u:%g; ')"
note "/var/lib/kfdguard after the upgrade: $(find /var/lib/kfdguard -maxdepth 1 -mindepth 1 -printf '%f %m %u:%g; ')"
check "the old layout's /run/kfdguard/enforce.lock is gone (the lock is root's, in /var/lib/kfdguard)" \
    test ! -e /run/kfdguard/enforce.lock
check "/run/kfdguard/enforce.json is the oneshot's (root)" test "$(stat -c %U /run/kfdguard/enforce.json 2>/dev/null)" = root
ready_owner=$(stat -c %U /run/kfdguard/ready 2>/dev/null || echo absent)
check "the compute-ready marker is the resident's or absent, not the old root service's (got: $ready_owner)" \
    test "$ready_owner" = kfdguard -o "$ready_owner" = absent
for f in "$history" /var/lib/kfdguard/config.cache; do
    check "$f, which the old service wrote, is root's (the oneshot writes it now; got: $(stat -c %U "$f" 2>&1))" \
        test "$(stat -c %U "$f" 2>/dev/null)" = root
done
got=$(runuser -u kfdguard -- python3 -c 'open("/var/lib/kfdguard/config.cache", "rb").read(); print("readable")' 2>&1 | tail -n 1)
check "... and the last good configuration is readable by the resident's user (got: $got)" test "$got" = readable
check "the upgrade linked the textfile for the resident: $prom_dir/kfdguard.prom -> .kfdguard/kfdguard.prom" \
    test "$(readlink "$prom_dir/kfdguard.prom")" = .kfdguard/kfdguard.prom
check "... which the resident service wrote (owner: $(stat -c %U "$prom_dir/.kfdguard/kfdguard.prom" 2>&1))" \
    wait_until 30 bash -c '[ "$(stat -c %U "$0/.kfdguard/kfdguard.prom" 2>/dev/null)" = kfdguard ]' "$prom_dir"
rm -f /etc/modprobe.d/kfdguard.conf
check "systemctl reload kfdguard still repairs (through kfdguard-enforce.service)" reload_service
check "... /etc/modprobe.d/kfdguard.conf is back" wait_until 30 test -f /etc/modprobe.d/kfdguard.conf
rm -f /etc/modprobe.d/kfdguard.conf
reply=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Reload 2>&1)
note "bus Reload after the upgrade: $reply"
check "a bus Reload still repairs: /etc/modprobe.d/kfdguard.conf is back" wait_until 30 test -f /etc/modprobe.d/kfdguard.conf
check "the resident's journal says it started the oneshot" \
    contains "$(journal_of kfdguard.service)" "starting kfdguard-enforce.service"
check "no kfdguard unit failed after the upgrade (got: $(systemctl list-units --failed --plain --no-legend 'kfdguard*' | tr '\n' ' '))" \
    test -z "$(systemctl list-units --failed --plain --no-legend 'kfdguard*')"

# 4. Remove, then purge (apt, as an administrator does).
out=$(apt-get remove -y kfdguard 2>&1)
rc=$?
check "apt-get remove kfdguard" test "$rc" = 0 || note "$out"
check "after remove, the configuration is still there" test -f "$CONFIG"
check "after remove, kfdguard.service is no longer running" bash -c '! systemctl is-active --quiet kfdguard.service'
purge_out=$(apt-get purge -y kfdguard 2>&1)
rc=$?
check "apt-get purge kfdguard" test "$rc" = 0
purge_out=${purge_out//$'\r'/} # dpkg's progress lines end in carriage returns
note "purge output:"
sed 's/^/#   /' <<<"$purge_out"
check "dpkg knows nothing of kfdguard any more" bash -c '! dpkg-query -W kfdguard >/dev/null 2>&1 || [ -z "$(dpkg-query -W -f="\${Status}" kfdguard | grep -v not-installed)" ]'
snapshot after

# What purge kept on purpose: backups named in its output, and their directories.
named=$(grep -oE "kept at /var/lib/kfdguard/backups/[^ ]+" <<<"$purge_out" | sed 's/^kept at //')
allowed() {
    local p=$1 b
    for b in $named; do
        case $b in "$p" | "$p"/*) return 0 ;; esac
    done
    return 1
}
left=$(LC_ALL=C comm -13 "$snap/before.list" "$snap/after.list" | while read -r path rest; do
    allowed "$path" || echo "$path $rest"
done)
check "no path in /etc, /var/lib or /run is new after the purge${left:+ (left: $(tr '\n' ';' <<<"$left"))}" test -z "$left"
gone=$(LC_ALL=C comm -23 "$snap/before.list" "$snap/after.list" | cut -d' ' -f1 | tr '\n' ' ')
check "no path from before is gone or changed type, mode or owner${gone:+ ($gone)}" test -z "$gone"
changed=$(LC_ALL=C comm -3 "$snap/before.sums" "$snap/after.sums" | awk '{print $1}' | sort -u)
# The package's system user (sysusers.d) stays after the purge, as Debian leaves system users (a later
# file owned by a reused uid would be worse): the account files may differ by that user's line alone.
only_user() {
    local name=${1##*/}
    # passwd-, group-, shadow-, gshadow-: the tool that adds an account rotates its backup copy.
    case $name in *-) return 0 ;; esac
    [ -f "$snap/accounts/$name" ] || return 1
    diff <(grep -v '^kfdguard:' "$snap/accounts/$name") <(grep -v '^kfdguard:' "$1") >/dev/null
}
for f in $changed; do
    if [[ $f == /etc/passwd* || $f == /etc/group* || $f == /etc/shadow* || $f == /etc/gshadow* ]] && only_user "$f"; then
        ok "$f differs from before by the kfdguard system user only (or is the backup its tool rotated)"
    elif [ "$f" = "$advice" ] && grep -qF "$advice was edited by kfdguard" <<<"$purge_out"; then
        ok "$advice differs from before, and the purge output names its backup"
        backup=$(grep -F "$advice was edited" <<<"$purge_out" | grep -oE '/var/lib/kfdguard/backups/[^ ]+' | head -n 1)
        check "... and that backup is the file as it was before kfdguard (${backup:-none})" test "$(sha256sum <"$backup")" = "$advice_sum"
    else
        not_ok "$f changed between before the install and after the purge"
    fi
done
check "no file under /etc or /run is named after kfdguard" test -z "$(find /etc /run -name '*kfdguard*' 2>/dev/null)"
quiet udevadm settle
check "/dev/kfd is as udev's default rule makes it: $default_node (got: $(node_line))" test "$(node_line)" = "$default_node"
rm -f "$advice"
umount /sys/bus/pci/devices
finish
