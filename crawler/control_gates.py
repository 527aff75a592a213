"""The downloader middlewares an operator's controls act through: filters and the pause gate.

Why middlewares: a filter must refuse a URL already queued as well as one found later, so it
checks each frontier request as it leaves the queue (Heritrix's -5001, ``filter:<name>`` in
crawl.log); a pause must keep every request not yet on the wire from reaching a host's send
queue. :class:`Controls` is what they share with the control extension (:mod:`crawler.control`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import Request

from crawler import CrawlerError
from crawler.context import context_of
from crawler.errors import Refused
from harvestflow.formats.surt import surt_or_url

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

# crawler.stats key prefix of the URLs each operator filter refused (+ the filter's name)
REJECTED_STAT = "harvestflow/filter_rejected/"


class ReturnedToFrontier(CrawlerError):
    """A request the downloader had not sent when the crawl was paused: the filter middleware
    turns it back into the request, which the engine schedules again (not a fetch result: no
    crawl.log line, its budget reservation and host lease are given back on the way)."""


@dataclass
class OperatorFilter:
    """One operator filter: ``kind`` regex (RE2, searched in the URL) or surt (a prefix of
    the URL's SURT, as CDX indexes write it: ``org,example)/calendar``)."""

    name: str
    kind: str
    pattern: str
    action_id: int
    user: str
    compiled: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind == "regex" and self.compiled is None:
            from harvestflow.job_actions import compile_re2

            self.compiled = compile_re2(self.pattern)

    def matches(self, url: str) -> bool:
        if self.kind == "regex":
            return self.compiled.search(url) is not None
        return surt_or_url(url).startswith(self.pattern)

    def saved(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("compiled")
        return data


@dataclass
class Controls:
    """What the extension and the middleware share (one per crawler, on its job context)."""

    filters: list[OperatorFilter] = field(default_factory=list)
    # an operator's pause is in force: requests reaching the downloader go back to the queue
    paused: bool = False


def controls_of(crawler: Crawler) -> Controls:
    """The crawler's operator controls, made by whichever of the two components comes first."""
    ctx = context_of(crawler)
    if ctx.controls is None:
        ctx.controls = Controls()
    controls: Controls = ctx.controls
    return controls


class OperatorFilterMiddleware:
    """Downloader middleware: refuses frontier URLs matching an operator filter (-5001)."""

    def __init__(self, crawler: Crawler) -> None:
        self.controls = controls_of(crawler)
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> OperatorFilterMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        # only frontier URLs (robots.txt and login prerequisites have no "hf")
        if not self.controls.filters or "hf" not in request.meta:
            return
        for f in self.controls.filters:
            if f.matches(request.url):
                self.stats.inc_value(REJECTED_STAT + f.name)
                raise Refused(f"filter:{f.name}")

    def process_exception(
        self, request: Request, exception: Exception, spider: Any = None
    ) -> Request | None:
        """A request held back by a pause goes back to the scheduler (the last middleware to
        see the exception: the others gave back its budget reservation and host lease)."""
        if isinstance(exception, ReturnedToFrontier):
            return request
        return None


def held_by_pause(request: Request) -> bool:
    """A frontier request a pause holds back (a rendering page's browser requests are not)."""
    return "hf" in request.meta and "hf_browser" not in request.meta


class PauseGateMiddleware:
    """Downloader middleware, the last before the download: while paused, a frontier request
    that was waiting in a middleware (for robots.txt, a host lease, a login) when the pause
    came goes back to the queue instead of into a host's send queue."""

    def __init__(self, crawler: Crawler) -> None:
        self.controls = controls_of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PauseGateMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> None:
        if self.controls.paused and held_by_pause(request):
            raise ReturnedToFrontier("paused")
