#!/bin/bash
# The libraries' own test suites, inside sbx and on the bare host, compared test by test.
#
# Runs a fixed subset of the tests that Debian ships inside python3-numpy, python3-pandas and
# python3-matplotlib with pytest, once per library inside `sbx run` (the default policy and
# seccomp filter; only the timeout and the file size limit are raised, see in_sandbox) and once on the bare host against the host's
# /usr/bin/python3 (the same Debian packages: tools/setup.sh installs them), alternating host
# and sandbox per library. tests/compare_junit.py then fails the run if any test that passed
# on the host did not pass in the sandbox, or any suite passed fewer tests on the host than its
# floor (a suite that went missing or collected next to nothing on both sides would otherwise
# compare as equal). A pytest that ended other than "all passed" (0) or "some tests failed" (1)
# on either side fails the run too: interrupted, internal error, usage error, nothing collected,
# or, in the sandbox, timed out or killed. Afterwards it times a cold
# `import numpy, pandas, matplotlib.pyplot` on both sides, alternating, 5 times each.
#
# Usage: tests/library_suites.sh [--sbx PATH] [--keep] [--totals FILE]
#   --sbx PATH  the sbx binary (default: build/sbx of this checkout)
#   --keep      keep the work directory (JUnit reports, pytest output) and print its path
#   --totals F  append the comparison's counts to F (tools/test.sh's closing line)
#
# The subset (about 2.5 minutes a side, 5.5 in all with the import timing, on a loaded
# 2-core machine), chosen to cover what a sandbox can break: files and temporary
# directories, mmap, compressed files, locale and text
# encodings, the CPU feature probes, BLAS/LAPACK, fonts and image output.
#   numpy       core/tests: test_multiarray (buffers, pickling, mmap-backed arrays),
#               test_datetime (tz, time), test_memmap, test_print
#               and test_longdouble (locale-dependent formatting), test_cpu_features
#               (/proc/cpuinfo, auxv); lib/tests: test_io (savetxt,
#               loadtxt, gzip/bz2/lzma files, tempfiles), test_format (.npy, memmap);
#               linalg/tests (OpenBLAS, LAPACK)
#   pandas      tests/io/parser: common, test_encoding, test_compression, test_c_parser_only,
#               test_python_parser_only (read_csv: both engines, encodings, gzip/bz2/xz/zip/
#               zstd files, file handles; tests that need the network skip on both sides).
#               All of tests/io/parser took about 20 minutes on the host.
#   matplotlib  tests/test_figure.py and tests/test_font_manager.py (Debian ships no baseline
#               images, so image-comparison tests fail on both sides and are not counted;
#               the rest draw, save and look up fonts). test_axes.py alone took 10 minutes.
# The exact pytest arguments are in SUITES below; change them here and only here.
# A sandbox-only difference found this way and fixed: matplotlib's test_font_manager fontconfig
# tests skipped inside because the image had no fc-list; the recipe now has fontconfig.
# Left out on purpose, on both sides: numpy's core/tests/test_mem_policy (it compiles a C
# extension, and the image deliberately ships no compiler), and tests marked slow (numpy's
# own default selection; test_big_arrays writes 2 GiB, beyond the default /tmp).
#
# Test-only dependencies: numpy's and pandas' conftest.py import hypothesis, which is not in
# the image. tools/setup.sh installs python3-hypothesis (and python3-sortedcontainers) on
# the host; this script copies those two packages' files into the workspace and puts them
# on PYTHONPATH on both sides, so both sides import the same files.
#
# Both sides run as the same unprivileged host uid: as root the sandbox user's host id
# (2000001000, sandbox/isolation/userns.h) for the host side too, otherwise the caller's own uid.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sbx=$root/build/sbx
keep=0
totals=()
while (($#)); do
  case $1 in
    --sbx) sbx=${2:?--sbx needs a path}; shift ;;
    --keep) keep=1 ;;
    --totals) totals=(--totals "${2:?--totals needs a file}"); shift ;;
    -h | --help) sed -n '2,/^#   --totals/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "library_suites: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

