#!/bin/bash
# Scenario "consumer": a program that needs GPU compute, ordered after
# kfdguard-compute.target the way the docs say (Requires= + After=), under
# real systemd, dbus-daemon and kfdguard-wait.service (kfdguard wait on the
# real system bus).
#  1. No AMD GPU (the VM's truth): the target is never reached; the consumer's
#     start fails with systemd's "dependency" result after compute.wait_timeout
#     (set to 15 s here; 90 s by default), and kfdguard-wait's journal says why.
#  2. A simulated machine in the guest: kfdguard.service serves a rendered
#     simulated machine (--root, its /dev/kfd 0600 and --no-enforce: state
#     unavailable). The consumer's start waits; then the node is put right and
#     udev's change event announced: kfdguard reaches ready and the consumer
#     starts within seconds of it, long before the wait's 15 s timeout.
SCENARIO=consumer
. ./lib.sh

CONSUMER=vmlane-consumer.service
# Where the resident service may write in its sandbox (ReadWritePaths=/run/kfdguard): the simulated
# machine's event FIFOs are made there by the service itself, which runs as user kfdguard.
SIM=/run/kfdguard/vmlane-sim
DROPIN=/run/systemd/system/kfdguard.service.d/vmlane-sim.conf
WAIT_TIMEOUT=15

installed_checks
check "kfdguard serves $BUS_NAME" wait_serving 60
cat >/etc/systemd/system/$CONSUMER <<'EOF'
# A stand-in for ollama.service: what docs/READY.md tells such a unit to say.
[Unit]
Description=vmlane: a program that needs AMD GPU compute
Requires=kfdguard-compute.target
After=kfdguard-compute.target

[Service]
Type=simple
ExecStart=/bin/sh -c 'cut -d" " -f1 /proc/uptime >/run/vmlane-consumer.started; exec sleep infinity'
EOF
systemctl daemon-reload
write_config <<EOF
version: 1
compute:
  wait_timeout: $WAIT_TIMEOUT
