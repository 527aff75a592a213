"""The archival spider: turns each capture into links, and each failure into a crawl.log line.

Why so thin: what to follow is decided by the scope rules and what to write by the capture
middleware; the spider only extracts links from what came back (HTML, CSS, sitemaps, redirect
``Location``) and hands them to the crawl context, and maps fetch errors to Heritrix's negative
status codes so that no failure is silent and none is fatal.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator, Coroutine, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import scrapy
from scrapy import exceptions as sx
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import error as txerror
from twisted.python.failure import Failure
from twisted.web.client import ResponseFailed, ResponseNeverReceived

from crawler import state as st
from crawler.capture_middleware import header_list
from crawler.context import Capture, CrawlContext, context_of
from crawler.errors import FetchedByBrowser, Refused
from crawler.inflate import release_inflated
from crawler.jsextract import extract_html_scripts, extract_script, is_javascript
from crawler.links import EXTRACT_FAIL, extract_css, html_links
from crawler.manifests import manifest_kind, manifest_links
from crawler.outages import PLATFORM_END_REASON, is_platform_failure
from crawler.pdflinks import is_pdf, pdf_links
from crawler.rendering.finish import finish_interrupted
from crawler.sitemaps import is_sitemap_context, links_of_response
from harvestflow.formats.fetch_status import FetchStatus
from harvestflow.formats.urls import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


def classify_failure(failure: Failure, ctx: CrawlContext) -> tuple[int, list[str], int]:
    """(Heritrix status, annotations, final state) of a fetch that produced no response."""
    exc = failure.value
    request = getattr(failure, "request", None)
    if isinstance(exc, Refused):
        return exc.status, [exc.annotation], exc.final_state
    name = type(exc).__name__
    if isinstance(exc, txerror.DNSLookupError | sx.CannotResolveHostError):
        host = host_of(request.url) if request is not None else ""
        if host in ctx.refused_hosts:
            return (
                FetchStatus.BLOCKED_BY_CUSTOM_PROCESSOR,
                ["err=address-not-allowed"],
                st.FrontierState.REFUSED,
            )
        return (
            FetchStatus.DOMAIN_PREREQUISITE_FAILURE,
            ["err=dns-lookup-failed"],
            st.FrontierState.FAILED,
        )
    if isinstance(
        exc,
        txerror.ConnectionRefusedError
        | txerror.ConnectError
        | txerror.NoRouteError
        | sx.DownloadConnectionRefusedError,
    ):
        return FetchStatus.CONNECT_FAILED, [f"err={name}"], st.FrontierState.FAILED
    if isinstance(
        exc,
        txerror.TimeoutError | TimeoutError | txerror.TCPTimedOutError | sx.DownloadTimeoutError,
    ):
        return FetchStatus.TIMEOUT, ["err=timeout"], st.FrontierState.FAILED
    if isinstance(
        exc,
        ResponseFailed
        | ResponseNeverReceived
        | txerror.ConnectionLost
        | txerror.ConnectionDone
        | sx.ResponseDataLossError
        | sx.DownloadFailedError
        | sx.DownloadCancelledError,
    ):
        return FetchStatus.CONNECT_LOST, [f"err={name}"], st.FrontierState.FAILED
    if isinstance(exc, sx.UnsupportedURLSchemeError):
        return FetchStatus.UNFETCHABLE_URI, ["err=unsupported-scheme"], st.FrontierState.REFUSED
    if isinstance(exc, IgnoreRequest):
        return (
            FetchStatus.BLOCKED_BY_USER,
            [f"err={exc}".replace(" ", "_")[:80]],
            st.FrontierState.REFUSED,
        )
    return FetchStatus.RUNTIME_EXCEPTION, [f"err={type(exc).__name__}"], st.FrontierState.FAILED


def _fetched_for(request: scrapy.Request) -> str:
    """The annotation of a URL fetched for a browser: a rendering page's, or the QA patch's."""
    return "qa-patch" if request.meta.get("hf_qa_patch") else "browser"


class ArchiveSpider(scrapy.Spider):
    name = "harvestflow"

    # set by from_crawler: the job's context (crawler.context.attach) and template settings
    ctx: CrawlContext
    extract_js: bool
    extract_sitemaps: bool
    media_renditions: str
    max_response_bytes: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.renderer: Any = (
            None  # crawler.rendering.renderer.Renderer when the template renders pages
        )
        self.page_qa: Any = None  # crawler.rendering.qa_loop.PageQa when rendered pages are checked
        self.platform_failure: str | None = None  # the first failure of our own platform

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ArchiveSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.ctx = context_of(crawler)
        spider.ctx.requests.callbacks = (spider.parse, spider.on_error)
        spider.extract_js = settings.getbool("HARVESTFLOW_EXTRACT_JS")
        spider.extract_sitemaps = settings.getbool("HARVESTFLOW_EXTRACT_SITEMAPS")
        spider.media_renditions = settings.get("HARVESTFLOW_MEDIA_RENDITIONS", "extremes")
        spider.max_response_bytes = settings.getint("HARVESTFLOW_MAX_RESPONSE_BYTES")
        if settings.get("HARVESTFLOW_RENDER", "none") != "none":
            from crawler.rendering.renderer import (
                Renderer,  # no DevTools client unless a job renders
            )

            spider.renderer = Renderer(spider.ctx, crawler)
            spider.ctx.renderer = spider.renderer
            if spider.renderer.qa.qa:
                from crawler.rendering.qa_loop import PageQa

                spider.page_qa = PageQa(spider.ctx, spider.renderer, crawler)
            crawler.signals.connect(spider.close_renderer, signal=signals.spider_closed)
        return spider

    async def close_renderer(self, spider: Any = None, reason: str = "") -> None:
        if self.page_qa is not None:
            await self.page_qa.close()
        if self.renderer is not None:
            await self.renderer.close()

    async def start(self) -> AsyncIterator[Any]:
        if self.ctx.frontier.resuming and self.ctx.spec.template.render != "none":
            finish_interrupted(self.ctx)  # pages a crash caught mid-render: logged, not again
        for request in self.ctx.start_requests():
            yield request
        if self.page_qa is not None:  # QA passes a crash cut short: finished now
            for entry in self.page_qa.pending():
                await self.page_qa.run(entry)

    def links_of(self, response: Response, cap: Capture) -> list[tuple[str, str, str]]:
        links: list[tuple[str, str, str]] = []
        if cap.location and 300 <= cap.status < 400:
            links.append((urljoin(response.url, cap.location.strip()), "R", "location"))
        if cap.status == 304 or not response.body:
            return links
        try:
            hf = response.meta.get("hf") or {}
            extract_js = self.extract_js
            if self.extract_sitemaps and is_sitemap_context(hf.get("context")):
                if cap.status == 200:
                    links += links_of_response(
                        response.body, response.url, hf, self.max_response_bytes
                    )
            elif cap.status == 200 and (kind := manifest_kind(cap.mime, response.url)):
                # an HLS/DASH manifest: its renditions' segments (crawler/manifests.py)
                links += manifest_links(kind, response.body, response.url, self.media_renditions)
            elif isinstance(response, HtmlResponse):
                found, note = html_links(
                    response.text,
                    response.url,
                    scripts=extract_html_scripts if extract_js else None,
                )
                links += found
                if note:  # the tree parser gave up: the streaming scan found these
                    cap.annotations.append(note)
                    log.info("%s: HTML tree parse gave up, links scanned instead", response.url)
            elif extract_js and is_javascript(cap.mime, response.url):
                text = (
                    response.text
                    if isinstance(response, TextResponse)
                    else response.body.decode("utf-8", "replace")
                )
                links += extract_script(text, response.url, "js")
            elif cap.mime == "text/css" and isinstance(response, TextResponse):
                links += extract_css(response.text, response.url)
            elif cap.status == 200 and is_pdf(cap.mime, response.body):
                links += pdf_links(response.body, response.url)
        except Exception as exc:  # a page we cannot parse is still archived
            log.warning("link extraction failed for %s: %s", response.url, exc)
            cap.annotations.append(EXTRACT_FAIL)
        return links

    def parse(
        self, response: Response, **kwargs: Any
    ) -> Iterable[scrapy.Request] | Coroutine[Any, Any, list[scrapy.Request]]:
        request = response.request
        assert request is not None
        cap: Capture | None = request.meta.get("hf_capture")
        if cap is None:  # not captured (should not happen): keep the crawl going
            log.error("no capture for %s", response.url)
            return []
        links = self.links_of(response, cap)
        release_inflated(request)  # the inflated body is read: its budget is free again
        waiting = request.meta.get("hf_browser")
        if waiting is None and request.meta.get("hf", {}).get("context") == "browser":
            # another partition's rendering page asked for it (handed off): logged as such,
            # and read back from this capture by that partition (crawler/rendering/archive.py)
            cap.annotations.append("browser")
            return self.ctx.finish_capture(request, cap, links)
        if waiting is not None:  # fetched for a rendering page: logged, then handed back
            from crawler.rendering.proxy import ProxyResponse

            cap.annotations.append(_fetched_for(request))
            out = self.ctx.finish_capture(request, cap, links)
            if not waiting.done():
                waiting.set_result(
                    ProxyResponse(response.status, header_list(response.headers), response.body)
                )
            return out
        if self.renderer is not None and self.renderer.wants(
            request, response, cap.mime, cap.status
        ):
            return self._render_then_finish(request, response, cap, links)
        return self.ctx.finish_capture(request, cap, links)

    async def _render_then_finish(
        self, request: scrapy.Request, response: Response, cap: Capture, links: list[Any]
    ) -> list[scrapy.Request]:
        """A page chosen for rendering: its frontier update waits for the browser's links."""
        from crawler.rendering.finish import begin_render, end_render
        from crawler.rendering.shots import write_screenshots
        from crawler.rendering.video import write_video_infos

        new = begin_render(self.ctx, request, cap, links)
        outcome = await self.renderer.render(request, response, header_list(response.headers))
        if outcome.error:
            cap.annotations.append(f"render-failed:{outcome.error}")
        else:
            cap.annotations.append("rendered")
            cap.annotations.extend(a.annotation for a in outcome.actions)
            write_screenshots(self.ctx, request.url, cap, outcome.screenshots)
            write_video_infos(self.ctx, request.url, cap, outcome.videos)
        # plain links the browser fetched meanwhile (claimed) are not scheduled again
        claimed = self.ctx.browser_claimed
        new = [r for r in new if r.meta["hf"]["key"] not in claimed]
        qa = None
        if self.page_qa is not None and not outcome.error:  # kept before the page is done
            qa = self.page_qa.keep(request.url, dict(request.meta["hf"], url=request.url), outcome)
        new += end_render(self.ctx, request, cap, links, outcome.links)
        if qa is None:
            return new
        # the page's links scheduled now, then its QA pass in the crawl's tabs
        # (crawler/rendering/qa_loop.py): the crawl goes on meanwhile
        for r in new:
            self.crawler.engine.crawl(r)
        await self.page_qa.run(qa)
        return []

    def platform_failed(self, request: scrapy.Request | None, exc: BaseException) -> None:
        """A service of ours failed (not the site): the URL stays queued in the frontier (no
        crawl.log line, no done mark) and the crawl ends ``unfinished`` for a retry to resume."""
        url = request.url if request is not None else "(no request)"
        self.ctx.count("platformFailures")
        if self.platform_failure is None:
            self.platform_failure = f"{type(exc).__name__}: {exc}"
            log.error(
                "platform failure at %s, not the site's: stopping the crawl resumable: %s",
                url,
                self.platform_failure,
            )
            engine = self.crawler.engine
            if engine is not None:
                closing = deferred_from_coro(engine.close_spider_async(reason=PLATFORM_END_REASON))
                closing.addErrback(lambda f: log.error("close after platform failure: %s", f))
        else:
            log.warning("platform failure at %s (left queued): %s", url, exc)

    def on_error(self, failure: Failure) -> Iterable[scrapy.Request]:
        request = failure.request  # type: ignore[attr-defined]
        release_inflated(request)
        if is_platform_failure(failure.value):
            self.platform_failed(request, failure.value)
            waiting = request.meta.get("hf_browser")
            if waiting is not None and not waiting.done():
                from crawler.rendering.proxy import ProxyResponse

                waiting.set_result(ProxyResponse(503, reason="Not Archived"))
            return []
        cap: Capture | None = request.meta.get("hf_capture")
        if cap is not None:  # captured, then failed later (e.g. a bad gzip body)
            log.warning("post-capture failure for %s: %s", request.url, failure.value)
            out = self.ctx.finish_capture(request, cap, [])
            waiting = request.meta.get("hf_browser")
            if waiting is not None and not waiting.done():
                from crawler.rendering.proxy import ProxyResponse

                waiting.set_result(ProxyResponse(502, reason="Unreadable"))
            return out
        if isinstance(failure.value, FetchedByBrowser):
            return []  # the browser's fetch of this URL was its capture
        status, annotations, final = classify_failure(failure, self.ctx)
        waiting = request.meta.get("hf_browser")
        if waiting is not None:
            annotations = [*annotations, _fetched_for(request)]
        self.ctx.finish_failure(request, status, annotations, final)
        if waiting is not None and not waiting.done():
            from crawler.rendering.proxy import ProxyResponse

            waiting.set_result(
                ProxyResponse(
                    502 if final == st.FrontierState.FAILED else 403, reason="Not Archived"
                )
            )
        return []

    def closed(self, reason: str) -> None:
        # after a platform failure the crawl is unfinished, however it came to close
        self.ctx.end_reason = PLATFORM_END_REASON if self.platform_failure else reason


