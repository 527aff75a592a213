"""The crawl.log line of Heritrix 3: one model, one parser, one writer.

Why here: the crawler writes crawl.log, and the reports, the dedup index, the continuous crawl,
the daily QA and the curator search read it. Readers that each split the line let a value with
spaces shift the columns; now every reader goes through :meth:`CrawlLogLine.read` (exactly
:data:`FIELD_COUNT` fields, or one more extra-info object, else a bad line with the reason) and
the crawler writes through :meth:`CrawlLogLine.format`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from harvestflow.formats.fields import MAX_MIME_CHARS, clean_field

__all__ = [
    "FIELDS",
    "FIELD_COUNT",
    "MAX_ANNOTATION_CHARS",
    "CrawlLogLine",
    "check_fields",
    "fetch_field",
    "field_count_error",
    "is_extra_info",
    "iso_ms",
    "split_line",
]

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
# one annotation (an error message is part of some) is cut at this many characters
MAX_ANNOTATION_CHARS = 200
_is_time = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d").match


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
    """(the 12 fields, '') of a crawl.log line, or ([], why) for a line with the wrong count.

    The bare field split, for :meth:`CrawlLogLine.read` and for the error message of a line a
    reader refuses."""
    parts = line.split()
    why = field_count_error(parts)
    if why:
        return [], why
    return parts[:FIELD_COUNT], ""


def check_fields(parts: list[str]) -> tuple[str, int, int | None]:
    """(why, status, size) of a crawl.log line split on whitespace: ``why`` is '' when
    ``parts`` is a crawl.log line (then ``status`` and ``size`` are its values), else the reason
    it is not (then they are 0 and None).

    The checks of :meth:`CrawlLogLine.read`, which calls this, without building the line: a
    scan that keeps a few lines of millions (the curators' search) checks every line here and
    reads only the lines it keeps (building a line for each of millions was most of its time).
    """
    n = len(parts)
    if n != FIELD_COUNT and not (n == FIELD_COUNT + 1 and is_extra_info(parts[-1])):
        return field_count_error(parts), 0, None
    if not _is_time(parts[0]):
        return "first field is not an ISO timestamp", 0, None
    status_s, size_s = parts[1], parts[2]
    try:
        status = int(status_s)
    except ValueError:
        return f"status {status_s[:20]!r} is not an integer", 0, None
    if size_s == "-":
        return "", status, None
    try:
        return "", status, int(size_s)
    except ValueError:
        return f"size {size_s[:20]!r} is not an integer", 0, None


def iso_ms(when: dt.datetime) -> str:
    """A crawl.log time: ISO 8601 in UTC with milliseconds (``2026-11-22T10:15:02.123Z``)."""
    when = when.astimezone(dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def fetch_field(start: dt.datetime | None, duration_ms: int | None) -> str | None:
    """The fetch field (``yyyyMMddHHmmssSSS+<ms>``) of a fetch begun at ``start``; None if none."""
    if start is None:
        return None
    start = start.astimezone(dt.UTC)
    stamp = start.strftime("%Y%m%d%H%M%S") + f"{start.microsecond // 1000:03d}"
    return f"{stamp}+{duration_ms or 0}"


@dataclass(slots=True)
class CrawlLogLine:
    """One crawl.log line. ``None`` (``""`` for ``hops``, ``()`` for ``annotations``) is the
    ``-`` Heritrix writes for a missing value; values read are kept as written."""

    time: str
    status: int
    size: int | None
    url: str
    hops: str = ""
    via: str | None = None
    mime: str | None = None
    thread: str = "#000"
    fetch: str | None = None
    digest: str | None = None
    seed: str | None = None
    annotations: tuple[str, ...] = ()
    extra_info: str | None = None

    @classmethod
    def read(cls, line: str) -> tuple[CrawlLogLine | None, str]:
        """(the line, '') or (None, why it is not a crawl.log line) — for readers that name
        their bad lines."""
        parts = line.split()
        why, status, size = check_fields(parts)
        if why:
            return None, why
        notes = parts[11]
        # positional, in field order: this runs once per line of logs of millions of lines
        return cls(
            parts[0],
            status,
            size,
            parts[3],
            "" if parts[4] == "-" else parts[4],
            None if parts[5] == "-" else parts[5],
            None if parts[6] == "-" else parts[6],
            parts[7],
            None if parts[8] == "-" else parts[8],
            None if parts[9] == "-" else parts[9],
            None if parts[10] == "-" else parts[10],
            () if notes == "-" else tuple(notes.split(",")),
            parts[12] if len(parts) > FIELD_COUNT else None,
        ), ""

    @classmethod
    def parse(cls, line: str) -> CrawlLogLine | None:
        """The line, or None for a bad line."""
        return cls.read(line)[0]

    def fields(self) -> list[str]:
        """The 12 fields as they read (``-`` for missing values), without padding or escaping."""
        return [
            self.time,
            str(self.status),
            "-" if self.size is None else str(self.size),
            self.url,
            self.hops or "-",
            self.via or "-",
            self.mime or "-",
            self.thread,
            self.fetch or "-",
            self.digest or "-",
            self.seed or "-",
            ",".join(self.annotations) if self.annotations else "-",
        ]

    def format(self) -> str:
        """The line as Heritrix writes it (no newline).

        Every value a server or a link could choose (URL, via, seed, MIME type, annotations
        built from error messages) goes through the one sanitiser, so no value can add, shift
        or forge a field or a line (:mod:`harvestflow.formats.fields`).
        """
        size = "-" if self.size is None else str(self.size)
        notes = (
            ",".join(clean_field(a, MAX_ANNOTATION_CHARS, extra=",") for a in self.annotations)
            if self.annotations
            else "-"
        )
        out = [
            clean_field(self.time),
            f"{self.status:>5}",
            f"{size:>10}",
            clean_field(self.url),
            clean_field(self.hops),
            clean_field(self.via),
            clean_field(self.mime, MAX_MIME_CHARS),
            clean_field(self.thread),
            clean_field(self.fetch),
            clean_field(self.digest),
            clean_field(self.seed),
            notes,
        ]
        if self.extra_info is not None:
            out.append(clean_field(self.extra_info))
        return " ".join(out)

    def fetched_at(self) -> dt.datetime:
        """When the fetch began (the fetch field), else the log time; UTC."""
        if self.fetch is not None and len(self.fetch) >= 17:
            return dt.datetime.strptime(self.fetch[:17] + "000", "%Y%m%d%H%M%S%f").replace(
                tzinfo=dt.UTC
            )
        return dt.datetime.fromisoformat(self.time.replace("Z", "+00:00"))
