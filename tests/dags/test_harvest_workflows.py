"""The one-off and broad-crawl harvest DAGs, run end to end with `airflow dags test` (dag.test())
on the session's real PostgreSQL, crawling the sample site on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvestflow import airflow_runtime, samplesite
from harvestflow.settings import Settings

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")
SAMPLE_HOSTS = ("www.example-a.test", "static.example-a.test", "example-b.test")


@pytest.fixture(scope="module")
def airflow_ready(services: Settings) -> Settings:
    airflow_runtime.prepare(services)
    return services


@pytest.fixture(scope="module")
def site() -> Iterator[samplesite.SampleSite]:
    running = samplesite.start()
    yield running
    running.stop()


def dags_test(dag_id: str, conf: dict) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return subprocess.run(
        [HARVESTFLOW, "airflow", "dags", "test", dag_id, "-c", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_oneoff_harvest_crawls_a_seed_list_from_the_form(airflow_ready, db_engine, site) -> None:
    from harvest.pipeline import ensure_reference_data

    ensure_reference_data(db_engine)
    seed = site.url("www.example-a.test", "/")
    proc = dags_test(
        "oneoff_harvest",
        {
            "seeds": [seed],
            "template": "demo_loopback",
            "resolve": {host: "127.0.0.1" for host in SAMPLE_HOSTS},
        },
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with db_engine.connect() as conn:
        job = conn.execute(
            sa.text(
                "SELECT j.status, j.job_dir, h.name FROM jobs j JOIN harvestdefinitions h"
                " USING (harvest_id) WHERE h.name LIKE 'oneoff-%'"
            )
        ).one()
    assert job.status == 3  # DONE
    summary = json.loads((Path(job.job_dir) / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert summary["domains"]["example-a.test"]["objects"] > 10


def test_oneoff_harvest_refuses_an_invalid_form(airflow_ready, db_engine) -> None:
    from harvest.pipeline import ensure_reference_data

    ensure_reference_data(db_engine)
    proc = dags_test("oneoff_harvest", {"seeds": [], "template": "demo_loopback"})
    assert proc.returncode != 0
    assert "give either harvest_id or seeds" in proc.stdout + proc.stderr
    with db_engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar() == 0


def test_broad_crawl_second_step_reharvests_only_domains_stopped_by_the_limit(
    airflow_ready, db_engine, site
) -> None:
    from harvest.domains import ensure_config
    from harvest.pipeline import ensure_reference_data
    from harvest.templates import default_spec

    ensure_reference_data(db_engine)
    spec = {
        **default_spec(),
        "allow_private_addresses": True,
        "delay_factor": 0.0,
        "min_delay_ms": 0,
        "max_delay_ms": 50,
        "resolve": {host: "127.0.0.1" for host in SAMPLE_HOSTS},
    }
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO templates (name, spec) VALUES ('test_loopback', CAST(:s AS jsonb))"
            ),
            {"s": json.dumps(spec)},
        )
        # example-a.test has ~40 URLs (more than step 1's budget of 5), example-b.test 3
        ensure_config(
            conn,
            "example-a.test",
            template="test_loopback",
            seeds=[site.url("www.example-a.test", "/")],
            make_default=True,
        )
        ensure_config(
            conn,
            "example-b.test",
            template="test_loopback",
            seeds=[site.url("example-b.test", "/")],
            make_default=True,
        )
    proc = dags_test(
        "broad_crawl", {"name": "broad-test", "step1_max_objects": 5, "step2_max_objects": 1000}
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with db_engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT h.name, d.name AS domain, hi.stopreason, hi.objectcount"
                " FROM historyinfo hi JOIN harvestdefinitions h USING (harvest_id)"
                " JOIN configurations c USING (config_id) JOIN domains d USING (domain_id)"
                " ORDER BY h.harvest_id, d.name"
            )
        ).all()
    history = {(r.name, r.domain): (r.stopreason, r.objectcount) for r in rows}
    assert history[("broad-test", "example-a.test")][0] == 1  # OBJECT_LIMIT
    assert history[("broad-test", "example-b.test")][0] == 0  # DOWNLOAD_COMPLETE
    step2 = {domain: v for (name, domain), v in history.items() if name == "broad-test-step2"}
    assert set(step2) == {"example-a.test"}
    assert step2["example-a.test"][0] == 0
    assert step2["example-a.test"][1] > history[("broad-test", "example-a.test")][1]


def test_maintenance_resubmits_a_dead_job_and_crawls_its_copy(
    airflow_ready, db_engine, site
) -> None:
    import time
    from datetime import UTC, datetime

    from harvest.pipeline import create_demo_definition, generate_jobs, prepare_job

    harvest_id = create_demo_definition(site.port, engine=db_engine)
    (job_id,) = generate_jobs(harvest_id, datetime(2026, 11, 1, tzinfo=UTC), engine=db_engine)
    job_dir = Path(prepare_job(job_id, airflow_ready.data_dir, engine=db_engine)).parent
    # the worker died right after preparing the job: nothing has moved there for two hours
    two_hours_ago = time.time() - 7200
    for path in [job_dir, *job_dir.rglob("*")]:
        os.utime(path, (two_hours_ago, two_hours_ago))
    with db_engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE jobs SET submitteddate = now() - interval '2 hours' WHERE job_id = :j"),
            {"j": job_id},
        )

    proc = dags_test("harvest_maintenance", {"stale_after_s": 600})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with db_engine.connect() as conn:
        old = conn.execute(
            sa.text("SELECT status, resubmitted_as_job FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).one()
        new = conn.execute(
            sa.text("SELECT status, job_dir FROM jobs WHERE job_id = :j"),
            {"j": old.resubmitted_as_job},
        ).one()
    assert old.status == 5  # RESUBMITTED
    assert new.status == 3  # DONE
    assert json.loads((Path(new.job_dir) / "summary.json").read_text())["status"] == "complete"
    assert (job_dir / "job.json").exists()  # the dead job's directory is kept


def test_selective_daily_run_at_a_logical_date_harvests_what_is_due(
    airflow_ready, db_engine, site
) -> None:
    """The scheduled path (no harvest_id): transfer, due at the logical date, crawl, record,
    advance; a definition whose schedule cannot be evaluated is deactivated, the other crawled."""
    from datetime import UTC, datetime

    from harvest.definitions import ensure_schedule, ensure_selective_definition
    from harvest.pipeline import create_demo_definition

    harvest_id = create_demo_definition(site.port, engine=db_engine)
    when = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    with db_engine.begin() as conn:  # bad data: a schedule that ends before it starts
        ensure_schedule(
            conn, "broken", timeunit=2, numtimeunits=1, startdate=when, enddate=datetime(2026, 1, 1)
        )
        bad = ensure_selective_definition(conn, "bad", frequency="daily", schedule="broken")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    proc = subprocess.run(
        [HARVESTFLOW, "airflow", "dags", "test", "selective_harvest_daily", when.isoformat()],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with db_engine.connect() as conn:
        jobs = conn.execute(
            sa.text("SELECT job_id, status, logical_date FROM jobs WHERE harvest_id = :h"),
            {"h": harvest_id},
        ).all()
        history = conn.execute(
            sa.text("SELECT count(*) FROM historyinfo WHERE harvest_id = :h"), {"h": harvest_id}
        ).scalar()
        nextdate = conn.execute(
            sa.text("SELECT nextdate FROM partialharvests WHERE harvest_id = :h"),
            {"h": harvest_id},
        ).scalar()
        numevents = conn.execute(
            sa.text("SELECT numevents FROM harvestdefinitions WHERE harvest_id = :h"),
            {"h": harvest_id},
        ).scalar()
        broken = conn.execute(
            sa.text(
                "SELECT isactive, inactive_reason FROM harvestdefinitions WHERE harvest_id = :h"
            ),
            {"h": bad},
        ).one()
    assert [(j.status, j.logical_date) for j in jobs] == [(3, when)]  # one job, DONE
    assert history == 2  # per-domain statistics of both demo domains
    assert (nextdate, numevents) == (datetime(2026, 11, 23, 3, 0, tzinfo=UTC), 1)
    assert not broken.isactive and "before it starts" in broken.inactive_reason


def test_a_failing_job_does_not_block_the_other_jobs_of_the_run(
    airflow_ready, db_engine, site
) -> None:
    """Two due definitions, one job each: the crawler refuses one job's spec (bad template);
    the other job is crawled and recorded, the failed one is FAILED with the reason, both
    schedules advance."""
    from datetime import UTC, datetime

    from harvest.definitions import ensure_selective_definition
    from harvest.domains import ensure_config
    from harvest.pipeline import create_demo_definition

    good = create_demo_definition(site.port, engine=db_engine)
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO templates (name, spec) SELECT 'broken_loopback',"
                " jsonb_set(spec, '{scope}', '\"galaxy\"') FROM templates"
                " WHERE name = 'demo_loopback'"
            )
        )
        ref = ensure_config(
            conn,
            "example-b.test",
            config_name="broken",
            template="broken_loopback",
            seeds=[site.url("example-b.test", "/")],
            make_default=False,
        )
        bad = ensure_selective_definition(
            conn, "broken-daily", frequency="daily", config_ids=[ref.config_id]
        )
    when = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    subprocess.run(
        [HARVESTFLOW, "airflow", "dags", "test", "selective_harvest_daily", when.isoformat()],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    with db_engine.connect() as conn:
        jobs = {
            r.harvest_id: r
            for r in conn.execute(
                sa.text("SELECT harvest_id, status, harvest_errors FROM jobs ORDER BY job_id")
            )
        }
        runs = conn.execute(
            sa.text("SELECT harvest_id, advanced_at FROM harvest_runs ORDER BY harvest_id")
        ).all()
    assert set(jobs) == {good, bad}
    assert jobs[good].status == 3  # DONE
    assert jobs[bad].status == 4 and "summary.json" in jobs[bad].harvest_errors  # FAILED
    assert [r.harvest_id for r in runs] == sorted([good, bad])
    assert all(r.advanced_at is not None for r in runs)  # the schedules advanced all the same
