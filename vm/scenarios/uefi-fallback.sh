#!/bin/bash
# Scenario "uefi-fallback": kfdguard in systemd's Automatic Boot Assessment on a
# real UEFI machine (vm/uefi.py: OVMF, systemd-boot 252 installed by bootctl,
# bookworm's 6.1 and bookworm-backports' 6.12 installed by kernel-install with
# boot counting, 2 tries). Five boots, each a fresh QEMU on the same disk and
# the same EFI variable store:
#  1. 6.1 (loader.conf's default on this first boot; the boot blesses it).
#     kfdguard is installed. A simulated Navi 21 GPU (a PCI device directory
#     bound over /sys/bus/pci/devices by a unit at every boot, before kfdguard);
#     6.12 made bad for compute: its amdgpu.ko removed (depmod). fallback.policy
#     assess, kfdguard-boot-check.service enabled, loader.conf's default removed:
#     from now on systemd-boot picks by itself (the newest entry with tries left).
#  2. 6.12 (+2 -> +1-1): kfdguard boot-check fails, boot-complete.target is not
#     reached, the entry is not blessed. ApplyFallback over the bus (the resident
#     service starts kfdguard-fallback@apply.service) sets LoaderEntryOneShot
#     through bootctl under that unit's sandbox (efivarfs marks it immutable),
#     ClearFallback removes it again (CAP_LINUX_IMMUTABLE). Then 6.1's entry is
#     made counted again (+3, as kernel-install names a reinstalled kernel) and
#     ApplyFallback sets a one-shot to it: systemd-boot 252 knows it only by
#     its file name, counter included.
#  3. 6.1, chosen by that one-shot (without it, 6.12 with a try left would
#     start): LoaderEntrySelected is the counted file name; the boot is good and
#     blessed; the history settles the attempt under the counter-less id.
#  4. 6.12 (+1-1 -> +0-2): fails again, out of tries; systemd-boot's next
#     default is 6.1 (kfdguard and bootctl agree).
#  5. 6.1, chosen by systemd-boot alone from its counters (no one-shot, no
#     default variable); kfdguard reports it. The runner allows five boots.
# Throughout: the 6.12 entry's id in kfdguard's view stays the same while its
# file name changes at every boot.
SCENARIO=uefi-fallback
. ./lib.sh

