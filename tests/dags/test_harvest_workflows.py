"""The one-off, selective (daily, and hourly: a curator's event crawl) and broad-crawl harvest
DAGs, run end to end with `airflow dags test` (dag.test()) on the session's real PostgreSQL,
crawling the sample site (or an event's page) on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.demo import samplesite
from app.demo.definition import create_demo_definition
from harvestflow.settings import Settings
from tests.support import runstates
from tests.support.runstates import RunStates, asset_events, last_run

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

HARVESTFLOW = str(Path(sys.executable).parent / "harvestflow")
SAMPLE_HOSTS = ("www.example-a.test", "static.example-a.test", "example-b.test")
# a harvest DAG's second crawl group, for jobs on the other priority's channel
# (dags/hf_harvest_tasks.py crawl_on_channels): here every job is on a selective channel
OTHER_CHANNEL_IDLE = {
    "harvest_job_route": "success",
    "harvest_job_on_crawl_low_route": "success",
    "harvest_job_on_crawl_low.prepare": "skipped",  # nothing mapped
    "harvest_job_on_crawl_low.crawl": "skipped",
    "harvest_job_on_crawl_low.record": "skipped",
}


@pytest.fixture(scope="module")
def site() -> Iterator[samplesite.SampleSite]:
    running = samplesite.start()
    yield running
    running.stop()


def dags_test(
    airflow_runs: runstates.DagTests, dag_id: str, conf: dict | None = None, *args: str
) -> subprocess.CompletedProcess[str]:
    """``airflow dags test DAG_ID [ARGS] [-c CONF]`` in the session's Airflow process, in this
    session's Airflow environment (tests/support/runstates.DagTests: the DAG's own file parsed
    by the CLI, not the whole folder)."""
    return airflow_runs.run(dag_id, *args, conf=conf)


def succeeded(proc: subprocess.CompletedProcess[str], settings: Settings, dag_id: str) -> RunStates:
    """The run's states, after checking the run and every task of it succeeded (or skipped)."""
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 0, output
    run = last_run(settings, dag_id)
    assert run.state == "success", (run, output)
    bad = {k: v for k, v in run.tasks.items() if v not in ("success", "skipped")}
    assert bad == {}, output
    return run


def test_oneoff_harvest_crawls_a_seed_list_from_the_form(
    airflow_ready, airflow_runs, db_engine, site
) -> None:
    from harvest.pipeline import ensure_reference_data

    ensure_reference_data(db_engine)
    seed = site.url("www.example-a.test", "/")
    proc = dags_test(
        airflow_runs,
        "oneoff_harvest",
        {
            "seeds": [seed],
            "template": "demo_loopback",
            "resolve": {host: "127.0.0.1" for host in SAMPLE_HOSTS},
        },
    )
    run = succeeded(proc, airflow_ready, "oneoff_harvest")
    assert run.tasks == {
        **OTHER_CHANNEL_IDLE,
        "advance": "success",
        "generate_jobs_for": "success",
        "harvest_job.crawl[0]": "success",
        "harvest_job.prepare[0]": "success",
        "harvest_job.record[0]": "success",
        "validate": "success",
    }
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


def test_oneoff_harvest_refuses_an_invalid_form(airflow_ready, airflow_runs, db_engine) -> None:
    from harvest.pipeline import ensure_reference_data

    ensure_reference_data(db_engine)
    proc = dags_test(airflow_runs, "oneoff_harvest", {"seeds": [], "template": "demo_loopback"})
    assert proc.returncode != 0
    assert "give either harvest_id or seeds" in proc.stdout + proc.stderr
    run = last_run(airflow_ready, "oneoff_harvest")
    assert run.state == "failed"
    assert run.tasks["validate"] == "failed"
    # nothing downstream ran: no job, and advance (validate's teardown) has no run to close
    assert {k: v for k, v in run.tasks.items() if k != "validate"} == {
        "advance": "upstream_failed",
        "generate_jobs_for": "upstream_failed",
        "harvest_job.crawl": "upstream_failed",
        "harvest_job.prepare": "upstream_failed",
        "harvest_job.record": "upstream_failed",
        **{task: "upstream_failed" for task in OTHER_CHANNEL_IDLE},
    }
    with db_engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar() == 0


