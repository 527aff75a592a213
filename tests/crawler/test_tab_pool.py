"""The renderer's free tabs (crawler/rendering/tab.py, ``TabPool``): a page takes the tab whose
browser is already running, the most recently freed first, so that a crawl rendering one page
at a time keeps one browser instead of starting one per tab."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

from crawler.rendering.cdp import Browser
from crawler.rendering.tab import TabPool, TabWorker


def _tab(index: int, running: bool | None) -> TabWorker:
    """A tab whose browser runs (True), died (False) or was never started (None)."""
    browser = None if running is None else SimpleNamespace(alive=running)
    return cast(TabWorker, SimpleNamespace(index=index, browser=browser))


def _take_all(pool: TabPool) -> list[int]:
    return [pool.get_nowait().index for _ in range(pool.qsize())]


def test_a_tab_with_a_running_browser_is_taken_before_a_more_recently_freed_one_without() -> None:
    pool = TabPool()
    for tab in (_tab(0, True), _tab(1, None), _tab(2, False)):
        pool.put_nowait(tab)
    assert _take_all(pool) == [0, 2, 1]


def test_among_running_browsers_the_most_recently_freed_tab_is_taken_first() -> None:
    pool = TabPool()
    for tab in (_tab(0, True), _tab(1, True), _tab(2, None)):
        pool.put_nowait(tab)
    assert _take_all(pool) == [1, 0, 2]


def test_pages_one_at_a_time_keep_taking_the_same_tab() -> None:
    async def sequential() -> list[int]:
        pool = TabPool()
        tabs = [_tab(i, None) for i in range(3)]
        for tab in reversed(tabs):
            pool.put_nowait(tab)
        taken = []
        for _ in range(4):
            tab = await pool.get()
            if tab.browser is None:  # what ensure_browser does: the tab's browser started
                tab.browser = cast(Browser, SimpleNamespace(alive=True))
            taken.append(tab.index)
            pool.put_nowait(tab)
        return taken

    assert asyncio.run(sequential()) == [0, 0, 0, 0]


def test_a_page_waiting_for_a_tab_gets_the_one_freed() -> None:
    async def waiting() -> tuple[int, int]:
        pool = TabPool()
        first = _tab(0, True)
        pool.put_nowait(first)
        held = await pool.get()
        waiter = asyncio.ensure_future(pool.get())
        await asyncio.sleep(0)
        assert not waiter.done()
        pool.put_nowait(held)
        got = await waiter
        return got.index, pool.qsize()

    assert asyncio.run(waiting()) == (0, 0)
