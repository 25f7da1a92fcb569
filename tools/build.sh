#!/bin/bash
# Configures and builds sbx into build/ (or $SBX_BUILD_DIR), quietly. Extra arguments go to cmake;
# $SBX_BUILD_TARGET builds only the targets it names, separated by spaces (the sanitizer build
# needs just the unit tests, the demo just the programs it runs).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
read -ra targets <<<"${SBX_BUILD_TARGET:-}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" ${targets[@]:+--target "${targets[@]}"} \
  -- --no-print-directory >/dev/null
