"""The replay service end to end: a crawl of the sample site goes through the indexing chain,
the merges and the access reindex, and replays through ``harvestflow access`` (pywb started by
our code from its own venv) with the sample site stopped; then from a moved WARC, then with
every local copy deleted, from the preserved copy in S3 through our WARC resolver."""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.service import ReplayService
from app.demo.samplesite import start
from harvestflow import services as platform_services
from harvestflow import settings as settings_mod
from indexing import chain, cleanup, manifest, merge
from preservation.ingest import ingest_job
from tests.support.crawl import make_job, run_crawl
from tests.support.replay import cdx, embedded, get, make_db_job

pytestmark = pytest.mark.services


def check_page_replays(cfg: AccessConfig, page: str, resources: set[str], served: dict) -> None:
    status, body = get(cfg.replay_url("all", "2030", page, "mp_"))
    assert status == 200, body[:300]
    assert b"<h1>" in body
    for url in resources:
        status, data = get(cfg.replay_url("all", "2030", url, "id_"))
        assert status == 200, (url, data[:200])
        host, path = url.split("/", 3)[2].split(":")[0], "/" + url.split("/", 3)[3]
        assert hashlib.sha1(data).hexdigest() == served[(host, path)], url


def test_seed_page_replays_from_repository_moved_file_and_s3_only(
    db_engine: sa.Engine,
    fresh_bucket: str,
    access_settings: settings_mod.Settings,
    caplog: pytest.LogCaptureFixture,
):
    settings_mod.reset()
    settings = settings_mod.get_settings()
    assert settings.s3.bucket == fresh_bucket
    cfg = AccessConfig.from_settings(settings)
    hid, job_id, job_dir = make_db_job(db_engine, settings.data_dir)

    site = start()
    try:
        seed = site.url("www.example-a.test", "/")
        result = run_crawl(make_job(site, [seed], job_id=job_id, harvest_id=hid), job_dir)
        served = {(r.host, r.path): r.sha1 for r in site.requests}
    finally:
        site.stop()  # from now on only the archive can answer
    resources = embedded(result.log_fields(), seed)
    assert len(resources) >= 12
    assert any(u.endswith(".png") for u in resources) and any(u.endswith(".css") for u in resources)

    # the indexing chain, the merges and the cleanup of the job's originals
    run = chain.run_chain(settings)
    assert run["done"] == run["processed"] >= 2 and not run["quarantined"]
    merge.daily_merge(datetime.now(UTC).date(), settings)
    merge.bigmerge(settings)
    cleanup.clean_arc_repository(settings)
    assert not list((job_dir / "warcs").glob("*.warc.gz"))  # only the repository copies remain

    service = ReplayService(settings)
    service.start()  # reindexes: the ZipNum now holds the crawl
    try:
        status = {s.name: s for s in platform_services.status_all(settings)}["replay"]
        assert status.running, status.line()

        # 1. replay with every embed, from the repository location (PATH index)
        check_page_replays(cfg, seed, resources, served)
        captures = cdx(cfg.url, "all", seed)
        assert len(captures) == 1 and captures[0]["status"] == "200"
        ts = captures[0]["timestamp"]
        # banner: pywb's framed page carries the capture time; calendar/query page answers
        status_code, frame = get(cfg.replay_url("all", ts, seed))
        assert status_code == 200 and ts.encode() in frame
        assert get(f"{cfg.url}all/*/{seed}")[0] == 200
        # URL search: prefix, host and domain
        host = "www.example-a.test"
        assert len(cdx(cfg.url, "all", seed + "*", None)) >= len(resources)
        on_host = {c["url"] for c in cdx(cfg.url, "all", seed, "host")}
        assert on_host >= {u for u in resources if f"//{host}:" in u} | {seed}
        # (pywb's domain range stops at a port: the www. host, SURT "test,example-a:PORT)",
        # is not in it on the sample site's port; its subdomains are)
        in_domain = {c["url"] for c in cdx(cfg.url, "all", "example-a.test", "domain")}
        sub_hosts = {u.split("/")[2] for u in resources if f"//{host}:" not in u}
        assert sub_hosts and sub_hosts <= {u.split("/")[2] for u in in_domain}
        # a page never archived says so (no live fetch)
        assert get(cfg.replay_url("all", "2030", "http://not-archived.test/", "mp_"))[0] == 404

        # 2. a data WARC moved to another repository location (its manifest row says where;
        #    the big PATH index still names the old place: pywb falls back to our resolver)
        data_warcs = [
            e for e in manifest.in_stages(db_engine, ("done",)) if "-metadata-" not in e.file_name
        ]
        assert data_warcs
        loc2 = settings.data_dir / "repository" / "loc2" / str(hid)
        loc2.mkdir(parents=True)
        for entry in data_warcs:
            moved = loc2 / entry.file_name
            Path(entry.final_path or "").rename(moved)
            manifest.update(db_engine, entry.file_name, final_path=str(moved))
        caplog.set_level(logging.INFO, logger="access.resolver")
        check_page_replays(cfg, seed, resources, served)
        assert any("GET /warc/" in r.getMessage() for r in caplog.records)

        # 3. preserved in S3, then every local copy deleted: read back from S3
        preserved = ingest_job(job_id, settings)
        assert preserved["status"] == "preserved", preserved
        for entry in data_warcs:
            (loc2 / entry.file_name).unlink()
            left = [p for p in settings.data_dir.rglob(entry.file_name) if p.is_file()]
            assert not left, left
        caplog.clear()
        check_page_replays(cfg, seed, resources, served)
        fetched = {
            m.group(1)
            for r in caplog.records
            if (m := re.search(r"GET /warc/(\S+) ", r.getMessage()))
        }
        assert fetched and fetched <= {e.file_name for e in data_warcs}
    finally:
        service.stop()
    assert not {s.name: s for s in platform_services.status_all(settings)}["replay"].running
    log_text = cfg.access_log.read_text()
    assert f"GET /all/2030mp_/{seed}" in log_text  # the access log under the data dir
