"""POST and PUT responses keyed under their request body, as ``cdxj-indexer -p`` keys them.

Why: a page's POST API gives a different answer for each body; replay (pywb) looks a POST up
under ``URL?__wb_method=post&<body query>`` (:mod:`harvestflow.formats.postquery`), so the
response's line must carry that key, and the body is only in the request record next to it.
The reference pairs records exactly this way, and our lines must be its lines: two records in a
row, a request and a response in either order, with the same ``WARC-Target-URI``, the second
naming the first in ``WARC-Concurrent-To``, make a pair (then the next record starts afresh);
a POST/PUT request of a pair gives its response the method and the body's query. Records that
get no line are kept by the scanners for this and dropped here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from harvestflow.formats.postquery import body_query, keyed
from indexing.record_model import Capture, WarcDamage

__all__ = ["with_post_keys"]


def _pair(first: Capture, second: Capture) -> tuple[Capture, Capture] | None:
    """(request, response) when the two records in a row are a pair, else None."""
    if first.url != second.url or second.concurrent_to != first.record_id:
        return None
    if first.rec_type == "response" and second.rec_type == "request":
        return second, first
    if first.rec_type == "request" and second.rec_type == "response":
        return first, second
    return None


def _key(request: Capture, response: Capture) -> None:
    asked = request.request
    if asked is None or not keyed(asked.method):
        return
    response.method = asked.method.upper()
    response.request_body = body_query(asked.content_type, asked.content_length, asked.body)


def with_post_keys(items: Iterable[Capture | WarcDamage]) -> Iterator[Capture | WarcDamage]:
    """The indexed captures of a scan (damage reports kept in place), POST/PUT responses keyed
    under their request body; records without a line are dropped."""
    prev: Capture | None = None
    for item in items:
        if isinstance(item, WarcDamage):
            if prev is not None and prev.indexed:
                yield prev
            prev = None
            yield item
            continue
        pair = _pair(prev, item) if prev is not None else None
        if pair is not None:
            _key(*pair)
        if prev is not None and prev.indexed:
            yield prev
        if pair is not None:
            if item.indexed:
                yield item
            prev = None
        else:
            prev = item
    if prev is not None and prev.indexed:
        yield prev
