"""bench/run crawl: our crawler on the loopback crawl site against ``wget -r --warc-file`` (and
against bare Scrapy, the floor of our engine), with the crawler's target of ≤ 1.0 ms CPU per
archived URL for one crawler process and for two.

Why these peers: wget is the archiving crawler its users run on one site (one C process, one
connection, ``--warc-file``): it writes WARCs, so both sides' outputs are read the same way.
Bare Scrapy (bare_scrapy.py, tuned as our crawler is, archiving nothing) is the floor of any
crawler built on Scrapy's engine: the share of our CPU that is archiving is the difference.

The site (make_site.py: 4 "hosts" × 1,300 pages, images, srcset, CSS url()) is served by nginx
started by :meth:`prepare` (one port per host; outside both sides' process trees) for the
whole run. Ours runs as its users run it: ``python -m crawler --seed …`` with robots, scope,
frontier, crawl.log, reports and the metadata WARC, politeness off (``--no-politeness
--ignore-robots``), one process or ``--processes 2`` (host partitions). The output check: the
URL set read from each side's WARC response records (bare Scrapy writes no WARC: its fetched
URLs), robots.txt and /sitemap.xml (ours only, 404 here) left out, equal between the sides and
to the site's files. The headline is per CPU-second of each whole process tree; the target on
ours is its median CPU-seconds over the URLs archived.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.crawl.nginx_site import HF_COMMON, free_ports, norm, start_nginx, warc_urls
from bench.runner.spec import Benchmark, Side, Target

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGET = Target("≤ 1.0 ms CPU per archived URL (median, ms)", "cpu_ms_per_unit", 0.0, maximum=1.0)
# the one URL of the fixed-cost benchmark (crawl-1url): the first host's background image, an
# 8 × 8 PNG no crawler extracts a link from
ONE_URL_PATH = "img/bg.png"


class _Site:
    """The nginx-served site, shared by this folder's benchmarks for the whole run."""

    def __init__(self) -> None:
        self.seeds: list[str] = []
        self.expected = 0
        self.key: tuple[int, int] | None = None
        self.nginx: subprocess.Popen[bytes] | None = None

    def up(self, work: Path, hosts: int, pages: int) -> None:
        if self.key == (hosts, pages) and self.nginx and self.nginx.poll() is None:
            return
        self.down()
        root = work.parent / "crawl-site"
        subprocess.run(["rm", "-rf", str(root)], check=True)
        root.mkdir(parents=True)
        ports = free_ports(hosts)
        made = subprocess.run(
            [sys.executable, str(HERE / "make_site.py"), str(root / "site"), "--hosts",
             str(hosts), "--pages", str(pages), "--ports", ",".join(map(str, ports))],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        self.expected = int(made.stdout)
        self.nginx, ports = start_nginx(root, root / "site", ports)
        atexit.register(self.down)
        self.seeds = [f"http://127.0.0.1:{p}/" for p in ports]
        self.key = (hosts, pages)

    def down(self) -> None:
        if self.nginx and self.nginx.poll() is None:
            self.nginx.terminate()
            self.nginx.wait()
        self.nginx = None


SITE = _Site()


class CrawlBenchmark(Benchmark):
    title = "harvestflow crawl on the loopback crawl site"
    output_check = (
        "the URL set read from each side's WARC response records (bare Scrapy: the URLs it"
        " fetched), count and SHA-256, equal between the sides and to the site's files"
    )
    unit = "URLs"
    targets: tuple[Target, ...] = (TARGET,)

    def __init__(
        self,
        name: str,
        processes: int,
        peer: str,
        client: str | None = None,
        one_url: bool = False,
    ) -> None:
        self.name = name
        self.processes = processes
        self.peer = peer
        self.client = client  # ours with --fetch-client CLIENT (None: the template's)
        # each side crawls the one URL ONE_URL_PATH of the first host: its fixed cost
        # (start-up, imports, the engine's start and stop, ours' reports and metadata WARC),
        # to be taken from the same side's CPU in the whole site's crawl. No target: the
        # target is per URL of the site's crawl
        self.one_url = one_url
        if one_url:
            assert peer == "scrapy" and processes == 1, "crawl-1url: one process, bare Scrapy"
            self.targets = ()
        against = {
            "wget": "wget -r --warc-file",
            "scrapy": "bare Scrapy",
            "twisted": "itself with Scrapy's Twisted HTTP client",
        }[peer]
        self.title = (
            f"harvestflow crawl ({processes} process{'es' if processes > 1 else ''})"
            + (f" with the {client} HTTP client" if client else "")
            + (" of one URL (the fixed cost)" if one_url else "")
            + f" on the loopback crawl site vs {against}"
        )
        self.hosts = self.pages = 0

    def prepare(self, work: Path, quick: bool) -> dict[str, Any]:
        self.hosts, self.pages = (2, 200) if quick else (4, 1300)
        SITE.up(work, self.hosts, self.pages)
        if self.one_url:
            return {
                "url": self.seeds()[0],
                "source": "bench/crawl/make_site.py's first host's background image (8 × 8"
                " PNG, no links), nginx on loopback: one URL crawled, the fixed cost of a crawl",
            }
        return {
            "hosts": self.hosts,
            "pages_per_host": self.pages,
            "site_urls": SITE.expected,
            "source": "bench/crawl/make_site.py: pages of ~1.6 KB text, 2 images (one with"
            " srcset), a stylesheet with a url() background, links in a binary tree plus"
            " neighbours and one to the next host; nginx, one loopback port per host",
        }

    def seeds(self) -> list[str]:
        """The seeds both sides crawl (after :meth:`prepare`)."""
        return [SITE.seeds[0] + ONE_URL_PATH] if self.one_url else SITE.seeds

    def _shown_seeds(self) -> str:
        return "<1 URL>" if self.one_url else "<4 hosts>"

    def _crawler_side(self, name: str, client: str | None) -> Side:
        cmd = [sys.executable, "-m", "crawler", "--out", "{out}/job", *HF_COMMON]
        option = ["--fetch-client", client] if client else []
        cmd += option
        if self.processes > 1:
            cmd += ["--processes", str(self.processes)]
        for seed in self.seeds():
            cmd += ["--seed", seed]
        return Side(
            name,
            cmd,
            self.processes,
            "the crawler's defaults for an ad hoc crawl with --no-politeness --ignore-robots"
            " --allow-private --render none --max-hops 100: WARC request/response records,"
            " crawl.log, SQLite frontier, scope and budget checks, reports and the metadata"
            " WARC at the end, all in the timing"
            + (f"; {self.processes} host-partitioned processes" if self.processes > 1 else "")
            + (f"; HTTP client: {client} (crawler/asyncio_fetch.py)" if client == "asyncio" else "")
            + (f"; HTTP client: {client} (Scrapy's)" if client == "twisted" else ""),
            shown=f"python -m crawler --seed {self._shown_seeds()} --no-politeness --ignore-robots"
            + (f" --fetch-client {client}" if client else "")
            + (f" --processes {self.processes}" if self.processes > 1 else "")
            + " --out <out>",
        )

    def sides(self) -> tuple[Side, Side]:
        ours = self._crawler_side("ours", self.client)
        if self.peer == "twisted":
            return ours, self._crawler_side("twisted", "twisted")
        if self.peer == "wget":
            peer = Side(
                "wget",
                ["wget", "-r", "-l", "inf", "-p", "-nv", "-e", "robots=off", "--warc-file",
                 "{out}/crawl", "-P", "{out}/files", *SITE.seeds],
                1,
                "wget's defaults (one connection, one process), recursion without a depth"
                " limit, page requisites, robots off; the files it mirrors are written too",
                shown="wget -r -l inf -p -e robots=off --warc-file <out>/crawl <4 hosts>",
            )  # fmt: skip
        else:
            peer = Side(
                "bare_scrapy",
                [sys.executable, str(HERE / "bare_scrapy.py"), "{out}/bare.json", *self.seeds()],
                1,
                "Scrapy with the crawler's own tuning (bare_scrapy.py, checked setting by"
                " setting by tests/bench/test_bench_crawl.py), the same links followed,"
                " nothing archived",
                shown=f"python bench/crawl/bare_scrapy.py <out> {self._shown_seeds()}",
            )
        return ours, peer

    def figures(self, side: Side, out: Path) -> Any:
        if side.name == "bare_scrapy":
            result = json.loads((out / "bare.json").read_text())
            if result["reason"] != "finished" or result["errors"]:
                return {"bare_scrapy": f"{result['reason']}, {result['errors']} errors"}
            urls = norm(set(result["urls"]))
        else:
            warcs = sorted((out / "job" / "warcs").glob("*.warc.gz"))
            warcs = warcs or sorted(out.glob("*.warc.gz"))
            urls = norm(set().union(*(warc_urls(w) for w in warcs)))
        text = "\n".join(sorted(urls)).encode()
        return {"urls": len(urls), "sha256": hashlib.sha256(text).hexdigest()}

    def problems(self, figures: Any) -> list[str]:
        if self.one_url:
            if figures.get("urls") != 1:
                return [f"{figures.get('urls')} URLs archived, the crawl was of 1"]
            return []
        if figures.get("urls") != SITE.expected:
            return [f"{figures.get('urls')} URLs archived, the site has {SITE.expected}"]
        return []

    def units(self, figures: Any) -> int | None:
        return int(figures["urls"])


BENCHMARKS = [
    CrawlBenchmark("crawl-1proc", 1, "wget"),
    CrawlBenchmark("crawl-2procs", 2, "wget"),
    CrawlBenchmark("crawl-scrapy", 1, "scrapy"),
    # the HTTP client alone: ours with the asyncio client against ours with Twisted's
    CrawlBenchmark("crawl-asyncio", 1, "twisted", client="asyncio"),
    # the fixed cost of a crawl, ours and bare Scrapy's: (crawl-scrapy's CPU − this one's) over
    # the site's URLs is each side's own cost per URL, start-up and end left out
    CrawlBenchmark("crawl-1url", 1, "scrapy", one_url=True),
]
