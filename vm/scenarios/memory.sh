#!/bin/bash
# Scenario "memory" (issue 38): memory.target's options reach a real kernel's TTM under real modprobe.
# The guest has no APU, so kfdguard plans no memory options for it; what a simulated machine cannot show
# is shown here with the real kernel and kmod:
#  1. The options kfdguard computes for this kernel and this RAM (kfdguard/assess/memory.py
#     memory_options, the installed package's; a target of 75%, above TTM's default of half the RAM),
#     written as plan.py writes its line into /etc/modprobe.d, set ttm's pages_limit and page_pool_size
#     when real modprobe loads ttm.
#  2. kfdguard's probe (probe_memory) reads back the limit in force: the input of its verification.
#  3. Options written while ttm is loaded change nothing until it is loaded again (what a stale
#     initramfs does): the probe reads the old limit, and memory-limit-not-applied says so on an APU.
SCENARIO=memory
. ./lib.sh

CONF=/etc/modprobe.d/vmlane-memory.conf
PARAMS=/sys/module/ttm/parameters

installed_checks
# ttm may be loaded (a chain's earlier boot loaded amdgpu); with no GPU nothing uses it.
modprobe -r amdgpu ttm >/dev/null 2>&1
check "ttm is a module here and is not loaded" sh -c "! test -d /sys/module/ttm && modinfo -F filename ttm | grep -q ttm.ko"

plan=$(python3 - <<'EOF'
import os
from kfdguard.assess.memory import memory_options
ram = next(int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
major, minor = (int(x) for x in os.uname().release.split(".")[:2])
plan = memory_options("75%", ram, (major, minor), dkms=False, page_size=os.sysconf("SC_PAGE_SIZE"))
assert plan.refusal is None and not plan.cmdline, plan
print(plan.pages, "options ttm " + " ".join(f"{n}={v}" for m, n, v in plan.options if m == "ttm"))
EOF
)
pages=${plan%% *}
line=${plan#* }
note "kfdguard's plan for $(uname -r), $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB: $line"
check "the plan is $pages pages, three quarters of MemTotal in pages" \
    test "$pages" = "$(awk -v ps="$(getconf PAGESIZE)" '/MemTotal/ {printf "%d", $2 * 1024 * 75 / 100 / ps}' /proc/meminfo)"
echo "$line" >"$CONF"
check "modprobe --show-depends ttm passes the options" sh -c "modprobe --show-depends ttm | grep -q 'pages_limit=$pages page_pool_size=$pages'"
check "modprobe ttm loads it" modprobe ttm
check "the kernel applied pages_limit=$pages (got $(cat $PARAMS/pages_limit 2>/dev/null))" test "$(cat $PARAMS/pages_limit 2>/dev/null)" = "$pages"
check "the kernel applied page_pool_size=$pages" test "$(cat $PARAMS/page_pool_size 2>/dev/null)" = "$pages"

probed() {
    python3 -c '
import os
from kfdguard.host.root import Root
from kfdguard.probe.reader import Reader
from kfdguard.probe.system_info import probe_memory
m = probe_memory(Reader(Root("/")), os.uname().release)
print(m.ttm.get("ttm", {}).get("pages_limit", "none"))'
}
check "kfdguard's probe reads the limit in force: $pages (got $(probed))" test "$(probed)" = "$pages"

# 3. A file changed while ttm is loaded: the kernel keeps what it loaded with, and the probe says so.
half=$((pages / 2))
echo "options ttm pages_limit=$half page_pool_size=$half" >"$CONF"
check "options written while ttm is loaded change nothing: the limit stays $pages" test "$(cat $PARAMS/pages_limit)" = "$pages"
check "... and kfdguard's probe reads the stale $pages, not the file's $half" test "$(probed)" = "$pages"
modprobe -r ttm
check "loaded again, ttm takes the file's $half" sh -c "modprobe ttm && test \"\$(cat $PARAMS/pages_limit)\" = $half"

modprobe -r ttm
rm -f "$CONF"
finish
