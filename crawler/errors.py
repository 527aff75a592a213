"""Exceptions that stop a fetch, carrying the Heritrix status code crawl.log must show.

Why subclasses of Scrapy's IgnoreRequest: Scrapy routes them to the request's errback without
logging a stack trace, and the errback finds the code and annotation right on the exception.
"""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest

from crawler import state as st
from harvestflow.formats.fetch_status import FetchStatus


class Refused(IgnoreRequest):
    """A fetch the crawler decided not to make (or to stop making)."""

    status: int = FetchStatus.BLOCKED_BY_USER
    final_state: int = st.FrontierState.REFUSED  # the frontier state the URL ends in

    def __init__(self, annotation: str, status: int | None = None) -> None:
        super().__init__(annotation)
        self.annotation = annotation
        if status is not None:
            self.status = status


class RobotsExcluded(Refused):
    status = FetchStatus.ROBOTS_PRECLUDED

    def __init__(self) -> None:
        super().__init__("robotExcluded")


class QuotaExceeded(Refused):
    status = FetchStatus.BLOCKED_BY_QUOTA


class AddressRefused(Refused):
    """The host is (or resolves to) a loopback, private, link-local or metadata address."""

    status = FetchStatus.BLOCKED_BY_CUSTOM_PROCESSOR


class HeaderTooLarge(Refused):
    """The response's header section passed the template's ``max_header_bytes``: the
    connection was dropped. A failure of the fetch (not a disregard), and not retried (the
    same server would send the same headers)."""

    status = FetchStatus.CONNECT_LOST
    final_state = st.FrontierState.FAILED

    def __init__(self) -> None:
        super().__init__("err=header-too-large")


class FetchedByBrowser(IgnoreRequest):
    """A queued request whose URL a rendering page's browser asked for first: that fetch (its
    records and crawl.log line) is the URL's capture, so this one is dropped without a line
    (one capture per URL per job; crawler/rendering/renderer.py)."""
