#!/bin/bash
# Plays deploy/kubernetes/ with `podman kube play` (Debian 12's podman 4.3 with runc) and checks
# it for real: the pod runs `sbx serve` with the token from the Secret; the pod's fields hold
# inside it (user namespace, capabilities, seccomp profile, unmasked /proc, read-only root,
# token file mode); the liveness probe passes; the Python client reaches the server through the
# published port on 127.0.0.1 with the token and runs print(2**10). Then everything is torn
# down and the run fails if a pod, container, volume, secret or network it made is left.
# Prints "N passed, M failed"; exits non-zero on any failure.
#
# What differs from a cluster, each because podman 4.3 lacks it (docs/containers.md lists the
# fields it honours): one replica, whose port gets hostIP 127.0.0.1 and a free hostPort (kube
# play publishes only those); the seccomp profile is also given as the annotation podman
# reads; procMount: Unmasked is supplied by tools/container/runc_unmasked.sh; the Secret's
# stringData is passed as data, and its file gets the content, owner and mode the kubelet would
# give it; hostUsers: false takes its ids from a private /etc/subuid bound in this script's own
# mount namespace (the machine's /etc is not touched), 65536 of them as the kubelet gives.
# Needs root, podman and runc, build/sbx, build/sbx-serve and build/sbx-netd
# (SBX_BUILD_TARGET="sbx sbx-netd sbx-serve" tools/build.sh) and the Python image.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
image=localhost/sbx-serve:latest
manifests=$root/deploy/kubernetes

if [[ ${SBX_KUBE_PLAY_INNER:-} != 1 ]]; then
  for tool in podman runc python3 unshare; do
    command -v "$tool" >/dev/null ||
      { echo "kube_play.sh: $tool is missing (apt-get install podman runc)" >&2; exit 1; }
  done
  # The container image, rebuilt only when the programs or the Python image changed.
  label=$(cat "$build/sbx" "$build/sbx-serve" "$build/sbx-netd" "$build/libsbx_session_setup.so" \
    "$root/tools/container/sbx-probe.sh" | sha256sum | cut -c1-16)
  label+=-$(readlink /var/cache/sbx/images/default)
  have=$(podman image inspect --format '{{index .Labels "sbx.content"}}' "$image" 2>/dev/null ||
    true)
  if [[ $have != "$label" ]]; then
    echo "building $image (sbx, sbx-serve, sbx-netd and the Python image)"
    SBX_CONTAINER_IMAGE=$image SBX_CONTAINER_LABEL=$label \
      "$root/tools/container/build.sh" --with-images
  fi
  # A mount namespace of its own: the private /etc/subuid below, and the pod's network
  # namespace mounts, stay in it; so every podman call of the run happens in here.
  exec unshare -m --propagation private env SBX_KUBE_PLAY_INNER=1 "$0" "$@"
fi

work=$(mktemp -d /tmp/sbx-kube-play.XXXXXX)
trap 'rm -rf "$work"' EXIT  # until finish() below takes over
passed=0
failed=0
expect() {  # NAME DETAIL COMMAND...: a check that passes when COMMAND does
  local name=$1 detail=$2
  shift 2
  if "$@"; then check "$name" 0 "$detail"; else check "$name" 1 "$detail"; fi
}
check() {  # NAME STATUS [DETAIL]
  if [[ $2 == 0 ]]; then
    echo "ok   $1${3:+: $3}"
    passed=$((passed + 1))
  else
    echo "FAIL $1${3:+: $3}"
    failed=$((failed + 1))
  fi
}

# podman's default ulimits exceed this machine's hard limits: its own config, not /etc's.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF=$work/containers.conf
# hostUsers: false makes podman pick ids for the pod from the "containers" user's range; as
# many as the kubelet gives a pod (65536; podman's own minimum is 1024). The storage settings
# are podman's defaults on Debian 12, written out because the file replaces them all.
printf 'containers:1000000:1000000\n' >"$work/subid"
cat >"$work/storage.conf" <<'EOF'
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
[storage.options]
auto-userns-min-size = 65536
EOF
export CONTAINERS_STORAGE_CONF=$work/storage.conf
for file in /etc/subuid /etc/subgid; do
  [[ -e $file ]] ||
    { echo "kube_play.sh: $file is missing: the script binds its own range over it" >&2; exit 1; }
