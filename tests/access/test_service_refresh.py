"""What the chain indexes after the last merge is served at once, without restarting pywb, and
never twice: the day's per-file CDXJ files and the continuous crawl's live files are served
flat until the merges and ``harvestflow access reindex`` put them into the ZipNum."""

from __future__ import annotations

import copy
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.index import live_dir
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import merge
from indexing.layout import Layout
from tests.support.replay import cdx, get, index_into_daily, reindex_cli
from tests.support.sitegen import site_urls, write_captures


def wait_for(check, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "not served in time"
        time.sleep(0.5)
    return result


def test_new_files_are_served_without_restart_and_never_twice(
    db_engine: sa.Engine,  # the service reads the access rules from the harvest DB
    access_settings: settings_mod.Settings,
    tmp_path: Path,
):
    settings = access_settings
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    rnd = random.Random(7)
    urls = site_urls(rnd, 30)
    start = datetime(2025, 3, 1, tzinfo=UTC)
    warcs = []
    for i, part in enumerate((urls[0::3], urls[1::3], urls[2::3])):
        warc = tmp_path / f"{i + 1}-4-20261120000000000-{i:05d}-crawler.warc.gz"
        write_captures(warc, part, rnd, start)
        warcs.append(warc)
    day1, day2 = date(2026, 11, 20), date(2026, 11, 21)
    index_into_daily(warcs[0], layout, day1)
    merge.daily_merge(day1, settings)
    merge.bigmerge(settings)

    service = ReplayService(settings)
    service.start()
    try:
        first = cdx(cfg.url, "all", urls[0])
        assert first
        # 1. a file indexed the next day: served flat by the refresh thread, no restart
        index_into_daily(warcs[1], layout, day2)
        assert wait_for(lambda: cdx(cfg.url, "all", urls[1]))
        # 2. a continuous crawl's live file: served as soon as its CDXJ lands, with its WARC
        live = live_dir(settings)
        (live / "warcs").mkdir(parents=True)
        shutil.copy(warcs[2], live / "warcs" / warcs[2].name)
        index_into_daily(warcs[2], layout, day2)  # the chain's own lines, to move them...
        daily_copy = layout.cdx_daily(day2) / (warcs[2].name + ".cdxj")
        (live / "index").mkdir()
        daily_copy.rename(live / "index" / daily_copy.name)  # ...into the live index first
        live_captures = wait_for(lambda: cdx(cfg.url, "all", urls[2]))
        status, body = get(cfg.replay_url("all", live_captures[0]["timestamp"], urls[2], "id_"))
        assert status == 200 and urls[2].encode() in body
        # 3. the chain indexes the live WARC too: its capture is served once, not twice
        index_into_daily(warcs[2], layout, day2)
        time.sleep(3 * cfg.refresh_interval_s + 1)
        assert cdx(cfg.url, "all", urls[2]) == live_captures
        # 4. merges + reindex (the DAG's refresh_access, here through the CLI): all in the
        #    ZipNum, no flat file left, answers unchanged; a second reindex changes nothing
        merge.daily_merge(day2, settings)
        merge.bigmerge(settings)
        done = reindex_cli()
        assert done["built"]["all"]["lines"] == len(
            layout.big_cdx("cdxj").read_bytes().splitlines()
        )
        assert done["recent"]["all"]["files"] == 0
        # what pywb reads: this build's ZipNum summary and loc, no flat file
        assert sorted(p.name for p in cfg.recent_dir("all").iterdir()) == ["all.loc", "all.zipnum"]
        assert reindex_cli()["unchanged"] == ["all"]
        for url in (urls[0], urls[1], urls[2]):
            got = cdx(cfg.url, "all", url)
            assert got and len(got) == len({(c["timestamp"], c["offset"]) for c in got})
        assert cdx(cfg.url, "all", urls[0]) == first
        assert cdx(cfg.url, "all", urls[2]) == live_captures
    finally:
        service.stop()


def test_a_live_file_is_served_in_its_definition_and_job_view_until_the_chain_indexes_it(
    db_engine: sa.Engine, access_settings: settings_mod.Settings
) -> None:
    """A continuous crawl's closed WARC is replayable at once in ``all``, in its definition's
    collection and in its job's view (its WARC found by the resolver in the live folder, before
    any ingest), and once the chain has indexed it, served once, not twice."""
    from indexing.chain import run_chain
    from indexing.nrt import index_closed_warcs
    from tests.support.corpus import Page, chain_job

    settings = access_settings
    cfg = AccessConfig.from_settings(settings)
    url, when = "http://live.example.test/news", "2026-11-22T03:15:00Z"
    body = b"<html><head><title>breaking</title></head><body>live news</body></html>"
    (name,) = chain_job(
        db_engine, settings.data_dir, "News", [[Page(url, body, "text/html", date=when)]], run=False
    )
    with db_engine.connect() as conn:
        hid, job = conn.execute(
            sa.text("SELECT harvest_id, job_id FROM jobs WHERE harvest_id ="
                    " (SELECT harvest_id FROM harvestdefinitions WHERE name = 'News')")
        ).one()  # fmt: skip
    warc = next(settings.data_dir.glob(f"jobs/*/*/*/warcs/{name}"))
    service = ReplayService(settings)
    service.start()
    try:
        assert index_closed_warcs([warc], live_dir(settings)).files == [name]
        colls = ("all", f"harvest-{hid}", f"job-{job}")
        for coll in colls:
            (capture,) = wait_for(lambda c=coll: cdx(cfg.url, c, url))  # type: ignore[misc]
            status, got = get(cfg.replay_url(coll, capture["timestamp"], url, "id_"))
            assert (status, got) == (200, body), coll
        run_chain()  # the chain ingests and indexes the WARC: the live file is dropped
        indexes = cfg.root / "colls" / f"harvest-{hid}" / "indexes"
        wait_for(lambda: not [p for p in indexes.iterdir() if p.name.startswith("live--")])
        wait_for(lambda: not [p for p in cfg.recent_dir("all").iterdir() if "live--" in p.name])
        for coll in colls:  # the chain's file instead of the live one, in one swap: once
            assert len(cdx(cfg.url, coll, url)) == 1, coll
            status, got = get(cfg.replay_url(coll, capture["timestamp"], url, "id_"))
            assert (status, got) == (200, body), coll
    finally:
        service.stop()


def test_a_collection_is_served_under_its_name_and_in_all(
    db_engine: sa.Engine,  # the service reads the access rules from the harvest DB
    access_settings: settings_mod.Settings,
    tmp_path: Path,
):
    data = copy.deepcopy(access_settings.data)
    data["indexing"]["collections"] = {"4": "elections"}
    settings = settings_mod.Settings(data, access_settings.source)
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    rnd = random.Random(11)
    urls = site_urls(rnd, 12)
    mine, other = urls[0::2], urls[1::2]
    warc_c = tmp_path / "1-4-20261120000000000-00000-crawler.warc.gz"
    warc_m = tmp_path / "2-5-20261120000000000-00000-crawler.warc.gz"
    write_captures(warc_c, mine, rnd, datetime(2025, 1, 1, tzinfo=UTC))
    write_captures(warc_m, other, rnd, datetime(2025, 1, 1, tzinfo=UTC))
    day = date(2026, 11, 20)
    index_into_daily(warc_c, layout, day, "elections")
    index_into_daily(warc_m, layout, day)
    merge.daily_merge(day, settings)
    merge.bigmerge(settings)
    service = ReplayService(settings)
    service.start()
    try:
        assert cdx(cfg.url, "elections", mine[0]) and cdx(cfg.url, "all", mine[0])
        assert cdx(cfg.url, "all", other[0]) and not cdx(cfg.url, "elections", other[0])
        assert cdx(cfg.url, "elections", mine[0]) == cdx(cfg.url, "all", mine[0])
    finally:
        service.stop()


def test_access_setup_is_idempotent(replay_venv: Path) -> None:
    """``harvestflow access setup`` on an existing replay venv: nothing to do, exit 0."""
    before = (replay_venv / "bin" / "wayback").stat().st_mtime_ns
    subprocess.run([sys.executable, "-m", "app.cli.main", "access", "setup"], check=True)
    assert (replay_venv / "bin" / "wayback").stat().st_mtime_ns == before


def test_a_taken_port_gives_a_clear_error_and_config_prints(
    access_settings: settings_mod.Settings,
) -> None:
    import socket

    from harvestflow.services import ServiceError

    cfg = AccessConfig.from_settings(access_settings)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", cfg.resolver_port))
        blocker.listen()
        with pytest.raises(ServiceError, match="resolver_port"):
            ReplayService(access_settings).start()
    out = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "access", "config"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # the ZipNum summary is read through the link folder it is swapped with
    assert "collections:\n  all:\n" in out and str(cfg.recent_dir("all") / "all.zipnum") in out
