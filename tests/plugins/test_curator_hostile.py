"""Curator pages under hostile and careless parameters: 4xx, never a 500.

Every GET route of the app is found by walking ``app.routes`` (a route added later is walked
too), and each of its path and query parameters gets every value of ``HOSTILE`` in turn while
the other path parameters name things that exist (so the value reaches the queries, the file
readers and the charts behind a 404 check). Values are written percent-encoded, exactly as a
browser or a script would send them: NUL bytes, integers beyond the columns' ranges, matplotlib
math text, 10 kB strings, escapes that are not UTF-8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow.formats.job_status import JobStatus
from tests.support.signed_in import auth_for, page_token

PNG = b"\x89PNG\r\n\x1a\n"
MATH_DOMAIN = "$\\frac{x$.test"  # not valid math text: matplotlib raised on it as a title
DAY = "2026-11-22"

# name -> the value as it appears in the URL (already percent-encoded)
HOSTILE = {
    "NUL": "%00",
    "NUL inside": "x%00y",
    "not UTF-8": "%ff%fe",
    "control characters": "%01%1b%7f",
    "smallint + 1": "40000",
    "integer + 1": "2147483648",
    "bigint + 1": "9223372036854775808",
    "huge": "9" * 40,
    "negative": "-1",
    "superscript two": "%C2%B2",  # "²".isdigit() is True, int("²") raises
    "Arabic-Indic digits": "%D9%A3",  # int() takes it
    "negative huge": "-" + "9" * 40,
    "math text": quote("$\\mathrm{x}$", safe=""),
    "bad math text": quote("$\\frac{x$", safe=""),
    "10 kB": "a" * 10_240,
    "dot dot": "..",
    "bad regex": quote("[", safe=""),
}


def _seed(engine: sa.Engine, tmp_path: Path, status: int = JobStatus.DONE) -> dict[str, str]:
    """A job (``status``) with a crawl.log, two domains with history (one named as math text),
    a QA day and a preload run; returns a valid value per path parameter name."""
    from harvest.bootstrap import ensure_reference_data
    from harvest.definitions import ensure_selective_definition

    ensure_reference_data(engine)
    job_dir = tmp_path / "job"
    (job_dir / "logs").mkdir(parents=True)
    (job_dir / "logs" / "crawl.log").write_text(
        "2026-11-22T03:09:30.180Z 200 2136 http://web.test/ - - text/html #000 x sha1:B - -\n"
    )
    (job_dir / "logs" / "progress-statistics.log").write_text(
        "  timestamp discovered queued downloaded doc/s KB/s dl-failures\n"
        "2026-11-22T03:09:30Z 10 8 2 1.00(1.00) 2(1) 0 0 0 0 0 0 0\n"
    )
    (job_dir / "reports").mkdir()
    (job_dir / "reports" / "screenshots-report.txt").write_text(
        "[page] [kind] [record-uri] [warc] [offset] [length]\n"
        "http://web.test/ viewport urn:screenshot:http://web.test/ gone.warc.gz 0 10\n"
    )
    qa_dir = tmp_path / "qa"
    (qa_dir / "charts").mkdir(parents=True)
    with engine.begin() as conn:
        hid = ensure_selective_definition(conn, "hostile-test", frequency=None)
        job = conn.execute(
            sa.text(
                "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                " template_name, template, seedlist, job_dir) VALUES (:h, 1, 0, :s, 'FOCUSED',"
                " 't', CAST('{}' AS jsonb), 'http://web.test/', :d) RETURNING job_id"
            ),
            {"h": hid, "d": str(job_dir), "s": int(status)},
        ).scalar_one()
        for name in ("web.test", MATH_DOMAIN):
            conn.execute(
                sa.text(
                    "WITH d AS (INSERT INTO domains (name) VALUES (:n) RETURNING domain_id),"
                    " c AS (INSERT INTO configurations (name, domain_id, template_id)"
                    " SELECT 'cfg', domain_id, (SELECT min(template_id) FROM templates) FROM d"
                    " RETURNING config_id)"
                    " INSERT INTO historyinfo (stopreason, objectcount, bytecount, config_id,"
                    " harvest_id, job_id) SELECT 0, 10, 1000, config_id, :h, :j FROM c"
                ),
                {"n": name, "h": hid, "j": job},
            )
        conn.execute(
            sa.text(
                "INSERT INTO qa_reports (day, report_dir, summary)"
                " VALUES (:day, :dir, CAST(:s AS jsonb))"
            ),
            {"day": DAY, "dir": str(qa_dir), "s": json.dumps({"jobs": 1})},
        )
        conn.execute(sa.text("INSERT INTO preload_runs (run_id) VALUES ('run-1')"))
        record = conn.execute(
            sa.text(
                "INSERT INTO selection_records (collection, seed_url, budget, frequency, depth,"
                " theme) VALUES ('News', 'http://web.test/', 'small', 'weekly', 'page', 'x')"
                " RETURNING record_id"
            )
        ).scalar_one()
    from tests.support.docfixtures import add as add_document

    document = add_document(engine, 1, record_id=int(record))
    return {"job_id": str(job), "name": "web.test", "day": DAY, "run_id": "run-1", "index": "0",
            "record_id": str(record), "document_id": str(document), "harvest_id": str(hid)}  # fmt: skip


@pytest.fixture
def seeded(db_engine: sa.Engine, tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    valid = _seed(db_engine, tmp_path)
    app = create_app(lambda: db_engine, data_dir=tmp_path)
    # entered: one event loop thread serves every request (without it, each of the walks'
    # ~2,800 requests started a thread and an event loop of its own)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, valid


def _routes(client: TestClient) -> list[APIRoute]:
    return [r for r in client.app.routes if isinstance(r, APIRoute) and "GET" in r.methods]


def _urls(route: APIRoute, valid: dict[str, str]) -> list[tuple[str, str, str]]:
    """(parameter, hostile value name, URL) for every parameter of ``route``."""
    path_params = [p.name for p in route.dependant.path_params]
    query_params = [p.alias for p in route.dependant.query_params]

    def path_with(target: str, value: str) -> str:
        path = route.path_format
        for name in path_params:
            path = path.replace("{" + name + "}", value if name == target else valid[name])
        return path

    urls = []
    for label, value in HOSTILE.items():
        for name in path_params:
            urls.append((name, label, path_with(name, value)))
        for name in query_params:
            urls.append((name, label, f"{path_with('', '')}?{name}={value}"))
    return urls


def test_every_route_answers_hostile_parameters_without_a_5xx(
    seeded: tuple[TestClient, dict[str, str]],
) -> None:
    client, valid = seeded
    routes = _routes(client)
    assert len(routes) >= 15  # the walk found the app's pages, charts and static files
    failures, walked = [], set()
    for route in routes:
        for param, label, url in _urls(route, valid):
            walked.add(route.path)
            resp = client.get(url)
            if resp.status_code >= 500:
                failures.append(f"{route.path} {param}={label}: {resp.status_code}")
    parameterless = {r.path for r in routes if not r.dependant.path_params}
    parameterless -= {r.path for r in routes if r.dependant.query_params}
    assert walked | parameterless == {r.path for r in routes}
    assert not failures, "\n".join(failures)


def test_nul_and_out_of_range_numbers_are_400(seeded: tuple[TestClient, dict[str, str]]) -> None:
    client, valid = seeded
    for url in ("/domains/%00", "/domains?q=%00", "/preload/x%00y", "/domains/a%00/size.png"):
        resp = client.get(url)
        assert resp.status_code == 400, (url, resp.status_code, resp.text[:200])
        assert "NUL" in resp.text
    resp = client.get("/jobs?status=40000")
    assert resp.status_code == 400 and "status: 40000 is out of range" in resp.text
    assert client.get("/jobs/99999999999999999999").status_code == 422
    assert client.get(f"/jobs/{valid['job_id']}").status_code == 200


def test_charts_are_plain_text_and_only_for_known_domains(
    seeded: tuple[TestClient, dict[str, str]],
) -> None:
    client, _ = seeded
    resp = client.get(f"/domains/{quote(MATH_DOMAIN, safe='')}/size.png")
    assert resp.status_code == 200 and resp.content.startswith(PNG)
    unknown = quote("$\\mathrm{x}$", safe="")
    missing = client.get(f"/domains/{unknown}/size.png")
    assert missing.status_code == 404


def test_a_regex_error_is_shown_as_text(seeded: tuple[TestClient, dict[str, str]]) -> None:
    client, valid = seeded
    page = client.get(f"/jobs/{valid['job_id']}", params={"q": "["}).text
    assert "invalid regular expression: missing ]: [" in page
    # not a bytes repr (b'...'); "job's" in the page's text is fine
    assert not re.search(r"\bb(&#39;|')", page)


# --- the forms' POSTs ---------------------------------------------------------------------------

# name -> a value typed into one field of a form (sent urlencoded, as a browser does)
FORM_HOSTILE = {
    "NUL": "\x00",
    "NUL inside": "x\x00y",
    "superscript two": "²",  # "²".isdigit() is True, int("²") raises
    "Arabic-Indic digits": "٣٤",  # int() takes them, a column would not expect them
    "integer + 1": "2147483648",
    "bigint + 1": "9223372036854775808",
    "huge": "9" * 40,
    "negative huge": "-" + "9" * 40,
    "10^15": "1" + "0" * 15,  # fits a bigint: an absurd limit, refused in words
    "control characters": "\x01\x1b\x7f",
    "10 kB": "a" * 10_240,
    "bad regex": "[",
    "formula": '=HYPERLINK("http://evil.test","x")',
}
# a value that passes for each field, so a hostile value in one field reaches the code behind
GOOD = {
    "pattern": "/calendar/",
    "name": "cal",
    "domain": "web.test",
    "max_objects": "10",
    "max_bytes": "1000",
    "max_time_s": "60",
    "text": "a page is missing",
    "add_urls": "http://web.test/missing",
    "frequency": "monthly",
    "collection": "News",
    "move_to": "Arts",
    "end_date": "2030-01-01",
}


class _Forms(HTMLParser):
    """The POST forms of a page: action and every named field with the value it carries
    (a select: its selected or first option; a button: its own value)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []
        self.select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            if a.get("method", "").lower() == "post":
                self.forms.append((a["action"], {}))
            self.select = None
            return
        if not self.forms or (not a.get("name") and tag != "option"):
            return
        fields = self.forms[-1][1]
        if tag in ("input", "textarea", "button"):
            fields.setdefault(a["name"], a.get("value", ""))
        elif tag == "select":
            self.select = a["name"]
        elif tag == "option" and self.select and (self.select not in fields or "selected" in a):
            fields[self.select] = a.get("value", "")


