"""The QA replay's page (crawler/rendering/tabpage.py) in a real headless Chromium: between two
loads its page stays, stilled (timers cleared, document emptied), instead of a navigation to a
blank page."""

from __future__ import annotations

import asyncio

from crawler.rendering.cdp import Browser, find_chromium
from crawler.rendering.proxy import ProxyRequest, ProxyResponse, TabProxy
from crawler.rendering.tabpage import TabPage

# a timer that asks the proxy for a new URL every 50 ms, as a polling page does
TICKING = (
    b"<!doctype html><title>ticking</title><p>ticking</p><script>var n = 0;"
    b" setInterval(function () { fetch('/tick?n=' + (n++)); }, 50);</script>"
)
PLAIN = b"<!doctype html><title>plain</title><p>plain</p><script>fetch('/ran');</script>"


def test_a_page_left_between_loads_asks_nothing_more_and_is_not_navigated_away() -> None:
    asked: list[str] = []

    async def handle(req: ProxyRequest) -> ProxyResponse:
        if not req.url.endswith("/favicon.ico"):  # the browser's own, once per document
            asked.append(req.url.split("/", 3)[3])
        body = TICKING if req.url.endswith("/ticking.html") else PLAIN
        kind = "text/html" if req.url.endswith(".html") else "text/plain"
        return ProxyResponse(200, [("Content-Type", kind), ("Cache-Control", "no-store")], body)

    async def run() -> tuple[list[str], list[str], list[str], list[str]]:
        proxy = TabProxy(handle)
        await proxy.start()
        browser = Browser(None)
        await browser.start()
        documents: list[str] = []  # the main frame's documents, blank ones included
        try:
            page = TabPage(browser, proxy.address)
            await page.open()

            def on_event(method: str, params: dict[str, object]) -> None:
                frame = params.get("frame")
                main = isinstance(frame, dict) and not frame.get("parentId")
                if method == "Page.frameNavigated" and main and isinstance(frame, dict):
                    documents.append(str(frame.get("url")))

            loop = asyncio.get_running_loop()
            page.begin()
            page.listen(on_event)

            async def nothing() -> None:
                return None

            await page.load("http://tab.test/ticking.html", loop.time() + 20, nothing)
            while not any(a.startswith("tick?n=3") for a in asked):
                await asyncio.sleep(0.05)
            assert await page.end()
            await asyncio.sleep(0.2)  # a tick already on its way
            ticked = list(asked)
            await asyncio.sleep(0.5)  # ten more ticks, were its timer running
            after_end = asked[len(ticked) :]
            page.begin()
            page.listen(on_event)
            await page.load("http://tab.test/plain.html", loop.time() + 20, nothing)
            while "ran" not in asked:  # the next page's own scripts run
                await asyncio.sleep(0.05)
            assert await page.end()
            await page.close()
            return ticked, after_end, list(asked), documents
        finally:
            await browser.close()
            await proxy.close()

    find_chromium()
    ticked, after_end, asked, documents = asyncio.run(run())
    assert after_end == [], after_end
    assert asked[len(ticked) :] == ["plain.html", "ran"], asked
    assert documents == ["http://tab.test/ticking.html", "http://tab.test/plain.html"], documents
