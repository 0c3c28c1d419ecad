#!/bin/bash
# vmlane: bus
# Scenario "autopkgtest": the package's own installed-package tests
# (debian/tests/control, DEP-8), run as autopkgtest would run them on a
# testbed, here in the guest as root against the installed package. vmlane.py
# copies debian/tests/ into the share as debian-tests/. Each test is one check:
# it passes when it exits 0 and, unless it has Restrictions: allow-stderr,
# writes nothing on stderr. Its output is shown as comments.
SCENARIO=autopkgtest
. ./lib.sh

tests_dir=./debian-tests
installed_checks
check "debian/tests/control is in the share" test -f "$tests_dir/control"

# "Tests: a b" + "Restrictions: x, y" per stanza -> lines "name|restrictions".
stanzas=$(awk '
    /^#/ { next }
    /^[ \t]*$/ { if (t != "") print t "|" r; t = ""; r = ""; next }
    tolower($1) == "tests:" { sub(/^[^:]*:[ \t]*/, ""); t = $0; next }
    tolower($1) == "restrictions:" { sub(/^[^:]*:[ \t]*/, ""); r = $0; next }
    END { if (t != "") print t "|" r }
' "$tests_dir/control")
count=0
while IFS='|' read -r names restrictions; do
    for name in ${names//,/ }; do
        count=$((count + 1))
        script=$tests_dir/$name
        if [ ! -x "$script" ]; then
            not_ok "debian/tests/$name is missing or not executable"
            continue
        fi
        work=$(mktemp -d)
        t0=$(date +%s%N)
        AUTOPKGTEST_TMP=$work "$script" >"$work.out" 2>"$work.err" </dev/null
        rc=$?
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        sed 's/^/#   /' "$work.out"
        if [ -s "$work.err" ]; then sed 's/^/#   stderr: /' "$work.err"; fi
        if [ "$rc" != 0 ]; then
            not_ok "debian/tests/$name exits $rc ($ms ms)"
        elif [ -s "$work.err" ] && ! contains "$restrictions" allow-stderr; then
            not_ok "debian/tests/$name wrote on stderr without Restrictions: allow-stderr"
        else
            ok "debian/tests/$name passes ($ms ms; restrictions: ${restrictions:-none})"
        fi
        rm -rf "$work" "$work.out" "$work.err"
    done
done <<<"$stanzas"
check "debian/tests/control names at least one test (found $count)" test "$count" -gt 0
finish
