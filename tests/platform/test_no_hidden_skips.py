"""The suite's rule on skips (tests/conftest.py): a skipped test fails the run, with CI set or
not, unless the person running the tests sets HARVESTFLOW_ALLOW_SKIPS=1; a missing oracle fails
the test that needs it, naming how to install it. Checked on probe tests in a pytest subprocess
that loads the project's conftest as a plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT

PROBE = """
import pytest

from tests.conftest import oracle


def test_skips_itself():
    pytest.skip("the wget peer is not installed")


@pytest.mark.skipif(True, reason="marked to skip")
def test_marked_to_skip():
    pass


def test_needs_a_missing_oracle():
    oracle("no-such-oracle")


def test_passes():
    pass
"""


def run_probe(tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HARVESTFLOW_ALLOW_SKIPS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.update(env_vars)
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"),
            *("-q", "-rA", "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("ci", [None, "true"], ids=["developer", "ci"])
def test_a_skip_fails_the_run_with_or_without_ci(tmp_path: Path, ci: str | None) -> None:
    proc = run_probe(tmp_path, **({"CI": ci} if ci else {}))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    # a skip marked at setup (skipif) is reported as an error: a failed run all the same
    assert out.splitlines()[-1].startswith("2 failed, 1 passed, 1 error"), out[-2000:]
    assert (
        "a skip is a failure unless HARVESTFLOW_ALLOW_SKIPS=1): Skipped: the wget peer is not installed"
        in out
    )
    assert "a skip is a failure unless HARVESTFLOW_ALLOW_SKIPS=1): Skipped: marked to skip" in out
    assert "test oracle no-such-oracle missing at" in out
    assert "run bash scripts/setup-oracles.sh" in out


def test_skips_are_allowed_only_when_asked_for(tmp_path: Path) -> None:
    proc = run_probe(tmp_path, HARVESTFLOW_ALLOW_SKIPS="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # the missing oracle is still a failure, never a skip
    assert out.splitlines()[-1].startswith("1 failed, 1 passed, 2 skipped"), out[-2000:]
