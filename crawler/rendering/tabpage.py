"""A page of its own browser context in a tab's Chromium, through a given proxy: what the QA
pass's replay (crawler/rendering/qa_pass.py) loads its pages in, one after another.

Why a context of its own, kept from load to load: no cookie, storage or cache of the capture's
context leaks into the replay, and its proxy (the tab's replay proxy) says where its requests
go; kept while its browser lives, as the tab's capture context is (crawler/rendering/tab.py),
because a new context and target per load started a renderer process per replayed page, most
of the QA pass's browser CPU (bench/render_qa). Between loads the page stays, stilled and its
listeners dropped, until the next load replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from crawler.rendering.cdp import Browser, CdpError

Listener = Callable[[str, dict[str, Any]], None]
# a page left between loads made still (see TabPage.end): each step on its own (a page may have
# replaced any of these functions), the timers' ids it clears bounded
STILL_JS = """(() => {
  const steps = [
    () => window.stop(),
    () => {
      const last = Math.max(setTimeout(() => {}, 0), requestAnimationFrame(() => {}));
      for (let i = Math.max(0, last - 100000); i <= last; i++) {
        clearTimeout(i); clearInterval(i); cancelAnimationFrame(i);
      }
    },
    () => document.querySelectorAll('video, audio').forEach((m) => m.pause()),
    () => document.documentElement && document.documentElement.remove(),
  ];
  for (const step of steps) { try { step(); } catch (e) {} }
})()"""


class TabPage:
    """A blank tab in a new browser context: :meth:`open` once, then :meth:`begin`,
    :meth:`load` … :meth:`end` per page, :meth:`close` when done."""

    def __init__(self, browser: Browser, proxy_address: str) -> None:
        self.browser = browser
        self.proxy_address = proxy_address
        self.context_id = ""
        self.session = ""
        self.loaded = asyncio.Event()
        self.crashed: list[str] = []
        self.navigated = ""  # the main frame's document of this load (not the blank one)

    async def open(self) -> None:
        self.context_id = (
            await self.browser.send(
                "Target.createBrowserContext",
                # loopback hosts too: Chromium bypasses a proxy for them unless told not to
                {"proxyServer": self.proxy_address, "proxyBypassList": "<-loopback>"},
            )
        )["browserContextId"]
        try:
            self.session = await self.browser.open_tab(self.context_id)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """The context disposed of (its tab closed with it)."""
        if self.session:
            self.browser.forget(self.session)
        with contextlib.suppress(CdpError):
            await self.browser.send(
                "Target.disposeBrowserContext", {"browserContextId": self.context_id}, timeout=5
            )

    def begin(self) -> None:
        """A new load: what the last one saw forgotten, the page's own listener back."""
        self.browser.forget(self.session)
        self.loaded.clear()
        self.crashed.clear()
        self.navigated = ""
        self.listen(self._on_event)

    async def end(self) -> bool:
        """The page stilled and its listeners dropped (False: the tab did not answer, its
        context is to be closed): its timers and animation frames cleared, its loads stopped,
        its document emptied (no media, animation or painting left), so that it asks nothing
        more until the next load replaces it. Not a navigation to a blank page: that was a
        seventh of a replay's browser CPU (bench/render_qa). A request it still makes is the
        replay proxy's to tell from the next page's (crawler/rendering/qa_pass.py)."""
        self.browser.forget(self.session)
        try:
            await self.browser.send(
                "Runtime.evaluate", {"expression": STILL_JS}, session=self.session, timeout=5
            )
        except CdpError:
            return False
        return not self.crashed

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.frameNavigated":
            frame = params.get("frame") or {}
            if not frame.get("parentId") and frame.get("url") != "about:blank":
                self.navigated = str(frame.get("url"))
        elif method == "Page.loadEventFired" and self.navigated:
            self.loaded.set()
        elif method in ("Inspector.targetCrashed", "Inspector.detached"):
            self.crashed.append(params.get("reason") or method)
            self.loaded.set()

    def listen(self, listener: Listener) -> None:
        self.browser.listen(self.session, listener)

    def check(self) -> None:
        """CdpError when the tab crashed."""
        if self.crashed:
            raise CdpError(f"tab crashed: {self.crashed[0]}")

    async def load(self, url: str, deadline: float, prepare: Callable[[], Awaitable[None]]) -> None:
        """Page and Runtime events on (the listeners added before see the first contexts),
        ``prepare`` (scripts for every new document), then ``url`` until its load event or
        ``deadline``; CdpError when the tab crashed."""
        loop = asyncio.get_running_loop()
        await self.browser.send("Page.enable", session=self.session)
        await self.browser.send("Runtime.enable", session=self.session)
        await prepare()
        await self.browser.send("Page.navigate", {"url": url}, session=self.session)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.loaded.wait(), max(deadline - loop.time(), 0.1))
        self.check()