dist=/usr/lib/python3/dist-packages
python=/usr/bin/python3
# name, timeout (s), floor of host passes, marker to deselect (-m "not MARKER"; - for none), test
# paths (relative to dist-packages). The floors are about 90% of the host passes of a full run
# (numpy 2,295, pandas 1,085, matplotlib 109), leaving room for Debian's point updates.
# numpy's "slow" tests are left out as numpy's own runner does by default (numpy.test() runs
# label "fast", i.e. -m "not slow"): some need gigabytes of memory and of /tmp, beyond the
# default policy (test_io's TestSavezLoad.test_big_arrays writes a 2 GiB file: ENOSPC on the
# 256M /tmp, and RLIMIT_FSIZE is 1G). numpy's core/tests/test_mem_policy is not in the
# subset: it compiles a C extension, and the image has no compiler by design.
SUITES=(
  "numpy 900 2000 slow numpy/core/tests/test_multiarray.py numpy/core/tests/test_datetime.py
     numpy/core/tests/test_memmap.py numpy/core/tests/test_print.py
     numpy/core/tests/test_longdouble.py numpy/core/tests/test_cpu_features.py
     numpy/lib/tests/test_io.py numpy/lib/tests/test_format.py numpy/linalg/tests"
  "pandas 900 950 - pandas/tests/io/parser/common pandas/tests/io/parser/test_encoding.py
     pandas/tests/io/parser/test_compression.py pandas/tests/io/parser/test_c_parser_only.py
     pandas/tests/io/parser/test_python_parser_only.py"
  "matplotlib 900 95 - matplotlib/tests/test_figure.py matplotlib/tests/test_font_manager.py"
)

die() { echo "library_suites: error: $*" >&2; exit 1; }
[[ -x $sbx ]] || die "$sbx not found; build it with tools/build.sh"
[[ -x $python ]] || die "$python not found; run tools/setup.sh"
"$sbx" image path >/dev/null || die "no image; build it with: $sbx image build"
for package in python3-numpy python3-pandas python3-matplotlib python3-pytest \
  python3-hypothesis python3-sortedcontainers; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    die "$package is not installed on the host; run tools/setup.sh"
done

if ((EUID == 0)); then
  run_uid=2000001000 # the host id of the sandbox's uid 1000 in root mode
  as_user=(setpriv --reuid="$run_uid" --regid="$run_uid" --clear-groups)
else
  run_uid=$EUID
  as_user=()
fi

work=$(mktemp -d /tmp/sbx-library-suites.XXXXXX)
chmod 755 "$work"
cleanup() { if ((keep)); then echo "library_suites: kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
workspace=$work/workspace # bound at /workspace: test-only deps and the sandbox's reports
host=$work/host           # the host side's HOME, TMPDIR, MPLCONFIGDIR and reports
mkdir -p "$workspace/pydeps" "$workspace/junit" "$host/home" "$host/tmp" "$host/mpl" \
  "$host/junit" "$work/logs"
for package in python3-hypothesis python3-sortedcontainers; do
  dpkg -L "$package" | grep -E "^$dist/[^/]+$" | xargs -I{} cp -a {} "$workspace/pydeps/"
done
chown -R "$run_uid:$run_uid" "$workspace" "$host"

# Two switches the suites have for machines with little memory, set on both sides:
#  NPY_AVAILABLE_MEM: numpy's requires_memory() reads MemAvailable from /proc/meminfo, which
#   inside the sandbox is the host's (about 17 GiB here), not the 512M cgroup limit, so
#   without it tests sized for the host would be OOM-killed inside;
#  PANDAS_CI=1: pandas skips test_c_parser_only::test_bytes_exceed_2gb ("Too memory intensive
#   for CI": a 2.1 GB CSV string), which the 512M limit OOM-kills, and the whole pytest with it.
# The host side gets the sandbox's environment (sandbox/launch/environment.cc) with host paths.
host_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$host/home" LANG=C.UTF-8
  TMPDIR="$host/tmp" MPLBACKEND=Agg MPLCONFIGDIR="$host/mpl" PYTHONUNBUFFERED=1
  PYTHONPATH="$workspace/pydeps" NPY_AVAILABLE_MEM=512MiB PANDAS_CI=1)
on_host() { (cd "$host/home" && "${host_env[@]}" "${as_user[@]}" "$@"); }
# The default policy (512M memory, 256 pids, 1 CPU, 1 MiB of output per stream, 256M /tmp,
# no network, seccomp) with two limits raised: the timeout, and the largest file (RLIMIT_FSIZE,
# 1G by default) to 8G: numpy's test_format::test_large_file_support makes a 5 GiB sparse
# file with truncate(1), which the 1G limit kills with SIGXFSZ (the test then skips, where
# it passes on the host); sparse, it takes no room in /tmp.
"$python" - "$root/policies/default.json" "$work/policy.json" <<'EOF'
import json, sys
policy = json.load(open(sys.argv[1]))
policy["description"] = "tests/library_suites.sh: the default policy, largest file 8G"
policy["limits"]["file_size"] = "8G"
json.dump(policy, open(sys.argv[2], "w"), indent=2)
EOF
in_sandbox() {
  local timeout=$1; shift
  "$sbx" run --policy "$work/policy.json" --timeout "$timeout" --workspace "$workspace" \
    --env PYTHONPATH=/workspace/pydeps \
    --env NPY_AVAILABLE_MEM=512MiB --env PANDAS_CI=1 \
    -- "$@"
}
pytest_args=(-m pytest -q -p no:cacheprovider -rs)
now() { date +%s.%N; }
elapsed() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }

