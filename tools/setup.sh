#!/bin/bash
# Installs what sbx needs to build, test and run, from Debian's packages only. Idempotent and
# quiet when everything is already there. Both README commands run it first.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config libseccomp-dev libcap-dev nlohmann-json3-dev libgtest-dev
  libcurl4-openssl-dev libssl-dev libboost-dev
  # the image (rootfs/build-image.sh)
  mmdebstrap arch-test uidmap zstd
  # peers for the benchmark, and the cgroup v2 VM (tools/vm)
  bubblewrap qemu-system-x86 linux-image-amd64 busybox-static
  # the fuzz targets (tools/fuzz.sh): clang, and libFuzzer's runtime, which clang-14 does not pull in
  clang libclang-rt-14-dev
  # the network tests' small internet (tests/net): namespaces, veth, a test CA
  iproute2 openssl
  # the isolation suites inside a container (tools/container/isolation_suites.sh), the CI
  # recipes' YAML (tools/container/ci_recipes.sh) and the Kubernetes Deployment under podman
  # kube play (tools/container/kube_play.sh, which reads it with PyYAML too)
  podman runc catatonit python3-yaml
  # the host side of the differential tests (the same Python stack as the image)
  python3 python3-numpy python3-pandas python3-matplotlib python3-scipy python3-pytest
  # the Python package's offline install test (tests/python_suite.sh: a venv, pip from Debian)
  python3-venv
  # the Kubernetes manifests' schema validator runs on Node.js (tools/kubernetes/)
  nodejs
  # numpy's and pandas' own test suites import hypothesis (tests/library_suites.sh copies it
  # into the workspace for the sandbox side)
  python3-hypothesis python3-sortedcontainers
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

if ((EUID != 0)); then
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
