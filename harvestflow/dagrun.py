"""Run a harvestflow DAG in this process with Airflow's ``dag.test()``.

Why: ``harvestflow demo`` and the end-to-end tests must go *through* the DAGs (the same task
code the scheduler runs), on the real metadata DB, without a scheduler in the loop. The Airflow
environment must be in ``os.environ`` before Airflow is first imported, so :func:`activate` is
called first and everything Airflow is imported lazily.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from datetime import datetime
from typing import Any

from harvestflow.airflow_runtime import airflow_env
from harvestflow.settings import PROJECT_ROOT, Settings

log = logging.getLogger(__name__)

DAGS_DIR = PROJECT_ROOT / "dags"


class DagRunFailed(RuntimeError):
    """A DAG run that did not succeed, with the failed tasks."""


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
    """Run one DagRun to the end; returns {task_id[map_index]: state}; raises if not success."""
    dag = load_dag(dag_id)
    log.info("running DAG %s", dag_id)
    kwargs: dict[str, Any] = {"run_conf": conf or {}}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    dagrun = dag.test(**kwargs)
    states = {}
    for ti in dagrun.get_task_instances():
        key = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
        states[key] = str(ti.state)
    if str(dagrun.state) != "success":
        failed = sorted(k for k, v in states.items() if v not in ("success", "skipped"))
        raise DagRunFailed(f"DAG {dag_id} ended {dagrun.state}; tasks not successful: {failed}")
    return states
