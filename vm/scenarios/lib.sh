# vm/scenarios/lib.sh: helpers for the kfdguard scenarios, sourced by each
# scenario (`. ./lib.sh`; vmlane.py copies this file into the share next to
# test.sh, and test.sh runs in the share). Prints TAP-like lines: "ok N - ...",
# "not ok N - ...", "# comment". Numbering restarts at every boot; the
# scenario's exit status says whether everything passed (0), failed (1), or
# asks the runner to reboot and run it again (200, see reboot_for_next_boot).
# shellcheck shell=bash

set -u
export LC_ALL=C.UTF-8
BOOT=${VMLANE_BOOT:-1}
NAME=kfdguard
BUS_NAME=org.kfdguard.Guardian1
BUS_PATH=/org/kfdguard/Guardian1
CONFIG=/etc/kfdguard/config.yaml
n=0
failed=0
todo=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
note() { echo "# $*"; }

# check DESCRIPTION COMMAND...: ok if COMMAND exits 0.
check() {
    local desc=$1
    shift
    if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}

# check_todo REASON DESCRIPTION COMMAND...: a check that fails because of a
# known, reported bug (TAP's TODO directive): "not ok N - ... # TODO REASON" is
# shown but not counted as a failure; when it passes, "ok N - ... # TODO ..."
# tells that the marker can go.
check_todo() {
    local reason=$1 desc=$2
    shift 2
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $desc # TODO passes now, remove the marker: $reason"
    else
        todo=$((todo + 1))
        echo "not ok $n - $desc # TODO known bug: $reason"
    fi
}

# not COMMAND...: COMMAND fails (for check, which takes a command).
not() { ! "$@"; }

# quiet COMMAND...: run it without output (use inside check).
quiet() { "$@" >/dev/null 2>&1; }

# contains TEXT NEEDLE: TEXT contains the fixed string NEEDLE.
contains() { [[ $1 == *"$2"* ]]; }

# wait_until SECONDS COMMAND...: poll every 0.5 s until COMMAND succeeds.
wait_until() {
    local limit=$1 i=0
    shift
    while ! "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ "$i" -ge $((limit * 2)) ]; then return 1; fi
        sleep 0.5
    done
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }
mono() { systemctl show -p "$2" --value "$1"; }
main_pid() { systemctl show -p MainPID --value kfdguard.service; }
# A deliberate restart; reset-failed first: the unit allows 3 starts in 120 s
# (StartLimitBurst), and the package's own start counts. So does
# kfdguard-enforce.service, which every restart (Wants=) and every reload starts:
# it allows 10 in 60 s, and past that systemd refuses it while kfdguard.service
# starts anyway, without its boot pass (CI, bookworm fallback check 26). A person
# does not restart ten times a minute; a scenario compresses that, so a restart
# resets both. A reload resets only the pass's: reset-failed also zeroes the
# service's NRestarts, which faults.sh counts across reloads.
restart_service() { systemctl reset-failed kfdguard.service kfdguard-enforce.service && systemctl restart kfdguard.service; }
node_line() { stat -c '%A %U:%G' "${1:-/dev/kfd}" 2>/dev/null || echo missing; }

# The service owns its bus name once its event loop runs (READY comes before:
# a SIGHUP between the two would stop it, so reloads wait for this).
owns_name() { busctl --system status "$BUS_NAME" >/dev/null 2>&1; }
wait_serving() { wait_until "${1:-60}" owns_name; }

# Re-read the configuration and check again (systemctl reload = SIGHUP), then
# wait until the service published a check newer than before.
reload_service() {
    local before
    wait_serving 60 || return 1
    before=$(last_check)
    systemctl reset-failed kfdguard-enforce.service
    systemctl reload kfdguard.service || return 1
    wait_until 60 last_check_after "$before"
}
# LastCheck (us since the epoch) through busctl: fast enough to poll (a Python
# client costs ~2 s under TCG).
last_check() { busctl --system get-property "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" LastCheck 2>/dev/null | cut -d' ' -f2; }
last_check_after() { local now; now=$(last_check) && [ "${now:-0}" -gt "$1" ]; }
# quiesce: wait (at most 30 s) until no check finished for 2 s: the re-checks
# that device events or a reload asked for are done.
quiesce() {
    local a b i=0
    a=$(last_check)
    while [ "$i" -lt 15 ]; do
        sleep 2
        b=$(last_check)
        [ "$a" = "$b" ] && return 0
        a=$b
        i=$((i + 1))
    done
    return 1
}

