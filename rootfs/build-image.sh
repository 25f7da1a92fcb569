#!/bin/bash
# Builds the sbx Python image (a Debian root directory, from recipe.conf) into the image cache,
# atomically and under a lock. `sbx image build` runs this; it also works on its own.
#
# Usage: build-image.sh [--force] [--cache-dir DIR] [--name NAME --add PKG...]
#   DIR defaults to /var/cache/sbx/images as root, $XDG_CACHE_HOME/sbx/images otherwise.
#   --name NAME --add PKG...: a variant, the recipe plus Debian packages, pointed at by
#   DIR/name-NAME; the default pointer is left alone.
#   SBX_MIRROR overrides the mirror (default: apt's own debian.sources, as the notes advise).
#
# Cache layout:
#   DIR/<id>/             the root; <id> hashes the recipe files and the installed versions
#   DIR/<id>.json         metadata: recipe id, package versions, size, files, build seconds
#   DIR/recipe-<rid>      symlink to the image last built from recipe id <rid> (cache lookup)
#   DIR/default           symlink to the image of the current recipe
#   DIR/name-<NAME>       symlink to the variant built with --name NAME
#   DIR/.lock             flock held for the whole build; DIR/.build-*: in-progress builds
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
recipe=$here/recipe.conf
force=0
cache=
name=
added=()

die() { echo "build-image: error: $*" >&2; exit 1; }

while (($#)); do
  case $1 in
    --force) force=1 ;;
    --cache-dir) cache=${2:?--cache-dir needs a directory}; shift ;;
    --name) name=${2:?--name needs a name}; shift ;;
    --add) added+=("${2:?--add needs a Debian package name}"); shift ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (usage: build-image.sh [--force] [--cache-dir DIR] [--name NAME --add PKG...])" ;;
  esac
  shift
done

