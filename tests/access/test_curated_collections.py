"""A curated collection through the real replay service (pywb behind our gateway): a target of
two jobs, the second chosen, is listed on the home page and replayed in the collection from that job's capture only (pywb's
CDX API lists just it), another target is not in it; dropping the choice empties it; a bad
name, or a choice of a job that does not exist, is refused with the reason."""

from __future__ import annotations

import json
import urllib.parse
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from access import curated, home
from access.config import AccessConfig
from access.publish import publish
from access.service import ReplayService
from harvest.selection import editing
from harvestflow import settings as settings_mod
from tests.support.access_rules import page
from tests.support.corpus import chain_job
from tests.support.replay import get

pytestmark = pytest.mark.services

URL = "http://curated.test/page.html"
OTHER = "http://elsewhere.test/page.html"


def _job_of(name: str) -> int:
    return int(name.split("-", 1)[0])


def test_a_curated_collection_serves_the_chosen_jobs_captures_of_its_targets(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    from harvest.bootstrap import ensure_reference_data

    ensure_reference_data(db_engine)
    data = access_settings.data_dir
    first = chain_job(db_engine, data, "spring",
                      [[page(URL, "spring", datetime(2024, 3, 1, tzinfo=UTC))]])  # fmt: skip
    second = chain_job(db_engine, data, "broad",
                       [[page(URL, "autumn", datetime(2024, 10, 1, tzinfo=UTC)),
                         page(OTHER, "other", datetime(2024, 10, 1, tzinfo=UTC))]])  # fmt: skip
    fields = {"collection": "Web", "seed_url": "http://curated.test/", "budget": "small",
              "frequency": "weekly", "depth": "page", "active": "yes", "theme": "t"}  # fmt: skip
    record = editing.save_record(fields, "setup", check_urls=False, engine=db_engine).record_id
    assert record is not None
    with pytest.raises(curated.CuratedError, match="not all, harvest-"):
        curated.create(db_engine, "harvest-9", "x", "", user="cora")
    curated.create(db_engine, "elections", "Elections 2024", "sites of the campaign", user="cora")
    with pytest.raises(curated.CuratedError, match="job 999999"):
        curated.choose(db_engine, "elections", record, 999999, user="cora")
    curated.choose(db_engine, "elections", record, _job_of(second[0]), user="cora")
    assert publish()["curated"] == {"elections": 1}
    cfg = AccessConfig.from_settings(settings_mod.get_settings())
    listed = json.loads(home.path(cfg).read_text())["collections"]
    assert {"name": "elections", "title": "Elections 2024", "description": "sites of the campaign",
            "captures": 1, "kind": None, "first": None, "last": None} in listed  # fmt: skip

    service = ReplayService(settings_mod.get_settings())
    service.start()
    try:
        base = cfg.url.rstrip("/")
        status, body = get(f"{base}/elections/2024id_/{URL}")
        assert status == 200 and b"autumn" in body and b"spring" not in body
        query = urllib.parse.urlencode({"url": URL, "output": "json"})
        status, body = get(f"{base}/elections/cdx?{query}")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        assert status == 200 and [c["timestamp"] for c in lines] == ["20241001000000"]
        assert get(f"{base}/elections/2024id_/{OTHER}")[0] == 404
        assert get(f"{base}/all/20240301id_/{URL}")[0] == 200  # the archive keeps both

        curated.unchoose(db_engine, "elections", record, _job_of(second[0]))
        assert publish()["curated"] == {"elections": 0}
        assert get(f"{base}/elections/2024id_/{URL}")[0] == 404
    finally:
        service.stop()
    assert _job_of(first[0]) != _job_of(second[0])
