"""Dead workers' jobs are post-processed and resubmitted once; one-off harvests."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.demo.definition import create_demo_definition
from harvest import pipeline as p
from harvest.oneoff import OneOffError, create_seedlist_harvest, validate_params
from harvest.recovery import find_dead_jobs, resubmit_dead_jobs, resubmit_job
from harvestflow.formats.job_status import JobStatus
from tests.support.summaries import write_summary

pytestmark = pytest.mark.services
LD = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def job_row(engine, job_id):
    with engine.connect() as c:
        return c.execute(sa.text("SELECT * FROM jobs WHERE job_id = :j"), {"j": job_id}).first()


def age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (old, old))
    os.utime(path, (old, old))


def test_dead_worker_job_is_post_processed_and_resubmitted_once(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    spec_path = Path(p.prepare_job(job, tmp_path, engine=hdb))
    p.mark_started(job, engine=hdb)
    warcs = spec_path.parent / "warcs"
    warcs.mkdir()
    (warcs / f"{job}-{hid}-20261122030000000-00000-h.warc.gz").write_bytes(b"partial")
    assert find_dead_jobs(600, hdb) == []  # fresh activity: alive
    age(spec_path.parent, 3600)
    assert find_dead_jobs(600, hdb) == [job]
    assert find_dead_jobs(600, hdb, exclude=[job]) == []  # its task is known to run
    # a crawler on another worker still renews the job's lease: alive, however quiet the dir
    from crawler.leases import JobLeases

    JobLeases(hdb, ttl_s=600).acquire(job, "worker-b:1:x")
    assert find_dead_jobs(600, hdb) == []
    with hdb.begin() as conn:  # its heartbeats stopped: the lease expired
        conn.execute(sa.text("UPDATE job_leases SET expires_at = now() - interval '1 s'"))
    assert find_dead_jobs(600, hdb) == [job]

    result = resubmit_dead_jobs(600, hdb)
    new = result["resubmitted"][job]
    old_row, new_row = job_row(hdb, job), job_row(hdb, new)
    assert old_row.status == JobStatus.RESUBMITTED and old_row.resubmitted_as_job == new
    assert "worker died" in old_row.harvest_errors
    assert new_row.status == JobStatus.NEW and new_row.seedlist == old_row.seedlist
    assert new_row.template == old_row.template and new_row.harvest_num == old_row.harvest_num
    assert (warcs / f"{job}-{hid}-20261122030000000-00000-h.warc.gz").exists()  # output kept
    assert resubmit_job(job, hdb) == new  # idempotent
    assert resubmit_dead_jobs(600, hdb)["dead"] == []
    # the run now consists of the new job: a re-run of the DAG run crawls it
    assert p.generate_jobs(hid, LD, engine=hdb) == [new]
    spec = json.loads(Path(p.prepare_job(new, tmp_path, engine=hdb)).read_text())
    assert spec["job_id"] == new and spec["seeds"] == json.loads(spec_path.read_text())["seeds"]


def test_finished_but_unrecorded_job_is_not_dead(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    spec_path = Path(p.prepare_job(job, tmp_path, engine=hdb))
    (spec_path.parent / "summary.json").write_text('{"status": "complete"}')
    age(spec_path.parent, 7200)
    assert find_dead_jobs(600, hdb) == []
    # a crawl that ended unfinished left its frontier, not a finished job: silent, it is dead
    (spec_path.parent / "summary.json").write_text('{"status": "unfinished"}')
    age(spec_path.parent, 7200)
    assert find_dead_jobs(600, hdb) == [job]


def test_status_never_moves_back(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    p.prepare_job(job, tmp_path, engine=hdb)
    p.record_job_results(job, engine=hdb)  # no summary: FAILED
    p.mark_started(job, engine=hdb)  # a late "started" does not move it back
    assert job_row(hdb, job).status == JobStatus.FAILED
    with pytest.raises(sa.exc.DBAPIError, match="may not move back"), hdb.begin() as c:
        c.execute(
            sa.text("UPDATE jobs SET status = :s WHERE job_id = :j"),
            {"s": JobStatus.STARTED, "j": job},
        )


def test_oneoff_seed_list_harvest(hdb, tmp_path):
    seeds = [
        "http://www.example-a.test:8099/",
        "example-b.test:8099/x",
        "http://www.example-a.test:8099/p",
    ]
    hid = create_seedlist_harvest(seeds, "demo_loopback", "manual__2026-11-22", engine=hdb)
    assert create_seedlist_harvest(seeds, "demo_loopback", "manual__2026-11-22", engine=hdb) == hid
    assert p.due_definitions("daily", LD, engine=hdb) == []  # never due on a schedule
    jobs = p.generate_jobs(hid, LD, engine=hdb)
    spec = json.loads(Path(p.prepare_job(jobs[0], tmp_path, engine=hdb)).read_text())
    assert sorted(spec["seeds"]) == sorted(
        [
            "http://www.example-a.test:8099/",
            "http://example-b.test:8099/x",
            "http://www.example-a.test:8099/p",
        ]
    )
    assert spec["template"]["name"] == "demo_loopback"


def test_oneoff_form_errors_name_the_field(hdb):
    with pytest.raises(OneOffError, match="either harvest_id or seeds"):
        validate_params({}, hdb)
    with pytest.raises(OneOffError, match="template: unknown template"):
        validate_params({"seeds": ["http://a.test/"], "template": "nope"}, hdb)
    with pytest.raises(OneOffError, match="seeds line 2"):
        validate_params({"seeds": ["http://a.test/", "ftp://b.test/"]}, hdb)
    with pytest.raises(OneOffError, match="harvest_id: no harvest definition"):
        validate_params({"harvest_id": 999}, hdb)
    with pytest.raises(OneOffError, match="positive number"):  # a zero budget crawls nothing
        validate_params({"seeds": ["http://a.test/"], "max_bytes": 0}, hdb)
    hid = create_demo_definition(8099, engine=hdb)
    assert validate_params({"harvest_id": hid}, hdb).harvest_id == hid


def test_rerunning_a_failed_job_resubmits_it_and_follows_the_link(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    old = p.generate_jobs(hid, LD, engine=hdb)[0]
    old_path = p.prepare_job(old, tmp_path, engine=hdb)
    p.mark_started(old, engine=hdb)
    assert p.record_job_results(old, engine=hdb)["status"] == "FAILED"  # the crawl died
    # the engineer clears the job's tasks: prepare, crawl, record run again with the old id
    new_path = p.prepare_job(old, tmp_path, engine=hdb)
    assert new_path != old_path
    new = json.loads(Path(new_path).read_text())["job_id"]
    assert (
        job_row(hdb, old).status == JobStatus.RESUBMITTED
        and job_row(hdb, old).resubmitted_as_job == new
    )
    p.mark_started(old, engine=hdb)
    assert job_row(hdb, new).status == JobStatus.STARTED
    write_summary(new_path, {"example-a.test": (3, 300, 0), "example-b.test": (1, 10, 0)})
    result = p.record_job_results(old, engine=hdb)
    assert (result["job_id"], result["status"], result["history_rows"]) == (new, "DONE", 2)
    assert p.prepare_job(old, tmp_path, engine=hdb) == new_path  # and stays idempotent
    assert p.generate_jobs(hid, LD, engine=hdb) == [new]


def test_oneoff_of_a_scheduled_definition_leaves_its_schedule_alone(hdb):
    hid = create_demo_definition(8099, engine=hdb)  # a daily definition
    p.generate_jobs(hid, LD, engine=hdb)
    p.advance_schedule(hid, LD, engine=hdb)

    def schedule_state():
        with hdb.connect() as c:
            return tuple(
                c.execute(
                    sa.text(
                        "SELECT h.numevents, p.nextdate FROM harvestdefinitions h"
                        " JOIN partialharvests p USING (harvest_id) WHERE harvest_id = :h"
                    ),
                    {"h": hid},
                ).one()
            )

    before = schedule_state()
    assert before == (1, datetime(2026, 11, 23, 3, 0, tzinfo=UTC))
    # an engineer's one-off two days later: an extra run, with its own number and jobs
    oneoff_at = datetime(2026, 11, 24, 14, 30, tzinfo=UTC)
    jobs = p.generate_jobs(hid, oneoff_at, engine=hdb)
    assert jobs
    result = p.finish_oneoff(hid, oneoff_at, engine=hdb)
    assert result["harvest_num"] == 2 and result["oneoff"] is True
    assert p.finish_oneoff(hid, oneoff_at, engine=hdb)["harvest_num"] == 2  # idempotent
    assert schedule_state() == before
    with hdb.connect() as c:
        advanced = c.execute(
            sa.text(
                "SELECT advanced_at FROM harvest_runs WHERE harvest_id = :h AND harvest_num = 2"
            ),
            {"h": hid},
        ).scalar()
    assert advanced is not None  # the run itself is closed


def test_a_oneoff_run_does_not_count_towards_the_schedules_repeats(hdb):
    hid = create_demo_definition(8099, engine=hdb)  # daily from LD
    with hdb.begin() as c:
        c.execute(
            sa.text(
                "UPDATE schedules SET maxrepeats = 2 WHERE schedule_id ="
                " (SELECT schedule_id FROM partialharvests WHERE harvest_id = :h)"
            ),
            {"h": hid},
        )
    assert hid in p.due_definitions("daily", LD, engine=hdb)
    p.generate_jobs(hid, LD, engine=hdb)
    p.advance_schedule(hid, LD, engine=hdb)
    # an engineer's one-off the same afternoon, as the oneoff_harvest DAG runs it
    oneoff_at = LD + timedelta(hours=11, minutes=30)
    assert p.start_oneoff(hid, oneoff_at, engine=hdb) == 2
    assert p.generate_jobs(hid, oneoff_at, engine=hdb)
    p.finish_oneoff(hid, oneoff_at, engine=hdb)
    # the schedule's second and last event is still due the next day, and is run 3
    second = LD + timedelta(days=1)
    assert hid in p.due_definitions("daily", second, engine=hdb)
    p.generate_jobs(hid, second, engine=hdb)
    result = p.advance_schedule(hid, second, engine=hdb)
    assert result["harvest_num"] == 3
    # and the schedule is over after its two events, not after two runs of any kind
    assert hid not in p.due_definitions("daily", second + timedelta(days=1), engine=hdb)


def test_oneoff_of_a_seed_list_still_counts_its_run(hdb):
    hid = create_seedlist_harvest(
        ["http://www.example-a.test:8099/"], "demo_loopback", "manual__x", engine=hdb
    )
    p.generate_jobs(hid, LD, engine=hdb)
    assert p.finish_oneoff(hid, LD, engine=hdb)["harvest_num"] == 1
    with hdb.connect() as c:
        assert (
            c.execute(
                sa.text("SELECT numevents FROM harvestdefinitions WHERE harvest_id = :h"),
                {"h": hid},
            ).scalar()
            == 1
        )
