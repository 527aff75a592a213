"""Selection records and the curators' CSV export reader (the crawl feed's is ``feed``).

Why one record type for every source: validation, duplicate flags and the database write are
the same whatever the source; each reader only turns its rows into :class:`SelectionRecord`
and reports a row it cannot read with its position (CSV line, feed item index) and the reason.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harvest.errors import HarvestError
from harvest.selection.mapping import SelectionMapping
from harvestflow.formats.csvcells import read_cell
from harvestflow.formats.seeds import MAX_FIELD_BYTES, SeedError, check_seed_url, check_text

TRUE_WORDS = {"1", "true", "yes", "y", "oui", "on", "active"}
FALSE_WORDS = {"0", "false", "no", "n", "non", "off", "inactive", ""}


class RecordError(HarvestError, ValueError):
    """A row that cannot be imported; ``where`` names the row (``line 12``, ``item 3``) and
    ``text`` holds the row as read (for the rejects file) when the reader knows it."""

    def __init__(self, where: str, reason: str, text: str = "") -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason
        self.text = text


class SelectionFileError(HarvestError, ValueError):
    """A file that cannot be read as records at all (no header, missing columns)."""


@dataclass
class SelectionRecord:
    """One curator's selection (BCWeb's fields; see sql/001 selection_records)."""

    where: str
    collection: str
    seed_url: str
    budget: str
    frequency: str
    depth: str
    theme: str
    external_id: str | None = None
    title: str | None = None
    supplementary_urls: list[str] = field(default_factory=list)
    active: bool = True
    keywords: list[str] = field(default_factory=list)
    content_notes: str | None = None
    technical_notes: str | None = None
    creator: str | None = None
    curator: str | None = None
    scope: str | None = None
    ignore_robots: bool = False
    schedules: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""  # the row as read, for the rejects file
    # the crawl feed's login fields: the secret itself is in the credential store, named by
    # secret_id (harvestflow/credentials.py), never in the feed nor in this table
    login_page_url: str | None = None
    logout_url: str | None = None
    secret_id: str | None = None
    # the crawl feed's own limits (a QA directive raised them) and curators' annotations
    # (harvest.selection.annotations.parse_feed's checked form); None: not given
    max_objects: int | None = None
    max_bytes: int | None = None
    annotations: dict[str, Any] | None = None
    # a watched target's official publications are extracted as documents (indexing.documents);
    # the scheme is the URL prefix of its documents (None: found by their type only)
    watched: bool = False
    document_url_scheme: str | None = None

    @property
    def all_urls(self) -> list[str]:
        return [self.seed_url, *self.supplementary_urls]


def normalise_url(raw: str, where: str) -> str:
    """A seed URL as stored (see :func:`harvestflow.formats.seeds.check_seed_url`)."""
    try:
        return check_seed_url(raw)
    except SeedError as exc:
        raise RecordError(where, str(exc)) from None


def optional_url(value: Any, where: str, name: str) -> str | None:
    """A feed's optional URL field (login or logout page), checked like a seed."""
    if value in (None, ""):
        return None
    try:
        return normalise_url(str(value), where)
    except RecordError:
        raise RecordError(where, f"{name}: {value!r} is not an http(s) URL") from None


