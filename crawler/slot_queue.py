"""The scheduler's per-host queues, picked in constant time however many hosts wait.

Why not Scrapy's default (``DownloaderAwarePriorityQueue``): its ``pop`` builds the list of
every download slot (host) that has a queued request, with the active downloads of each, to
take the least busy one, and its ``__len__`` (asked by the engine at every step) sums over every
slot too. Both are linear in the number of hosts waiting: nothing on a selective harvest, but
the broad crawl of a national domain has thousands of hosts queued at once, and at 5,000 hosts
the 100,000-URL day spent a third of its crawler's CPU choosing the next request (15 URLs/s).

This queue keeps the same rule — a request of a host with no download under way goes first;
when every waiting host is busy, the least busy one — with a ring of the hosts that have queued
requests: a pop looks at the ring's head, passing busy hosts to the back, and takes the first
idle one. The downloader never has more than ``CONCURRENT_REQUESTS`` requests in its slots, so
at most that many hosts are busy and a pop looks at no more than that many hosts, however many
wait. Hosts take turns (round robin) where Scrapy's queue took them in name order after the
last one served. Within a host, requests keep Scrapy's priority order (one
``ScrapyPriorityQueue`` per host, as in Scrapy's, made by the inherited ``pqfactory``).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.pqueues import DownloaderAwarePriorityQueue

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)


class RoundRobinSlotQueue(DownloaderAwarePriorityQueue):
    """``SCHEDULER_PRIORITY_QUEUE`` of the crawler: idle hosts first, in turn, in O(busy hosts)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.key:
            # a crawl's state is the SQLite frontier (crawler/state.py), never Scrapy's JOBDIR
            raise ValueError("RoundRobinSlotQueue keeps no disk queues: JOBDIR is not supported")
        self._downloader = self.crawler.engine.downloader
        self._ring: deque[str] = deque(self.pqueues)  # hosts with queued requests, in turn
        self._queued = sum(len(q) for q in self.pqueues.values())

    def push(self, request: Request) -> None:
        slot = self._downloader.get_slot_key(request)
        queue = self.pqueues.get(slot)
        if queue is None:
            queue = self.pqueues[slot] = self.pqfactory(slot)
            self._ring.append(slot)
        queue.push(request)
        self._queued += 1

    def _active(self, slot: str) -> int:
        downloader_slot = self._downloader.slots.get(slot)
        return len(downloader_slot.active) if downloader_slot is not None else 0

    def _choose(self) -> str | None:
        """The next host: the first idle one in the ring (busy ones passed to the back), else
        the least busy. Leaves the chosen host at the ring's head."""
        ring = self._ring
        best: str | None = None
        best_active = 0
        for _ in range(len(ring)):
            slot = ring[0]
            active = self._active(slot)
            if active == 0:
                return slot
            if best is None or active < best_active:
                best, best_active = slot, active
            ring.rotate(-1)
        if best is not None:  # every waiting host is busy: at most CONCURRENT_REQUESTS of them
            ring.remove(best)
            ring.appendleft(best)
        return best

    def pop(self) -> Request | None:
        slot = self._choose()
        if slot is None:
            return None
        queue = self.pqueues[slot]
        request = queue.pop()
        self._ring.popleft()
        if request is not None:
            self._queued -= 1
        if len(queue):
            self._ring.append(slot)  # its next request waits for the other hosts' turns
        else:
            del self.pqueues[slot]
            queue.close()
        return request

    def peek(self) -> Request | None:
        slot = self._choose()
        return self.pqueues[slot].peek() if slot is not None else None

    def close(self) -> dict[str, list[int]]:
        self._ring.clear()
        self._queued = 0
        return super().close()

    def __len__(self) -> int:
        return self._queued
