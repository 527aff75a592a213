"""A hostile server cannot shift or forge a crawl.log or report column.

The server (tests/crawler/hostile.py) puts tab, CR, NUL, many spaces, 10 kB values, an obsolete
folded line and Unicode whitespace (U+00A0, U+2028, U+3000 as UTF-8 bytes) into
``Content-Type`` and ``Location``, and links to URLs with the same characters. Every crawl.log
line must still have exactly Heritrix's 12 fields for the strictest reader (Python's
``str.split`` and ``splitlines``, which also split on those characters), every report row its
columns, and the daily QA (C and polars paths) must find no bad line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from qa.crawllog_aggregate import aggregate_crawl_log
from tests.support.crawl import FAST_TEMPLATE, run_crawl
from tests.support.hostile import HOST, HostileServer, hostile_server, response

UNICODE_WS = "\u00a0\u2028\u3000".encode()
CONTENT_TYPES = {
    "/ct/tab": b"text/html\tforged sha1:FORGED http://evil.test/ duplicate:digest",
    "/ct/cr": b"text/html\rforged 200 1 http://evil.test/",
    "/ct/nul": b"text/html\x00nul",
    "/ct/spaces": b"text/html" + b" " * 40 + b"a b c d e f g h i j k l m n",
    "/ct/long": b"text/" + b"a" * 10_000,
    "/ct/unicode": b"text/html" + UNICODE_WS + b"x y",
    "/ct/fold": b"text/html\r\n\tfolded onto a second line",
    "/ct/vt": b"text/html\x0b\x0c\x1c\x1d\x1e\x1fx",
}
LOCATIONS = {
    "/loc/spaces": b"/target with   many spaces\tand a tab",
    "/loc/cr": b"/target\rforged 200 1",
    "/loc/long": b"/" + b"L" * 10_000,
    "/loc/unicode": b"/t" + UNICODE_WS + b" u",
}
ODD_LINKS = [  # out of scope (-5000) or too long (-7): logged with the URL as found in the page
    "http://elsewhere.test/a\u2028b c",
    "http://elsewhere.test/\u00a0nbsp\u3000ideographic",
    "http://elsewhere.test/\u0085nel\x0bvt",
    "http://elsewhere.test/" + "x" * 10_000,
    "/in scope with spaces\u2028and separators",
]


@pytest.fixture()
def server() -> Iterator[HostileServer]:
    with hostile_server() as srv:
        links = [*CONTENT_TYPES, *ODD_LINKS]
        page = "".join(f'<a href="{href}">x</a>' for href in links)
        srv.routes["/"] = response(f"<html><body>{page}</body></html>".encode())
        for path, ctype in CONTENT_TYPES.items():
            srv.routes[path] = response(b"<html><body>hostile</body></html>", content_type=ctype)
        for path, location in LOCATIONS.items():
            srv.routes[path] = response(b"", status=b"302 Found", headers=[(b"Location", location)])
        yield srv


def _rows(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    rows = text.splitlines()  # CR, VT, FF, 0x1c-0x1e, NEL, U+2028/9 end a line here
    assert len(rows) == text.count("\n"), f"{path.name}: a value broke a line"
    return rows


def test_no_server_value_shifts_a_crawl_log_or_report_column(
    server: HostileServer, tmp_path: Path
) -> None:
    seeds = [server.url("/"), *(server.url(p) for p in LOCATIONS)]
    job = {
        "job_id": 23,
        "harvest_id": 2,
        "seeds": seeds,
        "template": {**FAST_TEMPLATE, "max_hops": 1},
        "resolve": {HOST: "127.0.0.1"},
    }
    result = run_crawl(job, tmp_path / "job", timeout=90)
    log_path = result.out / "logs" / "crawl.log"
    rows = _rows(log_path)
    for row in rows:
        assert len(row.split()) == 12, row[:300]
    fields = {row.split()[3]: row.split() for row in rows}
    for path in CONTENT_TYPES:
        line = fields[server.url(path)]
        assert line[1] == "200" and line[6].startswith("text/"), line
        assert len(line[6]) <= 200 and line[9] != "sha1:FORGED"
        assert line[11] == "-", line  # the forged duplicate:digest is not an annotation
    assert fields[server.url("/ct/tab")][6].startswith("text/html%09forged")
    # the out-of-scope (-5000) and too long (-7) links with separators, one line each
    elsewhere = [f for url, f in fields.items() if url.startswith("http://elsewhere.test/")]
    assert sorted(f[1] for f in elsewhere) == ["-5000", "-5000", "-5000", "-7"]

    reports = result.out / "reports"
    columns = {
        "mimetype-report.txt": {3},
        "responsecode-report.txt": {2},
        "hosts-report.txt": {11},
        "source-report.txt": {3},
        "seeds-report.txt": {3, 4},
        "frontier-report.txt": {12},
    }
    for name, counts in columns.items():
        for row in _rows(reports / name)[1:]:
            assert len(row.split()) in counts, (name, row[:300])
    seeds_rows = {r.split()[2]: r.split() for r in _rows(reports / "seeds-report.txt")[1:]}
    for path in LOCATIONS:
        assert len(seeds_rows[server.url(path)]) == 4, path  # the redirect is one column
    mime_rows = _rows(reports / "mimetype-report.txt")[1:]
    assert len(mime_rows) >= len(CONTENT_TYPES)

    assert len(_outlinks(result.out)) >= len(CONTENT_TYPES) + len(ODD_LINKS)

    for engine in ("c", "polars"):
        agg = aggregate_crawl_log(log_path, engine=engine, workers=1)
        assert agg.bad_lines == 0, (engine, agg.bad_examples)
        assert agg.lines == len(rows)


def _outlinks(out: Path) -> list[str]:
    """The outlink values of the job's metadata records, checking on the way that each
    application/warc-fields body is one "name: value" a line and an outlink "URL hop context"."""
    outlinks = []
    for warc in sorted((out / "warcs").glob("*.warc.gz")):
        with warc.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if (
                    record.rec_type != "metadata"
                    or record.content_type != "application/warc-fields"
                ):
                    continue
                body = record.content_stream().read().decode("utf-8")
                lines = body.split("\r\n")
                assert lines[-1] == "" and len(body.splitlines()) == len(lines) - 1, body[:300]
                for line in lines[:-1]:
                    name, _, value = line.partition(": ")
                    assert name in {"via", "hopsFromSeed", "sourceTag", "fetchTimeMs", "outlink"}
                    if name == "outlink":
                        assert len(value.split()) == 3, value[:300]
                        outlinks.append(value)
    return outlinks


def test_a_rendered_pages_outlinks_cannot_add_a_warc_fields_line(
    server: HostileServer, tmp_path: Path
) -> None:
    """The rendered path writes the page's metadata record too (crawler.rendering.finish): its
    outlinks, the page's own text, are cleaned like the plain path's."""
    template = {**FAST_TEMPLATE, "max_hops": 0, "render": "html", "render_min_wait_s": 0.5}
    job = {
        "job_id": 24,
        "harvest_id": 2,
        "seeds": [server.url("/")],
        "template": {**template, "render_page_timeout_s": 20},
        "resolve": {HOST: "127.0.0.1"},
    }
    result = run_crawl(job, tmp_path / "job", timeout=120)
    assert len(_outlinks(result.out)) >= len(CONTENT_TYPES) + len(ODD_LINKS)
