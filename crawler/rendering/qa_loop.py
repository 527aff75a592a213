"""The QA pass of a rendered page, from its capture to its score: replayed and compared, its
missing URLs fetched in the same job (template ``qa_patch``), checked once more.

Why here, after the page's capture and in the crawl's own tabs (not a second crawl): the page's
records are written, its tab pool is warm, and the page's own time is bounded by the template's
``qa_page_budget_s`` (replay, patch and second check together). What the capture saw (its DOM
text, JavaScript errors, viewport screenshot) is kept before the check, in the state's meta
table (``qa:<key>``) and ``reports/qa-shots/``: a crawler killed during a QA pass finds the
entry on resume and finishes the pass from the job's records, capturing nothing again.

The patch: a missing URL never seen by the job is decided like a link of the page (hop ``E``,
scope, budgets, robots) and fetched ahead of the frontier; one whose fetch failed is fetched
once more; one the crawl refused stays refused. Their crawl.log lines say ``qa-patch``. When
anything was fetched, the page is checked again once; what is still missing then is left for
the curator's patch harvest (the job's missing URLs, harvestflow.contracts.qa_report).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler import state as st
from crawler.rendering.cdp import CdpError
from crawler.rendering.proxy import ProxyResponse
from crawler.rendering.qa_compare import new_errors, pixel_diff_share, score, text_similarity
from crawler.rendering.qa_pass import ReplayProxy, replay
from crawler.state import BROWSER_PRIORITY
from harvestflow.contracts.qa_report import (
    QA_SHOTS,
    PageCheck,
    shot_names,
    write_check,
    write_patches,
)
from harvestflow.formats.urls import canonical_key

if TYPE_CHECKING:
    import scrapy

    from crawler.context import CrawlContext
    from crawler.rendering.model import RenderOutcome
    from crawler.rendering.renderer import Renderer

log = logging.getLogger(__name__)

PENDING = "qa:"  # state meta: a page whose QA pass is to do
CHECKED = "harvestflow/qa/checked"  # crawler.stats: page checks done
CHECK_FAILED = "harvestflow/qa/failed"  # ...cut by a crashed or hung tab (not scored)
PATCHED = "harvestflow/qa/patched"  # missing URLs fetched with a 2xx/3xx answer
MAX_PATCH = 100  # missing URLs of one page fetched by the patch (the rest left to the curator)


@dataclass
class Seen:
    """What the capture of a page saw, kept until its QA pass is done."""

    url: str
    hf: dict[str, Any]
    text: str
    errors: list[str] = field(default_factory=list)


class PageQa:
    """The job's QA passes: one per rendered page, in the renderer's tabs."""

    def __init__(self, ctx: CrawlContext, renderer: Renderer, crawler: Any) -> None:
        self.ctx = ctx
        self.renderer = renderer
        self.crawler = crawler
        self.s = renderer.qa
        self.shots = ctx.jobdir.reports / QA_SHOTS
        self.proxies: dict[int, ReplayProxy] = {}  # tab index → its replay proxy

    # --- before the pass: what the capture saw, kept ------------------------------------------
    def keep(self, url: str, hf: dict[str, Any], outcome: RenderOutcome) -> str | None:
        """The capture's text, errors and viewport screenshot (at the top, after its
        behaviours) kept for the page's pass (the pending entry's key), or None when the page
        has no screenshot to compare."""
        view = next((s.png for s in outcome.screenshots if s.kind == "viewport"), None)
        if view is None:
            return None
        self.shots.mkdir(parents=True, exist_ok=True)
        capture_name, _ = shot_names(url, 1)
        (self.shots / capture_name).write_bytes(view)
        key = PENDING + hf["key"]
        entry = {"url": url, "hf": hf, "text": outcome.text, "errors": outcome.js_errors}
        self.ctx.state.begin()
        self.ctx.state.set_meta(key, json.dumps(entry))
        self.ctx.state.commit()
        return key

    def pending(self) -> list[str]:
        """The pending entries a crash left (on resume)."""
        rows = self.ctx.state.db.execute(
            "SELECT key FROM meta WHERE key LIKE ? ORDER BY key", (PENDING + "%",)
        ).fetchall()
        return [str(r[0]) for r in rows]

    # --- the pass -----------------------------------------------------------------------------
    async def run(self, entry_key: str) -> None:
        """The page's pass: check, patch, check again; its report lines; the entry removed."""
        raw = self.ctx.state.get_meta(entry_key)
        try:
            data = json.loads(raw or "")
            seen = Seen(data["url"], data["hf"], str(data["text"]), list(data["errors"]))
        except (ValueError, KeyError, TypeError) as exc:
            log.error("QA entry %s unreadable (%s): left out", entry_key, exc)
            self._done(entry_key)
            return
        await self._pass(seen)
        self._done(entry_key)

    async def _pass(self, seen: Seen) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.s.qa_page_budget_s
        first = await self._check(seen, 1, deadline)
        if first is None:
            return
        write_check(self.ctx.jobdir.reports, first)
        if not (self.s.qa_patch and first.missing):
            return
        patched = await self._patch(seen, first.missing, deadline)
        write_patches(self.ctx.jobdir.reports, seen.url, 1, patched)
        fetched = sum(1 for w in patched.values() if w.startswith("patched:"))
        self.crawler.stats.inc_value(PATCHED, fetched)
        if not fetched:
            return
        if loop.time() >= deadline:
            log.info("QA of %s: its time is spent, not checked again", seen.url)
            return
        second = await self._check(seen, 2, deadline)
        if second is not None:
            second.patched_count = fetched
            write_check(self.ctx.jobdir.reports, second)

    async def _check(self, seen: Seen, check: int, deadline: float) -> PageCheck | None:
        """One replay of the page compared with its capture (None: the tab failed)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        free = self.renderer.pool()
        tab = await free.get()
        try:
            rp = self.proxies.get(tab.index)
            if rp is None:
                rp = self.proxies[tab.index] = ReplayProxy(self.renderer)
            got = await replay(self.renderer, tab, rp, seen.url, max(deadline - started, 1.0))
        except (CdpError, TimeoutError, OSError) as exc:
            log.warning("QA of %s: check %d failed, not scored: %s", seen.url, check, exc)
            self.crawler.stats.inc_value(CHECK_FAILED)
            await tab.kill()  # a hung or crashed tab is never reused
            return None
        finally:
            free.put_nowait(tab)
        capture_name, replay_name = shot_names(seen.url, check)
        view = got.shot("viewport") or b""
        (self.shots / replay_name).write_bytes(view)
        capture_png = (self.shots / capture_name).read_bytes()
        if not view:
            pixel = 1.0
        elif view == capture_png:  # the same pixels, encoded by the same browser: nothing to decode
            pixel = 0.0
        else:  # Pillow's work off the event loop: the crawl goes on meanwhile
            pixel = await asyncio.to_thread(pixel_diff_share, capture_png, view)
        text = text_similarity(seen.text, got.text)
        errors = new_errors(seen.errors, got.errors)
        for message in errors:
            log.info("QA of %s: replay error not seen at capture: %s", seen.url, message)
        self.crawler.stats.inc_value(CHECKED)
        return PageCheck(
            seen.url,
            check,
            score(got.requests, len(got.missing), pixel, text, len(errors)),
            pixel,
            text,
            got.requests,
            got.missing,
            len(errors),
            seconds=loop.time() - started,
            shots=f"{capture_name},{replay_name}",
        )

    # --- the patch ----------------------------------------------------------------------------
    async def _patch(self, seen: Seen, urls: list[str], deadline: float) -> dict[str, str]:
        """Missing URLs fetched in the job where they may be: URL → what came of it."""
        out: dict[str, str] = {}
        waiting: dict[str, asyncio.Future[ProxyResponse]] = {}
        for url in urls[MAX_PATCH:]:
            out[url] = "not-patched:too-many"
        for url in urls[:MAX_PATCH]:
            request, why = self._patch_request(url, seen.hf)
            if request is None:
                out[url] = f"not-patched:{why}"
                continue
            fut: asyncio.Future[ProxyResponse] = asyncio.get_running_loop().create_future()
            request = request.replace(priority=BROWSER_PRIORITY)
            request.meta["hf_browser"] = fut  # handed back by the spider once captured
            request.meta["hf_qa_patch"] = True  # its crawl.log line says qa-patch
            self.crawler.engine.crawl(request)
            waiting[url] = fut
        if waiting:
            left = max(deadline - asyncio.get_running_loop().time(), 1.0)
            await asyncio.wait([asyncio.shield(f) for f in waiting.values()], timeout=left)
        for url, fut in waiting.items():
            if not fut.done():
                out[url] = "not-patched:timeout"  # fetched on, but not waited for
            elif fut.result().status < 400:
                out[url] = f"patched:{fut.result().status}"
            else:
                out[url] = f"not-patched:{fut.result().status}"
        return out

    def _patch_request(self, url: str, hf: dict[str, Any]) -> tuple[scrapy.Request | None, str]:
        ctx = self.ctx
        try:
            key = canonical_key(url)
        except ValueError:
            return None, "bad-url"
        if key not in ctx.state.seen:
            ctx.state.begin()
            request = ctx.frontier.consider(url, "E", "qa-patch", hf, tag="qa-patch")
            ctx.frontier.commit()
            if request is None:
                handed = self._state(key) == st.FrontierState.HANDED_OFF
                return None, "other-partition" if handed else "refused"
            ctx.browser_claimed.add(key)
            return request, ""
        row = ctx.state.db.execute(
            "SELECT status, hops, via, seed, context FROM urls WHERE key=?", (key,)
        ).fetchone()
        status = None if row is None else int(row[0])
        if row is None or status != st.FrontierState.FAILED:
            names = {
                st.FrontierState.REFUSED: "refused",
                st.FrontierState.DONE: "captured",
                st.FrontierState.QUEUED: "queued",
                st.FrontierState.HANDED_OFF: "other-partition",
            }
            return None, names.get(status, "seen") if status is not None else "seen"  # type: ignore[call-overload]
        # fetched and failed (connection, timeout...): once more, as the patch harvest would
        return ctx.requests.make(url, key, row[1], row[2], row[3], row[4]), ""

    def _state(self, key: str) -> int | None:
        row = self.ctx.state.db.execute("SELECT status FROM urls WHERE key=?", (key,)).fetchone()
        return None if row is None else int(row[0])

    # --- after --------------------------------------------------------------------------------
    def _done(self, entry_key: str) -> None:
        self.ctx.state.begin()
        self.ctx.state.db.execute("DELETE FROM meta WHERE key=?", (entry_key,))
        self.ctx.state.commit()

    async def close(self) -> None:
        for rp in self.proxies.values():
            await rp.proxy.close()
