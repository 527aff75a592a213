"""Run a harvestflow DAG in this process with Airflow's ``dag.test()``.

Why: ``harvestflow demo`` and the end-to-end tests must go *through* the DAGs (the same task
code the scheduler runs), on the real metadata DB, without a scheduler in the loop. The Airflow
environment must be in ``os.environ`` before Airflow is first imported, so :func:`activate` is
called first and everything Airflow is imported lazily.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from datetime import datetime
from typing import Any

from app.runtime.airflow_commands import batch_command
from app.runtime.airflow_config import airflow_env
from harvestflow.errors import HarvestflowError
from harvestflow.package_data import data_path
from harvestflow.settings import Settings

log = logging.getLogger(__name__)

DAGS_DIR = data_path("dags")


class DagRunFailed(HarvestflowError, RuntimeError):
    """A DAG run that did not succeed, or a task of it that did not: names each such task."""

    def __init__(self, dag_id: str, run_state: str, states: dict[str, str]) -> None:
        self.dag_id, self.run_state, self.states = dag_id, run_state, states
        self.failed = not_successful(states)
        listed = ", ".join(f"{k} {v}" for k, v in self.failed.items()) or "none"
        super().__init__(f"DAG {dag_id} ended {run_state}; tasks not successful: {listed}")


class TriggerFailed(HarvestflowError, RuntimeError):
    """A DAG run that could not be queued (Airflow's message in it)."""


# What a task may end as in a good run: a mapped task with nothing to map, a short-circuit.
GOOD_TASK_STATES = ("success", "skipped")


def not_successful(states: dict[str, str]) -> dict[str, str]:
    """The tasks of ``states`` ({task[map_index]: state}) that did not end well, sorted."""
    return {k: v for k, v in sorted(states.items()) if v not in GOOD_TASK_STATES}


def activate(settings: Settings) -> None:
    """Put the Airflow environment for ``settings`` into this process."""
    if "airflow" in sys.modules and os.environ.get("AIRFLOW_HOME") != str(settings.airflow_home):
        log.warning("Airflow was imported before its environment was set; settings may be stale")
    os.environ.update(airflow_env(settings))
    if str(DAGS_DIR) not in sys.path:
        sys.path.insert(0, str(DAGS_DIR))


def load_dag(dag_id: str) -> Any:
    """The DAG object of ``dags/<dag_id>.py`` (dag_id = file stem)."""
    path = DAGS_DIR / f"{dag_id}.py"
    spec = importlib.util.spec_from_file_location(f"hf_dag_{dag_id}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def run_dag(
    dag_id: str, *, conf: dict[str, Any] | None = None, logical_date: datetime | None = None
) -> dict[str, str]:
    """Run one DagRun to the end; returns {task_id[map_index]: state}.

    Raises :class:`DagRunFailed` unless the run *and every task of it* succeeded (or was
    skipped): a teardown that failed does not fail the run in Airflow, but it is still work
    that was not done, and the demo must not call such a run a success.
    """
    dag = load_dag(dag_id)
    log.info("running DAG %s", dag_id)
    kwargs: dict[str, Any] = {"run_conf": conf or {}}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    dagrun = dag.test(**kwargs)
    states = task_states(dagrun.get_task_instances())
    run_state = str(getattr(dagrun.state, "value", dagrun.state))
    if run_state != "success" or not_successful(states):
        raise DagRunFailed(dag_id, run_state, states)
    return states


def task_states(task_instances: Any) -> dict[str, str]:
    """{task_id, with ``[map index]`` for a mapped task: state} of a run's task instances.

    A mapped task with a ``map_index_template`` (a file name, a job) is named by it, as the UI
    names it: "process_file[1-2-….warc.gz]" says which file failed, "process_file[3]" does not.
    """
    states = {}
    for ti in task_instances:
        index = getattr(ti, "rendered_map_index", None) or ti.map_index
        key = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{index}]"
        states[key] = str(getattr(ti.state, "value", ti.state))
    return states


def trigger(
    settings: Settings, dag_id: str, conf: dict[str, Any], run_id: str, logical_date: datetime
) -> str:
    """Queue a run of ``dag_id`` with ``conf`` for the scheduler, as the UI's trigger form does
    (``airflow dags trigger``, in harvestflow's Airflow environment, through
    :func:`~app.runtime.airflow_commands.batch_command`); returns its run id.

    Why a program and not an import: the callers (the CLI, the curator pages) must not load
    Airflow into their process for one write, and the CLI talks to the metadata DB as the
    scheduler's other commands do.
    """
    args = ["dags", "trigger", dag_id, "--run-id", run_id, "--conf", json.dumps(conf)]
    args += ["--logical-date", logical_date.isoformat()]
    proc = subprocess.run(
        batch_command(args),
        env=airflow_env(settings),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise TriggerFailed(f"airflow dags trigger {dag_id} failed: {tail}")
    log.info("queued %s run %s with %s", dag_id, run_id, conf)
    return run_id


def queue_run(dag_id: str, conf: dict[str, Any], run_id: str, logical_date: datetime) -> str:
    """:func:`trigger` with harvestflow's settings: what the CLI and the curator pages give a
    patch harvest (:func:`access.patches.request_patch`) to queue its DAG run."""
    from harvestflow.settings import get_settings

    return trigger(get_settings(), dag_id, conf, run_id, logical_date)