def _page_forms(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


@pytest.fixture
def engineer(
    db_engine: sa.Engine,
    tmp_path: Path,
    site: int,
    loopback_seeds: None,
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A crawl engineer (every form is theirs) on the seeded database, with a running job
    (its crawl-control forms); seed URLs typed into the forms are on the loopback site."""
    valid = _seed(db_engine, tmp_path, JobStatus.STARTED)
    with db_engine.begin() as conn:  # the job crawled web.test: its QA form has directives
        conn.execute(
            sa.text(
                "INSERT INTO job_configs (job_id, config_id) SELECT :j, c.config_id"
                " FROM configurations c JOIN domains d USING (domain_id) WHERE d.name = 'web.test'"
            ),
            {"j": int(valid["job_id"])},
        )
    app = create_app(
        lambda: db_engine,
        data_dir=tmp_path,
        auth=auth_for({"erin": Role.ENGINEER}),
        trigger=lambda dag, conf, run_id, when: run_id,  # a patch harvest is not queued
    )
    with TestClient(
        app,
        headers={"Authorization": "Bearer erin"},
        raise_server_exceptions=False,
        follow_redirects=False,
    ) as client:  # one event loop for every request, as in ``seeded``
        yield client, {**valid, "site": str(site)}


def test_every_form_answers_hostile_values_without_a_5xx(
    engineer: tuple[TestClient, dict[str, str]],
) -> None:
    """Every POST form of the pages (found in their HTML, so a form added later is walked),
    each field in turn given each value of ``FORM_HOSTILE``, the others a good value."""
    client, valid = engineer
    pages = [
        "/records?theme=politics",  # a search: its "save this search" form
        "/records/new",
        "/rights",
        f"/records/{valid['record_id']}",
        f"/jobs/{valid['job_id']}",
        "/domains/web.test",
        f"/documents/{valid['document_id']}",
        "/definitions/new",
        f"/definitions/{valid['harvest_id']}",
    ]
    forms = [form for page in pages for form in _page_forms(client.get(page).text)]
    # the patch form is shown only for a job with missing URLs: its fields by hand
    token = next(f["csrf_token"] for _, f in forms if "csrf_token" in f)
    forms.append(
        (
            f"/jobs/{valid['job_id']}/patch",
            {"csrf_token": token, "url": "http://web.test/", "chosen": "1"},
        )
    )
    assert "max_objects" in dict(forms)[f"/jobs/{valid['job_id']}/qa"]  # the directives too
    posted = {_route_of(client, action) for action, _ in forms}
    post_routes = {
        r.path for r in client.app.routes if isinstance(r, APIRoute) and "POST" in r.methods
    }
    assert posted == post_routes, post_routes - posted  # every write was walked
    failures = []
    for action, fields in forms:
        base = {k: GOOD.get(k, v) for k, v in fields.items()}
        if "seed_url" in base:
            base["seed_url"] = f"http://127.0.0.1:{valid['site']}/ok"
        for name in fields:
            if name == "csrf_token":
                continue
            for label, value in FORM_HOSTILE.items():
                resp = client.post(action, data={**base, name: value})
                if resp.status_code >= 500:
                    failures.append(f"POST {action} {name}={label}: {resp.status_code}")
    assert not failures, "\n".join(failures)


def _route_of(client: TestClient, path: str) -> str:
    for route in client.app.routes:
        if isinstance(route, APIRoute) and "POST" in route.methods and route.path_regex.match(path):
            return route.path
    raise AssertionError(f"no POST route for {path}")


def test_out_of_range_and_non_ascii_numbers_in_forms_are_refused_in_words(
    engineer: tuple[TestClient, dict[str, str]], db_engine: sa.Engine
) -> None:
    client, valid = engineer
    job, record = valid["job_id"], valid["record_id"]
    token = page_token(client.get(f"/jobs/{job}").text)

    def post(path: str, **fields: str) -> tuple[int, str]:
        resp = client.post(path, data={"csrf_token": token, **fields})
        return resp.status_code, resp.text

    qa = f"/jobs/{job}/qa"
    status, text = post(qa, text="x", record_id=record, max_objects="9" * 40)
    assert status == 400 and "max_objects" in text and "out of range" in text
    status, text = post(qa, text="x", record_id=record, max_bytes="9223372036854775808")
    assert status == 400 and "max_bytes" in text and "out of range" in text
    status, text = post(qa, text="x", record_id=record, max_objects=str(10**15))
    assert status == 400 and "at most 1,000,000,000,000" in text
    status, text = post(qa, text="x", record_id="9" * 12)
    assert status == 400 and "record_id" in text
    status, text = post(qa, text="x", record_id=record, max_objects="²")
    assert status == 400 and "not an integer" in text

    actions = f"/jobs/{job}/actions"
    status, text = post(actions, action="filter", kind="regex", pattern="a\x00b")
    assert status == 400 and "control character" in text
    status, text = post(
        actions, action="filter", kind="regex", pattern="/x/", domain="web\x00.test"
    )
    assert status == 400 and "control character" in text
    status, text = post(actions, action="limits", max_objects=str(10**40))
    assert status == 400 and "out of range" in text
    status, text = post(actions, action="limits", max_objects=str(10**13))
    assert status == 400 and "at most 1,000,000,000,000" in text
    status, text = post(actions, action="limits", max_time_s=str(10**15))
    assert status == 400 and "max_time_s" in text

    status, text = post("/records/bulk", ids="²", op="edit", frequency="monthly")
    assert status == 400 and "is not a record id" in text
    with db_engine.connect() as conn:
        stored = conn.execute(
            sa.text(
                "SELECT (SELECT count(*) FROM job_actions), (SELECT count(*) FROM job_qa_comments)"
            )
        ).one()
    assert tuple(stored) == (0, 0)  # nothing refused was stored
