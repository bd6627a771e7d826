#!/usr/bin/env bash
# Mutation testing of the scoring, reward and tool code with mutmut (slow: not part of CI).
#
#   scripts/mutation.sh GROUP [GROUP ...]      groups: answer m3 overthink safety episode taxonomy
#                                               checkpoints legibility alignment similarity reward
#                                               tools-geometric tools-photometric tools-web
#                                               tools-answer tools-registry
#   MUTATION_VENV=/path/to/venv  (default /work/venv-tests; needs `pip install -e ".[dev]" mutmut`)
#   MUTATION_DIR=/tmp/m3gym-mutation (scratch copies, one per group; the worktree stays clean)
#   MUTATION_JOBS=1 (parallel mutant workers)
#
# Each group mutates one module and runs only the tests that exercise it. The kill summary of a
# group is written to $MUTATION_DIR/GROUP/summary.txt and the survivors to survivors.txt
# (`cd $MUTATION_DIR/GROUP && mutmut show NAME` prints a survivor's diff).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${MUTATION_VENV:-/work/venv-tests}"
WORK="${MUTATION_DIR:-/tmp/m3gym-mutation}"
JOBS="${MUTATION_JOBS:-1}"

group_config() {  # prints "<module> <test files...>"
  case "$1" in
    answer) echo "m3gym/scoring/answer.py tests/scoring/test_answer.py" ;;
    m3) echo "m3gym/scoring/m3.py tests/scoring/test_m3.py" ;;
    overthink) echo "m3gym/scoring/overthink.py tests/scoring/test_m3.py" ;;
    safety) echo "m3gym/scoring/safety.py tests/scoring/test_safety.py" ;;
    taxonomy) echo "m3gym/scoring/taxonomy.py tests/scoring/test_taxonomy.py" ;;
    episode) echo "m3gym/scoring/episode_score.py tests/scoring/test_episode_score.py" ;;
    checkpoints) echo "m3gym/scoring/checkpoint_tracker.py tests/scoring/test_checkpoints.py" ;;
    legibility) echo "m3gym/scoring/legibility.py tests/scoring/test_checkpoints.py" ;;
    alignment) echo "m3gym/scoring/alignment.py tests/scoring/test_alignment.py tests/scoring/test_similarity.py tests/scoring/test_m3.py" ;;
    similarity) echo "m3gym/scoring/similarity.py tests/scoring/test_alignment.py tests/scoring/test_similarity.py" ;;
    reward) echo "m3gym/reward.py tests/test_reward_terms.py" ;;
    tools-geometric) echo "m3gym/tools/geometric.py tests/tools/test_visual.py" ;;
    tools-photometric) echo "m3gym/tools/photometric.py tests/tools/test_visual.py" ;;
    tools-web) echo "m3gym/tools/web.py tests/test_web.py tests/tools/test_web.py" ;;
    tools-answer) echo "m3gym/tools/answer.py tests/test_env.py" ;;
    tools-registry) echo "m3gym/tools/registry.py tests/test_env.py tests/tools/test_visual.py" ;;
    tools-base) echo "m3gym/tools/base.py tests/tools/test_visual.py tests/test_web.py" ;;
    *) echo "unknown group $1" >&2; return 1 ;;
  esac
}

[ $# -ge 1 ] || { sed -n 2,14p "$0"; exit 2; }
for group in "$@"; do
  read -r module tests <<<"$(group_config "$group")"
  dir="$WORK/$group"
  rm -rf "$dir" && mkdir -p "$dir"
  cp -r "$ROOT/m3gym" "$ROOT/tests" "$dir/"
  find "$dir" -name __pycache__ -prune -exec rm -rf {} +
  # the project's pytest settings, then this group's mutmut section
  sed -n '/^\[tool.pytest.ini_options\]/,/^$/p' "$ROOT/pyproject.toml" > "$dir/pyproject.toml"
  test_list=$(printf '"%s", ' $tests)
  cat >> "$dir/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = ["m3gym"]
only_mutate = ["$module"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist"]
# forked from a server that ran no test: an lru_cache warmed by the unmutated code would hide
# mutants (normalize_answer is cached)
process_isolation = "forkserver"
pytest_add_cli_args_test_selection = [${test_list%, }]
TOML
  echo "== $group: $module against $tests ($(date -u +%H:%M:%S))"
  (cd "$dir" && "$VENV/bin/mutmut" run --max-children "$JOBS" > run.log 2>&1) || echo "   mutmut exited $?"
  (cd "$dir" && "$VENV/bin/mutmut" results --all true > results.txt 2>&1) || true
  python3 - "$dir" "$group" <<'PY'
import collections, pathlib, sys
d, group = pathlib.Path(sys.argv[1]), sys.argv[2]
status = collections.Counter()
survivors = []
for line in (d / "results.txt").read_text().splitlines():
    if ": " not in line:
        continue
    name, st = line.strip().rsplit(": ", 1)
    status[st] += 1
    if st in ("survived", "no tests", "timeout", "suspicious"):
        survivors.append(f"{name}: {st}")
total = sum(status.values())
killed = status["killed"]
summary = (f"{group}: {killed}/{total} killed ({100 * killed / max(1, total):.1f} %); "
           + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
(d / "summary.txt").write_text(summary + "\n")
(d / "survivors.txt").write_text("\n".join(survivors) + "\n")
print("   " + summary)
PY
done
