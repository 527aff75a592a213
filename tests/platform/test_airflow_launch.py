"""``app.runtime.airflow_launch``: `up`'s components forked from one process that imported
Airflow once, after the preparation it ran first; a preparation that fails names its command
and starts nothing."""

from __future__ import annotations

import configparser
import os
import sys
from pathlib import Path

import pytest

from app.runtime.airflow_config import airflow_env
from app.runtime.airflow_launch import launch
from app.runtime.airflow_runtime import COMPONENT_ENV
from harvestflow.settings import load


def test_components_run_forked_after_the_preparation_each_with_its_log_and_exit_status(
    tmp_path: Path,
) -> None:
    """Each component is Airflow's own CLI running its arguments with the components' settings
    (no migration check: the preparation just ran it) and the harvestflow Airflow environment,
    its output in its own log file; the launcher reports each one's exit status, then ends."""
    env = airflow_env(load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)}))
    logs = tmp_path / "logs"
    asked = {
        "checks": (["config", "get-value", "database", "check_migrations"], logs / "checks.log"),
        # a new Airflow home: the secrets airflow.cfg is written with are every component's
        "secret1": (["config", "get-value", "api_auth", "jwt_secret"], logs / "secret1.log"),
        "secret2": (["config", "get-value", "api_auth", "jwt_secret"], logs / "secret2.log"),
        # Airflow's parser refuses it: a component that fails at once
        "refused": (["pools", "import"], logs / "refused.log"),
    }
    prepare = [["config", "get-value", "core", "parallelism"]]
    launched = launch(
        [sys.executable, "-P"], prepare, asked, COMPONENT_ENV, env, logs / "prepare.log"
    )
    components = launched.components
    assert set(components) == {"checks", "secret1", "secret2", "refused"}
    assert components["checks"].wait(120) == 0
    assert components["refused"].wait(120) == 2  # argparse's status, as `airflow` ends
    launched.wait_launcher(60)
    assert launched.launcher.returncode == 0
    assert (logs / "prepare.log").read_text().split()[-1] == "8"  # airflow_env's parallelism
    assert (logs / "checks.log").read_text().split() == ["False"]
    assert "the following arguments are required" in (logs / "refused.log").read_text()
    written = configparser.ConfigParser(interpolation=None)
    written.read(Path(env["AIRFLOW_HOME"]) / "airflow.cfg")
    secret = written["api_auth"]["jwt_secret"]
    assert secret
    for name in ("secret1", "secret2"):
        assert components[name].wait(60) == 0
        assert (logs / f"{name}.log").read_text().split() == [secret]
    assert os.getpid() not in {c.pid for c in components.values()}


def test_a_failed_preparation_is_named_and_no_component_starts(tmp_path: Path) -> None:
    """The components start only once the preparation has succeeded (a migration must be done
    before them); the RuntimeError names the command that failed, with Airflow's message."""
    env = airflow_env(load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)}))
    logs = tmp_path / "logs"
    asked = {"version": (["version"], logs / "version.log")}
    prepare = [["version"], ["pools", "import"], ["version"]]
    with pytest.raises(RuntimeError) as failed:
        launch([sys.executable, "-P"], prepare, asked, COMPONENT_ENV, env, logs / "prepare.log")
    message = str(failed.value)
    assert message.startswith("`airflow pools import` failed: ")
    assert "the following arguments are required" in message
    assert not (logs / "version.log").exists()
