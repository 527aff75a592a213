"""WARCs from our crawler: lines equal cdxj-indexer's; a second crawl deduplicated against our
dedup index writes revisits whose CDXJ lines let pywb replay the original payload."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from datetime import date
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from app.demo.samplesite import start
from harvestflow import settings as settings_mod
from indexing.cdx import SUFFIX, index_warc, sorted_lines, write_lines_atomic
from indexing.dedup_index import sidecar_lines, write_index
from indexing.layout import Layout
from tests.support.cdx_oracle import reference_lines_by_format
from tests.support.crawl import make_job, run_crawl
from tests.support.environment import free_port as _free_port


def _wait_port(port: int, deadline_s: float = 40) -> None:
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listening on {port}")


def _payloads(crawl, url: str) -> list[bytes]:  # type: ignore[no-untyped-def]
    """The original response payloads of ``url`` (as sent and content-decoded)."""
    found = []
    for warc in crawl.out.glob("warcs/*.warc.gz"):
        with open(warc, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response" and rec.rec_headers.get("WARC-Target-URI") == url:
                    found.append(rec.content_stream().read())
    return found


@pytest.fixture(scope="module")
def two_crawls(tmp_path_factory: pytest.TempPathFactory):
    """Crawl the sample site twice; the second run uses our dedup index of the first."""
    base = tmp_path_factory.mktemp("crawls")
    site = start()
    try:
        seeds = [site.url("www.example-a.test", "/")]
        first = run_crawl(make_job(site, seeds, job_id=41, harvest_id=6), base / "first")
        data_dir = base / "data"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HARVESTFLOW_DATA_DIR", str(data_dir))
            cfg = settings_mod.load()
            assert cfg.data_dir == data_dir.resolve()
        layout = Layout.from_settings(cfg)

        def index_crawl(crawl) -> None:  # type: ignore[no-untyped-def]
            """What the chain's index module writes: per-file CDX files and dedup sidecars."""
            for warc in (crawl.out / "warcs").glob("*.warc.gz"):
                result = index_warc(warc)
                for fmt in layout.formats:
                    cdx = layout.cdx_daily(date(2026, 11, 28)) / (warc.name + SUFFIX[fmt])
                    write_lines_atomic(sorted_lines(result.lines(fmt)), cdx)
                sidecar = layout.dedup_dir(6) / (warc.name + ".dedup")
                sidecar.parent.mkdir(parents=True, exist_ok=True)
                lines = sidecar_lines(result.captures, warc.name)
                sidecar.write_text("".join(line + "\n" for line in lines))

        domains = ["example-a.test"]
        index_crawl(first)
        dedup = base / "dedup.txt"
        assert write_index(dedup, domains, cfg) > 0
        second = run_crawl(
            make_job(site, seeds, job_id=42, harvest_id=6, dedup_index=str(dedup)),
            base / "second",
        )
        # a third run: its index, from both runs' CDX, holds the second run's revisits'
        # originals (the first run's captures), not the revisits
        index_crawl(second)
        dedup_second = base / "dedup-second.txt"
        assert write_index(dedup_second, domains, cfg) > 0
        third = run_crawl(
            make_job(site, seeds, job_id=43, harvest_id=6, dedup_index=str(dedup_second)),
            base / "third",
        )
    finally:
        site.stop()
    return first, second, dedup, third


def test_crawler_warcs_index_like_the_reference(two_crawls, oracle: Path):
    first, second, _, _ = two_crawls
    warcs = sorted((first.out / "warcs").glob("*.warc.gz")) + sorted(
        (second.out / "warcs").glob("*.warc.gz")
    )
    assert len(warcs) >= 4
    results = [index_warc(warc) for warc in warcs]
    for warc, result in zip(warcs, results, strict=True):
        assert result.damage is None and result.scanner == "fast", warc
    # cdxj-indexer's lines of each WARC in turn, both formats from one oracle process
    reference = reference_lines_by_format(oracle, warcs, ("cdxj", "cdx11"))
    for fmt in ("cdxj", "cdx11"):
        ours = [line for result in results for line in result.lines(fmt)]
        assert ours == reference[fmt], fmt


def test_revisits_from_dedup_index_replay_in_pywb(two_crawls, oracle: Path, tmp_path: Path):
    first, second, dedup, _ = two_crawls
    assert dedup.read_text().strip()
    revisits = [
        c
        for w in second.out.glob("warcs/*.warc.gz")
        for c in index_warc(w).captures
        if c.rec_type == "revisit"
    ]
    assert revisits, "the second crawl wrote no revisit records"
    target = revisits[0]
    coll = tmp_path / "pywb"
    (coll / "archive").mkdir(parents=True)
    lines: list[str] = []
    for crawl in (first, second):
        for warc in crawl.out.glob("warcs/*.warc.gz"):
            (coll / "archive" / warc.name).symlink_to(warc)
            lines += index_warc(warc).lines("cdxj")
    (coll / "index.cdxj").write_text("".join(line + "\n" for line in sorted_lines(lines)))
    (coll / "config.yaml").write_text(
        f"collections:\n  hf:\n    index: {coll / 'index.cdxj'}\n"
        f"    archive_paths: {coll / 'archive'}/\n"
    )
    port = _free_port()
    proc = subprocess.Popen(
        [str(oracle / "bin" / "wayback"), "-p", str(port), "-b", "127.0.0.1"],
        cwd=coll,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_port(port)
        ts = target.date.replace("-", "").replace(":", "").replace("T", "")[:14]
        url = f"http://127.0.0.1:{port}/hf/{ts}id_/{target.url}"
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = resp.read()
            assert resp.status == 200
        original = [
            c
            for w in first.out.glob("warcs/*.warc.gz")
            for c in index_warc(w).captures
            if c.rec_type == "response" and c.url == target.url
        ]
        assert original and original[0].digest == target.digest
        assert body in _payloads(first, target.url), "revisit replayed another body"
    finally:
        proc.terminate()
        proc.wait(10)


def _main_records(crawl) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """URL -> (record type, payload digest) of each response or revisit the crawl wrote."""
    found = {}
    for warc in crawl.out.glob("warcs/*.warc.gz"):
        for c in index_warc(warc).captures:
            if c.rec_type in ("response", "revisit") and c.url and c.digest:
                found[c.url] = (c.rec_type, c.digest)
    return found


def test_unchanged_pages_stay_deduplicated_run_after_run(two_crawls):
    # the second run holds revisits for unchanged pages: the third run's index must name their
    # originals (first run), or the third run stores them again
    _, second, _, third = two_crawls
    in_second, in_third = _main_records(second), _main_records(third)
    revisited = {u: d for u, (t, d) in in_second.items() if t == "revisit"}
    assert revisited, "the second crawl wrote no revisit records"
    same = [u for u, d in revisited.items() if u in in_third and in_third[u][1] == d]
    assert same, "no page of the second run's revisits came back unchanged"
    stored_again = [u for u in same if in_third[u][0] != "revisit"]
    assert stored_again == []
