"""The crawl.log pass: golden logs, bad lines named with their line numbers, ranges, gzip."""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import random
from pathlib import Path

import polars as pl
import pytest

from qa.crawllog_aggregate import CrawlLogError, aggregate_crawl_log, parse_line_slow, split_ranges

from .conftest import DATA

JOB1 = DATA / "jobs" / "1" / "logs" / "crawl.log"
JOB2 = DATA / "jobs" / "2" / "logs" / "crawl.log"


def _by(groups: pl.DataFrame, *keys: str) -> dict:
    out = groups.group_by(list(keys)).agg(pl.col("lines").sum(), pl.col("bytes").sum())
    return {tuple(r[:-2]) if len(keys) > 1 else r[0]: (r[-2], r[-1]) for r in out.iter_rows()}


def test_golden_log_counts_every_line_by_status_and_mime() -> None:
    agg = aggregate_crawl_log(JOB1)
    assert agg.lines == 14 and agg.bad_lines == 0
    status = _by(agg.groups, "status")
    # hand-counted from the golden file (line 14 is unpadded: the tolerant path)
    assert status == {
        1: (1, 53), 200: (8, 1000 + 100 + 5000 + 3000 + 2000 + 10000 + 7000 + 800),
        404: (1, 200), -5003: (1, 0), -6: (1, 0), -4000: (1, 0), -9998: (1, 0),
    }  # fmt: skip
    mime = _by(agg.groups, "mime")
    assert mime["image/png"] == (1, 5000)
    assert mime["text/html;charset=utf-8"] == (1, 2000)
    assert mime["text/css"] == (1, 800)
    assert mime["unknown"] == (4, 0)
    assert agg.first_ts == "2026-11-22T10:00:01.000Z"
    assert agg.last_ts == "2026-11-22T10:00:14.000Z"


def test_flags_duplicate_seed_and_quota_come_from_hop_path_and_annotations() -> None:
    g = aggregate_crawl_log(JOB1).groups
    assert g.filter(pl.col("dup"))["lines"].sum() == 1
    assert g.filter(pl.col("dup"))["mime"].to_list() == ["image/jpeg"]
    assert g.filter(pl.col("seed"))["lines"].sum() == 3  # two seeds fetched, one DNS failure
    quota = g.filter(pl.col("quota"))
    assert quota["status"].to_list() == [-5003] and quota["auth"].to_list() == ["example-b.test"]
    # authorities are kept raw (case, port) and cleaned later on distinct values
    assert "WWW.Example-B.test:8099" in g["auth"].to_list()
    assert "dns:www.example-a.test" in g["auth"].to_list()


def test_bad_lines_are_counted_and_named_with_line_numbers() -> None:
    agg = aggregate_crawl_log(JOB2)
    assert (agg.lines, agg.bad_lines) == (7, 2)
    assert [b.line for b in agg.bad_examples] == [6, 7]
    assert "12 expected" in agg.bad_examples[0].reason
    assert agg.bad_examples[1].excerpt.startswith("2026-11-22T09:00:07.000Z")
    assert agg.groups["lines"].sum() == 5


def test_missing_log_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CrawlLogError, match="missing"):
        aggregate_crawl_log(tmp_path / "nope" / "crawl.log")


def test_garbage_bytes_blank_lines_and_extra_info_field(tmp_path: Path) -> None:
    good = JOB1.read_bytes().splitlines(keepends=True)
    extra = good[1].rstrip(b"\n") + b' {"warcFilename":"x.warc.gz"}\n'
    data = good[1] + b"\n" + b'\xff\xfe\x00garbage \x1f"quoted\n' + extra + good[2]
    path = tmp_path / "crawl.log"
    path.write_bytes(data)
    agg = aggregate_crawl_log(path)
    assert agg.lines == 5
    assert agg.bad_lines == 2
    assert [b.line for b in agg.bad_examples] == [2, 3]
    assert agg.groups["lines"].sum() == 3


def test_gzipped_log_gives_the_same_table(tmp_path: Path) -> None:
    gz = tmp_path / "crawl.log.gz"
    gz.write_bytes(gzip.compress(JOB1.read_bytes()))
    plain = aggregate_crawl_log(JOB1).groups.sort(pl.all())
    zipped = aggregate_crawl_log(gz).groups.sort(pl.all())
    assert plain.equals(zipped)


def test_truncated_gzip_is_reported_not_crashing(tmp_path: Path) -> None:
    gz = tmp_path / "crawl.log.gz"
    gz.write_bytes(gzip.compress(JOB1.read_bytes() * 50)[:-200])
    with pytest.raises(CrawlLogError, match="decompress"):
        aggregate_crawl_log(gz)


