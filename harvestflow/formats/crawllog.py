"""The field layout of a Heritrix 3 crawl.log line and the one rule every reader applies to it.

Why here: the crawler writes crawl.log, and the reports, the continuous crawl, the daily QA
(polars and C paths) and the curator search read it. A reader that took "at least 12 fields"
let a value with spaces in it (before the writers escaped them, or in a log from elsewhere)
shift the columns, so that a server could choose its own line's digest, seed and annotations.
Every reader now takes a line only when it has exactly :data:`FIELD_COUNT` whitespace-separated
fields, or one more that is Heritrix's optional extra-info JSON object (``-extraInfo``; written
without spaces, ``{...}``); any other line is a bad line, named by its reader.
"""

from __future__ import annotations

FIELDS = (
    "time",
    "status",
    "size",
    "url",
    "hops",
    "via",
    "mime",
    "thread",
    "fetch",
    "digest",
    "seed",
    "annotations",
)
FIELD_COUNT = len(FIELDS)


def is_extra_info(field: str) -> bool:
    """Whether a 13th field is Heritrix's extra-info JSON object (the only 13th allowed)."""
    return len(field) >= 2 and field[0] == "{" and field[-1] == "}"


def field_count_error(parts: list[str]) -> str:
    """Why ``parts`` (a line split on whitespace) is not a crawl.log line, or ''."""
    n = len(parts)
    if n == FIELD_COUNT or (n == FIELD_COUNT + 1 and is_extra_info(parts[-1])):
        return ""
    if n == FIELD_COUNT + 1:
        return f"{n} fields, 12 expected (a 13th must be a {{...}} extra-info object)"
    if n < FIELD_COUNT:
        return f"{n} fields, 12 expected (truncated line?)"
    return f"{n} fields, 12 expected (shifted or forged line?)"


def split_line(line: str) -> tuple[list[str], str]:
    """(the 12 fields, '') of a crawl.log line, or ([], why) for a bad line."""
    parts = line.split()
    why = field_count_error(parts)
    if why:
        return [], why
    return parts[:FIELD_COUNT], ""


def parse_line(line: str) -> dict[str, str] | None:
    """The fields of a crawl.log line by name (None for a bad line)."""
    parts, why = split_line(line)
    if why:
        return None
    return dict(zip(FIELDS, parts, strict=True))
