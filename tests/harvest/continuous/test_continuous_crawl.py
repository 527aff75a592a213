"""The continuous crawl end to end: launcher → bounded crawler runs → URL state → live replay.

A loopback site with pages changing on a known rhythm (tests/harvest/continuous/rhythm_site.py)
is crawled in half-hour steps of a simulated clock by the real crawler (child processes); the
URL state lives in the test's PostgreSQL; pywb (test oracle) replays the live collection.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import subprocess
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from crawler.launch import crawl_in_subprocess
from harvest.continuous.launcher import launch_hour
from harvest.continuous.noise import add_rule
from harvest.continuous.policy import HOUR
from harvest.continuous.report import crawl_stats, host_report
from harvest.continuous.run import CrawlFn, run_batch
from harvest.continuous.runread import data_warcs
from harvest.continuous.store import load_states
from harvestflow.contracts.summary import JobSummary
from indexing.nrt import LiveWatcher
from tests.support.continuous_site import FAST, H0, POLICY, add_record, start_pywb
from tests.support.replay import get
from tests.support.rhythm_site import PAGES, RhythmSite


def test_launcher_injects_each_due_seed_once_per_hour(db_engine: sa.Engine) -> None:
    add_record(db_engine, "http://a.test/")
    add_record(db_engine, "http://b.test/", start="2026-11-01 07:30:00")
    first = launch_hour(db_engine, H0, POLICY)
    again = launch_hour(db_engine, H0, POLICY)
    assert first.injected == ["http://a.test/"]
    assert again.injected == [] and again.already_launched == 1
    assert launch_hour(db_engine, H0 + dt.timedelta(hours=1), POLICY).injected == ["http://b.test/"]
    state = load_states(db_engine, ["http://a.test/"])["http://a.test/"]
    assert state.next_due == H0 and state.visits == 0
    with db_engine.begin() as conn:  # a used-up quota is reset by the next day's launch
        conn.execute(sa.text("UPDATE continuous_seeds SET fetched_since_launch = 99"))
    assert launch_hour(db_engine, H0 + dt.timedelta(days=1), POLICY).injected == ["http://a.test/"]
    with db_engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT seed_url, fetched_since_launch FROM continuous_seeds"))
        counts = {r.seed_url: r.fetched_since_launch for r in rows}
    assert counts == {"http://a.test/": 0, "http://b.test/": 99}


def crawl_leaving_the_index_to_the_watcher(live: Path, seen: list[bool]) -> CrawlFn:
    """The real crawl, then a wait (before run_batch's final pass) for the watcher thread to
    have indexed every closed data WARC: True in ``seen`` when it did on its own."""

    def crawl(job_path: Path, out: Path, logger: logging.Logger | None = None) -> JobSummary:
        summary = crawl_in_subprocess(job_path, out, logger=logger)
        names = [p.name for p in data_warcs(out)]
        deadline = time.time() + 20
        while time.time() < deadline:
            if names and all((live / "index" / f"{n}.cdxj").exists() for n in names):
                break
            time.sleep(0.2)
        seen.append(bool(names) and all((live / "index" / f"{n}.cdxj").exists() for n in names))
        return summary

    return crawl


def test_adaptive_revisits_learn_rhythms_and_ignore_noise(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    site = RhythmSite()
    live = tmp_path / "live"
    watched: list[bool] = []
    try:
        seed = site.url("/")
        add_record(db_engine, seed)
        assert launch_hour(db_engine, H0, POLICY).injected == [seed]
        add_rule(db_engine, r"rhythm\.test:\d+/clock$", r'<span class="ts">.*?</span>')
        runs = []
        for step in range(11):
            now = H0 + dt.timedelta(minutes=30 * step)
            site.clock = now
            result = run_batch(
                db_engine,
                tmp_path,
                now=now,
                policy=POLICY,
                template=FAST,
                resolve=site.resolve(),
                live_dir=live,
                # run 1 (6 pages, several files): the watcher thread indexes closed WARCs itself
                crawl=crawl_leaving_the_index_to_the_watcher(live, watched) if step == 1 else None,
                live_index=LiveWatcher,
            )
            runs.append(result)
        states = load_states(db_engine, [site.url(p) for p in ("/", *PAGES, "/private")])
    finally:
        site.stop()

    assert runs[0].visited == 1 and runs[0].new_urls == len(PAGES) + 1
    # every data WARC of every run reached the live index, several files per run (rotation)
    assert all(set(r.live_indexed_at) == set(r.warcs) for r in runs)
    assert max(len(r.warcs) for r in runs) >= 2
    assert watched == [True], "closed WARCs are indexed by the watcher, not only at the end"
    assert set(states) == {site.url(p) for p in ("/", *PAGES, "/private")}
    # /private (robots-excluded) is only checked for being discovered here: see the test below
    states.pop(site.url("/private"))
    every, hourly, never, still, clock = (states[site.url(p)] for p in PAGES)
    # learnt intervals move the right way from the 1 h start
    assert every.wait_s == POLICY.min_wait_s and every.changes == every.visits - 1
    assert never.wait_s > HOUR and never.changes == 0
    assert still.wait_s > HOUR and still.changes == 0
    assert every.wait_s <= hourly.wait_s < never.wait_s
    assert 0 < hourly.changes < hourly.visits - 1, "hourly: some visits changed, some not"
    assert every.visits > never.visits, "the changing page is visited more often"
    # the noise rule: the timestamp page never counts as changed although its bytes differ
    assert clock.visits >= 3 and clock.changes == 0 and clock.wait_s > HOUR
    assert clock.noise_digest is not None
    # ... and its links were taken only at its first (unjudged) visit, not at the later ones
    with db_engine.connect() as conn:
        more = conn.execute(
            sa.text("SELECT count(*) FROM continuous_url_state WHERE url LIKE :p"),
            {"p": site.url("/clock-more") + "%"},
        ).scalar_one()
    assert more == 1
    # unchanged pages became revisit records of both kinds; conditional requests were sent
    profiles = revisit_profiles(tmp_path)
    assert profiles[site.url("/never")] == {"server-not-modified"}
    assert profiles[site.url("/still")] == {"identical-payload-digest"}
    assert site.url("/every") not in profiles and site.url("/clock") not in profiles
    assert site.conditional_hits >= never.visits - 1
    # statistics of a crawl that never ends
    stats = crawl_stats(db_engine, H0 + dt.timedelta(hours=5))
    private_visits = stats.visits - sum(s.visits for s in states.values())
    assert stats.urls == 8 and private_visits >= 1  # + the /clock-more URL
    assert 0 < stats.changed_share < 1
    assert "due" in stats.progress_line(10) and "overdue" in stats.progress_line(10)
    (row,) = host_report(db_engine, H0 + dt.timedelta(hours=5))
    assert row["urls"] == 8 and row["min_wait_h"] == round(25 / 60, 2) and row["max_wait_h"] > 1


def test_a_capture_is_replayable_through_pywb_minutes_after_its_fetch(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    site = RhythmSite()
    live = tmp_path / "live"
    pywb = start_pywb(live)
    try:
        seed = site.url("/every")
        add_record(db_engine, seed)
        launch_hour(db_engine, H0, POLICY)
        result = run_batch(
            db_engine,
            tmp_path,
            now=H0,
            policy=POLICY,
            template=FAST,
            resolve=site.resolve(),
            live_dir=live,
            live_index=LiveWatcher,
        )
        assert result.visited == 1 and result.cdx_lines >= 1
        latency = wait_replayable(pywb, seed, result.out_dir)
    finally:
        site.stop()
        pywb.terminate()
        pywb.wait(timeout=10)
    assert latency is not None, "the live capture never became replayable"
    assert latency <= 300, f"fetch to replayable took {latency:.0f} s (target 5 minutes)"


def wait_replayable(pywb: subprocess.Popen[bytes], url: str, out_dir: str) -> float | None:
    """Seconds from the fetch (crawl.log) until pywb replays that exact capture."""
    line = next(
        ln.split()
        for ln in (Path(out_dir) / "crawl" / "logs" / "crawl.log").read_text().splitlines()
        if ln.split()[3] == url
    )
    fetched = dt.datetime.strptime(line[8][:14], "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
    port = pywb.port  # type: ignore[attr-defined]
    deadline = time.time() + 60
    while time.time() < deadline:
        status, body = get(f"http://127.0.0.1:{port}/live/{line[8][:14]}id_/{url}")
        if status == 200 and b"edition" in body:
            return (dt.datetime.now(dt.UTC) - fetched).total_seconds()
        time.sleep(0.5)
    return None


def revisit_profiles(base: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((base / "runs").glob("*/crawl/warcs/*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "revisit":
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    profile = rec.rec_headers.get_header("WARC-Profile").rsplit("/", 1)[-1]
                    found.setdefault(url, set()).add(profile)
    return found


def test_crawl_for_runs_batches_and_logs_due_overdue_done(
    db_engine: sa.Engine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from harvest.continuous.service import crawl_for

    site = RhythmSite()
    try:
        seed = site.url("/")
        add_record(db_engine, seed)
        yesterday = H0 - dt.timedelta(days=1)  # in the past of the real clock crawl_for uses
        launch_hour(db_engine, yesterday + dt.timedelta(hours=1), POLICY)  # not its hour
        assert load_states(db_engine, [seed]) == {}
        launch_hour(db_engine, yesterday, POLICY)
        caplog.set_level("INFO", logger="harvest.continuous")
        result = crawl_for(
            0,
            engine=db_engine,
            out_dir=tmp_path,
            batch_size=10,
            resolve=site.resolve(),
            progress_interval_s=0.5,
            live_index=LiveWatcher,
        )
    finally:
        site.stop()
    assert result["runs"] == 1 and result["visited"] == 1 and result["new_urls"] == len(PAGES) + 1
    assert site.hits.get("/") == 1
    records = [r for r in caplog.records if r.getMessage().startswith("continuous: due")]
    lines = [r.getMessage() for r in records]
    assert lines and "due 6 / overdue 0" in lines[-1] and "done 1" in lines[-1]
    # while the batch ran (a crawler child: seconds), the line came at the steady interval too
    during = [r for r in records if "done 0" in r.getMessage()]
    assert len(during) >= 2, lines
    gaps = [b.created - a.created for a, b in itertools.pairwise(during)]
    assert all(gap > 0.3 for gap in gaps), gaps  # one line per interval, not a burst
    assert list((tmp_path / "live" / "index").glob("*.cdxj"))
    # the run is a DONE job of the "continuous" definition: the indexing chain takes it in
    from indexing.layout import harvest_id_of, job_id_of
    from indexing.manifest import finished_jobs

    ((job_id, harvest_id, job_dir),) = finished_jobs(db_engine)
    names = [p.name for p in (Path(job_dir) / "warcs").glob("*.warc.gz")]
    data = [n for n in names if "metadata" not in n]
    assert data and all(harvest_id_of(n) == harvest_id and job_id_of(n) == job_id for n in data)


def test_robots_excluded_url_cannot_be_judged_and_gets_the_fixed_interval(
    db_engine: sa.Engine, tmp_path: Path
) -> None:
    site = RhythmSite()
    try:
        private = site.url("/private")
        add_record(db_engine, private)
        launch_hour(db_engine, H0, POLICY)
        result = run_batch(
            db_engine,
            tmp_path,
            now=H0,
            policy=POLICY,
            template=FAST,
            resolve=site.resolve(),
            live_index=LiveWatcher,
        )
    finally:
        site.stop()
    state = load_states(db_engine, [private])[private]
    assert result.visited == 1 and result.unjudged == 1
    assert state.status == -9998 and state.failures == 1 and state.changes == 0
    assert state.wait_s == POLICY.fixed_wait_s
    assert site.hits.get("/private") is None
