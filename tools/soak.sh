#!/bin/bash
# The soak: N mixed runs (exits, timeouts, OOM, fork bombs, daemons, output floods, a runner
# killed with SIGKILL, allowlist runs) through `sbx run` and a long-lived `sbx serve`, then checks
# that no process, mount, cgroup, network namespace, veth, temp dir or sbx-netd is left and that
# the server's fds and RSS stayed flat. Exits non-zero on any leak or unexpected result.
# Usage: tools/soak.sh N [--jobs J] [--seed S] [--minutes M] [--shared-host]
#            (SBX_BIN: the sbx to soak, default build/sbx)
# Needs root (cgroups, sbx-netd); every bomb it runs is bounded and runs only in a sandbox.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if (($# < 1)); then
  echo "usage: tools/soak.sh N [--jobs J] [--seed S] [--minutes M] [--shared-host]" >&2
  exit 2
fi
exec /usr/bin/python3 "$root/tools/soak.py" --sbx "${SBX_BIN:-$root/build/sbx}" "$@"
