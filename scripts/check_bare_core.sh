#!/usr/bin/env bash
# The core without extras: a fresh venv with `pip install .` and nothing else must import m3gym,
# make every level's env and play an oracle episode to the right answer (scripts/
# check_bare_core.py), without the eval extra's libraries installed or imported.
# Usage: scripts/check_bare_core.sh [VENV_DIR]   (default: a temporary folder, removed after)
# pip's own cache is reused, so after the first run it installs without downloading.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-}"
CLEAN=()
[ -e "$ROOT/build" ] || CLEAN+=("$ROOT/build")  # setuptools builds in the checkout's build/
if [ -z "$VENV" ]; then
  VENV=$(mktemp -d /tmp/m3gym-bare-core.XXXXXX)
  CLEAN+=("$VENV")
fi
trap 'rm -rf "${CLEAN[@]}"' EXIT
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "$ROOT"
cd "$VENV"  # not the checkout: python must import the installed package
"$VENV/bin/python" - <<'PY'
import importlib.util
import sys

present = [m for m in ("openai", "matplotlib", "rich", "jinja2") if importlib.util.find_spec(m)]
if present:
    sys.exit(f"bare core: the eval extra's {', '.join(present)} got installed by `pip install .`")
print("bare core: openai, matplotlib, rich, jinja2 not installed")
PY
M3GYM_CACHE="$VENV/m3gym-cache" "$VENV/bin/python" "$ROOT/scripts/check_bare_core.py"
