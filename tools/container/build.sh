#!/bin/bash
# Builds the container image `sbx-test` offline: busybox-static, build/sbx, build/sbx-netd,
# build/libsbx_session_setup.so, build/sbx-serve when built, the pods' probe (sbx-probe.sh)
# and the shared libraries they load, imported into podman from a tar stream (no registry
# pulls). Without --with-images the Python image is not copied in: tools/container/matrix.sh
# binds /var/cache/sbx/images read-only, as an operator would mount a volume. With
# --with-images the default Python image is copied in, so the container is self-contained as
# a Kubernetes pod's must be (deploy/kubernetes/). $SBX_BUILD_DIR picks the build (default
# build/), $SBX_CONTAINER_IMAGE the name, $SBX_CONTAINER_LABEL an optional `sbx.content` label
# (tools/container/kube_play.sh uses it to rebuild only on a change).
# Usage: build.sh [--with-images]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
name=${SBX_CONTAINER_IMAGE:-sbx-test}
images=/var/cache/sbx/images
with_images=0
[[ ${1:-} == --with-images ]] && with_images=1
# The pooled sessions' library goes next to sbx, where the launcher looks for it.
programs=("$build/sbx" "$build/sbx-netd" "$build/libsbx_session_setup.so")
[[ -x $build/sbx-serve ]] && programs+=("$build/sbx-serve")

if ((with_images)); then
  [[ -e $images/default ]] ||
    { echo "build.sh: $images/default is missing (build/sbx image build)" >&2; exit 1; }
  [[ -x $build/sbx-serve ]] ||
    { echo "build.sh: $build/sbx-serve is missing (tools/build.sh)" >&2; exit 1; }
fi
for binary in "${programs[@]}" /bin/busybox; do
  [[ -x $binary ]] || { echo "build.sh: $binary is missing (tools/build.sh; busybox-static)" >&2; exit 1; }
done
command -v podman >/dev/null || { echo "build.sh: podman is missing (apt-get install podman runc)" >&2; exit 1; }

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
# A minimal root on purpose: no /tmp, /run or /var/tmp, as in the slimmest CI images.
mkdir -p "$rootfs"/{bin,usr/local/bin,etc,proc,sys,dev,root,var/cache/sbx/images}
cp /bin/busybox "$rootfs/bin/busybox"
# tail: a GitHub Actions job container's entrypoint is `tail -f /dev/null` (deploy/ci/); wget:
# the pods' probe (deploy/kubernetes/).
for applet in sh ls cat mkdir id true echo grep mount tail wget; do
  ln -s busybox "$rootfs/bin/$applet"
done
cp "${programs[@]}" "$rootfs/usr/local/bin/"
cp "$root/tools/container/sbx-probe.sh" "$rootfs/usr/local/bin/sbx-probe"
# Shared libraries by the paths the dynamic loader was linked with: ldd's indented lines, not
# the header it prints for each of several files (the session library's own name ends in .so).
for lib in $(ldd "${programs[@]}" | grep '^[[:space:]]' | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"

# The default image, its manifest and the `default` link, nothing else of the cache, streamed
# from the cache into the tar under the same path (no copy of its ~600 MB).
cache=()
if ((with_images)); then
  target=$(readlink "$images/default")
  cache=(-C "$images/.." --transform "s,^images/,${images#/}/,"
    "images/$target" "images/$target.json" images/default)
fi

podman rmi -f "$name" >/dev/null 2>&1 || true
changes=(--change 'ENV PATH=/usr/local/bin:/bin')
[[ -n ${SBX_CONTAINER_LABEL:-} ]] && changes+=(--change "LABEL sbx.content=$SBX_CONTAINER_LABEL")
tar -c -C "$rootfs" . "${cache[@]}" | podman import "${changes[@]}" - "$name" \
  >"$rootfs.log" 2>&1 || { cat "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
echo "built $name"
