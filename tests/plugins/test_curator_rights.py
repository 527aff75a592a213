"""Rights per collection in the curator pages (TestClient on a real harvest database): a curator
of collection A cannot edit, bulk-edit, move into or annotate a record of collection B (403,
naming the collection) and an administrator can; a partner account (a global viewer given the
curator role in its own collection) edits its collection's records; a bulk edit hands records to
another curator; the records are searched by theme and keyword; the form's allowed budget /
frequency / depth values come from the save's own check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.curator.actions import Role
from harvest import rights
from harvest.selection import editing
from tests.support.signed_in import page_token, signed_in_client

pytestmark = pytest.mark.services

USERS = {"carol": Role.CURATOR, "bob": Role.CURATOR, "ada": Role.ADMIN, "pat": Role.VIEWER}


def _fields(collection: str, url: str, **changes: str) -> dict[str, str]:
    values = {"collection": collection, "seed_url": url, "budget": "small", "title": "T",
              "frequency": "weekly", "depth": "page", "active": "yes", "theme": "politics",
              "keywords": "elections; parliament"}  # fmt: skip
    return {**values, **changes}


@pytest.fixture
def records(db_engine: sa.Engine) -> dict[str, int]:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    made = {}
    for name, coll, url in (("a", "A", "http://a.example/"), ("b", "B", "http://b.example/")):
        saved = editing.save_record(_fields(coll, url), "setup", check_urls=False,
                                    engine=db_engine)  # fmt: skip
        assert saved.record_id is not None, saved.refused
        made[name] = saved.record_id
    with db_engine.begin() as conn:
        rights.grant(conn, "A", "carol", Role.CURATOR, "ada")
        rights.grant(conn, "A", "pat", Role.CURATOR, "ada")  # a partner's account
        rights.grant(conn, "B", "bob", Role.CURATOR, "ada")
    return made


def _as(engine: sa.Engine, tmp_path: Path, user: str) -> tuple[TestClient, str]:
    client = signed_in_client(engine, tmp_path, user, USERS)
    return client, page_token(client.get("/records").text)


def test_a_curator_of_a_cannot_edit_a_record_of_b_and_an_administrator_can(
    db_engine: sa.Engine, tmp_path: Path, records: dict[str, int]
) -> None:
    carol, token = _as(db_engine, tmp_path, "carol")
    a, b = records["a"], records["b"]
    form = {"csrf_token": token, **_fields("B", "http://b.example/", title="Mine now")}
    refused = carol.post(f"/records/{b}", data=form)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("carol is a viewer in collection 'B'")
    # nor by moving her own record into B, nor by annotating B's
    moved = carol.post("/records/bulk", data={"csrf_token": token, "ids": str(a),
                                              "op": "move", "move_to": "B"})  # fmt: skip
    assert moved.status_code == 403
    noted = carol.post(f"/records/{b}/annotations",
                       data={"csrf_token": token, "licence_status": "granted"})  # fmt: skip
    assert noted.status_code == 403
    ok = carol.post(f"/records/{a}", data={"csrf_token": token,
                                          **_fields("A", "http://a.example/", title="Hers")})  # fmt: skip
    assert ok.status_code == 303, ok.text

    ada, admin_token = _as(db_engine, tmp_path, "ada")
    done = ada.post(f"/records/{b}", data={**form, "csrf_token": admin_token})
    assert done.status_code == 303, done.text
    pat, pat_token = _as(db_engine, tmp_path, "pat")  # a global viewer, curator of A
    assert 'id="new-record"' in pat.get("/records").text
    mine = pat.post(f"/records/{a}", data={"csrf_token": pat_token,
                                          **_fields("A", "http://a.example/", title="Pat's")})  # fmt: skip
    assert mine.status_code == 303
    assert pat.post(f"/records/{b}", data={**form, "csrf_token": pat_token}).status_code == 403
    with db_engine.connect() as conn:
        titles = dict(conn.execute(sa.text("SELECT record_id, title FROM selection_records")).all())
        audit = conn.execute(
            sa.text("SELECT username, target FROM audit_log WHERE action = 'record.edit'"
                    " ORDER BY audit_id")).all()  # fmt: skip
    assert titles == {a: "Pat's", b: "Mine now"}
    assert [tuple(r) for r in audit] == [("carol", f"record {a}"), ("ada", f"record {b}"),
                                         ("pat", f"record {a}")]  # fmt: skip


def test_bulk_edit_reassigns_the_curator_and_search_finds_by_theme_and_keyword(
    db_engine: sa.Engine, tmp_path: Path, records: dict[str, int]
) -> None:
    ada, token = _as(db_engine, tmp_path, "ada")
    done = ada.post("/records/bulk", data={"csrf_token": token, "op": "edit",
                                           "ids": [str(records["a"]), str(records["b"])],
                                           "curator": "bob"})  # fmt: skip
    assert done.status_code == 303 and "2+changed" in done.headers["location"]
    listing = ada.get("/records", params={"curator": "bob", "theme": "POLITICS",
                                          "keyword": "Parliament"}).text  # fmt: skip
    assert "http://a.example/" in listing and "http://b.example/" in listing
    assert "http://a.example/" not in ada.get("/records", params={"keyword": "sport"}).text


def test_the_form_shows_the_allowed_combinations_and_searches_are_saved_per_user(
    db_engine: sa.Engine, tmp_path: Path, records: dict[str, int]
) -> None:
    from harvest.selection.mapping import load_mapping

    carol, token = _as(db_engine, tmp_path, "carol")
    found = carol.get("/records/choices", params={"budget": "large", "depth": "host"}).json()
    mapping = load_mapping()
    assert found["frequency"]["daily"] == mapping.check("large", "daily", "host")
    assert "cannot be harvested daily" in found["frequency"]["daily"]
    assert found["frequency"]["monthly"] is None and found["budget"]["large"] is None
    assert found["depth"]["page"] == "a single page does not need a large budget"
    # nothing chosen yet: a value is refused only when nothing else makes it possible
    assert all(why is None for why in carol.get("/records/choices").json()["budget"].values())
    form = carol.get(f"/records/{records['a']}").text  # small / weekly / page
    assert 'select id="f-budget"' in form
    assert re.search(r'<option value="large" class="refused" title="a large budget cannot be'
                     r' harvested weekly[^"]*">large — not with these', form)  # fmt: skip

    saved = carol.post("/records/searches", data={"csrf_token": token, "name": "my politics",
                                                   "back": "?theme=politics&page_no=3&x=1"})  # fmt: skip
    assert saved.status_code == 303
    assert saved.headers["location"] == "/records?theme=politics"
    listing = carol.get("/records").text
    assert '<a href="/records?theme=politics" class="saved-search">my politics</a>' in listing
    assert "my politics" not in _as(db_engine, tmp_path, "bob")[0].get("/records").text
    empty = carol.post("/records/searches", data={"csrf_token": token, "name": "x", "back": ""})
    assert empty.status_code == 400 and "nothing to save" in empty.text
    gone = carol.post("/records/searches",
                      data={"csrf_token": token, "name": "my politics", "op": "delete"})  # fmt: skip
    assert gone.status_code == 303 and "my politics" not in carol.get("/records").text
    with db_engine.connect() as conn:
        audit = conn.execute(sa.text("SELECT username, action FROM audit_log"
                                     " WHERE target = 'saved searches of carol'")).all()  # fmt: skip
    assert [tuple(a) for a in audit] == [("carol", "search.save"), ("carol", "search.delete")]


def test_an_administrator_gives_and_takes_roles_on_the_rights_page(
    db_engine: sa.Engine, tmp_path: Path, records: dict[str, int]
) -> None:
    carol, carol_token = _as(db_engine, tmp_path, "carol")
    form = {"csrf_token": carol_token, **_fields("B", "http://b.example/", title="Carol's")}
    assert carol.post(f"/records/{records['b']}", data=form).status_code == 403
    # a curator gives no roles
    mine = carol.post("/rights", data={"csrf_token": carol_token, "collection": "B",
                                       "username": "carol", "role": "curator"})  # fmt: skip
    assert mine.status_code == 403 and "needs the administrator role" in mine.json()["detail"]

    ada, token = _as(db_engine, tmp_path, "ada")
    page = ada.get("/rights").text
    assert "<td>A</td><td>carol</td><td>curator</td><td>ada</td>" in page
    given = ada.post("/rights", data={"csrf_token": token, "collection": "B",
                                      "username": "carol", "role": "curator"})  # fmt: skip
    assert (
        given.status_code == 303
        and "carol%20is%20a%20curator%20in%20B" in given.headers["location"]
    )
    assert carol.post(f"/records/{records['b']}", data=form).status_code == 303
    bad = ada.post("/rights", data={"csrf_token": token, "collection": "B", "username": "x",
                                    "role": "boss"})  # fmt: skip
    assert bad.status_code == 400 and "role 'boss'" in bad.text
    taken = ada.post("/rights", data={"csrf_token": token, "collection": "B",
                                      "username": "carol", "op": "revoke"})  # fmt: skip
    assert taken.status_code == 303
    assert carol.post(f"/records/{records['b']}", data=form).status_code == 403
    with db_engine.connect() as conn:
        audit = conn.execute(sa.text(
            "SELECT username, action FROM audit_log WHERE target = 'collection B'"
            " ORDER BY audit_id")).all()  # fmt: skip
    assert [tuple(a) for a in audit] == [("ada", "rights.grant"), ("ada", "rights.grant"),
                                         ("ada", "rights.revoke")]  # fmt: skip


def test_a_curator_of_a_cannot_comment_or_patch_a_job_of_b_and_a_curator_of_b_can(
    db_engine: sa.Engine, tmp_path: Path, records: dict[str, int]
) -> None:
    from harvest.definitions import set_collections
    from tests.support.curator_jobs import _insert_job

    job = _insert_job(db_engine, tmp_path / "job", status=3)
    with db_engine.begin() as conn:
        hid = conn.execute(sa.text("SELECT harvest_id FROM jobs WHERE job_id = :j"),
                           {"j": job}).scalar_one()  # fmt: skip
        set_collections(conn, hid, ["B"])
    carol, token = _as(db_engine, tmp_path, "carol")
    assert 'id="qa-form"' not in carol.get(f"/jobs/{job}").text
    comment = {"csrf_token": token, "text": "the front page is broken", "status": "issues"}
    refused = carol.post(f"/jobs/{job}/qa", data=comment)
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("carol is a viewer in collection 'B'")
    patch = carol.post(f"/jobs/{job}/patch", data={"csrf_token": token})
    assert patch.status_code == 403

    bob, bob_token = _as(db_engine, tmp_path, "bob")
    assert 'id="qa-form"' in bob.get(f"/jobs/{job}").text
    assert bob.post(f"/jobs/{job}/qa", data={**comment, "csrf_token": bob_token}).status_code == 303
    # past the rights check: the job has no missing URL to patch
    tried = bob.post(f"/jobs/{job}/patch", data={"csrf_token": bob_token})
    assert tried.status_code == 400, tried.text
    # nor may bob's directives change a record of A
    directive = {"csrf_token": bob_token, "record_id": str(records["a"]),
                 "add_urls": "http://a.example/more"}  # fmt: skip
    assert bob.post(f"/jobs/{job}/qa", data=directive).status_code == 403
    with db_engine.connect() as conn:
        audit = conn.execute(sa.text(
            "SELECT username, action FROM audit_log WHERE target = :t ORDER BY audit_id"),
            {"t": f"job {job}"}).all()  # fmt: skip
    assert [tuple(a) for a in audit] == [("bob", "job.qa_comment")]
