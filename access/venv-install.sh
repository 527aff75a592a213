# Sourced by access/setup-replay.sh and scripts/setup-oracles.sh (both make a virtualenv of
# tools that run as programs beside the platform, never imported by it).
#
# venv_install VENV PYTHON PACKAGE...: VENV made if it has no interpreter, the packages installed
# into it and compiled to bytecode, and below Python 3.12 no setuptools left in it (why: the
# scripts' headers). The installer is uv (MIT/Apache-2.0) where there is one (UV, else `uv` on
# PATH; ./run puts it in .venv): it resolves and downloads in parallel, several times faster
# than pip for these venvs, and where ./run sets both venvs up side by side its cache fetches their common packages
# (pywb's tree) once. A venv uv fills has neither pip nor setuptools: nothing to upgrade first.
# Without uv, pip does the same, as the scripts always did.
venv_install() {
  local venv=$1 py=$2 uv
  shift 2
  uv=$(command -v "${UV:-uv}" || true)
  [ -x "$venv/bin/python" ] || "$py" -m venv --without-pip "$venv"
  if [ -n "$uv" ]; then
    "$uv" pip install -q --python "$venv/bin/python" --compile-bytecode "$@"
  else
    if ! [ -x "$venv/bin/pip" ]; then
      "$venv/bin/python" -m ensurepip >/dev/null
      "$venv/bin/python" -m pip install -q --upgrade pip
    fi
    "$venv/bin/python" -m pip install -q "$@"
  fi
  if "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
    if [ -n "$uv" ]; then
      "$uv" pip uninstall -q --python "$venv/bin/python" setuptools 2>/dev/null
    else
      "$venv/bin/python" -m pip uninstall -q -y setuptools 2>/dev/null
    fi
  fi
}
