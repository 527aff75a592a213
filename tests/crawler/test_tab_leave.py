"""A tab worker's pages one after another in a real headless Chromium (crawler/rendering/tab.py,
``TabWorker.leave_page``): the listeners a page adds after the page before it was left see its
own document only, never the blank page the last one was left for.

Why: Chromium answers ``Page.navigate`` to ``about:blank`` before it sends that document's
``frameNavigated`` and load events, most of the time. The next page's behaviours then counted
two navigations of the main frame, read the second (their own page's) as a click that left
the page, loaded it again and ran nothing after it: no "load more" clicked, and its URLs not
captured (bench/render_qa: the plain render's crawl.log 3 lines short, ``left-page``
on a page with no click at all).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from crawler.rendering.behaviours.consent import ConsentMemory
from crawler.rendering.behaviours.run import PageBehaviours
from crawler.rendering.cdp import find_chromium
from crawler.rendering.chromium_user import profiles_dir
from crawler.rendering.model import RenderSettings
from crawler.rendering.proxy import ProxyRequest, ProxyResponse
from crawler.rendering.tab import RenderPage, TabOwner, TabWorker

PAGES = 12  # Chromium sent the blank page's events late for 2 loads in 3 (probe, 2026-11-30)
PAGE = b"<!doctype html><title>page</title><p>a page</p>"


class Owner:
    """What a tab worker needs of the renderer: settings, a profile folder, the pages' bytes."""

    def __init__(self, profiles: Path) -> None:
        self.t = cast(
            RenderSettings,
            SimpleNamespace(
                render_pages_per_tab=1000,
                render_max_memory_mb=100_000,
                user_agent="",
                render_consent="none",
            ),
        )
        self.profiles = profiles_dir(profiles)  # as the renderer's: reachable by Chromium
        self.ca = SimpleNamespace(server_context=None)

    async def fetch_for(self, page: RenderPage, req: ProxyRequest) -> ProxyResponse:
        kind = "text/html" if req.url.endswith(".html") else "text/plain"
        return ProxyResponse(200, [("Content-Type", kind)], PAGE if kind == "text/html" else b"")


class Watch:
    """The main frame's documents a page's listener sees, and its own load."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.documents: list[str] = []
        self.loaded = asyncio.Event()

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        frame = params.get("frame") or {}
        if method == "Page.frameNavigated" and not frame.get("parentId"):
            self.documents.append(str(frame.get("url")))
        elif method == "Page.loadEventFired" and self.url in self.documents:
            self.loaded.set()


def test_a_pages_listeners_never_see_the_blank_page_the_last_page_was_left_for(
    tmp_path: Path,
) -> None:
    async def run() -> list[tuple[str, list[str], int]]:
        tab = TabWorker(cast(TabOwner, Owner(tmp_path)), 0)
        seen: list[tuple[str, list[str], int]] = []
        try:
            browser = await tab.ensure_browser(check_memory=False)
            context_id, session = await tab.open_page()
            for n in range(PAGES):
                url = f"http://tab.test/{n}.html"
                # as the renderer renders a page: its listeners first, then its navigation
                watch = Watch(url)
                behaviours = PageBehaviours(
                    tab.renderer.t, browser, session, context_id, url, ConsentMemory(), []
                )
                browser.listen(session, watch.on_event)
                browser.listen(session, behaviours.on_event)
                tab.page = RenderPage(url, {}, ProxyResponse(200))
                await browser.send("Page.enable", session=session)
                await browser.send("Page.navigate", {"url": url}, session=session)
                await asyncio.wait_for(watch.loaded.wait(), 20)
                browser.forget(session)
                tab.page = None
                seen.append((url, watch.documents, behaviours.navigations))
                await tab.leave_page()
                assert tab.browser is browser, "the tab's browser was killed leaving a page"
            return seen
        finally:
            await tab.kill()
            await tab.proxy.close()
            shutil.rmtree(tab.renderer.profiles, ignore_errors=True)

    find_chromium()
    for url, documents, navigations in asyncio.run(run()):
        assert documents == [url], (url, documents)
        assert navigations == 1, (url, navigations)
