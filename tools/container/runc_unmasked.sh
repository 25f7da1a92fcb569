#!/bin/bash
# An OCI runtime for podman that is runc, except that it gives each container it creates an
# unmasked /proc: what the kubelet asks of the runtime for `procMount: Unmasked`, which podman
# 4.3's kube play ignores (podman supports the field from 4.7). Only tools/container/kube_play.sh
# uses it, and only for the pod it plays: it stands in for the field, and says so.
set -euo pipefail
args=("$@")
command=
bundle=
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    create | run) [[ -z $command ]] && command=${args[i]} ;;
    --bundle | -b) bundle=${args[i + 1]:-} ;;
    --bundle=*) bundle=${args[i]#--bundle=} ;;
  esac
done
if [[ -n $command && -n $bundle && -f $bundle/config.json ]]; then
  python3 - "$bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as f:
    config = json.load(f)
linux = config.setdefault("linux", {})
# The kubelet's Unmasked: neither masked nor read-only paths.
linux["maskedPaths"] = []
linux["readonlyPaths"] = []
with open(path, "w") as f:
    json.dump(config, f)
PY
fi
exec runc "$@"
