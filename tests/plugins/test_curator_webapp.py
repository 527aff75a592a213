"""Curator web app through FastAPI's TestClient on a real (fresh) harvest database: the auth
dependency guards every route, pages only read (GET routes, READ ONLY transactions), long lists
are paginated and page numbers out of range clamped, a running job shows its progress, the
preservation page lists the manual queue, a bad crawl.log regex is shown as a message (not a
500), and the search shows its matching lines."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.curator.webapp import create_app
from harvest import views as queries
from harvestflow import paged
from tests.support.curator_jobs import _insert_job
from tests.support.signed_in import token_required

LOG = [
    "2026-11-22T03:09:30.143Z   200   34 http://a.test/robots.txt P - text/plain #000 x sha1:A - -",
    "2026-11-22T03:09:30.180Z   200 2136 http://a.test/ - - text/html #000 x sha1:B - -",
    "2026-11-22T03:09:31.000Z   404   10 http://a.test/missing L http://a.test/ text/html #1 x - - -",
]


@pytest.fixture
def job(db_engine: sa.Engine, tmp_path: Path) -> int:
    """One DONE job of one definition, with a crawl.log in its job directory."""
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    job_dir = tmp_path / "job"
    (job_dir / "logs").mkdir(parents=True)
    (job_dir / "logs" / "crawl.log").write_text("\n".join(LOG) + "\n")
    return _insert_job(db_engine, job_dir, status=3)


@pytest.fixture
def client(db_engine: sa.Engine, tmp_path: Path) -> TestClient:
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=token_required)
    return TestClient(app, headers={"Authorization": "Bearer ok"})


def test_every_route_is_refused_without_auth(client: TestClient, job: int) -> None:
    anonymous = TestClient(client.app)
    paths = ["/", "/definitions", "/jobs", f"/jobs/{job}", f"/jobs/{job}/progress.png"]
    paths += ["/domains", "/qa", "/preload", "/preservation", "/static/curator.css"]
    for path in paths:
        assert anonymous.get(path).status_code == 401, path
    assert client.get(f"/jobs/{job}").status_code == 200


def test_page_numbers_are_clamped_not_errors(client: TestClient, job: int) -> None:
    for page_no in ("0", "-5", "99999999999"):
        resp = client.get("/jobs", params={"page_no": page_no})
        assert resp.status_code == 200, (page_no, resp.text[:300])
    assert "web-test" in client.get("/jobs", params={"page_no": "-5"}).text
    assert client.get("/jobs", params={"page_no": "abc"}).status_code == 422


def test_bad_regex_is_a_message_and_a_good_one_finds_lines(client: TestClient, job: int) -> None:
    bad = client.get(f"/jobs/{job}", params={"q": "(unclosed"})
    assert bad.status_code == 200
    assert "invalid regular expression" in bad.text
    found = client.get(f"/jobs/{job}", params={"q": r"a\.test/missing", "status": "404"})
    assert found.status_code == 200
    assert "http://a.test/missing" in found.text and "robots.txt" not in found.text


def test_jobs_link_to_their_airflow_task_log(client: TestClient, job: int) -> None:
    link = "/dags/selective_harvest_daily/runs/manual__1/tasks/crawl/mapped/2"
    assert f'href="{link}" target="_top" data-airflow-page>' in client.get("/jobs").text
    assert f'href="{link}" target="_top" data-airflow-page>' in client.get(f"/jobs/{job}").text
    # inside Airflow's sandboxed iframe such links are routed by this script (browser test)
    script = client.get("/static/curator.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "a[data-airflow-page]" in script.text


def test_unknown_things_are_404(client: TestClient) -> None:
    assert client.get("/jobs/999999").status_code == 404
    assert client.get("/domains/no.such.domain").status_code == 404
    assert client.get("/qa/not-a-day").status_code == 404
    assert client.get("/qa/2026-01-01/charts/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/static/..%2Fwebapp.py").status_code == 404
    assert client.get("/static/base.html").status_code == 404


def test_routes_only_read(client: TestClient, db_engine: sa.Engine, job: int) -> None:
    routes = [r for r in client.app.routes if isinstance(r, APIRoute)]
    # the writes: an operator's action on a running crawl (tests/plugins/test_curator_actions),
    # the selection records' forms (tests/plugins/test_curator_records), a QA comment and a
    # target's annotation (tests/plugins/test_curator_feedback_browser), a patch harvest of a
    # job's missing URLs (tests/access/test_missing_qcloop.py), a document's correction and decision
    # (tests/plugins/test_curator_documents.py), the back office's definitions, domains,
    # saved searches and rights (tests/plugins/test_definitions_pages.py,
    # test_domains_pages.py, test_curator_rights.py), each checked by
    # app.curator.actions.check_write, and those of a collection (records, definitions, a job's
    # QA and patch) or of a crawl engineer (domains) by its roles (actions.check_needed,
    # check_collection_write: harvest.office.office_rights, harvest.rights)
    writes = sorted(r.path for r in routes if not r.methods <= {"GET", "HEAD"})
    assert writes == [
        "/definitions/new",
        "/definitions/{harvest_id}",
        "/definitions/{harvest_id}/active",
        "/documents/{document_id}",
        "/documents/{document_id}/decision",
        "/domains/{name}/alias",
        "/domains/{name}/configurations",
        "/jobs/{job_id}/actions",
        "/jobs/{job_id}/patch",
        "/jobs/{job_id}/qa",
        "/records/bulk",
        "/records/new",
        "/records/searches",
        "/records/{record_id}",
        "/records/{record_id}/annotations",
        "/rights",
    ]
    assert {m for r in routes if not r.methods <= {"GET", "HEAD"} for m in r.methods} == {"POST"}
    assert client.post("/jobs").status_code == 405
    # the pages' connections are READ ONLY: a write fails there, and only there
    update = sa.text("UPDATE harvestdefinitions SET comments = 'changed'")
    with paged.read_only(db_engine) as conn, pytest.raises(sa.exc.DBAPIError, match="read-only"):
        conn.execute(update)
    with db_engine.begin() as conn:  # the pooled connection came back writable
        conn.execute(update)


def test_a_page_cannot_write_even_through_a_faulty_query(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, job: int
) -> None:
    def writing_query(conn: sa.Connection, *args: object) -> paged.Page:
        conn.execute(sa.text("DELETE FROM jobs"))
        raise AssertionError("the DELETE ran")

    monkeypatch.setattr(queries, "definitions", writing_query)
    with pytest.raises(sa.exc.DBAPIError, match="read-only transaction"):
        client.get("/definitions")
    assert client.get(f"/jobs/{job}").status_code == 200  # the job is still there


def test_long_lists_are_paginated(client: TestClient, db_engine: sa.Engine) -> None:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO domains (name) SELECT 'page-' || lpad(i::text, 3, '0') || '.test'"
                " FROM generate_series(1, 120) i"
            )
        )
    first = client.get("/domains", params={"q": "page-"}).text
    assert first.count('href="/domains/page-') == 50
    assert "page 1 of 3 (120 rows)" in first and "page-001.test" in first
    assert "page_no=2" in first and "page-051.test" not in first
    last = client.get("/domains", params={"q": "page-", "page_no": 3}).text
    assert last.count('href="/domains/page-') == 20
    assert "page-101.test" in last and "page-120.test" in last and "page-100.test" not in last


def test_jobs_filter_form_any_status_and_bad_input(client: TestClient, job: int) -> None:
    link = f'href="/jobs/{job}"'
    # the form's "any" option sends an empty status: no filter, not an error
    assert link in client.get("/jobs", params={"status": "", "harvest_id": ""}).text
    assert link in client.get("/jobs", params={"status": "3"}).text
    assert link not in client.get("/jobs", params={"status": "4"}).text
    bad = client.get("/jobs", params={"status": "x"})
    assert bad.status_code == 400 and "status: 'x' is not an integer" in bad.text
    assert client.get("/jobs", params={"harvest_id": "99999999999"}).status_code == 400


def test_a_job_with_many_domains_pages_them(
    client: TestClient, db_engine: sa.Engine, job: int
) -> None:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "WITH d AS (INSERT INTO domains (name) SELECT 'many-' || lpad(i::text, 3, '0')"
                " || '.test' FROM generate_series(1, 70) i RETURNING domain_id),"
                " c AS (INSERT INTO configurations (name, domain_id, template_id)"
                " SELECT 'cfg', domain_id, (SELECT min(template_id) FROM templates) FROM d"
                " RETURNING config_id)"
                " INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                " harvest_id, job_id) SELECT 0, 1, 1, config_id,"
                " (SELECT harvest_id FROM jobs WHERE job_id = :j), :j FROM c"
            ),
            {"j": job},
        )
    first = client.get(f"/jobs/{job}").text
    assert first.count('href="/domains/many-') == 50 and "page 1 of 2 (70 rows)" in first
    second = client.get(f"/jobs/{job}", params={"page_no": 2}).text
    assert second.count('href="/domains/many-') == 20 and "many-070.test" in second


def test_a_running_job_shows_its_progress(
    client: TestClient, db_engine: sa.Engine, job: int, tmp_path: Path
) -> None:
    running_dir = tmp_path / "running"
    (running_dir / "logs").mkdir(parents=True)
    (running_dir / "logs" / "progress-statistics.log").write_text(
        "  timestamp discovered queued downloaded doc/s KB/s dl-failures\n"
        "2026-11-22T03:09:30Z 10 8 2 1.00(1.00) 2(1) 0 0 0 0 0 0 0\n"
        "2026-11-22T03:09:40Z 731 402 329 31.50(29.90) 812(790) 3 0 0 0 0 0 0\n"
    )
    running = _insert_job(db_engine, running_dir, status=2, index=1)
    text = client.get("/jobs", params={"status": 2}).text
    assert f'href="/jobs/{running}"' in text and f'href="/jobs/{job}"' not in text
    assert "329 done, 402 queued, 31.50(29.90) URI/s" in text
    page = client.get(f"/jobs/{running}").text
    assert "329 downloaded, 402 queued, 731 discovered" in page
    assert f'src="/jobs/{running}/progress.png"' in page


def test_preservation_lists_the_manual_queue(
    client: TestClient, db_engine: sa.Engine, job: int
) -> None:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO preservation_packages (job_id, harvest_id, status, error,"
                " finished_at) SELECT job_id, harvest_id, 'manual', 'upload failed 5 times',"
                " now() FROM jobs WHERE job_id = :j"
            ),
            {"j": job},
        )
        conn.execute(
            sa.text(
                "INSERT INTO preservation_files (job_id, file_name, role, size, sha256, status,"
                " error) VALUES (:j, 'a.warc.gz', 'data', 10, 'x', 'manual', 'checksum differs'),"
                " (:j, 'b.warc.gz', 'data', 20, 'y', 'verified', NULL)"
            ),
            {"j": job},
        )
    page = client.get("/preservation").text
    queue = page.split("<h2>Manual queue</h2>")[1].split("<h2>")[0]
    assert f'href="/jobs/{job}"' in queue and "web-test" in queue
    assert "upload failed 5 times" in queue and "a.warc.gz: checksum differs" in queue
    assert "b.warc.gz" not in queue
    assert "1/2" in page.split("<h2>Packages</h2>")[1]  # files verified / files
    overview = client.get("/").text
    assert f'href="/preservation">{job}</a>' in overview  # the manual queue, attention first


def test_job_and_domain_pages_link_to_the_jobs_replay_view(
    db_engine: sa.Engine, tmp_path: Path, job: int
) -> None:
    with db_engine.begin() as conn:
        conn.execute(
            sa.text(
                "WITH d AS (INSERT INTO domains (name) VALUES ('a.test') RETURNING domain_id),"
                " c AS (INSERT INTO configurations (name, domain_id, template_id)"
                " SELECT 'cfg', domain_id, (SELECT min(template_id) FROM templates) FROM d"
                " RETURNING config_id)"
                " INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                " harvest_id, job_id) SELECT 0, 1, 1, config_id,"
                " (SELECT harvest_id FROM jobs WHERE job_id = :j), :j FROM c"
            ),
            {"j": job},
        )
        conn.execute(
            sa.text("UPDATE jobs SET startdate = '2026-11-25 12:34:56+00' WHERE job_id = :j"),
            {"j": job},
        )
    app = create_app(
        lambda: db_engine, data_dir=tmp_path, auth=None, access_url="http://replay.test:8090"
    )
    client = TestClient(app)
    page = client.get(f"/jobs/{job}").text
    assert f'href="http://replay.test:8090/job-{job}/20261125123456/http://a.test/"' in page
    assert "none recorded" in page  # no missing URL yet
    assert "patch harvest of all" not in page  # no user who may write: no button
    domain = client.get("/domains/a.test").text
    assert f'href="http://replay.test:8090/job-{job}/*/a.test/*"' in domain


def test_qa_charts_are_svg_from_the_report_folder_or_the_database_copy(
    client: TestClient, db_engine: sa.Engine, tmp_path: Path
) -> None:
    import base64
    import json

    from harvestflow.formats.svgchart import bar_chart

    folder = tmp_path / "qa-report"
    (folder / "charts").mkdir(parents=True)
    status = bar_chart("Response codes", ["200 OK", "404 Not Found"], [12, 1], "lines")
    (folder / "charts" / "status.svg").write_text(status, encoding="utf-8")
    tld = bar_chart("Top-level domains", [".fr"], [100.0], "%")  # in the database only
    old = b"\x89PNG\r\n\x1a\n an older report's chart"
    summary = {"charts_svg": {"tld.svg": tld},
               "charts_png_base64": {"mime_families.png": base64.b64encode(old).decode()}}  # fmt: skip
    with db_engine.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO qa_reports (day, report_dir, summary)"
                    " VALUES ('2026-11-22', :d, CAST(:s AS jsonb))"),
            {"d": str(folder), "s": json.dumps(summary)},
        )  # fmt: skip
    page = client.get("/qa/2026-11-22").text
    for name in ("status.svg", "tld.svg", "mime_families.png"):
        assert f'/qa/2026-11-22/charts/{name}"' in page, name
    served = client.get("/qa/2026-11-22/charts/status.svg")
    assert served.headers["content-type"] == "image/svg+xml"
    assert "default-src 'none'" in served.headers["content-security-policy"]
    assert served.text == status
    assert client.get("/qa/2026-11-22/charts/tld.svg").text == tld
    png = client.get("/qa/2026-11-22/charts/mime_families.png")
    assert png.headers["content-type"] == "image/png" and png.content == old
    assert client.get("/qa/2026-11-22/charts/origins.svg").status_code == 404
    assert client.get("/qa/2026-11-22/charts/stats.csv").status_code == 404