def test_broad_crawl_second_step_reharvests_only_domains_stopped_by_the_limit(
    airflow_ready, airflow_runs, db_engine, site
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
        airflow_runs,
        "broad_crawl",
        {"name": "broad-test", "step1_max_objects": 5, "step2_max_objects": 1000},
    )
    run = succeeded(proc, airflow_ready, "broad_crawl")
    step1_crawls = run.of("step1_job.crawl[")
    assert step1_crawls and set(step1_crawls.values()) == {"success"}
    assert len(run.of("step1_job.record[")) == len(step1_crawls)
    assert run.of("step2_job.") == {
        "step2_job.crawl[0]": "success",
        "step2_job.prepare[0]": "success",
        "step2_job.record[0]": "success",
    }
    assert run.tasks["done"] == "success"
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
    airflow_ready, airflow_runs, db_engine, site
) -> None:
    import time
    from datetime import UTC, datetime

    from harvest.pipeline import generate_jobs, prepare_job

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

    proc = dags_test(airflow_runs, "harvest_maintenance", {"stale_after_s": 600})
    run = succeeded(proc, airflow_ready, "harvest_maintenance")
    assert run.tasks == {
        "done": "success",
        "high": "success",
        "high_priority_job.crawl[0]": "success",
        "high_priority_job.prepare[0]": "success",
        "high_priority_job.record[0]": "success",
        "low": "success",
        "low_priority_job.crawl": "skipped",  # no snapshot job to resubmit: nothing mapped
        "low_priority_job.prepare": "skipped",
        "low_priority_job.record": "skipped",
        "resubmit": "success",
    }
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
    airflow_ready, airflow_runs, db_engine, site
) -> None:
    """The scheduled path (no harvest_id): transfer, due at the logical date, crawl, record,
    advance; a definition whose schedule cannot be evaluated is deactivated, the other crawled."""
    from datetime import UTC, datetime

    from harvest.definitions import ensure_schedule, ensure_selective_definition

    harvest_id = create_demo_definition(site.port, engine=db_engine)
    when = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)
    with db_engine.begin() as conn:  # bad data: a schedule that ends before it starts
        ensure_schedule(
            conn, "broken", timeunit=2, numtimeunits=1, startdate=when, enddate=datetime(2026, 1, 1)
        )
        bad = ensure_selective_definition(conn, "bad", frequency="daily", schedule="broken")
    proc = dags_test(airflow_runs, "selective_harvest_daily", None, when.isoformat())
    # the definition that cannot be evaluated is deactivated with its reason, not a failure
    run = succeeded(proc, airflow_ready, "selective_harvest_daily")
    assert run.tasks == {
        **OTHER_CHANNEL_IDLE,
        "advance_schedules": "success",
        "due_definitions": "success",
        "generate_due_jobs_for": "success",
        "harvest_job.crawl[0]": "success",
        "harvest_job.prepare[0]": "success",
        "harvest_job.record[0]": "success",
        "transfer_selection": "success",
    }
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
    airflow_ready, airflow_runs, db_engine, site
) -> None:
    """Two due definitions, one job each: the crawler refuses one job's spec (bad template);
    the other job is crawled and recorded, the failed one is FAILED with the reason, both
    schedules advance, and the run is failed with that job's crawl task failed at its first
    try (a refusal is not retried: it would be refused again)."""
    from datetime import UTC, datetime

    from harvest.definitions import ensure_selective_definition
    from harvest.domains import ensure_config

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
    proc = dags_test(airflow_runs, "selective_harvest_daily", None, when.isoformat())
    assert proc.returncode != 0, "a run with a failed crawl must not exit 0"
    assert "DagRun failed" in proc.stdout + proc.stderr
    with db_engine.connect() as conn:
        jobs = {
            r.harvest_id: r
            for r in conn.execute(
                sa.text(
                    "SELECT harvest_id, status, harvest_errors, airflow_task FROM jobs"
                    " ORDER BY job_id"
                )
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

    run = last_run(airflow_ready, "selective_harvest_daily")
    assert run.state == "failed"
    failing = jobs[bad].airflow_task["map_index"]  # the crawl task that crawled the bad job
    working = 1 - failing
    assert run.tasks == {
        **OTHER_CHANNEL_IDLE,
        "transfer_selection": "success",
        "due_definitions": "success",
        "generate_due_jobs_for": "success",
        f"harvest_job.prepare[{failing}]": "success",
        f"harvest_job.crawl[{failing}]": "failed",
        f"harvest_job.record[{failing}]": "success",  # bookkeeping ran after the failure
        f"harvest_job.prepare[{working}]": "success",
        f"harvest_job.crawl[{working}]": "success",
        f"harvest_job.record[{working}]": "success",
        "advance_schedules": "success",
    }
    assert jobs[good].airflow_task["map_index"] == working
    assert run.tries[f"harvest_job.crawl[{failing}]"] == 1  # the refused spec: no retry
    # the indexing chain is woken for the job that finished
    assert asset_events(airflow_ready, run) == [
        ("advance_schedules", "x-harvestflow://harvest/jobs-done")
    ]


class _EventPage(BaseHTTPRequestHandler):
    """An event's page on loopback (its robots.txt: none)."""

    def do_GET(self) -> None:
        body = b"<html><title>results</title>live results</html>" if self.path == "/" else b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_an_hourly_event_crawl_made_by_a_curator_runs_in_the_next_hourly_run(
    airflow_ready, airflow_runs, db_engine
) -> None:
    """The definitions' form's hourly event crawl (harvest.office, as the pages save it), made
    at 10:20, is crawled by the hourly DAG's run of 11:00 and its schedule moves to 11:20."""
    from datetime import UTC, datetime

    from harvest.office.definition_edits import save_definition
    from harvest.pipeline import ensure_reference_data

    ensure_reference_data(db_engine)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EventPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        seed = f"http://127.0.0.1:{server.server_address[1]}/"
        form = {"name": "Election night", "seeds": seed, "template": "demo_loopback",
                "schedule": "every", "every": "1", "unit": "hour"}  # fmt: skip
        made = datetime(2026, 11, 22, 10, 20, tzinfo=UTC)
        hid = save_definition(form, "carol", engine=db_engine, now=made)
        when = datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
        proc = dags_test(airflow_runs, "selective_harvest_hourly", None, when.isoformat())
    finally:
        server.shutdown()
        server.server_close()
    run = succeeded(proc, airflow_ready, "selective_harvest_hourly")
    assert run.tasks["harvest_job.crawl[0]"] == "success", run.tasks
    with db_engine.connect() as conn:
        jobs = conn.execute(
            sa.text("SELECT status, logical_date, seedlist FROM jobs WHERE harvest_id = :h"),
            {"h": hid},
        ).all()
        nextdate = conn.execute(
            sa.text("SELECT nextdate FROM partialharvests WHERE harvest_id = :h"), {"h": hid}
        ).scalar()
    assert [(j.status, j.logical_date, j.seedlist.strip()) for j in jobs] == [(3, when, seed)]
    assert nextdate == datetime(2026, 11, 22, 11, 20, tzinfo=UTC)
