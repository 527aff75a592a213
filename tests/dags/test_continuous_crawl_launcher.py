"""The continuous_crawl_launcher DAG run with `airflow dags test` on the session's PostgreSQL:
the run's logical hour is the launch hour, and a re-run of the same hour (its task's launch of
that hour again) injects nothing and leaves the seeds' quotas alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from harvest.continuous.service import launch
from tests.support.runstates import DagTests, asset_events, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_launcher_dag_injects_the_seeds_of_its_hour_once(
    airflow_ready, airflow_runs: DagTests, db_engine
) -> None:
    schedules = [{"frequency": "DAILY", "startDate": "2026-11-01 06:20:00", "endDate": None}]
    with db_engine.begin() as conn:
        for seed, start in (("http://six.test/", "06"), ("http://seven.test/", "07")):
            sched = [{**schedules[0], "startDate": f"2026-11-01 {start}:20:00"}]
            conn.execute(
                sa.text(
                    "INSERT INTO selection_records (collection, seed_url, budget, frequency,"
                    " depth, scope, schedules, theme) VALUES ('news', :s, 'small', 'daily',"
                    " 'host', 'root', CAST(:sch AS jsonb), 'news')"
                ),
                {"s": seed, "sch": json.dumps(sched)},
            )
    first = airflow_runs.run("continuous_crawl_launcher", "2026-11-22T06:00:00+00:00")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    run = last_run(airflow_ready, "continuous_crawl_launcher")
    assert (run.state, run.tasks) == ("success", {"launch": "success"})
    assert asset_events(airflow_ready, run) == [
        ("launch", "x-harvestflow://continuous/seeds-injected")
    ]
    with db_engine.connect() as conn:
        seeds = conn.execute(sa.text("SELECT seed_url, template FROM continuous_seeds")).all()
        due = conn.execute(sa.text("SELECT url, next_due FROM continuous_url_state")).all()
    assert [(r.seed_url, r.template) for r in seeds] == [("http://six.test/", "host_only")]
    assert [(r.url, r.next_due.isoformat()) for r in due] == [
        ("http://six.test/", "2026-11-22T06:20:00+00:00")
    ]
    with db_engine.begin() as conn:  # fetched since: the re-run must not reset it
        conn.execute(sa.text("UPDATE continuous_seeds SET fetched_since_launch = 5"))
    # a re-run of the hour: what the run's task runs (the service's launch, with the run's
    # hour and the DAG's default reset_quotas), called here rather than in a second Airflow run
    again = launch(datetime(2026, 11, 22, 6, tzinfo=UTC), reset_quotas=True)
    assert (again.injected, again.already_launched) == ([], 1)
    with db_engine.connect() as conn:
        launches = conn.execute(sa.text("SELECT count(*) FROM continuous_launches")).scalar_one()
        fetched = conn.execute(
            sa.text("SELECT fetched_since_launch FROM continuous_seeds")
        ).scalar_one()
    assert (launches, fetched) == (1, 5)