# Warm the host's matplotlib font cache once (the image ships its cache prebuilt).
on_host "$python" -c 'import matplotlib.pyplot' >/dev/null 2>&1

# pytest's exit codes 0 (all passed) and 1 (some failed: the comparison judges those) are a
# finished run; anything else means the suite did not run to its end.
status=0
check_exit() {  # SUITE SIDE CODE
  local meaning
  case $3 in
    0 | 1) return 0 ;;
    2) meaning="interrupted" ;;
    3) meaning="pytest internal error" ;;
    4) meaning="pytest usage error" ;;
    5) meaning="no tests collected" ;;
    124) meaning="timed out (sbx)" ;;
    125) meaning="sbx failed or refused the run" ;;
    *) meaning=$( (($3 > 128)) && echo "killed by signal $(($3 - 128))" || echo "unexpected") ;;
  esac
  echo "FAIL $1 on the $2: pytest exited $3 ($meaning); see $work/logs/$2-$1.log"
  status=1
}

host_wall=0
sandbox_wall=0
floors=()
for suite in "${SUITES[@]}"; do
  read -r -d '' -a fields <<<"$suite" || true
  name=${fields[0]} timeout=${fields[1]}
  floors+=(--floor "$name=${fields[2]}")
  paths=()
  [[ ${fields[3]} == - ]] || paths+=(-m "not ${fields[3]}")
  for path in "${fields[@]:4}"; do paths+=("$dist/$path"); done

  echo "== $name: host"
  start=$(now)
  code=0
  on_host "$python" "${pytest_args[@]}" --basetemp="$host/tmp/pytest-$name" \
    --junitxml="$host/junit/$name.xml" "${paths[@]}" >"$work/logs/host-$name.log" 2>&1 || code=$?
  took=$(elapsed "$start")
  check_exit "$name" host "$code"
  host_wall=$(add "$host_wall" "$took")
  printf '   %.1f s: %s\n' "$took" "$(tail -n 1 "$work/logs/host-$name.log")"

  echo "== $name: sandbox"
  start=$(now)
  code=0
  in_sandbox "$timeout" "$python" "${pytest_args[@]}" --basetemp="/tmp/pytest-$name" \
    --junitxml="/workspace/junit/$name.xml" "${paths[@]}" \
    >"$work/logs/sandbox-$name.log" 2>&1 || code=$?
  took=$(elapsed "$start")
  check_exit "$name" sandbox "$code"
  sandbox_wall=$(add "$sandbox_wall" "$took")
  printf '   %.1f s: %s\n' "$took" "$(grep -E ' (passed|failed|error)' "$work/logs/sandbox-$name.log" | tail -n 1)"
done

echo "== comparison"
compared=0
"$python" "$root/tests/compare_junit.py" --host-dir "$host/junit" "${floors[@]}" "${totals[@]}" \
  --sandbox-dir "$workspace/junit" --host-wall "$host_wall" --sandbox-wall "$sandbox_wall" ||
  compared=$?
((compared == 0)) || status=$compared

echo "== cold 'import numpy, pandas, matplotlib.pyplot', alternating, 5 runs a side"
import_code='import time; t = time.perf_counter(); import numpy, pandas, matplotlib.pyplot; print(f"{time.perf_counter() - t:.3f}")'
host_imports=() sandbox_imports=() host_procs=() sandbox_runs=()
for _ in 1 2 3 4 5; do
  start=$(now)
  host_imports+=("$(on_host "$python" -c "$import_code")")
  host_procs+=("$(elapsed "$start")")
  start=$(now)
  sandbox_imports+=("$(in_sandbox 60 "$python" -c "$import_code")")
  sandbox_runs+=("$(elapsed "$start")")
done
median() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
printf 'import (in the process): host %.3f s, sandbox %.3f s (medians of 5)\n' \
  "$(median "${host_imports[@]}")" "$(median "${sandbox_imports[@]}")"
printf 'whole command (python3 start to exit; sandbox: the whole sbx run): host %.3f s, sandbox %.3f s\n' \
  "$(median "${host_procs[@]}")" "$(median "${sandbox_runs[@]}")"
printf '  host runs:    %s\n  sandbox runs: %s\n' "${host_imports[*]}" "${sandbox_imports[*]}"

if ((status == 0)); then
  echo "library_suites: OK"
else
  echo "library_suites: FAILED (see the FAIL lines above)"
  keep=1
fi
exit "$status"
