"""The domain page's forms through FastAPI's TestClient on a real harvest database: a curator
changes a configuration and adds one, makes the domain an alias (the page says who set it and
when it expires), a refused change comes back with the reason; a viewer sees no form and a
viewer's post is refused (403)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from app.curator.actions import Role
from tests.support.signed_in import page_token, signed_in_client

pytestmark = [pytest.mark.services]

USERS = {"carol": Role.CURATOR, "victor": Role.VIEWER}


def test_a_curator_configures_a_domain_and_sets_its_alias(db_engine: sa.Engine, tmp_path: Path):
    from harvest.bootstrap import ensure_reference_data
    from harvest.domains import ensure_config

    ensure_reference_data(db_engine)
    with db_engine.begin() as conn:
        ensure_config(conn, "example.fr")
        ensure_config(conn, "example.com")
    carol = signed_in_client(db_engine, tmp_path, "carol", USERS)
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
    assert "example.fr" in state and "by carol" in state and "expires" in state
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
