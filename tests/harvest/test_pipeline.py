"""The selective-harvest pipeline on a real PostgreSQL: due, jobs, spec, results, schedule."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.demo.definition import create_demo_definition
from harvest import pipeline as p
from harvest.jobs import finished_summary
from harvestflow import settings as settings_mod
from harvestflow.formats.job_status import JobStatus
from indexing.dedup_index import dedup_index_for_job
from tests.support.imports import modules_loaded_by
from tests.support.summaries import write_summary

pytestmark = pytest.mark.services

LD = datetime(2026, 11, 22, 3, 0, tzinfo=UTC)


def status_of(engine, job_id):
    with engine.connect() as c:
        return c.execute(
            sa.text("SELECT status FROM jobs WHERE job_id = :j"), {"j": job_id}
        ).scalar()


def test_demo_definition_is_idempotent(hdb):
    a = create_demo_definition(8099, engine=hdb)
    b = create_demo_definition(8099, engine=hdb)
    assert a == b
    with hdb.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM harvestdefinitions")).scalar() == 1
        assert c.execute(sa.text("SELECT count(*) FROM harvest_configs")).scalar() == 2


def test_whole_run_from_due_to_next_date(hdb, tmp_path):
    hid = create_demo_definition(8123, engine=hdb)
    assert p.due_definitions("daily", LD, engine=hdb) == [hid]
    assert p.due_definitions("weekly", LD, engine=hdb) == []
    jobs = p.generate_jobs(hid, LD, engine=hdb)
    assert len(jobs) == 1 and status_of(hdb, jobs[0]) == JobStatus.NEW
    path = p.prepare_job(jobs[0], tmp_path, engine=hdb)
    assert status_of(hdb, jobs[0]) == JobStatus.SUBMITTED
    assert Path(path).relative_to(tmp_path).parts[:3] == ("jobs", str(hid), str(jobs[0]))
    spec = json.loads(Path(path).read_text())
    assert spec["seeds"] == ["http://www.example-a.test:8123/", "http://example-b.test:8123/"]
    assert spec["template"]["name"] == "demo_loopback"
    assert spec["template"]["allow_private_addresses"] is True
    assert spec["resolve"]["www.example-a.test"] == "127.0.0.1"
    assert spec["channel"] == "CIBLEE" and spec["snapshot"] is False
    assert spec["warc_prefix"] == f"{jobs[0]}-{hid}"
    assert {d["domain"] for d in spec["domains"]} == {"example-a.test", "example-b.test"}
    # the crawler's own reader accepts the spec (the contract between the two sides)
    from crawler.jobspec import load

    loaded = load(Path(path))
    assert loaded.template.allow_private_addresses and loaded.template.min_delay_ms == 0
    assert loaded.all_resolve["static.example-a.test"] == "127.0.0.1"
    assert [d.max_bytes for d in loaded.domains] == [100_000_000, 100_000_000]
    p.mark_started(jobs[0], engine=hdb)
    assert status_of(hdb, jobs[0]) == JobStatus.STARTED
    write_summary(path, {"example-a.test": (40, 12345, 0), "example-b.test": (7, 700, 1)})
    (Path(path).parent / "reports").mkdir()
    (Path(path).parent / "reports" / "crawl-report.txt").write_text("Crawl Name: x\n")
    result = p.record_job_results(jobs[0], engine=hdb)
    assert result["status"] == "DONE" and result["history_rows"] == 2
    assert p.record_job_results(jobs[0], engine=hdb)["history_rows"] == 2  # UPSERT
    with hdb.connect() as c:
        rows = c.execute(
            sa.text("SELECT objectcount, bytecount, stopreason FROM historyinfo ORDER BY 1")
        ).all()
        assert [tuple(r) for r in rows] == [(7, 700, 1), (40, 12345, 0)]
        names = c.execute(sa.text("SELECT name FROM job_reports ORDER BY 1")).scalars().all()
        assert names == ["crawl-report.txt", "summary.json"]
    assert status_of(hdb, jobs[0]) == JobStatus.DONE
    adv = p.advance_schedule(hid, LD, engine=hdb)
    assert adv["next_date"] == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    with hdb.connect() as c:
        assert c.execute(sa.text("SELECT numevents FROM harvestdefinitions")).scalar() == 1


def test_rerun_and_backfill_create_no_second_job(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    first = p.generate_jobs(hid, LD, engine=hdb)
    assert p.generate_jobs(hid, LD, engine=hdb) == first
    path = p.prepare_job(first[0], tmp_path, engine=hdb)
    p.mark_started(first[0], engine=hdb)
    assert p.prepare_job(first[0], tmp_path, engine=hdb) == path  # retried task: same dir
    assert finished_summary(path) is None  # not crawled yet: a retried crawl task crawls
    summary = write_summary(path, {"example-a.test": (1, 10, 0), "example-b.test": (1, 10, 0)})
    # crawled: a re-run reports it, crawls nothing
    done = finished_summary(path)
    assert done is not None
    assert done.brief() == {k: summary[k] for k in ("job_id", "status", "urls", "bytes")}
    assert {d: (e.objects, e.bytes, e.stop_reason) for d, e in done.domains.items()} == {
        "example-a.test": (1, 10, 0),
        "example-b.test": (1, 10, 0),
    }
    p.advance_schedule(hid, LD, engine=hdb)
    # backfill of an earlier day: a new run (own number), once
    earlier = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    assert p.due_definitions("daily", earlier, engine=hdb) == [hid]
    back = p.generate_jobs(hid, earlier, engine=hdb)
    assert back != first and p.generate_jobs(hid, earlier, engine=hdb) == back
    p.advance_schedule(hid, earlier, engine=hdb)
    with hdb.connect() as c:
        runs = c.execute(
            sa.text("SELECT logical_date, harvest_num FROM harvest_runs ORDER BY harvest_num")
        ).all()
        nextdate = c.execute(sa.text("SELECT nextdate FROM partialharvests")).scalar()
    assert [r.harvest_num for r in runs] == [1, 2]
    # the backfill did not pull the next date back
    assert nextdate == datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


def test_missing_summary_fails_the_job_with_the_reason(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    p.prepare_job(job, tmp_path, engine=hdb)
    result = p.record_job_results(job, engine=hdb)
    assert result["status"] == "FAILED"
    assert status_of(hdb, job) == JobStatus.FAILED
    with hdb.connect() as c:
        err = c.execute(sa.text("SELECT harvest_errors FROM jobs")).scalar()
    assert "summary.json" in err


def test_a_summary_field_of_the_wrong_type_fails_the_job_naming_file_and_field(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    path = p.prepare_job(job, tmp_path, engine=hdb)
    summary = write_summary(path, {"example-a.test": (2, 200, 0), "example-b.test": (1, 100, 0)})
    summary_path = Path(path).parent / "summary.json"
    summary_path.write_text(json.dumps({**summary, "urls": "3 URLs"}))
    result = p.record_job_results(job, engine=hdb)
    assert result["status"] == "FAILED"
    assert status_of(hdb, job) == JobStatus.FAILED
    with hdb.connect() as c:
        err = c.execute(sa.text("SELECT harvest_errors FROM jobs")).scalar()
    assert err == f"{summary_path}: field 'urls': expected an integer, got '3 URLs'"


def test_broken_schedule_deactivates_only_that_definition(hdb):
    from harvest.definitions import ensure_schedule, ensure_selective_definition

    hid = create_demo_definition(8099, engine=hdb)
    with hdb.begin() as c:
        # bad data from an import: the schedule ends before it starts
        ensure_schedule(
            c, "broken", timeunit=2, numtimeunits=1, startdate=LD, enddate=datetime(2026, 1, 1)
        )
        bad = ensure_selective_definition(c, "bad", frequency="daily", schedule="broken")
    assert p.due_definitions("daily", LD, engine=hdb) == [hid]
    with hdb.connect() as c:
        row = c.execute(
            sa.text(
                "SELECT isactive, inactive_reason FROM harvestdefinitions WHERE harvest_id = :h"
            ),
            {"h": bad},
        ).first()
    assert not row.isactive
    assert "scheduling failed" in row.inactive_reason and "before it starts" in row.inactive_reason


def test_job_carries_global_domain_and_definition_traps(hdb, tmp_path):
    from harvest.traps import load_global_trap_list

    traps = tmp_path / "traps.txt"
    traps.write_text("# calendars\n/calendar/\\d{4}/\n\n[?&]sessionid=\n")
    assert load_global_trap_list("default", traps, engine=hdb) == 2
    (tmp_path / "bad.txt").write_text("ok\n(unclosed\n")
    with pytest.raises(ValueError, match=r"bad\.txt line 2"):
        load_global_trap_list("bad", tmp_path / "bad.txt", engine=hdb)
    hid = create_demo_definition(8099, engine=hdb)
    with hdb.begin() as c:
        c.execute(
            sa.text("UPDATE domains SET crawlertraps = '{/print/}' WHERE name = 'example-a.test'")
        )
        c.execute(sa.text("UPDATE harvestdefinitions SET crawlertraps = '{[?]replytocom=}'"))
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    spec = json.loads(Path(p.prepare_job(job, tmp_path, engine=hdb)).read_text())
    assert sorted(spec["crawler_traps"]) == sorted(
        ["/calendar/\\d{4}/", "[?&]sessionid=", "/print/", "[?]replytocom="]
    )


@pytest.fixture
def own_data_dir(tmp_path, monkeypatch):
    """A data directory of the test's own: the session's may hold another test's dedup sidecars
    for harvest 1 / job 1 (ids restart with every fresh database), which the builder would read."""
    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(tmp_path / "data"))
    settings_mod.reset()
    yield tmp_path / "data"
    monkeypatch.undo()
    settings_mod.reset()


def _indexed(data_dir: Path, name: str, lines: list[str]) -> None:
    """A per-file CDX file the indexing chain wrote (not merged yet)."""
    day = data_dir / "index" / "cdx" / "daily" / "2026-11-22"
    day.mkdir(parents=True, exist_ok=True)
    (day / (name + ".cdx")).write_text("".join(ln + "\n" for ln in sorted(lines)))


def test_a_jobs_dedup_index_holds_every_earlier_capture_on_its_domains(hdb, tmp_path, own_data_dir):
    hid = create_demo_definition(8099, engine=hdb)
    first = p.generate_jobs(hid, LD, engine=hdb)[0]
    path1 = p.prepare_job(first, tmp_path, engine=hdb, dedup_index=dedup_index_for_job)
    assert json.loads(Path(path1).read_text())["dedup_index"] is None  # nothing before
    write_summary(path1, {"example-a.test": (2, 200, 0), "example-b.test": (1, 100, 0)})
    p.record_job_results(first, engine=hdb)
    a = "http://www.example-a.test:8099"
    # this definition's run, and another definition's (a broad crawl) on the same domains
    _indexed(own_data_dir, "1-1-x.warc.gz", [
        f"test,example-a:8099)/ 20261122030001 {a}/ text/html 200 {'A' * 32} - - 300 0"
        " 1-1-x.warc.gz",
        f"test,example-a:8099)/img.png 20261122030002 {a}/img.png image/png 200 {'B' * 32}"
        " - - 900 300 1-1-x.warc.gz",
        f"test,example-a:8099)/r 20261122030003 {a}/r warc/revisit 200 {'B' * 32} - - 100 1200"
        " 1-1-x.warc.gz",
    ])  # fmt: skip
    _indexed(own_data_dir, "9-7-y.warc.gz", [
        f"test,example-a:8099)/img.png 20261122050000 {a}/img.png image/png 200 {'C' * 32}"
        " - - 900 0 9-7-y.warc.gz",
        f"test,example-b)/ 20261122050001 http://example-b.test/ text/html 200 {'D' * 32}"
        " - - 900 900 9-7-y.warc.gz",
        f"test,example-z)/ 20261122050002 http://example-z.test/ text/html 200 {'E' * 32}"
        " - - 900 1800 9-7-y.warc.gz",
    ])  # fmt: skip
    second = p.generate_jobs(hid, datetime(2026, 11, 23, 3, tzinfo=UTC), engine=hdb)[0]
    spec = json.loads(
        Path(
            p.prepare_job(second, tmp_path, engine=hdb, dedup_index=dedup_index_for_job)
        ).read_text()
    )
    lines = Path(spec["dedup_index"]).read_text().splitlines()
    # the latest capture of each URL of the job's domains, the revisit and example-z.test left out
    assert lines == [
        f"{a}/\tsha1:{'A' * 32}\t2026-11-22T03:00:01Z\t1-1-x.warc.gz\t0\t-\t-\t-",
        f"{a}/img.png\tsha1:{'C' * 32}\t2026-11-22T05:00:00Z\t9-7-y.warc.gz\t0\t-\t-\t-",
        f"http://example-b.test/\tsha1:{'D' * 32}\t2026-11-22T05:00:01Z\t9-7-y.warc.gz\t900"
        "\t-\t-\t-",
    ]


def test_a_jobs_dedup_index_names_earlier_warcs_by_the_path_they_are_at(
    hdb, tmp_path, own_data_dir
):
    """The crawler reads a revisit's original back for a rendering browser: the job's dedup
    index names the earlier WARC by its final copy's absolute path (a bare name it could not
    open), and keeps the name where no copy is known."""
    hid = create_demo_definition(8099, engine=hdb)
    first = p.generate_jobs(hid, LD, engine=hdb)[0]
    path1 = p.prepare_job(first, tmp_path, engine=hdb, dedup_index=dedup_index_for_job)
    write_summary(path1, {"example-a.test": (2, 200, 0), "example-b.test": (1, 100, 0)})
    p.record_job_results(first, engine=hdb)
    final = tmp_path / "repository" / "1-1-x.warc.gz"
    final.parent.mkdir()
    final.write_bytes(b"a WARC")
    _indexed(own_data_dir, "1-1-x.warc.gz", [
        "test,example-a)/ 20261122030001 http://www.example-a.test:8099/ text/html 200 "
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA - - 300 0 1-1-x.warc.gz",
        "test,example-a)/b 20261122030002 http://www.example-a.test:8099/b text/html 200 "
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB - - 300 0 1-1-gone.warc.gz",
    ])  # fmt: skip
    with hdb.begin() as c:
        for name, final_path in (("1-1-x.warc.gz", str(final)), ("1-1-gone.warc.gz", "/nowhere")):
            c.execute(
                sa.text(
                    "INSERT INTO index_manifest (file_name, job_id, harvest_id, source_path,"
                    " final_path) VALUES (:n, :j, :h, '/nowhere', :f)"
                ),
                {"n": name, "j": first, "h": hid, "f": final_path},
            )
    second = p.generate_jobs(hid, datetime(2026, 11, 23, 3, tzinfo=UTC), engine=hdb)[0]
    spec = json.loads(
        Path(
            p.prepare_job(second, tmp_path, engine=hdb, dedup_index=dedup_index_for_job)
        ).read_text()
    )
    files = [ln.split("\t")[3] for ln in Path(spec["dedup_index"]).read_text().splitlines()]
    assert files == [str(final), "1-1-gone.warc.gz"]


def test_failing_job_generation_deactivates_only_that_definition(hdb, monkeypatch):
    from harvest import planning
    from harvest.definitions import ensure_selective_definition
    from harvest.domains import ensure_config

    good = create_demo_definition(8099, engine=hdb)
    with hdb.begin() as c:
        ref = ensure_config(
            c, "broken.test", template="demo_loopback", seeds=["http://broken.test/"]
        )
        bad = ensure_selective_definition(c, "bad", frequency="daily", config_ids=[ref.config_id])
    real = planning.plan_jobs

    def plan_jobs(conn, harvest_id, **kwargs):
        if harvest_id == bad:
            raise ValueError("configuration 42 has no seed list")
        return real(conn, harvest_id, **kwargs)

    monkeypatch.setattr(planning, "plan_jobs", plan_jobs)
    ids = p.due_definitions("daily", LD, engine=hdb)
    assert ids == [good, bad]
    result = p.generate_due_jobs(ids, LD, engine=hdb)
    assert list(result["deactivated"]) == [bad]
    assert len(result["jobs"]) == 1
    with hdb.connect() as c:
        row = c.execute(
            sa.text(
                "SELECT isactive, inactive_reason FROM harvestdefinitions WHERE harvest_id = :h"
            ),
            {"h": bad},
        ).one()
        runs = c.execute(
            sa.text("SELECT count(*) FROM harvest_runs WHERE harvest_id = :h"), {"h": bad}
        ).scalar()
    assert not row.isactive and runs == 0  # nothing half-written
    assert row.inactive_reason == (
        "scheduling failed: job generation: ValueError: configuration 42 has no seed list"
    )
    # its schedule is left alone, the good one advances; a re-run of the DAG run skips it
    assert p.advance_schedule(bad, LD, engine=hdb)["skipped"] == "no run at this date"
    assert p.advance_schedule(good, LD, engine=hdb)["next_date"] is not None
    assert p.due_definitions("daily", LD, engine=hdb) == [good]
    assert p.generate_due_jobs([good], LD, engine=hdb)["jobs"] == result["jobs"]


def test_lost_database_connection_does_not_deactivate_a_definition(hdb, monkeypatch):
    from harvest import planning

    hid = create_demo_definition(8099, engine=hdb)

    def plan_jobs(conn, harvest_id, **kwargs):
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("server closed the connection"))

    monkeypatch.setattr(planning, "plan_jobs", plan_jobs)
    with pytest.raises(sa.exc.OperationalError):
        p.generate_due_jobs([hid], LD, engine=hdb)
    with hdb.connect() as c:
        assert c.execute(sa.text("SELECT isactive FROM harvestdefinitions")).scalar() is True


def test_backfill_inside_a_finished_schedule_harvests_what_was_due_then(hdb):
    from datetime import timedelta

    from harvest.definitions import ensure_schedule, ensure_selective_definition

    day = timedelta(days=1)
    d0 = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
    with hdb.begin() as c:
        # events at 03:00 on the 1st, 2nd and 3rd of November, then nothing
        ensure_schedule(c, "three", timeunit=2, numtimeunits=1, startdate=d0, enddate=d0 + 2 * day)
        hid = ensure_selective_definition(c, "three-days", frequency="daily", schedule="three")
    # the DAG ran on the 2nd and the 3rd (it was paused on the 1st)
    for when in (d0 + day, d0 + 2 * day):
        assert p.due_definitions("daily", when, engine=hdb) == [hid]
        p.generate_jobs(hid, when, engine=hdb)
        adv = p.advance_schedule(hid, when, engine=hdb)
    assert adv["deactivated"] == "schedule finished"
    assert p.due_definitions("daily", d0 + 3 * day, engine=hdb) == []  # after the end: nothing
    # a backfill of the 1st harvests what was due then, once
    assert p.due_definitions("daily", d0, engine=hdb) == [hid]
    p.generate_jobs(hid, d0, engine=hdb)
    p.advance_schedule(hid, d0, engine=hdb)
    assert p.due_definitions("daily", d0, engine=hdb) == [hid]  # a re-run redoes the same run
    assert p.due_definitions("daily", d0 - day, engine=hdb) == []  # before the start: nothing
    with hdb.connect() as c:
        nums = c.execute(
            sa.text("SELECT harvest_num FROM harvest_runs WHERE harvest_id = :h ORDER BY 1"),
            {"h": hid},
        ).scalars()
        assert list(nums) == [1, 2, 3]
        row = c.execute(
            sa.text("SELECT isactive FROM harvestdefinitions WHERE harvest_id = :h"), {"h": hid}
        ).one()
    assert not row.isactive  # the backfill does not reactivate it


def test_a_definition_deactivated_by_hand_is_not_backfilled(hdb):
    hid = create_demo_definition(8099, engine=hdb)
    with hdb.begin() as c:
        c.execute(
            sa.text(
                "UPDATE harvestdefinitions SET isactive = false, inactive_reason = 'curator: paused'"
                " WHERE harvest_id = :h"
            ),
            {"h": hid},
        )
    assert p.due_definitions("daily", LD, engine=hdb) == []


def test_a_job_freezes_its_template_and_seed_list(hdb, tmp_path):
    hid = create_demo_definition(8099, engine=hdb)
    job = p.generate_jobs(hid, LD, engine=hdb)[0]
    # after generation a curator changes the seeds and an engineer the template
    with hdb.begin() as c:
        c.execute(sa.text("UPDATE seedlists SET seeds = 'http://changed.test/'"))
        c.execute(
            sa.text(
                "UPDATE templates SET spec = jsonb_set(spec, '{max_hops}', '99')"
                " WHERE name = 'demo_loopback'"
            )
        )
    spec = json.loads(Path(p.prepare_job(job, tmp_path, engine=hdb)).read_text())
    assert spec["seeds"] == ["http://www.example-a.test:8099/", "http://example-b.test:8099/"]
    assert spec["template"]["max_hops"] != 99
    # the next run's job takes the new seeds and template
    later = p.generate_jobs(hid, datetime(2026, 11, 23, 3, tzinfo=UTC), engine=hdb)[0]
    spec2 = json.loads(Path(p.prepare_job(later, tmp_path, engine=hdb)).read_text())
    assert spec2["seeds"] == ["http://changed.test/"] and spec2["template"]["max_hops"] == 99


def test_a_task_imports_only_what_it_runs() -> None:
    """A preload or bookkeeping task asks harvest.pipeline for one function: the crawl's modules
    (Scrapy, Twisted: ~1 CPU-second at every task's start) are not loaded for it, nor for the
    crawl task itself (its crawler runs in a child process)."""

    code = (
        "from harvest.pipeline import collect_sources, record_job_results, crawl_prepared_job\n"
        "from harvest import pipeline\n"
        "assert all(getattr(pipeline, n) for n in pipeline.__all__)\n"
    )
    assert modules_loaded_by(code, ("scrapy", "twisted")) == []
