"""Bare Scrapy peer: follow the same links as the archival crawler, archive nothing.

Why this tuning: the benchmark's overhead figure (1 − rate(harvestflow) / rate(bare Scrapy)) is
meant to measure what archiving costs, so the peer runs Scrapy tuned exactly as
``crawler.runner.scrapy_settings`` tunes it for the benchmark's job (``--no-politeness
--ignore-robots``): same reactor, ``CONCURRENT_ITEMS`` 1 with the same scheduling middleware, the
same concurrency (16 requests, 8 per slot), the same built-in middlewares and extensions
disabled, no dupefilter (a seen-set before Requests are built, as ours does), redirects off, the
same retry, timeout and size settings, and the same cyclic-GC tuning around the reactor.
What it does not have is everything that archives: WARC capture, crawl.log, frontier database,
robots/politeness/scope/budget logic, reports, metadata WARC. ``tests/bench/test_bench_crawl.py``
compares these settings with the crawler's, so the two cannot drift apart unnoticed.

Links come from a/img(src, srcset)/link/script and CSS url(). Writes a JSON file: finish
reason, error count, URLs fetched.
"""

from __future__ import annotations

import gc

# the crawler's start-up and exit tuning of the cyclic collector (crawler.command_line: off
# while the process imports and sets up; crawler.__main__: what the process built frozen before
# it exits, so the interpreter's collections at exit do not walk it): the same here, so that
# each side's fixed cost (crawl-1url) is its crawl's, not a collector setting's. As a script
# only: the tests import this module for its settings
if __name__ == "__main__":
    gc.disable()

import json
import re
import sys
import time
from typing import Any
from urllib.parse import urldefrag, urljoin

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, TextResponse
from scrapy.settings import default_settings

CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)")
# crawler.runner.GC_YOUNG_THRESHOLD (the test checks they are equal)
GC_YOUNG_THRESHOLD = 20_000

# Scrapy components crawler.runner.scrapy_settings disables; the same here
DISABLED_DOWNLOADER_MW = [
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware",
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware",
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware",
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware",
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware",
    "scrapy.downloadermiddlewares.stats.DownloaderStats",
]
DISABLED_SPIDER_MW = [
    "scrapy.spidermiddlewares.depth.DepthMiddleware",
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware",
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware",
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware",
]
DISABLED_EXTENSIONS = [
    "scrapy.extensions.telnet.TelnetConsole",
    "scrapy.extensions.remote_control.RemoteControl",
    "scrapy.extensions.logstats.LogStats",
]

SETTINGS: dict[str, Any] = {
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    "ROBOTSTXT_OBEY": False,
    # the crawler's template with --no-politeness: 16 requests, 8 per download slot (the 4 ports
    # of the benchmark's site share one slot, keyed by host name, in both crawlers)
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "CONCURRENT_ITEMS": 1,
    "DOWNLOAD_DELAY": 0,
    "DOWNLOAD_DELAY_JITTER": 0,
    "DOWNLOAD_TIMEOUT": 30.0,
    "DOWNLOAD_MAXSIZE": 1_000_000_000,
    "DOWNLOAD_WARNSIZE": 0,
    "DNS_TIMEOUT": 20,
    "RETRY_ENABLED": True,
    "RETRY_TIMES": 2,
    "RETRY_HTTP_CODES": [],
    "REDIRECT_ENABLED": False,
    "METAREFRESH_ENABLED": False,
    "HTTPERROR_ALLOW_ALL": True,
    "COOKIES_ENABLED": True,
    "HTTPCACHE_ENABLED": False,
    "HTTPPROXY_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    # the crawler's per-host queue (generic Scrapy code: Scrapy's own looks at every waiting
    # host on each pop; the benchmark's 4 ports are one host, so the cost is the same)
    "SCHEDULER_PRIORITY_QUEUE": "crawler.slot_queue.RoundRobinSlotQueue",
    "LOG_LEVEL": "INFO",
    "DOWNLOADER_MIDDLEWARES": dict.fromkeys(DISABLED_DOWNLOADER_MW),
    "SPIDER_MIDDLEWARES": {
        **dict.fromkeys(DISABLED_SPIDER_MW),
        # schedules a callback's Requests itself, leaving the one item worker nothing to do
        # (the crawler's own component, generic Scrapy code: it archives nothing)
        "crawler.spider.ScheduleOutputMiddleware": 1,
    },
    # left out of Scrapy's own base, as the crawler does (a key set to None is still imported)
    "EXTENSIONS_BASE": {
        k: v for k, v in default_settings.EXTENSIONS_BASE.items() if k not in DISABLED_EXTENSIONS
    },
    "DOWNLOAD_HANDLERS": {"ftp": None, "s3": None, "file": None, "data": None},
}


class Bare(scrapy.Spider):
    name = "bare"

    def __init__(self, seeds: list[str], out: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.seeds = seeds
        self.urls: list[str] = []
        self.seen: set[str] = set(seeds)
        self.out = out

    async def start(self):
        for s in self.seeds:
            yield scrapy.Request(s)

    def parse(self, response):
        self.urls.append(response.url)
        links: list[str] = []
        if isinstance(response, HtmlResponse):
            for el in response.selector.root.iter("a", "img", "link", "script"):
                for attr in ("href", "src"):
                    v = el.get(attr)
                    if v:
                        links.append(v)
                srcset = el.get("srcset")
                if srcset:
                    links += [c.strip().split()[0] for c in srcset.split(",") if c.strip()]
        elif (
            isinstance(response, TextResponse)
            and "css" in response.headers.get(b"Content-Type", b"").decode()
        ):
            links += CSS_URL.findall(response.text)
        for link in links:
            url = urldefrag(urljoin(response.url, link))[0]
            # de-duplicated before a Request is built, as the archival crawler's seen-set does
            if url not in self.seen:
                self.seen.add(url)
                yield scrapy.Request(url)

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        errors = stats.get_value("log_count/ERROR", 0) if stats else 0
        with open(self.out, "w") as fh:
            json.dump({"reason": reason, "errors": errors, "urls": self.urls}, fh)


def main(out: str, seeds: list[str]) -> int:
    process = CrawlerProcess(SETTINGS)
    process.crawl(Bare, seeds=seeds, out=out)
    start = time.time()
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
    gc.enable()
    try:
        process.start()
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    print(json.dumps({"elapsed": time.time() - start}))
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1], sys.argv[2:])
    gc.freeze()  # as crawler.__main__ before its exit
    sys.exit(status)