# The service's status as plain JSON, the same shape as `kfdguard status
# --json` (GetStatus through busctl, the variants unwrapped), and one field.
STATUS_PY='
import json, sys
def plain(v):
    if isinstance(v, dict) and set(v) == {"type", "data"}:
        return plain(v["data"])
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v
status = plain(json.load(sys.stdin)["data"][0])
what = sys.argv[1] if len(sys.argv) > 1 else ""
if what == "codes":
    print("\n".join(f[0] for f in status["Findings"]))
elif what.startswith("finding="):
    print("\n".join("|".join(f) for f in status["Findings"] if f[0] == what[8:]))
elif what == "stable":
    status.pop("LastCheck")
    print(json.dumps(status, sort_keys=True))
elif what:
    value = status
    for key in what.split("."):
        value = value[key]
    print(value if isinstance(value, str) else json.dumps(value))
else:
    print(json.dumps(status, indent=1))
'
get_status() { busctl --system --json=short call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" GetStatus 2>/dev/null; }
status_json() { get_status | python3 -c "$STATUS_PY"; }
status_field() { get_status | python3 -c "$STATUS_PY" "$1"; }
# finding_codes: the codes of the current findings, one a line.
finding_codes() { get_status | python3 -c "$STATUS_PY" codes; }
# finding CODE: the findings with that code, "code|severity|message|remedy" a line.
finding() { get_status | python3 -c "$STATUS_PY" "finding=$1"; }
# The status without LastCheck, for comparing two checks.
status_stable() { get_status | python3 -c "$STATUS_PY" stable; }

# json_get KEY[.KEY...]: a value from the JSON on stdin (strings bare, the
# rest as JSON).
json_get() {
    python3 -c '
import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1].split("."):
    value = value[int(key)] if isinstance(value, list) else value[key]
print(value if isinstance(value, str) else json.dumps(value))
' "$1"
}

# Journal lines of this boot from a unit, or kfdguard's.
journal_of() { journalctl -b --no-pager -o cat -u "$1"; }
# kfdguard's journal as a whole: the resident service and its privileged oneshots (issue 21: the
# boot pass, the repairs and the fallback actions are kfdguard-enforce's and kfdguard-fallback@'s).
kfdguard_journal() {
    journalctl -b --no-pager -o cat -u kfdguard.service -u kfdguard-enforce.service -u 'kfdguard-fallback@*'
}

# A stand-in for a GPU that udev would load amdgpu for: load it at boot
# through modules-load.d (no AMD GPU in the VM; KFD comes up CPU-only).
load_amdgpu_at_boot() { echo amdgpu >/etc/modules-load.d/vmlane-amdgpu.conf; }

write_config() { mkdir -p /etc/kfdguard && cat >"$CONFIG"; }

# End of this boot's part: exit 200 (reboot, run again with VMLANE_BOOT+1)
# if everything passed so far, else stop here with a failure.
reboot_for_next_boot() {
    echo "1..$n"
    if [ "$failed" -gt 0 ]; then
        echo "# boot $BOOT: $failed of $n checks failed; not rebooting"
        exit 1
    fi
    echo "# boot $BOOT: $n checks, none failed$(todo_note); rebooting for boot $((BOOT + 1))"
    sync
    exit 200
}

todo_note() { [ "$todo" = 0 ] || echo " ($todo known bug(s), TODO)"; }

finish() {
    echo "1..$n"
    if [ "$failed" -gt 0 ]; then
        echo "# boot $BOOT: $failed of $n checks failed"
        exit 1
    fi
    echo "# boot $BOOT: $n checks, none failed$(todo_note)"
    exit 0
}

