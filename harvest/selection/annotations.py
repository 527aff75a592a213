"""Curators' annotations of a target (a selection record): scope evidence, licence, notes.

Why versioned rows and not columns of the record: legal deposit asks *why* a site is in scope
(its national domain, an address in the country, or a curator's manual evidence) and open access
asks for the licence's state and date; both are decisions someone took at some time, which the
archive must be able to show later. Every change is a new row of ``target_annotations`` with who
and when (sql/031); the newest row is the annotation, the older ones its history. A change that
changes nothing writes nothing. This module owns that table; the curator pages, the CLI and the
crawl feed's export and import call it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from harvest.errors import HarvestError
from harvestflow.audit import record_audit
from harvestflow.errors import NotFoundError
from harvestflow.formats.domains import registrable_domain
from harvestflow.formats.seeds import SeedError, check_text

log = logging.getLogger(__name__)

MAX_EVIDENCE = 20  # scope evidence items a target may hold


class ScopeEvidence(StrEnum):
    """Why a target is in the legal-deposit scope."""

    DOMAIN = "domain"
    """Its domain is under the country's top-level domain."""
    ADDRESS = "address"
    """It is hosted in, or gives an address in, the country."""
    MANUAL = "manual"
    """A curator's evidence (correspondence, professional judgement): the text says which."""


class LicenceStatus(StrEnum):
    """Where the request for an open-access licence (permission) stands."""

    NOT_REQUESTED = "not_requested"
    REQUESTED = "requested"
    GRANTED = "granted"
    REFUSED = "refused"


class AnnotationError(HarvestError, ValueError):
    """An annotation that cannot be stored; the message names the field and the reason."""


class AnnotationTargetMissing(AnnotationError, NotFoundError):
    """The selection record an annotation is for does not exist."""


@dataclass
class Annotation:
    """A target's annotation as of one version (``version_id`` None: never annotated)."""

    record_id: int
    scope_evidence: list[dict[str, str]] = field(default_factory=list)
    licence_status: LicenceStatus = LicenceStatus.NOT_REQUESTED
    licence_date: date | None = None
    licence_note: str | None = None
    notes: str | None = None
    changed_by: str | None = None
    changed_at: datetime | None = None
    version_id: int | None = None

    def content(self) -> dict[str, Any]:
        """What a change compares and the crawl feed carries (no who/when)."""
        return {
            "scopeEvidence": [dict(e) for e in self.scope_evidence],
            "licence": {
                "status": str(self.licence_status),
                "date": self.licence_date.isoformat() if self.licence_date else None,
                "note": self.licence_note,
            },
            "notes": self.notes,
        }

    def as_feed(self) -> dict[str, Any]:
        """The crawl feed's ``annotations`` object (read back by :func:`from_feed`)."""
        return {
            **self.content(),
            "changedBy": self.changed_by,
            "changedAt": self.changed_at.isoformat() if self.changed_at else None,
        }


