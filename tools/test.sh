#!/bin/bash
# The whole test suite, as README.md's quick start and CI run it, on a fresh Debian 12 machine:
#   1. install missing Debian packages; 2. build; 3. build the image and the sklearn variant
#   unless cached;
#   4. unit tests; 5. integration tests (real sandboxes), and the isolation and limits suites
#   again inside a podman container (tools/container/isolation_suites.sh), and the CI recipes
#   (deploy/ci/) as their runners would run them (tools/container/ci_recipes.sh); 6. the
#   server (`sbx serve`), its wire protocol with pytest against the real server
#   (tests/server_suite.sh); 7. the Python package against it (tests/python_suite.sh); 8. the
#   Kubernetes manifests (deploy/kubernetes/) against the API schema
#   (tools/kubernetes/validate.sh), then the Deployment under podman kube play, reached by the
#   Python package (tools/container/kube_play.sh); 9. numpy's, pandas' and matplotlib's own
#   test suites in the sandbox against the host; 10. unit tests again under AddressSanitizer +
#   UndefinedBehaviorSanitizer; 11. the cgroup v2 tests in a qemu VM (this host is cgroup v1
#   hybrid); 12. every fuzz target for a few seconds from its seed
#   corpus (tools/fuzz.sh; the seeds include each crash ever found); 13. a soak of 300 mixed
#   runs through sbx run and sbx serve that must leave nothing behind (tools/soak.sh). Every
#   step must pass. A failure in steps 1-3 stops the run; a failing test step is recorded and
#   the steps after it still run (one flaky test never hides their results), and the run then
#   fails naming each failed step.
# Every skipped GoogleTest test is printed with its reason, and a skip that
# tests/expected_skips/host.txt (the VM: cgroup2_vm.txt) does not list fails its step. The run
# ends with "N passed, M failed, K skipped" over all of them, also when a step failed.
#
# Environment:
#   SBX_EXPECTED_SKIPS        the host's expected-skips list (default tests/expected_skips/host.txt)
#   SBX_REQUIRE_NET_TOPOLOGY  1 (the default here): the network tests fail, not skip, when their
#                             small internet cannot be built; 0 on a machine without netns/veth
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$SECONDS
current=
step() {
  current=$*
  printf '\n== [%4ds] %s\n' $((SECONDS - start)) "$*"
}
export SBX_REQUIRE_NET_TOPOLOGY=${SBX_REQUIRE_NET_TOPOLOGY:-1}
expected_skips=${SBX_EXPECTED_SKIPS:-tests/expected_skips/host.txt}
reports=$(mktemp -d /tmp/sbx-test-reports.XXXXXX)
totals=$reports/totals.tsv
failed_steps=()
finish() {
  local status=$?
  printf '\n== [%4ds] summary\n' $((SECONDS - start))
  python3 "$root/tests/gtest_report.py" --summary "$totals"
  if ((${#failed_steps[@]})); then
    printf 'FAILED step: %s\n' "${failed_steps[@]}"
  elif ((status != 0)); then
    echo "FAILED in step: $current (exit $status)"
  fi
  rm -rf "$reports"
}
trap finish EXIT
# One test step: NAME COMMAND [ARGS]. The command runs under errexit in a subshell of its own
# (started with & and waited for: inside a || list bash would ignore errexit); its failure is
# recorded and the run goes on.
test_step() {
  local name=$1 status=0
  shift
  step "$name"
  ( set -e; "$@" ) &
  wait $! || status=$?
  ((status == 0)) || failed_steps+=("$name (exit $status)")
}
# A GoogleTest binary with an XML report, then the report's skips checked: LABEL BINARY [ARGS].
gtest() {
  local label=$1 report=$reports/${1//[^a-zA-Z0-9]/-}.xml status=0
  shift
  "$@" --gtest_brief=1 --gtest_output="xml:$report" || status=$?
  python3 tests/gtest_report.py --label "$label" --expected "$expected_skips" --totals "$totals" \
    "$report" || status=$((status ? status : 1))
  return "$status"
}

step "setup: Debian packages"
tools/setup.sh
step "build"
tools/build.sh
step "image (built once, then cached)"
# A no-op when the recipe's image is cached; rebuilds when rootfs/ changed.
build/sbx image build
build/sbx image verify
# The variant tests/integration/image_variant_test.cc runs in (about a minute once, then cached).
build/sbx image build --name sklearn --add python3-sklearn
container_suites() {
  local status=0
  tools/container/isolation_suites.sh "$reports/container.xml" || status=$?
  python3 tests/gtest_report.py --label "in a container" --expected "$expected_skips" \
    --totals "$totals" "$reports/container.xml" || status=$((status ? status : 1))
  return "$status"
}
ci_recipes() {
  local status=0
  tools/container/ci_recipes.sh --build | tee "$reports/ci-recipes.log" || status=$?
  printf 'ci recipes\t%d\t%d\t0\t0\n' "$(grep -c '^ok ' "$reports/ci-recipes.log")" \
    "$(grep -c '^FAIL ' "$reports/ci-recipes.log")" >>"$totals"
  return "$status"
}
server_suite() {
  local status=0
  tests/server_suite.sh "$reports/server.xml" || status=$?
  python3 tests/gtest_report.py --label "server" --expected "$expected_skips" \
    --totals "$totals" "$reports/server.xml" || status=$((status ? status : 1))
  return "$status"
}
kubernetes() {
  local status=0
  { tools/kubernetes/validate.sh && tools/container/kube_play.sh; } 2>&1 | tee "$reports/kube.log" ||
    status=$?
  awk '/^[0-9]+ passed, [0-9]+ failed$/ {p += $1; f += $3}
    END {printf "kubernetes\t%d\t%d\t0\t0\n", p, f}' "$reports/kube.log" >>"$totals"
  return "$status"
}
asan_unit_tests() {
  SBX_BUILD_DIR=$root/build-asan SBX_BUILD_TARGET=sbx_unit_tests tools/build.sh -DSBX_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    gtest "unit tests (ASan+UBSan)" build-asan/tests/sbx_unit_tests
}
cgroup2_vm() {
  # The suite checks its skips inside the VM and prints its totals as "sbx-totals<TAB>..." lines.
  local status=0
  tools/vm/run-in-cgroup2-vm.sh --timeout 1500 -- "$root/tests/cgroup2_vm_suite.sh" |
    tee "$reports/vm.log" || status=$?
  sed -n 's/^sbx-totals\t//p' "$reports/vm.log" >>"$totals"
  return "$status"
}

test_step "unit tests" gtest "unit tests" build/tests/sbx_unit_tests
test_step "integration tests (real namespaces, seccomp, cgroups, the image's Python)" \
  gtest "integration tests" build/tests/sbx_integration_tests
test_step "isolation and limits suites inside a podman container (sbx's seccomp profile)" \
  container_suites
test_step "the CI recipes (deploy/ci/) under podman, with and without their options" ci_recipes
test_step "the server (tests/server, pytest) against a real sbx serve" server_suite
test_step "the Python package (python/tests, pytest) against sbx serve" \
  tests/python_suite.sh --totals "$totals"
test_step "Kubernetes: the manifests against the API schema, then podman kube play of the Deployment" \
  kubernetes
test_step "the libraries' own test suites: sandbox vs host, test by test" \
  tests/library_suites.sh --totals "$totals"
test_step "unit tests under ASan + UBSan" asan_unit_tests
test_step "cgroup v2 tests in a VM (qemu TCG, Debian kernel, cgroup2 with memory+pids+cpu)" cgroup2_vm
test_step "fuzz smoke: each libFuzzer target for 3 s (clang, ASan + UBSan)" tools/fuzz.sh 3
test_step "soak: 300 mixed runs through sbx run and sbx serve, then nothing may be left" \
  tools/soak.sh 300
((${#failed_steps[@]} == 0)) || exit 1
step "all tests passed"
