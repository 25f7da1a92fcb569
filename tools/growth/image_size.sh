#!/bin/bash
# Start-up against image size: `sbx run -- python3 -c pass` (and /bin/true) on copies of the
# default image that carry more files, alternating round by round in one sbx_bench run, beside
# the bare run.
#
#   tools/growth/image_size.sh [--files "0 100000 1000000"] [--rounds 20] [--dir DIR]
#
# Each copy is hard-linked from the default image (`cp -al`: no file data is copied) and gets
# its extra empty files in directories of 1,000 under /usr/lib/python3/dist-packages, where
# installed packages land and which Python's start-up lists (site.py looks for .pth files).
# The copies live under DIR (default /var/cache/sbx-growth, root-owned like the image cache)
# and are removed at the end. Needs root, build/sbx and build/sbx_bench.
set -euo pipefail

files_list="0 100000 1000000"
rounds=20
dir=/var/cache/sbx-growth
while [[ $# -gt 0 ]]; do
  case "$1" in
    --files) files_list="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "image_size.sh: unknown flag $1 (--files, --rounds, --dir)" >&2; exit 125 ;;
  esac
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
sbx="$repo/build/sbx"
bench="$repo/build/sbx_bench"
for tool in "$sbx" "$bench"; do
  [[ -x "$tool" ]] || { echo "image_size.sh: $tool is missing; run tools/build.sh first" >&2; exit 125; }
done
image="$("$sbx" image path)"

install -d -m 0755 -o root -g root "$dir"
work="$(mktemp -d "$dir/run-XXXXXX")"
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT

configs=()
for count in $files_list; do
  # An image directory is named by the id its marker holds, so each copy keeps the name.
  install -d -m 0755 "$work/files-$count"
  copy="$work/files-$count/$(basename "$image")"
  cp -al "$image" "$copy"
  # Python writes the directories in bulk: a shell loop would take minutes for a million files.
  python3 - "$copy/usr/lib/python3/dist-packages" "$count" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for start in range(0, count, 1000):
    package = os.path.join(root, "sbx_growth_%07d" % start)
    os.mkdir(package, 0o755)
    for i in range(start, min(start + 1000, count)):
        os.close(os.open(os.path.join(package, "m%07d.py" % i), os.O_WRONLY | os.O_CREAT, 0o644))
PY
  echo "image copy with $count extra files: $(find "$copy" -xdev | wc -l) entries" >&2
  configs+=(--config "files-$count={sbx} run --image $copy --")
done
names="bare"
for count in $files_list; do names+=",files-$count"; done

"$bench" --rounds "$rounds" --only true,pass --configs "$names" "${configs[@]}"
