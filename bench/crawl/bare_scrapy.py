"""Bare Scrapy baseline: follow the same links as the archival crawler, archive nothing.

Same Scrapy, same reactor, same concurrency; links from a/img(src, srcset)/link/script and CSS
url(). Prints one JSON line: urls fetched, elapsed seconds, URL list file.
"""

from __future__ import annotations

import json
import re
import sys
import time
from urllib.parse import urljoin

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, TextResponse

CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)")


class Bare(scrapy.Spider):
    name = "bare"

    def __init__(self, seeds: list[str], out: str, **kw):
        super().__init__(**kw)
        self.seeds = seeds
        self.urls: list[str] = []
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
            yield scrapy.Request(urljoin(response.url, link))

    def closed(self, reason):
        with open(self.out, "w") as fh:
            fh.write("\n".join(self.urls) + "\n")


if __name__ == "__main__":
    out, seeds = sys.argv[1], sys.argv[2:]
    process = CrawlerProcess(
        {
            "LOG_LEVEL": "WARNING",
            "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "TELNETCONSOLE_ENABLED": False,
            "REMOTE_CONTROL_ENABLED": False,
            "HTTPERROR_ALLOW_ALL": True,
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        }
    )
    start = time.time()
    process.crawl(Bare, seeds=seeds, out=out)
    process.start()
    print(json.dumps({"elapsed": time.time() - start}))
