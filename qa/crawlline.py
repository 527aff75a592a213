"""The tolerant, one-line-at-a-time crawl.log parser: the path of the lines the fast ones refuse.

Why a separate module: qa.crawllog_aggregate (polars) and qa.crawlscan (C) aggregate the lines in
Heritrix's fixed layout in bulk; everything else (unpadded fields, tabs, hand-edited lines)
comes here, one line at a time, and either becomes a row or a reason a curator can read in the
report. A row must also fit the grouped table's column types (status Int32, size Int64): an
out-of-range number is a corrupt line to name, not an exception that would lose the whole log
(and, without the guard below, the whole day's report). A line must have exactly Heritrix's 12
fields (or a 13th extra-info ``{...}``): a line with more is shifted or forged, and bad. The
line itself is read by the platform's one crawl.log parser
(:class:`harvestflow.formats.crawllog.CrawlLogLine`); this module adds the table's limits.
"""

from __future__ import annotations

from harvestflow.formats.crawllog import CrawlLogLine

# the grouped table's status column is Int32; a size over a petabyte is a corrupt line, and the
# cap keeps the Int64 byte sums of a whole day far from overflowing
STATUS_MIN, STATUS_MAX = -(2**31), 2**31 - 1
SIZE_MAX = 10**15


def parse_line_slow(text: str) -> tuple[dict[str, object] | None, str]:
    """Tolerant parse of one line (any whitespace between fields); (row, "") or (None, why).

    The line is read by the one crawl.log parser; this adds the grouped table's limits and
    derives its row (authority, flags).
    """
    entry, why = CrawlLogLine.read(text)
    if entry is None:
        return None, why
    status_s, size_s = text.split(None, 3)[1:3]
    if not STATUS_MIN <= entry.status <= STATUS_MAX:
        return None, f"status {status_s[:20]!r} is out of range"
    size = 0 if entry.size is None else entry.size
    if abs(size) > SIZE_MAX:
        return None, f"size {size_s[:20]!r} is out of range"
    uri = entry.url
    pieces = uri.split("/", 3)
    auth = pieces[2] if len(pieces) > 2 else uri
    notes = ",".join(entry.annotations) if entry.annotations else "-"
    return {
        "ts": entry.time[:24],
        "status": entry.status,
        "size": size,
        "auth": auth,
        "mime": entry.mime or "-",
        "dup": "duplicate:" in notes,
        "seed": entry.hops == "",
        "quota": "Q:" in notes,
    }, ""
