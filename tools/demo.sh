#!/bin/bash
# The main job: the seed case study. An agent gets an hourly energy export for one building
# (tools/demo/make_energy_data.py: daily and weekly patterns, temperature dependence, noise and
# planted abnormal events, from a seed) and the task in tools/demo/task.md; it inspects the
# data, writes and runs Python in a sandboxed session (policies/default.json: no network, 512M
# memory, 256 pids, 1 CPU, 60 s per execution), and leaves output/anomalies.csv,
# output/energy_anomalies.png, output/anomaly_report.md and transcript.jsonl in
# ./sbx-demo-output/ (or the directory given as $1).
#
# The model: an OpenAI-compatible server when OPENAI_API_KEY or OPENAI_BASE_URL is set (and
# SBX_MODEL names the model); otherwise a SCRIPTED model (tools/demo/scripted_model.json) that
# replays the tool calls a capable model makes for this task, labelled as such: its code runs
# for real in the sandbox on the generated data, but no LLM is called. SBX_DEMO_MODEL=scripted
# forces it; SBX_DEMO_SEED picks another dataset.
#
# It builds only what it runs: sbx and sbx-agent (no sbx-netd: the default policy has no network;
# the model is called from sbx-agent, outside the sandbox), not the test suite. SBX_BUILD_DIR
# picks another build directory, as for tools/build.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$PWD/sbx-demo-output}
build=${SBX_BUILD_DIR:-$root/build}

"$root/tools/setup.sh"
SBX_BUILD_DIR=$build SBX_BUILD_TARGET="sbx sbx-agent" "$root/tools/build.sh"
"$build/sbx" image path >/dev/null 2>&1 || "$build/sbx" image build

input=$(mktemp -d /var/tmp/sbx-demo-XXXXXX)
trap 'rm -rf "$input"' EXIT
/usr/bin/python3 "$root/tools/demo/make_energy_data.py" "$input/energy.csv" --seed "${SBX_DEMO_SEED:-7}"

model=(--scripted-model "$root/tools/demo/scripted_model.json")
if [[ ${SBX_DEMO_MODEL:-} != scripted && ( -n ${OPENAI_API_KEY:-} || -n ${OPENAI_BASE_URL:-} ) ]]; then
  model=()
  echo "== model: ${SBX_MODEL:-gpt-4o-mini} at ${OPENAI_BASE_URL:-https://api.openai.com/v1}"
fi
mkdir -p "$out"
"$build/sbx" agent "${model[@]}" --policy "$root/policies/default.json" \
  --task-file "$root/tools/demo/task.md" --input "$input/energy.csv:input/energy.csv" \
  --expect output/anomalies.csv --expect output/energy_anomalies.png \
  --expect output/anomaly_report.md --out-dir "$out"
echo "== the three artifacts:"
echo "   $out/output/anomalies.csv"
echo "   $out/output/energy_anomalies.png"
echo "   $out/output/anomaly_report.md"
echo "   (and the transcript: $out/transcript.jsonl)"
