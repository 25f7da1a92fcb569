#!/bin/bash
# Builds the container image `sbx-test` offline: busybox-static, build/sbx, build/sbx-netd and
# the shared libraries they load, imported into podman from a tar stream (no registry pulls).
# The Python image is not copied in: tools/container/matrix.sh binds /var/cache/sbx/images
# read-only, as an operator would mount a volume. $SBX_BUILD_DIR picks the build (default build/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${SBX_BUILD_DIR:-$root/build}
name=${SBX_CONTAINER_IMAGE:-sbx-test}

for binary in "$build/sbx" "$build/sbx-netd" /bin/busybox; do
  [[ -x $binary ]] || { echo "build.sh: $binary is missing (tools/build.sh; busybox-static)" >&2; exit 1; }
done
command -v podman >/dev/null || { echo "build.sh: podman is missing (apt-get install podman runc)" >&2; exit 1; }

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
# A minimal root on purpose: no /tmp, /run or /var/tmp, as in the slimmest CI images.
mkdir -p "$rootfs"/{bin,usr/local/bin,etc,proc,sys,dev,root,var/cache/sbx/images}
cp /bin/busybox "$rootfs/bin/busybox"
# tail: a GitHub Actions job container's entrypoint is `tail -f /dev/null` (deploy/ci/).
for applet in sh ls cat mkdir id true echo grep mount tail; do ln -s busybox "$rootfs/bin/$applet"; done
cp "$build/sbx" "$build/sbx-netd" "$rootfs/usr/local/bin/"
# Shared libraries by the paths the dynamic loader was linked with.
for lib in $(ldd "$build/sbx" "$build/sbx-netd" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"

podman rmi -f "$name" >/dev/null 2>&1 || true
tar -C "$rootfs" -c . | podman import --change 'ENV PATH=/usr/local/bin:/bin' - "$name" \
  >"$rootfs.log" 2>&1 || { cat "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
echo "built $name"
