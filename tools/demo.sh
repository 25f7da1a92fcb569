#!/bin/bash
# The main job, today: the seed case study (CSV anomaly analysis with a chart and a report) run
# inside sbx's sandbox with the default policy: no network, 512M memory, 256 pids, 1 CPU, 60 s.
#
# NOTE: the agent loop (an LLM writing this analysis itself) is not built yet; until then this
# demo runs a fixed analysis script, tools/demo/analyse.py, as the code an agent would write.
# Outputs land in ./sbx-demo-output/ (chart.png, report.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$PWD/sbx-demo-output}

"$root/tools/setup.sh"
"$root/tools/build.sh"
"$root/build/sbx" image path >/dev/null 2>&1 || "$root/build/sbx" image build

workspace=$(mktemp -d /var/tmp/sbx-demo-XXXXXX)
trap 'rm -rf "$workspace"' EXIT
mkdir -p "$workspace/input" "$workspace/output"
/usr/bin/python3 - "$workspace/input/sensor.csv" <<'PY'
import sys, random, datetime
random.seed(7)
start = datetime.date(2026, 1, 1)
with open(sys.argv[1], "w") as f:
    f.write("day,value\n")
    for i in range(180):
        value = 20 + 0.03 * i + random.gauss(0, 1)
        if i in (41, 97, 150):
            value += random.choice((-1, 1)) * 9
        f.write(f"{start + datetime.timedelta(days=i)},{value:.2f}\n")
PY
cp "$root/tools/demo/analyse.py" "$workspace/"
# The sandbox user must own its workspace (as root it maps to an unprivileged host id).
if ((EUID == 0)); then chown -R 2000001000:2000001000 "$workspace"; fi

echo "== running the analysis in the sandbox (policies/default.json)"
"$root/build/sbx" run --policy "$root/policies/default.json" --workspace "$workspace" \
  -- /usr/bin/python3 analyse.py
mkdir -p "$out"
# The sandbox is gone by now; still, only regular files come back, never a symlink it left.
for file in chart.png report.md; do
  src=$workspace/output/$file
  if [[ -L $src || ! -f $src ]]; then echo "demo: $file is not a regular file; not copied" >&2; exit 1; fi
  cp --no-dereference "$src" "$out/$file"
done
echo "== outputs: $out/chart.png $out/report.md"
