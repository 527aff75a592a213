"""Curator web app through FastAPI's TestClient on a real (fresh) harvest database: the auth
dependency guards every route, page numbers out of range are clamped, a bad crawl.log regex
is shown as a message (not a 500), and the search shows its matching lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi import HTTPException, Request
from fastapi.testclient import TestClient

from harvestflow.curator.webapp import create_app

LOG = [
    "2026-11-22T03:09:30.143Z   200   34 http://a.test/robots.txt P - text/plain #000 x sha1:A - -",
    "2026-11-22T03:09:30.180Z   200 2136 http://a.test/ - - text/html #000 x sha1:B - -",
    "2026-11-22T03:09:31.000Z   404   10 http://a.test/missing L http://a.test/ text/html #1 x - - -",
]

TASK = {
    "dag_id": "selective_harvest_daily",
    "run_id": "manual__1",
    "task_id": "crawl",
    "map_index": 2,
}


def _token_required(request: Request) -> None:
    if request.headers.get("authorization") != "Bearer ok":
        raise HTTPException(status_code=401, detail="not authenticated")


@pytest.fixture
def job(db_engine: sa.Engine, tmp_path: Path) -> int:
    """One job of one definition, with a crawl.log in its job directory."""
    from harvest.bootstrap import ensure_reference_data
    from harvest.definitions import ensure_selective_definition

    ensure_reference_data(db_engine)
    job_dir = tmp_path / "job"
    (job_dir / "logs").mkdir(parents=True)
    (job_dir / "logs" / "crawl.log").write_text("\n".join(LOG) + "\n")
    with db_engine.begin() as conn:
        harvest_id = ensure_selective_definition(conn, "web-test", frequency=None)
        return int(
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                    " template_name, template, seedlist, job_dir, airflow_task) VALUES (:h, 1, 0,"
                    " 3, 'FOCUSED', 't', CAST(:tpl AS jsonb), 'http://a.test/', :d,"
                    " CAST(:task AS jsonb)) RETURNING job_id"
                ),
                {"h": harvest_id, "tpl": "{}", "d": str(job_dir), "task": json.dumps(TASK)},
            ).scalar_one()
        )


@pytest.fixture
def client(db_engine: sa.Engine, tmp_path: Path) -> TestClient:
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=_token_required)
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
    assert f'href="{link}"' in client.get("/jobs").text
    assert f'href="{link}"' in client.get(f"/jobs/{job}").text


def test_unknown_things_are_404(client: TestClient) -> None:
    assert client.get("/jobs/999999").status_code == 404
    assert client.get("/domains/no.such.domain").status_code == 404
    assert client.get("/qa/not-a-day").status_code == 404
    assert client.get("/qa/2026-01-01/charts/..%2F..%2Fetc%2Fpasswd").status_code == 404
