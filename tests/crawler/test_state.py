"""CrawlState's queued URLs per host (the progress line's busiest queues, the hosts report):
right after adds and finishes, and read from the database once, not on every progress tick."""

from __future__ import annotations

from pathlib import Path

from crawler.state import CrawlState, FrontierState


def _add(state: CrawlState, url: str, status: int = FrontierState.QUEUED) -> None:
    state.add(url, url, "L", None, None, None, "example.org", status)


def test_queued_by_host_follows_adds_and_finishes(tmp_path: Path) -> None:
    state = CrawlState(tmp_path / "crawl.sqlite")
    for i in range(3):
        _add(state, f"http://a.example/{i}")
    _add(state, "http://b.example/0")
    assert state.queued_by_host() == {"a.example": 3, "b.example": 1}
    _add(state, "http://b.example/1")
    _add(state, "http://c.example/refused", FrontierState.REFUSED)
    state.finish("http://a.example/0", FrontierState.DONE, 200, 10, True)
    state.finish("http://b.example/0", FrontierState.FAILED, -2, 0, False)
    state.finish("http://b.example/0", FrontierState.FAILED, -2, 0, False)  # twice: counted once
    state.finish("http://c.example/refused", FrontierState.REFUSED, -9998, 0, False)
    assert state.queued_by_host() == {"a.example": 2, "b.example": 1}
    state.finish("http://b.example/1", FrontierState.DONE, 200, 10, True)
    assert state.queued_by_host() == {"a.example": 2}
    state.close()
    # the same counts from the rows on disk
    assert CrawlState(tmp_path / "crawl.sqlite").queued_by_host() == {"a.example": 2}


def test_queued_by_host_reads_the_frontier_once(tmp_path: Path) -> None:
    state = CrawlState(tmp_path / "crawl.sqlite")
    for i in range(50):
        _add(state, f"http://h{i % 5}.example/{i}")
    statements: list[str] = []
    state.db.set_trace_callback(statements.append)
    state.queued_by_host()
    first = len(statements)
    for _ in range(10):  # ten progress ticks
        state.queued_by_host()
    assert first == 1
    assert len(statements) == first  # no scan of the queued rows per tick
