"""A job row as the curator pages show it, inserted directly (the pages read; they do not crawl)."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa


def _insert_job(engine: sa.Engine, job_dir: Path, status: int, index: int = 0) -> int:
    """A job of the definition 'web-test' (made if missing) in ``job_dir``."""
    from harvest.definitions import ensure_selective_definition

    with engine.begin() as conn:
        harvest_id = ensure_selective_definition(conn, "web-test", frequency=None)
        return int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, job_dir, airflow_task) VALUES (:h, 1,"
                    " :i, :s, 'FOCUSED', 't', CAST(:tpl AS jsonb), 'http://a.test/', :d,"
                    " CAST(:task AS jsonb)) RETURNING job_id"
                ),
                {
                    "h": harvest_id,
                    "i": index,
                    "s": status,
                    "tpl": "{}",
                    "d": str(job_dir),
                    "task": json.dumps(TASK),
                },
            ).scalar_one()
        )


TASK = {
    "dag_id": "selective_harvest_daily",
    "run_id": "manual__1",
    "task_id": "crawl",
    "map_index": 2,
}