# Kernel truths come from this guest's own amdgpu.ko (modinfo), never from
# constants: the lane runs on Linux 6.1 and 6.12, whose modules differ.
# modinfo_amdgpu FIELD: modinfo -F FIELD amdgpu, read once a boot (/run is
# this boot's): modinfo decompresses the whole amdgpu.ko.xz, seconds under TCG.
modinfo_amdgpu() {
    local cache=/run/vmlane-modinfo-amdgpu.$1
    [ -s "$cache" ] || modinfo -F "$1" amdgpu >"$cache" 2>/dev/null
    cat "$cache"
}
# param_names: the parameters amdgpu declares, one a line.
param_names() { modinfo_amdgpu parm | cut -d: -f1; }
has_param() { param_names | grep -qx "$1"; }
# param_desc NAME: its description, e.g. "Scheduling policy (0 = HWS (Default), 1 = ...) (int)".
param_desc() { modinfo_amdgpu parm | sed -n "s/^$1://p"; }
# param_default NAME: the value the description calls the default ("0 = HWS (Default)" -> 0).
param_default() { param_desc "$1" | grep -oiE -- '-?[0-9]+ = [^,()]*\(default\)' | head -n 1 | cut -d' ' -f1; }
# param_values NAME: the values the description lists ("(0 = Off, 1 = On (Default))" -> "0 1").
param_values() { param_desc "$1" | grep -oE -- '(\(|, )-?[0-9]+ = ' | grep -oE -- '-?[0-9]+' | tr '\n' ' ' | sed 's/ $//'; }
# param_types: "name:type" a line, sorted (modinfo -F parmtype).
param_types() { modinfo_amdgpu parmtype | LC_ALL=C sort; }
# module_exists NAME: this kernel has a module NAME (modinfo finds its file).
module_exists() { modinfo -n "$1" >/dev/null 2>&1; }
# The kernel series, "6.1" or "6.12", for the few facts that are per series.
kernel_series() { uname -r | cut -d. -f1-2; }

# too_new_gpu: a GPU whose GC IP this kernel series' KFD does not drive, and a
# newer kernel that does, as globals (newer gpu_class gpu_device gpu_rev gpu_gfx
# gpu_name gpu_id); fails for a series without one. kfdguard's
# knowledge/generated.py, read from Debian's kernel sources, has GC 11.5.1
# (Strix Halo, gfx1151) from 6.9 on, not in 6.1, and no GC 9.5.0 (MI350,
# gfx950) in 6.12. An MI350X is a processing accelerator (PCI class 0x1200,
# which 6.12's amdgpu.ko binds: alias "bc12sc00"), not a display.
# shellcheck disable=SC2034 # the globals are the sourcing scenario's
too_new_gpu() {
    case $(kernel_series) in
    6.1) newer=6.12.9-amd64 gpu_class=0x030000 gpu_device=0x1586 gpu_rev=0xc1 gpu_gfx=gfx1151 gpu_name="Strix Halo" ;;
    6.12) newer=6.16.12+deb13-amd64 gpu_class=0x120000 gpu_device=0x75a0 gpu_rev=0x00 gpu_gfx=gfx950 gpu_name="MI350X" ;;
    *) return 1 ;;
    esac
    gpu_id="1002:${gpu_device#0x}"
}

