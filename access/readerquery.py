"""What a reader may ask pywb: the gateway's checks of a request before it is forwarded.

Why before forwarding: pywb answers a parameter it cannot read with a 500, and it runs in one
gevent process, so one costly query delays every reader. A reader gets a 400 saying what is
wrong, and pywb only sees queries whose cost is bounded: regular-expression filters are refused
(Python's backtracking ``re``), numbers and times are bounded decimals, and the archived URL is
one a URL parser accepts.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

# /<coll>/cdx?<query>  (pywb's CDX server API; the query page's JavaScript uses it too)
CDX_QUERY = re.compile(r"^/([A-Za-z0-9][A-Za-z0-9_.-]*)/cdx(?:\?(.*))?$")
# /<coll>/<timestamp><modifier>/<url>, the calendar /<coll>/*/<url>, /<coll>/timemap/<fmt>/<url>
_TARGET = re.compile(
    r"^/[A-Za-z0-9][A-Za-z0-9_.-]*/(?:\d{0,14}(?:[a-z]{2}_)?|\*|timemap/[a-z]+)/(.+)$", re.S
)
_SLASHES = re.compile(r"/{2,}")
_NUMBERS = ("limit", "page", "pageSize", "offset")
_TIMES = ("from", "to", "closest")
_NUMBER = re.compile(r"^\d{1,9}$")
_TIME = re.compile(r"^\d{1,14}$")
_FILTER = re.compile(r"^!?(?P<kind>[=~]?)(?:[A-Za-z]+:)?", re.S)

REGEX_REFUSED = (
    "regular-expression filters (filter=~…) are not accepted here: they can stall the replay"
    " service; use filter=FIELD:TEXT (contains) or filter==FIELD:VALUE (exact)"
)


def routed(path: str) -> str:
    """The request path as pywb routes it: %-escapes decoded, repeated slashes merged (so that
    ``/all/%63dx`` or ``//all//cdx`` is seen as the URL search it is); the query as sent."""
    target, mark, query = path.partition("?")
    return _SLASHES.sub("/", unquote(target)) + mark + query


def problem(path: str) -> str | None:
    """Why this request (path and query as received) may not go to pywb, or None."""
    cdx = CDX_QUERY.match(routed(path))
    if cdx:
        return cdx_problem(cdx.group(2) or "")
    target = _TARGET.match(unquote(path))
    if target:
        return url_problem(target.group(1), "the archived URL")
    return None


def cdx_problem(query: str) -> str | None:
    """Why a CDX API query string may not go to pywb, or None."""
    try:
        params = parse_qsl(query, keep_blank_values=True, max_num_fields=200)
    except ValueError as exc:
        return f"URL search: unreadable query ({exc})"
    for name, value in params:
        if name in _NUMBERS and not _NUMBER.match(value):
            return f"URL search: {name}={value!r} is not a whole number (0 to 999999999)"
        if name in _TIMES and not _TIME.match(value):
            return f"URL search: {name}={value!r} is not a time (1 to 14 digits, YYYYMMDDhhmmss)"
        if name == "filter":
            found = _FILTER.match(value)
            if found and found.group("kind") == "~":
                return f"URL search: filter={value!r}: {REGEX_REFUSED}"
        if name == "url" and value:
            url = value[2:] if value.startswith("*.") else value
            found_problem = url_problem(url.rstrip("*"), "url")
            if found_problem:
                return f"URL search: {found_problem}"
    return None


def url_problem(url: str, what: str) -> str | None:
    """Why ``url`` (an archived URL as a reader typed it) is not one pywb can look up."""
    try:
        parts = urlsplit(url if "://" in url else "http://" + url)
        parts.port  # noqa: B018  (raises on a port that is not a number in range)
    except ValueError as exc:
        return f"{what} {url[:200]!r} is not a URL ({exc})"
    return None
