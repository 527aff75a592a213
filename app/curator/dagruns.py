"""Failed DAG runs of the last days, read from Airflow's metadata database for the overview.

Why SQL on Airflow's tables rather than Airflow's models: the curator pages are a library
that never imports Airflow (its plugin only mounts them), and a run that failed before any
job existed (a definition whose jobs could not be generated, an indexing or preservation run
with a bad file) is recorded nowhere else. Two read-only statements on ``dag_run`` and
``task_instance`` of the pinned Airflow; the reason shown is what Airflow's grid shows first:
the tasks that failed themselves (not those that only waited on them), a mapped one by its
rendered name (the file or job it handled).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import sqlalchemy as sa

log = logging.getLogger(__name__)

MAX_TASKS = 5  # failed tasks named per run; the run's page in Airflow has them all


def failed_runs(conn: sa.Connection, since: datetime, limit: int = 20) -> dict[str, Any]:
    """Runs that ended failed since ``since``, newest first, each with its failed tasks."""
    where = " FROM dag_run r WHERE r.state = 'failed' AND r.end_date >= :since"
    total = conn.execute(sa.text("SELECT count(*)" + where), {"since": since}).scalar_one()
    rows = [
        dict(r)
        for r in conn.execute(
            sa.text(
                "SELECT r.dag_id, r.run_id, r.end_date,"
                " (SELECT array_agg(CASE WHEN t.map_index < 0 THEN t.task_id ELSE t.task_id"
                "   || '[' || coalesce(t.rendered_map_index, t.map_index::text) || ']' END"
                "   ORDER BY t.task_id, t.map_index) FROM task_instance t"
                "   WHERE t.dag_id = r.dag_id AND t.run_id = r.run_id AND t.state = 'failed')"
                "   AS tasks" + where + " ORDER BY r.end_date DESC LIMIT :lim"
            ),
            {"since": since, "lim": limit},
        ).mappings()
    ]
    for row in rows:
        tasks = row["tasks"] or []
        row["more_tasks"] = max(len(tasks) - MAX_TASKS, 0)
        row["tasks"] = tasks[:MAX_TASKS]
    return {"rows": rows, "total": int(total)}
