"""ScheduleOutputMiddleware (a speed change) keeps the crawl's behaviour: a callback's
Requests are scheduled in order, where Scrapy consumed them, and anything else passes on."""

from __future__ import annotations

import asyncio
from typing import Any

import scrapy
from scrapy.http import HtmlResponse

from crawler.spider import ScheduleOutputMiddleware


class _Engine:
    def __init__(self) -> None:
        self.scheduled: list[str] = []

    def crawl(self, request: scrapy.Request) -> None:
        self.scheduled.append(request.url)


class _Crawler:
    def __init__(self) -> None:
        self.engine = _Engine()


def _output() -> list[Any]:
    return [
        scrapy.Request("http://example.org/a"),
        {"an": "item"},
        scrapy.Request("http://example.org/b"),
        scrapy.Request("http://example.org/c"),
    ]


def test_schedule_output_in_order_items_passed_on() -> None:
    crawler: Any = _Crawler()
    mw = ScheduleOutputMiddleware.from_crawler(crawler)
    response = HtmlResponse("http://example.org/", body=b"<html></html>")
    rest = mw.process_spider_output(response, iter(_output()))
    assert crawler.engine.scheduled == []  # lazy: consumed where Scrapy consumes the output
    assert list(rest) == [{"an": "item"}]
    assert crawler.engine.scheduled == [f"http://example.org/{c}" for c in "abc"]


def test_schedule_output_async() -> None:
    crawler: Any = _Crawler()
    mw = ScheduleOutputMiddleware.from_crawler(crawler)
    response = HtmlResponse("http://example.org/", body=b"<html></html>")

    async def agen() -> Any:
        for o in _output():
            yield o

    async def collect() -> list[Any]:
        return [o async for o in mw.process_spider_output_async(response, agen())]

    assert asyncio.run(collect()) == [{"an": "item"}]
    assert crawler.engine.scheduled == [f"http://example.org/{c}" for c in "abc"]
