"""WARC files: rotation with .open names, and repair of a file a crash cut mid-record."""

from __future__ import annotations

import datetime as dt
import random
import subprocess

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders

from crawler.warc import records
from crawler.warc.files import RotatingWarcWriter, repair_open_file
from tests.support.crawl import REPO


def response(i: int, size: int = 2000):
    http = records.response_http_headers(200, "HTTP/1.1", [("Content-Type", "text/plain")])
    body = random.Random(i).randbytes(size)  # incompressible: sizes on disk are predictable
    date = records.warc_date(dt.datetime.now(dt.UTC))
    return records.response_record(
        f"http://h/{i}", http, body, date, records.new_record_id(), "192.0.2.1", None
    )


def count(path):
    with path.open("rb") as fh:
        return sum(1 for _ in ArchiveIterator(fh))


def test_rotation_names_open_files_and_continues_serials(tmp_path):
    w = RotatingWarcWriter(
        tmp_path, "9-4", max_size=3000, warcinfo={"software": "t"}, hostname="crawlhost"
    )
    w.write(response(0))
    assert [p.name.endswith(".warc.gz.open") for p in tmp_path.iterdir()] == [True]
    for i in range(1, 8):
        w.write(response(i, 4000))
    w.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert all(n.endswith("-crawlhost.warc.gz") for n in names) and len(names) >= 3
    assert [int(n.split("-")[3]) for n in names] == list(range(len(names)))
    again = RotatingWarcWriter(tmp_path, "9-4", 3000, {"software": "t"}, hostname="crawlhost")
    assert again.serial == len(names)
    proc = subprocess.run(
        [str(REPO / ".venv/bin/warcio"), "check", *[str(tmp_path / n) for n in names]],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout


def test_repair_cuts_a_torn_last_record_and_keeps_the_rest(tmp_path):
    w = RotatingWarcWriter(tmp_path, "1-1", max_size=10**9, warcinfo={"software": "t"})
    for i in range(5):
        w.write(response(i))
    path = w._path
    assert path is not None
    w._fh.flush()
    good_size = path.stat().st_size
    w.write(response(5, 50_000))
    # simulate kill -9 in the middle of the last record
    w._fh.flush()
    with path.open("r+b") as fh:
        fh.truncate(good_size + 700)
    final, kept = repair_open_file(path)
    assert kept == 6  # warcinfo + 5 responses
    assert final.name.endswith(".warc.gz") and not path.exists()
    assert final.stat().st_size == good_size
    assert count(final) == 6
    assert subprocess.run([str(REPO / ".venv/bin/warcio"), "check", str(final)]).returncode == 0


def test_request_line_keeps_the_query_string():
    http = StatusAndHeaders("GET /a?b=1&c=%20 HTTP/1.1", [("Host", "h")], is_http_request=True)
    assert http.to_str().startswith("GET /a?b=1&c=%20 HTTP/1.1\r\n")
    assert records.request_line_target("http://h/a?b=1&c=%20#x") == "/a?b=1&c=%20"


def test_on_close_hook_gets_each_final_path_after_the_rename(tmp_path):
    seen: list[tuple[str, bool, bool]] = []

    def hook(path):
        # called after the rename: the final name exists, the .open one no longer does
        seen.append((path.name, path.exists(), path.with_name(path.name + ".open").exists()))
        raise RuntimeError("a failing hook must not break the writer")

    w = RotatingWarcWriter(tmp_path, "5-5", 3000, {"software": "t"}, on_close=hook)
    for i in range(4):
        w.write(response(i, 4000))  # every write fills a file: it closes at once
    w.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [s[0] for s in seen] == names == w.closed_files
    assert all(exists and not still_open for _, exists, still_open in seen)
