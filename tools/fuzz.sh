#!/bin/bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) into build-fuzz/ and runs each
# for SECONDS (default 5, a smoke), starting from its seed corpus in tests/fuzz/corpus/<target>/.
# Prints executions and coverage per target; fails on any crash, leak, timeout or broken
# invariant (the input is kept in build-fuzz/crashes/<target>/: fix the product, then copy it
# into the seed corpus as a regression input). New inputs the fuzzer finds stay in
# build-fuzz/corpus/<target>/, so a later run goes on from them; the repository is not written.
#   tools/fuzz.sh [SECONDS] [TARGET...]     e.g. tools/fuzz.sh 3600 tls_client_hello
# $SBX_FUZZ_TIMEOUT: seconds one input may take before it counts as a hang (default 10). Long
# runs niced on a busy machine can be starved for longer than that: raise it there, and replay
# any input it reports (build-fuzz/fuzz/fuzz_TARGET INPUT) on a quiet machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SBX_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-5}
shift || true

cmake -S "$root" -B "$build" -DSBX_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  >/dev/null
cmake --build "$build" -j"$(nproc)" -- --no-print-directory >/dev/null

# The longest input each target is given: what the reader can be handed, no more (a larger
# input only slows every execution down). A request stream has no end: two heads' worth.
declare -A max_len=(
  [dns_message]=1300 [tls_client_hello]=20000 [http_head]=9000 [proxy_request]=9000
  [http_request_stream]=16384 [session_frames]=65536 [policy]=16384 [manifest]=8192
  [workspace_tar]=65536
)
targets=("$@")
if ((${#targets[@]} == 0)); then
  for binary in "$build"/fuzz/fuzz_*; do targets+=("${binary##*/fuzz_}"); done
fi

printf '%-18s %12s %9s %6s %7s %6s  %s\n' target executions exec/s cov features corpus result
failed=0
for target in "${targets[@]}"; do
  binary=$build/fuzz/fuzz_$target
  [[ -x $binary ]] || { echo "fuzz: no target $target (tests/fuzz/$target.cc)" >&2; exit 2; }
  corpus=$build/corpus/$target
  crashes=$build/crashes/$target
  log=$build/logs/$target.log
  mkdir -p "$corpus" "$crashes" "${log%/*}"
  status=0
  (cd "$build" && "$binary" "$corpus" "$root/tests/fuzz/corpus/$target" \
    -max_total_time="$seconds" -max_len="${max_len[$target]:-4096}" -timeout="${SBX_FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1) >"$log" 2>&1 ||
    status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  features=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  units=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if ((status != 0)); then
    result="FAILED (exit $status): see $log and $crashes/"
    failed=1
  fi
  printf '%-18s %12s %9s %6s %7s %6s  %s\n' "$target" "${executions:-?}" "${per_second:-?}" \
    "${cov:-?}" "${features:-?}" "${units:-?}" "$result"
  if ((status != 0)); then grep -E 'ERROR|invariant|SUMMARY' "$log" | head -5 >&2 || true; fi
done
exit "$failed"
