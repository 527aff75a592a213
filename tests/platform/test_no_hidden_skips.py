"""The suite's rule on skips (tests/conftest.py): every kind of skip and expected failure fails
the run, with CI set or not, under pytest-xdist or not, unless the person running the tests sets
HARVESTFLOW_ALLOW_SKIPS=1; a missing oracle fails the test that needs it, naming how to install
it. Checked on generated probe test files in a pytest subprocess that loads the project's
conftest as a plugin, one kind of skip at a time (beside a passing test, so the run is not empty),
as ``pytest`` runs and as ``./run test`` runs (``-n 2 --dist loadfile``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harvestflow.settings import PROJECT_ROOT

FAILS_UNLESS = "a failure unless HARVESTFLOW_ALLOW_SKIPS=1"

# kind -> (files of the probe, a text of its reason the run's output must show)
KINDS: dict[str, tuple[dict[str, str], str]] = {
    "skip_in_the_test": (
        {"test_k.py": "def test_k():\n    pytest.skip('the wget peer is not installed')\n"},
        "the wget peer is not installed",
    ),
    "skipif_mark": (
        {"test_k.py": "@pytest.mark.skipif(True, reason='skipif mark')\ndef test_k():\n    pass\n"},
        "skipif mark",
    ),
    "skip_mark": (
        {"test_k.py": "@pytest.mark.skip(reason='skip mark')\ndef test_k():\n    pass\n"},
        "skip mark",
    ),
    "skip_in_a_fixture": (
        {
            "test_k.py": "@pytest.fixture\ndef peer():\n    pytest.skip('fixture skips')\n\n\n"
            "def test_k(peer):\n    pass\n"
        },
        "fixture skips",
    ),
    "skip_in_setup_module": (
        {
            "test_k.py": "def setup_module():\n    pytest.skip('setup_module skips')\n\n\n"
            "def test_k():\n    pass\n"
        },
        "setup_module skips",
    ),
    "module_level_skip": (
        {
            "test_k.py": "pytest.skip('module skips', allow_module_level=True)\n\n\n"
            "def test_k():\n    pass\n"
        },
        "module skips",
    ),
    "importorskip_at_module_level": (
        {"test_k.py": "pytest.importorskip('hf_no_such_module')\n\n\ndef test_k():\n    pass\n"},
        "hf_no_such_module",
    ),
    "importorskip_in_the_test": (
        {"test_k.py": "def test_k():\n    pytest.importorskip('hf_no_such_module')\n"},
        "hf_no_such_module",
    ),
    "skip_in_a_conftest": (
        {
            "sub/conftest.py": "pytest.skip('conftest skips', allow_module_level=True)\n",
            "sub/test_k.py": "def test_k():\n    pass\n",
        },
        "conftest skips",
    ),
    "unittest_skip": (
        {
            "test_k.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
            "    @unittest.skip('unittest skips')\n    def test_k(self):\n        pass\n"
        },
        "unittest skips",
    ),
    "xfail_mark_that_fails": (
        {"test_k.py": "@pytest.mark.xfail(reason='known bug')\ndef test_k():\n    assert False\n"},
        "known bug",
    ),
    "xfail_call": (
        {"test_k.py": "def test_k():\n    pytest.xfail('known bug, called')\n"},
        "known bug, called",
    ),
    "xfail_not_run": (
        {
            "test_k.py": "@pytest.mark.xfail(run=False, reason='never run')\ndef test_k():\n"
            "    pass\n"
        },
        "never run",
    ),
    "xfail_non_strict_that_passes": (
        {
            "test_k.py": "@pytest.mark.xfail(strict=False, reason='fixed meanwhile')\n"
            "def test_k():\n    pass\n"
        },
        "fixed meanwhile",
    ),
}

PASSES = "def test_passes():\n    pass\n"

ORACLE_PROBE = """
from tests.support.environment import oracle


def test_needs_a_missing_oracle():
    oracle("no-such-oracle")
"""

XDIST = ("-n", "2", "--dist", "loadfile")


def run_probe(
    tmp_path: Path, files: dict[str, str], *args: str, **env_vars: str
) -> subprocess.CompletedProcess[str]:
    """pytest on ``files`` (each gets ``import pytest`` on top) and a passing test, in tmp_path."""
    for name, text in {**files, "test_passes.py": PASSES}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("import pytest\n\n" + text)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HARVESTFLOW_ALLOW_SKIPS")}
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}  # not this run's xdist
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.update(env_vars)
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"),
            *("-p", "no:anyio"),  # as pyproject.toml's addopts, which a probe's rootdir has not
            *("-q", "-rA", "--rootdir", str(tmp_path), *args, str(tmp_path)),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _all_kinds() -> dict[str, str]:
    """Every kind's probe files in a folder of its own (pytest imports test files by their
    basename, so each gets a name of its own too)."""
    return {
        f"{kind}/{name.replace('test_k', f'test_{kind}')}": text
        for kind, (probe, _) in KINDS.items()
        for name, text in probe.items()
    }


@pytest.mark.parametrize("xdist", [False, True], ids=["pytest", "xdist"])
def test_every_kind_of_skip_fails_the_run(tmp_path: Path, xdist: bool) -> None:
    """All kinds in one run (one pytest start, not one per kind): the run fails, and each kind
    is named as a failure, either as a failed test or in the skip guard's list."""
    proc = run_probe(tmp_path, _all_kinds(), *(XDIST if xdist else ()))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    lines = out.splitlines()
    guard = f"skipped, {FAILS_UNLESS}"
    listed = [n for n, line in enumerate(lines) if guard in line]
    after_guard = lines[listed[0] + 1 :] if listed else []
    for kind, (_, reason) in KINDS.items():
        assert reason in out, (kind, out[-4000:])
        failed_test = [
            line for line in lines
            if line.startswith(("FAILED ", "ERROR ")) and line.split()[1].startswith(f"{kind}/")
        ]  # fmt: skip
        in_guard = [line for line in after_guard if line.startswith(f"{kind}/") and reason in line]
        assert len(failed_test) + len(in_guard) == 1, (kind, out[-4000:])
    assert FAILS_UNLESS in out
    assert ", 1 passed" in lines[-1], out[-3000:]


def test_skips_are_allowed_only_when_asked_for(tmp_path: Path) -> None:
    files = _all_kinds()
    proc = run_probe(tmp_path, files, HARVESTFLOW_ALLOW_SKIPS="1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert FAILS_UNLESS not in out
    last = out.splitlines()[-1]
    # the module, importorskip and conftest skips are one skip each, of no test; the XPASS
    assert "1 passed, 10 skipped, 3 xfailed, 1 xpassed" in last, out[-3000:]


@pytest.mark.parametrize("ci", [None, "true"], ids=["developer", "ci"])
def test_a_missing_oracle_fails_the_test_even_when_skips_are_allowed(
    tmp_path: Path, ci: str | None
) -> None:
    proc = run_probe(
        tmp_path,
        {"test_oracle.py": ORACLE_PROBE},
        HARVESTFLOW_ALLOW_SKIPS="1",
        **({"CI": ci} if ci else {}),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.splitlines()[-1].startswith("1 failed, 1 passed"), out[-2000:]
    assert "test oracle no-such-oracle missing at" in out
    assert "run bash scripts/setup-oracles.sh" in out


def test_a_skip_fails_the_run_with_ci_set_too(tmp_path: Path) -> None:
    files, reason = KINDS["skip_in_the_test"]
    proc = run_probe(tmp_path, files, CI="true")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert f"{FAILS_UNLESS}): Skipped: {reason}" in out
