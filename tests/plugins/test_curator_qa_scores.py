"""The QA pass's scores on the curator pages, from the jobs' stored QA reports: the domain page
and the selection record show their pages' latest scores (worst first), the overview names the
runs whose pages fell below their template's share."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.curator.actions import Role
from harvest.selection.importer import import_file
from tests.support.qa_jobs import seed_qa_jobs
from tests.support.signed_in import signed_in_client

pytestmark = pytest.mark.services

USERS = {"vera": Role.VIEWER}


def _rows(html: str, table: str) -> list[list[str]]:
    body = html.split(f'class="report {table}"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in rows]  # fmt: skip


def test_domain_record_and_overview_show_the_qa_scores(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    seeded = seed_qa_jobs(db_engine, tmp_path)
    job2 = str(seeded["jobs"][2])
    feed = tmp_path / "feed.json"
    feed.write_text(json.dumps([{"id": 5, "title": "QA www", "seeds": ["http://www.qa.test/"],
                                 "schedules": [{"frequency": "DAILY"}], "scope": "plus1",
                                 "depth": "CAPPED", "collection": "news", "theme": "local"}]))  # fmt: skip
    assert not import_file(feed, check_urls=False, engine=db_engine).errors
    with db_engine.connect() as conn:
        record_id = conn.execute(sa.text("SELECT record_id FROM selection_records")).scalar_one()
    client = signed_in_client(db_engine, tmp_path, "vera", USERS)

    domain = client.get("/domains/qa.test").text
    assert _rows(domain, "page-scores") == [
        ["40.0", "http://qa.test/a.html", job2],
        ["60.0", "http://www.qa.test/", job2],
        ["99.0", "http://qa.test/", job2],
    ]
    assert 'class="score below">40.0' in domain
    record = client.get(f"/records/{record_id}").text
    assert _rows(record, "page-scores") == [["60.0", "http://www.qa.test/", job2]]

    overview = _rows(client.get("/").text, "qa-flagged")
    assert [r[0] for r in overview] == [str(seeded["jobs"][3]), job2]
    assert overview[1][1:] == ["qa-daily", "3", "2 (67 %, 20 % allowed)", "60.0"]
    other = client.get("/domains/other.test").text  # its own page only
    assert _rows(other, "page-scores") == [["10.0", "http://other.test/", str(seeded["jobs"][3])]]
