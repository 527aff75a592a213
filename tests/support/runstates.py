"""The state of a DAG run and of each of its task instances, read from Airflow's metadata DB.

Why: ``airflow dags test`` exits non-zero only when the run failed; a test must also see which
task failed and that the bookkeeping tasks ran, as an engineer sees them in the UI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from harvestflow.settings import Settings

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")


@dataclass
class RunStates:
    """The newest run of a DAG: its state, {task_id[map_index]: state} and, for mapped tasks
    with a ``map_index_template``, {task_id[rendered name]: state}."""

    run_id: str
    state: str
    tasks: dict[str, str]
    named: dict[str, str]

    def of(self, prefix: str) -> dict[str, str]:
        """The task states whose key starts with ``prefix`` (e.g. ``harvest_job.crawl``)."""
        return {k: v for k, v in self.tasks.items() if k.startswith(prefix)}


def last_run(settings: Settings, dag_id: str) -> RunStates:
    engine = sa.create_engine(settings.airflow_db_url)
    try:
        with engine.connect() as conn:
            run = conn.execute(
                sa.text(
                    "SELECT run_id, state FROM dag_run WHERE dag_id = :d ORDER BY id DESC LIMIT 1"
                ),
                {"d": dag_id},
            ).one()
            rows = conn.execute(
                sa.text(
                    "SELECT task_id, map_index, rendered_map_index, state FROM task_instance"
                    " WHERE dag_id = :d AND run_id = :r"
                ),
                {"d": dag_id, "r": run.run_id},
            ).all()
    finally:
        engine.dispose()
    tasks = {
        (r.task_id if r.map_index < 0 else f"{r.task_id}[{r.map_index}]"): str(r.state)
        for r in rows
    }
    named = {f"{r.task_id}[{r.rendered_map_index}]": str(r.state) for r in rows if r.map_index >= 0}
    return RunStates(run.run_id, str(run.state), dict(sorted(tasks.items())), named)


def asset_events(settings: Settings, run: RunStates) -> list[tuple[str, str]]:
    """(task_id, asset URI) of each Asset event the run's tasks emitted, in order."""
    engine = sa.create_engine(settings.airflow_db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT e.source_task_id, a.uri FROM asset_event e"
                    " JOIN asset a ON a.id = e.asset_id WHERE e.source_run_id = :r"
                    " ORDER BY e.id"
                ),
                {"r": run.run_id},
            ).all()
    finally:
        engine.dispose()
    return [(r.source_task_id, r.uri) for r in rows]


def dags_test(dag_id: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """`harvestflow airflow dags test DAG_ID` in a child (the session's settings, no Airflow
    variables of this process), with ``extra_env``."""
    return dags_test_at(dag_id, None, **extra_env)


def dags_test_at(
    dag_id: str, logical_date: str | None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """`harvestflow airflow dags test DAG_ID [LOGICAL_DATE]`, as :func:`dags_test`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(extra_env)
    return subprocess.run(
        [HARVESTFLOW, "airflow", "dags", "test", dag_id, *([logical_date] if logical_date else [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
