"""Faults of our own platform mid-crawl (the harvest DB stopped, the data disk full) are never
recorded as the site's failures: the crawl pauses and finishes, or stops ``unfinished`` and a
rerun (the crawl task's retry) resumes it; every page is captured exactly once in the end.

The crawler runs with host leases on, so it needs PostgreSQL for every fetch; the database is
the real embedded server of the ``services`` fixture, stopped and started again by the test.
"""

from __future__ import annotations

import errno
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harvestflow import services as svc
from tests.support.crawl import CrawlResult, run_crawl
from tests.support.environment import oracle
from tests.support.platform_site import SlowSite, assert_every_page_once, slow_job

pytestmark = [pytest.mark.slow]

PAGES = 30


@pytest.fixture()
def slow_site() -> Iterator[SlowSite]:
    site = SlowSite(PAGES, page_s=0.1)
    yield site
    site.stop()


@pytest.fixture()
def leased(db_engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host leases on: every fetch of the crawler asks the harvest DB first."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__HOST_LEASES", "true")


def _in_background(job: dict, out: Any) -> tuple[threading.Thread, dict[str, CrawlResult]]:
    done: dict[str, CrawlResult] = {}

    def crawl() -> None:
        done["result"] = run_crawl(job, out, check=False, timeout=300)

    thread = threading.Thread(target=crawl)
    thread.start()
    return thread, done


