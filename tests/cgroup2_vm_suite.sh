#!/bin/bash
# Runs inside the cgroup v2 VM (tools/vm/run-in-cgroup2-vm.sh): the cgroup module's v2 tests and
# the integration tests that exercise limits, with SBX_IN_CGROUP2_VM=1 so they insist on v2.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/build/tests/sbx_unit_tests" --gtest_brief=1 --gtest_filter='*Cgroup*'
"$root/build/tests/sbx_integration_tests" --gtest_brief=1 \
  --gtest_filter='Limits.*:Isolation.NoCapabilitiesAndNoNewPrivs:Cleanup.KillingTheRunnerKillsTheSandbox'
