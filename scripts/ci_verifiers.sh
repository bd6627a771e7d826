#!/usr/bin/env bash
# The verifiers integration in its own venv (docs/verifiers.md): verifiers pins mcp==2.0.0, which
# the mcp extra excludes, so .[verifiers] never shares a venv with .[mcp]. Builds
# .ci-venv-verifiers fresh from the project's files, then runs tests/test_integration_verifiers.py
# with the extra required (the test fails instead of skipping). Run from the repository root.
# Needs PyPI: the install, and verifiers' harness builds its chat program's uv environment on
# first use (cached under ~/.cache/uv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.ci-venv-verifiers
rm -rf "$VENV"
start=$(date +%s)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e ".[dev,verifiers]"
installed=$(date +%s)
echo "ci_verifiers: install $((installed - start)) s"
M3GYM_REQUIRE_EXTRA=verifiers "$VENV/bin/python" -m pytest -p no:randomly -p no:cacheprovider \
    tests/test_integration_verifiers.py
echo "ci_verifiers: tests $(( $(date +%s) - installed )) s"
