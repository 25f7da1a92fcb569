#!/bin/bash
# Validates every manifest in deploy/kubernetes/ (or the files given) against the Kubernetes API
# schema, strictly (validate.mjs says how): a misspelt field or a wrong type fails. Installs the
# npm packages pinned by package-lock.json once into $SBX_BUILD_DIR/kubernetes-validate (default
# build/). Needs node and npm (apt-get install nodejs npm) and the npm registry the first time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tools/kubernetes
modules=${SBX_BUILD_DIR:-$root/build}/kubernetes-validate
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "validate.sh: node and npm are missing (apt-get install nodejs npm)" >&2; exit 1; }
if ! cmp -s "$here/package-lock.json" "$modules/package-lock.json"; then
  mkdir -p "$modules"
  cp "$here/package.json" "$here/package-lock.json" "$modules/"
  npm ci --prefix "$modules" --no-audit --no-fund --loglevel=error >"$modules/npm.log" 2>&1 ||
    { cat "$modules/npm.log" >&2; rm -f "$modules/package-lock.json"; exit 1; }
fi
# The script runs from the install directory so that it resolves the packages installed there.
cp "$here/validate.mjs" "$here/agent_sandbox.schema.json" "$modules/"
if (($# == 0)); then set -- "$root"/deploy/kubernetes/*.yaml; fi
node "$modules/validate.mjs" "$@"
