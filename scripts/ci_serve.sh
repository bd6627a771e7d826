#!/usr/bin/env bash
# The OpenAI agent against a real OpenAI-compatible server (issue 42): builds .ci-venv-serve fresh
# (torch pinned first so pip takes the CPU build, then .[dev,serve]: transformers serve), then runs
# tests/test_openai_real_server.py, which starts `transformers serve` on a tiny random Qwen3-VL
# built offline and checks that every episode of `m3gym eval --agent openai` is scored.
# Run from the repository root. Prints the install and test times.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.ci-venv-serve
PY=${PYTHON:-python3}
start=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q torch==2.13.0 -e ".[dev,serve]"
installed=$(date +%s)
echo "ci_serve: install took $((installed - start)) s"
M3GYM_REQUIRE_EXTRA=serve M3GYM_REAL_SERVER=1 "$VENV/bin/python" -m pytest -p no:randomly -q \
    -o addopts="" tests/test_openai_real_server.py
done_at=$(date +%s)
echo "ci_serve: tests took $((done_at - installed)) s"
