"""Failures of our own platform (harvest DB, broker, S3, our disk), told apart from a site's.

Why: a fetch that failed because *we* could not reach PostgreSQL or write our own files says
nothing about the site. Logged as a fetch result (``-5 err=OperationalError``) it would mark the
URL done-and-failed, and a crawl ending soon after would call itself ``complete`` with pages
missing. A platform failure instead leaves the URL queued in the frontier, pauses the fetch
that needed the service for a bounded time (``[crawler] platform_outage_s``), and past that
bound ends the crawl ``unfinished`` so that the crawl task fails and its retry resumes it.
"""

from __future__ import annotations

import errno
import logging
import shutil
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from scrapy import Request
from scrapy.crawler import Crawler

from crawler import CrawlerError
from crawler.context import context_of
from harvestflow.monitoring import alerts

log = logging.getLogger(__name__)

T = TypeVar("T")

# errors of our own files: the disk (or its quota) full, or the device failing
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
# the crawl's end reason (summary.json "unfinished": not in runner.STATUS_BY_REASON)
PLATFORM_END_REASON = "platform_unavailable"
DEFAULT_OUTAGE_S = 120.0
DEFAULT_MIN_FREE_DISK_MB = 256


class PlatformUnavailable(CrawlerError, RuntimeError):
    """A service of ours stayed unreachable longer than ``[crawler] platform_outage_s``."""


def _platform_types() -> tuple[type[BaseException], ...]:
    """The exception classes of our services' clients that mean "the service is unreachable"."""
    found: list[type[BaseException]] = [PlatformUnavailable]
    import sqlalchemy.exc as sx

    found += [sx.OperationalError, sx.InterfaceError, sx.TimeoutError]
    try:
        import redis.exceptions as rx

        found += [rx.ConnectionError, rx.TimeoutError]
    except ImportError:  # pragma: no cover - redis is a dependency of the celery executor only
        pass
    try:
        import botocore.exceptions as bx

        found += [bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ReadTimeoutError]
    except ImportError:  # pragma: no cover
        pass
    return tuple(found)


_TYPES: tuple[type[BaseException], ...] | None = None


def is_platform_failure(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a failure of our platform."""
    global _TYPES
    if _TYPES is None:
        _TYPES = _platform_types()
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, _TYPES):
            return True
        if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
            return True
        # the frontier (SQLite) on a full or failing disk reports it in words only
        if isinstance(exc, sqlite3.OperationalError) and any(
            w in str(exc) for w in ("disk is full", "disk I/O error")
        ):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def outage_s() -> float:
    """``[crawler] platform_outage_s``: how long a fetch waits for a service of ours to return."""
    from harvestflow.settings import get_settings

    return float(get_settings().get("crawler", "platform_outage_s", DEFAULT_OUTAGE_S))


def ride_out(what: str, call: Callable[[], T], bound_s: float) -> T:
    """``call()``, called again while it fails with a platform failure, for up to ``bound_s``.

    Blocking (run it in a thread, never on the reactor). Waits 0.5 s, doubling up to 5 s,
    between tries; past the bound raises :class:`PlatformUnavailable` from the last error.
    """
    deadline = time.monotonic() + bound_s
    pause = 0.5
    warned = False
    while True:
        try:
            result = call()
        except Exception as exc:
            if not is_platform_failure(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise PlatformUnavailable(
                    f"{what}: our service still failing after {bound_s:.0f} s: {exc}"
                ) from exc
            if not warned:
                log.warning("%s: platform failure, pausing until it returns: %s", what, exc)
                warned = True
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
            continue
        if warned:
            log.warning("%s: our service is back", what)
        return result


def min_free_disk_mb() -> float:
    """``[crawler] min_free_disk_mb``: the free space on the job's disk below which no fetch
    starts (room left for the crawl to end cleanly: summary, reports, metadata WARC)."""
    from harvestflow.settings import get_settings

    raw = get_settings().get("crawler", "min_free_disk_mb", DEFAULT_MIN_FREE_DISK_MB)
    return float(raw)


class DiskSpaceGuard:
    """Downloader middleware (before the host lease): no fetch starts on a nearly full disk.

    Why before the fetch: a WARC, crawl.log or frontier write failing on a full disk would
    leave a capture half recorded (written but not marked done, fetched again on resume). With
    the job's disk below ``min_free_disk_mb`` the fetch is a platform failure instead: the URL
    stays queued and the crawl stops ``unfinished`` while there is room to end it cleanly; the
    retry, once space is freed, resumes it. The first refusal sends the ``crawl_disk_full``
    alert (``[monitoring] webhook_url``): the job waits, dormant, for a person to free space.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.ctx = context_of(crawler)
        self.min_free = min_free_disk_mb() * 1024 * 1024
        self.paths = {self.ctx.jobdir.path, self.ctx.jobdir.warcs}
        self.alerted = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DiskSpaceGuard:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        for path in self.paths:
            free = shutil.disk_usage(path).free
            if free < self.min_free:
                message = (
                    f"{path}: {free // (1024 * 1024)} MB free, below [crawler] min_free_disk_mb"
                    f" ({self.min_free // (1024 * 1024):.0f} MB); free space and resume the job"
                )
                self._alert(path, free, message)
                raise PlatformUnavailable(message)

    def _alert(self, path: object, free: int, message: str) -> None:
        """Once per crawl (blocking for at most ``webhook_timeout_s``: the crawl is stopping)."""
        if self.alerted:
            return
        self.alerted = True
        job = self.ctx.spec.job_id
        alerts.send(
            alerts.Alert(
                alerts.CRAWL_DISK_FULL,
                f"crawl job {job} stopped taking URLs (dormant, resumable): {message}",
                {
                    "job_id": job,
                    "path": str(path),
                    "free_bytes": free,
                    "min_free_bytes": self.min_free,
                },
            )
        )
