"""The extraction benchmark runs on WARCs our crawler wrote, compares the texts, and stops on
what would void it.

Why: its ratio (chain / the extraction libraries over warcio with digest dedup, ``bench/run
fulltext``) is only the production figure if the WARCs are the crawler's (every record it
writes, robots.txt obeyed) of a site with what real sites have (French and English, PDFs,
repeated payloads, 404s, images), if both sides extract the same texts (compared by hash, not
counted), and if a failed crawl or a WARC warcio's checker refuses ends the run instead of
giving a figure. Tiny sizes: nothing here is timed.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bench.fulltext.corpus import BenchFailed, check_warcs, crawl_corpus
from bench.fulltext.spec import FulltextBenchmark
from bench.runner.core import run_benchmark

REPO = Path(__file__).resolve().parents[2]


def test_the_corpus_is_our_crawl_of_the_generated_site(tmp_path: Path) -> None:
    files = crawl_corpus(tmp_path, 2)
    assert [
        Path(p) for p in json.loads((tmp_path / "crawl-corpus.json").read_text())["files"]
    ] == files
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

    assert crawl_corpus(tmp_path, 2) == files  # cached: the same files, not crawled again


def test_a_crawl_that_fails_stops_the_benchmark(tmp_path: Path) -> None:
    code = f"from pathlib import Path; from bench.fulltext.corpus import crawl_corpus; crawl_corpus(Path({str(tmp_path)!r}), 1)"
    env = {
        **os.environ,
        "HARVESTFLOW_CONFIG": str(tmp_path / "missing.toml"),
        "PYTHONPATH": str(REPO),
    }
    got = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )
    assert got.returncode == 1
    assert "benchmark FAILED: the crawl exited 2" in got.stderr, got.stderr
    assert not (tmp_path / "crawl-corpus.json").exists()


def test_a_warc_that_fails_warcio_check_stops_the_benchmark(tmp_path: Path) -> None:
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


def _page(title: str, words: str) -> bytes:
    article = " ".join([words] * 12)
    return (
        f"<html lang='en'><head><title>{title}</title></head><body><nav><a href='/'>Home</a>"
        f"</nav><article><h1>{title}</h1><p>{article}</p></article><footer>(c)</footer>"
        "</body></html>"
    ).encode()


def _warc(path: Path, pages: list[tuple[str, str, bytes]]) -> Path:
    """A WARC of 200 responses (url, Content-Type, payload), as a crawl writes them."""
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, ctype, body in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=http
            )
            writer.write_record(record)
    return path


PAGES = [
    ("http://a.test/1", "text/html; charset=utf-8", _page("One", "archives keep the web")),
    ("http://a.test/2", "text/html", _page("Two", "les archives gardent le web")),
    ("http://a.test/copy", "text/html; charset=utf-8", _page("One", "archives keep the web")),
    ("http://a.test/robots.txt", "text/plain", b"User-agent: *\nDisallow: /private/\n"),
    (
        "http://a.test/only-nav",
        "text/html",
        b"<html><body><nav>Home News Sport</nav></body></html>",
    ),
]


class _Files(FulltextBenchmark):
    """The spec's sides and check on given WARCs (ours on ``files``, the peer on ``peer``)."""

    def __init__(self, files: list[Path], peer: list[Path]) -> None:
        super().__init__()
        self.files, self.peer_files = files, peer

    def prepare(self, work: Path, quick: bool) -> dict:
        return {}

    def sides(self):  # type: ignore[no-untyped-def]
        ours, peer = super().sides()
        argv = [*peer.command[:3], *map(str, self.peer_files)]
        return ours, type(peer)(peer.name, argv, peer.parallelism, peer.tuning)


def test_the_peer_with_digest_dedup_extracts_the_chains_texts(tmp_path: Path) -> None:
    warc = _warc(tmp_path / "a.warc.gz", PAGES)
    bench = _Files([warc], [warc])
    figures = {}
    for side in bench.sides():
        out = tmp_path / side.name
        out.mkdir()
        subprocess.run(side.argv(out), check=True, cwd=REPO, timeout=120)
        figures[side.name] = bench.figures(side, out)
    # 4 documents: the copy's payload extracted once by both, the nav-only page's whole text
    assert figures["chain"] == figures["peer"] == {**figures["chain"], "documents": 4}


def test_a_side_whose_texts_differ_fails_the_run(tmp_path: Path) -> None:
    ours = _warc(tmp_path / "ours.warc.gz", PAGES)
    changed = [(u, t, b.replace(b"le web", b"la toile")) for u, t, b in PAGES]
    peer = _warc(tmp_path / "peer.warc.gz", changed)  # the same number of documents
    code, path = run_benchmark(
        _Files([ours], [peer]), 3, results_dir=tmp_path / "res", work_root=tmp_path
    )
    result = json.loads(path.read_text())
    assert code == 1 and not result["output_check"]["passed"]
    assert "outputs differ" in result["output_check"]["failures"][0]
    assert "ratios" not in result and len(result["per_round"]) == 1
