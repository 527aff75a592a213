"""The behaviours of one rendered page, in its tab: consent dialog, site-specific scripts,
expanders, "load more" buttons, media fetched and played; each bounded (the template's limits
and the page's deadline) and each action kept for crawl.log and the behaviour report.

Why this order: the consent answer first (what it reveals is what the other behaviours work
on); a site's own script next (the curator knows the site best); expanders before the scroll
(opened panels are scrolled through); "load more" after the scroll (the scroll has loaded what
an infinite list loads by itself, and the button is at the end); media last, when every
``srcset``, ``<picture>`` and lazy source the page will have is in the DOM.

crawler/rendering/renderer.py calls :meth:`PageBehaviours.prepare` before it navigates (the consent script
must be in every new document before the page's own scripts run) and :meth:`before_scroll` /
:meth:`after_scroll` around its scrolling; each waits for the tab's network to settle after
acting (``settle``), so what an action starts is fetched — and captured — before the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.rendering.behaviours.consent import (
    BINDING,
    STORAGE_JS,
    Autoconsent,
    ConsentMemory,
    HostConsent,
    content_script,
    restore_storage_script,
)
from crawler.rendering.behaviours.sites import SiteBehaviour
from crawler.rendering.behaviours.wording import CONSENT_HINTS, LOAD_MORE, consent_words
from crawler.rendering.cdp import CdpError
from crawler.rendering.model import Action
from harvestflow.formats.urls import host_of

if TYPE_CHECKING:
    from crawler.rendering.cdp import Browser
    from crawler.rendering.model import RenderSettings

log = logging.getLogger(__name__)

Settle = Callable[[], Awaitable[None]]
MAX_PLAYED = 20
AUTOFETCH_WAIT_S = 10.0


@functools.cache
def page_js() -> str:
    return (Path(__file__).parent / "page.js").read_text(encoding="utf-8")


class PageBehaviours:
    """Behaviours of one page in one tab (a DevTools session of a browser context)."""

    def __init__(
        self,
        t: RenderSettings,
        browser: Browser,
        session: str,
        context_id: str,
        url: str,
        memory: ConsentMemory,
        sites: list[SiteBehaviour],
    ) -> None:
        self.t = t
        self.browser = browser
        self.session = session
        self.context_id = context_id
        self.url = url
        self.host = host_of(url)
        self.memory = memory
        self.sites = [s for s in sites if s.matches(url)]
        self.actions: list[Action] = []
        self.contexts: dict[int, str] = {}  # execution context → frame id (main worlds)
        self.main_frame = ""
        self.consent = Autoconsent(t.render_consent) if t.render_consent != "none" else None
        self.navigations = 0  # of the main frame (the page's own load is the first)
        self.where = url
        self.left = False  # a click took the page elsewhere (then it is loaded again)
        self.loaded = asyncio.Event()
        self.scripts: list[str] = []  # added to every new document of the tab: removed after

    async def finish(self) -> None:
        """The scripts :meth:`prepare` added removed (the tab renders other pages next)."""
        for identifier in self.scripts:
            with contextlib.suppress(CdpError):
                await self.browser.send(
                    "Page.removeScriptToEvaluateOnNewDocument",
                    {"identifier": identifier},
                    session=self.session,
                )
        self.scripts.clear()

    # --- events ---------------------------------------------------------------------------------
    def on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.frameNavigated":
            frame = params.get("frame") or {}
            if not frame.get("parentId"):
                self.navigations += 1
                self.where = str(frame.get("url") or "")
        elif method == "Page.loadEventFired":
            self.loaded.set()
        elif method == "Runtime.executionContextCreated":
            ctx = params.get("context") or {}
            aux = ctx.get("auxData") or {}
            if aux.get("isDefault"):
                self.contexts[int(ctx["id"])] = str(aux.get("frameId") or "")
        elif method == "Runtime.executionContextDestroyed":
            cid = int(params.get("executionContextId", 0))
            self.contexts.pop(cid, None)
            if self.consent is not None:
                self.consent.forget_context(cid)
        elif method == "Runtime.executionContextsCleared":
            self.contexts.clear()
        elif (
            method == "Runtime.bindingCalled"
            and params.get("name") == BINDING
            and self.consent is not None
        ):
            self.consent.on_message(
                str(params.get("payload") or ""),
                int(params.get("executionContextId", 0)),
                self._reply,
            )

    async def _reply(self, expression: str, context_id: int) -> None:
        with contextlib.suppress(CdpError):
            await self.browser.send(
                "Runtime.evaluate",
                {"expression": expression, "contextId": context_id},
                session=self.session,
            )

    # --- before the page loads ------------------------------------------------------------------
    async def prepare(self) -> None:
        """The consent script in every new document, the host's kept consent state back."""
        if self.consent is None:
            return
        send = self.browser.send
        kept = self.memory.get(self.host)
        if kept is not None:
            if kept.cookies:
                await send(
                    "Storage.setCookies",
                    {"cookies": kept.cookies, "browserContextId": self.context_id},
                )
            if kept.storage:
                added = await send(
                    "Page.addScriptToEvaluateOnNewDocument",
                    {"source": restore_storage_script(kept.storage)},
                    session=self.session,
                )
                self.scripts.append(str(added["identifier"]))
            self.actions.append(Action("consent", "kept", 1, kept.how))
        await send("Runtime.addBinding", {"name": BINDING}, session=self.session)
        added = await send(
            "Page.addScriptToEvaluateOnNewDocument",
            {"source": content_script()},
            session=self.session,
        )
        self.scripts.append(str(added["identifier"]))

    # --- after load -----------------------------------------------------------------------------
    async def before_scroll(self, deadline: float, settle: Settle) -> None:
        await self._consent(deadline, settle)
        for site in self.sites:
            if self._left(deadline) <= 0 or await self._came_back(deadline, settle):
                return
            await self._site(site, deadline, settle)
        if await self._came_back(deadline, settle):
            return
        if self.t.render_max_expanders > 0 and self._left(deadline) > 0:
            opened = await self._call("expand", self.t.render_max_expanders)
            if isinstance(opened, int) and opened > 0:
                self.actions.append(Action("expand", "open", opened))
                await settle()
        await self._came_back(deadline, settle)

    async def after_scroll(self, deadline: float, settle: Settle) -> None:
        if await self._came_back(deadline, settle):
            return
        await self._load_more(deadline, settle)
        if self.t.render_media and self._left(deadline) > 0 and not self.left:
            await self._media(deadline, settle)

    async def _came_back(self, deadline: float, settle: Settle) -> bool:
        """Whether a click took the page to another document (a script's ``location``
        change, a form): then the page is loaded again, so its screenshots and links are its
        own, and the behaviours left are not run (annotation ``left-page``)."""
        if self.left:
            return True
        if self.navigations <= 1:
            return False
        self.left = True
        log.warning("render of %s: a behaviour's click went to %s: back", self.url, self.where)
        self.actions.append(Action("page", "left", 1, self.where))
        self.loaded.clear()
        with contextlib.suppress(CdpError):
            await self.browser.send("Page.navigate", {"url": self.url}, session=self.session)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.loaded.wait(), max(0.1, min(10, self._left(deadline))))
        await settle()
        return True

    # --- the behaviours -------------------------------------------------------------------------
    async def _consent(self, deadline: float, settle: Settle) -> None:
        ac = self.consent
        if ac is None:
            return
        loop = asyncio.get_running_loop()
        until = min(deadline, loop.time() + self.t.render_consent_wait_s)
        while ac.busy and loop.time() < until:
            await asyncio.sleep(0.1)
        mode = self.t.render_consent
        how = ""
        if ac.done and mode != "hide":
            how = ac.done[0]
        elif mode == "hide":
            hidden = 0
            for cid in list(self.contexts):
                n = await self._call("hideConsent", list(CONSENT_HINTS), context_id=cid)
                hidden += n if isinstance(n, int) else 0
            if hidden:
                how = ac.popups[0] if ac.popups else "wording"
        else:
            words = consent_words(mode)
            for cid in list(self.contexts):
                clicked = await self._call("consent", words, list(CONSENT_HINTS), context_id=cid)
                if isinstance(clicked, dict) and clicked.get("clicked"):
                    how = "wording"
                    log.info("consent %s on %s: clicked %r", mode, self.url, clicked["clicked"])
                    break
        if not how:
            return
        self.actions.append(Action("consent", mode, 1, how))
        await settle()
        if mode != "hide":
            await self._keep_consent(how)

    async def _keep_consent(self, how: str) -> None:
        """The context's cookies and the page's localStorage, kept for the host's next pages."""
        try:
            cookies = (
                await self.browser.send("Storage.getCookies", {"browserContextId": self.context_id})
            ).get("cookies", [])
            stored = await self.evaluate(STORAGE_JS)
        except CdpError as exc:
            log.warning("consent state of %s not kept: %s", self.url, exc)
            return
        storage = {}
        if isinstance(stored, list) and len(stored) == 2 and stored[1]:
            storage[str(stored[0])] = [[str(k), str(v)] for k, v in stored[1]]
        self.memory.keep(self.host, HostConsent(how, cookies, storage))

    async def _site(self, site: SiteBehaviour, deadline: float, settle: Settle) -> None:
        timeout = min(site.timeout_s, self._left(deadline)) + 2
        try:
            result = await self.browser.send(
                "Runtime.evaluate",
                {"expression": site.expression(), "returnByValue": True, "awaitPromise": True},
                session=self.session,
                timeout=timeout,
            )
        except CdpError as exc:
            log.warning("site behaviour %s on %s: %s", site.name, self.url, exc)
            self.actions.append(Action("site", "failed", 0, site.name))
            return
        if result.get("exceptionDetails"):
            why = (result["exceptionDetails"].get("exception") or {}).get("description", "")
            log.warning("site behaviour %s on %s threw: %s", site.name, self.url, why[:300])
            self.actions.append(Action("site", "failed", 0, site.name))
        else:
            value = (result.get("result") or {}).get("value")
            count = value if isinstance(value, int) else 1
            self.actions.append(Action("site", "run", count, site.name))
        await settle()

    async def _load_more(self, deadline: float, settle: Settle) -> None:
        """Buttons "load more" / "show more" / next clicked until one loads nothing new (it is
        not clicked again), none is left, or ``render_max_clicks``."""
        clicks = 0
        labels: list[str] = []
        while clicks < self.t.render_max_clicks and self._left(deadline) > 0:
            if await self._came_back(deadline, settle):
                break
            before = await self._call("size")
            clicked = await self._call("loadMore", list(LOAD_MORE))
            if not isinstance(clicked, dict) or not clicked.get("clicked"):
                break
            await settle()
            after = await self._call("size")
            if not isinstance(after, int) or not isinstance(before, int) or after <= before:
                await self._call("exhaust")
                continue
            await self._call("forget")
            clicks += 1
            if clicked["clicked"] not in labels:
                labels.append(str(clicked["clicked"]))
            await self.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            await settle()
        if clicks:
            self.actions.append(Action("load-more", "click", clicks, "|".join(labels)[:80]))

    async def _media(self, deadline: float, settle: Settle) -> None:
        wait_ms = int(max(0.5, min(AUTOFETCH_WAIT_S, self._left(deadline))) * 1000)
        urls = await self._call("autofetch", self.t.render_max_media, wait_ms)
        if isinstance(urls, list) and urls:
            self.actions.append(Action("autofetch", "fetch", len(urls)))
        played = await self._call("play", MAX_PLAYED)
        if isinstance(played, int) and played:
            self.actions.append(Action("play", "play", played))
        if urls or played:
            await settle()
        if played:
            await self._call("pauseAll")

    # --- helpers --------------------------------------------------------------------------------
    @staticmethod
    def _left(deadline: float) -> float:
        return deadline - asyncio.get_running_loop().time()

    async def _call(self, fn: str, *args: Any, context_id: int | None = None) -> Any:
        """One function of page.js with JSON arguments (None if the frame is gone)."""
        expr = f"({page_js()}).{fn}(...{json.dumps(list(args))})"
        return await self.evaluate(expr, context_id)

    async def evaluate(self, expr: str, context_id: int | None = None) -> Any:
        params: dict[str, Any] = {"expression": expr, "returnByValue": True, "awaitPromise": True}
        if context_id is not None:
            params["contextId"] = context_id
        try:
            result = await self.browser.send("Runtime.evaluate", params, session=self.session)
        except CdpError as exc:
            if not self.browser.alive:
                raise
            log.debug("behaviour step on %s: %s", self.url, exc)
            return None
        return (result.get("result") or {}).get("value")