# simulate_gpu CLASS DEVICE REVISION: an AMD PCI device directory 0000:0f:00.0
# beside the machine's own devices, bound over /sys/bus/pci/devices (sysfs
# itself cannot be written). Only mount namespaces made after it see it: the
# service must be restarted. The caller unmounts /sys/bus/pci/devices.
simulate_gpu() {
    local dev=/run/vmlane-gpu/0000:0f:00.0
    mkdir -p /run/vmlane-pci "$dev" && cp -P /sys/bus/pci/devices/* /run/vmlane-pci/ || return 1
    echo "$1" >"$dev/class"
    echo 0x1002 >"$dev/vendor"
    echo "$2" >"$dev/device"
    echo "$3" >"$dev/revision"
    echo 0x1002 >"$dev/subsystem_vendor"
    echo 0x0001 >"$dev/subsystem_device"
    echo 0 >"$dev/boot_vga"
    ln -sfn "$dev" /run/vmlane-pci/0000:0f:00.0 && mount --bind /run/vmlane-pci /sys/bus/pci/devices
}

# grub_layout RUNNING NEWER: what a GRUB machine has, for a guest that QEMU
# boots with -kernel: /boot with both kernels (placeholder images, real config
# lines), NEWER's modules.dep line for amdgpu, and a Debian-style grub.cfg
# (update-grub's shape) whose default boots RUNNING and whose "Advanced
# options" submenu has both. The grubenv is the caller's.
grub_layout() {
    local running=$1 newer=$2 rel
    for rel in "$running" "$newer"; do
        echo "vmlane placeholder kernel image" >"/boot/vmlinuz-$rel"
        echo "vmlane placeholder initramfs" >"/boot/initrd.img-$rel"
        printf 'CONFIG_DRM_AMDGPU=m\nCONFIG_HSA_AMD=y\n' >"/boot/config-$rel"
    done
    mkdir -p "/lib/modules/$newer/kernel/drivers/gpu/drm/amd/amdgpu" /boot/grub
    echo "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.xz: kernel/drivers/gpu/drm/drm.ko.xz" >"/lib/modules/$newer/modules.dep"
    cat >/boot/grub/grub.cfg <<EOF
# vmlane: the shape of Debian's grub.cfg (update-grub), default = the running kernel
set default="0"
if [ -s \$prefix/grubenv ]; then
  load_env
fi
if [ "\${next_entry}" ] ; then
   set default="\${next_entry}"
   set next_entry=
   save_env next_entry
   set boot_once=true
else
   set default="0"
fi
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os \$menuentry_id_option 'gnulinux-simple-kfdroot' {
	linux	/boot/vmlinuz-$running root=/dev/vda ro quiet
	initrd	/boot/initrd.img-$running
}
submenu 'Advanced options for Debian GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-kfdroot' {
	menuentry 'Debian GNU/Linux, with Linux $newer' --class debian --class gnu-linux --class gnu --class os \$menuentry_id_option 'gnulinux-$newer-advanced-kfdroot' {
		linux	/boot/vmlinuz-$newer root=/dev/vda ro quiet
		initrd	/boot/initrd.img-$newer
	}
	menuentry 'Debian GNU/Linux, with Linux $running' --class debian --class gnu-linux --class gnu --class os \$menuentry_id_option 'gnulinux-$running-advanced-kfdroot' {
		linux	/boot/vmlinuz-$running root=/dev/vda ro quiet
		initrd	/boot/initrd.img-$running
	}
}
EOF
}

# fallback_history RUNNING NEWER GPU: a history in which compute failed on
# RUNNING and worked on NEWER, with GPU ("1002:75a0 gfx950") seen on both.
fallback_history() {
    mkdir -p /var/lib/kfdguard
    cat >/var/lib/kfdguard/history.json <<EOF
{"version": 1,
 "kernels": {
  "$1": {"ok": 0, "failed": 3, "last": "failed", "last_seen": "2026-11-01T08:00:00Z", "gpus": ["$3"]},
  "$2": {"ok": 12, "failed": 0, "last": "ok", "last_seen": "2026-10-20T08:00:00Z", "gpus": ["$3"]}
 },
 "attempts": [],
 "pinned_from": null}
EOF
}

# The system bus this guest was booted with: vmlane.bus= on the kernel command
# line (vmlane.py's guest table), dbus-daemon without it.
expected_bus() {
    local arg
    for arg in $(cat /proc/cmdline); do
        case $arg in vmlane.bus=*) echo "${arg#vmlane.bus=}"; return ;; esac
    done
    echo dbus-daemon
}
# running_bus: what dbus.service runs (dbus-broker's unit runs its launcher).
running_bus() {
    local pid exe
    pid=$(systemctl show -p MainPID --value dbus.service)
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
    exe=${exe##*/}
    [ "$exe" = dbus-broker-launch ] && exe=dbus-broker
    echo "${exe:-none}"
}

# Every scenario starts with the package the runner installed on boot 1.
installed_checks() {
    local bus
    bus=$(running_bus)
    check "the system bus is $(expected_bus), as this guest was booted (dbus.service runs: $bus)" \
        test "$bus" = "$(expected_bus)"
    check "kfdguard $(dpkg-query -W -f='${Version}' kfdguard 2>/dev/null) is installed" \
        quiet dpkg-query -W kfdguard
    local en
    en=$(systemctl is-enabled kfdguard.service 2>&1)
    check "kfdguard.service is enabled by the package (got: $en)" test "$en" = enabled
    check "kfdguard.service is active" wait_until 30 systemctl -q is-active kfdguard.service
}

note "scenario ${SCENARIO:-?}, boot $BOOT, uptime $(uptime_s) s, kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME"), systemd $(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'), bus $(expected_bus)"
