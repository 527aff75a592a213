"""bench/run render: ``harvestflow crawl --render html`` against Chromium recording through
pywb's proxy, at 1, 2 and 4 tabs (one benchmark, and one results file, per tab count).

Why this peer: pywb's recording proxy with a browser is how a curator without a crawler
records script-built pages. The peer gets our parallelism: N tabs are N chromedriver loops
(bench/render/peer.py), each its own Chromium, as ours runs N tab workers, each its own
Chromium; the loops load, wait for network idle, dwell and scroll as our renderer does, with
the same page timeout, but run no behaviours (no click). CPU is that of each side's whole
process tree (the runner's subreaper: the Chromiums we SIGKILL are counted).

The site (bench/render/jssite.py) is served from this process (in a thread, measured on
neither side), every text type gzip-compressed; each page's content is built by script, one
part of it only after "Load more" is clicked. Output check (equal on both sides): every page of
the site captured (a 200 response record), each rendered (ours: crawl.log's ``rendered``
annotation; the peer: its loops exit 0 only when every page loaded). Observed, not compared:
the share of the site's URLs each side's WARCs hold (the peer misses what the click loads).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from bench.render.jssite import Site
from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
HOST = "localhost"  # resolved by the system for the peer; mapped with resolve for ours
PAGE_TIMEOUT_S = 20.0
MIN_WAIT_S = 0.5
MAX_SCROLLS = 40
_SITES: dict[int, Site] = {}  # one site per size for every tab count of the run


def site(pages: int) -> Site:
    if pages not in _SITES:
        _SITES[pages] = Site(pages)
    return _SITES[pages]


def response_urls(warcs: list[Path]) -> list[str]:
    """Target URIs of the 200 response records, every capture (duplicates kept)."""
    out = []
    for path in warcs:
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                headers = rec.http_headers
                if rec.rec_type == "response" and headers and headers.get_statuscode() == "200":
                    out.append(rec.rec_headers.get_header("WARC-Target-URI"))
    return out


class RenderBenchmark(Benchmark):
    title = "rendered capture: harvestflow crawl --render html vs Chromium through pywb's proxy"
    output_check = (
        "every page of the site captured (200 response record) and rendered, on both sides"
    )
    unit = "pages"
    targets = (Target("CPU-seconds per page ≤ 1.0 × the peer's", "cpu", 1.0),)

    def __init__(self, tabs: int) -> None:
        self.tabs = tabs
        self.name = f"render-{tabs}tab" + ("s" if tabs > 1 else "")
        self.seeds: list[str] = []
        self.expected: set[str] = set()
        self.job = Path()

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        pages = 8 if quick else 24
        s = site(pages)
        base = f"http://{HOST}:{s.port}"
        self.seeds = [f"{base}/p/{n}.html" for n in range(pages)]
        self.expected = {base + path for path in s.routes}
        self.job = work / "job.json"
        template = {
            "name": "bench_render",
            "scope": "host",
            "obey_robots": False,
            "delay_factor": 0.0,
            "min_delay_ms": 0,
            "max_delay_ms": 0,
            "connections_per_host": 8,
            "render": "html",
            "render_tabs": self.tabs,
            "render_page_timeout_s": PAGE_TIMEOUT_S,
            "render_min_wait_s": MIN_WAIT_S,
            "render_max_scrolls": MAX_SCROLLS,
        }
        job = {"job_id": 1, "harvest_id": 0, "seeds": self.seeds, "template": template}
        job["resolve"] = {HOST: "127.0.0.1"}
        self.job.write_text(json.dumps(job))
        return {
            "pages": pages,
            "site_urls": len(self.expected),
            "tabs": self.tabs,
            "source": "bench/render/jssite.py: script-built pages (JSON API, thumbnails, a"
            " scroll-loaded list, a lazy image, a 'Load more' button), text types gzip-compressed",
            "page_timeout_s": PAGE_TIMEOUT_S,
            "min_wait_s": MIN_WAIT_S,
            "max_scrolls": MAX_SCROLLS,
        }

    def sides(self) -> tuple[Side, Side]:
        ours = Side(
            "ours",
            [
                str(REPO / ".venv" / "bin" / "harvestflow"),
                *("crawl", "--job", str(self.job), "--out", "{out}/job", "--render", "html"),
                *("--progress-interval", "30"),
            ],
            self.tabs,
            f"render_tabs {self.tabs} (each tab its own Chromium and recording proxy); every"
            " page fetched first, then rendered with the template's default behaviours (consent,"
            " expanders, scroll, 'load more', media); screenshots, crawl.log, CDX; robots and"
            " politeness off",
            shown=f"harvestflow crawl --job <job> --out <out> --render html ({self.tabs} tabs)",
        )
        peer = Side(
            "peer",
            [
                *(sys.executable, str(REPO / "bench" / "render" / "peer_side.py"), "{out}"),
                *("--tabs", str(self.tabs), "--timeout", str(PAGE_TIMEOUT_S)),
                *("--min-wait", str(MIN_WAIT_S), "--max-scrolls", str(MAX_SCROLLS)),
                *self.seeds,
            ],
            self.tabs,
            f"wayback --record (pywb, .oracle-venv, enable_content_rewrite false) and {self.tabs}"
            " chromedriver loop(s) (bench/render/peer.py), each its own Chromium with the"
            " crawler's flags, the pages dealt out in turn: load, network idle, dwell, scroll"
            " until the page stops growing; no click",
            shown=f"wayback --record & {self.tabs} × python bench/render/peer.py <pages>",
        )
        return ours, peer

    def _warcs(self, side: Side, out: Path) -> list[Path]:
        if side.name == "peer":
            return sorted((out / "collections" / "peer" / "archive").glob("*.warc*"))
        return sorted(
            p for p in (out / "job" / "warcs").glob("*.warc.gz") if "metadata" not in p.name
        )

    def figures(self, side: Side, out: Path) -> Any:
        pages = set(self.seeds)
        captured = sorted(pages & set(response_urls(self._warcs(side, out))))
        if side.name == "peer":  # its loops exit non-zero when a page fails to load
            rendered = len(pages)
        else:
            rendered = 0
            for line in (out / "job" / "logs" / "crawl.log").read_text().splitlines():
                fields = line.split()
                notes = fields[11].split(",") if len(fields) > 11 else []
                rendered += "rendered" in notes and fields[3] in pages
        return {"pages captured": captured, "pages rendered": rendered}

    def problems(self, figures: Any) -> list[str]:
        want = len(self.seeds)
        got = (len(figures["pages captured"]), figures["pages rendered"])
        return [] if got == (want, want) else [f"{got} pages captured, rendered of {want}"]

    def units(self, figures: Any) -> int | None:
        return len(figures["pages captured"])

    def observe(self, side: Side, out: Path) -> dict[str, float]:
        urls = response_urls(self._warcs(side, out))
        have = self.expected & set(urls)
        return {
            "site URLs captured": len(have),
            "of": len(self.expected),
            "captured %": round(100 * len(have) / len(self.expected), 1),
            "response records": len(urls),
        }


BENCHMARKS = (RenderBenchmark(1), RenderBenchmark(2), RenderBenchmark(4))