def _synthetic(path: Path, n: int) -> None:
    rnd = random.Random(7)
    hosts = ["www.a.fr", "b.com", "c.net", "d.fr"]
    lines = []
    for i in range(n):
        st = rnd.choice([200, 200, 200, 404, -5003, -6, 301])
        size = "-" if st < 0 else str(rnd.randint(0, 99999))
        when = dt.datetime(2026, 11, 22, 10, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i)
        ts = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
        h = rnd.choice(hosts)
        lines.append(
            f"{ts} {st:>5} {size:>10} http://{h}/{i} L http://{h}/ text/html #001 - - - -\n"
        )
        if i % 997 == 0:
            lines.append("broken line\n")
    path.write_text("".join(lines))


def test_split_ranges_and_workers_give_identical_results(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log"
    _synthetic(path, 20_000)
    ranges = split_ranges(path, 3)
    assert ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
    for (_, b), (c, _) in itertools.pairwise(ranges):
        assert b == c
    one = aggregate_crawl_log(path, workers=1, chunk_bytes=64 * 1024)
    two = aggregate_crawl_log(path, workers=2, chunk_bytes=64 * 1024)
    assert one.lines == two.lines == 20_000 + 21
    assert one.bad_lines == two.bad_lines == 21
    # line numbers are absolute whatever the split: broken line k follows line 997*k
    assert [b.line for b in one.bad_examples] == [b.line for b in two.bad_examples]
    assert [b.line for b in one.bad_examples][:3] == [2, 2 + 998, 2 + 2 * 998]
    assert one.groups.sort(pl.all()).equals(two.groups.sort(pl.all()))


def test_crawler_written_lines_parse_without_errors(tmp_path: Path) -> None:
    from crawler import crawllog_writer  # the crawler's writer: a missing module fails, never skips

    when = dt.datetime(2026, 11, 22, 10, tzinfo=dt.UTC)
    entries = [
        crawllog_writer.LogEntry(200, "http://www.example.fr/", mime="text/html", size=123,
                          fetch_start=when, duration_ms=5, digest="sha1:AAAA", when=when),
        crawllog_writer.LogEntry(-5003, "http://www.example.fr/x", hops="L",
                          via="http://www.example.fr/", annotations=["Q:hostMaxFetchSuccesses"],
                          when=when),
        crawllog_writer.LogEntry(-9998, "http://www.example.fr/private/", hops="L", when=when),
    ]  # fmt: skip
    path = tmp_path / "crawl.log"
    path.write_text("".join(crawllog_writer.format_line(e) + "\n" for e in entries))
    agg = aggregate_crawl_log(path)
    assert agg.bad_lines == 0
    assert sorted(agg.groups["status"].to_list()) == [-9998, -5003, 200]


def test_slow_path_explains_why_a_line_is_refused() -> None:
    row, why = parse_line_slow("2026-11-22T10:00:00.000Z x 1 u - - m #1 - - - -")
    assert row is None and "status" in why
    row, why = parse_line_slow("2026-11-22T10:00:00.000Z 200 12 http://h.fr/p - - m #1 - - - -")
    assert why == "" and row is not None and row["auth"] == "h.fr" and row["seed"] is True


@pytest.mark.parametrize("engine", ["c", "polars"])
def test_out_of_range_numbers_are_bad_lines_not_a_lost_log(tmp_path: Path, engine: str) -> None:
    # unpadded, so both engines send them to the tolerant path; before the range check the
    # first one made polars raise and the whole log (and day) was lost
    good = ("2026-11-22T09:00:01.000Z   200       4000 http://www.site.fr/ - - text/html #001"
            " 20261122090001000+12 sha1:AAAA http://www.site.fr/ -")  # fmt: skip
    lines = [
        "2026-11-22T09:00:02.000Z 200 99999999999999999999999 http://a.fr/ - - text/html #1 - - - -",
        "2026-11-22T09:00:03.000Z 99999999999 4 http://a.fr/ - - text/html #1 - - - -",
        good,
    ]
    log = tmp_path / "crawl.log"
    log.write_text("\n".join(lines) + "\n")
    agg = aggregate_crawl_log(log, engine=engine, workers=1)
    assert (agg.lines, agg.bad_lines) == (3, 2)
    assert [(b.line, b.reason.split(" ")[0]) for b in agg.bad_examples] == [
        (1, "size"),
        (2, "status"),
    ]
    assert all("out of range" in b.reason for b in agg.bad_examples)
    assert agg.groups.rows() == [("www.site.fr", 200, "text/html", False, True, False, 1, 4000)]
