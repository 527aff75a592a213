"""The curator overview, attention first, on a real harvest database: in headless Chromium it
lists a failed job with its reason, a running crawl whose figures change by themselves when
its progress log grows, a job with a failed QA and a preservation manual-queue item, each
linking to the page where it is dealt with; the growth CSV's sums equal the database's own
sums over the 90 days; at 1,000 definitions and 100,000 jobs the overview's queries read the
big tables through indexes only (EXPLAIN) and are as many as on an empty database."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow.contracts.jobdir import JobDir
from tests.support.browser import chromium
from tests.support.signed_in import auth_for, serving

pytestmark = pytest.mark.services

PROGRESS = (
    "           timestamp  discovered      queued  downloaded       doc/s(avg)  KB/s(avg)"
    "   dl-failures\n"
)


def _progress_line(done: int, queued: int) -> str:
    return f"2026-11-28T10:00:00Z {done + queued:>11} {queued:>11} {done:>11} 2.00(1.50) 30(20) 0\n"


def _job(conn: sa.Connection, harvest_id: int, num: int, status: int, **cols: Any) -> int:
    names = ", ".join(cols)
    values = ", ".join(f":{c}" for c in cols)
    return int(
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                f" template_name, template, seedlist{', ' + names if cols else ''})"
                " VALUES (:h, :n, 0, :s, 'CIBLEE', 't', '{}'::jsonb, 'http://a.test/'"
                f"{', ' + values if cols else ''}) RETURNING job_id"
            ),
            {"h": harvest_id, "n": num, "s": status, **cols},
        ).scalar_one()
    )


@pytest.fixture
def seeded(db_engine: sa.Engine, tmp_path: Path) -> dict[str, Any]:
    """One of each thing the overview must show (see the module doc)."""
    from harvest.bootstrap import ensure_reference_data
    from harvest.definitions import ensure_selective_definition

    ensure_reference_data(db_engine)
    job_dir = tmp_path / "running"
    JobDir(job_dir).progress_log.parent.mkdir(parents=True)
    JobDir(job_dir).progress_log.write_text(PROGRESS + _progress_line(120, 30))
    task = {"dag_id": "selective_harvest_daily", "run_id": "manual__9", "task_id": "crawl"}
    with db_engine.begin() as conn:
        hid = ensure_selective_definition(conn, "web-test", frequency=None)
        failed = _job(conn, hid, 1, 4, harvest_errors="crawl ended: disk full")
        conn.execute(
            sa.text(
                "UPDATE jobs SET enddate = now() - interval '2 hours',"
                " airflow_task = CAST(:t AS jsonb) WHERE job_id = :j"
            ),
            {"j": failed, "t": json.dumps(task)},
        )
        running = _job(conn, hid, 2, 2, job_dir=str(job_dir), forcemaxrunningtime=7200)
        conn.execute(
            sa.text("UPDATE jobs SET startdate = now() - interval '10 minutes' WHERE job_id = :j"),
            {"j": running},
        )
        low_qa = _job(conn, hid, 3, 3)
        conn.execute(
            sa.text(
                "INSERT INTO job_qa_comments (job_id, author, qa_status, body)"
                " VALUES (:j, 'claire', 'failed', 'the home page has no images')"
            ),
            {"j": low_qa},
        )
        manual = _job(conn, hid, 4, 3)
        conn.execute(
            sa.text(
                "INSERT INTO preservation_packages (job_id, harvest_id, status, error,"
                " finished_at) VALUES (:j, :h, 'manual', 'checksum mismatch on upload', now())"
            ),
            {"j": manual, "h": hid},
        )
    return {
        "failed": failed, "running": running, "low_qa": low_qa, "manual": manual,
        "progress": JobDir(job_dir).progress_log,
    }  # fmt: skip


@pytest.fixture
def served(db_engine: sa.Engine, tmp_path: Path) -> Iterator[str]:
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for({"ann": Role.VIEWER}))
    with serving(app, timeout=60) as base:
        yield base


def _link(driver: Any, section: str, text: str) -> str:
    link = driver.find_element(By.XPATH, f"//*[@id='{section}']/following::a[text()='{text}'][1]")
    return str(link.get_attribute("href"))


def test_overview_lists_what_needs_attention_each_linking_where_it_is_fixed(
    seeded: dict[str, Any], served: str
) -> None:
    with chromium() as driver:
        driver.get(f"{served}/static/curator.css")
        driver.add_cookie({"name": "test_user", "value": "ann", "path": "/"})
        driver.get(f"{served}/")
        attention = driver.find_element(By.ID, "attention").text
        assert "crawl ended: disk full" in attention
        assert "the home page has no images" in attention
        assert "checksum mismatch on upload" in attention
        links = {
            "failed": _link(driver, "failed-jobs", str(seeded["failed"])),
            "running": _link(driver, "running", str(seeded["running"])),
            "low_qa": _link(driver, "low-qa", str(seeded["low_qa"])),
            "manual": _link(driver, "manual-queue", str(seeded["manual"])),
        }
        task_log = driver.find_element(By.CSS_SELECTOR, "#attention a[data-airflow-page]")
        assert task_log.get_attribute("href").endswith(
            "/dags/selective_harvest_daily/runs/manual__9/tasks/crawl"
        )
        running = driver.find_element(By.ID, "running-crawls")
        assert re.search(r"\b120\b.*\b30\b", running.text), running.text
        assert "1 h 50 min" in running.text or "1 h 49 min" in running.text  # of 2 h budget
        # the crawl goes on: the page shows it without being loaded again
        with seeded["progress"].open("a") as log:
            log.write(_progress_line(175, 12))
        WebDriverWait(driver, 30).until(
            lambda d: "175" in d.find_element(By.ID, "running-crawls").text
        )
        assert (
            driver.execute_script("return performance.getEntriesByType('navigation').length") == 1
        )
        pages = {}
        for name, href in links.items():
            driver.get(href)
            pages[name] = driver.find_element(By.TAG_NAME, "h1").text
    assert links["failed"] == f"{served}/jobs/{seeded['failed']}"
    assert links["running"] == f"{served}/jobs/{seeded['running']}"
    assert links["low_qa"] == f"{served}/jobs/{seeded['low_qa']}#qa"
    assert links["manual"] == f"{served}/preservation"
    assert pages == {
        "failed": f"Job {seeded['failed']}",
        "running": f"Job {seeded['running']}",
        "low_qa": f"Job {seeded['low_qa']}",
        "manual": "Preservation",
    }


def _client(engine: sa.Engine, tmp_path: Path) -> TestClient:
    app = create_app(lambda: engine, data_dir=tmp_path, auth=auth_for({"ann": Role.VIEWER}))
    return TestClient(app, headers={"Authorization": "Bearer ann"})


def _definitions(conn: sa.Connection) -> dict[str, int]:
    """A selective, a snapshot and the continuous crawl's definition, with one configuration."""
    from harvest.continuous.jobs import definition_id
    from harvest.definitions import ensure_selective_definition, ensure_snapshot_definition
    from harvest.domains import ensure_config

    config = ensure_config(conn, "a.test").config_id
    return {
        "config": config,
        "selective": ensure_selective_definition(conn, "sel", frequency=None),
        "snapshot": ensure_snapshot_definition(conn, "broad"),
        "continuous": definition_id(conn),
    }


