#!/usr/bin/env bash
# One optional stack in its own venv (their pins conflict: trl and verl pin different
# transformers ranges; verifiers and openenv pin mcp below the mcp extra's range).
# Usage: scripts/ci_extra.sh EXTRA TEST_FILE [REQUIREMENT ...]   (from anywhere)
# Builds .ci-venv-EXTRA fresh from the project's files (REQUIREMENTs first, e.g. torch==2.13.0 so
# pip takes the CPU build), runs TEST_FILE with M3GYM_REQUIRE_EXTRA=EXTRA (a missing library fails
# instead of skipping; other variables, e.g. M3GYM_REAL_SERVER=1, pass through) and prints the
# install and test times.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=$1 test_file=$2
shift 2
venv=".ci-venv-$extra"
t0=$SECONDS
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q --no-compile "$@" -e ".[dev,$extra]"  # no .pyc pass: faster
t1=$SECONDS
M3GYM_REQUIRE_EXTRA="$extra" "$venv/bin/python" -m pytest -p no:cacheprovider -p no:randomly \
  "$test_file"
echo "ci: .[$extra] block: install $((t1 - t0)) s, tests $((SECONDS - t1)) s"
