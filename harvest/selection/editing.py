"""Selection records edited by curators in the browser: create, edit, bulk edit, move, each
change kept in the record's history (reading and export: :mod:`record_search`).

Why here and through the importer's own parts: a record typed into a form is a row of the
import's CSV columns, so it is read and checked by :func:`records.record_from_row` (fields,
dates, the mapping's impossible budget/frequency/depth combinations), its new URLs are checked
online and flagged against the URLs already known exactly as an import does
(:mod:`importer`'s ``KnownUrls`` and ``judge``). Every change writes one ``selection_history`` row per field
(who, when, old -> new) and one audit row (:func:`harvestflow.audit.record_audit`), and clears
``transferred_at``: the next transfer (:mod:`transfer`, the one the DAGs run) picks it up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from harvest.common import engine_or_default
from harvest.errors import HarvestError
from harvest.selection import urlcheck
from harvest.selection.importer import (
    KnownUrls,
    conflict_reason,
    judge,
    record_key,
    record_params,
    validation_status,
)
from harvest.selection.mapping import SelectionMapping, load_mapping
from harvest.selection.record_search import as_row, get_record
from harvest.selection.records import CSV_COLUMNS, RecordError, SelectionRecord, record_from_row
from harvest.selection.urlcheck import Resolver, UrlCheck
from harvestflow.audit import record_audit

log = logging.getLogger(__name__)


class EditError(HarvestError, ValueError):
    """A change that cannot be made, with the reason shown to the curator."""


@dataclass
class SaveResult:
    """What a create or edit did: the record, or why it was refused; the URL check's
    verdicts and the warnings (redirects, duplicate URL/host/domain) either way."""

    record_id: int | None = None
    refused: str | None = None
    warnings: list[str] = field(default_factory=list)
    checks: list[UrlCheck] = field(default_factory=list)
    changes: list[tuple[str, str, str]] = field(default_factory=list)  # field, old, new


@dataclass
class BulkResult:
    changed: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)


def _diff(old: dict[str, str], new: dict[str, str]) -> list[tuple[str, str, str]]:
    return [
        (k, old.get(k, ""), new.get(k, "")) for k in CSV_COLUMNS if old.get(k, "") != new.get(k, "")
    ]


_UPDATE = """
UPDATE selection_records SET external_id = :external_id, collection = :collection,
    title = :title, seed_url = :seed_url, supplementary_urls = CAST(:supplementary_urls AS text[]),
    budget = :budget, frequency = :frequency, depth = :depth, ignore_robots = :ignore_robots,
    schedules = CAST(:schedules AS jsonb), active = :active, theme = :theme,
    keywords = CAST(:keywords AS text[]), content_notes = :content_notes,
    technical_notes = :technical_notes, creator = :creator, curator = :curator,
    validation_status = :validation_status, validation_detail = :validation_detail,
    watched = :watched, document_url_scheme = :document_url_scheme,
    modified_at = now(), modified_by = :user, transferred_at = NULL
WHERE record_id = :record_id
"""

_INSERT = """
INSERT INTO selection_records (external_id, collection, title, seed_url, supplementary_urls,
    budget, frequency, depth, scope, ignore_robots, schedules, active, theme, keywords,
    content_notes, technical_notes, creator, curator, created_by, modified_by,
    validation_status, validation_detail, watched, document_url_scheme)
VALUES (:external_id, :collection, :title, :seed_url, CAST(:supplementary_urls AS text[]),
    :budget, :frequency, :depth, :scope, :ignore_robots, CAST(:schedules AS jsonb), :active,
    :theme, CAST(:keywords AS text[]), :content_notes, :technical_notes, :creator, :curator,
    :user, :user, :validation_status, :validation_detail, :watched, :document_url_scheme)
