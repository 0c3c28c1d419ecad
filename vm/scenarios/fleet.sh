#!/bin/bash
# Scenario "fleet" (issue 19 under issue 21's split): the fleet files on a real
# install, where the resident kfdguard.service runs as the user kfdguard.
#  1. The readers' directories as their owners make them (root, 0755: Debian's
#     prometheus-node-exporter, an NFD deployment's features.d, /run/cdi);
#     config.yaml turns on the textfile, the NFD file and kfdguard's CDI spec.
#     A restart runs kfdguard-enforce.service first, which makes DIR/.kfdguard
#     (kfdguard, 0755) and the relative link DIR/NAME -> .kfdguard/NAME; the
#     readers' directories stay root's, 0755.
#  2. The resident service writes the staged files (owner kfdguard, 0644) with
#     its status' state and readiness; the NFD file's expiry is ahead, at most
#     15 minutes. A check (Reload) rewrites them; a state change (a simulated
#     GPU appears, restart) shows in them.
#  3. A real node_exporter (Debian's binary, from an offered
#     prometheus-node-exporter .deb), as an unprivileged user, textfile
#     collector only, on loopback: it reads kfdguard's series through the link,
#     with no scrape error.
#  4. The enforce lock (issue 21): the user kfdguard cannot make or hold it;
#     a lock it holds in /run/kfdguard (where the lock was) does not stall the
#     pass. Without a record of the pass, the resident says so (enforce-not-run).
SCENARIO=fleet
. ./lib.sh

prom_dir=/var/lib/prometheus/node-exporter
nfd_dir=/etc/kubernetes/node-feature-discovery/features.d
cdi_dir=/run/cdi
prom=$prom_dir/kfdguard.prom
nfdfile=$nfd_dir/kfdguard
cdifile=$cdi_dir/kfdguard.json

installed_checks
check "kfdguard.service serves $BUS_NAME" wait_serving 60

# --- 1. the directories, the configuration, the pass that prepares them --------
for d in "$prom_dir" "$nfd_dir" "$cdi_dir"; do
    mkdir -p "$d" && chown root:root "$d" && chmod 0755 "$d"
done
write_config <<EOF
version: 1
fleet:
  textfile: $prom
  nfd: $nfdfile
  cdi: true
EOF
# The running service started before the directories existed: they are read-only in its mount
# namespace (ReadWritePaths= with "-" skips what is missing at start). A reload makes it re-read the
# configuration and write, and it must say why it cannot (whether it tried on its own before depends
# on its timer and on what ran before this scenario in the guest).
systemctl reload kfdguard.service
check "the service started before the directories says why it cannot write them" \
    wait_until 60 bash -c 'journalctl -b --no-pager -o cat -u kfdguard.service | grep -q "fleet: cannot write"'
