#!/bin/bash
# Tests the CI recipes in deploy/ci/ as far as this host allows: the YAML parses (python3-yaml),
# the GitHub workflow passes @action-validator/cli when it is installed ($SBX_ACTION_VALIDATOR or
# `action-validator` on PATH), then tools/container/ci_recipes.py runs every container job under
# podman with the job's options translated from Docker's, and each again without them (must
# fail), and GitHub's runner-host job's sbx steps on this host. GitHub's and GitLab's own runners
# are not reached. Needs root, podman and runc, the image from tools/container/build.sh
# ($SBX_CONTAINER_IMAGE, default sbx-ci-test; --build rebuilds it from $SBX_BUILD_DIR, default
# build/) and the Python image in /var/cache/sbx/images. Usage: ci_recipes.sh [--build]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
export SBX_CONTAINER_IMAGE=${SBX_CONTAINER_IMAGE:-sbx-ci-test}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== the recipes parse"
python3 - "$root"/deploy/ci/*.yml <<'PY'
import sys, yaml
for path in sys.argv[1:]:
    yaml.safe_load(open(path))
    print("parsed", path)
PY
validator=${SBX_ACTION_VALIDATOR:-$(command -v action-validator || true)}
if [[ -n $validator ]]; then
  package=$(dirname "$(readlink -f "$validator")")/package.json
  echo "== @action-validator/cli $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$package")"
  "$validator" "$root/deploy/ci/github-actions.yml"
  echo "github-actions.yml matches the workflow schema"
else
  echo "== @action-validator/cli not installed: the workflow schema is not checked"
fi

echo "== the jobs under podman"
# podman's default ulimits exceed this machine's hard limits; its own config, not /etc's.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
[[ ${1:-} == --build ]] && SBX_BUILD_DIR=$build "$root/tools/container/build.sh"
"$root/tools/container/seccomp_profile.py" sbx /usr/share/containers/seccomp.json "$work/sbx.json"
python3 "$root/tools/container/ci_recipes.py" "$SBX_CONTAINER_IMAGE" "$work/sbx.json" "$build"
