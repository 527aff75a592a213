"""The QA pass's replay: a rendered page loaded again, from the job's own WARCs, in one of the
crawl's tabs, with the same viewport and behaviours as its capture.

Why from the WARCs and not the access service: the records are readable as soon as written,
while a replay view needs the WARCs indexed; the answers are pywb's for an exact URL match. A
replay context's proxy (:class:`ReplayProxy`) answers only from those records: an unrecorded URL
is a 404 and listed missing, and nothing reaches a site during a replay. Its answers are
``no-store``: the replay context is kept from page to page, and each replay must still ask the
archive for everything its page needs. Its page is left between replays, stilled
(crawler/rendering/tabpage.py): a request the last page still makes before the next page's
document is asked for is answered and not counted.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from crawler.rendering.cdp import Browser
from crawler.rendering.model import TEXT_JS, Screenshot
from crawler.rendering.proxy import ProxyRequest, ProxyResponse, TabProxy, ranged
from crawler.rendering.tabpage import TabPage
from harvestflow.formats.urls import canonical_key, without_fragment

if TYPE_CHECKING:
    from crawler.rendering.renderer import Renderer
    from crawler.rendering.tab import TabWorker

log = logging.getLogger(__name__)

# the replay's network idle (the capture's is crawler.rendering.renderer.IDLE_S, 0.5 s): its
# answers come from the job's records on this machine, so the quiet that says "settled" is the
# page's own time to react, not a server's
REPLAY_IDLE_S = 0.2
NOT_ARCHIVED = ProxyResponse(
    404, [("Content-Type", "text/plain"), ("Cache-Control", "no-store")], b"", "Not Archived"
)
_CACHING = frozenset({"cache-control", "expires", "pragma", "etag", "last-modified"})


@dataclass
class Replay:
    """What a replay of a page showed."""

    text: str = ""
    errors: list[str] = field(default_factory=list)
    screenshots: list[Screenshot] = field(default_factory=list)
    requests: int = 0  # distinct URLs the replay asked for
    missing: list[str] = field(default_factory=list)  # ...that the archive could not serve

    def shot(self, kind: str) -> bytes | None:
        return next((s.png for s in self.screenshots if s.kind == kind), None)


class ReplayProxy:
    """A tab's replay proxy: every request answered from the job's records, or 404 (missing)."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.proxy = TabProxy(self.handle, renderer.ca.server_context)
        self.asked: dict[str, str] = {}  # key → URL, of the page being replayed
        self.missing: dict[str, str] = {}
        # the key of the page to replay until its document is asked for: what comes before is
        # the last page's (left in the tab, crawler/rendering/tabpage.py), answered, not counted
        self.awaited = ""
        self.page: TabPage | None = None  # the replay context's page in the tab's browser

    async def page_in(self, browser: Browser) -> TabPage:
        """The replay page in ``browser`` (made when the tab's browser is new)."""
        if self.page is not None and self.page.browser is not browser:
            self.page = None  # its browser was restarted or killed: the context went with it
        if self.page is None:
            page = TabPage(browser, self.proxy.address)
            await page.open()
            self.page = page
            pid = browser.proc.pid if browser.proc is not None else 0
            log.info("QA replay context opened in the browser of pid %d", pid)
        return self.page

    async def drop_page(self) -> None:
        if self.page is not None:
            await self.page.close()
        self.page = None

    def reset(self, page_key: str = "") -> None:
        """Nothing asked yet: the next replay's page is ``page_key``'s."""
        self.asked = {}
        self.missing = {}
        self.awaited = page_key

    async def handle(self, req: ProxyRequest) -> ProxyResponse:
        try:
            url = without_fragment(req.url)
            key = canonical_key(url)
        except ValueError:
            return ProxyResponse(400, reason="Bad URL")
        if self.awaited and key != self.awaited:
            return NOT_ARCHIVED  # the last page's, before the new page's document: not counted
        self.awaited = ""
        self.asked.setdefault(key, url)
        response = None
        if req.method == "GET":  # a POST's answer is recorded under its body: not replayed
            response = self.renderer.captures.records.response(key)
        if response is None:
            self.missing.setdefault(key, url)
            return NOT_ARCHIVED
        headers = [(k, v) for k, v in response.headers if k.lower() not in _CACHING]
        headers.append(("Cache-Control", "no-store"))
        return ranged(req, ProxyResponse(response.status, headers, response.body, response.reason))


class _ReplayTab:
    """What the renderer's settle loop reads of a tab: its proxy's activity."""

    def __init__(self, proxy: TabProxy) -> None:
        self.proxy = proxy


async def replay(
    renderer: Renderer, tab: TabWorker, rp: ReplayProxy, url: str, budget_s: float
) -> Replay:
    """Replay ``url`` in ``tab``'s browser through ``rp`` (CdpError, TimeoutError or OSError
    when the tab fails: the caller kills it)."""
    if not rp.proxy.port:
        await rp.proxy.start()
    rp.reset(canonical_key(without_fragment(url)))
    browser = await tab.ensure_browser(check_memory=False)  # checked at each capture
    timeout = min(renderer.t.render_page_timeout_s, budget_s)
    # beyond the behaviours' time: the tab's set-up and the screenshots, as at capture
    grace = min(15.0, max(5.0, renderer.t.render_page_timeout_s / 2))
    return await asyncio.wait_for(_replay_in(renderer, browser, rp, url, timeout), timeout + grace)


async def _replay_in(
    renderer: Renderer, browser: Browser, rp: ReplayProxy, url: str, timeout: float
) -> Replay:
    deadline = asyncio.get_running_loop().time() + timeout
    page = await rp.page_in(browser)
    page.begin()
    behaviours = None
    done = False
    try:
        behaviours, errors = renderer.watch(page, url)
        await page.load(url, deadline, behaviours.prepare)
        tab = cast("TabWorker", _ReplayTab(rp.proxy))
        await renderer.behave(browser, page.session, tab, deadline, behaviours, REPLAY_IDLE_S)
        page.check()
        text = await renderer.evaluate(browser, page.session, TEXT_JS)
        # the viewport only, at the top as at capture: the capture's viewport screenshot is
        # what it is compared with (crawler/rendering/qa_compare.py)
        shots = await renderer.screenshots(browser, page.session, full=False)
        done = True
        return Replay(
            str(text or ""), errors.messages, shots, len(rp.asked), list(rp.missing.values())
        )
    finally:
        if not done:
            # a hung page answers nothing: no clean-up through it (CDP's 30 s time-out); the
            # caller kills the tab's browser, and its replay context with it
            browser.forget(page.session)
            rp.page = None
        else:
            if behaviours is not None:
                await behaviours.finish()
            if not await page.end():
                await rp.drop_page()
