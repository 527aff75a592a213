"""The fetch path of a rendering tab's requests: each URL captured once per job, through Scrapy.

Why through the crawl: a browser's request becomes a discovered link of its page (hop ``E``,
the scope's transclusion rule decides) fetched by Scrapy ahead of the frontier, so robots,
politeness, budgets, the capture middleware and crawl.log all apply; a URL the job has seen
already is read back from the job's WARC (:mod:`crawler.rendering.archive`), a refused one
gets a 403.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from crawler import state as st
from crawler.inflate import inflater_of
from crawler.rendering.archive import JobCaptures
from crawler.rendering.model import RenderSettings
from crawler.rendering.passthrough import Passthrough
from crawler.rendering.proxy import HOP_BY_HOP, RANGE_HEADERS, ProxyRequest, ProxyResponse
from crawler.rendering.tab import RenderPage
from crawler.state import BROWSER_PRIORITY
from harvestflow.formats.urls import canonical_key, host_of, without_fragment

if TYPE_CHECKING:
    import scrapy

    from crawler.context import CrawlContext

log = logging.getLogger(__name__)

# (a byte range: the crawl fetches the whole resource, the tab gets its range: ``ranged``)
_DROP_FROM_BROWSER = (
    HOP_BY_HOP | RANGE_HEADERS | {"host", "accept-encoding", "user-agent", "content-length"}
)
REFETCHED = "harvestflow/render/refetched"  # captured, record unreadable: re-fetched


class TabRequests:
    """The tabs' requests of one job: in flight, captured through the crawl, or read back."""

    def __init__(
        self, ctx: CrawlContext, crawler: Any, t: RenderSettings, captures: JobCaptures
    ) -> None:
        self.ctx = ctx
        self.crawler = crawler
        self.t = t
        self.captures = captures
        self.passthrough = Passthrough(
            t.resolve,
            t.download_timeout_s,
            t.max_response_bytes,
            t.user_agent,
            _DROP_FROM_BROWSER,
            inflater_of(crawler),
        )
        self.inflight: dict[str, asyncio.Future[ProxyResponse]] = {}  # key → browser fetch

    async def fetch_for(self, page: RenderPage, req: ProxyRequest) -> ProxyResponse:
        """A request of a rendering page: captured once per job, through Scrapy."""
        try:
            url = without_fragment(req.url)
            key = canonical_key(url)
        except ValueError:
            return ProxyResponse(400, reason="Bad URL")
        if req.method == "GET":
            if key == page.key:
                return page.response
            if key in page.served:
                return page.served[key]
            if key in self.inflight:  # another request (of any tab) is fetching it now
                return await asyncio.shield(self.inflight[key])
        ctx = self.ctx
        if key in ctx.state.seen:
            row = ctx.state.db.execute(
                "SELECT status, hops, via, seed, context FROM urls WHERE key=?", (key,)
            ).fetchone()
            status = None if row is None else int(row[0])
            live = (st.FrontierState.DONE, st.FrontierState.QUEUED)
            if req.method != "GET" and status in live and row is not None:
                # a form post or an API call to a URL the crawl has fetched, queued or is
                # fetching (an earlier POST of the page: a GraphQL endpoint's calls run at once):
                # a capture of its own (request and response records), never the GET's answer;
                # a queued GET is not claimed by it
                request = ctx.requests.make(url, key, row[1], row[2], row[3], row[4])
                if request is None:
                    return ProxyResponse(400, reason="Bad URL")
                return await self._through_crawl(page, req, request, key)
            claimable = key not in ctx.browser_claimed and key not in ctx.fetch_started
            if status == st.FrontierState.QUEUED and claimable:
                # found earlier, not fetched yet: the browser's fetch is its capture, under its
                # own hops and via; the queued request is dropped when its turn comes
                request = ctx.requests.make(url, key, row[1], row[2], row[3], row[4])
                if request is None:
                    return ProxyResponse(400, reason="Bad URL")
                ctx.browser_claimed.add(key)
                return await self._through_crawl(page, req, request, key)
            if status == st.FrontierState.REFUSED or host_of(url) in ctx.refused_hosts:
                return ProxyResponse(403, [("Content-Type", "text/plain")], b"", "Not Archived")
            if status == st.FrontierState.FAILED:
                return ProxyResponse(502, [("Content-Type", "text/plain")], b"", "Not Archived")
            # captured already, being fetched by the plain crawler, or another partition's
            return await self._from_archive(req, url, key)
        ctx.state.begin()
        request = ctx.frontier.consider(url, "E", "browser", page.hf, tag="browser")
        ctx.frontier.commit()
        if request is None:  # refused (logged in crawl.log by consider) or another partition's
            if self._state_of(key) == st.FrontierState.HANDED_OFF:  # captured by its owner: wait
                return await self._from_archive(req, url, key)
            return ProxyResponse(403, [("Content-Type", "text/plain")], b"", "Not Archived")
        ctx.browser_claimed.add(key)
        return await self._through_crawl(page, req, request, key)

    async def _through_crawl(
        self, page: RenderPage, req: ProxyRequest, request: scrapy.Request, key: str
    ) -> ProxyResponse:
        """Fetch a browser's request with Scrapy (recorded, logged), ahead of the frontier."""
        fut: asyncio.Future[ProxyResponse] = asyncio.get_running_loop().create_future()
        headers = [(k, v) for k, v in req.headers if k.lower() not in _DROP_FROM_BROWSER]
        request = request.replace(
            method=req.method, body=req.body, headers=headers, priority=BROWSER_PRIORITY
        )
        request.meta["hf_browser"] = fut
        page.resources += 1
        if req.method == "GET":
            self.inflight[key] = fut
        self.crawler.engine.crawl(request)
        try:
            response = await asyncio.wait_for(
                asyncio.shield(fut), self.t.download_timeout_s * (self.t.retries + 1) + 30
            )
        except TimeoutError:
            return ProxyResponse(504, reason="Gateway Timeout")
        finally:
            if self.inflight.get(key) is fut:
                del self.inflight[key]
        if req.method == "GET":
            page.served[key] = response
        return response

    async def _from_archive(self, req: ProxyRequest, url: str, key: str) -> ProxyResponse:
        """A URL the job has captured, is capturing, or has handed to the partition that owns
        its host: its capture read back from the WARC (crawler/rendering/archive.py). Fetched
        again (unrecorded, logged) only for a non-GET request of a URL not fetched here yet (being
        fetched, or another partition's), or a capture whose record cannot be read here."""
        if req.method != "GET":
            return await self.passthrough.fetch(req, url)
        timeout = self.t.download_timeout_s * (self.t.retries + 1) + 30
        response = await self.captures.wait_for(url, key, timeout)
        if response is not None:
            return response
        log.warning("render: %s re-fetched for the browser, unrecorded (record not readable)", url)
        self.crawler.stats.inc_value(REFETCHED)
        return await self.passthrough.fetch(req, url)

    def _state_of(self, key: str) -> int | None:
        row = self.ctx.state.db.execute("SELECT status FROM urls WHERE key=?", (key,)).fetchone()
        return None if row is None else int(row[0])

    async def close(self) -> None:
        await self.passthrough.close()
