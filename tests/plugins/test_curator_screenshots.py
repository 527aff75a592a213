"""The curator job page shows a rendered job's screenshots: each image is read from its
``resource`` record in the job's WARC (located by reports/screenshots-report.txt) and served as
PNG; a line whose record is missing, or is not that screenshot, is a 404, not a 500."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from warcio.warcwriter import WARCWriter

from app.curator.webapp import create_app
from crawler.warc.records import screenshot_record
from tests.support.curator_jobs import _insert_job
from tests.support.scriptsite import png
from tests.support.signed_in import token_required

PAGE = "http://a.test/"


@pytest.fixture
def shots_job(db_engine: sa.Engine, tmp_path: Path) -> tuple[int, bytes]:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    job_dir = tmp_path / "job"
    (job_dir / "warcs").mkdir(parents=True)
    (job_dir / "reports").mkdir()
    image = png(12, 7, (200, 30, 30))
    warc = job_dir / "warcs" / "1-1-x.warc.gz"
    lines = ["[page] [kind] [record-uri] [warc] [offset] [length]"]
    with warc.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for kind, prefix in (("viewport", "urn:screenshot:"), ("full", "urn:screenshot-full:")):
            offset = fh.tell()
            rec = screenshot_record(prefix + PAGE, "2026-11-25T20:00:00Z", image, "<urn:uuid:1>")
            writer.write_record(rec)
            lines.append(f"{PAGE} {kind} {prefix}{PAGE} {warc.name} {offset} {fh.tell() - offset}")
    # a line pointing at the wrong record (the viewport one's offset under another URI)
    first_offset = lines[1].split()[4]
    lines.append(
        f"http://b.test/ viewport urn:screenshot:http://b.test/ {warc.name} {first_offset} 9"
    )
    # and one whose WARC has gone (moved by the indexing chain)
    lines.append("http://c.test/ viewport urn:screenshot:http://c.test/ gone.warc.gz 0 9")
    (job_dir / "reports" / "screenshots-report.txt").write_text("\n".join(lines) + "\n")
    return _insert_job(db_engine, job_dir, status=3), image


@pytest.fixture
def client(db_engine: sa.Engine, tmp_path: Path) -> TestClient:
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=token_required)
    return TestClient(app, headers={"Authorization": "Bearer ok"})


def test_job_page_shows_screenshots_read_from_the_warc(
    client: TestClient, shots_job: tuple[int, bytes]
) -> None:
    job, image = shots_job
    html = client.get(f"/jobs/{job}").text
    assert "<h2>Screenshots</h2>" in html
    assert f"/jobs/{job}/screenshots/0.png" in html and f'alt="screenshot of {PAGE}"' in html
    assert f"/jobs/{job}/screenshots/1.png" not in html  # full-page ones: in the report table
    got = client.get(f"/jobs/{job}/screenshots/0.png")
    assert got.status_code == 200 and got.headers["content-type"] == "image/png"
    assert got.content == image
    assert client.get(f"/jobs/{job}/screenshots/1.png").content == image  # the full page
    for missing in (2, 3, 4, 99):
        assert client.get(f"/jobs/{job}/screenshots/{missing}.png").status_code == 404
    assert client.get(f"/jobs/{job}/screenshots/-1.png").status_code == 422


def test_a_job_without_screenshots_has_no_section(client: TestClient, db_engine, tmp_path):
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    (tmp_path / "plain").mkdir()
    job = _insert_job(db_engine, tmp_path / "plain", status=3)
    assert "<h2>Screenshots</h2>" not in client.get(f"/jobs/{job}").text
    assert client.get(f"/jobs/{job}/screenshots/0.png").status_code == 404
