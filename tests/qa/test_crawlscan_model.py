"""The QA fast paths (the C scanner and the polars path) give the same records as the one
crawl.log parser (harvestflow.formats.crawllog.CrawlLogLine, through qa.crawlline).

The corpus: Heritrix's own lines (tests/formats/data/heritrix-crawl.log: Heritrix 3 with and
without extra-info JSON, the negative codes -61 and -9998), generated lines in Heritrix's
layout with the other negative codes, and hostile lines: extra fields, a forged line, spaces and
tabs between fields, white space inside a value, an extra-info object with a space, non-UTF-8
bytes, numbers that do not read. The reference table is built line by line from the parser
alone; both engines must give it exactly, with the same bad lines and reasons.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from qa import crawlscan
from qa.crawlline import parse_line_slow
from qa.crawllog_aggregate import aggregate_crawl_log
from qa.crawltable import GROUP_KEYS, pack, unpack

SAMPLES = Path(__file__).resolve().parents[1] / "formats" / "data" / "heritrix-crawl.log"
ROW_SCHEMA = {
    "ts": pl.String,
    "status": pl.Int32,
    "size": pl.Int64,
    "auth": pl.String,
    "mime": pl.String,
    "dup": pl.Boolean,
    "seed": pl.Boolean,
    "quota": pl.Boolean,
}
HOSTILE = [
    # Heritrix 1.x before the source-tag column: 11 fields
    b"2005-05-06T11:47:34.753Z -9998          - https://rex.qb.dk/F L http://www.qb.dk/ no-type"
    b" #030 - - 3t",
    # a forged line (a Content-Type with spaces written unescaped): 14 fields
    b"2026-11-22T09:00:01.000Z   200       4000 http://forged.fr/ - - text/html x y #001 2+1"
    b" sha1:FORGED http://evil.fr/ duplicate:digest",
    b"2026-11-22T09:00:01.000Z    -6          - dns:extra.fr P http://extra.fr/ unknown #003 -"
    b" - - - extra",
    b"2026-11-22T09:00:01.000Z   200       4000 http://json-space.fr/ - - text/html #001 2+1 s - -"
    b' {"contentSize": 4000}',
    b"2026-11-22T09:00:01.000Z   200       4000 http://json.fr/ - - text/html #001 2+1 s - -"
    b' {"contentSize":4000,"warcFilename":"x.warc.gz"}',
    b"2026-11-22T09:00:01.000Z   -61          - http://robots.fr/ XR http://a.fr/ no-type #035 - -"
    b" - 2t {}",
    b"2026-11-22T09:00:01.000Z\t-9998\t-\thttp://tabs.fr/ L http://a.fr/ unknown #021 - - - 2t",
    b"2026-11-22T09:00:01.000Z 200 4000 http://unpadded.fr/ - - text/html #1 2+1 sha1:A - -",
    b"2026-11-22T09:00:01.000Z   200       4000  http://two-spaces.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://ls.fr/ - - text/\xe2\x80\xa8x #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://nbsp.fr/ - - text/\xc2\xa0x #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://bad\xff.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200 12345678901 http://huge.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z  2x0       4000 http://alpha.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200        12k http://kilo.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z 99999999999 4000 http://big-status.fr/ - - text/html #1 2+1 s - -",
    b"22/11/2026 09:00:01   200       4000 http://date.fr/ - - text/html #001 2+1 s - -",
    b"garbage line with no timestamp at all, but long enough to look like one ............",
]


def _generated(rng: random.Random, n: int) -> bytes:
    status = rng.choice([200, 301, 404, 1, -1, -2, -4, -6, -61, -404, -4001, -5000, -5003, -9998])
    size = "-" if status < 0 else str(rng.choice([0, 17, 5123]))
    host = f"www.h{rng.randrange(20)}.{rng.choice(['fr', 'co.uk'])}"
    uri = rng.choice([f"http://{host}/p/{n}", f"https://{host}:8443/", f"dns:{host}"])
    hop = rng.choice(["-", "L", "LE", "XP"])
    mime = rng.choice(["text/html", "image/png", "unknown", "no-type", "text/dns"])
    notes = rng.choice(["-", "duplicate:digest", "Q:serverMaxSuccessKb", "ip:1.2.3.4,2t"])
    extra = rng.choice(["", "", ' {"warcFileOffset":12}'])
    return (
        f"2026-11-22T{n % 24:02d}:00:{n % 60:02d}.000Z {status:>5} {size:>10} {uri} {hop} "
        f"http://{host}/ {mime} #{n % 100:03d} 20261122090001000+12 sha1:AAAA {uri} {notes}"
        f"{extra}"
    ).encode()


def _corpus(tmp_path: Path) -> tuple[Path, list[bytes]]:
    rng = random.Random(17)
    lines = [s.encode() for s in SAMPLES.read_text(encoding="utf-8").splitlines()]
    for n in range(3000):
        lines.append(_generated(rng, n))
        if n % 150 == 0:
            lines.append(HOSTILE[(n // 150) % len(HOSTILE)])
    lines += HOSTILE
    path = tmp_path / "crawl.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, lines


def _reference(lines: list[bytes]) -> tuple:
    """The figures built from the one parser, line by line."""
    rows, bad = [], []
    for lineno, raw in enumerate(lines, 1):
        text = raw.decode("utf-8", "replace")
        row, why = parse_line_slow(text)
        if row is None:
            bad.append((lineno, why, text[:120]))
        else:
            rows.append(row)
    table = unpack(pack(pl.DataFrame(rows, schema=ROW_SCHEMA)))
    stamps = [str(r["ts"]) for r in rows]
    groups = table.sort(GROUP_KEYS, nulls_last=True).rows()
    return len(lines), len(bad), bad[:20], min(stamps), max(stamps), groups


def _figures(agg) -> tuple:  # type: ignore[no-untyped-def]
    groups = agg.groups.sort(GROUP_KEYS, nulls_last=True).rows()
    bad = [(b.line, b.reason, b.excerpt) for b in agg.bad_examples]
    return agg.lines, agg.bad_lines, bad, agg.first_ts, agg.last_ts, groups


def test_the_c_scanner_is_built() -> None:
    assert crawlscan.available(), "qa._crawlscan not compiled: run pip install -e ."


@pytest.mark.parametrize("engine", ["c", "polars"])
def test_fast_paths_give_the_one_parsers_records(tmp_path: Path, engine: str) -> None:
    path, lines = _corpus(tmp_path)
    want = _reference(lines)
    assert want[1] > len(HOSTILE)  # the hostile lines are there, and named
    got = aggregate_crawl_log(path, engine=engine, workers=1)
    assert _figures(got) == want
    auths = set(got.groups["auth"].to_list())
    assert {"json.fr", "robots.fr", "tabs.fr", "www.hu17.net"} <= auths
    assert not auths & {"forged.fr", "extra.fr", "json-space.fr", "alpha.fr", "kilo.fr"}
    statuses = set(got.groups["status"].to_list())
    assert {-6, -61, -9998, -5003} <= statuses
