"""crawl.log's non-HTTP fetch status codes: Heritrix 3's ``FetchStatusCodes``, as we follow them.

Why one enum: the crawler writes these codes (refusals, failures), and QA, the continuous
crawl's run reader, the crawl reports and the curator pages read them back; naming them once
keeps writers and readers agreeing. Names and numbers are Heritrix's (``S_`` dropped;
``EMPTY_RESPONSE`` is the name Heritrix's documentation gives -404), so people who know
Heritrix read them without surprise. HTTP statuses (100-599) share the field and are not here.

Only the codes harvestflow writes or reads are members; Heritrix's others (-60, -62, -63,
-3000, 1001) are not, so a crawl.log holding one is shown as an unknown code, as before.
"""

from __future__ import annotations

from enum import IntEnum


class FetchStatus(IntEnum):
    """A crawl.log status that is not an HTTP status (field 2)."""

    DNS_SUCCESS = 1
    """A ``dns:`` lookup succeeded."""
    UNATTEMPTED = 0
    """Never fetched (an unsupported scheme, or a URL still queued when the crawl ended)."""
    DOMAIN_UNRESOLVABLE = -1
    """The host's name did not resolve."""
    CONNECT_FAILED = -2
    """The TCP (or TLS) connection could not be made."""
    CONNECT_LOST = -3
    """The connection broke before a full response."""
    TIMEOUT = -4
    """No meaningful response in time."""
    RUNTIME_EXCEPTION = -5
    """An unexpected error while fetching (the crawler's log names it)."""
    DOMAIN_PREREQUISITE_FAILURE = -6
    """The DNS prerequisite failed, so the URL was not tried."""
    UNFETCHABLE_URI = -7
    """An unsupported or invalid URL (scheme, host, length, port)."""
    TOO_MANY_RETRIES = -8
    """Every retry failed."""
    DEFERRED = -50
    """Waiting for a prerequisite (in a log: the crawl ended first)."""
    ROBOTS_PREREQUISITE_FAILURE = -61
    """robots.txt could not be fetched, so the URL was not tried."""
    EMPTY_RESPONSE = -404
    """An empty HTTP response, deemed not found."""
    DEEMED_CHAFF = -4000
    """A crawler trap (trap list, path depth, repeated segments, calendar)."""
    TOO_MANY_LINK_HOPS = -4001
    """Past the hop limit (a link or a redirect)."""
    TOO_MANY_EMBED_HOPS = -4002
    """An embed past its transclusion allowance."""
    OUT_OF_SCOPE = -5000
    """Outside the seeds' scope."""
    BLOCKED_BY_USER = -5001
    """Refused by an operator's filter or a credential's logout URL."""
    BLOCKED_BY_CUSTOM_PROCESSOR = -5002
    """Refused by a processor's check (e.g. an address not allowed)."""
    BLOCKED_BY_QUOTA = -5003
    """A budget (quota) is spent: annotated ``Q:<quota key>``."""
    BLOCKED_BY_RUNTIME_LIMIT = -5004
    """The job's running-time limit was reached."""
    DELETED_BY_USER = -6000
    """Deleted from the frontier by an operator."""
    PROCESSING_THREAD_KILLED = -7000
    """The thread processing the URL was killed."""
    ROBOTS_PRECLUDED = -9998
    """robots.txt forbids the URL."""

    @property
    def label(self) -> str:
        """Words for reports and pages ("DNS unresolvable")."""
        return _LABELS[self]


_LABELS = {
    FetchStatus.DNS_SUCCESS: "DNS lookup ok",
    FetchStatus.UNATTEMPTED: "not attempted",
    FetchStatus.DOMAIN_UNRESOLVABLE: "DNS unresolvable",
    FetchStatus.CONNECT_FAILED: "connect failed",
    FetchStatus.CONNECT_LOST: "connection lost",
    FetchStatus.TIMEOUT: "timeout",
    FetchStatus.RUNTIME_EXCEPTION: "unexpected runtime error",
    FetchStatus.DOMAIN_PREREQUISITE_FAILURE: "prerequisite (DNS) failed",
    FetchStatus.UNFETCHABLE_URI: "unfetchable URI",
    FetchStatus.TOO_MANY_RETRIES: "too many retries",
    FetchStatus.DEFERRED: "deferred",
    FetchStatus.ROBOTS_PREREQUISITE_FAILURE: "robots prerequisite failed",
    FetchStatus.EMPTY_RESPONSE: "empty response",
    FetchStatus.DEEMED_CHAFF: "chaff (crawler trap)",
    FetchStatus.TOO_MANY_LINK_HOPS: "too many link hops",
    FetchStatus.TOO_MANY_EMBED_HOPS: "too many embed hops",
    FetchStatus.OUT_OF_SCOPE: "out of scope",
    FetchStatus.BLOCKED_BY_USER: "blocked by operator",
    FetchStatus.BLOCKED_BY_CUSTOM_PROCESSOR: "blocked by custom processor",
    FetchStatus.BLOCKED_BY_QUOTA: "blocked by quota (budget)",
    FetchStatus.BLOCKED_BY_RUNTIME_LIMIT: "blocked by runtime limit",
    FetchStatus.DELETED_BY_USER: "deleted by operator",
    FetchStatus.PROCESSING_THREAD_KILLED: "processing thread killed",
    FetchStatus.ROBOTS_PRECLUDED: "robots.txt precluded",
}
