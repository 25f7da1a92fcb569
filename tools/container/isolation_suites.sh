#!/bin/bash
# Runs sbx's isolation and limits test suites (build/tests/sbx_integration_tests) inside a podman
# container, the cell where sbx must run fully isolated: sbx's seccomp profile
# (deploy/seccomp/sbx.json's rules over podman's default), /proc unmasked, a writable cgroupfs.
# The container's root is the Python image itself (an overlay over it, so the tests' host-side
# controls find python3), with build/ and tests/ bound read-only at their own paths and the
# libraries the test binary needs that the image lacks. Exits with the suites' status.
# Needs root, podman and runc (tools/setup.sh), the image in /var/cache/sbx/images, and build/.
# Usage: isolation_suites.sh [JUNIT.xml]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
report=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
image=$(readlink -f /var/cache/sbx/images/default)
[[ -d $image/usr ]] || { echo "isolation_suites: no default image; run build/sbx image build" >&2; exit 2; }
tests=$root/build/tests/sbx_integration_tests
[[ -x $tests ]] || { echo "isolation_suites: $tests not built (tools/build.sh)" >&2; exit 2; }

# podman's default ulimits exceed this machine's hard limits; its own config, not /etc's.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
"$root/tools/container/seccomp_profile.py" sbx /usr/share/containers/seccomp.json "$work/sbx.json" >/dev/null

# The shared libraries of the binaries run inside that the image does not have.
mkdir "$work/lib" "$work/out"
ldd "$tests" "$root/build/sbx" "$root/build/sbx-netd" | awk '/=> \// { print $3 }' | sort -u |
  while read -r lib; do
    name=${lib##*/}
    [[ -e $image/usr/lib/x86_64-linux-gnu/$name || -e $image/lib/x86_64-linux-gnu/$name ]] ||
      cp -L "$lib" "$work/lib/"
  done

# What needs a host outside the container is left out: the network tests (their small
# internet is built with `ip netns` on the host), the CLI's uid switches, the pool (its
# benchmarks' fixtures), and two tests whose set-up the container's seccomp profile denies:
# the privileged calls' host-side control, which then proves nothing, and the personality test,
# whose caller cannot take ADDR_NO_RANDOMIZE there (so no sandbox can inherit it either).
# --rootfs is a switch: the first argument after the options is the root directory, then the
# command. --init: a small init is the container's pid 1, not the test binary, which counts its own
# children (InitExit) and would otherwise adopt every orphan of the container.
filter='Isolation*:Limits*:InitExit*:RootFallback*:Cleanup*'
filter+=':-Isolation.PrivilegedCallsAreDeniedButWorkOnTheHost:Isolation.TheCallersPersonalityFlagsStayOutside'
status=0
podman --runtime runc --cgroup-manager cgroupfs run --rm \
  --security-opt "seccomp=$work/sbx.json" --security-opt 'unmask=/proc/*' \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
  -v /var/cache/sbx/images:/var/cache/sbx/images:ro \
  -v "$root/build:$root/build:ro" -v "$root/tests:$root/tests:ro" \
  -v "$work/lib:/opt/sbx-test-lib:ro" -e LD_LIBRARY_PATH=/opt/sbx-test-lib \
  -v "$work/out:/out" --tmpfs /tmp --init \
  --rootfs "$image:O" "$tests" --gtest_brief=1 --gtest_filter="$filter" --gtest_output=xml:/out/report.xml || status=$?
[[ -z $report ]] || cp "$work/out/report.xml" "$report"
exit "$status"
