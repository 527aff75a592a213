"""The tolerant, one-line-at-a-time crawl.log parser: the path of the lines the fast ones refuse.

Why a separate module: qa.crawllog_aggregate (polars) and qa.crawlscan (C) aggregate the lines in
Heritrix's fixed layout in bulk; everything else (unpadded fields, tabs, hand-edited lines)
comes here, one line at a time, and either becomes a row or a reason a curator can read in the
report. A row must also fit the grouped table's column types (status Int32, size Int64): an
out-of-range number is a corrupt line to name, not an exception that would lose the whole log
(and, without the guard below, the whole day's report). A line must have exactly Heritrix's 12
fields (or a 13th extra-info ``{...}``): a line with more is shifted or forged, and bad.
"""

from __future__ import annotations

import re

from harvestflow.formats.crawllog import field_count_error

_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
# the grouped table's status column is Int32; a size over a petabyte is a corrupt line, and the
# cap keeps the Int64 byte sums of a whole day far from overflowing
STATUS_MIN, STATUS_MAX = -(2**31), 2**31 - 1
SIZE_MAX = 10**15


def parse_line_slow(text: str) -> tuple[dict[str, object] | None, str]:
    """Tolerant parse of one line (any whitespace between fields); (row, "") or (None, why)."""
    parts = text.split()
    why = field_count_error(parts)
    if why:
        return None, why
    ts, status_s, size_s, uri, hop, _via, mime = parts[:7]
    ann = parts[11]
    if not _TS_RE.match(ts):
        return None, "first field is not an ISO timestamp"
    try:
        status = int(status_s)
    except ValueError:
        return None, f"status {status_s[:20]!r} is not an integer"
    if not STATUS_MIN <= status <= STATUS_MAX:
        return None, f"status {status_s[:20]!r} is out of range"
    if size_s == "-":
        size = 0
    else:
        try:
            size = int(size_s)
        except ValueError:
            return None, f"size {size_s[:20]!r} is not an integer"
        if abs(size) > SIZE_MAX:
            return None, f"size {size_s[:20]!r} is out of range"
    pieces = uri.split("/", 3)
    auth = pieces[2] if len(pieces) > 2 else uri
    return {
        "ts": ts[:24],
        "status": status,
        "size": size,
        "auth": auth,
        "mime": mime,
        "dup": "duplicate:" in ann,
        "seed": hop == "-",
        "quota": "Q:" in ann,
    }, ""
