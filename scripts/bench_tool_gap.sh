#!/usr/bin/env bash
# The with/without-tools table of docs/tool-necessity.md (TOOL-GAP-TABLE), the way the source
# benchmark reports its gap. Per family and level:
# - the strong reader of `m3gym audit-tools` (`--reader best`: PP-OCRv4 from the `audit` extra and
#   Tesseract, whichever are installed);
# - the heuristic agent with its tools, and with them masked (`use_tools=false`: it answers from
#   the initial view), on the frozen test split (the classic suite: its held-out seeds).
# Usage: bash scripts/bench_tool_gap.sh [episodes per level] [workers] [audit tasks per family]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-140}
W=${2:-2}
T=${3:-6}
OUT=runs/tool-gap
mkdir -p "$OUT"
m3gym audit-tools --tasks "$T" --reader best --report-only --json "$OUT/audit.json" \
  > "$OUT/audit.md"
for spec in "heuristic:" "heuristic-notools:--agent-arg use_tools=false"; do
  IFS=: read -r name extra <<<"$spec"
  rm -rf "$OUT/$name" "$OUT/$name-classic"
  # shellcheck disable=SC2086
  m3gym eval --env M3Bench-L1 --env M3Bench-L2 --env M3Bench-L3 --agent heuristic $extra \
    --episodes "$N" --split test --workers "$W" --out "$OUT/$name" --quiet
  # shellcheck disable=SC2086
  m3gym eval --env M3Bench-Classic --agent heuristic $extra --episodes "$N" --split test \
    --workers "$W" --out "$OUT/$name-classic" --quiet
done
python scripts/update_readme.py --only TOOL-GAP-TABLE
