"""The scheduler's per-host queues, picked in constant time however many hosts wait.

Why not Scrapy's default (``DownloaderAwarePriorityQueue``): its ``pop`` lists every waiting
host with its active downloads and its ``__len__`` sums every host's queue — linear in the
hosts waiting, which a national crawl counts in thousands (the 100,000-URL day spent a third of
its crawler's CPU there, 15 URLs/s at 5,000 hosts).

Same rule here — a host with no download under way goes first; if every waiting host is busy,
the least busy — over a ring of the hosts with queued requests: a pop passes busy hosts to the
back and takes the first idle one, so it looks at no more than ``CONCURRENT_REQUESTS`` hosts.
Hosts take turns (Scrapy took them in name order). Within a host, Scrapy's priority order.
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