# The same rules as sandbox/image/image.cc: a name is never all hex digits, so it cannot be read as
# an image id, and `default` is the default image's pointer.
if [[ -n $name || ${#added[@]} -gt 0 ]]; then
  [[ -n $name ]] || die "--add: a variant needs --name NAME"
  ((${#added[@]})) || die "--name $name: give the packages to add with --add PKG"
  [[ $name =~ ^[a-z][a-z0-9-]{0,31}$ && ! $name =~ ^[0-9a-f]+$ && $name != default ]] ||
    die "--name '$name': use 1-32 of a-z, 0-9 and -, starting with a letter, not all hex digits, not 'default'"
  for pkg in "${added[@]}"; do
    [[ $pkg =~ ^[a-z0-9][a-z0-9+.-]+$ ]] ||
      die "--add '$pkg': not a Debian package name (lower case letters, digits, + - .)"
  done
  mapfile -t added < <(printf '%s\n' "${added[@]}" | LC_ALL=C sort -u)
  pointer=name-$name
else
  pointer=default
fi

if [[ -z $cache ]]; then
  if ((EUID == 0)); then
    cache=/var/cache/sbx/images
  elif [[ ${XDG_CACHE_HOME:-} == /* ]]; then
    cache=$XDG_CACHE_HOME/sbx/images
  else
    cache=${HOME:?neither XDG_CACHE_HOME nor HOME is set}/.cache/sbx/images
  fi
fi

start=$SECONDS
step() { printf '[%4ds] %s\n' $((SECONDS - start)) "$*"; }

for tool in mmdebstrap dpkg-deb dpkg-query flock sha256sum; do
  command -v "$tool" >/dev/null ||
    die "$tool not found; install it with: apt-get install -y --no-install-recommends mmdebstrap"
done

# One line per package apt could not get, with the mirror's answer, from mmdebstrap's log:
#   E: Failed to fetch http://MIRROR/pool/main/p/pkg/pkg_1.0_amd64.deb  404  Not Found [IP: ...]
report_fetch_errors() {
  awk '/^E: Failed to fetch / {
         url = $5; what = url; sub(/.*\//, "", what); sub(/_.*/, "", what)
         what = (url ~ /\/dists\//) ? "the package index" : "package " what
         $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, "")
         print "build-image: download failed: " what " from " url ": " $0; next }
       /^E: (Unable to locate package|Package .* has no installation candidate)/ {
         print "build-image: " substr($0, 4) }' "$1" | sort -u
}

recipe_all() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$recipe"; }
recipe_get() { recipe_all "$1" | head -n1; }

suite=$(recipe_get suite)
variant=$(recipe_get variant)
arch=$(dpkg --print-architecture)
[[ -n $suite && -n $variant ]] || die "$recipe: needs 'suite' and 'variant' lines"
# Root mode mounts /proc, /sys and the stub .debs inside the target and does not always
# unmount them when it fails or is killed; a private mount namespace drops them with the
# process. Unshare mode makes its own namespace.
if ((EUID == 0)); then
  mode=root
  in_namespace=(unshare --mount --propagation private)
else
  mode=unshare
  in_namespace=()
fi
if [[ -n ${SBX_MIRROR:-} ]]; then
  mirror=$SBX_MIRROR
elif [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  mirror=/etc/apt/sources.list.d/debian.sources
else
  mirror=http://deb.debian.org/debian
fi

# The recipe files are what decides the image, apart from the mirror's package versions.
recipe_files=("$recipe" "$here/build-image.sh" "$here/customize.sh" "$here/session_driver.py" "$here/zygote.py"
  "$here/zygote_prefault.py")
# A variant's added packages are part of its recipe, so it is cached by what it holds; the
# default recipe adds nothing to the hash.
added_lines=$(for pkg in "${added[@]}"; do echo "add $pkg"; done)
recipe_id=$({ cat "${recipe_files[@]}"; echo "$arch"; [[ -z $added_lines ]] || echo "$added_lines"; } |
  sha256sum | cut -c1-12)

mkdir -p "$cache"
exec 9>>"$cache/.lock"
if ! flock -n 9; then
  step "waiting for another build to finish (lock $cache/.lock)"
  flock 9
fi

# Under the lock no other build is running, so any leftover temp dir is from a killed build.
# --one-file-system: a root-mode build killed with SIGKILL can leave /proc or /sys mounted.
for stale in "$cache"/.build-* "$cache"/.trash-*; do
  [[ -e $stale ]] || continue
  step "removing leftover $stale"
  # Builds by older versions of this script could leave bind mounts behind; deepest first.
  awk -v dir="$stale/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r mnt; do umount -l "$mnt"; done
  rm -rf --one-file-system "$stale"
done

if ((!force)) && [[ -L $cache/recipe-$recipe_id ]]; then
  id=$(readlink "$cache/recipe-$recipe_id")
  if [[ -f $cache/$id/.sbx-image.json && -f $cache/$id.json ]]; then
    ln -sfn "$id" "$cache/.$pointer.new" && mv -T "$cache/.$pointer.new" "$cache/$pointer"
    step "image $id is up to date (recipe $recipe_id): $cache/$id"
    exit 0
  fi
fi

tmp=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf --one-file-system "$tmp"' EXIT
chmod 0755 "$tmp"
step "building recipe $recipe_id: $suite/$arch, variant $variant, mode $mode, mirror $mirror"

step "making stub packages: $(recipe_all stub | tr '\n' ' ')"
args=()
while read -r pkg; do
  [[ -n $pkg ]] || continue
  mkdir -p "$tmp/stubs/$pkg/DEBIAN"
  printf '%s\n' "Package: $pkg" 'Version: 99:0-stub' 'Architecture: all' \
    'Maintainer: sbx <root@localhost>' 'Description: empty stand-in, not needed at run time' \
    >"$tmp/stubs/$pkg/DEBIAN/control"
  SOURCE_DATE_EPOCH=0 dpkg-deb --root-owner-group --build "$tmp/stubs/$pkg" \
    "$tmp/stubs/${pkg}_stub_all.deb" >/dev/null
  args+=("--include=$tmp/stubs/${pkg}_stub_all.deb")
done < <(recipe_all stub)
chmod -R a+rX "$tmp/stubs"  # unshare mode reads them as a mapped user

args+=("--include=$(recipe_all package | cat - <(printf '%s\n' "${added[@]}") | grep . | paste -sd, -)")
while read -r filter; do
  args+=("--dpkgopt=$filter")
done < <(awk '$1 == "path-exclude" || $1 == "path-include" { print $1 "=" $2 }' "$recipe")
hook="$(printf '%q' "$here/customize.sh") \"\$1\" $(printf '%q' "$recipe") all"

step "running mmdebstrap (full log: $cache/build.log)"
log=$tmp/mmdebstrap.log
set +e
"${in_namespace[@]}" mmdebstrap --variant="$variant" --mode="$mode" --architectures="$arch" \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  "${args[@]}" --customize-hook="$hook" \
  "$suite" "$tmp/root" "$mirror" 2>&1 |
  tee "$log" | while IFS= read -r line; do
    # mmdebstrap's own phase lines ("I: downloading packages with apt...") are the steps.
    case $line in
      "I: "*) step "${line#I: }" ;;
      "E: "* | "W: "*) echo "        $line" ;;
    esac
  done
rc=${PIPESTATUS[0]}
set -e
cp "$log" "$cache/build.log"
if ((rc != 0)); then
  echo "build-image: mmdebstrap failed (exit $rc); the end of its output:" >&2
  tail -n 25 "$log" | sed 's/^/  | /' >&2
  # Name the package and the mirror's answer when a download failed.
  report_fetch_errors "$log" >&2
  if ((${#added[@]})); then
    die "build of variant '$name' failed; check each --add package (${added[*]}) with \`apt-cache policy PKG\` against the mirror $mirror"
  fi
  die "build failed; the recipe is $recipe, the mirror $mirror"
fi

root=$tmp/root
step "normalising ownership and modes"
"$here/customize.sh" "$root" "$recipe" normalize

versions=$(dpkg-query --admindir="$root/var/lib/dpkg" -W | LC_ALL=C sort)
id=$({ cat "${recipe_files[@]}"; echo "$arch"; [[ -z $added_lines ]] || echo "$added_lines"; echo "$versions"; } |
  sha256sum | cut -c1-12)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '{"id": "%s", "recipe_id": "%s", "created": "%s"}\n' "$id" "$recipe_id" "$created" \
  >"$root/.sbx-image.json"
chmod 0644 "$root/.sbx-image.json"

step "measuring image $id"
size=$(du -sb "$root" | cut -f1)
files=$(find "$root" | wc -l)
seconds=$((SECONDS - start))
{
  printf '{\n  "id": "%s",\n  "recipe_id": "%s",\n  "suite": "%s",\n  "architecture": "%s",\n' \
    "$id" "$recipe_id" "$suite" "$arch"
  printf '  "mode": "%s",\n  "created": "%s",\n' "$mode" "$created"
  printf '  "build_seconds": %d,\n' "$seconds"
  printf '  "added_packages": [%s],\n' "$(for pkg in "${added[@]}"; do printf '"%s"\n' "$pkg"; done | paste -sd, -)"
  printf '  "size_bytes": %d,\n  "file_count": %d,\n  "packages": {\n' "$size" "$files"
  awk -F'\t' '{ printf "%s    \"%s\": \"%s\"", (NR > 1 ? ",\n" : ""), $1, $2 } END { print "" }' \
    <<<"$versions"
  printf '  }\n}\n'
} >"$tmp/meta.json"
chmod 0644 "$tmp/meta.json"

# Publish: the image dir appears complete or not at all; pointers are swapped with rename.
if [[ -e $cache/$id ]]; then
  mv -T "$cache/$id" "$tmp/old"
fi
mv -T "$root" "$cache/$id"
mv -T "$tmp/meta.json" "$cache/$id.json"
ln -sfn "$id" "$cache/.recipe.new" && mv -T "$cache/.recipe.new" "$cache/recipe-$recipe_id"
ln -sfn "$id" "$cache/.$pointer.new" && mv -T "$cache/.$pointer.new" "$cache/$pointer"
step "done: image $id, $(du -sh "$cache/$id" | cut -f1), $files files, built in ${seconds}s"
echo "$cache/$id"
