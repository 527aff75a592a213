#!/usr/bin/env bash
# Test oracles in their own virtual environment: pywb (replay), cdxj-indexer (reference CDX/CDXJ)
# and surt. They are AGPL/GPL and pywb pins old redis/cryptography: they must never be installed
# beside the platform, and runtime code never imports them. Idempotent.
#
# Below Python 3.12 the venv holds no setuptools: its distutils hook (setuptools 65, put there by
# venv) made each pywb start import all of setuptools for redis 2.10.6's distutils.version and
# pkg_resources for Py3AMF, ~0.4 CPU-s per start and ~50 starts per test run (the reasons in
# access/setup-replay.sh). From 3.12 pywb requires setuptools and pip keeps it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="${ORACLE_VENV:-$here/.oracle-venv}"
py="${PYTHON:-python3}"
# up to date: the tools there, no setuptools below Python 3.12 (one interpreter start)
if [ -x "$venv/bin/cdxj-indexer" ] && [ -x "$venv/bin/wayback" ] && "$venv/bin/python" -c '
import importlib.util as u, sys
import surt, pywb  # noqa: F401
sys.exit(sys.version_info < (3, 12) and u.find_spec("setuptools") is not None)' 2>/dev/null; then
  exit 0
fi
# shellcheck source=access/venv-install.sh
. "$here/access/venv-install.sh"
venv_install "$venv" "$py" "pywb>=2.8" "cdxj-indexer>=1.4" "surt>=0.3" "warcio>=1.7.4"
echo "oracles ready in $venv"