def _text(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    try:
        check_text(value, name)
    except SeedError as exc:
        raise AnnotationError(str(exc)) from None
    return value.strip() or None


def check_evidence(items: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Scope evidence as stored: known kinds, a text for manual evidence, each kind once."""
    found: dict[str, dict[str, str]] = {}
    for number, item in enumerate(items, 1):
        if not isinstance(item, Mapping):
            raise AnnotationError(f"scope evidence {number}: not an object with kind and text")
        kind = str(item.get("kind") or "").strip().lower()
        if kind not in ScopeEvidence.__members__.values():
            raise AnnotationError(
                f"scope evidence {number}: unknown kind {kind!r}; expected one of"
                f" {', '.join(ScopeEvidence)}"
            )
        text = _text(None if item.get("text") is None else str(item["text"]), "evidence text")
        if kind == ScopeEvidence.MANUAL and not text:
            raise AnnotationError(f"scope evidence {number}: manual evidence needs a text")
        found[kind] = {"kind": kind, "text": text or ""}
    if len(found) > MAX_EVIDENCE:
        raise AnnotationError(f"more than {MAX_EVIDENCE} scope evidence items")
    return [found[k] for k in ScopeEvidence if k in found]


def _licence_date(value: str | date | None) -> date | None:
    if value is None or isinstance(value, date):
        return value
    text = value.strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise AnnotationError(f"licence date {text[:40]!r} is not YYYY-MM-DD") from None


def _licence_status(value: str) -> LicenceStatus:
    word = value.strip().lower().replace(" ", "_").replace("-", "_")
    try:
        return LicenceStatus(word)
    except ValueError:
        raise AnnotationError(
            f"licence status {value[:40]!r}: expected one of {', '.join(LicenceStatus)}"
        ) from None


def _from_row(row: Any) -> Annotation:
    return Annotation(
        record_id=row.record_id,
        scope_evidence=list(row.scope_evidence or []),
        licence_status=LicenceStatus(row.licence_status),
        licence_date=row.licence_date,
        licence_note=row.licence_note,
        notes=row.notes,
        changed_by=row.changed_by,
        changed_at=row.changed_at,
        version_id=row.version_id,
    )


def current(conn: Connection, record_ids: Sequence[int]) -> dict[int, Annotation]:
    """The annotation of each record (an empty one for a record never annotated)."""
    rows = conn.execute(
        sa.text(
            "SELECT DISTINCT ON (record_id) * FROM target_annotations"
            " WHERE record_id = ANY(CAST(:ids AS integer[])) ORDER BY record_id, version_id DESC"
        ),
        {"ids": list(record_ids)},
    ).all()
    found = {row.record_id: _from_row(row) for row in rows}
    return {rid: found.get(rid) or Annotation(record_id=rid) for rid in record_ids}


def history(conn: Connection, record_id: int) -> list[Annotation]:
    """Every version of a record's annotation, newest first."""
    return histories(conn, [record_id])[record_id]


def histories(conn: Connection, record_ids: Sequence[int]) -> dict[int, list[Annotation]]:
    """Every version of each record's annotation, newest first, in one query (a page
    listing several records)."""
    rows = conn.execute(
        sa.text(
            "SELECT * FROM target_annotations WHERE record_id = ANY(CAST(:ids AS integer[]))"
            " ORDER BY record_id, version_id DESC"
        ),
        {"ids": list(record_ids)},
    ).all()
    found: dict[int, list[Annotation]] = {rid: [] for rid in record_ids}
    for row in rows:
        found[row.record_id].append(_from_row(row))
    return found


def annotate(
    conn: Connection,
    record_id: int,
    user: str,
    *,
    scope_evidence: Iterable[Mapping[str, Any]] | None = None,
    licence_status: str | None = None,
    licence_date: str | date | None = None,
    licence_note: str | None = None,
    notes: str | None = None,
) -> Annotation:
    """Change a record's annotation (None: that field unchanged; ``""``: cleared).

    Returns the annotation now in force; a new version is written only when something changed.
    """
    if not user:
        raise AnnotationError("an annotation needs the user who writes it")
    exists = conn.execute(
        sa.text("SELECT 1 FROM selection_records WHERE record_id = :r"), {"r": record_id}
    ).first()
    if exists is None:
        raise AnnotationTargetMissing(f"no selection record {record_id}")
    old = current(conn, [record_id])[record_id]
    new = Annotation(
        record_id=record_id,
        scope_evidence=old.scope_evidence
        if scope_evidence is None
        else check_evidence(scope_evidence),
        licence_status=old.licence_status
        if licence_status is None
        else _licence_status(licence_status),
        licence_date=old.licence_date if licence_date is None else _licence_date(licence_date),
        licence_note=old.licence_note if licence_note is None else _text(licence_note, "note"),
        notes=old.notes if notes is None else _text(notes, "notes"),
    )
    if new.content() == old.content():
        return old
    row = conn.execute(
        sa.text(
            "INSERT INTO target_annotations (record_id, scope_evidence, licence_status,"
            " licence_date, licence_note, notes, changed_by) VALUES (:r, CAST(:e AS jsonb),"
            " :s, :d, :n, :notes, :u) RETURNING *"
        ),
        {
            "r": record_id,
            "e": json.dumps(new.scope_evidence),
            "s": str(new.licence_status),
            "d": new.licence_date,
            "n": new.licence_note,
            "notes": new.notes,
            "u": user,
        },
    ).one()
    log.info("record %s annotated by %s (version %s)", record_id, user, row.version_id)
    record_audit(
        conn,
        user,
        "record.annotate",
        f"record {record_id}",
        {"before": old.content(), "after": new.content(), "version": row.version_id},
    )
    return _from_row(row)


def parse_feed(value: Any) -> dict[str, Any]:
    """A crawl feed item's ``annotations`` object, checked, as :func:`annotate`'s arguments
    (a whole annotation: what it does not say is cleared)."""
    if not isinstance(value, Mapping):
        raise AnnotationError("annotations must be an object")
    licence = value.get("licence") or {}
    if not isinstance(licence, Mapping):
        raise AnnotationError("annotations.licence must be an object")
    evidence = value.get("scopeEvidence") or []
    if not isinstance(evidence, list):
        raise AnnotationError("annotations.scopeEvidence must be a list")
    when = _licence_date(str(licence.get("date") or ""))
    return {
        "scope_evidence": check_evidence(evidence),
        "licence_status": str(_licence_status(str(licence.get("status") or "not_requested"))),
        "licence_date": when.isoformat() if when else "",  # "": cleared
        "licence_note": _text(str(licence.get("note") or ""), "licence note") or "",
        "notes": _text(str(value.get("notes") or ""), "notes") or "",
    }


def records_of_domains(conn: Connection, domains: Iterable[str]) -> list[dict[str, Any]]:
    """The selection records whose seed URL's registrable domain is one of ``domains``."""
    wanted = {d.lower() for d in domains}
    if not wanted:
        return []
    patterns = [f"%{d}%" for d in wanted]
    rows = conn.execute(
        sa.text(
            "SELECT record_id, external_id, collection, title, seed_url, supplementary_urls,"
            " active, frequency, budget, depth, max_objects, max_bytes FROM selection_records"
            " WHERE seed_url ILIKE ANY(CAST(:p AS text[])) ORDER BY record_id"
        ),
        {"p": patterns},
    ).mappings()
    return [dict(r) for r in rows if registrable_domain(r["seed_url"]) in wanted]


@dataclass(frozen=True)
class LicenceState:
    """A target's licence as now in force: what :mod:`access.licences` turns into a rule."""

    record_id: int
    seed_url: str
    status: LicenceStatus
    changed_by: str


def licence_states(conn: Connection) -> list[LicenceState]:
    """The licence of every annotated record (never annotated: not requested, not listed),
    by record id."""
    rows = conn.execute(
        sa.text(
            "SELECT a.record_id, r.seed_url, a.licence_status, a.changed_by FROM"
            " (SELECT DISTINCT ON (record_id) record_id, licence_status, changed_by"
            "  FROM target_annotations ORDER BY record_id, version_id DESC) AS a"
            " JOIN selection_records AS r USING (record_id) ORDER BY a.record_id"
        )
    ).all()
    return [LicenceState(int(r.record_id), str(r.seed_url), LicenceStatus(r.licence_status),
                         str(r.changed_by)) for r in rows]  # fmt: skip
