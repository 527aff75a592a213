"""``demo_platform``: ``harvestflow demo --keep-services`` run ONCE per test session.

Why shared: the demo takes minutes (every workflow through its DAG); the demo test and the
curator browser test both need its output, so they share one run in one isolated data dir (and
one pytest-xdist worker: :data:`DEMO_PLATFORM_FILES`).
The services the demo leaves running are stopped after the last test that uses them
(tests/support/last_user.py).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.environment import data_root
from tests.support.platform_cli import HARVESTFLOW, PAUSED_AT_CREATION, isolated_env

# the test files that use ``demo_platform`` (one xdist scope, so one demo per run:
# tests/conftest.py)
DEMO_PLATFORM_FILES = (
    "tests/access/test_service_demo.py",
    "tests/platform/test_demo.py",
    "tests/plugins/test_curator_browser.py",
)


@dataclass
class DemoPlatform:
    """The finished demo: its data dir, the environment to talk to it, and its output."""

    data: Path
    env: dict[str, str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> None:
        """Fail the calling test (with the demo's output) when the demo itself failed."""
        assert self.returncode == 0, self.stdout[-3000:] + self.stderr[-3000:]


@pytest.fixture(scope="session")
def demo_platform() -> Iterator[DemoPlatform]:
    with tempfile.TemporaryDirectory(prefix="hf-demo-", dir=data_root()) as tmp:
        data = Path(tmp) / "var"
        env = isolated_env(data)
        # the demo's DAG runs write every DAG to Airflow's database: paused, so that an `up` on
        # this data dir (the curator browser test's) runs only the DAGs its test starts
        env.update(PAUSED_AT_CREATION)
        try:
            proc = subprocess.run(
                [HARVESTFLOW, "demo", "--keep-services"],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            yield DemoPlatform(data, env, proc.returncode, proc.stdout, proc.stderr)
        finally:
            subprocess.run(
                [HARVESTFLOW, "services", "stop"], env=env, capture_output=True, timeout=240
            )
            os.sync()
