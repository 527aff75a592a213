#!/usr/bin/env bash
# The replay service's own virtual environment (.replay-venv): pywb, GPL-3.0, run by
# `harvestflow access serve` as a separate program and never imported by the platform. It pins
# old redis/cryptography that must not reach the platform's .venv. Idempotent: does nothing when
# pywb's `wayback` and the current codings hook (access/replay_codecs.py: zstd and stacked
# content codings decoded in replay, loaded by a .pth file) are already there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="${REPLAY_VENV:-$here/.replay-venv}"
py="${PYTHON:-python3}"
hook="$here/access/replay_codecs.py"
site() { "$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"; }
if [ -x "$venv/bin/wayback" ] && "$venv/bin/python" -c "import pywb, backports.zstd" 2>/dev/null \
  && cmp -s "$hook" "$(site)/hf_replay_codecs.py"; then
  exit 0
fi
if ! [ -x "$venv/bin/wayback" ]; then
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
fi
"$venv/bin/pip" install -q "pywb>=2.8,<3" "backports.zstd>=1.0"
cp "$hook" "$(site)/hf_replay_codecs.py"
echo "import hf_replay_codecs" > "$(site)/hf_replay_codecs.pth"
echo "replay service (pywb) ready in $venv"
