"""Browser-rendered capture: chosen pages loaded in headless Chromium after their plain fetch,
screenshots kept, the rendered DOM's links followed.

Why this shape: each tab worker is a Chromium process of its own with its own proxy listener
(a crash or a leak takes only that one down); the page's document is served to the browser from
its capture, never fetched twice, and every other request of the tab goes through the crawl
(:mod:`crawler.rendering.tab_requests`). Behaviours run within ``render_page_timeout_s``; a
crashed or hung tab is killed and the page tried once more, then keeps its plain capture.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from typing import TYPE_CHECKING, Any

from crawler.context import RENDER_FAILED, RENDERED
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
    ProxyRequest,
    ProxyResponse,
)
from crawler.rendering.qa_compare import QaSettings
from crawler.rendering.tab import RenderPage, TabPool, TabWorker
from crawler.rendering.tab_requests import TabRequests
from crawler.rendering.tabpage import TabPage
from crawler.rendering.tls import JobCA
from crawler.rendering.video import video_pass, wants_video
from harvestflow.formats.urls import canonical_key

if TYPE_CHECKING:
    import scrapy
    from scrapy.http import Response

    from crawler.context import CrawlContext

log = logging.getLogger(__name__)

RENDER_MODES = ("none", "seeds", "html")
IDLE_S = 0.5
MAX_SCREENSHOT_HEIGHT = 16384


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
        self.free: TabPool | None = None
        self.tabs: list[TabWorker] = []
        self.rendering = 0  # pages being rendered now (the progress line shows it)
        self.waiting = 0  # pages waiting for a free tab
        self.captures = JobCaptures(ctx, crawler)  # served back to the browser
        self.requests = TabRequests(ctx, crawler, self.t, self.captures)
        # browser profiles in the job's state (a crashed run's are removed here)
        self.profiles = profiles_dir(ctx.jobdir.state)
        shutil.rmtree(self.profiles, ignore_errors=True)
        self.ca = JobCA(ctx.jobdir.render_ca, f"harvestflow job {ctx.spec.job_id}")
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

    def pool(self) -> TabPool:
        """The free tabs (made on first use): a capture, or a QA pass, takes one."""
        if self.free is None:
            self.free = TabPool()
            self.tabs = [TabWorker(self, i) for i in range(max(1, self.t.render_tabs))]
            for tab in reversed(self.tabs):  # tab 0 taken first
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
                write_behaviours(self.ctx.jobdir.reports, request.url, outcome.actions)
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
        done = False
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
            done = True
            return outcome
        finally:
            browser.forget(session)
            if not done:
                # a hung or crashed page answers nothing: a clean-up through it would wait out
                # CDP's own time-out (30 s) after the page's; its browser is killed instead
                await tab.kill()
            else:
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
        self,
        browser: Browser,
        session: str,
        tab: TabWorker,
        deadline: float,
        pb: PageBehaviours,
        idle: float = IDLE_S,
    ) -> None:
        """Network idle, a dwell for timers, the consent dialog, site scripts and expanders,
        then scroll a screen at a time until the bottom is reached and the page no longer grows
        (bounded by ``render_max_scrolls``), then "load more" buttons and media
        (crawler/rendering/behaviours/run.py). Idle: no request in flight for ``idle`` s."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await self._settle(tab, deadline, idle)
        dwell = min(start + self.t.render_min_wait_s, deadline)
        if loop.time() < dwell:
            await asyncio.sleep(dwell - loop.time())

        async def settle() -> None:
            await self._settle(tab, deadline, idle)

        await pb.before_scroll(deadline, settle)
        for _ in range(self.t.render_max_scrolls):
            if loop.time() >= deadline:
                break
            pos = await self.evaluate(browser, session, SCROLL_JS)
            await self._settle(tab, deadline, idle)
            if not isinstance(pos, list) or len(pos) != 2:
                break
            bottom, height = pos
            if bottom >= height:
                # at the bottom: done unless what the scroll started made the page grow
                grown = await self.evaluate(browser, session, HEIGHT_JS)
                if not isinstance(grown, int | float) or grown <= height:
                    break
        await self._settle(tab, deadline, idle)
        await pb.after_scroll(deadline, settle)
        await self.evaluate(browser, session, "window.scrollTo(0, 0)")

    async def screenshots(
        self,
        browser: Browser,
        session: str,
        phone: bool = False,
        full: bool = True,
    ) -> list[Screenshot]:
        """The viewport, then (unless not ``full``: the QA replay's, compared with the
        capture's viewport) the full page: the viewport made as tall as the page (a device
        metrics override at the same width, pixel ratio and mobile flag), then given back. Not
        ``captureBeyondViewport``: its resize passes through a narrow viewport, where a page's
        phone media queries match and the desktop pass loaded the phone's images."""
        import base64

        view = await browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        shots = [Screenshot("viewport", base64.b64decode(view["data"]))]
        if not full:
            return shots
        metrics = await browser.send("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        height = max(1, min(int(size.get("height", 900)), MAX_SCREENSHOT_HEIGHT))
        width = int((metrics.get("cssLayoutViewport") or {}).get("clientWidth") or 1280)
        tall = phone_metrics(height) if phone else desktop_metrics(width, height)
        await browser.send("Emulation.setDeviceMetricsOverride", tall, session=session)
        try:
            whole = await browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        finally:
            if phone:
                await browser.send(
                    "Emulation.setDeviceMetricsOverride", phone_metrics(), session=session
                )
            else:
                await browser.send("Emulation.clearDeviceMetricsOverride", session=session)
        shots.append(Screenshot("full", base64.b64decode(whole["data"])))
        return shots

    # --- the tabs' requests ---------------------------------------------------------------------
    async def fetch_for(self, page: RenderPage, req: ProxyRequest) -> ProxyResponse:
        """A request of a rendering page: captured once per job, through Scrapy."""
        return await self.requests.fetch_for(page, req)

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
        await self.requests.close()
        shutil.rmtree(self.profiles, ignore_errors=True)  # a root crawler's are under /tmp
        self.captures.close()
