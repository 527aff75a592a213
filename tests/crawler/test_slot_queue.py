"""The crawler's per-host queue: idle hosts first and in turn, the least busy when all are busy,
and a pop that looks only at busy hosts however many wait (a national crawl queues thousands).

The downloader is a stand-in holding what the queue reads of Scrapy's (its slots' active
requests, the slot key of a request); the per-host queues are Scrapy's own.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.settings import Settings
from scrapy.squeues import FifoMemoryQueue

from crawler.slot_queue import RoundRobinSlotQueue


class CountingSlots(dict):
    """The downloader's slots; counts the lookups a pop makes."""

    lookups = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.lookups += 1
        return super().get(key, default)


class Downloader:
    def __init__(self) -> None:
        self.slots = CountingSlots()

    def get_slot_key(self, request: Request) -> str:
        return urlsplit(request.url).hostname or ""

    def busy(self, host: str, active: int) -> None:
        self.slots[host] = SimpleNamespace(active={object() for _ in range(active)})


def _queue() -> tuple[RoundRobinSlotQueue, Downloader]:
    downloader = Downloader()
    crawler = SimpleNamespace(
        settings=Settings({"CONCURRENT_REQUESTS_PER_IP": 0}),
        engine=SimpleNamespace(downloader=downloader),
        stats=None,
    )
    queue = RoundRobinSlotQueue.from_crawler(crawler, FifoMemoryQueue, "")
    return queue, downloader


def _host(request: Request | None) -> str:
    assert request is not None
    return urlsplit(request.url).hostname or ""


def test_an_idle_host_goes_before_a_busy_one() -> None:
    queue, downloader = _queue()
    queue.push(Request("http://busy.test/1"))
    queue.push(Request("http://idle.test/1"))
    downloader.busy("busy.test", 2)
    assert _host(queue.peek()) == "idle.test"
    assert _host(queue.pop()) == "idle.test"
    assert _host(queue.pop()) == "busy.test"
    assert queue.pop() is None


def test_idle_hosts_take_turns() -> None:
    queue, _ = _queue()
    for host in ("a.test", "b.test", "c.test"):
        for i in range(2):
            queue.push(Request(f"http://{host}/{i}"))
    assert [_host(queue.pop()) for _ in range(6)] == ["a.test", "b.test", "c.test"] * 2


def test_when_every_waiting_host_is_busy_the_least_busy_goes_first() -> None:
    queue, downloader = _queue()
    for host, active in (("a.test", 3), ("b.test", 1), ("c.test", 2)):
        queue.push(Request(f"http://{host}/"))
        downloader.busy(host, active)
    assert [_host(queue.pop()) for _ in range(3)] == ["b.test", "c.test", "a.test"]


def test_a_pop_looks_only_at_busy_hosts_however_many_wait() -> None:
    queue, downloader = _queue()
    busy = [f"busy{i}.test" for i in range(16)]
    for host in busy + [f"idle{i}.test" for i in range(5000)]:
        queue.push(Request(f"http://{host}/"))
    for host in busy:
        downloader.busy(host, 1)
    for _ in range(100):
        downloader.slots.lookups = 0
        assert _host(queue.pop()).startswith("idle")
        assert downloader.slots.lookups <= len(busy) + 1


def test_length_counts_requests_and_a_host_keeps_its_priority_order() -> None:
    queue, _ = _queue()
    queue.push(Request("http://a.test/low", priority=-10))
    queue.push(Request("http://a.test/high", priority=5))
    queue.push(Request("http://b.test/", priority=0))
    assert len(queue) == 3
    assert queue.pop().url == "http://a.test/high"  # type: ignore[union-attr]
    assert len(queue) == 2
    assert queue.pop().url == "http://b.test/"  # type: ignore[union-attr]
    assert queue.pop().url == "http://a.test/low"  # type: ignore[union-attr]
    assert len(queue) == 0 and "a.test" not in queue
