"""The domain page's forms through FastAPI's TestClient on a real harvest database: a crawl
engineer changes a configuration and adds one, makes the domain an alias (the page says who set
it and when it expires), a refused change comes back with the reason; a curator and a viewer see
no form and their posts are refused (403), unless the curator is given the crawl engineer role
in every collection."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.curator.actions import Role
from tests.support.signed_in import page_token, signed_in_client

pytestmark = [pytest.mark.services]

USERS = {"ian": Role.ENGINEER, "carol": Role.CURATOR, "victor": Role.VIEWER}


def test_an_engineer_configures_a_domain_and_sets_its_alias(db_engine: sa.Engine, tmp_path: Path):
    from harvest.bootstrap import ensure_reference_data
    from harvest.domains import ensure_config

    ensure_reference_data(db_engine)
    with db_engine.begin() as conn:
        ensure_config(conn, "example.fr")
        ensure_config(conn, "example.com")
    carol = signed_in_client(db_engine, tmp_path, "ian", USERS)  # the crawl engineer
    page = carol.get("/domains/example.com")
    assert 'id="alias-form"' in page.text and 'id="config-defaultconfig"' in page.text
    token = page_token(page.text)

    changed = carol.post(
        "/domains/example.com/configurations",
        data={"config": "defaultconfig", "template": "host_only", "max_objects": "300",
              "max_bytes": "-1", "seeds": "https://www.example.com/", "csrf_token": token},
    )  # fmt: skip
    assert changed.status_code == 303
    assert changed.headers["location"].endswith(
        "/domains/example.com?saved=configuration#configurations"
    )
    refused = carol.post(
        "/domains/example.com/configurations",
        data={"config": "extra", "seeds": "https://elsewhere.org/", "csrf_token": token},
    )
    assert "refused=seeds+line+1" in refused.headers["location"]
    shown = carol.get(refused.headers["location"].split("#")[0]).text
    assert "refused: seeds line 1: https://elsewhere.org/ is not in domain example.com" in shown

    aliased = carol.post(
        "/domains/example.com/alias",
        data={"op": "set", "alias_of": "example.fr", "csrf_token": token},
    )
    assert aliased.status_code == 303
    page = carol.get("/domains/example.com").text
    state = page.split('id="alias-state">')[1].split("</td>")[0]
    assert "example.fr" in state and "by ian" in state and "expires" in state
    assert "host_only" in page and "https://www.example.com/" in page
    changes = page.split('id="domain-changes"')[1]
    assert "domain.set_alias" in changes and "domain.configure" in changes
    chain = carol.post(
        "/domains/example.fr/alias",
        data={"op": "set", "alias_of": "example.com", "csrf_token": token},
    )
    assert "example.com+is+itself+an+alias+of+example.fr" in chain.headers["location"]
    assert carol.post(
        "/domains/nowhere.fr/alias", data={"op": "remove", "csrf_token": token}
    ).status_code == 404  # fmt: skip

    victor = signed_in_client(db_engine, tmp_path, "victor", USERS)
    page = victor.get("/domains/example.com").text
    assert 'id="alias-form"' not in page and 'class="filters config-form"' not in page
    token = page_token(victor.get("/records").text)
    removed = victor.post("/domains/example.com/alias", data={"op": "remove", "csrf_token": token})
    assert removed.status_code == 403


def test_a_curator_changes_no_domain_unless_an_engineer_in_every_collection(
    db_engine: sa.Engine, tmp_path: Path
):
    from harvest import rights
    from harvest.bootstrap import ensure_reference_data
    from harvest.domains import ensure_config

    ensure_reference_data(db_engine)
    with db_engine.begin() as conn:
        ensure_config(conn, "example.fr")
        ensure_config(conn, "example.com")
    carol = signed_in_client(db_engine, tmp_path, "carol", USERS)
    page = carol.get("/domains/example.com").text
    assert 'id="alias-form"' not in page and 'class="filters config-form"' not in page
    token = page_token(carol.get("/records").text)
    alias = {"op": "set", "alias_of": "example.fr", "csrf_token": token}
    refused = carol.post("/domains/example.com/alias", data=alias)
    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "carol is a curator: to change domains, their configurations and aliases, this needs"
        " the crawl engineer role"
    )
    config = {"config": "defaultconfig", "max_objects": "5", "csrf_token": token}
    assert carol.post("/domains/example.com/configurations", data=config).status_code == 403
    with db_engine.begin() as conn:
        rights.grant(conn, rights.EVERY, "carol", Role.ENGINEER, "root")
    assert 'id="alias-form"' in carol.get("/domains/example.com").text
    assert carol.post("/domains/example.com/alias", data=alias).status_code == 303
    with db_engine.connect() as conn:
        audit = conn.execute(
            sa.text("SELECT username, action FROM audit_log WHERE target = 'domain example.com'")
        ).all()
    assert [tuple(a) for a in audit] == [("carol", "domain.set_alias")]  # refusals write nothing
