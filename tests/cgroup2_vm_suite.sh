#!/bin/bash
# Runs inside the cgroup v2 VM (tools/vm/run-in-cgroup2-vm.sh): the cgroup module's v2 tests and
# the integration tests that exercise limits, with SBX_IN_CGROUP2_VM=1 so they insist on v2.
# Covered: memory limit -> oom_killed by cgroup_v2 (memory.oom.group), pids limit -> pids_limit,
# timeout kill of a process tree (cgroup.kill), capabilities dropped, runner SIGKILL cleanup, no
# cgroup left behind, and a caller's negative oom_score_adj kept outside (the VM's root may lower
# it; CI's hosts withhold CAP_SYS_RESOURCE). Left out: Limits.HugeOutputIsCappedKeepingHeadAndTail,
# which pushes 1 GB through tr (no cgroup involved) and outlasts its 60 s timeout under TCG; the
# host suite runs it.
# Each binary's skips are checked against tests/expected_skips/cgroup2_vm.txt
# (tests/gtest_report.py) and its totals printed as "sbx-totals<TAB>LABEL<TAB>passed failed skipped expected" lines, which
# tools/test.sh adds to the whole run's closing line (the guest's /tmp is gone after the run).
# About 1 minute of tests after a 10-20 s boot.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
reports=$(mktemp -d)
status=0
gtest() {  # LABEL BINARY [ARGS]: like tools/test.sh's gtest, with the VM's expected skips
  local label=$1 report=$reports/${1//[^a-zA-Z0-9]/-}.xml
  shift
  "$@" --gtest_brief=1 --gtest_output="xml:$report" || status=1
  python3 "$root/tests/gtest_report.py" --label "$label" --totals "$reports/totals.tsv" \
    --expected "$root/tests/expected_skips/cgroup2_vm.txt" "$report" || status=1
}
gtest "VM: unit tests" "$root/build/tests/sbx_unit_tests" --gtest_filter='*Cgroup*'
gtest "VM: integration tests" "$root/build/tests/sbx_integration_tests" \
  --gtest_filter='Limits.*:Isolation.NoCapabilitiesAndNoNewPrivs:Cleanup.KillingTheRunnerKillsTheSandbox:Cli.TheCallersOomProtectionStaysOutside:-Limits.HugeOutputIsCappedKeepingHeadAndTail'
sed 's/^/sbx-totals\t/' "$reports/totals.tsv"
exit "$status"