done
mount --bind "$work/subid" /etc/subuid
mount --bind "$work/subid" /etc/subgid
mkdir "$work/seccomp"
cp "$root/deploy/seccomp/sbx.json" "$work/seccomp/sbx.json"
podman=(podman --runtime "$root/tools/container/runc_unmasked.sh" --cgroup-manager cgroupfs)

state() {  # everything podman holds, to compare before and after
  podman pod ps -q --no-trunc | sort
  podman ps -aq --no-trunc | sort
  podman volume ls -q | sort
  podman secret ls --format '{{.Name}}' | sort
  podman network ls -q | sort
  ls /run/netns 2>/dev/null | sort || true  # the pod's network namespace file
}
state >"$work/before"
for volume in state tmp; do
  if podman volume exists "$volume"; then
    echo "kube_play.sh: a podman volume named $volume exists; the pod's emptyDir would reuse it" >&2
    exit 1
  fi
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
python3 - "$manifests" "$work" "$port" <<'PY'
import base64, os, secrets, shlex, sys
import yaml
manifests, work, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
token = secrets.token_hex(32)
with open(os.path.join(work, "token"), "w") as f:
    f.write(token)
with open(os.path.join(manifests, "secret.yaml")) as f:
    secret = yaml.safe_load(f)
secret.pop("stringData")
secret["data"] = {"token": base64.b64encode(token.encode()).decode()}
with open(os.path.join(work, "secret.yaml"), "w") as f:
    yaml.safe_dump(secret, f)
with open(os.path.join(manifests, "deployment.yaml")) as f:
    deployment = yaml.safe_load(f)
# podman plays each replica as a pod, and each would publish the same host port.
deployment["spec"]["replicas"] = 1
template = deployment["spec"]["template"]
container = template["spec"]["containers"][0]
container["ports"][0].update(hostIP="127.0.0.1", hostPort=port)
# podman 4.3 reads the seccomp profile only from the annotation that preceded the field.
profile = template["spec"]["securityContext"]["seccompProfile"]
assert profile["type"] == "Localhost", profile
annotations = template["metadata"].setdefault("annotations", {})
annotations["seccomp.security.alpha.kubernetes.io/pod"] = "localhost/" + profile["localhostProfile"]
with open(os.path.join(work, "deployment.yaml"), "w") as f:
    yaml.safe_dump(deployment, f)
with open(os.path.join(work, "readiness"), "w") as f:
    f.write(shlex.join(container["readinessProbe"]["exec"]["command"]))
PY

teardown() {
  "${podman[@]}" kube down "$work/deployment.yaml" >>"$work/down.log" 2>&1 || true
  podman pod rm -f sbx-pod-0 >>"$work/down.log" 2>&1 || true
  podman volume rm -f state tmp sbx-token >>"$work/down.log" 2>&1 || true
  podman secret rm sbx-token >/dev/null 2>&1 || true
  grep -qx podman-default-kube-network "$work/before" ||
    podman network rm -f podman-default-kube-network >/dev/null 2>&1 || true
}
finish() {
  local status=$?
  ((status == 0)) || check "the script ran to its end" 1 "stopped with exit $status"
  teardown
  state >"$work/after"
  if diff "$work/before" "$work/after" >"$work/left"; then
    check "teardown: no pod, container, volume, secret, network or netns left" 0
  else
    check "teardown: no pod, container, volume, secret, network or netns left" 1 \
      "$(tr '\n' ' ' <"$work/left")"
    sed 's/^/  down: /' "$work/down.log"
  fi
  umount /etc/subuid /etc/subgid
  rm -rf "$work"
  echo "$passed passed, $failed failed"
  ((failed == 0)) || exit 1
}
trap finish EXIT

start=$SECONDS
"${podman[@]}" kube play "$work/secret.yaml" >"$work/play.log" 2>&1
# Created, not started: podman 4.3 ignores the secret volume's defaultMode (0644: sbx serve
# refuses a token others may read) and leaves its files to the host's root, whom the pod's
# user namespace does not map. The kubelet gives a user-namespaced pod's secret files the
# pod's root and the mode asked for; so does this script, before the start.
"${podman[@]}" kube play --start=false --seccomp-profile-root "$work/seccomp" \
  "$work/deployment.yaml" >>"$work/play.log" 2>&1 || true
