"""The ZipNum index the access service builds answers exactly what the flat CDXJ answers.

The flat big CDXJ comes from the indexing chain's own merges (per-file CDXJ from
``harvestflow index cdx``, ``daily_merge``, ``bigmerge``). The reference is pywb from the
oracle venv serving that flat file; the candidate is our replay service (pywb from the replay
venv) serving the ZipNum built by ``access.index.reindex`` with small blocks, so that most
answers cross block boundaries. Both are asked the same thousands of CDX API queries (exact,
prefix, host, domain) and must give the same captures in the same order.

Sizes: blocks of 8 lines and shards of 20 blocks, so that a web of 60 hosts (about 1,100
capture lines, 1,100 queries) makes a ZipNum of well over 100 blocks in several shards, and
every host and domain answer longer than a block crosses a block boundary (checked below).
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import subprocess
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from access import zipnum
from access.config import AccessConfig
from access.index import refresh, reindex
from access.service import ReplayService
from harvestflow import settings as settings_mod
from indexing import merge
from indexing.layout import Layout
from tests.support.replay import ORACLE_WAYBACK, cdx, flat_pywb, index_into_daily
from tests.support.sitegen import site_urls, write_captures

pytestmark = pytest.mark.skipif(
    not ORACLE_WAYBACK.exists(), reason="pywb oracle venv missing: bash scripts/setup-oracles.sh"
)

DAY = date(2026, 11, 20)
BLOCK_LINES = 8  # lines per ZipNum block: most answers cross a block boundary


def make_warcs(
    tmp: Path, rnd: random.Random, files: int, hosts: int
) -> tuple[list[Path], list[str]]:
    urls = site_urls(rnd, hosts)
    rnd.shuffle(urls)
    warcs = []
    for i in range(files):
        warc = tmp / f"{i + 1}-3-20261120000000000-{i:05d}-crawler.warc.gz"
        write_captures(warc, urls[i::files], rnd, datetime(2025, 1, 1, tzinfo=UTC))
        warcs.append(warc)
    return warcs, urls


def test_zipnum_answers_exactly_what_the_flat_cdxj_answers(
    db_engine: sa.Engine,  # the service reads the access rules from the harvest DB
    access_settings: settings_mod.Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_BLOCK_LINES", str(BLOCK_LINES))
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_SHARD_BLOCKS", "20")
    monkeypatch.setenv("HARVESTFLOW_ACCESS__ZIPNUM_MAX_BLOCKS", "1000")
    # nothing changes while the service is asked: its refresh passes at the product's pace
    # (30 s), not the access tests' 1 s (a pass reads the harvest DB ~10 times: idle work here)
    monkeypatch.setenv("HARVESTFLOW_ACCESS__REFRESH_INTERVAL_S", "30")
    settings_mod.reset()
    settings = settings_mod.get_settings()
    layout = Layout.from_settings(settings)
    rnd = random.Random(18)
    warcs, urls = make_warcs(tmp_path, rnd, files=4, hosts=60)
    for warc in warcs:
        index_into_daily(warc, layout, DAY)
    merge.daily_merge(DAY, settings)
    merge.bigmerge(settings)
    big = layout.big_cdx("cdxj")
    flat_lines = big.read_bytes().splitlines(keepends=True)
    assert len(flat_lines) > 1000

    built = reindex(settings)
    cfg = AccessConfig.from_settings(settings)
    assert built["built"]["all"]["lines"] == len(flat_lines)
    assert built["recent"]["all"]["files"] == 0  # everything is in the ZipNum
    assert built["built"]["all"]["blocks"] > 100
    assert len(list(cfg.zipnum_dir("all").glob("*.cdxj.gz"))) > 1  # several shards

    hosts = sorted({urlsplit(u).netloc for u in urls if not urlsplit(u).port})
    domains = sorted({".".join(h.split(".")[-2:]) for h in hosts})
    queries: list[tuple[str, str | None]] = [(u, "exact") for u in urls]
    # pywb's short prefix syntax: a trailing * (e.g. every image of a host)
    queries += [(u.split("/img/")[0] + "/img/*", None) for u in urls if "/img/" in u][:300]
    queries += [(u[:-3], "prefix") for u in urls if not u.endswith("/") and "?" not in u][:400]
    queries += [(h, "host") for h in hosts]
    queries += [(d, "domain") for d in domains]
    queries += [("http://not-archived.test/", "exact"), ("nothing.test", "domain")]

    service = ReplayService(settings)
    service.start()
    try:
        with flat_pywb(big, tmp_path / "flat") as flat_base:
            compared = 0
            empty: list[tuple[str, str | None]] = []
            longest: dict[str | None, int] = {}  # per match type, the longest answer
            for url, match in queries:
                want = cdx(flat_base, "flat", url, match)
                got = cdx(cfg.url, "all", url, match)
                assert got == want, (url, match, len(got), len(want))
                compared += len(want)
                longest[match] = max(longest.get(match, 0), len(want))
                if not want:
                    empty.append((url, match))
    finally:
        service.stop()
    # the first queries are every archived URL, exact: what the service answered them (asking
    # again would send the same 560 queries twice)
    exact_empty = sum(1 for u in urls if (u, "exact") in empty)
    print(f"{len(queries)} queries, {compared} captures compared, {len(empty)} empty answers")
    assert len(queries) > 1000
    # host and domain answers longer than a block: read across block boundaries
    assert longest["host"] > BLOCK_LINES and longest["domain"] > BLOCK_LINES, longest
    assert exact_empty == 0  # every archived URL is found (the comparison is not vacuous)
    assert len(empty) == 2, empty[:20]  # only the two URLs never archived
    assert compared > 4 * len(queries)


def test_zipnum_build_is_atomic_idempotent_and_keeps_the_previous_generation(
    access_settings: settings_mod.Settings, tmp_path: Path
):
    settings = access_settings
    layout = Layout.from_settings(settings)
    cfg = AccessConfig.from_settings(settings)
    rnd = random.Random(5)
    warcs, _ = make_warcs(tmp_path, rnd, files=2, hosts=10)
    index_into_daily(warcs[0], layout, DAY)
    merge.daily_merge(DAY, settings)
    merge.bigmerge(settings)
    first = reindex(settings)
    assert set(first["built"]) == {"all"}
    assert reindex(settings)["unchanged"] == ["all"]  # same inputs: nothing rebuilt
    gen1 = zipnum.read_state(cfg.zipnum_dir("all"), "all")["generation"]

    # a later day's file: served flat at once, then in the ZipNum after the merges
    later = date(2026, 11, 21)
    index_into_daily(warcs[1], layout, later)
    assert refresh(settings)["all"]["files"] == 1
    merge.daily_merge(later, settings)
    merge.bigmerge(settings)
    second = reindex(settings)
    assert second["built"]["all"]["lines"] == len(layout.big_cdx("cdxj").read_bytes().splitlines())
    assert second["recent"]["all"]["files"] == 0
    state = zipnum.read_state(cfg.zipnum_dir("all"), "all")
    assert state["generation"] == gen1 + 1
    gens = {p.name.split("-")[1] for p in cfg.zipnum_dir("all").glob("*.cdxj.gz")}
    assert gens == {f"{gen1:06d}", f"{gen1 + 1:06d}"}  # the previous one kept for open readers
    assert list(zipnum.iter_lines(cfg.summary("all"))) == (
        layout.big_cdx("cdxj").read_bytes().splitlines(keepends=True)
    )
    assert not [p for p in cfg.zipnum_dir("all").iterdir() if p.name.endswith(".tmp")]


def captures(host: str, n: int) -> list[bytes]:
    """``n`` sorted CDXJ lines of one host (SURT of ``<host>.example``)."""
    return [
        b'example,%s)/p%04d 20250101000000 {"url": "http://%s.example/p%04d"}\n'
        % (host.encode(), i, host.encode(), i)
        for i in range(n)
    ]


def test_each_block_is_apart_in_its_shard_which_inflates_to_the_lines(tmp_path: Path):
    lines = captures("aaa", 7) + captures("big", 123) + captures("zzz", 9)
    built = zipnum.build(iter(lines), tmp_path, "all", block_lines=10, shard_blocks=6)
    assert built.blocks == 14 and len(built.shards) == 3
    # any gzip reader reads a shard (the empty member between blocks inflates to nothing)
    assert b"".join(gzip.decompress(s.read_bytes()) for s in built.shards) == b"".join(lines)
    rows = [r.split(b"\t") for r in built.summary.read_bytes().splitlines()]
    for row, after in itertools.pairwise(rows):
        if row[1] == after[1]:  # same shard: never contiguous, so pywb reads each on its own
            assert int(row[2]) + int(row[3]) < int(after[2])
    assert list(zipnum.iter_lines(built.summary)) == lines


# pywb's zipnum reader (replay venv) on a prefix lookup with a limit: how many summary lines it
# parsed, how many block reads it made, and the captures it answered
PYWB_LOOKUP = """
import json, sys
from itertools import islice
from pywb.warcserver.index import zipnum
from pywb.warcserver.index.query import CDXQuery
parsed = []
class Counted(zipnum.IDXObject):
    def __init__(self, line):
        parsed.append(line)
        super().__init__(line)
