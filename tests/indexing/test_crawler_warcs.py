"""WARCs from our crawler: lines equal cdxj-indexer's; a second crawl deduplicated against our
dedup index writes revisits whose CDXJ lines let pywb replay the original payload."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvestflow import settings as settings_mod
from harvestflow.samplesite import start
from indexing.cdx import index_warc, sorted_lines
from indexing.dedup import build_dedup_index, sidecar_lines
from indexing.layout import Layout
from tests.crawler.conftest import make_job, run_crawl
from tests.indexing.conftest import reference_lines


def _wait_port(port: int, deadline_s: float = 40) -> None:
    deadline = time.time() + deadline_s
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listening on {port}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
        layout = Layout(cfg.data_dir, 1, ("cdxj",), {})
        for warc in (first.out / "warcs").glob("*.warc.gz"):
            sidecar = layout.dedup_dir(6) / (warc.name + ".dedup")
            sidecar.parent.mkdir(parents=True, exist_ok=True)
            lines = sidecar_lines(index_warc(warc).captures, warc.name)
            sidecar.write_text("".join(line + "\n" for line in lines))
        dedup = build_dedup_index(6, base / "dedup.txt", cfg)
        second = run_crawl(
            make_job(site, seeds, job_id=42, harvest_id=6, dedup_index=str(dedup)),
            base / "second",
        )
    finally:
        site.stop()
    return first, second, dedup


def test_crawler_warcs_index_like_the_reference(two_crawls, oracle: Path):
    first, second, _ = two_crawls
    warcs = sorted((first.out / "warcs").glob("*.warc.gz")) + sorted(
        (second.out / "warcs").glob("*.warc.gz")
    )
    assert len(warcs) >= 4
    for warc in warcs:
        result = index_warc(warc)
        assert result.damage is None and result.scanner == "fast", warc
        for fmt in ("cdxj", "cdx11"):
            assert result.lines(fmt) == reference_lines(oracle, warc, fmt), (warc, fmt)


def test_revisits_from_dedup_index_replay_in_pywb(two_crawls, oracle: Path, tmp_path: Path):
    first, second, dedup = two_crawls
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