def url_scheme(value: Any, where: str, name: str = "documentUrlScheme") -> str | None:
    """A document URL scheme: an http(s) URL prefix (a target's documents start with it)."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise RecordError(where, f"{name} must be a string")
    text = value.strip()
    if not text.lower().startswith(("http://", "https://")):
        raise RecordError(where, f"{name}: {text[:80]!r} is not an http(s) URL prefix")
    try:
        check_text(text, name)
        check_seed_url(text)
    except SeedError as exc:
        raise RecordError(where, f"{name}: {exc}") from None
    return text


def _bool(value: Any, where: str, name: str) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value or "").strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise RecordError(where, f"{name}: {value!r} is neither yes nor no")


def _split(value: str | None, seps: str = ";|,") -> list[str]:
    text = value or ""
    for sep in seps[1:]:
        text = text.replace(sep, seps[0])
    return [v.strip() for v in text.split(seps[0]) if v.strip()]


def check_fields(rec: SelectionRecord, mapping: SelectionMapping) -> SelectionRecord:
    if not rec.collection:
        raise RecordError(rec.where, "collection is missing")
    if not rec.theme:
        raise RecordError(rec.where, "theme is missing (it is required)")
    rec.budget = rec.budget.strip().lower()
    rec.depth = rec.depth.strip().lower().replace("-", "_").replace(" ", "_")
    try:
        rec.frequency = mapping.normalise_frequency(rec.frequency)
    except ValueError as exc:
        raise RecordError(rec.where, str(exc)) from None
    refused = mapping.check(rec.budget, rec.frequency, rec.depth)
    if refused:
        raise RecordError(
            rec.where, f"{rec.budget} budget / {rec.frequency} / {rec.depth} depth: {refused}"
        )
    return rec


CSV_COLUMNS = [
    "id",
    "collection",
    "title",
    "seed_url",
    "supplementary_urls",
    "budget",
    "frequency",
    "depth",
    "active",
    "theme",
    "keywords",
    "content_notes",
    "technical_notes",
    "creator",
    "curator",
    "ignore_robots",
    "start_date",
    "end_date",
    "watched",
    "document_url_scheme",
]


class _LineTap:
    """The lines the csv reader takes, kept until the record is read: its raw text and the
    line it starts on (``csv.reader.line_num`` is the line it ends on)."""

    def __init__(self, handle: Iterator[str]) -> None:
        self.handle = handle
        self.lines: list[str] = []
        self.consumed = 0

    def __iter__(self) -> _LineTap:
        return self

    def __next__(self) -> str:
        line = next(self.handle)
        self.lines.append(line)
        self.consumed += 1
        return line

    def take(self) -> tuple[int, str]:
        """(first line number, raw text) of the record just read."""
        first = self.consumed - len(self.lines) + 1
        text = "".join(self.lines).rstrip("\r\n")
        self.lines = []
        return first, text


def read_csv(path: Path, mapping: SelectionMapping) -> Iterator[SelectionRecord | RecordError]:
    """Records of a CSV export (header row with CSV_COLUMNS names; extra columns ignored).

    Every record is checked before it is yielded (encoding, NUL, field size, URLs, dates,
    the mapping); a record that fails is yielded as a :class:`RecordError` naming its first
    line, and the reader goes on with the next one.
    """
    with path.open(newline="", encoding="utf-8-sig", errors="surrogateescape") as fh:
        tap = _LineTap(fh)
        reader = csv.reader(tap)
        try:
            header = next(reader, [])
        except csv.Error as exc:
            raise SelectionFileError(f"{path.name} line 1: unreadable header ({exc})") from None
        tap.take()
        header = [h.strip() for h in header]
        missing = {"collection", "seed_url", "budget", "frequency", "depth", "theme"} - set(header)
        if missing:
            raise SelectionFileError(
                f"{path.name} line 1: missing columns: {', '.join(sorted(missing))}"
            )
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                first, text = tap.take()
                reason = str(exc)
                if "field limit" in reason:
                    reason = f"a field is longer than {MAX_FIELD_BYTES // 1024} KiB"
                yield RecordError(f"{path.name} line {first}", reason, text)
                continue
            first, text = tap.take()
            if not any(v.strip() for v in values):
                continue  # a blank line is no record
            where = f"{path.name} line {first}"
            # a cell our export escaped for spreadsheets ('=…) is read as it was
            row = dict(zip(header, (read_cell(v) for v in values), strict=False))
            try:
                yield record_from_row(row, where, text, mapping)
            except RecordError as exc:
                exc.text = text
                yield exc


def record_from_row(
    row: dict[str, str], where: str, text: str, mapping: SelectionMapping
) -> SelectionRecord:
    """A record from a row of CSV_COLUMNS values (a CSV line, or the curator pages' form),
    checked as every import checks it; :class:`RecordError` says what is wrong."""
    for key, value in row.items():
        try:
            check_text(value, key or "column")
        except SeedError as exc:
            raise RecordError(where, str(exc)) from None

    def get(key: str) -> str:
        return (row.get(key) or "").strip()

    schedules = []
    if get("start_date") or get("end_date"):
        start = parse_feed_date(get("start_date"), where, "start_date")
        end = parse_feed_date(get("end_date"), where, "end_date")
        if start is None:
            raise RecordError(where, "end_date without start_date")
        if end is not None and end < start:
            raise RecordError(where, f"end_date {get('end_date')} is before start_date")
        schedules.append(
            {
                "frequency": get("frequency"),
                "startDate": get("start_date"),
                "endDate": get("end_date") or None,
            }
        )
    rec = SelectionRecord(
        where=where,
        external_id=get("id") or None,
        collection=get("collection"),
        title=get("title") or None,
        seed_url=normalise_url(get("seed_url"), where),
        supplementary_urls=[
            normalise_url(u, where) for u in _split(get("supplementary_urls"), " |;")
        ],
        budget=get("budget"),
        frequency=get("frequency"),
        depth=get("depth"),
        active=_bool(row.get("active", "yes") or "yes", where, "active"),
        theme=get("theme"),
        keywords=_split(get("keywords")),
        content_notes=get("content_notes") or None,
        technical_notes=get("technical_notes") or None,
        creator=get("creator") or None,
        curator=get("curator") or None,
        ignore_robots=_bool(get("ignore_robots"), where, "ignore_robots"),
        schedules=schedules,
        text=text,
        watched=_bool(get("watched"), where, "watched"),
        document_url_scheme=url_scheme(get("document_url_scheme"), where, "document_url_scheme"),
    )
    check_fields(rec, mapping)
    for schedule in rec.schedules:  # as the record's (an export reads back the same)
        schedule["frequency"] = rec.frequency
    return rec


def parse_feed_date(value: str | None, where: str, name: str = "date") -> datetime | None:
    """A crawl-feed date (``2026-01-05 09:00:00``, ISO accepted too) as UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise RecordError(where, f"{name} {value!r} is not 'YYYY-MM-DD HH:MM:SS'") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
