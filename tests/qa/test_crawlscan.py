"""The C crawl.log scanner gives exactly the polars reference's figures, and is optional."""

from __future__ import annotations

import logging
import random
from array import array
from pathlib import Path

import polars as pl
import pytest

from qa import crawllog_aggregate, crawlscan
from qa.crawllog_aggregate import LogAggregate, aggregate_crawl_log

from .conftest import DATA

GOLDEN = [DATA / "jobs" / "1" / "logs" / "crawl.log", DATA / "jobs" / "2" / "logs" / "crawl.log"]


def _figures(agg: LogAggregate) -> tuple:
    groups = agg.groups.sort(["auth", "status", "mime", "dup", "seed", "quota"], nulls_last=True)
    bad = [(b.line, b.reason, b.excerpt) for b in agg.bad_examples]
    return agg.lines, agg.bad_lines, bad, agg.first_ts, agg.last_ts, groups.rows()


def test_the_extension_is_built() -> None:
    # without it every test below would compare the polars path with itself
    assert crawlscan.available(), "qa._crawlscan not compiled: run pip install -e ."


@pytest.mark.parametrize("path", GOLDEN, ids=["job1", "job2"])
def test_golden_logs_same_figures_as_polars(path: Path) -> None:
    ref = aggregate_crawl_log(path, engine="polars", workers=1)
    assert ref.groups.height > 0
    assert _figures(aggregate_crawl_log(path, engine="c", workers=1)) == _figures(ref)


def _line(rng: random.Random, n: int) -> str:
    status = rng.choice([200, 200, 200, 301, 404, -1, -9998, -5003, 1])
    size = rng.choice([0, 17, 5123, 999_999_999])
    host = f"www.h{rng.randrange(40)}.{rng.choice(['fr', 'com', 'org'])}"
    uri = rng.choice([f"http://{host}/p/{n}", f"https://{host}:8443/", f"dns:{host}"])
    hop = rng.choice(["-", "L", "LE", "R"])
    mime = rng.choice(["text/html", "image/png", "unknown", "application/pdf"])
    ann = rng.choice(["-", "duplicate:digest", "Q:serverMaxSuccessKb", "dol:1,duplicate:x"])
    return (
        f"2026-11-22T{n % 24:02d}:00:{n % 60:02d}.000Z {status:>5} {size:>10} {uri} {hop} "
        f"http://{host}/ {mime} #00{n % 3} 20261122090001000+12 sha1:AAAA {uri} {ann}"
    )


ODD = [
    b"",  # blank
    b"\r",
    b"2026-11-22T09:00:01.000Z   200",  # short
    b"2026-11-22T09:00:01.000Z   200       4000 http://a.fr/ - - text/html #001",  # few fields
    b"2026-11-22T09:00:01.000Z 200 4000 http://unpadded.fr/ - - text/html #1 2+1 sha1:A - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://caf\xc3\xa9.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://bad\xff\xfe.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://crlf.fr/ - - text/html #001 2+1 s - -\r",
    b"2026-11-22T09:00:01.000Z   200       4000 http://two  spaces.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z  +200       4000 http://plus.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200         -  http://dash.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200          - http://nosize.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200 12345678901 http://huge.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://empty-ann.fr/ - - text/html #001 2+1 s - ",
    b"2026-11-22T09:00:01.000Z   200       4000 http://unit\x1fsep.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z\t200\t4000\thttp://tabs.fr/ - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   2x0       4000 http://alpha.fr/ - - text/html #001 2+1 s - -",
    b"garbage line with no timestamp at all, but long enough to look like one ............",
    b"2026-11-22T09:00:01.000Z   200       4000 http:/oneslash.fr - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 noslash - - text/html #001 2+1 s - extra info",
    b"2026-11-22T09:00:01.000Z   200       4000 http:// - - text/html #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://nul\x00.fr/ - - text/html #001 2+1 s - -",
]


def test_generated_log_with_odd_lines_same_figures_as_polars(tmp_path: Path) -> None:
    rng = random.Random(8)
    lines: list[bytes] = []
    for n in range(6000):
        lines.append(_line(rng, n).encode())
        if n % 150 == 0:
            lines.append(rng.choice(ODD))
        if n % 1000 == 0:  # very long URLs, with and without a path
            long = "x" * rng.choice([5_000, 200_000])
            lines.append(_line(rng, n).replace("http://www", f"http://www.{long}", 1).encode())
            lines.append(_line(rng, n).replace("/p/", f"/{long}/", 1).encode())
    lines.extend(ODD)
    log = tmp_path / "crawl.log"
    log.write_bytes(b"\n".join(lines))  # no final newline: the last line is odd too
    ref = aggregate_crawl_log(log, engine="polars", workers=1, chunk_bytes=256 * 1024)
    assert ref.bad_lines > 0 and len(ref.bad_examples) > 5
    # small chunks and several threads: pieces and ranges cut the file in other places
    got = aggregate_crawl_log(log, engine="c", workers=2, chunk_bytes=300 * 1024)
    assert got.lines == len(lines)
    assert _figures(got) == _figures(ref)
    # the non-UTF-8 host reached the table through the reference path
    assert any("\ufffd" in a for a in got.groups["auth"].to_list() if a)


