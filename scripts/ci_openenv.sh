#!/usr/bin/env bash
# The OpenEnv integration in its own venv (docs/openenv.md): openenv's own mcp pin conflicts with
# the mcp extra, so .[openenv] never shares a venv with .[mcp]. Builds .ci-venv-openenv fresh from
# the project's files, then runs tests/test_integration_openenv.py with the extra required (the
# test fails instead of skipping). Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.ci-venv-openenv
rm -rf "$VENV"
start=$(date +%s)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e ".[dev,openenv]"
installed=$(date +%s)
echo "ci_openenv: install $((installed - start)) s"
M3GYM_REQUIRE_EXTRA=openenv "$VENV/bin/python" -m pytest -p no:randomly -p no:cacheprovider \
    tests/test_integration_openenv.py
echo "ci_openenv: tests $(( $(date +%s) - installed )) s"
