"""Each harvest definition's collection (``harvest-<id>``) is served from a ZipNum index of its
own after the big merge, plus the per-file CDXJ of its jobs not merged yet, and answers exactly
what the flat CDXJ of that definition's jobs answers.

Captures go through the chain's own indexer (``harvestflow index cdx``), daily merge and big
merge; the reference is pywb from the oracle venv serving, per definition, the flat CDXJ of
that definition's jobs' per-file index files; the candidate is our replay service (pywb from
the replay venv) after ``harvestflow access reindex``. Small blocks, so that answers cross
block boundaries and exceed pywb's default of ten blocks per answer.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from access.config import AccessConfig
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import merge
from indexing.layout import Layout
from tests.support.replay import ORACLE_WAYBACK, cdx, flat_pywb, index_into_daily, reindex_cli
from tests.support.sitegen import site_urls, write_captures

pytestmark = pytest.mark.skipif(
    not ORACLE_WAYBACK.exists(), reason="pywb oracle venv missing: bash scripts/setup-oracles.sh"
)

DAY1, DAY2 = date(2026, 11, 20), date(2026, 11, 21)


def make_definition(engine: sa.Engine, name: str, kind: str, jobs: int) -> tuple[int, list[int]]:
    with engine.begin() as conn:
        hid = int(
            conn.execute(
                sa.text(
                    "INSERT INTO harvestdefinitions (name, kind) VALUES (:n, :k)"
                    " RETURNING harvest_id"
                ),
                {"n": name, "k": kind},
            ).scalar_one()
        )
        job_ids = [
            int(
                conn.execute(
                    sa.text(
                        "INSERT INTO jobs (harvest_id, harvest_num, job_index, status, channel,"
                        " template_name, template, seedlist) VALUES (:h, 1, :i, 3, 'CIBLEE',"
                        " 'default', CAST('{}' AS jsonb), 'http://example.com/')"
                        " RETURNING job_id"
                    ),
                    {"h": hid, "i": i},
                ).scalar_one()
            )
            for i in range(jobs)
        ]
    return hid, job_ids


def test_each_definition_is_served_from_its_zipnum_exactly_as_its_flat_cdxj(
    db_engine: sa.Engine,
    access_settings: settings_mod.Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_BLOCK_LINES", "2")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_SHARD_BLOCKS", "20")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_MAX_BLOCKS", "1000")
    settings_mod.reset()
    settings = settings_mod.get_settings()
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    rnd = random.Random(23)
    urls = site_urls(rnd, 60)
    defs = {
        "Elections": make_definition(db_engine, "Elections", "partial", 3),
        "Sports": make_definition(db_engine, "Sports", "partial", 2),
        "Broad 2026": make_definition(db_engine, "Broad 2026", "full", 1),
    }
    per_file: dict[str, list[Path]] = {name: [] for name in defs}
    late: Path | None = None
    serial = 0
    for name, (hid, jobs) in defs.items():
        for job in jobs:
            # overlapping samples: the same URLs captured by several definitions
            sample = sorted(rnd.sample(urls, len(urls) * 2 // 5))
            serial += 1
            warc = tmp_path / f"{job}-{hid}-20261120000000000-{serial:05d}-crawler.warc.gz"
            write_captures(warc, sample, rnd, datetime(2025, 1, 1, tzinfo=UTC))
            if name == "Elections" and late is None:
                late = warc  # indexed the next day: not merged when served
                continue
            per_file[name].append(index_into_daily(warc, layout, DAY1))
    # a WARC of no known job: in `all` only
    stray = tmp_path / "999999-77-20261120000000000-00099-crawler.warc.gz"
    write_captures(stray, urls[:20], rnd, datetime(2025, 1, 1, tzinfo=UTC))
    index_into_daily(stray, layout, DAY1)
    merge.daily_merge(DAY1, settings)
    merge.bigmerge(settings)
    assert late is not None
    per_file["Elections"].append(index_into_daily(late, layout, DAY2))

    done = reindex_cli()
    built = done["definitions"]["built"]
    colls = {name: f"harvest-{hid}" for name, (hid, _) in defs.items()}
    assert set(built) == set(colls.values())
    assert done["definitions"]["unassigned"] > 0  # the stray WARC's captures
    assert reindex_cli()["definitions"]["unchanged"] == sorted(colls.values())
    # what pywb reads for a definition: its ZipNum, plus the one per-file file merged later
    for name, coll in colls.items():
        served = sorted(p.name for p in (cfg.root / "colls" / coll / "indexes").iterdir())
        flat = [n for n in served if n.endswith(".cdxj")]
        assert f"{coll}.idx" in served and f"{coll}.loc" in served
        assert flat == ([f"main--{DAY2}--{late.name}.cdxj"] if name == "Elections" else [])

    oracle = {}
    for name, files in per_file.items():
        lines = sorted({line for f in files for line in f.read_bytes().splitlines(keepends=True)})
        oracle[colls[name]] = tmp_path / f"flat-{colls[name]}.cdxj"
        oracle[colls[name]].write_bytes(b"".join(lines))
        # more lines than pywb's default ten blocks: big answers cross that limit
        assert len(lines) > 10 * 2

    hosts = sorted({urlsplit(u).netloc for u in urls if not urlsplit(u).port})
    domains = sorted({".".join(h.split(".")[-2:]) for h in hosts})
    queries: list[tuple[str, str | None]] = [(u, "exact") for u in rnd.sample(urls, 60)]
    queries += [(u.split("/img/")[0] + "/img/*", None) for u in urls if "/img/" in u][:20]
    queries += [(u[:-3], "prefix") for u in urls if not u.endswith("/") and "?" not in u][:20]
    queries += [(h, "host") for h in rnd.sample(hosts, 20)]
    queries += [(d, "domain") for d in domains[:15]]
    queries += [("nothing.test", "domain")]

    service = ReplayService(settings)
    service.start()
    try:
        with flat_pywb(oracle, tmp_path / "oracle") as oracle_base:
            compared = lookups = 0
            empty = only_elsewhere = 0
            for coll in colls.values():
                for url, match in queries:
                    want = cdx(oracle_base, coll, url, match)
                    got = cdx(cfg.url, coll, url, match)
                    assert got == want, (coll, url, match, len(got), len(want))
                    lookups += 1
                    compared += len(want)
                    if not want:
                        empty += 1
                        only_elsewhere += bool(cdx(cfg.url, "all", url, match))
            # from a ZipNum alone (no flat file): more blocks than pywb's default of ten
            biggest = max(len(cdx(cfg.url, colls["Sports"], d, "domain")) for d in domains)
    finally:
        service.stop()
    print(f"{lookups} lookups, {compared} captures compared, {empty} empty answers")
    assert lookups > 300 and compared > 3 * lookups
    assert only_elsewhere > 0  # URLs of `all` that another definition captured: filtered out
    assert biggest > 10 * 2  # answers larger than pywb's default max_blocks came whole
