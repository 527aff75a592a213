"""tests/support/last_user.py: a session fixture of ``STOPPED_AFTER_LAST_USER`` is torn down
after the last test of the session that uses it, not at the session's end. Checked on a probe
session (a fixture that logs its setup and teardown, test
files that log their run) in a pytest subprocess, as ``pytest`` runs it and under pytest-xdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT

PROBE_CONFTEST = """
import os

import pytest

from tests.support.last_user import LastUserTeardown


def pytest_configure(config):
    plugin = LastUserTeardown(("platform",))
    config.pluginmanager.register(plugin, "probe-last-user")


def log(event):
    with open(os.environ["PROBE_EVENTS"], "a") as out:
        out.write(event + "\\n")


@pytest.fixture(scope="session")
def platform():
    log("up")
    yield
    log("down")
"""

# a.py and c.py use the platform, b.py and d.py do not
PROBE_TESTS = {
    "test_a.py": "def test_a1(platform):\n    log('a1')\n\n\ndef test_a2(platform):\n    log('a2')\n",
    "test_b.py": "def test_b():\n    log('b')\n",
    "test_c.py": "def test_c(platform):\n    log('c')\n",
    "test_d.py": "def test_d():\n    log('d')\n",
}


def run_probe(tmp_path: Path, *args: str) -> list[str]:
    """The probe session's events, in order (pytest's exit status checked)."""
    (tmp_path / "conftest.py").write_text(PROBE_CONFTEST)
    for name, text in PROBE_TESTS.items():
        (tmp_path / name).write_text("from conftest import log\n\n\n" + text)
    events = tmp_path / "events.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env["PROBE_EVENTS"] = str(events)
    proc = subprocess.run(
        # `-p no:anyio` as pyproject.toml's addopts (not read in the probe's folder)
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:anyio"),
            *("-q", *args, str(tmp_path)),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return events.read_text().split()


@pytest.mark.parametrize("xdist", [False, True], ids=["pytest", "xdist"])
def test_a_session_fixture_is_torn_down_after_its_last_user_in_the_session(
    tmp_path: Path, xdist: bool
) -> None:
    """The platform lives from its first user to its last (b.py, in between, does not stop it),
    and d.py runs without it; in an xdist worker (which runs the users' files as one unit, in
    the session's order) as without xdist."""
    args = ("-n", "1", "--dist", "loadfile") if xdist else ()
    assert run_probe(tmp_path, *args) == ["up", "a1", "a2", "b", "c", "down", "d"]
