"""The continuous crawl captures a page's embeds on other hosts (a CDN): images, stylesheets (and
their images) and scripts are transclusions, fetched with the page as the selective crawler
fetches them, indexed into the live collection and replayed by pywb (test oracle); when the page
is visited again before the embeds are due themselves, the unchanged embeds are revisit records.

Two loopback servers: the page on ``news.test``, its embeds on ``cdn.test``; the real crawler
runs through ``run_batch`` (the continuous crawl's code path), the URL state is in PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import sqlalchemy as sa
from warcio.archiveiterator import ArchiveIterator

from harvest.continuous.launcher import launch_hour
from harvest.continuous.run import run_batch
from harvest.continuous.store import load_states
from indexing.nrt import LiveWatcher
from tests.support.continuous_site import FAST, H0, POLICY, add_record, start_pywb
from tests.support.rawsite import Raw, serve
from tests.support.replay import get

CSS = b"body { background: url(bg.png) }"
EMBEDS = {
    "/logo.png": Raw(b"\x89PNG logo", [b"Content-Type: image/png"]),
    "/site.css": Raw(CSS, [b"Content-Type: text/css"]),
    "/bg.png": Raw(b"\x89PNG background", [b"Content-Type: image/png"]),
    "/app.js": Raw(b"console.log('app');", [b"Content-Type: application/javascript"]),
}


def _records(run_dir: str) -> dict[str, str]:
    """WARC-Target-URI → record type of the run's responses and revisits."""
    found = {}
    for path in sorted((Path(run_dir) / "crawl" / "warcs").glob("*.warc.gz")):
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("response", "revisit"):
                    found[rec.rec_headers.get_header("WARC-Target-URI")] = rec.rec_type
    return found


def test_embeds_on_a_cdn_host_are_captured_and_replayed(db_engine: sa.Engine, tmp_path: Path):
    live = tmp_path / "live"
    with serve({(None, p): r for p, r in EMBEDS.items()}) as cdn:
        page_html = (
            "<html><head>"
            f'<link rel="stylesheet" href="{cdn.url("cdn.test", "/site.css")}">'
            f'<script src="{cdn.url("cdn.test", "/app.js")}"></script></head>'
            f'<body><h1>news</h1><img src="{cdn.url("cdn.test", "/logo.png")}">'
            '<a href="/other">a link, only noted</a></body></html>'
        ).encode()
        pages = {(None, "/"): Raw(page_html, [b"Content-Type: text/html"])}
        with serve(pages) as news:
            seed = news.url("news.test", "/")
            embeds = [cdn.url("cdn.test", p) for p in EMBEDS]
            add_record(db_engine, seed)
            assert launch_hour(db_engine, H0, POLICY).injected == [seed]
            resolve = {"news.test": "127.0.0.1", "cdn.test": "127.0.0.1"}
            first = run_batch(
                db_engine, tmp_path, now=H0, policy=POLICY, template=FAST, resolve=resolve,
                live_dir=live, live_index=LiveWatcher,
            )  # fmt: skip
            # an hour later the page is due again, its embeds (images: 2 h) are not
            again = H0 + dt.timedelta(hours=1, minutes=1)
            second = run_batch(
                db_engine, tmp_path, now=again, policy=POLICY, template=FAST, resolve=resolve,
                live_dir=live, live_index=LiveWatcher,
            )  # fmt: skip
            cdn_paths = [path for _, path in cdn.requests]

    # fetched from the CDN with the page, in both runs (the stylesheet's image too)
    assert sorted(p for p in cdn_paths if p != "/robots.txt") == sorted(list(EMBEDS) * 2)
    assert first.visited == 1 + len(EMBEDS)
    captured = _records(first.out_dir)
    assert all(captured.get(u) == "response" for u in [seed, *embeds]), captured
    # the embeds have a URL state of their own (revisited on their own schedule too)
    states = load_states(db_engine, embeds)
    assert set(states) == set(embeds) and all(s.digest for s in states.values())
    # visited again with the page before they were due: unchanged, so revisit records
    assert all(_records(second.out_dir).get(u) == "revisit" for u in embeds)

    # the live index has them, and pywb replays the page's embeds from it
    indexed = "".join(p.read_text() for p in (live / "index").glob("*.cdxj"))
    assert all(f'"url": "{u}"' in indexed for u in embeds)
    pywb = start_pywb(live)
    assert pywb is not None
    try:
        base = f"http://127.0.0.1:{pywb.port}/live"  # type: ignore[attr-defined]
        deadline = time.time() + 60
        while get(f"{base}/2030id_/{seed}")[0] != 200 and time.time() < deadline:
            time.sleep(0.5)
        status, body = get(f"{base}/2030mp_/{seed}")
        assert status == 200 and b"<h1>news</h1>" in body
        for url, path in zip(embeds, EMBEDS, strict=True):
            status, body = get(f"{base}/2030id_/{url}")
            assert (status, body) == (200, EMBEDS[path].body), url
    finally:
        pywb.terminate()
        pywb.wait(timeout=10)