def test_growth_csv_sums_equal_the_database_counts(db_engine: sa.Engine, tmp_path: Path) -> None:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    with db_engine.begin() as conn:
        ids = _definitions(conn)
        # per channel kind: jobs 0..119 days ago (the oldest outside the 90 days), odd figures
        for n, kind in enumerate(("selective", "snapshot", "continuous")):
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist)"
                    " SELECT :h, g, 0, 3, 'X', 't', '{}'::jsonb, '' FROM generate_series(1, 120) g"
                ),
                {"h": ids[kind]},
            )
            conn.execute(
                sa.text(
                    "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                    " harvest_id, job_id, harvest_time)"
                    " SELECT 0, 7 * j.harvest_num + :n, 1000 * j.harvest_num + 13 * :n, :c, :h,"
                    " j.job_id, now() - make_interval(days => j.harvest_num - 1, hours => :n)"
                    " FROM jobs j WHERE j.harvest_id = :h"
                ),
                {"h": ids[kind], "n": n, "c": ids["config"]},
            )
    resp = _client(db_engine, tmp_path).get("/growth.csv")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(resp.text)))
    assert len(rows) == 90 * 3
    with db_engine.connect() as conn:
        expected = {
            r.kind: (int(r.captures), int(r.bytes))
            for r in conn.execute(
                sa.text(
                    "SELECT CASE h.kind WHEN 'full' THEN 'snapshot' ELSE"
                    " CASE h.name WHEN 'continuous' THEN 'continuous' ELSE 'selective' END END"
                    " AS kind, sum(hi.objectcount) AS captures, sum(hi.bytecount) AS bytes"
                    " FROM historyinfo hi JOIN harvestdefinitions h USING (harvest_id)"
                    " WHERE hi.harvest_time >= date_trunc('day', now() AT TIME ZONE 'UTC')"
                    "   AT TIME ZONE 'UTC' - interval '89 days' GROUP BY 1"
                )
            )
        }
    got: dict[str, list[int]] = {}
    for row in rows:
        sums = got.setdefault(row["channel"], [0, 0])
        sums[0] += int(row["captures"])
        sums[1] += int(row["bytes"])
    assert {k: tuple(v) for k, v in got.items()} == expected
    assert len(expected) == 3 and all(v[0] > 0 for v in expected.values())
    # the page draws the same data: captures and bytes, one line of 90 days per channel kind
    page = _client(db_engine, tmp_path).get("/").text
    charts = re.findall(r"<svg class=\"chart\".*?</svg>", page, re.S)
    assert len(charts) == 2
    for svg in charts:
        lines = re.findall(r'<polyline [^>]*points="([^"]*)"', svg)
        assert [len(points.split()) for points in lines] == [90, 90, 90]