RETURNING record_id
"""


def _write(
    conn: Connection,
    rec: SelectionRecord,
    old: dict[str, Any] | None,
    user: str,
    status: str,
    detail: str | None,
    action: str,
) -> tuple[int, list[tuple[str, str, str]]]:
    """Insert or update one checked record, with its history and audit rows."""
    if old is not None and len(old.get("schedules") or []) > 1:
        before = as_row(old)
        if (before["start_date"], before["end_date"]) == (
            str((rec.schedules or [{}])[0].get("startDate") or ""),
            str((rec.schedules or [{}])[0].get("endDate") or ""),
        ):
            rec.schedules = old["schedules"]  # a feed target's several schedules are kept
    params = record_params(rec, user, status, detail)
    if old is None:
        record_id = int(conn.execute(sa.text(_INSERT), params).scalar_one())
        after = as_row(_stored(conn, record_id))
        changes = _diff({}, after)
        record_audit(conn, user, action, f"record {record_id}", {"after": after})
    else:
        record_id = int(old["record_id"])
        conn.execute(sa.text(_UPDATE), {**params, "record_id": record_id})
        before, after = as_row(old), as_row(_stored(conn, record_id))
        changes = _diff(before, after)
        if changes:
            record_audit(
                conn,
                user,
                action,
                f"record {record_id}",
                {"before": {k: o for k, o, _ in changes}, "after": {k: n for k, _, n in changes}},
            )
    for name, before_value, after_value in changes:
        conn.execute(
            sa.text(
                "INSERT INTO selection_history (record_id, changed_by, field, old_value,"
                " new_value) VALUES (:r, :u, :f, :o, :n)"
            ),
            {"r": record_id, "u": user, "f": name, "o": before_value, "n": after_value},
        )
    return record_id, changes


def _stored(conn: Connection, record_id: int) -> dict[str, Any]:
    found = get_record(conn, record_id)
    assert found is not None, record_id
    return found


def _keep_feed_fields(rec: SelectionRecord, old: dict[str, Any]) -> None:
    """The crawl feed's fields the import's columns do not hold (scope, login) stay as they
    were."""
    rec.scope, rec.login_page_url = old["scope"], old["login_page_url"]
    rec.logout_url, rec.secret_id = old["logout_url"], old["secret_id"]


def save_record(
    fields: dict[str, str],
    user: str,
    record_id: int | None = None,
    *,
    check_urls: bool = True,
    resolver: Resolver | None = None,
    timeout: float | None = None,
    engine: Engine | None = None,
    mapping: SelectionMapping | None = None,
) -> SaveResult:
    """Create (``record_id`` None) or edit a record from the form's CSV-column ``fields``.

    Refused, with the reason, as an import refuses a row: a field the import refuses, a
    new URL answering 4xx/5xx or without DNS, a (collection, URL) or feed id another record
    has. Redirects and duplicate URL/host/domain are saved with warnings.
    """
    mapping = mapping or load_mapping()
    engine = engine_or_default(engine)
    where = f"record {record_id}" if record_id else "new record"
    result = SaveResult(record_id=record_id)
    values = {k: str(fields.get(k, "") or "") for k in CSV_COLUMNS}
    try:
        rec = record_from_row(values, where, "", mapping)
    except RecordError as exc:
        result.refused = exc.reason
        return result
    with engine.connect() as conn:
        old = get_record(conn, record_id) if record_id is not None else None
        if record_id is not None and old is None:
            raise EditError(f"no selection record {record_id}")
        known = KnownUrls(conn)
    if old is not None:
        _keep_feed_fields(rec, old)
        rec.creator = rec.creator or old["creator"]
        own = [old["seed_url"], *(old["supplementary_urls"] or [])]
        known.forget(own, record_key(old["external_id"], old["collection"], old["seed_url"]))
    else:
        own = []
    verdicts = {}
    new_urls = [u for u in known.unknown(rec.all_urls) if u not in own]  # own ones: checked
    if check_urls and new_urls:
        verdicts = urlcheck.check_urls(new_urls, resolver=resolver, timeout=timeout)
    result.checks = list(verdicts.values())
    invalid, flags = judge(rec, verdicts, known)
    result.warnings = flags
    if invalid:
        result.refused = invalid
        return result
    status, detail = validation_status(flags, check_urls), "; ".join(flags) or None
    if old is not None and not new_urls and not flags:
        # the URLs were checked when they came: that check stands
        status, detail = old["validation_status"] or status, old["validation_detail"]
    action = "record.create" if old is None else "record.edit"
    try:
        with engine.begin() as conn:
            result.record_id, result.changes = _write(conn, rec, old, user, status, detail, action)
    except IntegrityError as exc:
        result.refused = conflict_reason(exc)
    return result


@dataclass(frozen=True)
class BulkChange:
    """What a bulk edit changes (None: left as it is)."""

    frequency: str | None = None
    collection: str | None = None
    end_date: date | None = None
    deactivate: bool = False
    curator: str | None = None  # hand the records to another curator

    def apply(self, values: dict[str, str], created: date) -> dict[str, str]:
        values = dict(values)
        if self.frequency:
            values["frequency"] = self.frequency
        if self.collection:
            values["collection"] = self.collection
        if self.end_date is not None:
            # the import refuses an end date without a start: the record runs since its creation
            values["start_date"] = values["start_date"] or created.isoformat()
            values["end_date"] = self.end_date.isoformat()
        if self.deactivate:
            values["active"] = "no"
        if self.curator:
            values["curator"] = self.curator
        return values

    def is_empty(self) -> bool:
        return not (
            self.frequency or self.collection or self.end_date or self.deactivate or self.curator
        )


def bulk_edit(
    record_ids: list[int],
    change: BulkChange,
    user: str,
    *,
    action: str = "record.bulk_edit",
    engine: Engine | None = None,
    mapping: SelectionMapping | None = None,
) -> BulkResult:
    """Apply ``change`` to each record; each is checked as a saved form is (a frequency the
    mapping refuses for a record's budget and depth refuses that record, with the reason; the
    others are changed). Their URLs do not change, so they are not checked online again."""
    if change.is_empty():
        raise EditError(
            "nothing to change: choose a frequency, collection, end date, curator or deactivate"
        )
    mapping = mapping or load_mapping()
    engine = engine_or_default(engine)
    result = BulkResult()
    for record_id in dict.fromkeys(record_ids):
        with engine.begin() as conn:
            old = get_record(conn, record_id)
            if old is None:
                result.refused.append((record_id, "no such record"))
                continue
            before = as_row(old)
            values = change.apply(before, old["created_at"].date())
            try:
                rec = record_from_row(values, f"record {record_id}", "", mapping)
            except RecordError as exc:
                result.refused.append((record_id, exc.reason))
                continue
            _keep_feed_fields(rec, old)
            try:
                with conn.begin_nested():
                    _, changes = _write(
                        conn,
                        rec,
                        old,
                        user,
                        old["validation_status"] or "unchecked",
                        old["validation_detail"],
                        action,
                    )
            except IntegrityError as exc:
                result.refused.append((record_id, conflict_reason(exc)))
                continue
            (result.changed if changes else result.unchanged).append(record_id)
    log.info(
        "selection %s by %s: %d changed, %d refused",
        action,
        user,
        len(result.changed),
        len(result.refused),
    )
    return result


def move_records(
    record_ids: list[int],
    collection: str,
    user: str,
    *,
    engine: Engine | None = None,
    mapping: SelectionMapping | None = None,
) -> BulkResult:
    """Move records to another collection (a record whose URL that collection already holds
    is refused, as the import would refuse a second one)."""
    if not collection.strip():
        raise EditError("the collection to move to is missing")
    return bulk_edit(
        record_ids,
        BulkChange(collection=collection.strip()),
        user,
        action="record.move",
        engine=engine,
        mapping=mapping,
    )


def bulk_detail(result: BulkResult) -> str:
    """The bulk edit's outcome in words (for the page)."""
    text = f"{len(result.changed)} changed, {len(result.unchanged)} unchanged"
    if result.refused:
        text += "; refused: " + "; ".join(f"record {r}: {why}" for r, why in result.refused)
    return text
