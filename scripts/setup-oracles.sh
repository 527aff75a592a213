#!/usr/bin/env bash
# Test oracles in their own virtual environment: pywb (replay), cdxj-indexer (reference CDX/CDXJ)
# and surt. They are AGPL/GPL and pywb pins old redis/cryptography: they must never be installed
# beside the platform, and runtime code never imports them. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="${ORACLE_VENV:-$here/.oracle-venv}"
py="${PYTHON:-python3}"
if [ -x "$venv/bin/cdxj-indexer" ] && [ -x "$venv/bin/wayback" ] && "$venv/bin/python" -c "import surt, pywb" 2>/dev/null; then
  exit 0
fi
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "pywb>=2.8" "cdxj-indexer>=1.4" "surt>=0.3" "warcio>=1.7.4"
echo "oracles ready in $venv"
