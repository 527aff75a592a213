"""A tab worker of the renderer (crawler/rendering/renderer.py): one Chromium process, its recording
proxy listener, its browser context and page target, and the page it renders now.

Why a class of its own: a tab is the unit that crashes, hangs and is restarted (a process
kill); what a page does in it is the renderer's. A tab keeps its browser context and page
target from page to page until its browser restarts (``render_pages_per_tab``, memory, a
crash): a page of the same site then reuses the renderer process of the one before, where a
context and a target per page started one or two renderer processes per page (most of the
browser's CPU per page in bench/render).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from crawler.rendering.cdp import Browser, CdpError
from crawler.rendering.model import RenderSettings
from crawler.rendering.proxy import ProxyRequest, ProxyResponse, TabProxy, ranged
from crawler.rendering.tls import JobCA

log = logging.getLogger(__name__)

# the browser-wide proxy: the discard port of loopback, so that only pages' contexts reach the
# net (through their tab's recording proxy) and the browser's own update checks go nowhere
BLACK_HOLE_PROXY = "http://127.0.0.1:9"
LEAVE_TIMEOUT_S = 5.0  # for the blank page a tab leaves each page for to load


@dataclass
class RenderPage:
    """The page a tab is rendering: its frontier entry and its captured response."""

    key: str
    hf: dict[str, Any]
    response: ProxyResponse
    served: dict[str, ProxyResponse] = field(default_factory=dict)
    resources: int = 0


class TabOwner(Protocol):
    """What a tab needs of the renderer (crawler/rendering/renderer.py)."""

    t: RenderSettings
    profiles: Path
    ca: JobCA

    async def fetch_for(self, page: RenderPage, req: ProxyRequest) -> ProxyResponse: ...


class TabWorker:
    """One tab worker: a Chromium process, its proxy listener, the page it renders."""

    def __init__(self, renderer: TabOwner, index: int) -> None:
        self.renderer = renderer
        self.index = index
        self.proxy = TabProxy(self.handle, renderer.ca.server_context)
        self.browser: Browser | None = None
        self.page: RenderPage | None = None
        self.pages_done = 0
        self.context_id = ""  # kept from page to page until the browser restarts
        self.session = ""

    async def ensure_browser(self, check_memory: bool = True) -> Browser:
        """The tab's browser, restarted first when it died, rendered ``render_pages_per_tab``
        pages or (unless not ``check_memory``: a QA replay between two captures, each of
        which checks it; the reading walks /proc) holds more than ``render_max_memory_mb``."""
        r = self.renderer
        restart = self.browser is not None and (
            not self.browser.alive
            or self.pages_done >= r.t.render_pages_per_tab
            or (check_memory and await self.browser.memory_kb() > r.t.render_max_memory_mb * 1024)
        )
        if restart and self.browser is not None:
            log.info(
                "render tab %d: restarting its browser (%d pages)", self.index, self.pages_done
            )
            await self.kill()
        if self.browser is None:
            if not self.proxy.port:
                await self.proxy.start()
            self.browser = Browser(
                BLACK_HOLE_PROXY, user_agent=r.t.user_agent, profile_root=r.profiles
            )
            await self.browser.start()
            assert self.browser.proc is not None
            log.info("render tab %d: browser started (pid %d)", self.index, self.browser.proc.pid)
            self.pages_done = 0
        return self.browser

    async def kill(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        self.browser = None
        self.context_id = self.session = ""

    async def open_page(self) -> tuple[str, str]:
        """The tab's browser context (every request to its recording proxy) and page session,
        made once per browser."""
        assert self.browser is not None
        if not self.session:
            self.context_id = (
                await self.browser.send(
                    "Target.createBrowserContext",
                    # loopback hosts too: Chromium bypasses a proxy for them unless told not to
                    {"proxyServer": self.proxy.address, "proxyBypassList": "<-loopback>"},
                )
            )["browserContextId"]
            self.session = await self.browser.open_tab(self.context_id)
        return self.context_id, self.session

    async def leave_page(self) -> None:
        """The page left for a blank one, so that none of its timers' requests reaches the
        proxy as the next page's; done when the blank page has loaded (any error, or no load
        in time: the browser is restarted before the next page).

        Why wait for its load event, not only the command's answer: Chromium answers
        ``Page.navigate`` before it sends the blank document's ``frameNavigated`` and load
        events, most of the time, and the next page's listeners, added as soon as the tab is
        free, took them for their own page's: a second navigation of the main frame read as a
        behaviour's click leaving the page (``left-page``, the page loaded again and its "load
        more" never clicked: bench/render_qa), a load event before its document's."""
        if self.browser is None or not self.session:
            return
        browser, session = self.browser, self.session
        blank = asyncio.Event()
        navigated: list[str] = []
        crashed: list[str] = []

        def on_event(method: str, params: dict[str, Any]) -> None:
            frame = params.get("frame") or {}
            if method == "Page.frameNavigated" and not frame.get("parentId"):
                navigated.append(str(frame.get("url")))
            elif method == "Page.loadEventFired" and "about:blank" in navigated:
                blank.set()
            elif method in ("Inspector.targetCrashed", "Inspector.detached"):
                crashed.append(str(params.get("reason") or method))
                blank.set()

        browser.listen(session, on_event)
        try:
            await browser.send("Page.navigate", {"url": "about:blank"}, session=session, timeout=5)
            await asyncio.wait_for(blank.wait(), LEAVE_TIMEOUT_S)
        except (CdpError, TimeoutError) as exc:
            log.warning(
                "render tab %d: the page was not left (%s): browser restarted", self.index, exc
            )
            await self.kill()
            return
        finally:
            browser.forget(session)
        if crashed:
            log.warning("render tab %d: crashed leaving its page (%s)", self.index, crashed[0])
            await self.kill()

    async def handle(self, req: ProxyRequest) -> ProxyResponse:
        page = self.page
        if page is None:
            return ProxyResponse(503, reason="No Page")
        return ranged(req, await self.renderer.fetch_for(page, req))


class TabPool(asyncio.Queue[TabWorker]):
    """The renderer's free tabs, handed out the most recently freed with a running browser
    first, then the most recently freed.

    Why not first in, first out: a crawl that renders one page at a time then went round every
    tab, starting one browser per tab (~2 CPU-s each, its profile built from scratch) where
    one already running would do; tabs are still all used when pages wait for one. A tab due
    for its restart (``render_pages_per_tab``, memory) restarts when next taken, as before.
    """

    def _init(self, maxsize: int) -> None:
        self._queue: list[TabWorker] = []

    def _put(self, item: TabWorker) -> None:
        self._queue.append(item)

    def _get(self) -> TabWorker:
        for i in range(len(self._queue) - 1, -1, -1):
            browser = self._queue[i].browser
            if browser is not None and browser.alive:
                return self._queue.pop(i)
        return self._queue.pop()