def _statements(engine: sa.Engine, client: TestClient, paths: list[str]) -> list[tuple[str, Any]]:
    """The SQL statements (with their parameters) the pages at ``paths`` ran."""
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        if not statement.lstrip().upper().startswith(("SET", "BEGIN", "SHOW", "SELECT PG_")):
            seen.append((statement, params))

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        for path in paths:
            assert client.get(path).status_code == 200, path
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return seen


def _scans(plan: Any) -> set[tuple[str, str]]:
    """(node type, relation) of every scan of a JSON plan."""
    found = set()
    if isinstance(plan, dict):
        if "Relation Name" in plan:
            found.add((plan["Node Type"], plan["Relation Name"]))
        for value in plan.values():
            found |= _scans(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= _scans(value)
    return found


def test_overview_reads_big_tables_through_indexes_at_100000_jobs(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    client = _client(db_engine, tmp_path)
    paths = ["/", "/overview/running", "/growth.csv"]
    with db_engine.begin() as conn:
        ids = _definitions(conn)
    small = _statements(db_engine, client, paths)
    with db_engine.begin() as conn:
        # 1,000 scheduled definitions; 100,000 jobs over three years, 2 % failed, a few running
        conn.execute(
            sa.text(
                "INSERT INTO harvestdefinitions (name, kind) SELECT 'def-' || g, 'partial'"
                " FROM generate_series(1, 1000) g;"
                " INSERT INTO partialharvests (harvest_id, schedule_id, nextdate)"
                " SELECT h.harvest_id, (SELECT min(schedule_id) FROM schedules),"
                " now() + make_interval(hours => h.harvest_id % 500)"
                " FROM harvestdefinitions h WHERE h.name LIKE 'def-%'"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist, startdate, enddate)"
                " SELECT h.harvest_id, g, 0, CASE WHEN g % 50 = 0 THEN 4"
                " WHEN g % 20000 = 1 THEN 2 ELSE 3 END, 'CIBLEE', 't', '{}'::jsonb, '',"
                " now() - make_interval(days => g % 1095, hours => 1),"
                " CASE WHEN g % 20000 = 1 THEN NULL ELSE now() - make_interval(days => g % 1095) END"
                " FROM generate_series(1, 100000) g"
                " JOIN harvestdefinitions h ON h.name = 'def-' || (g % 1000 + 1)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                " harvest_id, job_id, harvest_time)"
                " SELECT 0, 10, 1000, :c, j.harvest_id, j.job_id, coalesce(j.enddate, now())"
                " FROM jobs j"
            ),
            {"c": ids["config"]},
        )
        assert conn.execute(sa.text("SELECT count(*) FROM jobs")).scalar_one() == 100_000
    with db_engine.connect() as conn:
        conn.execute(sa.text("ANALYZE"))
    big = _statements(db_engine, client, paths)
    assert len(big) == len(small)  # no query per row: as many statements as on an empty database
    seq = set()
    with db_engine.connect() as conn:
        for statement, params in big:
            plan = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, params).scalar_one()
            seq |= {rel for node, rel in _scans(plan) if node == "Seq Scan"}
    assert not seq & {"jobs", "historyinfo", "partialharvests"}, seq
