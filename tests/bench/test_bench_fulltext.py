"""The extraction benchmark runs on WARCs our crawler wrote, and stops on what would void it.

Why: its ratio (chain / extraction library over warcio) is only the production figure if the
WARCs are the crawler's (every record it writes, robots.txt obeyed) of a site with what real
sites have (French and English, PDFs, repeated payloads, 404s, images), if both sides count the
same documents, and if a failed crawl, a WARC warcio's checker refuses or a child that crashed
ends the run with exit 1 instead of printing a figure. Tiny sizes: nothing here is timed.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "fulltext" / "bench_extract.py"


def _bench(
    workdir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), "--workdir", str(workdir), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def test_the_corpus_is_our_crawl_of_the_generated_site(tmp_path: Path) -> None:
    got = _bench(tmp_path, "--mb", "2", "--rounds", "2")
    assert got.returncode == 0, got.stdout + got.stderr
    counts = re.findall(r"round (\d) (peer|chain): (\d+) documents", got.stdout)
    assert len(counts) == 4 and len({n for _, _, n in counts}) == 1, got.stdout
    assert "median ratio over 2 rounds" in got.stdout
    # the side that runs first alternates between rounds
    assert [side for _, side, _ in counts] == ["peer", "chain", "chain", "peer"]

    files = [Path(p) for p in json.loads((tmp_path / "crawl-corpus.json").read_text())["files"]]
    assert sum(p.stat().st_size for p in files) >= 2_000_000
    kinds: Counter[str] = Counter()
    for path in files:
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "warcinfo":
                    assert b"software: harvestflow-crawler" in rec.content_stream().read()
                kinds[rec.rec_type] += 1
                if rec.rec_type == "response":
                    ctype = rec.http_headers.get_header("Content-Type") or ""
                    body = rec.content_stream().read()
                    kinds[ctype.split(";")[0]] += 1
                    kinds["fr"] += b"<html lang='fr'>" in body
                    kinds["en"] += b"<html lang='en'>" in body
                    kinds["404"] += rec.http_headers.get_statuscode() == "404"
    assert kinds["request"] and kinds["metadata"] and kinds["warcinfo"], kinds
    assert kinds["application/pdf"] and kinds["image/png"] and kinds["404"], kinds
    assert kinds["fr"] > 100 and kinds["en"] > 100, kinds
    crawl_log = (tmp_path / "crawl-1" / "logs" / "crawl.log").read_text()
    assert "/private/" in crawl_log and "robotExcluded" in crawl_log  # robots.txt obeyed
    assert "/copy/" in crawl_log

    again = _bench(tmp_path, "--mb", "2", "--rounds", "1")
    assert again.returncode == 0 and "reusing the crawl" in again.stdout, again.stdout


def test_a_crawl_that_fails_stops_the_benchmark(tmp_path: Path) -> None:
    got = _bench(tmp_path, "--mb", "1", env={"HARVESTFLOW_CONFIG": str(tmp_path / "missing.toml")})
    assert got.returncode == 1
    assert "benchmark FAILED: the crawl exited 2" in got.stderr, got.stderr
    assert "round 1" not in got.stdout


def test_a_warc_that_fails_warcio_check_stops_the_benchmark(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO))
    from bench.fulltext.corpus import BenchFailed, check_warcs

    path = tmp_path / "bad.warc"
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=False)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "http://example.test/", "response", payload=io.BytesIO(b"hello"), http_headers=http
            )
        )
    check_warcs([path])  # as written: passes
    path.write_bytes(path.read_bytes().replace(b"hello", b"jello"))  # payload digest now wrong
    with pytest.raises(BenchFailed, match="warcio check exited 1"):
        check_warcs([path])


def test_a_child_that_exits_non_zero_stops_the_benchmark(tmp_path: Path) -> None:
    broken = tmp_path / "broken.warc.gz"
    broken.write_bytes(b"not a WARC at all\n")
    (tmp_path / "done-v3-1.json").write_text(json.dumps([str(broken)]))
    got = _bench(tmp_path, "--warcio", "--mb", "1", "--rounds", "1")
    assert got.returncode == 1
    assert "benchmark FAILED: the peer child exited 1" in got.stderr, got.stderr
    assert "ratio" not in got.stdout