zipnum.IDXObject = Counted
source = zipnum.ZipNumIndexSource(sys.argv[1], {"max_blocks": 300})
reads = []
load = source.blk_loader.load
source.blk_loader.load = lambda *a: reads.append(a) or load(*a)
params = {"url": sys.argv[2], "matchType": "prefix"}
CDXQuery(params)
got = [c.to_cdxj() for c in islice(source.load_index(params), 25)]
print(json.dumps({"parsed": len(parsed), "reads": len(reads), "captures": got}))
"""


def test_pywb_reads_a_limited_prefix_lookup_from_the_blocks_it_needs_only(
    tmp_path: Path, replay_venv: Path
):
    """A site of 50 blocks, 25 captures asked: pywb parses a few summary lines and reads two or
    three blocks, not the run of contiguous blocks up to ``max_blocks`` it merges into one."""
    lines = captures("aaa", 15) + captures("big", 500) + captures("zzz", 15)
    built = zipnum.build(iter(lines), tmp_path, "all", block_lines=10)
    assert built.blocks == 53 and len(built.shards) == 1
    out = subprocess.run(
        [str(replay_venv / "bin" / "python"), "-c", PYWB_LOOKUP, str(built.summary),
         "http://big.example/"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    found = json.loads(out.stdout)
    assert [c.encode() for c in found["captures"]] == lines[15:40]
    assert found["reads"] <= 4, found["reads"]
    assert found["parsed"] <= 6, found["parsed"]
