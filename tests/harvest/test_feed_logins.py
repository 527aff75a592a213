"""The crawl feed's login fields (loginPageUrl, logoutUrl, secretId) reach the crawl: the
credential the secretId names gets the target's domain and login/logout URLs at transfer, and
the job spec references it without any secret."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from harvest import pipeline as p
from harvest.selection.importer import import_file
from harvest.selection.transfer import transfer_selection_records
from harvestflow.credentials import load_secrets, set_credential
from tests.support.selection_site import feed, resolver

PASSWORD = "feed-Pa55-w0rd!"


@pytest.mark.services
def test_feed_login_fields_reach_the_job_spec_by_reference(hdb, site, tmp_path):
    items = feed(site)[:1]
    items[0].update(
        loginPageUrl=f"http://feed.test:{site}/login",
        logoutUrl=f"http://feed.test:{site}/logout",
        secretId="ukwa-secret-9",
    )
    other = dict(items[0], id=5, seeds=[f"http://other.test:{site}/ok"], secretId="missing-1")
    path = tmp_path / "feed.json"
    clash = dict(items[0], id=7, seeds=[f"http://www.good.test:{site}/ok"], secretId="clash-1")
    path.write_text(json.dumps([items[0], other, clash]))
    set_credential("good.test", "basic", "x", "y", engine=hdb)
    set_credential("placeholder2.test", "basic", "x", "y", secret_id="clash-1", engine=hdb)
    cid = set_credential(
        "placeholder.test", "basic", "login-anne-7", PASSWORD, secret_id="ukwa-secret-9", engine=hdb
    )
    report = import_file(path, resolver=resolver, engine=hdb, theme="web")
    assert report.inserted == 3, report.text()
    with hdb.connect() as conn:
        row = conn.execute(
            sa.text(
                "SELECT login_page_url, secret_id FROM selection_records WHERE external_id"
                " = 'ukwa:1'"
            )
        ).one()
    assert row.secret_id == "ukwa-secret-9" and row.login_page_url.endswith("/login")

    result = transfer_selection_records(engine=hdb)
    assert [e for e in result["errors"] if "missing-1" in e and "harvestflow credentials set" in e]
    assert [e for e in result["errors"] if "clash-1" in e and "already stored for good.test" in e]
    (secret,) = load_secrets([cid], engine=hdb)
    assert secret.ref.domain == "feed.test" and secret.ref.kind == "form"
    assert secret.ref.logout_url == f"http://feed.test:{site}/logout"
    assert secret.password == PASSWORD

    monthly = result["definitions"]["ukwa-monthly-202601050900"]
    jobs = p.generate_jobs(monthly, datetime(2026, 12, 6, tzinfo=UTC), engine=hdb)
    job_json = Path(p.prepare_job(jobs[0], tmp_path, engine=hdb))
    spec = json.loads(job_json.read_text())
    # the job holds feed.test and good.test (same schedule): each domain's credential
    assert sorted(c["domain"] for c in spec["credentials"]) == ["feed.test", "good.test"]
    assert [c for c in spec["credentials"] if c["domain"] == "feed.test"] == [
        {
            "id": cid,
            "domain": "feed.test",
            "kind": "form",
            "realm": None,
            "login_url": f"http://feed.test:{site}/login",
            "logout_url": f"http://feed.test:{site}/logout",
        }
    ]
    assert PASSWORD not in job_json.read_text() and "login-anne-7" not in job_json.read_text()