def test_odd_lines_join_the_scanners_table_by_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # odd lines among many distinct authorities and MIME types: their few groups are added to
    # the scanner's table in C (add), so the whole table reaches polars once, by interned ids
    # (unpacked), never as packed "authority MIME" keys merged in polars; figures unchanged
    rng = random.Random(9)
    lines = [_line(rng, n).encode() for n in range(20_000)]
    lines += [  # both tables grow, absorb re-interns
        _line(rng, n).replace("text/html", f"text/x-{n}").replace("www.h", f"w{n}.h").encode()
        for n in range(9_000)
    ]
    lines[::500] = [rng.choice(ODD) for _ in lines[::500]]
    # an odd line that parses (unpadded) and shares its group with plain lines
    lines += [_line(rng, 1).replace("   200 ", " 200 ").encode()] * 3
    log = tmp_path / "crawl.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    ref = aggregate_crawl_log(log, engine="polars", workers=1)
    assert ref.bad_lines > 0

    def packed(*args: object) -> None:
        raise AssertionError("the scanner's table went through the packed polars merge")

    monkeypatch.setattr(crawllog_aggregate, "unpack", packed)
    for workers in (1, 2):
        got = aggregate_crawl_log(log, engine="c", workers=workers, chunk_bytes=200 * 1024)
        assert got.groups.schema == ref.groups.schema
        assert _figures(got) == _figures(ref)


def test_scan_returns_every_line_it_does_not_aggregate() -> None:
    from qa import _crawlscan

    good = b"2026-11-22T09:00:01.000Z   200       4000 http://a.fr/x - - text/html #1 2+1 s - -"
    dup = b"2026-11-22T09:00:02.000Z  -404          - http://a.fr/ L v text/html #1 2+1 s - duplicate:x"
    data = b"\n".join([good, b"", b"odd", dup, b"caf\xc3\xa9"])
    scanner = _crawlscan.Scanner()
    lines, odd = scanner.feed(data)
    assert lines == 5
    assert odd == [(2, b""), (3, b"odd"), (5, b"caf\xc3\xa9")]
    lines, odd = scanner.feed(good.replace(b"09:00:01", b"08:00:00"))
    assert (lines, odd) == (1, [])
    scanner.add("café.fr".encode(), b"text/html", 200 * 8, 2, 10)  # an odd line's group
    scanner.add(b"a.fr", b"text/html", 200 * 8 + 2, 1, 5)  # joins the scanned group
    strings, auths, mimes, codes, counts, sums, first, last = scanner.columns()
    names = strings.split(b"\n")
    ids = (array("I", a) for a in (auths, mimes))
    nums = (array("q", a) for a in (codes, counts, sums))
    rows = [(names[a], names[m], *rest) for a, m, *rest in zip(*ids, *nums, strict=True)]
    assert sorted(rows) == [
        (b"a.fr", b"text/html", -404 * 8 + 4, 1, 0),
        (b"a.fr", b"text/html", 200 * 8 + 2, 3, 8005),
        ("café.fr".encode(), b"text/html", 200 * 8, 2, 10),
    ]
    assert (first, last) == ("2026-11-22T08:00:00.000Z", "2026-11-22T09:00:02.000Z")
    with pytest.raises(ValueError, match="newline"):
        scanner.add(b"a\nb", b"text/html", 1600, 1, 0)


def test_missing_extension_falls_back_to_polars_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ref = aggregate_crawl_log(GOLDEN[0], engine="polars", workers=1)
    monkeypatch.setattr(crawlscan, "_ext", None)
    monkeypatch.setattr(crawlscan, "_warned_no_c", False)
    called = []
    monkeypatch.setattr(crawlscan, "aggregate_range", lambda *a: called.append(a))
    with caplog.at_level(logging.WARNING, logger="qa.crawlscan"):
        got = aggregate_crawl_log(GOLDEN[0], workers=1)
    assert not called
    assert "not built" in caplog.text
    assert _figures(got) == _figures(ref)
    assert isinstance(got.groups, pl.DataFrame)