# The resident service's ReadWritePaths= take the directories at its next start, and that start runs
# the pass first (Wants=, After=), which prepares them.
restart_service
check "kfdguard restarted with the fleet outputs on and serves $BUS_NAME" wait_serving 60
for f in "$prom" "$nfdfile" "$cdifile"; do
    name=${f##*/}
    dir=${f%/*}
    check "$f is a link to .kfdguard/$name (got: $(readlink "$f" 2>&1))" test "$(readlink "$f")" = ".kfdguard/$name"
    check "... owned by root (got: $(stat -c %U "$f" 2>&1))" test "$(stat -c %U "$f" 2>/dev/null)" = root
    check "$dir/.kfdguard is drwxr-xr-x kfdguard:kfdguard (got: $(stat -c '%A %U:%G' "$dir/.kfdguard" 2>&1))" \
        test "$(stat -c '%A %U:%G' "$dir/.kfdguard" 2>/dev/null)" = "drwxr-xr-x kfdguard:kfdguard"
    check "$dir itself is still drwxr-xr-x root:root" test "$(stat -c '%A %U:%G' "$dir")" = "drwxr-xr-x root:root"
done
check "kfdguard-enforce.service logged the links it made" contains "$(journal_of kfdguard-enforce.service)" "fleet: $prom -> .kfdguard/kfdguard.prom"
check "/var/lib/kfdguard/fleet-links lists the three (postrm removes them)" \
    test "$(cat /var/lib/kfdguard/fleet-links 2>/dev/null)" = "$(printf '%s\n' "$prom" "$nfdfile" "$cdifile")"

# --- 2. what the resident service writes -------------------------------------------
# The service writes after its check (the reload above): the staged files appear shortly after.
check "the service wrote $prom_dir/.kfdguard/kfdguard.prom" wait_until 30 test -s "$prom_dir/.kfdguard/kfdguard.prom"
check "the service wrote $nfd_dir/.kfdguard/kfdguard" wait_until 30 test -s "$nfd_dir/.kfdguard/kfdguard"
for f in "$prom_dir/.kfdguard/kfdguard.prom" "$nfd_dir/.kfdguard/kfdguard"; do
    check "$f is -rw-r--r-- kfdguard (got: $(stat -c '%A %U' "$f" 2>&1))" test "$(stat -c '%A %U' "$f" 2>/dev/null)" = "-rw-r--r-- kfdguard"
done
# Only this process: the one before the restart could not write a directory made after it started
# (read-only in its mount namespace; docs/FLEET.md), and said so.
check "the restarted service logged no failure to write a fleet file" \
    not contains "$(journalctl -b --no-pager -o cat _PID="$(main_pid)")" "fleet: cannot write"
check "... while the one before it said why it could not, and what to do (got: $(journal_of kfdguard.service | grep -m1 'fleet: cannot write'))" \
    contains "$(journal_of kfdguard.service)" "after the service started"
# What the files say against what GetStatus says, read through the links as the readers do.
agree() {
    local state ready want
    state=$(status_field State) ready=$(status_field Ready)
    [ "$ready" = true ] && want=1 || want=0
    grep -qx "kfdguard_state{state=\"$state\"} 1" "$prom" &&
        grep -qx "kfdguard_compute_ready $want" "$prom" &&
        grep -qx "feature.node.kubernetes.io/kfdguard.state=$state" "$nfdfile" &&
        grep -qx "feature.node.kubernetes.io/kfdguard.ready=$ready" "$nfdfile"
}
state1=$(status_field State)
note "state: $state1, ready: $(status_field Ready)"
check "the textfile and the NFD file say the service's state ($state1) and readiness" wait_until 30 agree
EXPIRY_PY='
import datetime, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^# \+expiry-time=(\S+)$", text, re.M)
if not m:
    sys.exit("no expiry header")
at = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
left = (at - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
print(int(left))
sys.exit(0 if 0 < left <= 15 * 60 + 5 else 1)
'
left=$(python3 -c "$EXPIRY_PY" "$nfdfile" 2>&1)
check "the NFD file's # +expiry-time= is ahead, at most 15 minutes (left: $left s)" python3 -c "$EXPIRY_PY" "$nfdfile"
# The CDI spec lists GPUs that compute: none in this guest, so none is offered and the link dangles.
if [ "$(status_field Ready)" = false ]; then
    check "no GPU computes: kfdguard's CDI spec is not offered ($cdi_dir/.kfdguard/kfdguard.json absent)" \
        test ! -e "$cdi_dir/.kfdguard/kfdguard.json"
fi
stamp() { sed -n 's/^kfdguard_last_check_timestamp_seconds //p' "$prom"; }
before=$(stamp)
reply=$(busctl --system call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Reload 2>&1)
note "Reload (root): $reply"
check "after a Reload the textfile's last-check time moves on ($before -> $(stamp))" \
    wait_until 30 bash -c '[ "$(sed -n "s/^kfdguard_last_check_timestamp_seconds //p" "$0")" != "$1" ]' "$prom" "$before"
# A state change: the simulated GPU of privsep.sh, seen by a restarted service.
check "a simulated GPU 1002:744c appears in /sys/bus/pci/devices (bind mount)" \
    simulate_gpu 0x030000 0x744c 0xc8
restart_service
check "kfdguard restarted and serves $BUS_NAME" wait_serving 60
quiesce
state2=$(status_field State)
note "state with the simulated GPU: $state2"
check "the state changed with the GPU ($state1 -> $state2)" test "$state2" != "$state1"
check "... and the files say the new state ($state2)" wait_until 30 agree
check "... and the textfile names the GPU's slot" wait_until 30 grep -q 'slot="0000:0f:00.0"' "$prom"

# --- 3. a real node_exporter reads kfdguard's series through the link ------------
ne_deb=$(ls ./offered/prometheus-node-exporter_*.deb 2>/dev/null | head -n 1)
if [ -n "$ne_deb" ]; then
    rm -rf /run/vmlane-ne && mkdir -p /run/vmlane-ne && dpkg-deb -x "$ne_deb" /run/vmlane-ne
    # As an unprivileged user (Debian's unit runs it as prometheus): the link and the staged file are
    # readable by anyone.
    setpriv --reuid=nobody --regid=nogroup --clear-groups /run/vmlane-ne/usr/bin/prometheus-node-exporter \
        --collector.disable-defaults --collector.textfile --collector.textfile.directory="$prom_dir" \
        --web.listen-address=127.0.0.1:9199 >/run/vmlane-ne.log 2>&1 &
    ne_pid=$!
    SCRAPE_PY='
import sys, time, urllib.request
for _ in range(60):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:9199/metrics", timeout=5).read().decode())
        sys.exit(0)
    except OSError:
        time.sleep(1)
sys.exit(1)
'
    scraped=$(python3 -c "$SCRAPE_PY")
    check "node_exporter $(dpkg-deb -f "$ne_deb" Version) answers on 127.0.0.1:9199" test -n "$scraped"
    check "... with kfdguard_state{state=\"$state2\"} 1 from the linked file" \
        grep -qx "kfdguard_state{state=\"$state2\"} 1" <<<"$scraped"
    check "... and node_textfile_scrape_error 0" grep -qx "node_textfile_scrape_error 0" <<<"$scraped"
    note "node_exporter's textfile series: $(grep '^node_textfile' <<<"$scraped" | tr '\n' ';')"
    # The file label is the name (newer node_exporter) or the path (older ones).
    check "... and node_textfile_mtime_seconds for kfdguard.prom" \
        grep -qE '^node_textfile_mtime_seconds\{file="([^"]*/)?kfdguard.prom"\} [0-9.e+]+$' <<<"$scraped"
    kill "$ne_pid" 2>/dev/null
    wait "$ne_pid" 2>/dev/null
    rm -rf /run/vmlane-ne /run/vmlane-ne.log
else
    note "no prometheus-node-exporter .deb offered (--offer): the scrape through the link is not tried"
fi
umount /sys/bus/pci/devices || true

# --- 4. the enforce lock and a missing record ----------------------------------
got=$(runuser -u kfdguard -- python3 -c 'import os; os.open("/var/lib/kfdguard/enforce.lock", os.O_RDWR | os.O_CREAT)' 2>&1 | tail -n 1)
check "the user kfdguard cannot open or make /var/lib/kfdguard/enforce.lock (got: $got)" contains "$got" "PermissionError"
# Where the lock was: a file the user kfdguard can make (the directory is group-writable for it).
rm -f /run/kfdguard/enforce.lock
runuser -u kfdguard -- flock /run/kfdguard/enforce.lock sleep 90 &
holder=$!
sleep 2
t0=$(date +%s)
systemctl start kfdguard-enforce.service
t1=$(date +%s)
check "with the user kfdguard holding /run/kfdguard/enforce.lock, the pass still runs (Result=$(mono kfdguard-enforce.service Result), $((t1 - t0)) s)" \
    test "$(mono kfdguard-enforce.service Result)" = success -a $((t1 - t0)) -lt 30
check "... and did not report the lock busy" not contains "$(journal_of kfdguard-enforce.service)" "enforce-busy"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
rm -f /run/kfdguard/enforce.lock
# No record: the pass masked for this boot, its record removed, the resident started again.
systemctl mask --runtime kfdguard-enforce.service >/dev/null 2>&1
rm -f /run/kfdguard/enforce.json
restart_service
check "without kfdguard-enforce.service's record the service still serves $BUS_NAME" wait_serving 60
has_finding() { finding_codes | grep -qx "$1"; }
back() { owns_name && ! has_finding enforce-not-run; }
check "... and reports enforce-not-run (got: $(finding_codes | tr '\n' ' '))" wait_until 30 has_finding enforce-not-run
note "enforce-not-run: $(finding enforce-not-run)"
systemctl unmask --runtime kfdguard-enforce.service >/dev/null 2>&1
restart_service
check "with the pass back, the service serves again and enforce-not-run is gone" wait_until 60 back
finish
