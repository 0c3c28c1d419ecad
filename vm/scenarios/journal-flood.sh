#!/bin/bash
# Scenario "journal-flood": what an unprivileged user writes to the journal cannot push the resident service
# past its unit's memory limit (issue 35 item 2). Before the fix the journal reader kept each message whole:
# 60 entries of 2 MB logged by nobody took it to 141 MB, and one Diagnose call from nobody got kfdguard.service
# SIGKILLed inside MemoryMax=128M (with StartLimitBurst=3, four calls kept it down). Now journald is asked only
# for the kernel transport and root inside udevd's and modules-load's units, and every read has a budget.
#  1. As nobody, through journald's native socket (python3-systemd, a dependency of the package): 60 entries of
#     2 MB, named systemd-udevd and kernel as an attacker would.
#  2. As nobody: Diagnose over the system bus (it needs no authorization), twice.
#  3. kfdguard.service is still active, was not restarted (NRestarts, MainPID), and its peak memory stayed under
#     MemoryMax (MemoryPeak where systemd shows it, else MemoryCurrent).
SCENARIO=journal-flood
. ./lib.sh

installed_checks
restart_service
check "kfdguard serves $BUS_NAME" wait_serving 60
pid=$(main_pid)
restarts=$(mono kfdguard.service NRestarts)
limit=$(mono kfdguard.service MemoryMax)
note "MainPID $pid, NRestarts $restarts, MemoryMax $limit"

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
flood='
from systemd import journal
big = "amdgpu 0000:0f:00.0: amdgpu: ring gfx_0.0.0 timeout " + "x" * 2_000_000
for i in range(60):
    journal.send(big, SYSLOG_IDENTIFIER="systemd-udevd" if i % 2 else "kernel")
'
check "nobody logs 60 entries of 2 MB through the native socket" as_nobody python3 -c "$flood"
journalctl --sync 2>/dev/null || sleep 1
stored=$(journalctl -b --no-pager -o cat _UID=65534 SYSLOG_IDENTIFIER=systemd-udevd | wc -c)
check "the journal holds them ($stored bytes of nobody's systemd-udevd entries)" test "$stored" -gt 10000000

diagnose() { as_nobody busctl --system --timeout=120 call "$BUS_NAME" "$BUS_PATH" "$BUS_NAME" Diagnose; }
check "nobody's Diagnose is answered" quiet diagnose
check "... and a second one too" quiet diagnose
check "kfdguard.service is still active" test "$(systemctl is-active kfdguard.service)" = active
check "it was not restarted (MainPID $pid)" test "$(main_pid)" = "$pid"
check "NRestarts is still $restarts" test "$(mono kfdguard.service NRestarts)" = "$restarts"
peak=$(mono kfdguard.service MemoryPeak)
case "$peak" in ''|'[not set]'|infinity) peak=$(mono kfdguard.service MemoryCurrent) ;; esac
note "memory: $peak bytes (limit $limit)"
check "its memory stayed under MemoryMax ($peak < $limit)" test "$peak" -lt "$limit"
check "the service journal has no OOM kill" not contains "$(journal_of kfdguard.service)" "oom-kill"

finish
