#!/bin/bash
# The whole test suite, as README.md's quick start and CI run it, on a fresh Debian 12 machine:
#   1. install missing Debian packages; 2. build; 3. build the image unless cached;
#   4. unit tests; 5. integration tests (real sandboxes); 6. numpy's, pandas' and matplotlib's
#   own test suites in the sandbox against the host; 7. unit tests again under
#   AddressSanitizer + UndefinedBehaviorSanitizer; 8. the cgroup v2 tests in a qemu VM
#   (this host is cgroup v1 hybrid). Every step must pass; the first failure stops the run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$SECONDS
step() { printf '\n== [%4ds] %s\n' $((SECONDS - start)) "$*"; }

step "setup: Debian packages"
tools/setup.sh
step "build"
tools/build.sh
step "image (built once, then cached)"
# A no-op when the recipe's image is cached; rebuilds when rootfs/ changed.
build/sbx image build
build/sbx image verify
step "unit tests"
build/tests/sbx_unit_tests --gtest_brief=1
step "integration tests (real namespaces, seccomp, cgroups, the image's Python)"
build/tests/sbx_integration_tests --gtest_brief=1
step "the libraries' own test suites: sandbox vs host, test by test (issue 3's proof)"
tests/library_suites.sh
step "unit tests under ASan + UBSan"
SBX_BUILD_DIR=$root/build-asan SBX_BUILD_TARGET=sbx_unit_tests tools/build.sh -DSBX_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/tests/sbx_unit_tests --gtest_brief=1
step "cgroup v2 tests in a VM (qemu TCG, Debian kernel, cgroup2 with memory+pids+cpu)"
tools/vm/run-in-cgroup2-vm.sh --timeout 1500 -- "$root/tests/cgroup2_vm_suite.sh"
step "all tests passed"
