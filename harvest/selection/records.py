"""Selection records read from a curators' CSV export or the UK Web Archive's JSON crawl feed.

Why one record type for both: validation, duplicate flags and the database write are the same
whatever the source; each reader only turns its rows into :class:`SelectionRecord` and reports
a row it cannot read with its position (CSV line, feed item index) and the reason.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

from harvest.selection.mapping import SelectionMapping

TRUE_WORDS = {"1", "true", "yes", "y", "oui", "on", "active"}
FALSE_WORDS = {"0", "false", "no", "n", "non", "off", "inactive", ""}


class RecordError(ValueError):
    """A row that cannot be imported; ``where`` names the row (``line 12``, ``item 3``)."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


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
    # the crawl feed's login fields: the secret itself is in the credential store, named by
    # secret_id (harvestflow/credentials.py), never in the feed nor in this table
    login_page_url: str | None = None
    logout_url: str | None = None
    secret_id: str | None = None

    @property
    def all_urls(self) -> list[str]:
        return [self.seed_url, *self.supplementary_urls]


def normalise_url(raw: str, where: str) -> str:
    """A seed URL as stored: scheme and host checked, canonical form (w3lib)."""
    value = raw.strip()
    if value and "://" not in value:
        value = "http://" + value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RecordError(where, f"{raw!r} is not an http(s) URL")
    return canonicalize_url(value, keep_fragments=False)


def _optional_url(value: Any, where: str, name: str) -> str | None:
    """A feed's optional URL field (login or logout page), checked like a seed."""
    if value in (None, ""):
        return None
    try:
        return normalise_url(str(value), where)
    except RecordError:
        raise RecordError(where, f"{name}: {value!r} is not an http(s) URL") from None


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


def _check_fields(rec: SelectionRecord, mapping: SelectionMapping) -> SelectionRecord:
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
]


def read_csv(path: Path, mapping: SelectionMapping) -> Iterator[SelectionRecord | RecordError]:
    """Records of a CSV export (header row with CSV_COLUMNS names; extra columns ignored)."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        missing = {"collection", "seed_url", "budget", "frequency", "depth", "theme"} - set(
            reader.fieldnames or []
        )
        if missing:
            yield RecordError(
                f"{path.name} line 1", f"missing columns: {', '.join(sorted(missing))}"
            )
            return
        for row in reader:
            where = f"{path.name} line {reader.line_num}"
            try:

                def get(key: str, row: dict[str, Any] = row) -> str:
                    return (row.get(key) or "").strip()

                schedules = []
                if get("start_date"):
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
                )
                yield _check_fields(rec, mapping)
            except RecordError as exc:
                yield exc


def parse_feed_date(value: str | None, where: str) -> datetime | None:
    """A crawl-feed date (``2026-01-05 09:00:00``, ISO accepted too) as UTC."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise RecordError(where, f"date {value!r} is not 'YYYY-MM-DD HH:MM:SS'") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read_ukwa_feed(
    path: Path,
    mapping: SelectionMapping,
    *,
    collection: str = "ukwa",
    theme: str | None = None,
) -> Iterator[SelectionRecord | RecordError]:
    """Records of a UK Web Archive crawl feed (a JSON list of targets, or JSON lines)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else data.get("targets", [data])
    except json.JSONDecodeError:
        items = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                yield RecordError(f"{path.name} line {lineno}", f"invalid JSON ({exc.msg})")
    for index, item in enumerate(items, 1):
        where = f"{path.name} item {index}"
        try:
            if not isinstance(item, dict):
                raise RecordError(where, "not a JSON object")
            where = f"{path.name} item {index} (id {item.get('id')})"
            seeds = item.get("seeds") or []
            if not seeds:
                raise RecordError(where, "no seeds")
            schedules = item.get("schedules") or []
            if not schedules:
                raise RecordError(where, "no schedules")
            # DOMAINCRAWL schedules belong to the broad crawl; every other one is harvested
            schedules = [
                s for s in schedules if str(s.get("frequency") or "").upper() != "DOMAINCRAWL"
            ]
            if not schedules:
                raise RecordError(where, "DOMAINCRAWL targets are harvested by the broad crawl")
            freq = str(schedules[0].get("frequency") or "")
            for sched in schedules:
                parse_feed_date(sched.get("startDate"), where)
                parse_feed_date(sched.get("endDate"), where)
            scope = str(item.get("scope") or "subdomains")
            depth_word = str(item.get("depth") or "CAPPED")
            if scope not in mapping.ukwa_scope:
                raise RecordError(where, f"unknown scope {scope!r}")
            if depth_word not in mapping.ukwa_depth:
                raise RecordError(where, f"unknown depth {depth_word!r}")
            rec = SelectionRecord(
                where=where,
                external_id=f"ukwa:{item.get('id')}",
                collection=str(item.get("collection") or collection),
                title=item.get("title"),
                seed_url=normalise_url(str(seeds[0]), where),
                supplementary_urls=[normalise_url(str(u), where) for u in seeds[1:]],
                budget=mapping.ukwa_depth[depth_word],
                frequency=freq,
                depth=mapping.ukwa_scope[scope],
                active=not item.get("inactive", False),
                theme=str(item.get("theme") or theme or ""),
                keywords=[str(k) for k in item.get("keywords") or []],
                scope=scope,
                ignore_robots=bool(item.get("ignoreRobotsTxt", False)),
                schedules=[dict(s) for s in schedules],
                technical_notes=f"UKWA depth {depth_word}, scope {scope}",
                login_page_url=_optional_url(item.get("loginPageUrl"), where, "loginPageUrl"),
                logout_url=_optional_url(item.get("logoutUrl"), where, "logoutUrl"),
                secret_id=str(item["secretId"]) if item.get("secretId") not in (None, "") else None,
            )
            rec = _check_fields(rec, mapping)
            for number, sched in enumerate(schedules[1:], 2):
                try:
                    other = mapping.normalise_frequency(str(sched.get("frequency") or ""))
                except ValueError as exc:
                    raise RecordError(where, f"schedule {number}: {exc}") from None
                refused = mapping.check(rec.budget, other, rec.depth)
                if refused:
                    raise RecordError(where, f"schedule {number} ({other}): {refused}")
            yield rec
        except RecordError as exc:
            yield exc
