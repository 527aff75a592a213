"""The crawl benchmark's peer is tuned as our crawler, and a coverage difference fails the run.

Why: the benchmark's archiving overhead (1 − rate(harvestflow) / rate(bare Scrapy)) only
measures archiving if bare Scrapy runs with the crawler's Scrapy tuning; these tests compare the
peer's settings with ``crawler.runner.scrapy_settings`` for the benchmark's own command line, so
a change to either shows up here instead of silently skewing the figure.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType

from scrapy.settings import Settings, default_settings
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler import command_line as cli
from crawler import jobspec, runner

BENCH = Path(__file__).resolve().parents[2] / "bench" / "crawl"

# every setting that changes how Scrapy schedules, downloads or processes a response
TUNING_KEYS = [
    "TWISTED_REACTOR",
    "ASYNCIO_EVENT_LOOP",
    "CONCURRENT_ITEMS",
    "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "CONCURRENT_REQUESTS_PER_IP",
    "DOWNLOAD_DELAY",
    "RANDOMIZE_DOWNLOAD_DELAY",
    "DOWNLOAD_TIMEOUT",
    "DOWNLOAD_MAXSIZE",
    "DOWNLOAD_WARNSIZE",
    "DNS_TIMEOUT",
    "RETRY_ENABLED",
    "RETRY_TIMES",
    "RETRY_HTTP_CODES",
    "REDIRECT_ENABLED",
    "METAREFRESH_ENABLED",
    "HTTPERROR_ALLOW_ALL",
    "COOKIES_ENABLED",
    "HTTPCACHE_ENABLED",
    "HTTPPROXY_ENABLED",
    "TELNETCONSOLE_ENABLED",
    "REMOTE_CONTROL_ENABLED",
    "DUPEFILTER_CLASS",
    "SCHEDULER_MEMORY_QUEUE",
    "SCHEDULER_PRIORITY_QUEUE",
    "DEPTH_PRIORITY",
    "LOG_LEVEL",
]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_crawl_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _ours(tmp_path: Path, nginx_site: ModuleType) -> Settings:
    """crawler.runner's Scrapy settings for the benchmark's command line."""
    parser = cli.argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(
        ["--out", str(tmp_path), *nginx_site.HF_COMMON, "--seed", "http://127.0.0.1:1/"]
    )
    job = tmp_path / "job.json"
    job.write_text(json.dumps(cli.adhoc_spec(args)))
    return Settings(runner.scrapy_settings(jobspec.load(job)))


REPLACED = {
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": (
        "crawler.inflate.BoundedDecompressionMiddleware"
    ),
}


def _disabled_builtins(s: Settings, key: str) -> set[str]:
    """Scrapy's built-ins set to None, or left out of the setting's base."""
    off = {k for k, v in s.getdict(key).items() if v is None and k.startswith("scrapy.")}
    default_base = getattr(default_settings, f"{key}_BASE")
    return off | (set(default_base) - set(s.getdict(f"{key}_BASE") or default_base))


def test_bare_scrapy_peer_has_the_crawlers_tuning(tmp_path: Path) -> None:
    bare, nginx_site = _load("bare_scrapy"), _load("nginx_site")
    ours, peer = _ours(tmp_path, nginx_site), Settings(bare.SETTINGS)
    differing = {k: (peer.get(k), ours.get(k)) for k in TUNING_KEYS if peer.get(k) != ours.get(k)}
    assert differing == {}, "bare Scrapy peer vs crawler (peer, ours)"
    # built-ins the crawler replaces by a bounded equivalent in the same slot: the peer keeps
    # Scrapy's own (bare Scrapy must still decode gzip to find links), so both do the same work
    for builtin, replacement in REPLACED.items():
        mws = ours.getdict("DOWNLOADER_MIDDLEWARES")
        assert mws[builtin] is None and mws[replacement] == 590, replacement
    for key in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS"):
        assert _disabled_builtins(peer, key) == _disabled_builtins(ours, key) - set(REPLACED), key
    # the scheduling middleware that goes with CONCURRENT_ITEMS = 1, at the same place
    name = "crawler.spider.ScheduleOutputMiddleware"
    assert peer.getdict("SPIDER_MIDDLEWARES")[name] == ours.getdict("SPIDER_MIDDLEWARES")[name]
    handlers = ours.getdict("DOWNLOAD_HANDLERS")
    disabled = {k for k, v in handlers.items() if v is None}
    assert {k for k, v in peer.getdict("DOWNLOAD_HANDLERS").items() if v is None} == disabled
    assert bare.GC_YOUNG_THRESHOLD == runner.GC_YOUNG_THRESHOLD


def test_coverage_problems_names_every_difference() -> None:
    nginx_site = _load("nginx_site")
    same = {"a", "b", "c"}
    assert nginx_site.coverage_problems({"wget": same, "bare": set(same)}, "wget", 3) == []
    problems = nginx_site.coverage_problems(
        {"wget": same, "bare": {"a", "b"}, "x1": {"a", "b", "c", "d"}}, "wget", 3
    )
    assert len(problems) == 2
    assert problems[0].startswith("bare: 2 URLs common with wget, 0 only here [], 1 only in wget")
    assert "1 only here ['d']" in problems[1]
    # the reference itself short of the site's URLs (every peer missing the same pages)
    short = nginx_site.coverage_problems({"wget": same, "bare": set(same)}, "wget", 4)
    assert short == ["wget fetched 3 URLs, the site has 4"]


def _warc(path: Path, urls: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url in urls:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    url, "response", payload=io.BytesIO(b"<html></html>"), http_headers=http
                )
            )


def test_the_crawl_check_compares_the_url_sets_read_from_the_warcs(tmp_path: Path) -> None:
    from bench.crawl import spec

    bench = spec.CrawlBenchmark("crawl-test", 1, "wget")
    ours, wget = bench.sides()
    site = ["http://127.0.0.1:1/", "http://127.0.0.1:1/p1.html", "http://127.0.0.1:1/img/i0.png"]
    # ours: the front page as index.html's URL, robots.txt and sitemap.xml fetched besides
    _warc(tmp_path / "ours/job/warcs/a.warc.gz", [*site[1:], "http://127.0.0.1:1/robots.txt"])
    _warc(tmp_path / "ours/job/warcs/b.warc.gz", [site[0], "http://127.0.0.1:1/sitemap.xml"])
    _warc(tmp_path / "wget/crawl.warc.gz", ["http://127.0.0.1:1/index.html", *site[1:]])
    got = bench.figures(ours, tmp_path / "ours")
    assert got == bench.figures(wget, tmp_path / "wget") and got["urls"] == 3
    spec.SITE.expected = 3
    assert bench.problems(got) == []
    spec.SITE.expected = 4
    assert bench.problems(got) == ["3 URLs archived, the site has 4"]
    # a URL in crawl.log but not in the WARCs is not archived: the sides differ
    (tmp_path / "ours/job/warcs/b.warc.gz").unlink()
    (tmp_path / "ours/job/logs").mkdir()
    (tmp_path / "ours/job/logs/crawl.log").write_text(f"t 200 13 {site[0]} - - text/html\n")
    assert bench.figures(ours, tmp_path / "ours") != bench.figures(wget, tmp_path / "wget")


def test_the_client_benchmark_differs_from_its_peer_only_by_the_http_client() -> None:
    """crawl-asyncio measures the HTTP client alone: the same crawler command on both sides
    but for ``--fetch-client``."""
    from bench.crawl import spec

    (bench,) = [b for b in spec.BENCHMARKS if b.name == "crawl-asyncio"]
    ours, peer = bench.sides()
    assert (ours.name, peer.name) == ("ours", "twisted")

    def without_client(argv: list[str]) -> list[str]:
        i = argv.index("--fetch-client")
        return argv[:i] + argv[i + 2 :]

    assert ours.command[ours.command.index("--fetch-client") + 1] == "asyncio"
    assert peer.command[peer.command.index("--fetch-client") + 1] == "twisted"
    assert without_client(ours.command) == without_client(peer.command)


def test_the_fixed_cost_benchmark_is_crawl_scrapy_on_one_url() -> None:
    """crawl-1url's CPU is subtracted from crawl-scrapy's (the site's crawl) to give each side's
    own cost per URL: its commands must be crawl-scrapy's but for the seeds, one URL."""
    from bench.crawl import spec

    benches = {b.name: b for b in spec.BENCHMARKS}
    one, site = benches["crawl-1url"], benches["crawl-scrapy"]
    spec.SITE.seeds = ["http://127.0.0.1:1/", "http://127.0.0.1:2/"]
    url = "http://127.0.0.1:1/" + spec.ONE_URL_PATH
    for a, b in zip(one.sides(), site.sides(), strict=True):
        assert a.name == b.name
        seeds_a = [x for x in a.command if x.startswith("http://")]
        assert seeds_a == [url]
        assert [x for x in a.command if x not in [*seeds_a, "--seed"]] == [
            x for x in b.command if x not in [*spec.SITE.seeds, "--seed"]
        ]
    assert one.targets == () and site.targets == (spec.TARGET,)
    assert one.problems({"urls": 1}) == []
    assert one.problems({"urls": 2}) == ["2 URLs archived, the crawl was of 1"]


def test_the_cpu_split_counts_each_sample_to_the_code_that_asked_for_it() -> None:
    split = _load("cpu_split")
    reactor = "run_spec (crawler/runner.py:368);CrawlerProcess.start (scrapy/crawler.py:897)"
    lines = [
        # WARC building below the capture middleware: the records' component, not the mw's
        f"{reactor};process_response (crawler/capture_middleware.py:200);"
        "_record (crawler/warc/records.py:40);ensure_digest (warcio/recordbuilder.py:158) 7",
        # Twisted's client under our handler, which only passes it on
        f"{reactor};ArchivalHTTPDownloadHandler.download_request (crawler/capture_middleware.py:62);"
        "lineReceived (twisted/protocols/basic.py:521) 5",
        f"{reactor};_runCallbacks (twisted/internet/defer.py:997) 3",
        "main (crawler/__main__.py:15);_find_and_load (<frozen importlib._bootstrap>:1) 2",
        "run_job (crawler/runner.py:386);finish (crawler/runner.py:270);write (x.py:1) 1",
        f"{reactor};_run_once (asyncio/base_events.py:1);EpollSelector.select (selectors.py:1) 9",
    ]
    counts, idle = split.split(lines)
    assert idle == 9
    assert counts == {
        "WARC records built (warcio builder, digests, ids)": 7,
        "HTTP client": 5,
        "Twisted Deferreds": 3,
        "fixed: start-up and imports": 2,
        "fixed: end (reports, metadata WARC)": 1,
    }