EOF
check "reload: compute.wait_timeout $WAIT_TIMEOUT" reload_service
state_is() { [ "$(status_field State)" = "$1" ]; }
# kfdguard wait is on the bus: its process (the wait unit's MainPID) owns a connection. Under TCG the
# interpreter and its imports take ~10 s; timing "ready -> consumer" before that would time them.
wait_on_bus() {
    local pid
    pid=$(systemctl show -p MainPID --value kfdguard-wait.service)
    [ "${pid:-0}" != 0 ] && busctl --system list --no-legend 2>/dev/null | awk -v p="$pid" '$2 == p {f=1} END {exit !f}'
}
# Seconds as the journal's monotonic clock gives them, for "[  12.345678] host ident: text" lines.
mono_of() { sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p' | head -n 1; }

# --- 1. no AMD GPU: never reached, the start fails clearly within the timeout ------------------
state=$(status_field State)
check "the state is no-device (got: $state)" test "$state" = no-device
start=$(uptime_s)
out=$(systemctl start $CONSUMER 2>&1)
rc=$?
end=$(uptime_s)
took=$(python3 -c "print(round($end - $start, 1))")
note "systemctl start $CONSUMER: rc $rc after $took s: $out"
check "the consumer's start failed (rc $rc)" test "$rc" != 0
check "... with systemd's dependency message" contains "$out" "A dependency job for $CONSUMER failed"
check "... after the wait's timeout, not before and not hung ($took s; timeout $WAIT_TIMEOUT s)" \
    python3 -c "import sys; sys.exit(not $WAIT_TIMEOUT - 0.5 <= $took <= $WAIT_TIMEOUT + 20)"
check "the consumer never ran" test ! -e /run/vmlane-consumer.started
check "kfdguard-compute.target was not reached" bash -c '! systemctl -q is-active kfdguard-compute.target'
result=$(systemctl show -p Result --value kfdguard-wait.service)
check "kfdguard-wait.service failed with exit-code (got: $result)" test "$result" = exit-code
why=$(journal_of kfdguard-wait.service | grep -F "compute not ready")
check "kfdguard-wait's journal says why: ${why:-nothing}" contains "$why" "no-device"

# --- 2. a simulated machine: the consumer waits, then starts within seconds of ready ----------
rm -rf "$SIM"
machine=$(python3 -I -c '
import sys
from pathlib import Path
from kfdguard.simulate import bundled
from kfdguard.simulate.render import render
print(render(bundled.load("kfd-perms-0600"), Path(sys.argv[1])).path)' "$SIM")
check "a simulated machine (kfd-perms-0600) is rendered at ${machine:-nowhere}" test -d "$machine/.kfdguard-sim"
if id kfdguard >/dev/null 2>&1; then chown -R kfdguard:kfdguard "$SIM"; fi
mkdir -p "$(dirname $DROPIN)"
cat >$DROPIN <<EOF
[Service]
ExecStart=
ExecStart=/usr/bin/python3 -I -m kfdguard.service --root $machine --no-enforce
EOF
systemctl daemon-reload
systemctl reset-failed kfdguard-wait.service $CONSUMER 2>/dev/null
write_config <<<"version: 1"
restart_service
check "kfdguard serves the simulated machine" wait_serving 60
check "its state is unavailable (/dev/kfd 0600, not repaired)" wait_until 30 state_is unavailable
systemctl start --no-block $CONSUMER
sleep 5
check "the consumer does not start while compute is unavailable" test ! -e /run/vmlane-consumer.started
jobs=$(systemctl list-jobs --no-legend | tr '\n' ';')
check "its start job waits behind kfdguard-wait.service (jobs: $jobs)" contains "$jobs" "$CONSUMER"
check "kfdguard-wait.service is activating (kfdguard wait blocks)" \
    test "$(systemctl show -p ActiveState --value kfdguard-wait.service)" = activating
check "kfdguard wait is connected to the system bus (not the marker fallback)" wait_until 60 wait_on_bus
sleep 3 # its AddMatch and first GetStatus, under TCG
python3 -I -c '
import sys
from pathlib import Path
from kfdguard.host.root import Root
from kfdguard.simulate import state
from kfdguard.simulate.system import SimulatedSystem
root = Root(Path(sys.argv[1]))
gid = next(int(l.split(":")[2]) for l in open(root.path / "etc/group") if l.startswith("render:"))
SimulatedSystem(root).set_node_owner(root.kfd, 0, gid, 0o660)
sys.exit(0 if state.send_uevents(root, ["change kfd kfd"]) else 1)' "$machine"
rc=$?
check "the node is put right and udev's change event sent (rc $rc)" test "$rc" = 0
check "kfdguard reaches ready" wait_until 30 state_is ready
check "the consumer started" wait_until 10 test -e /run/vmlane-consumer.started
ready_at=$(journalctl -b -u kfdguard.service -o short-monotonic --no-pager | grep -F -- "-> ready" | tail -n 1 | mono_of)
answered=$(journalctl -b -u kfdguard-wait.service -o short-monotonic --no-pager | grep -F "compute is ready" | tail -n 1 | mono_of)
# When systemd started the consumer's process (its own first line comes later: sh and cut under TCG).
usec=$(systemctl show -p ExecMainStartTimestampMonotonic --value $CONSUMER)
started=$(python3 -c "print(${usec:-0} / 1e6)")
delay=$(python3 -c "print(round(${started:-0} - ${ready_at:-0}, 3))")
note "kfdguard ready at ${ready_at:-?} s, kfdguard wait answered at ${answered:-?} s, systemd started the consumer at $started s: $delay s after ready"
# What these bounds tell apart: a wait woken by the service's signal from one that ran into its timeout
# (WAIT_TIMEOUT, 15 s here): a third of it. They are not speed goals (make bench has those). kfdguard's
# part took 0.2-0.6 s under TCG on a quiet host, and 1.14 s on a 2-CPU host at load 5 (2026-12-07),
# which a 1-second bound failed; systemd's steps after it (kfdguard-wait exits, the target is reached,
# the consumer is forked) took 0.43-0.65 s of a 1.1 s delay at load 7.
check "kfdguard wait answered within 5 s of ready, long before its 15 s timeout (${answered:-?} s)" \
    python3 -c "import sys; sys.exit(not ('$ready_at' and '$answered' and 0 <= ${answered:-0} - ${ready_at:-0} <= 5.0))"
check "systemd started the consumer within 5 s of kfdguard reaching ready ($delay s)" \
    python3 -c "import sys; sys.exit(not ('$ready_at' and '$started' and 0 <= $delay <= 5.0))"
check "kfdguard-compute.target is active" systemctl -q is-active kfdguard-compute.target
check "$CONSUMER is active" systemctl -q is-active $CONSUMER

# Back to the package's own service for whatever runs next in this guest.
systemctl stop $CONSUMER kfdguard-compute.target kfdguard-wait.service
rm -f $DROPIN /etc/systemd/system/$CONSUMER /run/vmlane-consumer.started
systemctl daemon-reload
restart_service
rm -rf "$SIM"
finish
