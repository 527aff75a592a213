"""The crawl's headless Chromium (crawler/rendering/cdp.py) as it starts: nothing of a browser
window's own WebUI, whose renderer processes a headless browser would pay for and never show."""

from __future__ import annotations

import asyncio

from crawler.rendering.cdp import Browser, find_chromium


def test_a_started_browser_runs_no_window_webui_only_its_blank_tab() -> None:
    find_chromium()  # a clear error if the set-up did not install Chromium

    async def targets() -> list[tuple[str, str]]:
        browser = Browser(None)
        await browser.start()
        try:
            # every kind of target, the browser's own UI included (the default filter hides it)
            found = await browser.send("Target.getTargets", {"filter": [{}]})
        finally:
            await browser.close()
        return [(t["type"], t["url"]) for t in found["targetInfos"]]

    found = asyncio.run(targets())
    # Chromium 156 preloads chrome://omnibox-popup.top-chrome/ (two renderers, ~3 CPU-s a start)
    # unless its features are off; a Chromium that renames them fails here
    assert not [url for _, url in found if url.startswith("chrome://")], found
    assert not [kind for kind, _ in found if kind == "browser_ui"], found
    assert ("page", "about:blank") in found, found