SHIFTED = [  # a value with whitespace in it, written by an older crawler or another tool
    # a forged 14-field line (Content-Type "text/html x y"): the server's digest, seed, notes
    b"2026-11-22T09:00:01.000Z   200       4000 http://forged.fr/ - - text/html x y #001 2+1"
    b" sha1:FORGED http://evil.fr/ duplicate:digest",
    b"2026-11-22T09:00:01.000Z   200       4000 http://tab.fr/ - - text/html\tx #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://vt.fr/ - - text/html\x0bx #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://fs.fr/ - - text/html\x1cx #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://ls.fr/ - - text/\xe2\x80\xa8x #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://nbsp.fr/ - - text/\xc2\xa0x #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://ideo.fr/ - - text/\xe3\x80\x80x #001 2+1 s - -",
    b"2026-11-22T09:00:01.000Z   200       4000 http://13.fr/ - - text/html #001 2+1 s - - extra",
    b"2026-11-22T09:00:01.000Z   200       4000 http://2sp.fr/ - - text/html #001 2+1  s - - x",
]
EXTRA_INFO = (  # Heritrix's -extraInfo: a 13th field holding a JSON object, accepted
    b"2026-11-22T09:00:01.000Z   200       4000 http://extra.fr/ - - text/html #001 2+1 s - -"
    b' {"contentSize":4000,"warcFilename":"x.warc.gz"}'
)


@pytest.mark.parametrize("engine", ["c", "polars"])
def test_shifted_and_forged_lines_are_bad_lines(tmp_path: Path, engine: str) -> None:
    rng = random.Random(10)
    lines = [_line(rng, n).encode() for n in range(300)]
    for n, bad in enumerate(SHIFTED):
        lines.insert(20 * n + 5, bad)
    lines.append(EXTRA_INFO)
    log = tmp_path / "crawl.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    got = aggregate_crawl_log(log, engine=engine, workers=1)
    assert got.bad_lines == len(SHIFTED)
    assert [b.line for b in got.bad_examples] == [lines.index(b) + 1 for b in SHIFTED]
    assert "14 fields" in got.bad_examples[0].reason
    auths = set(got.groups["auth"].to_list())
    assert "extra.fr" in auths and not auths & {"forged.fr", "tab.fr", "13.fr", "2sp.fr"}
    assert _figures(got) == _figures(aggregate_crawl_log(log, engine="polars", workers=1))


# every character Python's str.split() takes as whitespace beyond ASCII, and byte sequences that
# are not UTF-8 (overlong, surrogate, above U+10FFFF, cut short, stray continuation, 0xff)
UNICODE_SPACES = "\x85\xa0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_UTF8 = [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
            b"\xf8\x88\x80\x80\x80", b"\xe2\x80", b"\x80", b"\xff", b"\xf0\x8f\xbf\xbf"]  # fmt: skip
TEXT = ["é", "€", "\u200b", "\ufeff", "\U0001d11e", "\u00a9", "\u2030", "\u205e", "\U0010fffd"]


def test_utf8_text_is_scanned_in_c_and_unicode_spaces_or_bad_bytes_are_not(
    tmp_path: Path,
) -> None:
    # valid UTF-8 (IDN hosts, accented paths, MIME parameters) is read by the C scanner as the
    # same bytes polars reads; a Unicode space or a byte that is not UTF-8 goes to the reference
    base = (
        "2026-11-22T09:00:01.000Z   200       4000 http://h{}.fr/p{}/x - - text/html #001"
        " 20261122090001000+12 sha1:AAAA - -"
    )
    good = [base.format(f"{t}{n}", t).encode() for n, t in enumerate(TEXT)]
    good.append(base.format("é", "x").replace("text/html", "text/é").encode())
    spaced = [base.format(n, f"a{s}b").encode() for n, s in enumerate(UNICODE_SPACES)]
    broken = [base.format(n, "q").encode().replace(b"//h", b"//h" + bad) for n, bad in
              enumerate(NOT_UTF8)]  # fmt: skip
    fixed_cols = [  # non-ASCII in the fixed columns: polars counts characters there, not bytes
        base.format(1, "y").replace("000Z", "00é").encode(),
        base.format(2, "y").replace("  4000", "é4000").encode(),
    ]
    from qa import _crawlscan

    _, odd = _crawlscan.Scanner().feed(b"\n".join(good + spaced + broken + fixed_cols))
    assert [n for n, _ in odd] == list(
        range(len(good) + 1, len(good + spaced + broken + fixed_cols) + 1)
    )
    rng = random.Random(5)
    lines = [_line(rng, n).encode() for n in range(3000)]
    for n, extra in enumerate(good + spaced + broken + fixed_cols):
        lines.insert(rng.randrange(len(lines)), extra)
        lines.insert(rng.randrange(len(lines)), good[n % len(good)])
    log = tmp_path / "crawl.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    ref = aggregate_crawl_log(log, engine="polars", workers=1)
    assert ref.bad_lines > 0
    for workers in (1, 2):
        got = aggregate_crawl_log(log, engine="c", workers=workers, chunk_bytes=64 * 1024)
        assert _figures(got) == _figures(ref)
    auths = set(got.groups["auth"].to_list())
    assert {"hé0.fr", "h\U0001d11e4.fr", "h\ufeff3.fr"} <= auths
    assert any("\ufffd" in a for a in auths if a)  # polars' replacement for the bad bytes
