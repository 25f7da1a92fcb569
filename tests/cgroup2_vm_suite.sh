#!/bin/bash
# Runs inside the cgroup v2 VM (tools/vm/run-in-cgroup2-vm.sh): the cgroup module's v2 tests and
# the integration tests that exercise limits, with SBX_IN_CGROUP2_VM=1 so they insist on v2.
# Covered: memory limit -> oom_killed by cgroup_v2 (memory.oom.group), pids limit -> pids_limit,
# timeout kill of a process tree (cgroup.kill), capabilities dropped, runner SIGKILL cleanup, no
# cgroup left behind. Left out: Limits.HugeOutputIsCappedKeepingHeadAndTail, which pushes 1 GB
# through tr (no cgroup involved) and outlasts its 60 s timeout under TCG; the host suite runs it.
# About 1 minute of tests after a 10-20 s boot.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/build/tests/sbx_unit_tests" --gtest_brief=1 --gtest_filter='*Cgroup*'
"$root/build/tests/sbx_integration_tests" --gtest_brief=1 \
  --gtest_filter='Limits.*:Isolation.NoCapabilitiesAndNoNewPrivs:Cleanup.KillingTheRunnerKillsTheSandbox:-Limits.HugeOutputIsCappedKeepingHeadAndTail'
