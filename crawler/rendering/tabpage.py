"""One page load in a fresh browser context of a tab's Chromium, through a given proxy: what the
capture (crawler/rendering/renderer.py) and the QA pass's replay (crawler/rendering/qa_pass.py)
both do before their behaviours.

Why a context per load: no cookie, storage or cache of another page leaks into it, and its
proxy (the tab's recording proxy, or its replay proxy) says where its requests go. Disposing of
the context closes the tab.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from crawler.rendering.cdp import Browser, CdpError

Listener = Callable[[str, dict[str, Any]], None]


class TabPage:
    """``async with TabPage(browser, proxy) as page``: a blank tab in a new context."""

    def __init__(self, browser: Browser, proxy_address: str) -> None:
        self.browser = browser
        self.proxy_address = proxy_address
        self.context_id = ""
        self.session = ""
        self.loaded = asyncio.Event()
        self.crashed: list[str] = []

    async def __aenter__(self) -> TabPage:
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
            await self._dispose()
            raise
        self.listen(self._on_event)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session:
            self.browser.forget(self.session)
        await self._dispose()

    async def _dispose(self) -> None:
        with contextlib.suppress(CdpError):
            await self.browser.send(
                "Target.disposeBrowserContext", {"browserContextId": self.context_id}, timeout=5
            )

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.loadEventFired":
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
