#!/bin/bash
# vmlane self-test: .deb install + reboot + unit ordering.
# Run with --deb <vmlane-dummy_1.0_all.deb> (built by make-dummy-deb.sh).
# Boot 1: the runner has dpkg -i'd the package; check it is installed and
# enabled, then exit 200 = "reboot and run me again".  Boot 2: check that the
# package's unit (Before=display-manager.service) ran before the stand-in
# display manager started.
set -u
n=0
failed=0
check() {
    local desc=$1
    shift
    n=$((n + 1))
    if "$@"; then echo "ok $n - $desc"; else failed=$((failed + 1)); echo "not ok $n - $desc"; fi
}
mono() { systemctl show -p "$2" --value "$1"; }
quiet() { "$@" >/dev/null 2>&1; }

echo "# boot ${VMLANE_BOOT:-?}"
case "${VMLANE_BOOT:-1}" in
1)
    check "vmlane-dummy is installed" quiet dpkg -s vmlane-dummy
    en=$(systemctl is-enabled vmlane-dummy.service 2>&1)
    check "vmlane-dummy.service is enabled (got: $en)" test "$en" = enabled
    [ "$failed" = 0 ] || exit 1
    echo "# rebooting for boot 2"
    exit 200
    ;;
*)
    dummy_start=$(mono vmlane-dummy.service InactiveExitTimestampMonotonic)
    dummy_done=$(mono vmlane-dummy.service ActiveEnterTimestampMonotonic)
    dm_start=$(mono display-manager.service InactiveExitTimestampMonotonic)
    echo "# monotonic us: dummy start $dummy_start, dummy active $dummy_done, display-manager start $dm_start"
    check "vmlane-dummy.service ran this boot (result $(mono vmlane-dummy.service Result))" \
        test "${dummy_done:-0}" -gt 0
    check "vmlane-dummy finished before display-manager.service started" \
        test "${dummy_done:-0}" -gt 0 -a "${dummy_done:-0}" -le "${dm_start:-0}"
    check "display-manager.service is active" systemctl -q is-active display-manager.service
    echo "1..$n"
    [ "$failed" = 0 ]
    ;;
esac
