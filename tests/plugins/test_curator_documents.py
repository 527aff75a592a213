"""The documents pages (#35 item 4) through FastAPI's TestClient on a real harvest database: the
list across and per target with replay links; a curator corrects a document's metadata (each
correction a version, kept with its history; the landing page no longer overwrites it),
catalogues an available document and cannot catalogue one not yet replayed; a viewer's and a
tokenless write are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.curator.actions import Role
from indexing.documents import store
from tests.support.docfixtures import LANDING_AT, add
from tests.support.signed_in import page_token, signed_in_client

pytestmark = pytest.mark.services

USERS = {"carol": Role.CURATOR, "victor": Role.VIEWER}


def test_a_curator_corrects_catalogues_and_the_history_is_kept(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    offered = add(db_engine, 1, record_id=7)
    waiting = add(db_engine, 2, record_id=8, available=False)
    carol = signed_in_client(db_engine, tmp_path, "carol", USERS)

    listing = carol.get("/documents")
    assert listing.status_code == 200
    assert "Report 1" in listing.text and "Report 2" in listing.text
    assert "/all/20260304050607/http://pubs.test/publications/files/report-1.pdf" in listing.text
    per_target = carol.get("/documents?target=8").text
    assert "Report 2" in per_target and "Report 1" not in per_target
    assert carol.get("/documents?target=x").status_code == 400

    page = carol.get(f"/documents/{offered}")
    token = page_token(page.text)
    fields = {"title": "Annual Report 2025", "authors": "Jane Smith\nRavi Patel",
              "published": "2025-07-14", "language": "en", "isbn": "9781528612345",
              "issn": "", "doi": "10.5555/r1"}  # fmt: skip
    saved = carol.post(f"/documents/{offered}", data={**fields, "csrf_token": token})
    assert saved.status_code == 303, saved.text
    again = carol.post(
        f"/documents/{offered}", data={**fields, "title": "Annual Report and Accounts 2025",
                                       "csrf_token": token},
    )  # fmt: skip
    assert again.status_code == 303
    shown = carol.get(f"/documents/{offered}").text
    assert 'value="Annual Report and Accounts 2025"' in shown

    with db_engine.begin() as conn:
        versions = store.history(conn, offered)
        # a later landing page does not undo the curator's fields
        store.set_landing(conn, offered, "http://pubs.test/x", LANDING_AT, "x",
                          {"title": "Report 1"}, {})  # fmt: skip
        doc = store.list_documents(conn, document_id=offered)[0]
    corrections = [v for v in versions if v["action"] == "correct"]
    assert [v["after"] for v in corrections] == [
        {"title": "Annual Report and Accounts 2025"},
        {"title": "Annual Report 2025", "authors": ["Jane Smith", "Ravi Patel"]},
    ]
    assert corrections[1]["before"] == {"title": "Report 1", "authors": ["Jane Smith"]}
    assert {v["changed_by"] for v in corrections} == {"carol"}
    assert doc["title"] == "Annual Report and Accounts 2025"
    assert doc["authors"] == ["Jane Smith", "Ravi Patel"]

    # catalogue: only a document the access service replays
    refused = carol.post(f"/documents/{waiting}/decision",
                         data={"decision": "catalogue", "csrf_token": token})  # fmt: skip
    assert refused.status_code == 400 and "only an available document" in refused.text
    done = carol.post(f"/documents/{offered}/decision",
                      data={"decision": "catalogue", "csrf_token": token})  # fmt: skip
    assert done.status_code == 303
    assert carol.get(f"/documents/{offered}").text.count("catalogued") >= 1
    with db_engine.connect() as conn:
        assert store.list_documents(conn, document_id=offered)[0]["state"] == "catalogued"
        audit = conn.execute(sa.text("SELECT username, action FROM audit_log WHERE target = :t"
                                     " ORDER BY audit_id"), {"t": f"document {offered}"}).all()  # fmt: skip
    assert [tuple(a) for a in audit] == [("availability check", "document.available"),
                                         ("carol", "document.correct"),
                                         ("carol", "document.correct"),
                                         ("carol", "document.catalogue")]  # fmt: skip

    # writes need the token and the curator role
    assert carol.post(f"/documents/{offered}", data=fields).status_code == 403
    victor = signed_in_client(db_engine, tmp_path, "victor", USERS)
    viewer_token = page_token(victor.get("/records").text)
    denied = victor.post(f"/documents/{waiting}/decision",
                         data={"decision": "reject", "csrf_token": viewer_token})  # fmt: skip
    assert denied.status_code == 403
    assert "correcting needs the curator role" in victor.get(f"/documents/{waiting}").text
    assert carol.get("/documents/999999").status_code == 404
