"""Browser-rendered capture: pages loaded in headless Chromium, every request they make archived
through the crawl's own fetch path, screenshots kept, the rendered DOM's links followed.

Why this shape (see also crawler/rendering/proxy.py and crawler/rendering/cdp.py):
- A page chosen for rendering (template ``render``: ``seeds`` or every in-scope ``html`` page)
  has been fetched by the plain crawler first; its parse waits while a *tab worker* (one
  Chromium process with its own proxy listener: a crash or a memory leak only takes that one
  down, and a restart is a process kill) loads it. The page's own document is served to the
  browser from that capture (never fetched twice).
- Every other request of the tab reaches the proxy, becomes a discovered link of the page
  (hop ``E``: the scope's transclusion rule decides, so an out-of-scope request is archived
  only as a transclusion) and is fetched by Scrapy at a high priority — the capture middleware
  writes its request/response records as received, robots, the host's politeness delay,
  budgets and the host mapping apply, crawl.log gets its line (via = the page, annotation
  ``browser``). A URL the job has seen already is not captured again: the browser gets its
  capture read back from the job's WARC (crawler/rendering/archive.py; one being fetched, or
  handed to the partition that owns its host, once it is captured) or, if the crawl refused
  it, a 403.
- Behaviours: load event, network idle (no request in flight on the tab's proxy for
  ``IDLE_S``), a minimum dwell for timers, scrolling a screen at a time until the page stops
  growing, all within ``render_page_timeout_s``; then the viewport and full-page screenshots
  (``resource`` records ``urn:screenshot:URL`` / ``urn:screenshot-full:URL`` referring to the
  page's response record) and the rendered DOM's anchors (hop ``L``, context ``rendered``).
- A crashed or hung tab is killed and the page tried once more in a new browser; then the page
  keeps its plain capture and links, its crawl.log line says ``render-failed:<why>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from typing import TYPE_CHECKING, Any

from crawler import state as st
from crawler.inflate import inflater_of
from crawler.rendering.archive import JobCaptures
from crawler.rendering.behaviours.consent import ConsentMemory
from crawler.rendering.behaviours.report import write_behaviours
from crawler.rendering.behaviours.run import Action, PageBehaviours
from crawler.rendering.behaviours.sites import load_site_behaviours
from crawler.rendering.cdp import Browser, CdpError
from crawler.rendering.chromium_user import profiles_dir
from crawler.rendering.model import (
    ANCHORS_JS,
    HEIGHT_JS,
    SCROLL_JS,
    TEXT_JS,
    PageErrors,
    RenderOutcome,
    RenderSettings,
    Screenshot,
)
from crawler.rendering.passthrough import Passthrough
from crawler.rendering.phone import (
    HEIGHT,
    PHONE_KINDS,
    WIDTH,
    desktop_metrics,
    emulate_phone,
    end_phone,
    phone_metrics,
    wants_phone,
)
from crawler.rendering.proxy import (
    HOP_BY_HOP,
    RANGE_HEADERS,
    ProxyRequest,
    ProxyResponse,
)
from crawler.rendering.qa_compare import QaSettings
from crawler.rendering.tab import RenderPage, TabWorker
from crawler.rendering.tabpage import TabPage
from crawler.rendering.tls import JobCA
from crawler.rendering.video import video_pass, wants_video
from crawler.state import BROWSER_PRIORITY
from harvestflow.formats.urls import canonical_key, host_of, without_fragment

if TYPE_CHECKING:
    import scrapy
    from scrapy.http import Response

    from crawler.context import CrawlContext

log = logging.getLogger(__name__)

RENDER_MODES = ("none", "seeds", "html")
IDLE_S = 0.5
# (a byte range: the crawl fetches the whole resource, the tab gets its range: ``ranged``)
_DROP_FROM_BROWSER = (
    HOP_BY_HOP | RANGE_HEADERS | {"host", "accept-encoding", "user-agent", "content-length"}
)
MAX_SCREENSHOT_HEIGHT = 16384
# the renderer's counters in crawler.stats
RENDERED = "harvestflow/render/rendered"
RENDER_FAILED = "harvestflow/render/failed"
REFETCHED = "harvestflow/render/refetched"  # captured, record unreadable: re-fetched


class Renderer:
    """The job's pool of tab workers (``render_tabs``) and the fetch path of their requests."""

    def __init__(self, ctx: CrawlContext, crawler: Any) -> None:
        self.ctx = ctx
        self.crawler = crawler
        self.t = RenderSettings.from_settings(crawler.settings)
        self.qa = QaSettings.from_settings(
            crawler.settings
        )  # the QA pass (crawler/rendering/qa_pass.py)
        self.mode = self.t.render
        self.free: asyncio.Queue[TabWorker] | None = None
        self.tabs: list[TabWorker] = []
        self.rendering = 0  # pages being rendered now (the progress line shows it)
        self.waiting = 0  # pages waiting for a free tab
        self.passthrough = Passthrough(
            self.t.resolve,
            self.t.download_timeout_s,
            self.t.max_response_bytes,
            self.t.user_agent,
            _DROP_FROM_BROWSER,
            inflater_of(crawler),
        )
        self.inflight: dict[str, asyncio.Future[ProxyResponse]] = {}  # key → browser fetch
        self.captures = JobCaptures(ctx, crawler)  # served back to the browser
        # browser profiles in the job's state (a crashed run's are removed here)
        self.profiles = profiles_dir(ctx.state_dir)
        shutil.rmtree(self.profiles, ignore_errors=True)
        self.ca = JobCA(ctx.state_dir / "render-ca", f"harvestflow job {ctx.spec.job_id}")
        # behaviours (crawler/rendering/behaviours/): hosts' consent answers, curators' site scripts
        self.consent_memory = ConsentMemory()
        self.site_behaviours = load_site_behaviours(
            self.t.render_site_behaviours, self.t.render_behaviour_timeout_s
        )

    # --- which pages ----------------------------------------------------------------------------
    def wants(self, request: scrapy.Request, response: Response, mime: str, status: int) -> bool:
        """Whether a fetched page is rendered (an in-scope HTML 200 the mode selects)."""
        if (
            self.mode == "none"
            or status != 200
            or mime not in ("text/html", "application/xhtml+xml")
        ):
            return False
        hf = request.meta.get("hf") or {}
        if "hf_browser" in request.meta or hf.get("context") == "browser":
            return False  # fetched for a rendering page (an iframe's document): not again
        hops = hf.get("hops", "")
        if self.mode == "seeds":
            return hops.strip("R") == ""
        return self.ctx.scope.in_seed_scope(request.url)

    def pool(self) -> asyncio.Queue[TabWorker]:
        """The free tabs (made on first use): a capture, or a QA pass, takes one."""
        if self.free is None:
            self.free = asyncio.Queue()
            for i in range(max(1, self.t.render_tabs)):
                tab = TabWorker(self, i)
                self.tabs.append(tab)
                self.free.put_nowait(tab)
        return self.free

    # --- one page -------------------------------------------------------------------------------
    async def render(
        self, request: scrapy.Request, response: Response, headers: list[tuple[str, str]]
    ) -> RenderOutcome:
        """Render a captured page (tried twice if its tab crashes or hangs)."""
        free = self.pool()
        page = RenderPage(
            canonical_key(request.url),
            dict(request.meta["hf"], url=request.url),
            ProxyResponse(response.status, headers, response.body),
        )
        self.waiting += 1
        tab = await free.get()
        self.waiting -= 1
        self.rendering += 1
        outcome = RenderOutcome(error="not rendered")
        # beyond the behaviours' time: screenshots and DOM links (a hung tab never answers)
        grace = min(15.0, max(5.0, self.t.render_page_timeout_s / 2))
        try:
            for attempt in (1, 2):
                page.served.clear()
                tab.page = page
                try:
                    outcome = await asyncio.wait_for(
                        self._render_in(tab, request.url), self.t.render_page_timeout_s + grace
                    )
                    outcome.error = ""
                    break
                except (CdpError, TimeoutError, OSError) as exc:
                    why = "timeout" if isinstance(exc, TimeoutError) else "crash"
                    if "not found" in str(exc):
                        why = "no-browser"
                    log.warning(
                        "render of %s failed (attempt %d, %s): %s", request.url, attempt, why, exc
                    )
                    outcome = RenderOutcome(error=why)
                    await tab.kill()  # a hung or crashed tab is never reused
                finally:
                    tab.page = None
            if not outcome.error and wants_phone(self.t.render_phone, page.hf):
                await self._phone(tab, page, request.url, outcome, grace)
            if not outcome.error and wants_video(self.t.render_video, request.url):
                await video_pass(tab, page, request.url, self.t, outcome)
            outcome.resources = page.resources
            if not outcome.error:
                write_behaviours(self.ctx.report_dir, request.url, outcome.actions)
        finally:
            self.rendering -= 1
            free.put_nowait(tab)
        # crawler.stats, read when used: the spider makes the renderer before Scrapy makes stats
        self.crawler.stats.inc_value(RENDER_FAILED if outcome.error else RENDERED)
        return outcome

    async def _phone(
        self, tab: TabWorker, page: RenderPage, url: str, outcome: RenderOutcome, grace: float
    ) -> None:
        """The page's phone pass (crawler/rendering/phone.py) in the same tab: its screenshots
        and rendered links added to the desktop pass's; a failure is an action of the page
        (annotation ``phone:0``), its desktop capture stands."""
        tab.page = page
        try:
            phone = await asyncio.wait_for(
                self._render_in(tab, url, phone=True), self.t.render_page_timeout_s + grace
            )
        except (CdpError, TimeoutError, OSError) as exc:
            why = "timeout" if isinstance(exc, TimeoutError) else "crash"
            log.warning("phone pass of %s failed (%s): %s", url, why, exc)
            outcome.actions.append(Action("phone", "failed", 0, why))
            await tab.kill()
            return
        finally:
            tab.page = None
        outcome.screenshots += [Screenshot(PHONE_KINDS[s.kind], s.png) for s in phone.screenshots]
        outcome.links += [link for link in phone.links if link not in outcome.links]
        outcome.actions.append(Action("phone", "render", 1, f"{WIDTH}x{HEIGHT}"))

    def watch(self, page: TabPage, url: str) -> tuple[PageBehaviours, PageErrors]:
        """The behaviours and the JavaScript errors of a page load (a capture, a QA replay)."""
        behaviours = PageBehaviours(
            self.t, page.browser, page.session, page.context_id, url, self.consent_memory,
            self.site_behaviours,
        )  # fmt: skip
        errors = PageErrors()  # what the QA pass compares its replay's with
        page.listen(behaviours.on_event)
        page.listen(errors.on_event)
        return behaviours, errors

    async def _render_in(self, tab: TabWorker, url: str, phone: bool = False) -> RenderOutcome:
        browser = await tab.ensure_browser()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.t.render_page_timeout_s
        context_id, session = await tab.open_page()
        if phone:
            await emulate_phone(browser, session, self.t.user_agent)
        behaviours: PageBehaviours | None = None
        try:
            loaded = asyncio.Event()
            crashed: list[str] = []
            navigated: list[str] = []  # the page's own document (not the blank one before it)

            def on_event(method: str, params: dict[str, Any]) -> None:
                if method == "Page.frameNavigated":
                    if not (params.get("frame") or {}).get("parentId"):
                        navigated.append(str(params["frame"].get("url")))
                elif method == "Page.loadEventFired" and navigated:
                    loaded.set()
                elif method in ("Inspector.targetCrashed", "Inspector.detached"):
                    crashed.append(params.get("reason") or method)
                    loaded.set()

            browser.listen(session, on_event)
            behaviours = PageBehaviours(
                self.t, browser, session, context_id, url, self.consent_memory,
                self.site_behaviours,
            )  # fmt: skip
            browser.listen(session, behaviours.on_event)
            errors = PageErrors()  # what the QA pass compares its replay's with
            browser.listen(session, errors.on_event)
            await browser.send("Page.enable", session=session)
            await browser.send("Runtime.enable", session=session)
            await behaviours.prepare()
            await browser.send("Page.navigate", {"url": url}, session=session)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(loaded.wait(), max(deadline - loop.time(), 0.1))
            if crashed:
                raise CdpError(f"tab crashed: {crashed[0]}")
            await self.behave(browser, session, tab, deadline, behaviours)
            if crashed:
                raise CdpError(f"tab crashed: {crashed[0]}")
            outcome = RenderOutcome(actions=behaviours.actions)
            anchors = await self.evaluate(browser, session, ANCHORS_JS)
            outcome.links = [
                (a, "L", "rendered/a/@href") for a in anchors or [] if isinstance(a, str)
            ]
            if self.qa.qa and not phone:
                outcome.text = str(await self.evaluate(browser, session, TEXT_JS) or "")
                outcome.js_errors = errors.messages
            outcome.screenshots = await self.screenshots(browser, session, phone)
            tab.pages_done += 1
            return outcome
        finally:
            browser.forget(session)
            if behaviours is not None:
                await behaviours.finish()
            if phone and not await end_phone(browser, session, self.t.user_agent):
                await tab.kill()
            await tab.leave_page()

    async def evaluate(self, browser: Browser, session: str, expr: str) -> Any:
        result = await browser.send(
            "Runtime.evaluate",
            {"expression": expr, "returnByValue": True, "awaitPromise": True},
            session=session,
        )
        return (result.get("result") or {}).get("value")

    async def _settle(self, tab: TabWorker, deadline: float, idle: float = IDLE_S) -> None:
        """Wait until the tab's proxy has had no request in flight for ``idle`` seconds, counted
        from now at the earliest (what a scroll or a timer starts shows up a moment later)."""
        loop = asyncio.get_running_loop()
        since = loop.time()
        while loop.time() < deadline:
            proxy = tab.proxy
            quiet_from = max(proxy.last_activity, since)
            if proxy.in_flight == 0 and loop.time() - quiet_from >= idle:
                return
            await asyncio.sleep(0.05)

    async def behave(
        self, browser: Browser, session: str, tab: TabWorker, deadline: float, pb: PageBehaviours
    ) -> None:
        """Network idle, a dwell for timers, the consent dialog, site scripts and expanders,
        then scroll a screen at a time until the bottom is reached and the page no longer grows
        (bounded by ``render_max_scrolls``), then "load more" buttons and media
        (crawler/rendering/behaviours/run.py)."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await self._settle(tab, deadline)
        dwell = min(start + self.t.render_min_wait_s, deadline)
        if loop.time() < dwell:
            await asyncio.sleep(dwell - loop.time())

        async def settle() -> None:
            await self._settle(tab, deadline)

        await pb.before_scroll(deadline, settle)
        for _ in range(self.t.render_max_scrolls):
            if loop.time() >= deadline:
                break
            pos = await self.evaluate(browser, session, SCROLL_JS)
            await self._settle(tab, deadline)
            if not isinstance(pos, list) or len(pos) != 2:
                break
            bottom, height = pos
            if bottom >= height:
                # at the bottom: done unless what the scroll started made the page grow
                grown = await self.evaluate(browser, session, HEIGHT_JS)
                if not isinstance(grown, int | float) or grown <= height:
                    break
        await self._settle(tab, deadline)
        await pb.after_scroll(deadline, settle)
        await self.evaluate(browser, session, "window.scrollTo(0, 0)")

    async def screenshots(
        self, browser: Browser, session: str, phone: bool = False
    ) -> list[Screenshot]:
        """The viewport, then the full page: the viewport made as tall as the page (a device
        metrics override at the same width, pixel ratio and mobile flag), then given back.
        Not ``captureBeyondViewport``: its resize passes through a narrow viewport, where a
        page's phone media queries match and the desktop pass loaded the phone's images."""
        import base64

        shots = []
        view = await browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        shots.append(Screenshot("viewport", base64.b64decode(view["data"])))
        metrics = await browser.send("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        height = max(1, min(int(size.get("height", 900)), MAX_SCREENSHOT_HEIGHT))
        width = int((metrics.get("cssLayoutViewport") or {}).get("clientWidth") or 1280)
        tall = phone_metrics(height) if phone else desktop_metrics(width, height)
        await browser.send("Emulation.setDeviceMetricsOverride", tall, session=session)
        try:
            full = await browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        finally:
            if phone:
                await browser.send(
                    "Emulation.setDeviceMetricsOverride", phone_metrics(), session=session
                )
            else:
                await browser.send("Emulation.clearDeviceMetricsOverride", session=session)
        shots.append(Screenshot("full", base64.b64decode(full["data"])))
        return shots

    # --- the tabs' requests ---------------------------------------------------------------------
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
                request = ctx.make_request(url, key, row[1], row[2], row[3], row[4])
                if request is None:
                    return ProxyResponse(400, reason="Bad URL")
                return await self._through_crawl(page, req, request, key)
            claimable = key not in ctx.browser_claimed and key not in ctx.fetch_started
            if status == st.FrontierState.QUEUED and claimable:
                # found earlier, not fetched yet: the browser's fetch is its capture, under its
                # own hops and via; the queued request is dropped when its turn comes
                request = ctx.make_request(url, key, row[1], row[2], row[3], row[4])
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
        request = ctx.consider(url, "E", "browser", page.hf, tag="browser")
        if ctx.outbox is not None:
            ctx.outbox.flush()
        ctx.state.commit()
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

    def progress(self) -> str:
        """The progress line's part: pages being rendered, waiting for a tab, done, failed."""
        stats = self.crawler.stats
        return (
            f"render: {self.rendering} rendering, {self.waiting} waiting,"
            f" {stats.get_value(RENDERED, 0)} rendered, {stats.get_value(RENDER_FAILED, 0)} failed"
        )

    async def close(self) -> None:
        for tab in self.tabs:
            await tab.kill()
            await tab.proxy.close()
        await self.passthrough.close()
        shutil.rmtree(self.profiles, ignore_errors=True)  # a root crawler's are under /tmp
        self.captures.close()
