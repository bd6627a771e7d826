#!/usr/bin/env bash
# The agent benchmark of docs/benchmarks.md: 200 frozen test-split episodes per level for each
# agent, then the generated tables (scripts/update_readme.py). Usage: bash scripts/bench_readme.sh [episodes] [workers]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
W=${2:-2}
ENVS="--env M3Bench-L1 --env M3Bench-L2 --env M3Bench-L3"
mkdir -p runs/readme
for spec in "oracle:oracle:" "random:random:" "heuristic:heuristic:" \
            "heuristic-notools:heuristic:--agent-arg use_tools=false"; do
  IFS=: read -r name agent extra <<<"$spec"
  rm -rf "runs/readme/$name"
  # shellcheck disable=SC2086
  m3gym eval $ENVS --agent "$agent" $extra --episodes "$N" --split test --workers "$W" \
    --out "runs/readme/$name" --quiet
done
python scripts/update_readme.py