LOADER_GUID=4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
EFIVARS=/sys/firmware/efi/efivars
ESP=/boot/efi
STATE=/var/lib/vmlane-uefi
mkdir -p "$STATE"
# An EFI variable of systemd-boot's as text (4 bytes of attributes, then UTF-16LE; lists NUL-separated).
efivar() {
    python3 - "$EFIVARS/$1-$LOADER_GUID" <<'EOF'
import sys
try:
    raw = open(sys.argv[1], "rb").read()[4:]
except OSError:
    sys.exit(1)
print("\n".join(s for s in raw.decode("utf-16-le").split("\0") if s))
EOF
}
entry_file() { (cd "$ESP/loader/entries" && ls -1 | grep -F -- "-$1" | grep '\.conf$' | head -n 1); }
old=$(ls /lib/modules | grep '^6\.1\.' | head -n 1)
new=$(ls /lib/modules | grep '^6\.12\.' | head -n 1)
running=$(uname -r)
note "kernels: old $old, new $new; running $running; entries: $(ls "$ESP/loader/entries" | tr '\n' ' ')"
note "LoaderEntrySelected: $(efivar LoaderEntrySelected | tr '\n' ' ')"
# kfdguard's view of the boot loader (kfdguard fallback --json), one value.
fallback_json() { kfdguard fallback --json 2>/dev/null; }
kfd_entry_of() { fallback_json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(next((k["entry"] or "") for k in d["kernels"] if k["release"] == sys.argv[1]))' "$1"; }
history_of() { python3 -c '
import json, sys
k = json.load(open("/var/lib/kfdguard/history.json"))["kernels"].get(sys.argv[1], {})
print("ok={} failed={} last={}".format(k.get("ok", 0), k.get("failed", 0), k.get("last", "")))' "$1"; }
# bootctl list's id of the entry of a version (252 has no --json for list: its text, one block an entry).
bootctl_id_of() { bootctl list --no-pager 2>/dev/null | python3 -c '
import sys
for block in sys.stdin.read().split("\n\n"):
    fields = dict(line.strip().split(": ", 1) for line in block.splitlines() if ": " in line)
    if fields.get("version") == sys.argv[1]:
        print(fields.get("id", ""))
        break' "$1"; }
unit_result() { systemctl show -p Result --value "$1"; }
unit_active() { systemctl show -p ActiveState --value "$1"; }

boot1() {
    installed_checks
    check "booted through UEFI (/sys/firmware/efi exists)" test -d /sys/firmware/efi
    local product
    product=$(efivar LoaderInfo)
    check "the boot loader is systemd-boot 252 (LoaderInfo: $product)" contains "$product" "systemd-boot 252"
    check "boot 1 runs bookworm's $old (loader.conf's default)" test "$running" = "$old"
    # systemd-boot 252 names an entry by its file name, counter included (boot.c: entry->id = the file name).
    local selected
    selected=$(efivar LoaderEntrySelected)
    check "systemd-boot booted 6.1's counted entry, kernel-install's +$(cat /etc/kernel/tries) (LoaderEntrySelected: $selected)" \
        test "$selected" = "$(cat /etc/machine-id)-$old+$(cat /etc/kernel/tries).conf"
    check "systemd-bless-boot marked this boot good: $old's entry lost its counter ($(entry_file "$old"))" \
        wait_until 30 bash -c 'test "$(cd "$0/loader/entries" && ls | grep -F -- "-$1")" = "$(cat /etc/machine-id)-$1.conf"' "$ESP" "$old"
    check "$new's entry still has its 2 tries ($(entry_file "$new"))" test "$(entry_file "$new")" = "$(cat /etc/machine-id)-$new+2.conf"

    # A simulated Navi 21 (RX 6800 XT) at every boot, before kfdguard and its boot check.
    cat >/usr/local/sbin/vmlane-fake-gpu <<'EOF'
#!/bin/sh
set -e
mkdir -p /run/vmlane-pci /run/vmlane-gpu/0000:0f:00.0
cp -P /sys/bus/pci/devices/* /run/vmlane-pci/
cd /run/vmlane-gpu/0000:0f:00.0
echo 0x030000 >class; echo 0x1002 >vendor; echo 0x73bf >device; echo 0xc1 >revision
echo 0x1002 >subsystem_vendor; echo 0x0e3a >subsystem_device; echo 0 >boot_vga
ln -s /run/vmlane-gpu/0000:0f:00.0 /run/vmlane-pci/0000:0f:00.0
mount --bind /run/vmlane-pci /sys/bus/pci/devices
EOF
    chmod 755 /usr/local/sbin/vmlane-fake-gpu
    cat >/etc/systemd/system/vmlane-fake-gpu.service <<'EOF'
[Unit]
Description=vmlane: a simulated AMD GPU in /sys/bus/pci/devices
DefaultDependencies=no
After=systemd-tmpfiles-setup.service
Before=sysinit.target kfdguard.service kfdguard-enforce.service kfdguard-boot-check.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vmlane-fake-gpu

[Install]
WantedBy=sysinit.target
EOF
    check "the simulated-GPU unit is enabled" quiet systemctl enable vmlane-fake-gpu.service
    load_amdgpu_at_boot
    # The newer kernel made bad for compute: no amdgpu module (and its initramfs has none).
    local ko
    ko=$(find "/lib/modules/$new" -name 'amdgpu.ko*' | head -n 1)
    check "$new's amdgpu module ($ko) removed, depmod run" bash -c 'rm -f "$0" && depmod -a "$1"' "$ko" "$new"
    # assess: always, not the default if-fallback: kfdguard-boot-check.service's own check found no
    # other kernel to fall back on at boot 2 (measured; the service's ApplyFallback later in the same
    # boot found 6.1), and would have passed the boot. See the TODO check of boot 2.
    write_config <<'EOF'
version: 1
fallback:
  policy: assess
  assess: always
EOF
    check "kfdguard-boot-check.service enabled (RequiredBy=boot-complete.target)" \
        quiet systemctl enable kfdguard-boot-check.service
    check "boot-complete.target requires it now" \
        bash -c 'systemctl show -p RequiredBy --value kfdguard-boot-check.service | grep -q boot-complete.target'
    sed -i '/^default /d' "$ESP/loader/loader.conf"
    check "loader.conf has no default any more: systemd-boot chooses" bash -c '! grep -q "^default" "$0"' "$ESP/loader/loader.conf"
    sync
    reboot_for_next_boot
}

# Boots 2 and 3: 6.12 with tries left, bad for compute.
bad_boot() {
    local left=$1 done=$2 failures=$3 selected=$4 file id bid
    check "boot $BOOT runs $new, the newest entry with tries left" test "$running" = "$new"
    file=$(entry_file "$new")
    check "systemd-boot counted the try: the entry is now $file" test "$file" = "$(cat /etc/machine-id)-$new+$left-$done.conf"
    check "kfdguard-boot-check.service failed" wait_until 90 test "$(unit_result kfdguard-boot-check.service)" = exit-code
    note "kfdguard-boot-check: $(journal_of kfdguard-boot-check.service | grep -F 'boot-check' | tail -n 2 | tr '\n' ' ')"
    check "boot-complete.target was not reached (state: $(unit_active boot-complete.target))" \
        test "$(unit_active boot-complete.target)" != active
    check "systemd-bless-boot did not bless the entry (still $file)" test "$(entry_file "$new")" = "$file"
    local bc
    bc=$(kfdguard boot-check --json 2>/dev/null)
    note "kfdguard boot-check --json (run by the scenario, outside the unit's sandbox): $(echo "$bc" | tr -d '\n')"
    check "kfdguard boot-check: bad, and the entry is counted" \
        bash -c 'python3 -c "
import json, sys
d = json.loads(sys.argv[1])
sys.exit(0 if (d[\"good\"], d[\"counted\"]) == (False, True) else 1)" "$0"' "$bc"
    local unit_says
    unit_says=$(journal_of kfdguard-boot-check.service | grep -F 'kfdguard boot-check:' | tail -n 1)
    if [ "$BOOT" = 2 ]; then
        check "kfdguard-boot-check.service names $old as the kernel to fall back on ($unit_says)" \
            contains "$unit_says" "should come to $old"
    else
        # The one-shot to 6.1 at boot 3 did not bring compute up there either (the GPU is simulated):
        # kfdguard does not send the boot loader back to it, and fails the boot all the same (assess: always).
        check "kfdguard-boot-check.service names no kernel now, the fallback to $old having failed ($unit_says)" \
            bash -c '[[ $0 == *"cannot run compute"* && $0 != *"should come to"* ]]' "$unit_says"
    fi
    id=$(kfd_entry_of "$new")
    bid=$(bootctl_id_of "$new")
    note "the $new entry: file $file, kfdguard's id $id, bootctl's id $bid"
    check "kfdguard's id of the counted entry has no counter and is bootctl's ($id)" \
        test -n "$id" -a "$id" = "$bid" -a "$id" = "$(cat /etc/machine-id)-$new.conf"
    echo "$id" >"$STATE/id-boot$BOOT"
    if [ "$BOOT" != 2 ]; then
        check "... the same id as at boot 2, though the file was renamed" test "$id" = "$(cat "$STATE/id-boot2")"
    fi
    # What systemd-boot 252 itself calls the entry: its LoaderEntries carry the file names, counter included.
    local loader
    loader=$(efivar LoaderEntries | grep -F -- "-$new" | head -n 1)
    note "systemd-boot's own id of it (LoaderEntries): $loader; LoaderEntrySelected: $(efivar LoaderEntrySelected)"
    # It names the entry by the file it read, before it counted this try (boot.c renames it after).
    check "systemd-boot 252's own id of the entry is the counted file name it booted, $selected (LoaderEntrySelected)" \
        test "$(efivar LoaderEntrySelected)" = "$(cat /etc/machine-id)-$new$selected.conf"
    local h
    h=$(history_of "$new")
    check "kfdguard's history has one record for $new, failed on $failures boot(s) ($h)" \
        test "$h" = "ok=0 failed=$failures last=failed"
}

oneshot_via_bus() {
    wait_serving 60 || not_ok "kfdguard serves $BUS_NAME"
    local out var
    out=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ApplyFallback 2>&1)
    check "ApplyFallback over the bus (the service's sandbox): $out" contains "$out" "$old"
    var="$EFIVARS/LoaderEntryOneShot-$LOADER_GUID"
    check "LoaderEntryOneShot is $old's entry ($(efivar LoaderEntryOneShot))" \
        test "$(efivar LoaderEntryOneShot)" = "$(cat /etc/machine-id)-$old.conf"
    check "efivarfs made the variable immutable (lsattr: $(lsattr "$var" 2>&1 | cut -d' ' -f1))" \
        bash -c 'lsattr "$0" | cut -d" " -f1 | grep -q i' "$var"
    local st
    st=$(bootctl status --no-pager 2>/dev/null)
    note "bootctl status: $(grep -iE 'one-?shot|Current Entry|Default Entry' <<<"$st" | tr -s ' ' | tr '\n' ';')"
    out=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ClearFallback 2>&1)
    check "ClearFallback over the bus: $out" test ! -e "$var"
    note "kfdguard: $(journal_of kfdguard.service | grep -F 'fallback' | tail -n 2 | tr '\n' ' ')"
    note "kfdguard-fallback@: $(journal_of 'kfdguard-fallback@*' | tail -n 4 | tr '\n' ' ')"
    # A finished oneshot unit may be unloaded (its Result then says nothing): its journal tells.
    local applied cleared
    applied=$(journal_of kfdguard-fallback@apply.service | grep -F 'fallback apply:' | tail -n 1)
    cleared=$(journal_of kfdguard-fallback@clear.service | grep -F 'fallback clear:' | tail -n 1)
    check "kfdguard-fallback@apply.service (its sandbox) arranged it: $applied" contains "$applied" "will boot"
    check "kfdguard-fallback@clear.service (CAP_LINUX_IMMUTABLE) undid it: $cleared" contains "$cleared" "back to its own default"

    # A one-shot to a counted entry: 6.1's entry counted again, as kernel-install names a
    # reinstalled kernel's entry with /etc/kernel/tries (3 here, so that it is told from 6.12's).
    local plain counted
    plain="$(cat /etc/machine-id)-$old.conf"
    counted="$(cat /etc/machine-id)-$old+3.conf"
    mv "$ESP/loader/entries/$plain" "$ESP/loader/entries/$counted"
    check "$old's entry is counted again ($(entry_file "$old")); bootctl still calls it $plain" \
        test "$(bootctl_id_of "$old")" = "$plain"
    local json
    json=$(kfdguard fallback --json 2>/dev/null)
    note "kfdguard fallback --json: $(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["entry"], d["loader_entry"], d["bootloader"], d["command"])' <<<"$json")"
    check "kfdguard's recommendation: entry $plain, given to bootctl as $counted" \
        python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if (d["entry"], d["loader_entry"]) == (sys.argv[2], sys.argv[3]) else 1)' \
        "$json" "$plain" "$counted"
    out=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" ApplyFallback 2>&1)
    check "ApplyFallback over the bus to the counted entry says why: $out" \
        contains "$out" "systemd-boot 252 names a counted entry by its file name"
    check "LoaderEntryOneShot is the counted file name ($(efivar LoaderEntryOneShot))" \
        test "$(efivar LoaderEntryOneShot)" = "$counted"
    echo "$counted" >"$STATE/oneshot"
}

# Boot 3: the one-shot to 6.1's counted entry.
oneshot_boot() {
    local counted plain
    counted=$(cat "$STATE/oneshot")
    plain="$(cat /etc/machine-id)-$old.conf"
    check "boot 3 runs $old: systemd-boot took the one-shot (6.12 still had a try left)" test "$running" = "$old"
    check "LoaderEntrySelected is the counted file name the one-shot gave ($(efivar LoaderEntrySelected))" \
        test "$(efivar LoaderEntrySelected)" = "$counted"
    check "the one-shot was used up (LoaderEntryOneShot unset)" test ! -e "$EFIVARS/LoaderEntryOneShot-$LOADER_GUID"
    check "kfdguard-boot-check.service succeeded on $old" \
        wait_until 90 test "$(unit_result kfdguard-boot-check.service)" = success
    check "systemd-bless-boot blessed it: $old's entry lost its counter ($(entry_file "$old"))" \
        wait_until 60 bash -c 'test "$(cd "$0/loader/entries" && ls | grep -F -- "-$1")" = "$2"' "$ESP" "$old" "$plain"
    local file id
    file=$(entry_file "$new")
    check "$new's entry was not booted: still $file" test "$file" = "$(cat /etc/machine-id)-$new+1-1.conf"
    id=$(kfd_entry_of "$new")
    check "kfdguard's id of $new's entry is still $(cat "$STATE/id-boot2")" test "$id" = "$(cat "$STATE/id-boot2")"
    local attempt
    attempt=$(python3 -c '
import json
a = json.load(open("/var/lib/kfdguard/history.json"))["attempts"][-1]
print(a["entry"], a["result"])')
    # Compute does not come up on 6.1 either: the GPU is a simulated sysfs device amdgpu does not drive.
    # The boot check passes (not the kernel's fault), and the attempt is settled with the boot's result.
    check "the history settled the one-shot under the counter-less id, as failed: compute did not come up on $old either ($attempt)" \
        test "$attempt" = "$plain failed"
    check "history: $old failed once ($(history_of "$old"))" test "$(history_of "$old")" = "ok=0 failed=1 last=failed"
    local h
    h=$(history_of "$new")
    check "history: $new failed once, one record ($h)" test "$h" = "ok=0 failed=1 last=failed"
    note "history: $(history_of "$old") for $old"
}

# Boot 4: 6.12 again, its last try.
boot4() {
    bad_boot 0 2 2 +1-1
    local bl
    bl=$(bootctl list --no-pager 2>/dev/null)
    check "bootctl list shows $new with 0 tries left" bash -c 'grep -q "tries: 0 left" <<<"$0"' "$bl"
    local json
    json=$(kfdguard fallback --json 2>/dev/null)
    note "kfdguard fallback --json: $(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["recommended"], d["reason"], d["bootloader"])' <<<"$json")"
    check "kfdguard: the next boot by systemd-boot's own choice starts $old (6.12 is out of tries)" \
        python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["bootloader"]["default"] == sys.argv[2] else 1)' \
        "$json" "$old"
    check "bootctl agrees: its default entry is $old's" \
        bash -c 'grep -A3 "(default)" <<<"$0" | grep -qF "$1"' "$bl" "$old"
    check "no one-shot is pending (LoaderEntryOneShot unset)" test ! -e "$EFIVARS/LoaderEntryOneShot-$LOADER_GUID"
    check "kfdguard recommends no kernel: the fallback to $old failed after it was arranged" \
        python3 -c '
import json, sys
d = json.loads(sys.argv[1])
old = next(k for k in d["kernels"] if k["release"] == sys.argv[2])
sys.exit(0 if d["recommended"] is None and old["failed_after_fallback"] else 1)' "$json" "$old"
}

# Boot 5: no one-shot, no default variable: systemd-boot's own choice, 6.12 being out of tries.
fallen_back_boot() {
    local plain json
    plain="$(cat /etc/machine-id)-$old.conf"
    check "boot 5 runs $old: systemd-boot fell back by its counters alone ($new out of tries, no one-shot set)" \
        test "$running" = "$old"
    check "LoaderEntrySelected is $old's blessed entry ($(efivar LoaderEntrySelected))" \
        test "$(efivar LoaderEntrySelected)" = "$plain"
    check "$new's entry stays out of tries: $(entry_file "$new")" \
        test "$(entry_file "$new")" = "$(cat /etc/machine-id)-$new+0-2.conf"
    check "kfdguard-boot-check.service succeeded on $old (compute is down, but not for $old's reason)" \
        wait_until 90 test "$(unit_result kfdguard-boot-check.service)" = success
    json=$(fallback_json)
    note "kfdguard fallback --json: $(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["running"], d["recommended"], d["reason"])' <<<"$json")"
    check "kfdguard reports the boot loader's fallback: it runs $old now" \
        python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])["running"] == sys.argv[2] else 1)' "$json" "$old"
    check "history: $new failed on both of its boots ($(history_of "$new"))" \
        test "$(history_of "$new")" = "ok=0 failed=2 last=failed"
    check "kfdguard's id of $new's entry is still $(cat "$STATE/id-boot2") at +0-2" \
        test "$(kfd_entry_of "$new")" = "$(cat "$STATE/id-boot2")"
}

case "$BOOT" in
    1) boot1 ;;
    2)
        bad_boot 1 1 1 +2
        oneshot_via_bus
        reboot_for_next_boot
        ;;
    3)
        oneshot_boot
        reboot_for_next_boot
        ;;
    4)
        boot4
        reboot_for_next_boot
        ;;
    *)
        fallen_back_boot
        finish
        ;;
esac
