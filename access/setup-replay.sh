#!/usr/bin/env bash
# The replay service's own virtual environment (.replay-venv): pywb, GPL-3.0, run by
# `harvestflow access serve` as a separate program and never imported by the platform. It pins
# old redis/cryptography that must not reach the platform's .venv. Idempotent: does nothing when
# pywb's `wayback` is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="${REPLAY_VENV:-$here/.replay-venv}"
py="${PYTHON:-python3}"
if [ -x "$venv/bin/wayback" ] && "$venv/bin/python" -c "import pywb" 2>/dev/null; then
  exit 0
fi
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "pywb>=2.8,<3"
echo "replay service (pywb) ready in $venv"
