#!/usr/bin/env bash
# The replay service's own virtual environment (.replay-venv): pywb, GPL-3.0, run by
# `harvestflow access serve` as a separate program and never imported by the platform. It pins
# old redis/cryptography that must not reach the platform's .venv. Idempotent: does nothing when
# pywb's `wayback` and the current codings hook (access/replay_codecs.py: zstd and stacked
# content codings decoded in replay, loaded by a .pth file) are already there.
#
# Start-up cost (pywb starts ~50 times per test run, and at every `access serve`): below Python
# 3.12 the venv holds no setuptools. venv puts setuptools 65 there, whose distutils hook
# (distutils-precedence.pth) makes redis 2.10.6's `from distutils.version import StrictVersion`
# (redis is pinned ==2.10.6 by pywb 2.10) import all of setuptools, and Py3AMF 0.9.1 (pywb's AMF
# support) imports pkg_resources to find its own adapters folder: ~0.4 CPU-s of each start, for
# nothing. Without it redis gets the standard library's distutils.version, and Py3AMF falls
# back to its folder (`os.path.dirname(__file__)`, what pkg_resources answered). pywb requires
# setuptools itself from Python 3.12 (no distutils in the standard library there), where pip
# installs it as pywb's dependency and it stays. The hook is compiled (no .pyc otherwise: the
# session's PYTHONDONTWRITEBYTECODE). Newer pins bring nothing: ua-parser 1.0.2 (latest) still
# compiles its ~1,300 regexes at import in the legacy API pywb uses; redis and pyOpenSSL are
# pinned by pywb; certauth 1.3.0 is the latest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="${REPLAY_VENV:-$here/.replay-venv}"
py="${PYTHON:-python3}"
hook="$here/access/replay_codecs.py"
site() { "$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"; }
# Up to date: pywb, the codings hook current and compiled, no setuptools below Python 3.12 (one
# interpreter start: each loads the hook, and tests run this check at every session)
ready() {
  [ -x "$venv/bin/wayback" ] && "$venv/bin/python" - "$hook" 2>/dev/null <<'EOF'
import filecmp, importlib.util as u, os, sys, sysconfig
import pywb, backports.zstd  # noqa: F401
mine = os.path.join(sysconfig.get_paths()["purelib"], "hf_replay_codecs.py")
current = filecmp.cmp(sys.argv[1], mine, shallow=False) and os.path.exists(u.cache_from_source(mine))
lean = sys.version_info >= (3, 12) or u.find_spec("setuptools") is None
sys.exit(not (current and lean))
EOF
}
if ready; then
  exit 0
fi
# shellcheck source=access/venv-install.sh
. "$here/access/venv-install.sh"
venv_install "$venv" "$py" "pywb>=2.8,<3" "backports.zstd>=1.0"
cp "$hook" "$(site)/hf_replay_codecs.py"
echo "import hf_replay_codecs" > "$(site)/hf_replay_codecs.pth"
"$venv/bin/python" -m compileall -q "$(site)/hf_replay_codecs.py"
echo "replay service (pywb) ready in $venv"
