"""The harvest definitions' forms through FastAPI's TestClient on a real harvest database: a
curator creates an event crawl and edits it, a refused form comes back with the reason and the
values, a cron schedule needs a crawl engineer, a viewer's write and a forged one are refused
(403); deactivating and reactivating from the page; the versions are shown; a curator of
collection A cannot create, edit, deactivate or move a definition of collection B (403) and an
administrator can, a partner's account (a viewer, curator of A) changes A's definitions, each
write audited."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.curator.actions import Role
from tests.support.signed_in import page_token, signed_in_client

pytestmark = [pytest.mark.services]

USERS = {"carol": Role.CURATOR, "ian": Role.ENGINEER, "victor": Role.VIEWER, "ada": Role.ADMIN,
         "pat": Role.VIEWER}  # fmt: skip


@pytest.fixture
def hdb(db_engine: sa.Engine) -> sa.Engine:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    return db_engine


def _client(engine: sa.Engine, tmp_path: Path, user: str) -> TestClient:
    return signed_in_client(engine, tmp_path, user, USERS)


def _form(**changes: str) -> dict[str, str]:
    return {
        "name": "Olympics",
        "seeds": "https://www.example.fr/\nhttps://results.example.org/live",
        "template": "default_selective",
        "max_objects": "1000",
        "max_bytes": "-1",
        "schedule": "every",
        "every": "2",
        "unit": "hour",
        "at_minute": "0",
        **changes,
    }


def test_a_curator_creates_edits_deactivates_and_reactivates_a_definition(hdb, tmp_path):
    carol = _client(hdb, tmp_path, "carol")
    listing = carol.get("/definitions")
    assert 'id="new-definition"' in listing.text
    token = page_token(carol.get("/definitions/new").text)

    refused = carol.post("/definitions/new", data={**_form(every="x"), "csrf_token": token})
    assert refused.status_code == 400
    assert "refused: every: &#39;x&#39; is not an integer" in refused.text
    assert "https://results.example.org/live" in refused.text  # the values come back

    made = carol.post("/definitions/new", data={**_form(), "csrf_token": token})
    assert made.status_code == 303, made.text
    hid = int(made.headers["location"].split("/definitions/")[1].split("?")[0])
    shown = carol.get(f"/definitions/{hid}")
    assert "every 2 hour(s) at HH:00" in shown.text and "next harvest" in shown.text
    edition = shown.text.split('name="edition" value="')[1].split('"')[0]
    edited = carol.post(
        f"/definitions/{hid}",
        data={**_form(name="Olympics 2028", every="1"), "edition": edition, "csrf_token": token},
    )
    assert edited.status_code == 303, edited.text

    off = carol.post(
        f"/definitions/{hid}/active", data={"active": "no", "reason": "", "csrf_token": token}
    )
    assert off.status_code == 303
    page = carol.get(f"/definitions/{hid}").text
    assert "inactive: deactivated by carol" in page and 'id="reactivate"' in page
    on = carol.post(f"/definitions/{hid}/active", data={"active": "yes", "csrf_token": token})
    assert on.status_code == 303
    page = carol.get(f"/definitions/{hid}").text
    assert 'id="deactivate"' in page and "Olympics 2028" in page
    history = page.split('id="history"')[1]
    for action in ("create", "edit", "deactivate", "reactivate"):
        assert f"<td>carol</td><td>{action}</td>" in history
    with hdb.connect() as conn:
        audit = conn.execute(
            sa.text("SELECT action FROM audit_log WHERE target = :t ORDER BY audit_id"),
            {"t": f"definition {hid}"},
        ).scalars()
        assert list(audit) == [
            "definition.create",
            "definition.edit",
            "definition.deactivate",
            "definition.reactivate",
        ]


def test_cron_needs_an_engineer_viewers_and_forgeries_are_refused(hdb, tmp_path):
    cron = _form(schedule="cron", cron="0 3 * * 1")
    carol = _client(hdb, tmp_path, "carol")
    token = page_token(carol.get("/definitions/new").text)
    refused = carol.post("/definitions/new", data={**cron, "csrf_token": token})
    assert refused.status_code == 403
    assert (
        "carol is a curator: to give a definition a cron schedule, this needs the crawl engineer"
        " role" in refused.text
    )
    assert carol.post("/definitions/new", data=_form()).status_code == 403  # no CSRF token

    ian = _client(hdb, tmp_path, "ian")
    token = page_token(ian.get("/definitions/new").text)
    made = ian.post("/definitions/new", data={**cron, "csrf_token": token})
    assert made.status_code == 303, made.text

    victor = _client(hdb, tmp_path, "victor")
    page = victor.get(made.headers["location"]).text
    assert "cron 0 3 * * 1 (UTC)" in page and 'id="definition-form"' not in page
    token = page_token(victor.get("/records").text)  # a page with a form even for viewers
    hid = made.headers["location"].split("/definitions/")[1].split("?")[0]
    answer = victor.post(f"/definitions/{hid}/active", data={"active": "no", "csrf_token": token})
    assert answer.status_code == 403
    assert victor.get("/definitions/999999").status_code == 404


def test_a_curator_of_a_cannot_change_a_definition_of_b_and_an_administrator_can(hdb, tmp_path):
    from harvest import rights
    from harvest.office.definition_edits import save_definition

    with hdb.begin() as conn:
        rights.grant(conn, "A", "carol", Role.CURATOR, "ada")
        rights.grant(conn, "A", "pat", Role.CURATOR, "ada")  # a partner's account
        rights.grant(conn, "B", "bob", Role.CURATOR, "ada")
    theirs = save_definition(_form(name="B's", collection="B"), "bob", engine=hdb)
    carol = _client(hdb, tmp_path, "carol")
    page = carol.get(f"/definitions/{theirs}").text
    assert 'id="definition-collections">B<' in page and 'id="definition-form"' not in page
    token = page_token(carol.get("/definitions/new").text)

    made = carol.post("/definitions/new", data={**_form(collection="B"), "csrf_token": token})
    assert made.status_code == 403
    assert made.json()["detail"] == (
        "carol is a viewer in collection 'B': to edit definitions there, this needs the curator"
        " role"
    )
    edit = {**_form(name="Mine now", collection="B"), "csrf_token": token}
    assert carol.post(f"/definitions/{theirs}", data=edit).status_code == 403
    off = {"active": "no", "csrf_token": token}
    assert carol.post(f"/definitions/{theirs}/active", data=off).status_code == 403
    mine = carol.post("/definitions/new", data={**_form(collection="A"), "csrf_token": token})
    assert mine.status_code == 303, mine.text
    hid = int(mine.headers["location"].split("/definitions/")[1].split("?")[0])
    moved = {**_form(collection="B"), "csrf_token": token}  # nor by moving hers into B
    assert carol.post(f"/definitions/{hid}", data=moved).status_code == 403

    pat = _client(hdb, tmp_path, "pat")  # a global viewer, curator of A
    assert 'id="new-definition"' in pat.get("/definitions").text
    assert 'id="definition-form"' in pat.get(f"/definitions/{hid}").text
    pat_token = page_token(pat.get("/definitions/new").text)
    renamed = {**_form(name="Pat's", collection="A"), "csrf_token": pat_token}
    assert pat.post(f"/definitions/{hid}", data=renamed).status_code == 303
    # nor out of every collection, where the global roles decide: pat is a viewer there
    left = pat.post(f"/definitions/{hid}", data={**renamed, "collection": ""})
    assert left.status_code == 403
    assert left.json()["detail"] == (
        "pat is a viewer: to edit definitions, this needs the curator role"
    )
    assert pat.post(f"/definitions/{theirs}/active",
                    data={"active": "no", "csrf_token": pat_token}).status_code == 403  # fmt: skip

    ada = _client(hdb, tmp_path, "ada")
    admin_token = page_token(ada.get("/definitions/new").text)
    done = ada.post(f"/definitions/{theirs}", data={**edit, "csrf_token": admin_token})
    assert done.status_code == 303, done.text
    with hdb.connect() as conn:
        names = dict(conn.execute(sa.text("SELECT harvest_id, name FROM harvestdefinitions"
                                          " WHERE audience = 'office'")).all())  # fmt: skip
        audit = conn.execute(sa.text(
            "SELECT username, action, target FROM audit_log WHERE action LIKE 'definition.%'"
            " ORDER BY audit_id")).all()  # fmt: skip
    assert names == {theirs: "Mine now", hid: "Pat's"}
    assert [tuple(a) for a in audit] == [
        ("bob", "definition.create", f"definition {theirs}"),
        ("carol", "definition.create", f"definition {hid}"),
        ("pat", "definition.edit", f"definition {hid}"),
        ("ada", "definition.edit", f"definition {theirs}"),
    ]