pods=$(podman pod ps --format '{{.Name}}' --filter name=sbx-pod | sort)
echo "pods: $(tr '\n' ' ' <<<"$pods")" >>"$work/play.log"
pod=$(sed -n 1p <<<"$pods")
container=$pod-sbx
expect "podman kube play deployment.yaml creates the pod" \
  "$(grep -m1 -i error "$work/play.log" || true)" podman container exists "$container"
pod_root=$(podman container inspect --format '{{json .HostConfig.IDMappings}}' "$container" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["UidMap"][0].split(":")[1])')
token_file=$(podman volume inspect --format '{{.Mountpoint}}' sbx-token)/token
# podman 4.3 also writes the Secret's data undecoded (the base64 text); the kubelet writes the
# decoded bytes, the token.
expect "the secret volume holds the Secret's data (podman 4.3: base64, undecoded)" "" \
  cmp -s <(base64 -d "$token_file") "$work/token"
cp "$work/token" "$token_file"
chown "$pod_root:$pod_root" "$token_file"
chmod 0400 "$token_file"
# Without systemd podman cannot schedule the liveness probe's timer and says so; the probe is
# run on demand below.
status=0
"${podman[@]}" pod start "$pod" >>"$work/play.log" 2>&1 ||
  grep -q 'systemd connection' "$work/play.log" || status=$?
check "the pod starts" "$status"

# Ready when the liveness probe (podman's health check) passes; podman runs it on demand here
# (its timer needs systemd). A server that cannot start a sandbox never passes.
healthy=1
for _ in $(seq 60); do
  if podman healthcheck run "$container" >/dev/null 2>&1; then healthy=0; break; fi
  sleep 1
done
check "liveness probe (/v1/health with the token) passes" "$healthy" "after $((SECONDS - start)) s"
if ((healthy != 0)); then
  podman logs --tail 5 "$container" 2>&1 | sed 's/^/  log: /'
  exit 1
fi
status=0
eval "podman exec \"\$container\" $(cat "$work/readiness")" || status=$?
check "readiness probe ($(cat "$work/readiness")) passes" "$status"

# The pod's fields, seen from inside the container.
inside=$(podman exec "$container" /bin/sh -c 'cat /proc/self/uid_map; grep CapEff /proc/self/status
  grep -c " /proc/" /proc/self/mountinfo; busybox stat -L -c %a /var/run/secrets/sbx/token
  busybox touch /probe 2>&1
  sbx run --allow-degraded cgroup -- /bin/true 2>&1 && echo sandbox-ran' || true)
read -r _ host_id count < <(sed -n 1p <<<"$inside")

expect "hostUsers: false: container root is uid $host_id on the host ($count ids)" "" \
  test "$host_id" != 0
expect "capabilities: only SETUID, SETGID, CHOWN and DAC_OVERRIDE" \
  "$(grep CapEff <<<"$inside" | tr -s '\t ' ' ')" grep -q 'CapEff:.*00000000000000c3' <<<"$inside"
expect "/proc unmasked (no mounts over /proc paths)" "$(sed -n 3p <<<"$inside") mounts" \
  test "$(sed -n 3p <<<"$inside")" == 0
expect "token file mode 0400 (set above: podman 4.3 ignores defaultMode)" \
  "mode $(sed -n 4p <<<"$inside")" test "$(sed -n 4p <<<"$inside")" == 400
expect "readOnlyRootFilesystem" "" grep -q 'Read-only file system' <<<"$inside"
# A sandbox names its own uts namespace: podman's default profile denies sethostname.
expect "seccomp: the Localhost profile sbx.json (sbx run in the pod sets its sandbox's hostname)" \
  "$(grep -m1 'sbx' <<<"$inside" | cut -c1-200)" grep -q '^sandbox-ran' <<<"$inside"

status=0
PYTHONPATH=$root/python python3 "$root/tools/container/kube_client_check.py" \
  "http://127.0.0.1:$port" "$work/token" "$pod" >"$work/client.log" 2>&1 || status=$?
sed 's/^/  /' "$work/client.log"
check "Python client through 127.0.0.1:$port" "$status"
