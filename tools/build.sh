#!/bin/bash
# Configures and builds sbx into build/ (or $SBX_BUILD_DIR), quietly. Extra arguments go to cmake;
# $SBX_BUILD_TARGET builds one target only (the sanitizer build needs just the unit tests).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" ${SBX_BUILD_TARGET:+--target "$SBX_BUILD_TARGET"} \
  -- --no-print-directory >/dev/null
