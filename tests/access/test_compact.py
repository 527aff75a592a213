"""The flat index files served until the merges (a day's per-file CDXJ, the continuous crawl's
live files) are compacted into one sorted file per group once they are many; pywb answers the
same captures before, during and after (and while a merge's new ZipNum replaces them), and a
process killed at any step of a compaction loses nothing (the chain's crash-test style: ``HARVESTFLOW_INDEXING_CRASH`` names the point).

Real chain indexer and merges, real pywb (replay venv) behind the gateway; the compaction runs
from ``harvestflow access reindex`` (what the DAG's refresh_access runs) in another process
while a reader keeps querying the running service."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit

import sqlalchemy as sa

from access.config import AccessConfig
from access.index import live_dir
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import merge
from indexing.crashpoints import ENV, EXIT_CODE
from indexing.layout import Layout
from tests.support.replay import cdx, index_into_daily
from tests.support.sitegen import site_urls, write_captures

DAY1, DAY2 = date(2026, 11, 20), date(2026, 11, 21)
CRASHES = ("access.compact.written", "access.compact.recorded", "access.links.built")
# a reader's query every 100 ms: each step of a compaction (a process of a second or more) is
# read many times over
READER_PACE_S = 0.1


def reindex(crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["HARVESTFLOW_ACCESS__COMPACT_MIN_FILES"] = "4"
    if crash:
        env[ENV] = crash
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", "access", "reindex"],
        env=env,
        capture_output=True,
        text=True,
    )


def served(cfg: AccessConfig) -> list[str]:
    """The flat files pywb reads for ``all`` (beside its ZipNum's summary and loc)."""
    return sorted(p.name for p in cfg.recent_dir("all").iterdir() if p.suffix == ".cdxj")


def test_compaction_answers_the_same_throughout_and_a_kill_loses_nothing(
    db_engine: sa.Engine,  # the service reads the access rules from the harvest DB
    access_settings: settings_mod.Settings,
    tmp_path: Path,
) -> None:
    settings = access_settings
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    rnd = random.Random(31)
    # 20 hosts: about 200 URLs spread over the 18 files (a dozen each), each asked exactly
    # at every step (what a kill could lose is a file's lines, and every file is asked)
    urls = site_urls(rnd, 20)
    rnd.shuffle(urls)
    start = datetime(2025, 2, 1, tzinfo=UTC)
    warcs = []
    for i in range(18):
        warc = tmp_path / f"{i + 1}-4-20261120000000000-{i:05d}-crawler.warc.gz"
        write_captures(warc, urls[i::18], rnd, start)
        warcs.append(warc)
    index_into_daily(warcs[0], layout, DAY1)  # merged: in the ZipNum
    merge.daily_merge(DAY1, settings)
    merge.bigmerge(settings)
    for warc in warcs[1:13]:  # the next day's files, not merged
        index_into_daily(warc, layout, DAY2)
    live = live_dir(settings)
    (live / "warcs").mkdir(parents=True)
    (live / "index").mkdir()
    for warc in warcs[13:]:  # the continuous crawl's live files
        shutil.copy(warc, live / "warcs" / warc.name)
        index_into_daily(warc, layout, DAY2).rename(live / "index" / (warc.name + ".cdxj"))

    hosts = sorted({urlsplit(u).netloc for u in urls})
    queries = [(u, "exact") for u in urls] + [(h, "host") for h in hosts[:30]]
    service = ReplayService(settings)
    service.start()
    try:
        assert len(served(cfg)) == 17  # 12 day files + 5 live files, one by one
        reference = {q: cdx(cfg.url, "all", *q) for q in queries}
        assert all(reference[(u, "exact")] for u in urls)  # every capture is found

        # a reader asks all the time, while compactions run, are killed and run again; paced
        # (a query every READER_PACE_S), not back to back: a busy reader kept pywb and the
        # gateway burning the CPU the compactions under test need, for no more steps seen
        stop = threading.Event()
        wrong: list[tuple[str, tuple[str, str], int, int]] = []
        asked = [0]
        phase = ["start"]

        def reader() -> None:
            while not stop.is_set():
                for q in queries[::7]:
                    got = cdx(cfg.url, "all", *q)
                    if got != reference[q]:
                        wrong.append((phase[0], q, len(got), len(reference[q])))
                    asked[0] += 1
                    if stop.wait(READER_PACE_S):
                        break

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            for point in CRASHES:
                phase[0] = point
                killed = reindex(point)
                assert killed.returncode == EXIT_CODE, (point, killed.stderr[-2000:])
                assert {q: cdx(cfg.url, "all", *q) for q in queries} == reference, point
            phase[0] = "final"
            done = reindex()
            assert done.returncode == 0, done.stderr[-2000:]
            compacted = served(cfg)
            # one file per group: the day's 12 files, the 5 live files
            assert len(compacted) == 2 and all("--compact-" in n for n in compacted), compacted
            assert json.loads(done.stdout)["recent"]["all"]["files"] == 2
            assert {q: cdx(cfg.url, "all", *q) for q in queries} == reference
            # idempotent: a second run changes nothing
            link = os.readlink(cfg.recent_dir("all"))
            assert reindex().returncode == 0 and os.readlink(cfg.recent_dir("all")) == link
            # the day merged and a new ZipNum built: its compacted file leaves, the live one
            # stays; the new ZipNum and the flat files it took in swap at once
            phase[0] = "merge"
            merge.daily_merge(DAY2, settings)
            merge.bigmerge(settings)
            assert reindex().returncode == 0
            assert [n.split("--")[0] for n in served(cfg)] == ["live"]
            assert {q: cdx(cfg.url, "all", *q) for q in queries} == reference
        finally:
            stop.set()
            thread.join(120)
        assert asked[0] > 50 and wrong == []
        # the day's compacted file is removed once no served folder links it (the next pass)
        assert reindex().returncode == 0
        assert len(list(cfg.compact_dir("all").glob("*.cdxj"))) == 1
    finally:
        service.stop()
    # nothing half-written left, at most the previous generation of links kept
    leftovers = [p.name for p in cfg.root.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    gens = [p.name for p in cfg.recent_dir("all").parent.iterdir() if p.name.startswith(".all.")]
    assert len(gens) <= 2, gens