def test_the_database_stopped_30s_mid_crawl_pauses_the_crawl_which_then_finishes_every_page(
    services, leased, slow_site, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__PLATFORM_OUTAGE_S", "120")
    pg = svc.postgres_for(services)
    out = tmp_path / "job"
    thread, done = _in_background(slow_job(slow_site, 41), out)
    try:
        slow_site.wait_served(8)
        pg.stop()
        stopped = time.monotonic()
        served_at_stop = len(slow_site.requests())
        time.sleep(30)
        # nothing fetched while the database was away but the fetch already under way
        assert len(slow_site.requests()) <= served_at_stop + 1
    finally:
        pg.start()
    back = time.monotonic()
    served_back = len(slow_site.requests())
    while len(slow_site.requests()) == served_back and time.monotonic() - back < 60:
        time.sleep(0.05)
    print(
        f"database away {back - stopped:.1f} s: fetching again {time.monotonic() - back:.1f} s"
        " after it returned"
    )
    thread.join(timeout=240)
    result = done["result"]
    assert result.proc.returncode == 0, result.proc.stderr[-3000:]
    assert result.summary["status"] == "complete"
    assert_every_page_once(slow_site, [out])
    crawler_log = (out / "logs" / "crawler.log").read_text()
    assert "pausing until it returns" in crawler_log


def test_the_database_away_past_the_bound_ends_the_crawl_unfinished_and_the_rerun_completes(
    services, leased, tmp_path, monkeypatch
) -> None:
    """Not ``complete`` with URLs left: the crawl exits 3 (``unfinished``: the crawl task
    fails), its URLs still queued, and the rerun on the same output resumes and finishes. The
    database stops during a fetch: that host lease, not given back, is given back by the rerun
    (else the host stays blocked for the lease's hold time, minutes)."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__PLATFORM_OUTAGE_S", "4")
    pg = svc.postgres_for(services)
    out = tmp_path / "job"
    slow_site = SlowSite(PAGES, page_s=1.0)
    job = slow_job(slow_site, 42)
    thread, done = _in_background(job, out)
    try:
        slow_site.wait_served(3)  # mid-crawl: 27 of the 30 pages left (1 s each)
        time.sleep(0.4)  # the next page's fetch under way (its lease held)
        pg.stop()
        thread.join(timeout=120)
    finally:
        pg.start()
    first = done["result"]
    assert first.proc.returncode == 3, first.proc.stderr[-3000:]
    assert first.summary["status"] == "unfinished"
    assert all(
        d["stop_reason"] != 0 for d in first.summary["domains"].values() if d.get("in_job")
    ), first.summary["domains"]
    fetched_first = {r.path for r in slow_site.requests()}
    assert len(fetched_first) < PAGES + 1  # pages were left for the rerun
    assert (out / "host-leases-held.json").exists()
    slow_site.page_s = 0.05  # slow pages were for the stop to fall during a fetch: done
    try:
        again = run_crawl(job, out, timeout=240)
    finally:
        slow_site.stop()
    assert again.summary["status"] == "complete"
    assert_every_page_once(slow_site, [out])
    assert not (out / "host-leases-held.json").exists()


@pytest.fixture()
def small_disk(tmp_path) -> Iterator[Any]:
    """A 8 MB tmpfs mounted for the test, unmounted after it.

    Mounting needs root (the CI and the development VMs run the tests as root); without it the
    test fails saying so: a full disk cannot be faked by a quota-less folder."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.fail(f"a small tmpfs could not be mounted (root needed): {mounted.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_a_full_data_disk_stops_the_crawl_resumable_and_the_rerun_completes_every_page(
    services, small_disk, tmp_path, monkeypatch
) -> None:
    """The job's disk fills up mid-crawl: no fetch starts below ``min_free_disk_mb``, the crawl
    ends ``unfinished`` (exit 3) with its summary written, no page is logged as failed; once
    space is freed the rerun resumes and completes, each page captured once."""
    monkeypatch.setenv("HARVESTFLOW_CRAWLER__MIN_FREE_DISK_MB", "4")
    site = SlowSite(40, page_s=0.0, page_bytes=200_000)
    try:
        out = small_disk / "job"
        job = slow_job(site, 43, {"min_delay_ms": 0, "max_delay_ms": 0})
        first = run_crawl(job, out, check=False, timeout=240)
        assert first.proc.returncode == 3, first.proc.stderr[-3000:]
        assert first.summary["status"] == "unfinished"
        served = [r for r in site.requests() if r.path.startswith("/page/")]
        assert 0 < len(served) < site.pages  # the disk filled mid-crawl
        assert "min_free_disk_mb" in (out / "logs" / "crawler.log").read_text()
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
        room_at = time.monotonic()
        again = run_crawl(job, out, timeout=240)  # the crawl task's retry
        print(f"data disk full: the rerun complete {time.monotonic() - room_at:.1f} s after room")
        assert again.summary["status"] == "complete"
        assert_every_page_once(site, [out])
    finally:
        site.stop()


def test_a_write_failing_on_a_full_disk_gives_the_host_lease_back_and_logs_no_site_failure(
    services, leased, db_engine, small_disk, monkeypatch
) -> None:
    """With the free-space guard off, a WARC write fails with ENOSPC after the fetch: the host's
    lease is given back all the same (no host blocked for other crawlers), the crawl ends
    without hanging, and crawl.log holds no negative status for it."""
    import sqlalchemy as sa

    monkeypatch.setenv("HARVESTFLOW_CRAWLER__MIN_FREE_DISK_MB", "0")
    subprocess.run(["mount", "-o", "remount,size=2m", str(small_disk)], check=True)
    site = SlowSite(40, page_s=0.0, page_bytes=200_000)
    try:
        out = small_disk / "job"
        first = run_crawl(slow_job(site, 44), out, check=False, timeout=120)
    finally:
        site.stop()
    assert first.proc.returncode != 0
    assert first.summary.get("status") != "complete"
    assert len([r for r in site.requests() if r.path.startswith("/page/")]) < site.pages
    log = out / "logs" / "crawl.log"
    lines = log.read_text().splitlines() if log.exists() else []
    assert [line for line in lines if int(line.split()[1]) < 0] == []
    with db_engine.connect() as conn:
        held = conn.execute(
            sa.text("SELECT host, holder FROM host_leases WHERE holder IS NOT NULL")
        ).all()
    assert held == []


def _fill(disk: Path) -> Path:
    """A file taking every free byte of ``disk`` (written until ENOSPC)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(chunk)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_a_full_disk_during_indexing_stops_each_file_resumable_and_the_rerun_indexes_it_once(
    services, db_engine, small_disk, monkeypatch
) -> None:
    """The data disk fills up after the chain took the job's WARCs in: each file's module
    fails with NoSpaceError saying where (the task fails and is retried), nothing half-written
    is left and no file is recorded further than it got; once space is freed the chain
    finishes every file once: the index holds cdxj-indexer's lines each once, the repository
    copies pass ``warcio check``."""
    from harvestflow import settings as settings_mod
    from indexing import chain, manifest, merge
    from indexing.layout import Layout
    from tests.support.chainkit import expected_index, job_warcs, make_harvest, make_job

    monkeypatch.setenv("HARVESTFLOW_DATA_DIR", str(small_disk / "data"))
    monkeypatch.setenv("HARVESTFLOW_INDEXING__MIN_FREE_BYTES", "0")
    monkeypatch.setenv("HARVESTFLOW_INDEXING__BACKUP", "backup")
    settings_mod.reset()
    cfg = settings_mod.get_settings()
    try:
        hid = make_harvest(db_engine, "disk-full-indexing")
        _, job_dir = make_job(db_engine, cfg.data_dir, hid, files=3, seed=31, records=40)
        names = sorted(chain.ingest(cfg))
        assert len(names) == 4  # three data WARCs and the metadata WARC
        filler = _fill(small_disk)
        for name in names:
            with pytest.raises(chain.NoSpaceError, match=str(small_disk)):
                chain.process_file(name, cfg)
            entry = manifest.get(db_engine, name)
            assert entry is not None and entry.stage in ("ingested", "indexed"), entry
        leftovers = [p for p in small_disk.rglob("*") if p.is_file() and ".tmp" in p.name]
        assert leftovers == []
        filler.unlink()
        began = time.monotonic()
        chain.run_chain(cfg)
        print(f"indexing after a full disk: done {time.monotonic() - began:.1f} s after room")
        assert {n: manifest.get(db_engine, n).stage for n in names} == dict.fromkeys(  # type: ignore[union-attr]
            names, "done"
        )
        today = datetime.now(UTC).date()
        merge.daily_merge(today + timedelta(days=1), cfg)
        merge.bigmerge(cfg)
        layout = Layout.from_settings(cfg)
        warcs = job_warcs(job_dir)
        venv = oracle("cdxj-indexer").parent.parent
        assert layout.big_cdx("cdxj").read_text().splitlines() == expected_index(
            venv, warcs, "cdxj"
        )
        copies = sorted((cfg.data_dir / "repository").rglob("*.warc.gz"))
        assert sorted(p.name for p in copies) == sorted(w.name for w in warcs)
        check = subprocess.run(
            [str(oracle("warcio")), "check", *map(str, copies)], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr
    finally:
        settings_mod.reset()