class ScheduleOutputMiddleware:
    """The last spider middleware on a callback's output: schedules its Requests at once.

    Why: Scrapy hands a callback's output, once through the spider middlewares, to
    CONCURRENT_ITEMS asyncio worker tasks made per response (101 tasks with the default 100),
    which then schedule the Requests; ArchiveSpider yields only Requests, and scheduling one
    never waits. Here they are scheduled in the same order and in the same event-loop step as
    those workers did, and nothing is left for the workers (CONCURRENT_ITEMS is 1 in
    runner.scrapy_settings: 2 tasks per response). Anything else a callback yields is passed
    on unchanged. Start requests do not come this way (``process_start``).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScheduleOutputMiddleware:
        return cls(crawler)

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Any = None
    ) -> Iterable[Any] | None:
        """A callback that failed on our platform (the frontier's commit, a WARC write on a
        full disk): the URL stays queued and the crawl stops resumable; other errors go on to
        Scrapy's usual handling."""
        if not is_platform_failure(exception):
            return None
        owner = spider if spider is not None else self.crawler.spider
        if isinstance(owner, ArchiveSpider):
            owner.platform_failed(response.request, exception)
        return []

    def _schedule(self, output: Any) -> bool:
        if isinstance(output, scrapy.Request):
            engine = self.crawler.engine
            assert engine is not None
            engine.crawl(output)
            return True
        return False

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        # a generator, like the middlewares before it: consumed where Scrapy consumed the output
        for o in result:
            if not self._schedule(o):
                yield o

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterable[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        async for o in result:
            if not self._schedule(o):
                yield o
