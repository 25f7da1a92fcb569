#!/bin/bash
# Runs sbx's isolation checks inside the container image from tools/container/build.sh under
# podman, in each cell of security options, and prints a Markdown table: each cell either runs
# isolated (pid 2 and uid 1000 inside, the enforcement map) or refuses with exit 125 and a
# message naming the blocker and the fix. Needs podman and runc (apt-get install podman runc),
# root, and the Python image in /var/cache/sbx/images. Usage: matrix.sh [--build]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
name=${SBX_CONTAINER_IMAGE:-sbx-test}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# podman's default ulimits exceed this machine's hard limits; its own config, not /etc's.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
[[ ${1:-} == --build ]] && "$root/tools/container/build.sh"
default_profile=/usr/share/containers/seccomp.json
"$root/tools/container/seccomp_profile.py" sbx "$default_profile" "$work/sbx.json"
"$root/tools/container/seccomp_profile.py" no-userns "$default_profile" "$work/no-userns.json"

podman=(podman --runtime runc --cgroup-manager cgroupfs)
base=(--rm -v /var/cache/sbx/images:/var/cache/sbx/images:ro)
tmp=(--tmpfs /tmp --tmpfs /run --tmpfs /var/tmp)
unmask=(--security-opt 'unmask=/proc/*')
sbx_seccomp=(--security-opt "seccomp=$work/sbx.json")
cgroup_rw=(-v /sys/fs/cgroup:/sys/fs/cgroup:rw)

# What runs inside: doctor's verdict, the default policy, then cgroups allowed to degrade.
probe='sbx doctor >/dev/shm/d 2>&1; echo "doctor=$?"; grep -m1 " NO " /dev/shm/d | sed "s/^/blocker=/"
sbx run -- true 2>/dev/shm/e; echo "default=$?"; sed -n "1s/^/error=/p" /dev/shm/e
sbx run --json --allow-degraded cgroup -- python3 -c "import os; print(os.getpid(), os.getuid())"
echo "degraded=$?"'

echo "| cell | podman options | \`sbx doctor\` | \`sbx run -- true\` | \`sbx run --allow-degraded cgroup\`: pid uid inside; memory, pids by |"
echo "|---|---|---|---|---|"
cell() {
  local label=$1 shown=$2
  shift 2
  local out
  # The probe keeps its notes in /dev/shm: the minimal root has no /tmp.
  out=$("${podman[@]}" run "${base[@]}" "$@" "$name" sh -c "$probe" 2>&1 || true)
  python3 - "$label" "$shown" "$out" <<'PY'
import json, sys
label, shown, out = sys.argv[1:]
fields, result = {}, None
for line in out.splitlines():
    if line.startswith("{"):
        try: result = json.loads(line)
        except ValueError: pass
    elif "=" in line and line.split("=", 1)[0] in ("doctor", "blocker", "default", "error", "degraded"):
        key, value = line.split("=", 1)
        fields.setdefault(key, value)
def short(text, width=260):
    return " ".join(text.split())[:width].replace("|", "\\|")
doctor = fields.get("doctor", "?")
if "blocker" in fields:
    doctor += ": " + short(fields["blocker"].split("  [")[0], 200)
default = fields.get("default", "?")
if fields.get("error"):
    default += ": " + short(fields["error"], 90)
if result and result.get("status") == "exited":
    enf = result["enforcement"]
    inside = "%s; %s, %s" % (result["stdout"].strip(), enf["memory"], enf["pids"])
elif result:
    inside = "%s: %s" % (result.get("exit_code"), short(result.get("error", "")))
else:
    inside = "%s: %s" % (fields.get("degraded", "?"), short(out[-260:]))
print("| %s | %s | %s | %s | %s |" % (label, shown, doctor, default, inside))
PY
}

cell "1 defaults, minimal root" "(none)"
cell "1b defaults" "--tmpfs /tmp,/run,/var/tmp" "${tmp[@]}"
cell "2 sbx seccomp" "seccomp=sbx.json" "${tmp[@]}" "${sbx_seccomp[@]}"
cell "3 unconfined" "seccomp=unconfined" "${tmp[@]}" --security-opt seccomp=unconfined
cell "4 /proc unmasked" "unmask=/proc/*" "${tmp[@]}" "${unmask[@]}"
cell "2+4" "seccomp=sbx.json unmask=/proc/*" "${tmp[@]}" "${sbx_seccomp[@]}" "${unmask[@]}"
cell "3+4" "seccomp=unconfined unmask=/proc/*" "${tmp[@]}" --security-opt seccomp=unconfined "${unmask[@]}"
cell "5 cgroupfs rw" "sbx.json unmask=/proc/* -v /sys/fs/cgroup:rw" "${tmp[@]}" "${sbx_seccomp[@]}" "${unmask[@]}" "${cgroup_rw[@]}"
cell "6 no user namespaces" "seccomp=no-userns.json unmask=/proc/*" "${tmp[@]}" --security-opt "seccomp=$work/no-userns.json" "${unmask[@]}"
