"""A licence that acts, through the real replay service in reading-room mode: a target's licence
set to granted in the curator pages opens that target's replay to a client outside the reading
room within the rules' refresh time (an ``open`` rule, shown by ``access rules list`` with its
origin), another site's captures stay closed, and setting the licence back (the CLI) closes it
again; an operator's rule on the same prefix is never replaced by a licence.

The service (gateway, pywb, resolver) is started by our code on loopback and asked from
127.0.0.2, outside the reading room's 127.0.0.1/32.
"""

from __future__ import annotations

import http.client
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from access import licences, rules
from access.config import AccessConfig
from access.service import ReplayService
from app.curator.actions import Role
from harvest.selection import editing
from harvestflow import settings as settings_mod
from tests.support.access_rules import page
from tests.support.command import harvestflow as cli
from tests.support.corpus import chain_job
from tests.support.signed_in import page_token, signed_in_client

pytestmark = pytest.mark.services

LICENSED = "http://licensed.test/page.html"
OTHER = "http://other.test/page.html"
OUTSIDE = "127.0.0.2"
# the refresh runs every second here: a bound on correctness, far above it
BOUND_S = 60


def status_from_outside(cfg: AccessConfig, url: str) -> int:
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=30, source_address=(OUTSIDE, 0))
    try:
        conn.request("GET", f"/all/2030id_/{url}", headers={"Host": urlsplit(cfg.url).netloc})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def wait_for(cfg: AccessConfig, url: str, status: int) -> None:
    deadline = time.monotonic() + BOUND_S
    while (found := status_from_outside(cfg, url)) != status:
        assert time.monotonic() < deadline, f"{url}: still {found}, not {status}"
        time.sleep(0.3)


def test_a_granted_licence_opens_the_targets_replay_outside_the_reading_room_and_back(
    db_engine: sa.Engine,
    access_settings: settings_mod.Settings,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    from app.cli.main import main
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    when = datetime(2024, 1, 1, tzinfo=UTC)
    chain_job(db_engine, access_settings.data_dir, "licences",
              [[page(LICENSED, "granted", when), page(OTHER, "other", when)]])  # fmt: skip
    fields = {"collection": "News", "seed_url": "http://licensed.test/", "budget": "small",
              "frequency": "weekly", "depth": "page", "active": "yes", "theme": "news"}  # fmt: skip
    record = editing.save_record(fields, "setup", check_urls=False, engine=db_engine).record_id
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM", "true")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_RANGES", '["127.0.0.1/32"]')
    monkeypatch.setenv("HARVESTFLOW_ACCESS__READING_ROOM_LOGIN", "false")
    settings_mod.reset()
    cfg = AccessConfig.from_settings(settings_mod.get_settings())
    service = ReplayService(settings_mod.get_settings())
    service.start()
    try:
        assert status_from_outside(cfg, LICENSED) == 403
        carol = signed_in_client(db_engine, tmp_path, "carol", {"carol": Role.CURATOR})
        token = page_token(carol.get("/records").text)
        granted = carol.post(f"/records/{record}/annotations",
                             data={"csrf_token": token, "licence_status": "granted",
                                   "licence_date": "2024-05-01"})  # fmt: skip
        assert granted.status_code == 303, granted.text
        wait_for(cfg, LICENSED, 200)
        assert status_from_outside(cfg, OTHER) == 403  # only the licensed target is open
        listed = cli("access", "rules", "list")
        assert listed.returncode == 0, listed.stderr
        assert (f"open test,licensed)/ (licence) [from licence:record {record}]  added"
                in listed.stdout and " by carol" in listed.stdout), listed.stdout  # fmt: skip

        back = ["selection", "annotate", str(record), "--licence", "requested", "--user", "dora"]
        assert main(back) == 0
        wait_for(cfg, LICENSED, 403)
        assert rules.active(db_engine) == []
        history = [(r.policy, r.origin, r.created_by, r.removed_by)
                   for r in rules.history(db_engine)]  # fmt: skip
        assert history == [("open", f"licence:record {record}", "carol", "dora")]
    finally:
        service.stop()

    # an operator's rule on the target's prefix wins over its licence, and stays
    rules.add(db_engine, "http://licensed.test/", "block", user="olga", reason="court order")
    assert main(["selection", "annotate", str(record), "--licence", "granted"]) == 0
    done = licences.sync(db_engine)
    assert done.kept_operators == ["test,licensed)/"] and not done.added
    assert [(r.policy, r.origin) for r in rules.active(db_engine)] == [("block", None)]
