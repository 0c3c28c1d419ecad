#!/bin/bash
# vmlane self-test: a scenario that fails on purpose.  `vmlane.py run` must
# report a SCENARIO FAILURE with exit status 1, print the failed checks and
# the tails of the guest journal and serial log, and must not retry.
set -u
echo "# this scenario is expected to fail"
logger -t vmlane-selftest "about to fail on purpose"
if [ -e /dev/kfd ]; then
    echo "ok 1 - /dev/kfd exists before modprobe"
else
    echo "not ok 1 - /dev/kfd exists before modprobe (it never does without amdgpu loaded)"
fi
echo "ok 2 - a check that passes"
echo "1..2"
exit 1
