"""The curator web app on a real harvest database after a real crawl of the sample site:
pages render the job, its domains, reports and crawl.log search; charts are PNGs; bad input
gets a clear answer, never a 500; the auth dependency guards every route."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from app.curator.webapp import create_app
from app.demo import samplesite
from app.demo.definition import create_demo_definition
from crawler.launch import crawl_in_subprocess
from harvest import pipeline as p

pytestmark = pytest.mark.services
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def crawled(db_engine: sa.Engine, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The demo definition crawled once (a real crawl of the loopback sample site)."""
    site = samplesite.start()
    try:
        hid = create_demo_definition(site.port, engine=db_engine)
        (job,) = p.generate_jobs(hid, datetime(2026, 11, 23, 3, tzinfo=UTC), engine=db_engine)
        spec = Path(p.prepare_job(job, tmp_path / "jobs", engine=db_engine))
        data = json.loads(spec.read_text())
        data["template"].update({"min_delay_ms": 0, "max_delay_ms": 0, "delay_factor": 0})
        # a seed that redirects, for the seeds report's redirect column
        data["seeds"].append(f"http://www.example-a.test:{site.port}/redirect-301")
        spec.write_text(json.dumps(data))
        task = {
            "dag_id": "selective_harvest_daily",
            "run_id": "r 1",
            "task_id": "harvest_job.crawl",
        }
        p.mark_started(job, engine=db_engine, airflow_task={**task, "map_index": 0})
        crawl_in_subprocess(spec, spec.parent, progress_interval_s=1)
        p.record_job_results(job, engine=db_engine)
        yield {"job": job, "hid": hid, "dir": spec.parent, "engine": db_engine}
    finally:
        site.stop()


@pytest.fixture
def client(crawled: dict[str, Any], tmp_path: Path) -> TestClient:
    app = create_app(lambda: crawled["engine"], data_dir=tmp_path, airflow_base="http://af")
    return TestClient(app)


def _pages_show_the_crawled_job_its_domains_and_reports(
    client: TestClient, crawled: dict[str, Any]
) -> None:
    job = crawled["job"]
    jobs = client.get("/jobs")
    assert jobs.status_code == 200 and f'href="/jobs/{job}"' in jobs.text
    assert "DONE" in jobs.text
    page = client.get(f"/jobs/{job}")
    assert page.status_code == 200
    assert "example-a.test" in page.text and "example-b.test" in page.text
    assert "DOWNLOAD_COMPLETE" in page.text or "complete" in page.text.lower()
    # the reports as tables, the seeds report among them (with its redirect column)
    assert "seeds-report" in page.text and "hosts-report" in page.text
    seeds = page.text.split("<h3>seeds-report</h3>")[1].split("</table>")[0]
    assert "<th>redirect</th>" in seeds
    redirected = [row for row in seeds.split("<tr>") if "/redirect-301</td>" in row]
    assert len(redirected) == 1 and "<td>301</td>" in redirected[0], seeds
    assert re.search(r"<td>[^<]*/about\.html</td>", redirected[0]), redirected[0]
    # the link to the Airflow task log of the crawl, URL-quoted
    assert "http://af/dags/selective_harvest_daily/runs/r%201/tasks/harvest_job.crawl/mapped/0" in (
        page.text
    )
    defs = client.get("/definitions")
    assert defs.status_code == 200 and f"/jobs?harvest_id={crawled['hid']}" in defs.text
    dom = client.get("/domains/example-a.test")
    assert dom.status_code == 200 and f'href="/jobs/{job}"' in dom.text
    assert client.get("/domains", params={"q": "example-"}).text.count("/domains/example-") == 2
    for path in ("/", "/qa", "/preload", "/preservation", "/static/curator.css"):
        assert client.get(path).status_code == 200, path


def _crawl_log_search_returns_the_matching_lines(
    client: TestClient, crawled: dict[str, Any]
) -> None:
    job = crawled["job"]
    log_lines = (crawled["dir"] / "logs" / "crawl.log").read_text().splitlines()
    expected = [ln.split()[3] for ln in log_lines if "robots.txt" in ln]
    assert expected
    page = client.get(f"/jobs/{job}", params={"q": r"robots\.txt$|robots\.txt "})
    assert page.status_code == 200
    results = page.text.split('id="search-results"')[1].split("</table>")[0]
    assert all(url in results for url in expected)
    assert results.count("<tr>") == len(expected) + 1  # + header row
    images = client.get(f"/jobs/{job}", params={"mime": "image/"}).text
    n_images = sum(1 for ln in log_lines if ln.split()[6].startswith("image/"))
    shown = images.split('id="search-results"')[1].split("</table>")[0]
    assert n_images and shown.count("<tr>") == n_images + 1
    bad = client.get(f"/jobs/{job}", params={"q": "(unclosed"})
    assert bad.status_code == 200 and "invalid regular expression" in bad.text
    assert (
        "is not an integer (digits 0-9 only)"
        in client.get(f"/jobs/{job}", params={"status": "x"}).text
    )


def _charts_are_pngs_and_bad_input_is_answered_plainly(
    client: TestClient, crawled: dict[str, Any]
) -> None:
    job = crawled["job"]
    for path in (f"/jobs/{job}/progress.png", "/domains/example-a.test/size.png"):
        resp = client.get(path)
        assert resp.status_code == 200 and resp.content.startswith(PNG), path
    assert client.get("/jobs/999999").status_code == 404
    assert client.get("/domains/nowhere.test").status_code == 404
    assert client.get("/qa/not-a-day").status_code == 404
    assert client.get("/qa/2026-11-22/charts/..%2F..%2Fetc%2Fpasswd").status_code == 404
    # a page number out of range is answered with a page: below 1 the first page, far past
    # the end (clamped to page 1,000,000) an empty one, never an error
    first = client.get("/jobs").text
    for page_no in ("0", "-5"):
        resp = client.get("/jobs", params={"page_no": page_no})
        assert resp.status_code == 200 and resp.text == first, page_no
    far = client.get("/jobs", params={"page_no": "99999999999"})
    assert far.status_code == 200 and "Jobs" in far.text
    assert f"/jobs/{job}" in first and f"/jobs/{job}" not in far.text
    # a LIKE wildcard in the domain filter is a literal, not a pattern
    assert "/domains/example-" not in client.get("/domains", params={"q": "%"}).text


def test_pages_search_and_charts_after_a_real_crawl(
    client: TestClient, crawled: dict[str, Any]
) -> None:
    """One crawl (≈10 s) serves the three groups of checks."""
    _pages_show_the_crawled_job_its_domains_and_reports(client, crawled)
    _crawl_log_search_returns_the_matching_lines(client, crawled)
    _charts_are_pngs_and_bad_input_is_answered_plainly(client, crawled)


def test_every_route_goes_through_the_auth_dependency(db_engine: sa.Engine, tmp_path: Path) -> None:
    seen: list[str] = []

    def deny(request: Request) -> None:
        seen.append(request.url.path)
        raise HTTPException(401, "Not authenticated")

    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=deny)
    client = TestClient(app)
    paths = [
        "/",
        "/jobs",
        "/jobs/1",
        "/jobs/1/progress.png",
        "/domains/example-a.test/size.png",
        "/definitions",
        "/qa",
        "/preservation",
        "/static/curator.css",
    ]
    for path in paths:
        assert client.get(path).status_code == 401, path
    assert seen == paths
