#!/bin/bash
# The main job: the seed case study. An agent gets a CSV of daily sensor values and the task in
# tools/demo/task.md; it inspects the data, writes and runs Python in a sandboxed session
# (policies/default.json: no network, 512M memory, 256 pids, 1 CPU, 60 s per execution), and
# leaves output/chart.png, output/report.md and the transcript in ./sbx-demo-output/.
#
# The model: an OpenAI-compatible server when OPENAI_API_KEY or OPENAI_BASE_URL is set (and
# SBX_MODEL names the model); otherwise a SCRIPTED model (tools/demo/scripted_model.json) that
# replays the tool calls a model makes for this task, labelled as such: the code it sends is
# run for real in the sandbox, but no LLM is called. SBX_DEMO_MODEL=scripted forces it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$PWD/sbx-demo-output}

"$root/tools/setup.sh"
"$root/tools/build.sh"
"$root/build/sbx" image path >/dev/null 2>&1 || "$root/build/sbx" image build

input=$(mktemp -d /var/tmp/sbx-demo-XXXXXX)
trap 'rm -rf "$input"' EXIT
/usr/bin/python3 - "$input/sensor.csv" <<'PY'
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

model=(--scripted-model "$root/tools/demo/scripted_model.json")
if [[ ${SBX_DEMO_MODEL:-} != scripted && ( -n ${OPENAI_API_KEY:-} || -n ${OPENAI_BASE_URL:-} ) ]]; then
  model=()
  echo "== model: ${SBX_MODEL:-gpt-4o-mini} at ${OPENAI_BASE_URL:-https://api.openai.com/v1}"
fi
mkdir -p "$out"
"$root/build/sbx" agent "${model[@]}" --policy "$root/policies/default.json" \
  --task-file "$root/tools/demo/task.md" --input "$input/sensor.csv=input/sensor.csv" \
  --output output/chart.png --output output/report.md --out "$out"
echo "== outputs: $out/output/chart.png $out/output/report.md $out/transcript.jsonl"
